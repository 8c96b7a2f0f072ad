"""The elementwise part of an LSTM and a GRU step, fused: one primitive forward, one backward.

A step's gates come from matrix products (``x W_ih^T + h W_hh^T + b``, the
four LSTM gates in one product); what follows is elementwise and is one
primitive here:

- ``lstm_pointwise(gates, c) -> (h', c')`` with gates ordered i, f, g, o;
- ``gru_pointwise(gi, gh, h) -> h'`` with ``gi = x W_ih^T + b_ih`` and
  ``gh = h W_hh^T + b_hh`` (gates r, z, n).

Each one's VJP is one call of its backward primitive (``lstm_pointwise_backward``,
``gru_pointwise_backward``), computed in a single pass from the saved inputs.
The backward primitives differentiate again: their own VJP and JVP are those
of the same formulas written in funcgrad.numpy (``*_backward_composed``), so
double backward through a recurrent network works (and is checked in the
tests). Both run on the arrays' own namespace.

Example::

    h, c = lstm_pointwise(x @ w_ih.T + h @ w_hh.T + b, c)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import funcgrad.numpy as fnp

from ...backend import namespace_of
from ...core import defprimitive
from ...numpy._batching import batch_size, front
from ...numpy._util import unbroadcast
from ..functional import sigmoid
from .composed import composed_rules, zeros_for
from .forward_memo import ForwardMemo

__all__ = ["fused_gates", "lstm_pointwise", "lstm_pointwise_backward", "gru_pointwise", "gru_pointwise_backward",
           "lstm_sequence", "lstm_sequence_backward", "lstm_layer", "lstm_layer_backward", "masked_lstm_sequence",
           "masked_lstm_sequence_backward"]


def _sigmoid_raw(xp: Any, a: Any) -> Any:
    return 0.5 * (1.0 + xp.tanh(0.5 * a))  # no overflow for large |a|


def _split(a: Any, n: int) -> list[Any]:
    size = fnp.shape(a)[-1] // n
    return [a[..., k * size:(k + 1) * size] for k in range(n)]


# --------------------------------------------------------------------------- LSTM


def _activated(xp: Any, gates: Any) -> tuple[Any, Any, Any, Any]:
    """``(sigmoid(i), sigmoid(f), tanh(g), sigmoid(o))`` with one tanh over all four gates (few array calls:
    at LSTM sizes the cost is the number of NumPy calls, not their arithmetic)."""
    n = gates.shape[-1] // 4
    act = gates * 0.5
    act[..., 2 * n:3 * n] = gates[..., 2 * n:3 * n]
    xp.tanh(act, out=act)  # sigmoid(a) = (1 + tanh(a / 2)) / 2: no overflow for large |a|
    for lo, hi in ((0, 2 * n), (3 * n, 4 * n)):
        part = act[..., lo:hi]
        part += 1.0
        part *= 0.5
    return act[..., :n], act[..., n:2 * n], act[..., 2 * n:3 * n], act[..., 3 * n:]


def _lstm_raw(gates: Any, c: Any) -> tuple[Any, Any]:
    xp = namespace_of(gates)
    i, f, g, o = _activated(xp, gates)
    c_new = f * c
    c_new += i * g
    return o * xp.tanh(c_new), c_new


def lstm_pointwise_composed(gates: Any, c: Any) -> tuple[Any, Any]:
    """:func:`lstm_pointwise` in funcgrad.numpy operations (the reference)."""
    a_i, a_f, a_g, a_o = _split(gates, 4)
    c_new = sigmoid(a_f) * c + sigmoid(a_i) * fnp.tanh(a_g)
    return sigmoid(a_o) * fnp.tanh(c_new), c_new


def _lstm_backward_raw(gates: Any, c: Any, gh: Any, gc: Any) -> tuple[Any, Any]:
    xp = namespace_of(gates)
    i, f, g, o = _activated(xp, gates)
    tc = f * c
    tc += i * g
    xp.tanh(tc, out=tc)
    dc_new = gh * o
    dc_new *= 1.0 - tc * tc
    dc_new += gc
    lead = xp.broadcast_shapes(gates.shape[:-1], dc_new.shape[:-1])
    d = xp.empty(tuple(lead) + (gates.shape[-1],), dtype=xp.result_type(gates, dc_new))
    n = i.shape[-1]
    xp.multiply(dc_new * g, i * (1.0 - i), out=d[..., :n])
    xp.multiply(dc_new * c, f * (1.0 - f), out=d[..., n:2 * n])
    xp.multiply(dc_new * i, 1.0 - g * g, out=d[..., 2 * n:3 * n])
    xp.multiply(gh * tc, o * (1.0 - o), out=d[..., 3 * n:])
    return d, dc_new * f


def lstm_pointwise_backward_composed(gates: Any, c: Any, gh: Any, gc: Any) -> tuple[Any, Any]:
    """The cotangents of ``(gates, c)`` given those of ``(h', c')``, in funcgrad.numpy operations."""
    a_i, a_f, a_g, a_o = _split(gates, 4)
    i, f, o, g = sigmoid(a_i), sigmoid(a_f), sigmoid(a_o), fnp.tanh(a_g)
    tc = fnp.tanh(f * c + i * g)
    dc_new = gc + gh * o * (1.0 - tc * tc)
    d = fnp.concatenate([dc_new * g * i * (1.0 - i), dc_new * c * f * (1.0 - f), dc_new * i * (1.0 - g * g),
                         gh * tc * o * (1.0 - o)], axis=-1)
    return d, dc_new * f


# --------------------------------------------------------------------------- GRU


def _gru_raw(gi: Any, gh: Any, h: Any) -> Any:
    xp = namespace_of(gi)
    i_r, i_z, i_n = _split(gi, 3)
    h_r, h_z, h_n = _split(gh, 3)
    r = _sigmoid_raw(xp, i_r + h_r)
    z = _sigmoid_raw(xp, i_z + h_z)
    n = xp.tanh(i_n + r * h_n)
    return n + z * (h - n)


def gru_pointwise_composed(gi: Any, gh: Any, h: Any) -> Any:
    """:func:`gru_pointwise` in funcgrad.numpy operations (the reference)."""
    i_r, i_z, i_n = _split(gi, 3)
    h_r, h_z, h_n = _split(gh, 3)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = fnp.tanh(i_n + r * h_n)
    return n + z * (h - n)


def _gru_backward_raw(gi: Any, gh: Any, h: Any, g: Any) -> tuple[Any, Any, Any]:
    xp = namespace_of(gi)
    i_r, i_z, i_n = _split(gi, 3)
    h_r, h_z, h_n = _split(gh, 3)
    r = _sigmoid_raw(xp, i_r + h_r)
    z = _sigmoid_raw(xp, i_z + h_z)
    n = xp.tanh(i_n + r * h_n)
    da_n = g * (1.0 - z) * (1.0 - n * n)
    da_z = g * (h - n) * z * (1.0 - z)
    da_r = da_n * h_n * r * (1.0 - r)
    dgi = xp.concatenate([da_r, da_z, da_n], axis=-1)
    dgh = xp.concatenate([da_r, da_z, da_n * r], axis=-1)
    return dgi, dgh, g * z


def gru_pointwise_backward_composed(gi: Any, gh: Any, h: Any, g: Any) -> tuple[Any, Any, Any]:
    """The cotangents of ``(gi, gh, h)`` given that of ``h'``, in funcgrad.numpy operations."""
    i_r, i_z, i_n = _split(gi, 3)
    h_r, h_z, h_n = _split(gh, 3)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = fnp.tanh(i_n + r * h_n)
    da_n = g * (1.0 - z) * (1.0 - n * n)
    da_z = g * (h - n) * z * (1.0 - z)
    da_r = da_n * h_n * r * (1.0 - r)
    return (fnp.concatenate([da_r, da_z, da_n], axis=-1), fnp.concatenate([da_r, da_z, da_n * r], axis=-1),
            g * z)


