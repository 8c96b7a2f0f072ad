"""Recurrent modules: ``RNN``, ``LSTM``, ``GRU`` (``num_layers``, ``batch_first``, ``bidirectional``,
``dropout``) and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``, with PyTorch's parameter names
(``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), gate order and initialisation.

One time step is ``funcgrad.nn.lstm_cell`` / ``gru_cell`` on the tensors; the
sequence modules loop over time in Python, except the LSTM, whose every layer and direction is one
kernel and one node (``lstm_layer``: the sequence kernel of ``funcgrad.nn.lstm``, as PyTorch's
``MkldnnRnnLayerBackward0``). The graph around the layers is PyTorch's (CPU, float32): ``h_n``/``c_n`` a
stack of every layer's final state, a batch-first output the transpose of the time-major one, the
reverse direction's outputs in input order, so ``grad_fn`` names and in-place errors are PyTorch's. A
:class:`~funcgrad.tensor.nn.utils.rnn.PackedSequence` input comes back packed: an LSTM runs on its padded form,
each state frozen past its sequence's length, in the one masked-sequence kernel; a GRU or RNN steps by batch
size over the packed data, as PyTorch's.

Example::

    lstm = ft.nn.LSTM(8, 16, num_layers=2, batch_first=True)
    out, (h, c) = lstm(ft.randn(4, 10, 8))     # out: (4, 10, 16)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.nn as _fnn
import funcgrad.numpy as _fnp
from funcgrad.backend import namespace_of
from funcgrad.core import Box
from funcgrad.nn.kernels.recurrent import lstm_layer
from funcgrad.numpy.shape_ops import _stack, _stack_raw

from ..boxes import as_tensor_box
from ..creation import tensor, zeros
from ..ops import cat
from ..view_recorder import ViewOp, record_view
from ..tensor import Tensor
from .module import Module
from .bridge import _boxes, _run_on_tensors
from .layers import _uniform_param
from . import functional as F
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _lstm_step(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any, b_hh: Any) -> tuple[Any, ...]:
    h2, c2 = _fnn.lstm_cell(*_boxes(x, h, c, w_ih, w_hh, b_ih, b_hh))
    return as_tensor_box(h2), as_tensor_box(c2)


def _gru_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any, b_hh: Any) -> Tensor:
    return _run_on_tensors(_fnn.gru_cell, x, h, w_ih, w_hh, b_ih, b_hh)


def _register_weights(module: Module, sfx: str, gates: int, input_size: int, bias: bool, dtype: Any) -> list[str]:
    """Register ``weight_ih<sfx>``, ``weight_hh<sfx>`` (and ``bias_ih<sfx>``, ``bias_hh<sfx>``) with PyTorch's
    initialisation, uniform in ``±1/sqrt(hidden_size)``; returns their names."""
    g, h = gates * module.hidden_size, module.hidden_size
    bound = 1.0 / math.sqrt(h)
    shapes: dict[str, tuple[int, ...]] = {"weight_ih": (g, input_size), "weight_hh": (g, h)}
    if bias:
        shapes.update(bias_ih=(g,), bias_hh=(g,))
    for name, shape in shapes.items():
        module.register_parameter(name + sfx, _uniform_param(shape, bound, dtype))
    return [name + sfx for name in shapes]


def _rnn_step(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any, b_hh: Any, *, relu: bool) -> Tensor:
    pre = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """Multi-layer recurrent network over ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or ``(L, H_in)``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if num_layers < 1:
            raise ValueError("num_layers must be greater than or equal to 1")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if proj_size:
            raise NotImplementedError("LSTM(proj_size > 0) is not supported by funcgrad.tensor")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        ndir = 2 if bidirectional else 1
        self._flat_weights_names = []
        # per layer and direction (layer * ndir + d): the names of (weight_ih, weight_hh, bias_ih, bias_hh),
        # the biases' None without bias (made once here, not per call)
        self._direction_names: list[tuple[Any, ...]] = []
        for layer in range(num_layers):
            for d in range(ndir):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_sz = input_size if layer == 0 else hidden_size * ndir
                names = _register_weights(self, sfx, _GATES[mode], in_sz, bias, dtype)
                self._flat_weights_names += names
                self._direction_names.append(tuple(names) if bias else (names[0], names[1], None, None))

    def _weights(self, k: int) -> tuple[Any, ...]:
        """``(weight_ih, weight_hh, bias_ih, bias_hh)`` of layer and direction ``k`` (biases None without bias)."""
        params = self._parameters
        w_ih, w_hh, b_ih, b_hh = self._direction_names[k]
        return params[w_ih], params[w_hh], (params[b_ih] if b_ih else None), (params[b_hh] if b_hh else None)

    def _run_direction(self, x: Tensor, state: tuple[Any, ...], w: tuple[Any, ...], reverse: bool
                       ) -> tuple[Tensor, tuple[Any, ...]]:
        """The outputs ``(L, N, H)`` of every time step of the time-major ``x`` and the final state (``(h,)``, or
        ``(h, c)`` for an LSTM, each ``(N, H)``); ``reverse`` runs the sequence from its last step (outputs in
        input order, as PyTorch's: its reverse direction's outputs are stacked in input order, no flip)."""
        if self.mode == "LSTM":
            w_ih, w_hh, b_ih, b_hh = w
            if b_ih is None:  # (zeros that need no grad: None in next_functions, as PyTorch's)
                raw = w_hh._value
                b_ih = b_hh = Tensor._make(namespace_of(raw).zeros((raw.shape[0],), dtype=raw.dtype))
            if x._value.shape[0]:  # the whole sequence as one kernel and one node (PyTorch's MkldnnRnnLayer)
                if reverse:
                    out, h_n, c_n = lstm_layer(x, w_ih, w_hh, b_ih, b_hh, *state, reverse=True)
                else:
                    out, h_n, c_n = lstm_layer(x, w_ih, w_hh, b_ih, b_hh, *state)
                return out, (h_n, c_n)
            hs, (h, c) = _fnn.lstm(*_boxes(x, *state, *w))  # an empty sequence: the initial state
            return as_tensor_box(hs), (as_tensor_box(h), as_tensor_box(c))
        if self.mode == "GRU":
            # the input projection of every time step in one matrix product; the cells take it as x
            xs, w = F.linear(x, w[0], w[2]).unbind(0), (None, w[1], None, w[3])
        else:
            xs = x.unbind(0)
        outs: list[Any] = [None] * len(xs)
        for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            if self.mode == "GRU":
                state = (_gru_step(xs[t], *state, *w),)
            else:
                state = (_rnn_step(xs[t], *state, *w, relu=self.mode == "RNN_RELU"),)
            outs[t] = state[0]
        return _stacked(outs), state

    def _run_direction_masked(self, x: Tensor, state: tuple[Any, ...], w: tuple[Any, ...], reverse: bool,
                              mask: Tensor) -> tuple[Tensor, tuple[Any, ...]]:
        """An LSTM's :meth:`_run_direction` over a padded batch, as one masked-sequence kernel: ``mask``
        ``(L, N, 1)`` is 1 on each sequence's valid steps and 0 past its length, where the state is carried
        unchanged, so the final state is the one of each sequence's last valid step (its first, in reverse)."""
        xs, m = (x.flip(0), mask.flip(0)) if reverse else (x, mask)
        xs_box, *rest = _boxes(xs, *state, *w, m[..., 0])
        hs, (h, c) = _fnn.lstm(xs_box, *rest[:-1], mask=rest[-1])
        out = as_tensor_box(hs)
        return (out.flip(0) if reverse else out), (as_tensor_box(h), as_tensor_box(c))

    def _packed_direction(self, data: Tensor, h0: Tensor, w: tuple[Any, ...], sizes: list[int], reverse: bool
                          ) -> tuple[Tensor, Tensor]:
        """A GRU's or RNN's direction over packed ``data`` as PyTorch runs it: step ``t`` takes the next
        ``sizes[t]`` rows and the state's first ``sizes[t]`` rows; a sequence's final state is set aside
        (forward) or its initial state joins (reverse) when the batch shrinks or grows. Returns the packed
        outputs (one ``cat``) and the final state in packed order."""
        if self.mode == "GRU":  # every step's input projection in one matrix product, as unpacked
            data, w = F.linear(data, w[0], w[2]), (None, w[1], None, w[3])
        relu = self.mode == "RNN_RELU"
        starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
        outs: list[Any] = []
        if not reverse:
            done: list[Any] = []
            h, last = h0, sizes[0]
            for t, b in enumerate(sizes):
                if b < last:  # sequences that ended: their final states
                    done.append(h[b:last])
                    h = h[:b]
                xt = data[starts[t]:starts[t] + b]
                h = _gru_step(xt, h, *w) if self.mode == "GRU" else _rnn_step(xt, h, *w, relu=relu)
                outs.append(h)
                last = b
            done.append(h)
            return cat(outs, 0), cat(done[::-1], 0)
        last = sizes[-1]
        h = h0[:last]
        for t in range(len(sizes) - 1, -1, -1):
            b = sizes[t]
            if b > last:  # sequences that start here: their initial states
                h = cat([h, h0[last:b]], 0)
            xt = data[starts[t]:starts[t] + b]
            h = _gru_step(xt, h, *w) if self.mode == "GRU" else _rnn_step(xt, h, *w, relu=relu)
            outs.append(h)
            last = b
        return cat(outs[::-1], 0), h

    def _forward_packed_steps(self, packed: PackedSequence, hx: Any) -> tuple[Any, ...]:
        """A GRU or RNN over a :class:`PackedSequence`, step by batch size as PyTorch's (its graph too): the
        initial state in packed order (``index_select`` by ``sorted_indices``), ``h_n`` back in the user's."""
        data = packed.data
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{data.shape[-1]}")
        sizes = [int(b) for b in packed.batch_sizes.tolist()]
        ndir = 2 if self.bidirectional else 1
        want = (self.num_layers * ndir, sizes[0], self.hidden_size)
        if hx is None:
            zero = Tensor._make(namespace_of(data._value).zeros(want[1:], dtype=data._value.dtype))
            states = [zero] * want[0]
        else:
            if tuple(hx.shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {[int(n) for n in hx.shape]}")
            if packed.sorted_indices is not None:
                hx = hx.index_select(1, packed.sorted_indices)
            states = list(hx.unbind(0))
        finals = []
        x = data
        for layer in range(self.num_layers):
            outs_dirs = []
            for d in range(ndir):
                k = layer * ndir + d
                outs, h = self._packed_direction(x, states[k], self._weights(k), sizes, bool(d))
                outs_dirs.append(outs)
                finals.append(h)
            x = outs_dirs[0] if ndir == 1 else cat(outs_dirs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        hn = _stacked(finals)
        if packed.unsorted_indices is not None:
            hn = hn.index_select(1, packed.unsorted_indices)
        return PackedSequence(x, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), hn

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[Any, ...]:
        """An LSTM's :class:`PackedSequence` input: run on the padded batch with each state frozen past its sequence's
        length; the output is packed as the input, ``h_n`` (and ``c_n``) come from each sequence's last step."""
        padded, lengths = pad_packed_sequence(packed)  # (L, N, H_in), batch in the user's order, as hx
        host_lengths = np.asarray(lengths.tolist(), dtype=np.int64)
        valid = np.arange(int(padded.shape[0]))[:, None, None] < host_lengths[None, :, None]
        mask = tensor(valid.astype(np.float64), dtype=padded.dtype, device=padded.device)
        out, hn = self._stack_layers(padded, hx, mask)
        if packed.sorted_indices is not None:  # back to the packed order, whose lengths decrease
            out = out.index_select(1, packed.sorted_indices)
            host_lengths = host_lengths[np.asarray(packed.sorted_indices.tolist(), dtype=np.int64)]
        data = pack_padded_sequence(out, host_lengths).data
        return PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices), hn

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, ...]:  # noqa: A002
        """``(output, h_n)`` (``(output, (h_n, c_n))`` for an LSTM), recorded as PyTorch records them: the
        layers' outputs (an LSTM layer one ``MkldnnRnnLayerBackward0`` node; a bidirectional layer's two
        directions a ``CatBackward0``), ``h_n``/``c_n`` a ``StackBackward0`` of every layer's and direction's
        final state, a batch-first output the transpose of the time-major one (an LSTM's a view,
        ``TransposeBackward0``; a GRU's or RNN's transposed in place, ``TransposeBackward1``), an unbatched
        one squeezed (``SqueezeBackward1``)."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx) if self.mode == "LSTM" else self._forward_packed_steps(input, hx)
        x = input
        shape = x._value.shape
        if len(shape) not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {len(shape)}D instead")
        unbatched = len(shape) == 2
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = _time_major(x)
        out, hn = self._stack_layers(x, hx, None, unbatched)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1) if self.mode == "LSTM" else out.transpose_(0, 1)
        return out, hn

    def _stack_layers(self, x: Tensor, hx: Any, mask: Tensor | None, unbatched: bool = False) -> tuple[Any, ...]:
        """Every layer and direction over the time-major ``x`` ``(L, N, H_in)``: ``(output, h_n)`` (``h_n`` is
        ``(h_n, c_n)`` for an LSTM, squeezed when ``unbatched``); ``mask`` freezes states past each length."""
        shape = x._value.shape
        if shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{shape[-1]}")
        ndir = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        want = (self.num_layers * ndir, shape[1], self.hidden_size)
        # the initial state per layer and direction: (h0,), or (h0, c0) for an LSTM
        if hx is None:  # zeros, one Tensor shared by every layer (no grad: a None in next_functions, as PyTorch's)
            zero = Tensor._make(namespace_of(x._value).zeros(want[1:], dtype=x._value.dtype))
            states: list[tuple[Any, ...]] = [(zero, zero) if lstm else (zero,)] * want[0]
        else:
            h0 = tuple(hx) if lstm else (hx,)
            if unbatched:
                h0 = tuple(h.unsqueeze(1) for h in h0)
            if tuple(h0[0].shape) != want:
                raise RuntimeError(f"Expected hidden size {want}, got {[int(n) for n in h0[0].shape]}")
            # (PyTorch: an LSTM selects each layer's state, a GRU or RNN unbinds it)
            states = [tuple(h[k] for h in h0) for k in range(want[0])] if lstm else [(h,) for h in h0[0].unbind(0)]
        finals = []
        for layer in range(self.num_layers):
            outs_dirs = []
            for d in range(ndir):
                k = layer * ndir + d
                if mask is None:
                    outs, st = self._run_direction(x, states[k], self._weights(k), bool(d))
                else:
                    outs, st = self._run_direction_masked(x, states[k], self._weights(k), bool(d), mask)
                outs_dirs.append(outs)
                finals.append(st)
            x = outs_dirs[0] if ndir == 1 else cat(outs_dirs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        hn = tuple(_stacked([st[i] for st in finals]) for i in range(len(finals[0])))
        if unbatched:
            hn = tuple(h.squeeze(1) for h in hn)
        return (x, hn) if lstm else (x, hn[0])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:  # (PyTorch's repr shows only what differs)
                s += f", {name}={getattr(self, name)}"
        return s


def _stacked(tensors: list[Any]) -> Tensor:
    """``ft.stack(tensors)`` of tensors of one shape (PyTorch's ``StackBackward0``), its primitive called
    directly: the checks of ``ft.stack`` cost about 750 bytecodes, twice a step of an LSTM (``h_n``, ``c_n``).
    One tensor (one layer and direction, the commonest ``h_n``): recorded in one frame (:data:`_STACK_ONE`)."""
    if len(tensors) == 1:
        return record_view(tensors[0], _STACK_ONE, (0,))  # type: ignore[no-any-return]
    return _stack(0, *tensors)  # type: ignore[no-any-return]


def _stack_one(t: Any, axis: int) -> Any:
    """``stack([t], axis)`` through its primitive (what :data:`_STACK_ONE` falls back to)."""
    return _stack(axis, t)


def _stack_one_raw(a: Any, axis: int) -> Any:
    """``stack([a], axis)`` of one array, by ``stack``'s raw function: a copy of ``a`` with a new axis."""
    return _stack_raw(axis, a)


# ``stack`` of one tensor through the view methods' one-frame recorder (funcgrad/tensor/view_recorder.py): the
# node is ``expand_dims``'s (the same derivative: the cotangent without the new axis), of PyTorch's class
# ``StackBackward0``; the result is a copy (as ``stack``'s), so it is no view and has its own version counter. Where
# the recorder cannot take the call (grad mode off, anomaly mode, ...) it makes the general one, ``_stack_one``.
# About 590 -> 300 bytecodes a stack, two an LSTM step (benchmarks/RESULTS.md, session 12b).
_STACK_ONE = ViewOp(_stack_one, _stack_one_raw, "StackBackward0", named_prim=_fnp.expand_dims)


def _time_major(x: Tensor) -> Tensor:
    """A batch-first input ``(N, L, H)`` as a time-major copy ``(L, N, H)``, as PyTorch's modules take it (a
    copy: the input may change in place before ``backward()``): ``x.transpose(0, 1).contiguous()``, recorded
    when ``x`` requires grad; else (the common input: data) the copied array as an internal Tensor, which no
    one but the layers sees."""
    if x._requires_grad or x._inference or type(x) is not Tensor:
        return x.transpose(0, 1).contiguous()
    v = x._value
    if isinstance(v, Box):  # (staged by ft.compile: through funcgrad.numpy, which fg.jit stages)
        return Tensor._make(_fnp.copy(_fnp.swapaxes(v, 0, 1), order="C"))
    return Tensor._make(v.swapaxes(0, 1).copy())  # (the array's own methods: NumPy's or CuPy's, C order)


class RNN(RNNBase):
    """Elman RNN, ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (``nonlinearity='relu'`` optional).

    Example: ``out, h = ft.nn.RNN(4, 8)(x)``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory over a sequence; returns ``output, (h_n, c_n)``. Example: ``ft.nn.LSTM(4, 8)(x)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit over a sequence; returns ``output, h_n``. Example: ``ft.nn.GRU(4, 8)(x)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


class RNNCellBase(Module):
    """Parameters ``weight_ih (G*H, in)``, ``weight_hh (G*H, H)``, ``bias_ih``, ``bias_hh`` (G gates)."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        _register_weights(self, "", self._gates, input_size, bias, dtype)
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _w(self) -> tuple[Any, ...]:
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _zeros(self, x: Tensor) -> Tensor:
        return zeros(*(tuple(x.shape[:-1]) + (self.hidden_size,)), dtype=x.dtype, device=x.device)

    def _check(self, x: Tensor) -> None:
        if x.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {x.dim()}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[-1]} expected {self.input_size}")

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class RNNCell(RNNCellBase):
    """One Elman RNN step. Example: ``h = ft.nn.RNNCell(4, 8)(x, h)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input)
        h = self._zeros(input) if hx is None else hx
        return _rnn_step(input, h, *self._w(), relu=self.nonlinearity == "relu")


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c') = cell(x, (h, c))``. Example: ``h, c = ft.nn.LSTMCell(4, 8)(x)``."""

    _gates = 4

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Any, ...]:
        self._check(input)
        h, c = (self._zeros(input), self._zeros(input)) if hx is None else hx
        return _lstm_step(input, h, c, *self._w())


class GRUCell(RNNCellBase):
    """One GRU step. Example: ``h = ft.nn.GRUCell(4, 8)(x, h)``."""

    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check(input)
        h = self._zeros(input) if hx is None else hx
        return _gru_step(input, h, *self._w())
