"""Normalization modules with PyTorch's parameters and buffers.

``BatchNorm{1,2,3}d`` keep ``running_mean``, ``running_var`` and
``num_batches_tracked`` buffers (``momentum=None`` is the cumulative average);
``LayerNorm``, ``GroupNorm`` and ``InstanceNorm{1,2,3}d`` as in PyTorch. The maths is
``funcgrad.nn.batch_norm`` / ``layer_norm`` / ``group_norm``.

Example::

    bn = ft.nn.BatchNorm2d(8)
    y = bn(x)          # training: batch statistics, running stats updated
    bn.eval(); y = bn(x)   # eval: running statistics
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp
from funcgrad.core import Box

from ..grad_mode import no_grad
from ..tensor import Tensor
from ..toplevel import _on_default_device
from .module import Module, _Functional, stored_attr
from .layers import _const_param, _np_dtype, _per_rank
from . import functional as F

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d"]


def _affine_params(module: Module, shape: tuple[Any, ...], weight: bool, bias: bool, dtype: Any) -> None:
    """Register the learned scale ``weight`` (ones) and shift ``bias`` (zeros) of ``shape``; None where left out."""
    module.register_parameter("weight", _const_param(shape, 1.0, dtype) if weight else None)
    module.register_parameter("bias", _const_param(shape, 0.0, dtype) if bias else None)


class _NormBase(Module):
    _n = 1  # spatial axes

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_params(self, (num_features,), affine, affine, dtype)
        d = _np_dtype(dtype)
        for name, init in (("running_mean", np.zeros), ("running_var", np.ones)):
            stat = _on_default_device(Tensor._make(init(num_features, dtype=d))) if track_running_stats else None
            self.register_buffer(name, stat)
        steps = Tensor._make(np.zeros((), dtype=np.int64)) if track_running_stats else None
        self.register_buffer("num_batches_tracked", steps)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def _dims(self) -> tuple[int, ...]:
        """The input ranks taken: with the batch axis (batch norm: ``(N, C)`` too) or, instance norm, without."""
        if isinstance(self, _InstanceNorm):
            return (self._n + 1, self._n + 2)
        return (2, 3) if self._n == 1 else (self._n + 2,)

    def _check_input_dim(self, x: Tensor) -> None:
        if x.dim() not in self._dims():
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims())} input (got {x.dim()}D input)")

    def _momentum(self) -> Any:
        """Advance ``num_batches_tracked``; the momentum of this step (1/n for ``momentum=None``: a float, or
        under ``ft.compile``, where the count is a value of the staged program, a 0-d array of the statistics'
        dtype)."""
        steps = stored_attr(self, "num_batches_tracked") if self.training and self.track_running_stats else None
        if steps is not None:
            steps._value[...] += 1
            steps._version_counter[0] += 1
            if self.momentum is None:
                count = steps._value
                if isinstance(count, Box):
                    return 1.0 / fnp.astype(count, fnp.result_type(self.running_mean._value))
                return 1.0 / float(count)
        return 0.0 if self.momentum is None else self.momentum

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        m = self._momentum()
        running_mean = stored_attr(self, "running_mean")  # (each read once, from its store)
        return F.batch_norm(input, running_mean, stored_attr(self, "running_var"), stored_attr(self, "weight"),
                            stored_attr(self, "bias"), self.training or running_mean is None, m, self.eps)


BatchNorm1d, BatchNorm2d, BatchNorm3d = _per_rank(
    _BatchNorm, "BatchNorm{n}d", None, "Batch normalization of ``{shape}`` (``BatchNorm1d``: also ``(N, C)``). "
    "Example: ``ft.nn.BatchNorm{n}d(16)``.")


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.dim() == self._n + 1
        if unbatched:
            input = input.unsqueeze(0)
        m = 0.1 if self.momentum is None else self.momentum  # InstanceNorm leaves num_batches_tracked alone
        use_input = self.training or not self.track_running_stats
        stats = self.training or not use_input  # the running statistics to update (training) or to use
        y = F.instance_norm(input, self.running_mean if stats else None, self.running_var if stats else None,
                            self.weight, self.bias, use_input, m, self.eps)
        return y.squeeze(0) if unbatched else y


InstanceNorm1d, InstanceNorm2d, InstanceNorm3d = _per_rank(
    _InstanceNorm, "InstanceNorm{n}d", None, "Instance normalization of ``{shape}`` (or unbatched, without N). "
    "Example: ``ft.nn.InstanceNorm{n}d(4, affine=True)``.")


class LayerNorm(_Functional):
    """Normalization over the trailing ``normalized_shape`` axes, with ``weight``/``bias`` of that shape.

    Example: ``ft.nn.LayerNorm(64)``.
    """

    _fn, _args = staticmethod(F.layer_norm), ("normalized_shape", "weight", "bias", "eps")

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        _affine_params(self, ns, elementwise_affine, elementwise_affine and bias, dtype)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(_Functional):
    """Group normalization of ``(N, C, *)`` with per-channel ``weight``/``bias``. Example: ``ft.nn.GroupNorm(2, 8)``."""

    _fn, _args = staticmethod(F.group_norm), ("num_groups", "weight", "bias", "eps")

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_params(self, (num_channels,), affine, affine, dtype)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