# --------------------------------------------------------------------------- the gate pre-activations


def gates_composed(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
    """``x W_ih^T + h W_hh^T + b_ih + b_hh`` in funcgrad.numpy operations (``w_ih`` None: ``x`` is projected)."""
    out = fnp.matmul(h, fnp.swapaxes(w_hh, -1, -2))
    out = out + (x if w_ih is None else fnp.matmul(x, fnp.swapaxes(w_ih, -1, -2)))
    for b in (b_ih, b_hh):
        if b is not None:
            out = out + (b if fnp.ndim(b) < 2 else fnp.expand_dims(b, -2))
    return out


def _gates_raw(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
    xp = namespace_of(h)
    out = xp.matmul(h, w_hh.T)
    projected = x if w_ih is None else xp.matmul(x, w_ih.T)
    if tuple(xp.broadcast_shapes(out.shape, projected.shape)) == tuple(out.shape):
        out += projected
    else:  # an unbatched state against a batch of inputs
        out = out + projected
    for b in (b_ih, b_hh):
        if b is not None:
            out += b
    return out


def _flat_outer(g: Any, a: Any) -> Any:
    """``sum over leading axes of g^T a``: the weight cotangent of ``a @ W^T``."""
    n = fnp.shape(g)[-1]
    a = fnp.broadcast_to(a, tuple(fnp.shape(g)[:-1]) + (fnp.shape(a)[-1],))  # a state shared by a batch
    return fnp.matmul(fnp.swapaxes(fnp.reshape(g, (-1, n)), 0, 1), fnp.reshape(a, (-1, fnp.shape(a)[-1])))


def _gates_vjp_all(g: Any, ans: Any, argnums: Sequence[int], x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any,
                   b_hh: Any) -> list[Any]:
    out = []
    for a in argnums:
        if a == 0:
            out.append(unbroadcast(g if w_ih is None else fnp.matmul(g, w_ih), x))
        elif a == 1:
            out.append(unbroadcast(fnp.matmul(g, w_hh), h))
        elif a == 2:
            out.append(_flat_outer(fnp.broadcast_to(g, fnp.shape(ans)), x))
        elif a == 3:
            out.append(_flat_outer(fnp.broadcast_to(g, fnp.shape(ans)), h))
        else:
            out.append(unbroadcast(g, b_ih if a == 4 else b_hh))
    return out


def _gates_jvp_all(tangents: list[Any], ans: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
    tx, th, tw_ih, tw_hh, tb_ih, tb_hh = tangents
    out = None
    terms = [
        None if tx is None else (tx if w_ih is None else fnp.matmul(tx, fnp.swapaxes(w_ih, -1, -2))),
        None if th is None else fnp.matmul(th, fnp.swapaxes(w_hh, -1, -2)),
        None if tw_ih is None else fnp.matmul(x, fnp.swapaxes(tw_ih, -1, -2)),
        None if tw_hh is None else fnp.matmul(h, fnp.swapaxes(tw_hh, -1, -2)),
        tb_ih, tb_hh]
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    return fnp.broadcast_to(out, fnp.shape(ans))


def _gates_batch(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
    size = batch_size(args, dims)
    if all(d is None for d in dims[2:]):  # shared weights: the batch is more rows
        x, h = (a if a is None else front(a, d, size) for a, d in zip(args[:2], dims[:2]))
        return fused_gates(x, h, *args[2:]), 0
    # per-example weights: the composition, on batched operands (its own primitives batch)
    return gates_composed(*(a if a is None else front(a, d, size) for a, d in zip(args, dims))), 0


fused_gates: Callable[..., Any] = defprimitive(
    _gates_raw, name="fused_gates", vjp_all=_gates_vjp_all, jvp_all=_gates_jvp_all, batch=_gates_batch,
    doc="``x W_ih^T + h W_hh^T + b_ih + b_hh`` as one primitive (``w_ih`` None: ``x`` is already projected).")


# --------------------------------------------------------------------------- declarations


def _front_batch(fn: Callable[..., Any], n_out: int) -> Callable[..., Any]:
    """vmap rule of an elementwise-over-leading-axes kernel: every argument's batch axis first."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        size = batch_size(args, dims)
        out = fn(*(front(a, d, size) for a, d in zip(args, dims)))
        return out, ((0,) * n_out if n_out > 1 else 0)

    return rule


_lstm_bwd_vjp, _lstm_bwd_jvp = composed_rules(lstm_pointwise_backward_composed)
lstm_pointwise_backward: Callable[..., Any] = defprimitive(
    _lstm_backward_raw, name="lstm_pointwise_backward", vjp_all=_lstm_bwd_vjp, jvp_all=_lstm_bwd_jvp,
    multiple_results=True, batch=_front_batch(lambda *a: lstm_pointwise_backward(*a), 2),
    doc="Cotangents ``(d gates, d c)`` of :func:`lstm_pointwise` for cotangents ``(gh, gc)`` of ``(h', c')``.")


def _lstm_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], gates: Any, c: Any) -> list[Any]:
    gh, gc = zeros_for(g, ans)
    cts = lstm_pointwise_backward(gates, c, gh, gc)
    return [unbroadcast(cts[k], (gates, c)[k]) for k in argnums]  # (a state shared by a batch)


_lstm_jvp_all = composed_rules(lstm_pointwise_composed)[1]
lstm_pointwise: Callable[..., Any] = defprimitive(
    _lstm_raw, name="lstm_pointwise", vjp_all=_lstm_vjp_all, jvp_all=_lstm_jvp_all, multiple_results=True,
    batch=_front_batch(lambda *a: lstm_pointwise(*a), 2),
    doc="``(h', c')`` of an LSTM step from its gate pre-activations ``(..., 4H)`` (i, f, g, o) and ``c``.")


_gru_bwd_vjp, _gru_bwd_jvp = composed_rules(gru_pointwise_backward_composed)
gru_pointwise_backward: Callable[..., Any] = defprimitive(
    _gru_backward_raw, name="gru_pointwise_backward", vjp_all=_gru_bwd_vjp, jvp_all=_gru_bwd_jvp,
    multiple_results=True, batch=_front_batch(lambda *a: gru_pointwise_backward(*a), 3),
    doc="Cotangents ``(d gi, d gh, d h)`` of :func:`gru_pointwise` for the cotangent ``g`` of ``h'``.")


def _gru_vjp_all(g: Any, ans: Any, argnums: Sequence[int], gi: Any, gh: Any, h: Any) -> list[Any]:
    cts = gru_pointwise_backward(gi, gh, h, g)
    return [unbroadcast(cts[k], (gi, gh, h)[k]) for k in argnums]


_gru_jvp_all = composed_rules(gru_pointwise_composed, multiple_results=False)[1]
gru_pointwise: Callable[..., Any] = defprimitive(
    _gru_raw, name="gru_pointwise", vjp_all=_gru_vjp_all, jvp_all=_gru_jvp_all,
    batch=_front_batch(lambda *a: gru_pointwise(*a), 1),
    doc="``h'`` of a GRU step from ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T + b_hh`` (gates r, z, n) and ``h``.")


# --------------------------------------------------------------------------- a whole LSTM sequence


def lstm_sequence_composed(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any
                           ) -> tuple[Any, Any]:
    """:func:`lstm_sequence` as a loop of the per-step kernels (the reference; differentiable by the transforms)."""
    proj = fnp.matmul(xs, fnp.swapaxes(w_ih, -1, -2)) + b_ih
    h, c = h0, c0
    hs = []
    for t in range(fnp.shape(xs)[0]):
        h, c = lstm_pointwise(fused_gates(proj[t], h, None, w_hh, None, b_hh), c)
        hs.append(h)
    return fnp.stack(hs), c


def _input_projection(xp: Any, xs: Any, w_ih: Any, b_ih: Any, b_hh: Any, state: tuple[int, ...]) -> Any:
    """Every step's input part of the gates, ``xs W_ih^T + b_ih + b_hh``: one GEMM over all ``T * N`` rows,
    as a ``(T, *state[:-1], 4H)`` buffer each step adds its hidden part to (broadcast where the state has
    more leading axes than the input)."""
    rows = xs.reshape(math.prod(xs.shape[:-1]), xs.shape[-1])
    proj = xp.matmul(rows, w_ih.T).reshape(tuple(xs.shape[:-1]) + (w_ih.shape[0],))
    proj += b_ih
    proj += b_hh
    full = (xs.shape[0],) + tuple(xp.broadcast_shapes(tuple(state[:-1]), tuple(xs.shape[1:-1]))) + (w_ih.shape[0],)
    if tuple(proj.shape) == full:
        return proj
    aligned = proj.reshape((proj.shape[0],) + (1,) * (len(full) - proj.ndim) + tuple(proj.shape[1:]))
    return xp.ascontiguousarray(xp.broadcast_to(aligned, full))


_steps = ForwardMemo()  # the forward's activations and states, for the backward of the same inputs


class _SequenceSteps:
    """What the forward of a whole LSTM sequence computed, in the layout its backward reads.

    The gates are kept in the order i, f, o, g (the three sigmoid gates one block), already activated:
    ``act (T, ..., 4H)``; ``hs (T + 1, ..., H)`` and ``cs (T + 1, ..., H)`` hold the states with ``h0``/``c0``
    first (so each step's start state is a slice, and the weight products over all steps read one buffer);
    ``tcs (T, ..., H)`` is ``tanh(c_t)``.
    """

    __slots__ = ("act", "hs", "cs", "tcs")

    def __init__(self, act: Any, hs: Any, cs: Any, tcs: Any) -> None:
        self.act, self.hs, self.cs, self.tcs = act, hs, cs, tcs


def _swap_g_o(xp: Any, a: Any) -> Any:
    """``a`` with its last two quarters (along the first axis) swapped: PyTorch's gate order i, f, g, o to
    the kernel's i, f, o, g and back (the swap is its own inverse)."""
    n = a.shape[0] // 4
    return xp.concatenate([a[:2 * n], a[3 * n:], a[2 * n:3 * n]])


def _sequence_forward(xp: Any, xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any
                      ) -> _SequenceSteps:
    """The forward of a whole LSTM sequence, about ten array calls a step: the sigmoid gates come out of
    the same in-place tanh as ``g`` (``sigmoid(a) = (1 + tanh(a / 2)) / 2``, the halving folded into the
    reordered weights and biases once per sequence), every result is written into a preallocated buffer."""
    four_h = w_hh.shape[0]  # the state: h0, c0 and the input's leading axes broadcast together
    shape = tuple(xp.broadcast_shapes(h0.shape, c0.shape, tuple(xs.shape[1:-1]) + (four_h // 4,)))
    n = four_h // 4
    half = xp.ones((four_h,), dtype=xp.result_type(w_ih, w_hh))
    half[:3 * n] = 0.5
    w_ih_k, w_hh_k = _swap_g_o(xp, w_ih) * half[:, None], _swap_g_o(xp, w_hh) * half[:, None]
    act = _input_projection(xp, xs, w_ih_k, _swap_g_o(xp, b_ih) * half, _swap_g_o(xp, b_hh) * half, shape)
    w_hh_t = xp.ascontiguousarray(w_hh_k.T)  # a C-ordered operand: faster small products
    T = xs.shape[0]
    hs = xp.empty((T + 1,) + shape, dtype=act.dtype)
    cs = xp.empty((T + 1,) + shape, dtype=act.dtype)
    tcs = xp.empty((T,) + shape, dtype=act.dtype)
    hs[0], cs[0] = h0, c0
    hidden = xp.empty(shape[:-1] + (four_h,), dtype=act.dtype)
    ig = xp.empty(shape, dtype=act.dtype)
    for t in range(T):
        a = act[t]
        xp.matmul(hs[t], w_hh_t, out=hidden)
        a += hidden
        xp.tanh(a, out=a)
        sig = a[..., :3 * n]
        sig *= 0.5
        sig += 0.5
        xp.multiply(a[..., :n], a[..., 3 * n:], out=ig)  # i * g
        xp.multiply(a[..., n:2 * n], cs[t], out=cs[t + 1])  # f * c
        cs[t + 1] += ig
        xp.tanh(cs[t + 1], out=tcs[t])
        xp.multiply(a[..., 2 * n:3 * n], tcs[t], out=hs[t + 1])  # o * tanh(c)
    return _SequenceSteps(act, hs, cs, tcs)


def _lstm_sequence_raw(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, mask: Any = None
                       ) -> tuple[Any, Any]:
    xp = namespace_of(xs)
    if mask is None:
        steps = _sequence_forward(xp, xs, h0, c0, w_ih, w_hh, b_ih, b_hh)
        _steps.put((xs, h0, c0, w_ih, w_hh, b_ih, b_hh), (), steps)
        return steps.hs[1:].copy(), steps.cs[-1].copy()  # copies: the caller may write into its results
    shape = tuple(xp.broadcast_shapes(h0.shape, c0.shape))
    gates = _input_projection(xp, xs, w_ih, b_ih, b_hh, shape)  # each step adds its hidden part in place
    w_hh_t = xp.ascontiguousarray(w_hh.T)
    h, c = h0, c0
    hs = xp.empty((xs.shape[0],) + shape, dtype=gates.dtype)
    for t in range(xs.shape[0]):  # the state moves to the step's result where mask[t] is 1, stays where it is 0
        gates[t] += xp.matmul(h, w_hh_t)
        h_new, c_new = _lstm_raw(gates[t], c)
        h, c = _blend(mask[t], h_new, h), _blend(mask[t], c_new, c)
        hs[t] = h
    # (the masked backward runs its forward again: a memo key would not tell the mask apart)
    return hs, c


def _blend(m: Any, new: Any, old: Any) -> Any:
    """``old + m (new - old)``: ``new`` where the mask is 1, ``old`` where it is 0."""
    out = new - old
    out *= m
    out += old
    return out


def _lstm_sequence_backward_raw(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, ghs: Any,
                                gc: Any) -> tuple[Any, ...]:
    xp = namespace_of(xs)
    steps = _steps.take((xs, h0, c0, w_ih, w_hh, b_ih, b_hh), ())
    if steps is None:  # not the forward's own inputs: run it again
        steps = _sequence_forward(xp, xs, h0, c0, w_ih, w_hh, b_ih, b_hh)
    return _sequence_backward(xp, steps, xs, h0, c0, w_ih, w_hh, ghs, None, gc)


def _sequence_backward(xp: Any, steps: _SequenceSteps, xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, ghs: Any,
                       gh_last: Any, gc: Any) -> tuple[Any, ...]:
    """The cotangents of the seven arguments of a time-major sequence (``xs (T, ..., I)``) from its forward's
    ``steps``, for the cotangents ``ghs`` of every step's ``h`` (any strided view), ``gh_last`` of the last
    one's again (``h_n``; None: none) and ``gc`` of the last ``c``."""
    act, tcs = steps.act, steps.tcs
    T = xs.shape[0]
    shape = tuple(steps.hs.shape[1:])
    n = shape[-1]
    # what does not depend on the recursion, over all steps at once: d gates = [dc, dc, dh, dc] * factor with
    # factor = [g i', c_prev f', tanh(c) o', i g'] (i' = i (1 - i) ..., g' = 1 - g^2), and the path from h to c.
    # The factors overwrite the activations (taken from the memo, or this call's own forward) block by block,
    # with temporaries of one gate's size: no new buffer of the gates' size to fault in.
    i, f, o, g = (act[..., k * n:(k + 1) * n] for k in range(4))
    h_to_c = tcs * tcs  # d c_t / d h_t = o (1 - tanh(c_t)^2)
    xp.subtract(1.0, h_to_c, out=h_to_c)
    h_to_c *= o
    forget = f.copy()  # the loop's d c_{t-1} = f d c_t
    i_dg = g * g
    xp.subtract(1.0, i_dg, out=i_dg)
    i_dg *= i
    for gate, partner in ((i, g), (f, steps.cs[:T]), (o, tcs)):
        one_minus = 1.0 - gate
        gate *= one_minus
        gate *= partner
    g[...] = i_dg
    factor = dgates = act  # and then the cotangents of the gates, step by step (factor[t] read first)
    grouped = (T,) + shape[:-1] + (4, n)
    factor4, dgates4 = factor.reshape(grouped), dgates.reshape(grouped)
    w_hh_k = _swap_g_o(xp, w_hh)
    dh = xp.zeros(shape, dtype=act.dtype)  # (the cotangent reaching h_t from later steps; h_n's at the end)
    if gh_last is not None:
        dh += gh_last
    dh_t = xp.empty(shape, dtype=act.dtype)
    o_part = xp.empty(shape, dtype=act.dtype)
    dc = xp.zeros(shape, dtype=act.dtype)
    dc += gc
    for t in range(T - 1, -1, -1):
        xp.add(ghs[t], dh, out=dh_t)  # the cotangent of h_t
        xp.multiply(dh_t, h_to_c[t], out=dh)  # (dh as scratch)
        dc += dh  # the cotangent of c_t
        d = dgates4[t]
        xp.multiply(factor[t][..., 2 * n:3 * n], dh_t, out=o_part)
        xp.multiply(factor4[t], dc[..., None, :], out=d)
        d[..., 2, :] = o_part
        xp.matmul(dgates[t], w_hh_k, out=dh)
        dc *= forget[t]
    flat = dgates.reshape(-1, 4 * n)
    dxs = xp.matmul(flat, _swap_g_o(xp, w_ih)).reshape(tuple(dgates.shape[:-1]) + (w_ih.shape[1],))
    full = tuple(dgates.shape[:-1]) + (xs.shape[-1],)  # the input aligned with the state's leading axes
    aligned = xs.reshape((T,) + (1,) * (len(full) - xs.ndim) + tuple(xs.shape[1:]))
    rows = xs if tuple(xs.shape) == full else xp.broadcast_to(aligned, full)
    dw_ih = _swap_g_o(xp, xp.matmul(flat.T, rows.reshape(-1, xs.shape[-1])))  # weight products over all steps
    dw_hh = _swap_g_o(xp, xp.matmul(flat.T, steps.hs[:T].reshape(-1, n)))
    db = _swap_g_o(xp, flat.sum(axis=0))
    return _sum_like(dxs, aligned).reshape(xs.shape), _sum_like(dh, h0), _sum_like(dc, c0), dw_ih, dw_hh, db, db.copy()


def _sum_like(a: Any, like: Any) -> Any:
    """``a`` summed down to ``like``'s (broadcast) shape."""
    extra = a.ndim - like.ndim
    if extra:
        a = a.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(like.shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=axes, keepdims=True) if axes else a


def lstm_sequence_backward_composed(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                                    ghs: Any, gc: Any) -> tuple[Any, ...]:
    """The cotangents of :func:`lstm_sequence`'s seven arguments, through the transforms (the reference)."""
    from ...transforms.autodiff import vjp

    _, pull = vjp(lstm_sequence_composed, xs, h0, c0, w_ih, w_hh, b_ih, b_hh)
    return tuple(pull((ghs, gc)))


def _vmapped(fn: Callable[..., Any], n_out: int) -> Callable[..., Any]:
    """vmap rule running ``fn`` (a composition of batchable primitives) under ``fg.vmap`` (with the
    primitive's static keyword options)."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, Any]:
        from ...transforms.batching import vmap

        run = (lambda *a: fn(*a, **kwargs)) if kwargs else fn
        return vmap(run, in_axes=tuple(dims))(*args), (0,) * n_out

    return rule


_seq_bwd_vjp, _seq_bwd_jvp = composed_rules(lstm_sequence_backward_composed)
lstm_sequence_backward: Callable[..., Any] = defprimitive(
    _lstm_sequence_backward_raw, name="lstm_sequence_backward", vjp_all=_seq_bwd_vjp, jvp_all=_seq_bwd_jvp,
    multiple_results=True, batch=_vmapped(lstm_sequence_backward_composed, 7),
    doc="Cotangents of :func:`lstm_sequence`'s arguments for cotangents ``(ghs, gc)`` of ``(hs, c_T)``: the "
        "forward again, then back through time, with the weight products over all steps as single GEMMs.")


def _seq_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *args: Any) -> list[Any]:
    ghs, gc = zeros_for(g, ans)
    cts = lstm_sequence_backward(*args, ghs, gc)
    return [cts[k] for k in argnums]


lstm_sequence: Callable[..., Any] = defprimitive(
    _lstm_sequence_raw, name="lstm_sequence", vjp_all=_seq_vjp_all,
    jvp_all=composed_rules(lstm_sequence_composed)[1], multiple_results=True,
    batch=_vmapped(lstm_sequence_composed, 2),
    doc="``(hs, c_T)`` of an LSTM layer over a time-major sequence ``xs (T, ..., I)`` from ``(h0, c0)``: one "
        "primitive for the whole sequence (PyTorch's fused LSTM), its backward one more "
        "(:func:`lstm_sequence_backward`).")


# --------------------------------------------------------------------------- a whole LSTM layer, as PyTorch's module sees it


def lstm_layer_composed(xs: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, h0: Any, c0: Any, *,
                        batch_first: bool = False, reverse: bool = False) -> tuple[Any, Any, Any]:
    """:func:`lstm_layer` from :func:`lstm_sequence_composed` and views (the reference)."""
    if batch_first:
        xs = fnp.swapaxes(xs, 0, 1)
    if reverse:
        xs = fnp.flip(xs, 0)
    hs, c = lstm_sequence_composed(xs, h0, c0, w_ih, w_hh, b_ih, b_hh)
    h_n = hs[-1]
    if reverse:
        hs = fnp.flip(hs, 0)
    return (fnp.swapaxes(hs, 0, 1) if batch_first else hs), h_n, c


def _time_major(xs: Any, batch_first: bool, reverse: bool) -> Any:
    """``xs`` (or a cotangent of the output) in the kernel's layout: time first, in the order the steps run."""
    if batch_first:
        xs = xs.swapaxes(0, 1)
    return xs[::-1] if reverse else xs


def _user_layout(a: Any, batch_first: bool, reverse: bool) -> Any:
    """The inverse of :func:`_time_major`: ``a`` in step order back in the input's layout and order."""
    if reverse:
        a = a[::-1]
    return a.swapaxes(0, 1) if batch_first else a


def _lstm_layer_raw(xs: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, h0: Any, c0: Any, *,
                    batch_first: bool = False, reverse: bool = False) -> tuple[Any, Any, Any]:
    xp = namespace_of(xs)
    steps = _sequence_forward(xp, _time_major(xs, batch_first, reverse), h0, c0, w_ih, w_hh, b_ih, b_hh)
    _steps.put((xs, w_ih, w_hh, b_ih, b_hh, h0, c0), (batch_first, reverse), steps)
    T = xs.shape[1 if batch_first else 0]
    # copies, as the caller may write into its results; a batch-first output is the transpose of a time-major
    # buffer, as PyTorch's (and its last step, what a classifier reads, one contiguous block)
    out = (steps.hs[:0:-1] if reverse else steps.hs[1:]).copy()
    return (out.swapaxes(0, 1) if batch_first else out), steps.hs[T].copy(), steps.cs[T].copy()


def _lstm_layer_backward_raw(xs: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, h0: Any, c0: Any, g_out: Any,
                             g_hn: Any, g_cn: Any, *, batch_first: bool = False, reverse: bool = False
                             ) -> tuple[Any, ...]:
    xp = namespace_of(xs)
    xs_steps = _time_major(xs, batch_first, reverse)
    steps = _steps.take((xs, w_ih, w_hh, b_ih, b_hh, h0, c0), (batch_first, reverse))
    if steps is None:  # not the forward's own inputs: run it again
        steps = _sequence_forward(xp, xs_steps, h0, c0, w_ih, w_hh, b_ih, b_hh)
    ghs = _time_major(g_out, batch_first, reverse)  # (views: the loop reads one step at a time)
    g_x, g_h0, g_c0, *g_weights = _sequence_backward(xp, steps, xs_steps, h0, c0, w_ih, w_hh, ghs, g_hn, g_cn)
    return (_user_layout(g_x, batch_first, reverse), *g_weights, g_h0, g_c0)


def lstm_layer_backward_composed(xs: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, h0: Any, c0: Any,
                                 g_out: Any, g_hn: Any, g_cn: Any, *, batch_first: bool = False,
                                 reverse: bool = False) -> tuple[Any, ...]:
    """The cotangents of :func:`lstm_layer`'s seven arguments, through the transforms (the reference)."""
    from ...transforms.autodiff import vjp

    _, pull = vjp(lambda *a: lstm_layer_composed(*a, batch_first=batch_first, reverse=reverse),
                  xs, w_ih, w_hh, b_ih, b_hh, h0, c0)
    return tuple(pull((g_out, g_hn, g_cn)))


_layer_bwd_vjp, _layer_bwd_jvp = composed_rules(lstm_layer_backward_composed)
lstm_layer_backward: Callable[..., Any] = defprimitive(
    _lstm_layer_backward_raw, name="lstm_layer_backward", vjp_all=_layer_bwd_vjp, jvp_all=_layer_bwd_jvp,
    multiple_results=True, batch=_vmapped(lstm_layer_backward_composed, 7),
    doc="Cotangents of :func:`lstm_layer`'s arguments for cotangents ``(g_out, g_hn, g_cn)`` of its three "
        "results: :func:`lstm_sequence_backward`'s pass, reading ``g_out`` in its layout, ``h_n``'s cotangent "
        "added to the last step's.")


def _layer_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *args: Any,
                   **kwargs: Any) -> list[Any]:
    # (zeros where a result got no cotangent, on xs's device; the results are read for their shapes only)
    xp = namespace_of(args[0])
    cts = lstm_layer_backward(*args, *(xp.zeros(a.shape, dtype=a.dtype) if ct is None else ct
                                       for ct, a in zip(g, ans)), **kwargs)
    return [cts[k] for k in argnums]


# Every rule "reads" the results too: PyTorch's MkldnnRnnLayerBackward0 saves its output, so that the Tensor
# layer version-checks them as PyTorch does (an in-place write to ``output`` before ``backward()`` is an error
# there; ``h_n`` and ``c_n`` reach the user through a stack, which saves nothing).
lstm_layer: Callable[..., Any] = defprimitive(
    _lstm_layer_raw, name="lstm_layer", vjp_all=_layer_vjp_all,
    jvp_all=composed_rules(lstm_layer_composed)[1], multiple_results=True,
    batch=_vmapped(lstm_layer_composed, 3), reads={k: {*range(7), "ans"} for k in range(7)},
    doc="``(out, h_n, c_n)`` of one LSTM layer and direction from one node, its arguments in the order of "
        "PyTorch's (``xs, w_ih, w_hh, b_ih, b_hh, h0, c0``): ``out`` every step's ``h`` (``(T, ..., H)``; "
        "``batch_first``: ``xs`` and ``out`` are ``(N, T, ...)``), ``h_n`` and ``c_n`` the final state "
        "(``(..., H)``); ``reverse`` runs the sequence from its last step (``out`` in input order). The "
        "sequence must have at least one step. The kernel of :func:`lstm_sequence`, its backward "
        "(:func:`lstm_layer_backward`) one more primitive.")


# --------------------------------------------------------------------------- a masked LSTM sequence (packed input)


def masked_lstm_sequence_composed(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, mask: Any
                                  ) -> tuple[Any, Any]:
    """:func:`masked_lstm_sequence` as a loop of the per-step kernels (the reference)."""
    proj = fnp.matmul(xs, fnp.swapaxes(w_ih, -1, -2)) + b_ih
    h, c = h0, c0
    hs = []
    for t in range(fnp.shape(xs)[0]):
        h_new, c_new = lstm_pointwise(fused_gates(proj[t], h, None, w_hh, None, b_hh), c)
        h, c = h + mask[t] * (h_new - h), c + mask[t] * (c_new - c)
        hs.append(h)
    return fnp.stack(hs), c


def _masked_lstm_sequence_backward_raw(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                                       mask: Any, ghs: Any, gc: Any, mask_cotangent: bool = True) -> tuple[Any, ...]:
    xp = namespace_of(xs)
    T = xs.shape[0]
    proj = xp.matmul(xs, w_ih.T)
    proj += b_ih
    proj += b_hh
    w_hh_t = w_hh.T
    shape = tuple(xp.broadcast_shapes(h0.shape, c0.shape))
    gates = xp.empty((T,) + shape[:-1] + (proj.shape[-1],), dtype=proj.dtype)
    h_prev, c_prev, h_step, c_step = (xp.empty((T,) + shape, dtype=proj.dtype) for _ in range(4))
    h, c = xp.broadcast_to(h0, shape), xp.broadcast_to(c0, shape)
    for t in range(T):  # the forward again, keeping each step's start state and unblended result
        h_prev[t], c_prev[t] = h, c
        xp.matmul(h, w_hh_t, out=gates[t])
        gates[t] += proj[t]
        h_step[t], c_step[t] = _lstm_raw(gates[t], c)
        h, c = _blend(mask[t], h_step[t], h), _blend(mask[t], c_step[t], c)
    dgates = xp.empty_like(gates)
    dmask = xp.empty((T,) + shape, dtype=proj.dtype) if mask_cotangent else None
    keep = 1.0 - mask
    dh = xp.zeros(shape, dtype=proj.dtype)
    dc = xp.broadcast_to(gc, shape)
    for t in range(T - 1, -1, -1):
        m = mask[t]
        dh_t = ghs[t] + dh  # the cotangents of the state after step t
        if dmask is not None:
            dmask[t] = dh_t * (h_step[t] - h_prev[t]) + dc * (c_step[t] - c_prev[t])
        dgates[t], dc_cell = _lstm_backward_raw(gates[t], c_prev[t], m * dh_t, m * dc)
        dh = xp.matmul(dgates[t], w_hh)
        dh += keep[t] * dh_t
        dc_cell += keep[t] * dc
        dc = dc_cell
    n = dgates.shape[-1]
    flat = dgates.reshape(-1, n)
    dxs = xp.matmul(dgates, w_ih)
    dw_ih = xp.matmul(flat.T, xs.reshape(-1, xs.shape[-1]))
    dw_hh = xp.matmul(flat.T, h_prev.reshape(-1, shape[-1]))
    db = flat.sum(axis=0)
    dm = _sum_like(dmask, mask) if dmask is not None else xp.zeros_like(mask)
    return dxs, _sum_like(dh, h0), _sum_like(dc, c0), dw_ih, dw_hh, db, db.copy(), dm


def masked_lstm_sequence_backward_composed(xs: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                                           mask: Any, ghs: Any, gc: Any, mask_cotangent: bool = True
                                           ) -> tuple[Any, ...]:
    """The cotangents of :func:`masked_lstm_sequence`'s eight arguments, through the transforms (the reference);
    without ``mask_cotangent`` the mask's is zeros (a constant mask: the kernel skips that work)."""
    from ...transforms.autodiff import vjp

    _, pull = vjp(masked_lstm_sequence_composed, xs, h0, c0, w_ih, w_hh, b_ih, b_hh, mask)
    cts = tuple(pull((ghs, gc)))
    return cts if mask_cotangent else cts[:7] + (fnp.zeros_like(mask),)


_masked_bwd_vjp, _masked_bwd_jvp = composed_rules(masked_lstm_sequence_backward_composed)
masked_lstm_sequence_backward: Callable[..., Any] = defprimitive(
    _masked_lstm_sequence_backward_raw, name="masked_lstm_sequence_backward", vjp_all=_masked_bwd_vjp,
    jvp_all=_masked_bwd_jvp, multiple_results=True, batch=_vmapped(masked_lstm_sequence_backward_composed, 8),
    doc="Cotangents of :func:`masked_lstm_sequence`'s arguments (the mask's too) for cotangents ``(ghs, gc)``.")


def _masked_seq_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *args: Any) -> list[Any]:
    ghs, gc = zeros_for(g, ans)
    cts = masked_lstm_sequence_backward(*args, ghs, gc, mask_cotangent=7 in argnums)
    return [cts[k] for k in argnums]


masked_lstm_sequence: Callable[..., Any] = defprimitive(
    _lstm_sequence_raw, name="masked_lstm_sequence", vjp_all=_masked_seq_vjp_all,
    jvp_all=composed_rules(masked_lstm_sequence_composed)[1], multiple_results=True,
    batch=_vmapped(masked_lstm_sequence_composed, 2),
    doc="``(hs, c_T)`` of :func:`lstm_sequence` with a ``mask`` ``(T, ..., 1)`` (broadcast against the state): "
        "at step t the state becomes ``old + mask[t] (new - old)``, so where the mask is 0 (past a sequence's "
        "length) it stays frozen: a packed batch of sequences of different lengths in one primitive. "
        "Differentiable in every argument, the mask included, to any order.")
