"""Recurrent cells: GRUCell and LSTMCell (PyTorch's equations, gate order and init).

A cell maps one time step: ``h = cell(x, h)`` (GRU) or ``(h, c) = cell(x, (h, c))``
(LSTM); loop over time in Python (:func:`scan_cell` does it), differentiate
through the loop with ``fg.grad``.

Example::

    cell = fg.nn.GRUCell(8, 16, key=0)
    h = np.zeros((batch, 16), np.float32)
    for t in range(T):
        h = cell(xs[:, t], h)
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from . import init as _init
from .kernels.recurrent import fused_gates, gru_pointwise, lstm_pointwise, lstm_sequence, masked_lstm_sequence
from .module import Module, static_field

__all__ = ["GRUCell", "LSTMCell", "scan_cell", "gru_cell", "lstm_cell", "lstm"]


def _uniform_params(
    key: Any, hidden: int, gates: int, input_size: int, bias: bool, dtype: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    g = _init.rng(key)
    b = 1.0 / math.sqrt(hidden)
    w_ih = _init.uniform(g, (gates * hidden, input_size), dtype, -b, b)
    w_hh = _init.uniform(g, (gates * hidden, hidden), dtype, -b, b)
    if bias:
        return w_ih, w_hh, _init.uniform(g, (gates * hidden,), dtype, -b, b), _init.uniform(g, (gates * hidden,), dtype, -b, b)
    return w_ih, w_hh, None, None


def _affine(x: Any, w: Any, b: Any) -> Any:
    if w is None:  # x is the input projection already (x W^T + b for all time steps at once)
        return x
    y = fnp.matmul(x, fnp.transpose(w))
    return y if b is None else y + b


def _check_input(x: Any, size: int, name: str) -> None:
    shape = fnp.shape(x)
    if not shape or shape[-1] != size:
        raise ValueError(f"{name}: the input's last axis must have length {size}, got shape {shape}")


def gru_cell(x: Any, h: Any, weight_ih: Any, weight_hh: Any, bias_ih: Any = None, bias_hh: Any = None) -> Any:
    """One GRU step on arrays (PyTorch's equations, gates r, z, n); the maths behind :class:`GRUCell`.

    ``weight_ih=None`` (and ``bias_ih=None``) means ``x`` already holds ``x W_ih^T + b_ih``, so a
    sequence can project all its inputs in one matrix product before the loop.

    Example::

        h = fg.nn.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)
    """
    return gru_pointwise(_affine(x, weight_ih, bias_ih), _affine(h, weight_hh, bias_hh), h)


def lstm_cell(x: Any, h: Any, c: Any, weight_ih: Any, weight_hh: Any, bias_ih: Any = None,
              bias_hh: Any = None) -> tuple[Any, Any]:
    """One LSTM step on arrays (gates i, f, g, o): returns ``(h', c')``; the maths behind :class:`LSTMCell`.

    ``weight_ih=None`` (and ``bias_ih=None``) means ``x`` already holds ``x W_ih^T + b_ih``.

    Example::

        h, c = fg.nn.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
    """
    h_new, c_new = lstm_pointwise(fused_gates(x, h, weight_ih, weight_hh, bias_ih, bias_hh), c)
    return h_new, c_new


def lstm(xs: Any, h0: Any, c0: Any, weight_ih: Any, weight_hh: Any, bias_ih: Any = None, bias_hh: Any = None, *,
         batch_first: bool = False, mask: Any = None) -> tuple[Any, tuple[Any, Any]]:
    """One LSTM layer over a whole sequence: ``(hs, (h_T, c_T))`` (PyTorch's ``nn.LSTM`` for one layer and
    direction). ``xs`` is ``(T, batch, input)`` (``batch_first``: ``(batch, T, input)``), ``hs`` likewise.

    The sequence is one primitive (the input projection of every step in one GEMM, the recurrence
    on raw arrays) and its backward one more (back through time, the weight gradients as single
    GEMMs over all steps), so a step costs no per-time-step bookkeeping; both differentiate again.

    ``mask`` (optional, ``(T, batch)`` or ``(batch, T)`` with ``batch_first``; 1 on a sequence's valid
    steps, 0 past its length) freezes each state past its sequence's length, in the same one
    primitive (:func:`~funcgrad.nn.kernels.recurrent.masked_lstm_sequence`): ``(h_T, c_T)`` are then
    each sequence's state at its last valid step, and ``hs`` repeats it after that step (a packed
    batch of sequences of different lengths, as PyTorch's ``PackedSequence``).

    Example::

        hs, (h, c) = fg.nn.lstm(xs, h0, c0, w_ih, w_hh, b_ih, b_hh, batch_first=True)
        lengths = np.array([3, 1]); mask = np.arange(3)[:, None] < lengths   # (T, batch)
        hs, (h, c) = fg.nn.lstm(xs_time_major, h0, c0, w_ih, w_hh, b_ih, b_hh, mask=mask)
    """
    if batch_first:
        xs = fnp.swapaxes(xs, 0, 1)
    zeros = fnp.zeros((fnp.shape(weight_hh)[0],), dtype=fnp.result_type(weight_hh))
    b_ih, b_hh = zeros if bias_ih is None else bias_ih, zeros if bias_hh is None else bias_hh
    if mask is None:
        hs, c = lstm_sequence(xs, h0, c0, weight_ih, weight_hh, b_ih, b_hh)
    else:
        hs, c = masked_lstm_sequence(xs, h0, c0, weight_ih, weight_hh, b_ih, b_hh,
                                     _state_mask(mask, fnp.shape(xs), batch_first, fnp.result_type(xs)))
    h = hs[-1] if fnp.shape(hs)[0] else fnp.broadcast_to(h0, fnp.shape(c))
    return (fnp.swapaxes(hs, 0, 1) if batch_first else hs), (h, c)


def _state_mask(mask: Any, xs_shape: tuple[int, ...], batch_first: bool, dtype: Any) -> Any:
    """``mask`` ``(T, batch...)`` (``batch_first``: ``(batch, T)``) as the kernel's ``(T, batch..., 1)`` of ``dtype``."""
    if batch_first:
        if fnp.ndim(mask) != 2:
            raise ValueError(f"lstm: a batch_first mask must be (batch, T), got shape {tuple(fnp.shape(mask))}")
        mask = fnp.swapaxes(mask, 0, 1)
    want = tuple(xs_shape[:-1])
    if tuple(fnp.shape(mask)) != want:
        raise ValueError(f"lstm: mask must have the shape of the input without its feature axis, (T, batch...) = "
                         f"{want}, got {tuple(fnp.shape(mask))}")
    return fnp.expand_dims(fnp.astype(mask, dtype), -1)


