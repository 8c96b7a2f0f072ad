"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al.'s efficient softmax approximation): frequent classes in
a head softmax that also holds one entry per cluster of rarer classes; each cluster has its own
low-rank tail. Parameters, ``state_dict`` keys and results as PyTorch's.

Example::

    asm = ft.nn.AdaptiveLogSoftmaxWithLoss(64, 1000, cutoffs=[100, 400], div_value=4.0)
    out, loss = asm(hidden, targets)        # out: log-probability of each target
"""

from __future__ import annotations

import collections
from typing import Any, Sequence

import numpy as np

from funcgrad.backend import to_numpy

from ..ops import cat
from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from .bridge import _like
from .containers import ModuleList
from .layers import Linear, Sequential
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` split at ``cutoffs``; ``forward(input, target)`` returns
    ``(output, loss)`` (``output[i] = log p(target[i] | input[i])``, ``loss`` its negative mean).

    Example: ``ft.nn.AdaptiveLogSoftmaxWithLoss(16, 10, [4, 8])(x, y).loss``.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        tail = []
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                   Linear(hsz, osz, bias=False, dtype=dtype)))
        self.tail = ModuleList(tail)

    def forward(self, input_: Tensor, target_: Tensor) -> Any:
        target_ = _as_tensor(target_)
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{list(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        x = input_ if batched else input_.unsqueeze(0)
        # which rows go to which cluster sets the sizes of the tail computations, so (as PyTorch's nonzero
        # does) the targets cross to the host: ONE explicit read; the indices built from them go back up
        t = to_numpy(target_._value).reshape(-1).astype(np.int64)
        if t.size and (t.min() < 0 or t.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{int(t.min())}, {int(t.max())}] were found. ")
        head_logprob = self.head(x).log_softmax(1)
        gather = np.where(t < self.shortlist_size, t, 0)
        output: Any = 0.0
        for i in range(1, len(self.cutoffs)):
            lo, hi = self.cutoffs[i - 1], self.cutoffs[i]
            member = (t >= lo) & (t < hi)
            if not member.any():
                continue
            rows = np.nonzero(member)[0]
            gather[rows] = self.shortlist_size + i - 1
            local = self.tail[i - 1](x[_like(x, rows)]).log_softmax(1)
            picked = local.gather(1, _like(x, (t[rows] - lo)[:, None])).squeeze(1)
            scatter = np.zeros((len(t), len(rows)), dtype=x._value.dtype)
            scatter[rows, np.arange(len(rows))] = 1.0
            output = output + _like(x, scatter).matmul(picked)  # each picked row back at its place
        output = head_logprob.gather(1, _like(x, gather[:, None])).squeeze(1) + output
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = head_output.log_softmax(1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = self.tail[i](x).log_softmax(1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002
        """Log-probabilities of every class, ``(N, n_classes)`` (or ``(n_classes,)``). Example: ``asm.log_prob(x)``."""
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002
        """The most likely class of each row. Example: ``asm.predict(x)``."""
        return self.log_prob(input).argmax(-1)