class GRUCell(Module):
    """Gated recurrent unit cell (PyTorch's ``GRUCell``, gates ordered r, z, n).

    ``r = s(W_ir x + b_ir + W_hr h + b_hr)``, ``z = s(W_iz x + b_iz + W_hz h + b_hz)``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.

    Example::

        cell = fg.nn.GRUCell(3, 5, key=0)
        h = cell(np.ones((2, 3), np.float32))       # h defaults to zeros
    """

    weight_ih: Any
    weight_hh: Any
    bias_ih: Any
    bias_hh: Any
    input_size: int = static_field()
    hidden_size: int = static_field()

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key: Any = None,
                 dtype: Any = np.float32) -> None:
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh = _uniform_params(
            key, self.hidden_size, 3, self.input_size, bias, dtype)

    def initial_state(self, batch_shape: tuple[Any, ...] = (), dtype: Any = None) -> Any:
        """Zeros of shape ``batch_shape + (hidden_size,)``. Example: ``cell.initial_state((32,))``."""
        return np.zeros(tuple(batch_shape) + (self.hidden_size,), dtype=dtype or self.weight_ih.dtype)

    def __call__(self, x: Any, h: Any = None) -> Any:
        _check_input(x, self.input_size, "GRUCell")
        if h is None:
            h = self.initial_state(fnp.shape(x)[:-1], fnp.result_type(x))
        return gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class LSTMCell(Module):
    """Long short-term memory cell (PyTorch's ``LSTMCell``, gates ordered i, f, g, o).

    ``c' = f * c + i * g``, ``h' = o * tanh(c')``; the state is the pair ``(h, c)``.

    Example::

        cell = fg.nn.LSTMCell(3, 5, key=0)
        h, c = cell(np.ones((2, 3), np.float32))     # state defaults to zeros
    """

    weight_ih: Any
    weight_hh: Any
    bias_ih: Any
    bias_hh: Any
    input_size: int = static_field()
    hidden_size: int = static_field()

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key: Any = None,
                 dtype: Any = np.float32) -> None:
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh = _uniform_params(
            key, self.hidden_size, 4, self.input_size, bias, dtype)

    def initial_state(self, batch_shape: tuple[Any, ...] = (), dtype: Any = None) -> tuple[Any, Any]:
        """``(h, c)``, both zeros of shape ``batch_shape + (hidden_size,)``."""
        z = np.zeros(tuple(batch_shape) + (self.hidden_size,), dtype=dtype or self.weight_ih.dtype)
        return z, z.copy()

    def __call__(self, x: Any, state: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
        _check_input(x, self.input_size, "LSTMCell")
        if state is None:
            state = self.initial_state(fnp.shape(x)[:-1], fnp.result_type(x))
        h, c = state
        return lstm_cell(x, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


def scan_cell(cell: Callable[..., Any], xs: Any, state: Any = None, axis: int = 1) -> tuple[Any, Any]:
    """Run a cell over the time axis of ``xs``: returns (stacked outputs, final state).

    The output at each step is the cell's hidden state (``h`` for LSTM).

    Example::

        hs, h_last = fg.nn.scan_cell(gru, xs)          # xs: (batch, time, features)
    """
    T = fnp.shape(xs)[axis]
    outs = []
    for t in range(T):
        x_t = fnp.take(xs, t, axis=axis)
        state = cell(x_t, state)
        outs.append(state[0] if isinstance(state, tuple) else state)
    return fnp.stack(outs, axis=axis), state
