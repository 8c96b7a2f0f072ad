"""Issue 26's layer kernels (funcgrad/nn/kernels): convolution, max pooling, standardization,
LSTM/GRU steps.

Every kernel primitive goes through the shared spec checks (tests/factories.py: forward
against the old composition it replaces, check_grads in both modes to second order, vmap
without the loop fallback, float32, the fake device); the layers built on them are compared
with PyTorch's recorded outputs and gradients (tests/fixtures/torch_kernels.json, written by
tests/fixtures/make_torch_kernels.py; no torch needed here) in float64 and float32; double
backward through conv, norm and LSTM is checked against the old compositions.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as nn
import funcgrad.numpy as fnp
from factories import CHECKS, Spec, check_spec
from funcgrad.nn import rectifier as kact
from funcgrad.nn.kernels import attention as kattn
from funcgrad.nn.kernels import convolution as kconv
from funcgrad.nn.kernels import dense as kdense
from funcgrad.nn.kernels import layer_norm as klayer
from funcgrad.nn import softmax_loss as klosses
from funcgrad.nn.kernels import normalization as knorm
from funcgrad.nn.kernels import pooling as kpool
from funcgrad.nn.kernels import recurrent as krnn

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "torch_kernels.json"
R = "real"


# --------------------------------------------------------------------------- the old compositions


def old_conv(x, w, stride, pads, dilation, groups):
    """im2col + batched matmul: the convolution before the kernels."""
    nsp = fnp.ndim(w) - 2
    kernel = tuple(fnp.shape(w)[2:])
    n = fnp.shape(x)[0]
    c_out, c_in_g = fnp.shape(w)[:2]
    cols = nn.im2col(x, kernel, stride, pads, dilation)
    out = tuple(fnp.shape(cols)[2 + nsp:])
    cols = fnp.reshape(cols, (n, groups, c_in_g * math.prod(kernel), math.prod(out)))
    wm = fnp.reshape(w, (groups, c_out // groups, c_in_g * math.prod(kernel)))
    return fnp.reshape(fnp.matmul(wm, cols), (n, c_out) + out)


def old_max_pool(x, kernel, stride, pads, dilation):
    cols = nn.im2col(x, kernel, stride, pads, dilation, pad_value=-math.inf)
    return fnp.max(cols, axis=tuple(range(fnp.ndim(x) - len(kernel), fnp.ndim(x))))


def old_avg_pool(x, kernel, stride, pads, dilation):
    cols = nn.im2col(x, kernel, stride, pads, dilation)
    return fnp.mean(cols, axis=tuple(range(fnp.ndim(x) - len(kernel), fnp.ndim(x))))


def old_standardize(x, axes, eps):
    mu = fnp.mean(x, axis=axes, keepdims=True)
    xc = x - mu
    return xc / fnp.sqrt(fnp.mean(xc * xc, axis=axes, keepdims=True) + eps)


def _vjp_of(f, argnum):
    """``(g, *args) -> cotangent of args[argnum]`` of ``f``: the reference for a backward product."""
    def call(g, *args):
        return fg.vjp(lambda a: f(*(args[:argnum] + (a,) + args[argnum + 1:])), args[argnum])[1](g)[0]
    return call


# --------------------------------------------------------------------------- spec table

CONV_GEOMETRY = {  # name: (x shape, w shape, stride, pads, dilation, groups)
    "pad_groups": ((2, 4, 5, 6), (6, 2, 3, 2), (1, 1), ((1, 1), (1, 1)), (1, 1), 2),
    "stride_dil": ((1, 3, 7, 7), (4, 3, 3, 3), (2, 2), ((1, 1), (2, 2)), (2, 1), 1),
    "1x1": ((2, 3, 4, 4), (5, 3, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    "patch": ((2, 2, 6, 6), (3, 2, 2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    "1d": ((2, 3, 9), (4, 3, 3), (2,), ((1, 2),), (2,), 1),
    # stride 1: the shifted-rows columns (kconv._Shift), cropped where the padded rows are longer than the output
    "s1_dil_asym": ((1, 3, 5, 7), (4, 3, 3, 2), (1, 1), ((2, 0), (1, 2)), (2, 1), 1),
    "s1_no_pad": ((1, 2, 6, 5), (2, 2, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    "s1_3d": ((2, 2, 3, 4, 5), (3, 2, 2, 3, 2), (1, 1, 1), ((1, 0), (0, 1), (1, 1)), (1, 1, 1), 1),
    "s1_1d_groups": ((2, 4, 9), (6, 2, 3), (1,), ((0, 1),), (3,), 2),
    # stride 1 with the trailing axes keeping their size: read unpadded, the reads across a row edge zeroed
    "s1_same_rows": ((2, 4, 5, 6), (6, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2),
    "s1_same_rows_3d_dil": ((1, 2, 3, 4, 3), (2, 2, 2, 3, 3), (1, 1, 1), ((0, 1), (1, 3), (3, 3)), (1, 2, 3), 1),
}


def _conv_specs():
    specs = []
    for name, (xs, ws, st, pd, dl, gr) in CONV_GEOMETRY.items():
        geom = (st, pd, dl, gr)
        ys = np.shape(old_conv(np.zeros(xs), np.zeros(ws), *geom))
        specs.append(Spec(f"conv_forward_{name}", lambda x, w, g=geom: kconv.conv_forward(x, w, *g),
                          lambda x, w, g=geom: old_conv(x, w, *g), [R, R], shapes=(xs, ws)))
        specs.append(Spec(f"conv_input_grad_{name}",
                          lambda g, w, xs=xs, geo=geom: kconv.conv_input_grad(g, w, xs, *geo),
                          lambda g, w, xs=xs, geo=geom: _vjp_of(lambda x, w: old_conv(x, w, *geo), 0)(
                              g, np.zeros(xs), w), [R, R], shapes=(ys, ws)))
        specs.append(Spec(f"conv_weight_grad_{name}",
                          lambda g, x, ws=ws, geo=geom: kconv.conv_weight_grad(g, x, ws, *geo),
                          lambda g, x, ws=ws, geo=geom: _vjp_of(lambda x, w: old_conv(x, w, *geo), 1)(
                              g, x, np.zeros(ws)), [R, R], shapes=(ys, xs)))
    return specs


POOLS = {  # name: (x shape, kernel, stride, pads, dilation)
    "2x2": ((2, 3, 6, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    "overlap_pad": ((2, 2, 7, 5), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),
    "ceil_dil": ((1, 2, 8, 7), (2, 3), (2, 2), ((0, 1), (0, 1)), (2, 1)),
    "1d": ((3, 9), (3,), (1,), ((1, 1),), (1,)),
    "tiles_remainder": ((2, 2, 7, 5), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    "tiles_2x3_batch1": ((1, 3, 4, 9), (2, 3), (2, 3), ((0, 0), (0, 0)), (1, 1)),  # the tiled scatter
}


def _pool_specs():
    specs = []
    for name, (xs, k, s, p, d) in POOLS.items():
        geom = (k, s, p, d)
        specs.append(Spec(f"max_pool_windows_{name}", lambda x, g=geom: nn.max_pool_windows(x, *g),
                          lambda x, g=geom: old_max_pool(x, *g), [R], shapes=(xs,)))
        # the scatter, as a function of the cotangent (the argmax fixed by one input)
        x0 = np.random.default_rng(5).standard_normal(xs)
        idx = kpool.window_argmax(x0, *geom)
        specs.append(Spec(f"window_scatter_{name}",
                          lambda g, i=idx, xs=xs, geo=geom: kpool.window_scatter(g, i, xs, *geo),
                          lambda g, geo=geom, x0=x0: _vjp_of(lambda x: old_max_pool(x, *geo), 0)(g, x0),
                          [R], shapes=(np.shape(idx),),
                          skip={"device": "the argmax is a host constant here; max_pool_windows' device check "
                                          "runs the scatter on the device"}))
        # average pooling: the window sum (over the window size) and its transpose
        k_size = math.prod(k)
        specs.append(Spec(f"avg_pool_windows_{name}", lambda x, g=geom, n=k_size: kpool.window_sum(x, *g) / n,
                          lambda x, g=geom: old_avg_pool(x, *g), [R], shapes=(xs,)))
        ys = np.shape(old_avg_pool(np.zeros(xs), *geom))
        specs.append(Spec(f"window_spread_{name}", lambda g, xs=xs, geo=geom: kpool.window_spread(g, xs, *geo),
                          lambda g, xs=xs, geo=geom, n=k_size: _vjp_of(lambda x: old_avg_pool(x, *geo) * n, 0)(
                              g, np.zeros(xs)), [R], shapes=(ys,)))
    return specs


NORMS = {"batch": ((4, 3, 2, 2), (0, 2, 3)), "layer": ((2, 3, 5), (1, 2)), "group": ((2, 3, 4), (2,)),
         "negative_axis": ((3, 4), (-1,))}

NORM_SPECS = [Spec(f"standardize_{name}", lambda x, a=axes: knorm.standardize(x, a, 1e-5),
                   lambda x, a=axes: old_standardize(x, a, 1e-5), [R], shapes=(shape,), rtol=1e-9, atol=1e-10)
              for name, (shape, axes) in NORMS.items()] + [
    Spec("standardize_tangent", lambda v, x: knorm.standardize_tangent(v, x, (0, 2), 1e-5),
         lambda v, x: _vjp_of(lambda x: old_standardize(x, (0, 2), 1e-5), 0)(v, x), [R, R], shapes=((3, 4, 2), (3, 4, 2)),
         rtol=1e-9, atol=1e-10),
    Spec("standardize_affine_batch", lambda x, w, b: knorm.standardize_affine(x, w, b, (0, 2, 3), 1e-5),
         lambda x, w, b: old_standardize(x, (0, 2, 3), 1e-5) * w + b, [R, R, R],
         shapes=((4, 3, 2, 2), (1, 3, 1, 1), (1, 3, 1, 1)), rtol=1e-9, atol=1e-10),
    Spec("standardize_affine_trailing_w", lambda x, w, b: knorm.standardize_affine(x, w, b, (0,), 1e-5),
         lambda x, w, b: old_standardize(x, (0,), 1e-5) * w + b, [R, R, R], shapes=((5, 3), (3,), (1, 3)),
         rtol=1e-9, atol=1e-10)] + [
    Spec(f"standardize_affine_backward_{k}",
         lambda g, x, w, k=k: knorm.standardize_affine_backward(g, x, w, (0, 2), 1e-5)[k],
         lambda g, x, w, k=k: fg.vjp(lambda x, w, b: old_standardize(x, (0, 2), 1e-5) * w + b, x, w,
                                     fnp.zeros_like(w))[1](g)[k], [R, R, R],
         shapes=((3, 2, 4), (3, 2, 4), (1, 2, 1)), rtol=1e-9, atol=1e-10) for k in range(3)] + [
    # each result of the kernel that also returns its batch statistics (mean, biased variance), and all three
    # at once (the VJP with every cotangent present)
    Spec(f"standardize_affine_statistics_{k}",
         lambda x, w, b, k=k: knorm.standardize_affine_statistics(x, w, b, (0, 2), 1e-5)[k],
         lambda x, w, b, k=k: knorm.standardize_affine_statistics_composed(x, w, b, (0, 2), 1e-5)[k], [R, R, R],
         shapes=((3, 2, 4), (1, 2, 1), (1, 2, 1)), rtol=1e-9, atol=1e-10) for k in range(3)] + [
    Spec("standardize_affine_statistics_all",
         lambda x, w, b: sum(fnp.sum(r * c) for r, c in zip(
             knorm.standardize_affine_statistics(x, w, b, (0,), 1e-5), (1.0, 0.7, -1.3))),
         lambda x, w, b: sum(fnp.sum(r * c) for r, c in zip(
             knorm.standardize_affine_statistics_composed(x, w, b, (0,), 1e-5), (1.0, 0.7, -1.3))), [R, R, R],
         shapes=((5, 3), (3,), (1, 3)), rtol=1e-9, atol=1e-10)] + [
    # layer norm over the last axis with its scale and shift (nn.layer_norm's one node): a stack and one vector
    Spec("layer_norm_affine", lambda x, w, b: klayer.layer_norm_affine(x, w, b, 1e-5),
         lambda x, w, b: old_standardize(x, (2,), 1e-5) * w + b, [R, R, R], shapes=((2, 3, 4), (4,), (4,)),
         rtol=1e-9, atol=1e-10),
    Spec("layer_norm_affine_vector", lambda x, w, b: klayer.layer_norm_affine(x, w, b, 1e-5),
         lambda x, w, b: old_standardize(x, (0,), 1e-5) * w + b, [R, R, R], shapes=((5,), (5,), (5,)),
         rtol=1e-9, atol=1e-10)] + [
    Spec(f"layer_norm_affine_backward_{k}", lambda g, x, w, k=k: klayer.layer_norm_affine_backward(g, x, w, 1e-5)[k],
         lambda g, x, w, k=k: fg.vjp(lambda x, w, b: old_standardize(x, (1,), 1e-5) * w + b, x, w,
                                     fnp.zeros_like(w))[1](g)[k], [R, R, R],
         shapes=((3, 4), (3, 4), (4,)), rtol=1e-9, atol=1e-10) for k in range(3)]

RNN_SPECS = [
    Spec("fused_gates", krnn.fused_gates, krnn.gates_composed, [R] * 6,
         shapes=((3, 4), (3, 5), (8, 4), (8, 5), (8,), (8,))),
    Spec("fused_gates_projected", lambda x, h, w: krnn.fused_gates(x, h, None, w, None, None),
         lambda x, h, w: krnn.gates_composed(x, h, None, w, None, None), [R] * 3, shapes=((3, 8), (3, 5), (8, 5))),
    Spec("lstm_pointwise_h", lambda g, c: krnn.lstm_pointwise(g, c)[0],
         lambda g, c: krnn.lstm_pointwise_composed(g, c)[0], [R, R], shapes=((3, 8), (3, 2))),
    Spec("lstm_pointwise_c", lambda g, c: krnn.lstm_pointwise(g, c)[1],
         lambda g, c: krnn.lstm_pointwise_composed(g, c)[1], [R, R], shapes=((3, 8), (3, 2))),
    Spec("lstm_pointwise_backward", lambda a, c, gh, gc: krnn.lstm_pointwise_backward(a, c, gh, gc)[0],
         lambda a, c, gh, gc: _vjp_of(lambda a, c: krnn.lstm_pointwise_composed(a, c), 0)((gh, gc), a, c),
         [R, R, R, R], shapes=((2, 8), (2, 2), (2, 2), (2, 2))),
    Spec("gru_pointwise", krnn.gru_pointwise, krnn.gru_pointwise_composed, [R, R, R], shapes=((3, 6), (3, 6), (3, 2))),
    Spec("gru_pointwise_backward", lambda a, b, h, g: krnn.gru_pointwise_backward(a, b, h, g)[1],
         lambda a, b, h, g: _vjp_of(krnn.gru_pointwise_composed, 1)(g, a, b, h), [R, R, R, R],
         shapes=((2, 6), (2, 6), (2, 2), (2, 2))),
]

def old_attention(q, k, v, bias, scale):
    s = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * scale
    return fnp.matmul(nn.softmax(s if bias is None else s + bias, axis=-1), v)


LSTM_SEQ_SHAPES = ((3, 2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,), (16,))
RNN_SPECS += [
    Spec(f"lstm_sequence_{k}", lambda *a, k=k: krnn.lstm_sequence(*a)[k],
         lambda *a, k=k: krnn.lstm_sequence_composed(*a)[k], [R] * 7, shapes=LSTM_SEQ_SHAPES) for k in range(2)] + [
    Spec(f"lstm_sequence_backward_{k}", lambda *a, k=k: krnn.lstm_sequence_backward(*a)[k],
         lambda *a, k=k: krnn.lstm_sequence_backward_composed(*a)[k], [R] * 9,
         shapes=LSTM_SEQ_SHAPES + ((3, 2, 4), (2, 4)),
         skip={"grads": "second order of a backward is third order of the sequence: the double-backward test "
                        "and lstm_sequence's own order-2 check cover it"} if k != 4 else None)
    for k in (0, 4)]
def _layer_outputs(*args, **layout):
    """lstm_layer's (out, h_n, c_n) as one flat array: a spec checks the three results of one node at once."""
    return fnp.concatenate([fnp.ravel(o) for o in krnn.lstm_layer(*args, **layout)])


def _layer_outputs_composed(*args, **layout):
    return fnp.concatenate([fnp.ravel(o) for o in krnn.lstm_layer_composed(*args, **layout)])


LAYER_LAYOUTS = {"time_major": {}, "batch_first": {"batch_first": True}, "reversed": {"reverse": True},
                 "batch_first_reversed": {"batch_first": True, "reverse": True}}
# lstm_layer's arguments in PyTorch's order: xs, w_ih, w_hh, b_ih, b_hh, h0, c0
LAYER_SHAPES = (LSTM_SEQ_SHAPES[0],) + LSTM_SEQ_SHAPES[3:] + LSTM_SEQ_SHAPES[1:3]
LSTM_BF_SHAPES = ((2, 3, 3),) + LAYER_SHAPES[1:]  # (N, T, I)
RNN_SPECS += [
    Spec(f"lstm_layer_{name}", lambda *a, lay=lay: _layer_outputs(*a, **lay),
         lambda *a, lay=lay: _layer_outputs_composed(*a, **lay), [R] * 7,
         shapes=LSTM_BF_SHAPES if lay.get("batch_first") else LAYER_SHAPES,
         skip=None if name in ("time_major", "batch_first_reversed") else {
             "grads": "the time-major and the batch-first reversed layouts' order-2 checks run the same rules"})
    for name, lay in LAYER_LAYOUTS.items()] + [
    Spec(f"lstm_layer_backward_{k}", lambda *a, k=k: krnn.lstm_layer_backward(*a, batch_first=True, reverse=True)[k],
         lambda *a, k=k: krnn.lstm_layer_backward_composed(*a, batch_first=True, reverse=True)[k], [R] * 10,
         shapes=LSTM_BF_SHAPES + ((2, 3, 4), (2, 4), (2, 4)),
         skip={"grads": "third order of the sequence: lstm_layer's own order-2 check and the double-backward "
                        "test cover it"} if k != 2 else None)
    for k in (0, 2)]

MASKED_SEQ_SHAPES = LSTM_SEQ_SHAPES + ((3, 2, 1),)  # the mask: any real values (the blend is smooth in it)
RNN_SPECS += [
    Spec(f"masked_lstm_sequence_{k}", lambda *a, k=k: krnn.masked_lstm_sequence(*a)[k],
         lambda *a, k=k: krnn.masked_lstm_sequence_composed(*a)[k], [R] * 8, shapes=MASKED_SEQ_SHAPES)
    for k in range(2)] + [
    Spec(f"masked_lstm_sequence_backward_{k}", lambda *a, k=k: krnn.masked_lstm_sequence_backward(*a)[k],
         lambda *a, k=k: krnn.masked_lstm_sequence_backward_composed(*a)[k], [R] * 10,
         shapes=MASKED_SEQ_SHAPES + ((3, 2, 4), (2, 4)),
         skip={"grads": "third order of the sequence: masked_lstm_sequence's own order-2 check covers it"}
         if k != 7 else None)
    for k in (0, 4, 7)] + [
    Spec("masked_lstm_sequence_backward_constant_mask",  # the mask's own cotangent skipped (zeros)
         lambda *a: krnn.masked_lstm_sequence_backward(*a, mask_cotangent=False)[0],
         lambda *a: krnn.masked_lstm_sequence_backward_composed(*a, mask_cotangent=False)[0], [R] * 10,
         shapes=MASKED_SEQ_SHAPES + ((3, 2, 4), (2, 4)), skip={"grads": "as masked_lstm_sequence_backward_0"})]

ATTENTION_SPECS = [
    Spec("attention", lambda q, k, v: kattn.attention(q, k, v, None, 0.5),
         lambda q, k, v: old_attention(q, k, v, None, 0.5), [R, R, R], shapes=((2, 3, 4), (2, 5, 4), (2, 5, 3))),
    Spec("attention_bias", lambda q, k, v, b: kattn.attention(q, k, v, b, 0.3),
         lambda q, k, v, b: old_attention(q, k, v, b, 0.3), [R, R, R, R],
         shapes=((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3), (3, 5))),
    Spec("attention_backward_dq", lambda q, k, v, b, g: kattn.attention_backward(q, k, v, b, g, 0.3)[0],
         lambda q, k, v, b, g: _vjp_of(lambda q: old_attention(q, k, v, b, 0.3), 0)(g, q), [R, R, R, R, R],
         shapes=((2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5), (2, 3, 3))),
    Spec("attention_backward_dbias", lambda q, k, v, b, g: kattn.attention_backward(q, k, v, b, g, 0.3)[3],
         lambda q, k, v, b, g: _vjp_of(lambda b: old_attention(q, k, v, fnp.broadcast_to(b, (2, 3, 5)), 0.3), 0)(
             g, np.broadcast_to(b, (2, 3, 5))), [R, R, R, R, R],
         shapes=((2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5), (2, 3, 3))),
]

ACTIVATION_SPECS = [  # inputs away from 0 (the kink) so that finite differences see one side
    Spec("relu", kact.relu, lambda x: fnp.where(x > 0, x, 0.0), [R], shapes=((3, 5),)),
    Spec("positive_part", kact.positive_part, lambda v, x: fnp.where(x > 0, v, 0.0), [R, R],
         shapes=((3, 5), (3, 5))),
    Spec("positive_part_broadcast", kact.positive_part, lambda v, x: fnp.where(x > 0, v, 0.0), [R, R],
         shapes=((3, 1), (3, 5))),
    # PyTorch's mask (the Tensor layer's relu): zero where x <= 0, so a NaN in x lets v through
    Spec("relu_nan_passes", lambda x: kact.relu(x, nan_passes=True), lambda x: fnp.where(x > 0, x, 0.0), [R],
         shapes=((3, 5),)),
    Spec("positive_part_nan_passes", lambda v, x: kact.positive_part(v, x, nan_passes=True),
         lambda v, x: fnp.where(x <= 0, 0.0, v), [R, R], shapes=((3, 5), (3, 5))),
    Spec("positive_part_nan_passes_broadcast", lambda v, x: kact.positive_part(v, x, nan_passes=True),
         lambda v, x: fnp.where(x <= 0, 0.0, v), [R, R], shapes=((3, 1), (3, 5))),
]

DENSE_SPECS = [  # x @ w.T + b: a matrix, a stack, one vector, no bias, a bias broadcast over rows
    Spec("dense", kdense.dense, kdense.dense_composed, [R, R, R], shapes=((4, 3), (2, 3), (2,))),
    Spec("dense_stack", kdense.dense, kdense.dense_composed, [R, R, R], shapes=((2, 4, 3), (5, 3), (5,))),
    Spec("dense_vector", kdense.dense, kdense.dense_composed, [R, R, R], shapes=((3,), (2, 3), (2,))),
    Spec("dense_no_bias", lambda x, w: kdense.dense(x, w, None), lambda x, w: kdense.dense_composed(x, w, None),
         [R, R], shapes=((4, 3), (2, 3))),
    Spec("dense_full_bias", kdense.dense, kdense.dense_composed, [R, R, R], shapes=((4, 3), (2, 3), (4, 2))),
]

LOSS_SPECS = [  # logits and targets both differentiated (probabilities, or rows that do not sum to 1)
    Spec("softmax_cross_entropy", lambda x, t: klosses.softmax_cross_entropy(x, t, -1),
         lambda x, t: klosses.softmax_cross_entropy_composed(x, t, -1), [R, R], shapes=((4, 5), (4, 5))),
    Spec("softmax_cross_entropy_axis1", lambda x, t: klosses.softmax_cross_entropy(x, t, 1),
         lambda x, t: klosses.softmax_cross_entropy_composed(x, t, 1), [R, R], shapes=((2, 3, 4), (2, 3, 4))),
    Spec("softmax_cross_entropy_vector", lambda x, t: klosses.softmax_cross_entropy(x, t, 0),
         lambda x, t: klosses.softmax_cross_entropy_composed(x, t, 0), [R, R], shapes=((5,), (5,))),
]

SPECS = (_conv_specs() + _pool_specs() + NORM_SPECS + RNN_SPECS + ATTENTION_SPECS + ACTIVATION_SPECS + DENSE_SPECS
         + LOSS_SPECS)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_kernel_spec(spec, check):
    check_spec(spec, check)


# --------------------------------------------------------------------------- recorded PyTorch values


def _load():
    with open(FIXTURE) as f:
        return json.load(f)


TABLE = _load()


def _arr(d):
    return None if d is None else np.asarray(d["data"], dtype=d["dtype"]).reshape(d["shape"])


def _layer_call(kind, kw, xs):
    """The funcgrad.nn call of a case: ``(function of the float inputs, the inputs)``."""
    if kind in ("conv1d", "conv2d", "conv3d"):
        return (lambda x, w, b=None: getattr(nn, kind)(x, w, b, kw.get("stride", 1), kw.get("padding", 0),
                                                        kw.get("dilation", 1), kw.get("groups", 1)))
    if kind == "layer_norm":
        return lambda x, w, b: nn.layer_norm(x, len(kw["normalized_shape"]), w, b)
    if kind == "group_norm":
        return lambda x, w, b: nn.group_norm(x, kw["num_groups"], w, b)
    if kind == "lstm_cell":
        return lambda *a: fnp.concatenate(nn.lstm_cell(*a), axis=-1)
    if kind == "gru_cell":
        return nn.gru_cell
    if kind == "lstm":
        def lstm(*a):
            hs, (_, c) = nn.lstm(*a)
            return fnp.concatenate([fnp.reshape(hs, (-1,)), fnp.reshape(c, (-1,))])
        return lstm
    if kind == "gru":  # no sequence primitive: the loop of gru_cell steps
        def gru(xs, h, *w):
            hs = []
            for t in range(fnp.shape(xs)[0]):
                h = nn.gru_cell(xs[t], h, *w)
                hs.append(h)
            return fnp.reshape(fnp.stack(hs), (-1,))
        return gru
    if kind == "lstm_packed":
        mask = np.arange(xs[0].shape[0])[:, None] < np.asarray(kw["lengths"])[None, :]  # (T, batch)

        def packed(*a):
            hs, (h, c) = nn.lstm(*a, mask=mask)
            hs = hs * mask[..., None].astype(hs.dtype)  # PyTorch pads with zeros past each length
            return fnp.concatenate([fnp.reshape(t, (-1,)) for t in (hs, h, c)])
        return packed
    if kind == "sdpa":
        scale = kw.get("scale", 1.0 / math.sqrt(xs[0].shape[-1]))
        return lambda q, k, v, bias=None: kattn.attention(q, k, v, bias, scale)
    if kind == "linear":
        return lambda x, w, b=None: kdense.dense(x, w, b)
    if kind == "cross_entropy":
        return lambda x, t: klosses.softmax_cross_entropy(x, t, 1 if np.ndim(xs[0]) > 2 else -1)
    raise AssertionError(kind)


def _tol(dtype):
    return {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(TABLE["cases"]))
def test_layers_match_recorded_torch(name, dtype):
    rec = TABLE["cases"][name][dtype]
    kind, kw = rec["kind"], rec["kwargs"]
    xs = [_arr(a) for a in rec["inputs"]]
    cot = _arr(rec["cot"])
    tol = _tol(dtype)
    if kind in ("Conv2d", "ConvTranspose2d"):
        _check_ft_module(kind, kw, xs, cot, rec, tol)
        return
    if kind.startswith(("max_pool", "avg_pool")):
        import funcgrad.tensor as ft

        x = ft.tensor(xs[0], requires_grad=True)
        y = getattr(ft.nn.functional, kind)(x, **kw)
        (y * ft.tensor(cot)).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), _arr(rec["out"]), **tol)
        np.testing.assert_allclose(x.grad.numpy(), _arr(rec["grads"][0]), **tol)
        assert y.dtype == x.dtype
        return
    if kind == "batch_norm":
        c = xs[0].shape[1]
        rm = np.linspace(-0.5, 0.5, c).astype(dtype)
        rv = np.linspace(0.5, 1.5, c).astype(dtype)

        def f(x, w, b):
            return nn.batch_norm(x, rm, rv, w, b, training=True, momentum=kw["momentum"], eps=kw["eps"])[0]

        _, nm, nv = nn.batch_norm(xs[0], rm, rv, xs[1], xs[2], training=True, momentum=kw["momentum"],
                                  eps=kw["eps"])
        np.testing.assert_allclose(nm, _arr(rec["running_mean"]), **tol)
        np.testing.assert_allclose(nv, _arr(rec["running_var"]), **tol)
        assert np.asarray(nm).dtype == dtype and np.asarray(nv).dtype == dtype
    else:
        f = _layer_call(kind, kw, xs)
    live = [i for i, a in enumerate(xs) if a is not None]
    args = [a for a in xs if a is not None]

    def g(*a):
        return f(*a)

    out, f_vjp = fg.vjp(g, *args)
    np.testing.assert_allclose(out, _arr(rec["out"]), **tol)
    assert np.asarray(out).dtype == dtype
    for i, ct in zip(live, f_vjp(cot)):
        np.testing.assert_allclose(ct, _arr(rec["grads"][i]), **tol, err_msg=f"{name}: gradient of input {i}")
        assert np.asarray(ct).dtype == dtype


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "ft.compile"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(TABLE["bn_steps"]))
def test_batchnorm_running_statistics_over_calls_match_recorded_torch(name, dtype, compiled):
    """ft.nn.BatchNorm over three training calls and one eval call, eagerly and under ft.compile: outputs,
    input gradients, running statistics and num_batches_tracked after every call, and the weight and bias
    gradients summed over the calls, as PyTorch recorded them (momentum 0.1 and None; frozen affine; no running
    statistics, whose eval call still normalizes with the batch's)."""
    import funcgrad.tensor as ft

    rec = TABLE["bn_steps"][name][dtype]
    tol = _tol(dtype)
    c = rec["shape"][1]
    tracked = rec.get("track", True)
    m = (ft.nn.BatchNorm2d if len(rec["shape"]) == 4 else ft.nn.BatchNorm1d)(c, momentum=rec["momentum"],
                                                                            track_running_stats=tracked,
                                                                            dtype=getattr(ft, dtype))
    with ft.no_grad():
        m.weight.copy_(ft.tensor(_arr(rec["weight"])))
        m.bias.copy_(ft.tensor(_arr(rec["bias"])))
    if rec["frozen"]:
        m.weight.requires_grad_(False)
        m.bias.requires_grad_(False)
    run = ft.compile(m, fullgraph=True) if compiled else m
    for i, step in enumerate(rec["steps"]):
        if i == 3:
            m.eval()
        x = ft.tensor(_arr(step["x"]), requires_grad=True)
        y = run(x)
        (y * ft.tensor(_arr(step["cot"]))).sum().backward()
        what = f"{name} {dtype} call {i + 1}"
        np.testing.assert_allclose(y.detach().numpy(), _arr(step["out"]), **tol, err_msg=what)
        np.testing.assert_allclose(x.grad.numpy(), _arr(step["dx"]), **tol, err_msg=what)
        if not tracked:
            assert m.running_mean is m.running_var is m.num_batches_tracked is None, what
            assert y.dtype == x.dtype
            continue
        np.testing.assert_allclose(m.running_mean.numpy(), _arr(step["running_mean"]), **tol, err_msg=what)
        np.testing.assert_allclose(m.running_var.numpy(), _arr(step["running_var"]), **tol, err_msg=what)
        assert int(m.num_batches_tracked) == step["num_batches_tracked"], what
        assert y.dtype == x.dtype == m.running_mean.dtype
    for pname, want in rec["grads_summed"].items():
        np.testing.assert_allclose(getattr(m, pname).grad.numpy(), _arr(want), **tol, err_msg=pname)
    if rec["frozen"]:
        assert m.weight.grad is None and m.bias.grad is None


def _load_recorded(ft, params, values):
    """Copy recorded weights into an ft module's parameters, outside autograd."""
    with ft.no_grad():
        for p, value in zip(params, values):
            p.copy_(ft.tensor(value))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["lstm", "lstm_batch1_odd", "lstm_packed"])
def test_ft_lstm_module_matches_recorded_torch(name, dtype):
    """ft.nn.LSTM holding the recorded weights (a PackedSequence for the packed case): the same outputs and
    gradients (input, h0, c0, every weight) as the functional replay above, in both dtypes."""
    import funcgrad.tensor as ft
    from funcgrad.tensor.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    rec = TABLE["cases"][name][dtype]
    xs, cot, tol = [_arr(a) for a in rec["inputs"]], _arr(rec["cot"]), _tol(dtype)
    lstm = ft.nn.LSTM(xs[0].shape[-1], xs[1].shape[-1], dtype=getattr(ft, dtype))
    params = [lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0]
    _load_recorded(ft, params, xs[3:])
    x, h0, c0 = (ft.tensor(a, requires_grad=True) for a in xs[:3])
    state = (h0.unsqueeze(0), c0.unsqueeze(0))
    if name == "lstm_packed":
        lengths = rec["kwargs"]["lengths"]
        out, (h, c) = lstm(pack_padded_sequence(x, lengths, enforce_sorted=False), state)
        hs, _ = pad_packed_sequence(out, total_length=xs[0].shape[0])
        y = ft.cat([hs.reshape(-1), h.reshape(-1), c.reshape(-1)])
    else:
        hs, (_, c) = lstm(x, state)
        y = ft.cat([hs.reshape(-1), c.reshape(-1)])
    (y * ft.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), _arr(rec["out"]), **tol)
    for i, got in enumerate([x.grad, h0.grad, c0.grad] + [p.grad for p in params]):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.numpy(), _arr(rec["grads"][i]), **tol, err_msg=f"{name}: gradient {i}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ft_gru_module_matches_recorded_torch(dtype):
    import funcgrad.tensor as ft

    rec = TABLE["cases"]["gru"][dtype]
    xs, cot, tol = [_arr(a) for a in rec["inputs"]], _arr(rec["cot"]), _tol(dtype)
    gru = ft.nn.GRU(xs[0].shape[-1], xs[1].shape[-1], dtype=getattr(ft, dtype))
    params = [gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0]
    _load_recorded(ft, params, xs[2:])
    x, h0 = (ft.tensor(a, requires_grad=True) for a in xs[:2])
    hs, _ = gru(x, h0.unsqueeze(0))
    (hs.reshape(-1) * ft.tensor(cot)).sum().backward()
    np.testing.assert_allclose(hs.detach().numpy().ravel(), _arr(rec["out"]), **tol)
    for i, got in enumerate([x.grad, h0.grad] + [p.grad for p in params]):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.numpy(), _arr(rec["grads"][i]), **tol, err_msg=f"gradient {i}")


def _check_ft_module(kind, kw, xs, cot, rec, tol):
    """ft.nn.Conv2d (padding_mode) / ft.nn.ConvTranspose2d (output_size) holding the recorded weights."""
    import funcgrad.tensor as ft

    kw = dict(kw)
    output_size = kw.pop("output_size", None)
    groups = kw.get("groups", 1)
    w = xs[1]
    c_in, c_out = (w.shape[1] * groups, w.shape[0]) if kind == "Conv2d" else (w.shape[0], w.shape[1] * groups)
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
    m = getattr(ft.nn, kind)(c_in, c_out, tuple(w.shape[2:]), dtype=getattr(ft, str(w.dtype)), **kw)
    with ft.no_grad():
        m.weight.copy_(ft.tensor(xs[1]))
        m.bias.copy_(ft.tensor(xs[2]))
    x = ft.tensor(xs[0], requires_grad=True)
    y = m(x) if output_size is None else m(x, output_size=output_size)
    (y * ft.tensor(cot)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), _arr(rec["out"]), **tol)
    for got, want in zip((x.grad, m.weight.grad, m.bias.grad), rec["grads"]):
        np.testing.assert_allclose(got.numpy(), _arr(want), **tol)
        assert got.dtype == x.dtype


def test_conv_module_errors_follow_pytorch():
    import funcgrad.tensor as ft

    m = ft.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    with pytest.raises(ValueError, match="valid sizes range from 7 to 8"):
        m(ft.randn(1, 3, 4, 4), output_size=(9, 9))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        ft.nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="zeros"):
        ft.nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")


# --------------------------------------------------------------------------- double backward


def _second_order(f, f_old, args):
    """The Hessian-vector product of ``sum(sin(f))`` in every argument, against the old composition's."""
    rng = np.random.default_rng(3)
    vs = tuple(rng.standard_normal(np.shape(a)) for a in args)
    argnums = tuple(range(len(args)))

    def hvp(fun):
        def loss(*a):
            return fnp.sum(fnp.sin(fun(*a)))
        gf = fg.grad(loss, argnums)
        return fg.jvp(gf, tuple(args), vs)[1], fg.grad(lambda *a: sum(fnp.sum(gi * v) for gi, v in
                                                                       zip(gf(*a), vs)), argnums)(*args)

    for new, old in zip(hvp(f), hvp(f_old)):
        for a, b in zip(new, old):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_double_backward_through_conv():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 4, 5, 5)), rng.standard_normal((6, 2, 3, 3))
    geom = ((2, 1), ((1, 1), (0, 1)), (1, 1), 2)
    _second_order(lambda x, w: kconv.conv_forward(x, w, *geom), lambda x, w: old_conv(x, w, *geom), (x, w))


def test_double_backward_through_norms():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal(3), rng.standard_normal(3)

    def old_bn(x, w, b):
        return old_standardize(x, (0, 2, 3), 1e-5) * fnp.reshape(w, (3, 1, 1)) + fnp.reshape(b, (3, 1, 1))

    _second_order(lambda x, w, b: nn.batch_norm(x, None, None, w, b, training=True)[0], old_bn, (x, w, b))
    _second_order(lambda x: nn.group_norm(x, 3), lambda x: old_standardize(x.reshape(4, 3, 4), (2,), 1e-5).reshape(
        4, 3, 2, 2), (x,))


def test_double_backward_through_lstm_and_gru():
    rng = np.random.default_rng(2)
    x, h, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    wi, wh, b = rng.standard_normal((20, 4)), rng.standard_normal((20, 5)), rng.standard_normal(20)

    def run(cell):
        def f(x, h, c, wi, wh, b):
            hh, cc = h, c
            for _ in range(3):
                hh, cc = cell(x, hh, cc, wi, wh, b)
            return hh + cc
        return f

    def old_cell(x, h, c, wi, wh, b):
        return krnn.lstm_pointwise_composed(x @ wi.T + h @ wh.T + b, c)

    _second_order(run(lambda *a: nn.lstm_cell(*a[:5], a[5])), run(old_cell), (x, h, c, wi, wh, b))
    gi, gh = rng.standard_normal((3, 15)), rng.standard_normal((3, 15))
    _second_order(krnn.gru_pointwise, krnn.gru_pointwise_composed, (gi, gh, h[:, :5]))


# --------------------------------------------------------------------------- errors and layouts


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("xs_shape,h0_shape,c0_shape", [
    ((4, 3, 5), (3, 6), (3, 6)),        # the usual layout
    ((4, 3, 5), (6,), (1, 6)),          # states broadcast against the batch
    ((4, 1, 5), (2, 3, 6), (3, 6)),     # an input broadcast against more state axes
    ((1, 5), (6,), (6,)),               # one unbatched step
])
def test_lstm_sequence_kernel_against_the_composition(dtype, xs_shape, h0_shape, c0_shape):
    """The fused sequence kernel (activations kept in the i, f, o, g order, sigmoid through the halved tanh,
    the backward from the forward's memo or from a fresh forward) against the loop of per-step kernels."""
    rng = np.random.default_rng(5)
    hid, n_in = h0_shape[-1], xs_shape[-1]
    args = [rng.standard_normal(s).astype(dtype) for s in
            (xs_shape, h0_shape, c0_shape, (4 * hid, n_in), (4 * hid, hid), (4 * hid,), (4 * hid,))]
    hs, c = krnn._lstm_sequence_raw(*args)
    hs_ref, c_ref = (np.asarray(a) for a in krnn.lstm_sequence_composed(*args))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert hs.dtype == dtype and c.dtype == dtype
    np.testing.assert_allclose(hs, hs_ref, **tol)
    np.testing.assert_allclose(c, c_ref, **tol)
    ghs, gc = rng.standard_normal(hs.shape).astype(dtype), rng.standard_normal(c.shape).astype(dtype)
    hs[...] = 7.0  # the caller owns its results: the kept states are not these buffers
    c[...] = 7.0
    from_memo = krnn._lstm_sequence_backward_raw(*args, ghs, gc)  # after the forward: its memo
    fresh = krnn._lstm_sequence_backward_raw(*args, ghs, gc)  # the memo taken: a new forward
    reference = krnn.lstm_sequence_backward_composed(*args, ghs, gc)
    for got, again, want, arg in zip(from_memo, fresh, reference, args + [args[5]]):
        assert got.shape == np.shape(arg) and got.dtype == dtype
        np.testing.assert_allclose(got, want, **tol)
        np.testing.assert_array_equal(got, again)


@pytest.mark.parametrize("layout", list(LAYER_LAYOUTS))
def test_lstm_layer_kernel_from_its_memo_and_afresh(layout):
    """lstm_layer's backward from the forward's memo and from a fresh forward (the memo taken), against the
    composition, in float32: the cotangents of the input in its own layout, of h_n added to the last step's."""
    lay = LAYER_LAYOUTS[layout]
    rng = np.random.default_rng(8)
    shapes = LSTM_BF_SHAPES if lay.get("batch_first") else LAYER_SHAPES
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    outs = krnn._lstm_layer_raw(*args, **lay)
    for got, want in zip(outs, krnn.lstm_layer_composed(*args, **lay)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # (PyTorch's layout: a batch-first output is the transpose of a C-ordered time-major buffer)
    assert np.swapaxes(outs[0], 0, 1).flags.c_contiguous if lay.get("batch_first") else outs[0].flags.c_contiguous
    cots = [rng.standard_normal(o.shape).astype(np.float32) for o in outs]
    for o in outs:
        o[...] = 7.0  # the caller owns its results
    from_memo = krnn._lstm_layer_backward_raw(*args, *cots, **lay)
    fresh = krnn._lstm_layer_backward_raw(*args, *cots, **lay)
    reference = krnn.lstm_layer_backward_composed(*args, *cots, **lay)
    for got, again, want, arg in zip(from_memo, fresh, reference, args):
        assert got.shape == arg.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(got, again)


def test_lstm_sequence_kernel_on_an_empty_sequence():
    rng = np.random.default_rng(6)
    args = [rng.standard_normal(s) for s in ((0, 3, 5), (3, 6), (3, 6), (24, 5), (24, 6), (24,), (24,))]
    hs, c = krnn._lstm_sequence_raw(*args)
    assert hs.shape == (0, 3, 6)
    np.testing.assert_array_equal(c, args[2])
    gc = rng.standard_normal((3, 6))
    dxs, dh0, dc0, dw_ih, dw_hh, db_ih, _ = krnn._lstm_sequence_backward_raw(*args, np.zeros((0, 3, 6)), gc)
    assert dxs.shape == (0, 3, 5)
    np.testing.assert_array_equal(dc0, gc)
    for zero in (dh0, dw_ih, dw_hh, db_ih):
        np.testing.assert_array_equal(zero, 0.0)


def test_double_backward_through_the_lstm_sequence():
    rng = np.random.default_rng(11)
    args = [rng.standard_normal(s) for s in LSTM_SEQ_SHAPES]

    def loss(seq, w_hh):
        hs, c = seq(args[0], args[1], args[2], args[3], w_hh, args[5], args[6])
        return fnp.sum(hs ** 2) + fnp.sum(fnp.sin(c))

    v = rng.standard_normal(args[4].shape)
    hvp = [fg.jvp(fg.grad(lambda w, f=f: loss(f, w)), (args[4],), (v,))[1]
           for f in (krnn.lstm_sequence, krnn.lstm_sequence_composed)]
    np.testing.assert_allclose(hvp[0], hvp[1], rtol=1e-9, atol=1e-10)
    def by_bias(seq, b):
        hs, c = seq(*args[:6], b)
        return fnp.sum(hs ** 2) + fnp.sum(fnp.sin(c))

    hess = [fg.hessian(lambda b, f=f: by_bias(f, b))(args[6]) for f in (krnn.lstm_sequence, krnn.lstm_sequence_composed)]
    np.testing.assert_allclose(hess[0], hess[1], rtol=1e-9, atol=1e-10)
    # fg.nn.lstm (batch_first) is the same layer as the loop of fg.nn.lstm_cell
    xs = np.swapaxes(args[0], 0, 1)
    hs, (h, c) = nn.lstm(xs, *args[1:], batch_first=True)
    h2, c2 = args[1], args[2]
    for t in range(xs.shape[1]):
        h2, c2 = nn.lstm_cell(xs[:, t], h2, c2, *args[3:])
        np.testing.assert_allclose(hs[:, t], h2, rtol=1e-12)
    np.testing.assert_allclose(h, h2, rtol=1e-12)
    np.testing.assert_allclose(c, c2, rtol=1e-12)


def test_relu_kernel_keeps_nan_and_zeroes_non_finite_cotangents_exactly():
    x = np.array([-1.0, 0.0, 2.0, np.nan], dtype=np.float32)
    y = nn.relu(x)
    assert y.dtype == np.float32 and np.array_equal(y[:3], [0.0, 0.0, 2.0]) and np.isnan(y[3])
    g = kact.positive_part(np.array([np.inf, np.nan, 1.0, 5.0], dtype=np.float32), x)
    assert g.dtype == np.float32 and np.array_equal(g, [0.0, 0.0, 1.0, 0.0])  # a select, not a product
    assert fg.grad(lambda x: fnp.sum(nn.relu(x)))(np.array([0.0, 1.0]))[0] == 0.0  # the derivative at 0
    # PyTorch's mask: the cotangent passes where x is NaN, still exactly 0 where x <= 0
    g = kact.positive_part(np.array([np.inf, np.nan, 1.0, 5.0], dtype=np.float32), x, nan_passes=True)
    assert g.dtype == np.float32 and np.array_equal(g, [0.0, 0.0, 1.0, 5.0])
    g = kact.positive_part(np.array([2.0]), np.array([[np.nan], [-1.0]]), nan_passes=True)  # broadcast: a select
    assert np.array_equal(g, [[2.0], [0.0]])
    gx = fg.grad(lambda x: fnp.sum(kact.relu(x, nan_passes=True)))(np.array([np.nan, 0.0, -1.0, 2.0]))
    assert np.array_equal(gx, [1.0, 0.0, 0.0, 1.0])
    assert np.array_equal(fg.grad(lambda x: fnp.sum(nn.relu(x)))(np.array([np.nan, 2.0])), [0.0, 1.0])  # JAX's


def test_kernel_errors_name_the_geometry():
    with pytest.raises(ValueError, match="larger than the padded input"):
        kconv.conv_forward(np.ones((1, 1, 2, 2)), np.ones((1, 1, 3, 3)), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    with pytest.raises(ValueError, match="does not fit"):
        kpool.window_argmax(np.ones((1, 2, 2)), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1))


def test_max_pool_gradient_goes_to_the_first_maximum_and_nan_wins():
    x = np.array([[1.0, 3.0, 3.0, 0.0]])
    g = fg.grad(lambda x: fnp.sum(nn.max_pool_windows(x, (2,), (1,), ((0, 0),), (1,))))(x)
    np.testing.assert_array_equal(g, [[0.0, 2.0, 1.0, 0.0]])  # windows (1,3) (3,3) (3,0): ties go to the first
    y = nn.max_pool_windows(np.array([[1.0, np.nan, 2.0]]), (2,), (1,), ((0, 0),), (1,))
    assert np.isnan(y).all()


@pytest.mark.parametrize("shape,geom", [
    ((2, 3, 8, 8), ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))),    # tiled 2x2: the training step's pooling
    ((2, 3, 7, 9), ((3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1))),    # overlapping, padded, odd sizes
    ((1, 2, 5, 6, 4), ((2, 3, 2), (2, 3, 2), ((0, 0),) * 3, (1, 1, 1))),  # 3-d, uneven kernel
    ((3, 10), ((4,), (3,), ((0, 0),), (2,))),                          # 1-d, dilated
])
def test_window_argmax_fast_path_matches_the_sweep_with_ties_and_nans(shape, geom):
    """The Horner-form first maximum (host arrays, no NaN) agrees with the running sweep (the rule
    PyTorch's kernel follows) on data full of ties, and a NaN window falls back to the sweep's rule."""
    rng = np.random.default_rng(9)
    for x in (rng.integers(-1, 2, shape).astype(np.float64), rng.standard_normal(shape).astype(np.float32)):
        out = kpool._out_shape(x.shape[-len(geom[0]):], *geom)
        stack = kpool._window_stack(x, *geom, out, -math.inf)
        best, index = kpool._first_maximum(stack)
        sweep_best, sweep_index = kpool._first_maximum_scan(stack)
        assert index.dtype == np.int32 and np.array_equal(index, sweep_index)
        np.testing.assert_array_equal(best, sweep_best)
        # the gather after the argmax hands over the maxima; without the memo it gathers the same values
        idx = kpool.window_argmax(x, *geom)
        handed = kpool.window_gather(x, idx, *geom, -math.inf)
        gathered = kpool.window_gather(x, idx, *geom, -math.inf)  # the memo entry was taken: a real gather
        np.testing.assert_array_equal(handed, gathered)
        np.testing.assert_array_equal(handed, sweep_best)
    x = rng.standard_normal(shape)
    x.reshape(-1)[[0, 1, 5]] = np.nan
    stack = kpool._window_stack(x, *geom, kpool._out_shape(x.shape[-len(geom[0]):], *geom), -math.inf)
    best, index = kpool._first_maximum(stack)
    sweep_best, sweep_index = kpool._first_maximum_scan(stack)
    assert np.isnan(best).any() and np.array_equal(index, sweep_index)
    np.testing.assert_array_equal(best, sweep_best)


@pytest.mark.parametrize("forward", ["affine", "statistics"])
def test_norm_backward_with_the_forward_statistics_matches_the_fresh_backward(forward):
    """The batch-norm backward that takes the forward's (mean, rstd) from the memo gives the backward that
    finds them again, for both forwards that hand them over; the memo entry is used once."""
    rng = np.random.default_rng(12)
    x = (3.0 + rng.standard_normal((4, 3, 5, 6))).astype(np.float32)
    w, b = (rng.standard_normal((1, 3, 1, 1)).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(x.shape).astype(np.float32)
    axes = (0, 2, 3)
    fresh = knorm._affine_backward_raw(g, x, w, axes, 1e-5)
    if forward == "affine":
        knorm._affine_raw(x, w, b, axes, 1e-5)
    else:
        knorm._affine_statistics_raw(x, w, b, axes, 1e-5)
    assert knorm._saved_statistics.take((x,), (axes, 1e-5)) is not None  # the forward handed them over
    knorm._affine_raw(x, w, b, axes, 1e-5)
    handed = knorm._affine_backward_raw(g, x, w, axes, 1e-5)
    assert knorm._saved_statistics.take((x,), (axes, 1e-5)) is None  # taken by the backward
    for a, f in zip(handed, fresh):
        assert a.dtype == f.dtype
        np.testing.assert_allclose(a, f, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_and_attention_backwards_from_the_forward_memo_give_the_fresh_bits(dtype):
    """Layer norm's backward with the forward's row statistics, and attention's with the forward's weights, give
    the bits of the backward that finds them again; an entry serves only the arrays (and eps, scale, bias) of
    its forward, once."""
    rng = np.random.default_rng(15)
    x, g = (rng.standard_normal((3, 5, 8)).astype(dtype) for _ in range(2))
    w, b = (rng.standard_normal(8).astype(dtype) for _ in range(2))
    fresh = klayer._backward_raw(g, x, w, 1e-5)
    klayer._forward_raw(x, w, b, 1e-5)
    assert klayer._backward_raw(g, x.copy(), w, 1e-5)[0].tobytes() == fresh[0].tobytes()  # another x: a miss
    klayer._forward_raw(x, w, b, 1e-3)  # another eps: its own entry
    klayer._forward_raw(x, w, b, 1e-5)
    for got, want in zip(klayer._backward_raw(g, x, w, 1e-5), fresh):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert klayer._saved_statistics.take((x,), (1e-5,)) is None and klayer._saved_statistics.take((x,), (1e-3,))
    q, k, v, go = (rng.standard_normal((2, 3, 4, 5)).astype(dtype) for _ in range(4))
    bias = rng.standard_normal((4, 4)).astype(dtype)
    for mask in (None, bias):
        fresh = kattn._backward_raw(q, k, v, mask, go, 0.4)
        kattn._attention_raw(q, k, v, mask, 0.3)  # another scale: no use to this backward
        assert kattn._backward_raw(q, k, v, mask, go, 0.4)[0].tobytes() == fresh[0].tobytes()
        kattn._attention_raw(q, k, v, mask, 0.4)
        for got, want in zip(kattn._backward_raw(q, k, v, mask, go, 0.4), fresh):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        assert kattn._saved_weights.take((q, k, mask), (0.4,)) is None  # taken by the backward


def test_feature_sums_by_matrix_vector_product_equal_numpy_sums():
    """Batch norm's per-channel sums (mean in the forward, sum of g in the backward) as a matrix-vector
    product over (N, C, rest) equal NumPy's reduction; other layouts and strided arrays take the reduction."""
    rng = np.random.default_rng(14)
    for dtype, tol in ((np.float16, 1e-2), (np.float32, 1e-5), (np.float64, 1e-12)):
        for shape, axes in (((6, 3, 5, 4), (0, 2, 3)), ((6, 3, 7), (0, -1)), ((2, 3, 2, 2, 3), (0, 2, 3, 4)),
                            ((6, 3, 5, 4), (0, 2)), ((5, 4), (0,))):
            a = rng.standard_normal(shape).astype(dtype)
            for arr in (a, a[::-1]):  # contiguous, and a strided view
                got = knorm._sum_over(arr, axes)
                want = np.sum(arr, axis=axes, keepdims=True)
                assert got.shape == want.shape and got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_window_scatter_of_tiling_windows_writes_exact_zeros_for_infinite_cotangents(dtype):
    """The scatter of windows that tile the input puts g at the recorded argmax and an exact 0 at the other
    positions, also where g is infinite or NaN (as the general scatter and PyTorch's kernel do)."""
    rng = np.random.default_rng(15)
    geom = ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    x = rng.standard_normal((2, 3, 4, 6)).astype(dtype)
    index = kpool.window_argmax(x, *geom)
    g = rng.standard_normal(index.shape).astype(dtype)
    g[0, 0, 0, 0], g[1, 2, 1, 2], g[0, 1, 1, 1] = np.inf, -np.inf, np.nan
    got = kpool._window_scatter_raw(g, index, x.shape, *geom)
    assert kpool._tiles(x.shape[-2:], *geom)
    want = np.zeros_like(x)
    for n, c, a, b in np.ndindex(*index.shape):
        j = int(index[n, c, a, b])
        want[n, c, 2 * a + j // 2, 2 * b + j % 2] = g[n, c, a, b]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == dtype and np.isnan(got).sum() == 1 and np.isinf(got).sum() == 2
    assert (got == 0).sum() == got.size - g.size


def test_conv_grad_keeps_float32_and_runs_under_jit():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)

    def loss(w, x):
        h = nn.batch_norm(nn.conv2d(x, w, padding=1), None, None, training=True)[0]
        return fnp.sum(nn.max_pool2d(nn.relu(h), 2) ** 2)

    g = fg.grad(loss)(w, x)
    gj = fg.jit(fg.grad(loss))(w, x)
    assert g.dtype == np.float32 and gj.dtype == np.float32
    np.testing.assert_allclose(gj, g, rtol=1e-5, atol=1e-5)


def test_masked_attention_matches_the_weights_path_and_torch_semantics():
    rng = np.random.default_rng(6)
    q, k, v = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    mask = nn.causal_mask(4, 5)
    fast = nn.dot_product_attention(q, k, v, mask)
    slow, w = nn.dot_product_attention(q, k, v, mask, return_weights=True)
    np.testing.assert_allclose(fast, slow, rtol=1e-12)
    g1 = fg.grad(lambda q: fnp.sum(nn.dot_product_attention(q, k, v, mask) ** 2))(q)
    g2 = fg.grad(lambda q: fnp.sum(nn.dot_product_attention(q, k, v, mask, return_weights=True)[0] ** 2))(q)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-12)


def test_ft_multihead_attention_fast_path_matches_the_weights_path():
    import funcgrad.tensor as ft

    ft.manual_seed(0)
    mha = ft.nn.MultiheadAttention(8, 2, batch_first=True).double()
    x = ft.tensor(np.random.default_rng(7).standard_normal((2, 4, 8)), requires_grad=True)
    pad = ft.tensor([[False, False, False, True], [False, False, False, False]])
    causal = ft.tensor(np.triu(np.ones((4, 4), bool), 1))
    outs = []
    for need in (False, True):
        x.grad = None
        y, _ = mha(x, x, x, key_padding_mask=pad, attn_mask=causal, need_weights=need)
        (y ** 2).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy().copy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-10, atol=1e-12)


def test_conv_weight_gradient_reuses_the_forwards_columns_of_the_same_input_only():
    """The memo hands the forward's im2col to the weight gradient of that very input (and no other), never
    keeps an input alive, and stays bounded."""
    import gc

    rng = np.random.default_rng(4)
    geom = ((2, 1), ((1, 0), (2, 1)), (1, 2), 2)  # stride, pads, dilation, groups
    x = rng.standard_normal((3, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    g = rng.standard_normal(np.shape(kconv.conv_forward(x, w, *geom)))
    fresh = kconv.conv_weight_grad(g, x, w.shape, *geom)  # the forward above left its columns behind
    assert kconv._memo.take(x, ((3, 2),) + geom) is None  # ... which the weight gradient took
    again = kconv.conv_weight_grad(g, x, w.shape, *geom)  # built afresh
    np.testing.assert_allclose(fresh, again, rtol=1e-12)
    np.testing.assert_allclose(fresh, fg.grad(lambda w_: fnp.sum(old_conv(x, w_, *geom) * g))(w), rtol=1e-10)
    kconv.conv_forward(x, w, *geom)
    other = x.copy()  # equal values, another array: no hit
    assert kconv._memo.take(other, ((3, 2),) + geom) is None
    del x
    gc.collect()
    assert not kconv._memo._entries()  # dropped with its input
    alive = [rng.standard_normal((2, 4, 5, 5)) for _ in range(3 * kconv._ColumnMemo.SIZE)]
    for a in alive:
        kconv.conv_forward(a, w, *geom)
    assert len(kconv._memo._entries()) == kconv._ColumnMemo.SIZE  # the oldest evicted
    assert kconv._memo.take(alive[0], ((3, 2),) + geom) is None
    assert kconv._memo.take(alive[-1], ((3, 2),) + geom) is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geom", [((1, 1), ((1, 1), (1, 1)), (1, 1), 1), ((1, 1), ((0, 2), (1, 0)), (1, 2), 2),
                                  ((1,), ((2, 1),), (2,), 1), ((1, 1), ((2, 0), (0, 1)), (1, 1), 2),
                                  ((1, 1), ((1, 1), (6, 0)), (1, 6), 1)],
                         ids=["3x3_pad1", "dil_groups_asym", "1d", "same_rows_asym", "same_rows_shift_past_row"])
@pytest.mark.parametrize("batch", [1, 5])
def test_shifted_row_columns_equal_the_general_columns(monkeypatch, request, dtype, geom, batch):
    """The stride-1 fast path (columns as shifted rows of the flattened padded input) against the general
    im2col path it replaces, for the forward and both backward products, batch 1 and odd sizes; batch 5 in
    blocks of 2 samples (the last block shorter: its buffers are made afresh)."""
    rng = np.random.default_rng(7)
    nsp = len(geom[0])
    if batch > 1:
        shift = kconv._Shift((7, 5)[:nsp], (3, 2)[:nsp], geom[1], geom[2])
        per_sample = 4 * len(shift.offsets) * shift.length * np.dtype(dtype).itemsize
        monkeypatch.setattr(kconv, "CHUNK_BYTES", 2 * per_sample)
        assert [s.stop - s.start for s in kconv._chunks(batch, shift, 4, np.dtype(dtype).itemsize)] == [2, 2, 1]
        # the input gradient on the unpadded grid: blocks of 2 samples as well
        # (the block's partials, 4 channels by the head offsets, and its cotangent shifted along the last axis)
        same_per_sample = ((4 * math.prod((3, 2)[:nsp][:-1]) + 6 * (3, 2)[nsp - 1]) * math.prod((7, 5)[:nsp])
                           * np.dtype(dtype).itemsize)
        monkeypatch.setattr(kconv, "SAME_CHUNK_BYTES", 2 * same_per_sample)
    x = rng.standard_normal((batch, 4) + (7, 5)[:nsp]).astype(dtype)
    w = rng.standard_normal((6, 4 // geom[3]) + (3, 2)[:nsp]).astype(dtype)
    shift = kconv._Shift(x.shape[2:], w.shape[2:], geom[1], geom[2])
    assert shift.wraps == request.node.callspec.id.split("-")[1].startswith("same_rows")
    fast = [kconv._conv_forward_raw(x, w, *geom)]
    g = rng.standard_normal(fast[0].shape).astype(dtype)
    fast += [kconv._conv_input_grad_raw(g, w, x.shape, *geom), kconv._conv_weight_grad_raw(g, x, w.shape, *geom)]
    same = kconv._same(x.shape[2:], fast[0].shape[2:], geom[0])
    assert same == (request.node.callspec.id.split("-")[1] in ("same_rows_asym", "same_rows_shift_past_row"))
    monkeypatch.setattr(kconv, "_shifted", lambda *a: False)
    monkeypatch.setattr(kconv, "_same", lambda *a: False)
    monkeypatch.setattr(kconv, "_memo", kconv._ColumnMemo())
    general = [kconv._conv_forward_raw(x, w, *geom), kconv._conv_input_grad_raw(g, w, x.shape, *geom),
               kconv._conv_weight_grad_raw(g, x, w.shape, *geom)]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in zip(fast, general):
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_feature_sums_of_products_by_vecdot_equal_einsum():
    """Batch norm's per-channel ``sum(a * b)`` (``vecdot`` over (N, C, rest) rows for contiguous host floats)
    equals the einsum it replaces; strided arrays, other layouts and broadcasting partners take the einsum."""
    rng = np.random.default_rng(15)
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        for shape, axes in (((6, 3, 5, 4), (0, 2, 3)), ((6, 3, 7), (0, -1)), ((6, 3, 5, 4), (0, 2))):
            a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
            letters = "abcd"[:len(shape)]
            for left, right in ((a, b), (a[::-1], b), (a, b[:, :, :1])):
                got = knorm._sum_of_products(left, right, axes)
                reduced = {ax % len(shape) for ax in axes}
                kept = "".join(c for i, c in enumerate(letters) if i not in reduced)
                want = np.einsum(f"{letters},{letters}->{kept}", left, right).reshape(
                    [1 if i in reduced else n for i, n in enumerate(shape)])
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_batch_norm_backward_sums_of_products_equal_the_composition():
    """standardize_affine_backward forms neither ``xhat`` nor ``g * xhat``: its values against the old
    composition in float32 on a large batch (the one-pass sums keep float32 accuracy) and float64."""
    rng = np.random.default_rng(8)
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        x = (3 * rng.standard_normal((16, 5, 12, 12)) + 2).astype(dtype)
        g = rng.standard_normal(x.shape).astype(dtype)
        w = rng.standard_normal((1, 5, 1, 1)).astype(dtype)
        got = knorm._affine_backward_raw(g, x, w, (0, 2, 3), 1e-5)
        x64, g64, w64 = (a.astype(np.float64) for a in (x, g, w))
        want = knorm.standardize_affine_backward_composed(g64, x64, w64, (0, 2, 3), 1e-5)
        for a, b in zip(got, want):
            assert a.dtype == dtype
            np.testing.assert_allclose(a, np.asarray(b), rtol=tol, atol=tol * float(np.abs(np.asarray(b)).max()))
    # the branch where dx cannot be x - mean's buffer: g of a wider dtype than x
    for g, x in ((rng.standard_normal((4, 5, 6, 6)), rng.standard_normal((4, 5, 6, 6)).astype(np.float32)),):
        w = rng.standard_normal((1, 5, 1, 1))
        got = knorm._affine_backward_raw(g, x, w, (0, 2, 3), 1e-5)
        want = knorm.standardize_affine_backward_composed(g, x.astype(np.float64), w, (0, 2, 3), 1e-5)
        assert got[0].dtype == np.float64 and got[0].shape == x.shape
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-5 * float(np.abs(np.asarray(b)).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_sequence_backward_takes_the_forwards_gates_and_equals_the_recomputation(dtype):
    """The sequence backward reuses the forward's gates and states of the very same inputs (no second
    forward), even when the caller writes into the returned ``hs``; it equals the recomputing path and the
    composition, and leaves nothing behind."""
    rng = np.random.default_rng(9)
    T, N, I, H = 4, 3, 5, 2
    args = [rng.standard_normal(s).astype(dtype) for s in
            ((T, N, I), (N, H), (1, H), (4 * H, I), (4 * H, H), (4 * H,), (4 * H,))]
    ghs, gc = rng.standard_normal((T, N, H)).astype(dtype), rng.standard_normal((N, H)).astype(dtype)
    hs, _ = krnn._lstm_sequence_raw(*args)
    hs[...] = 7.0  # the caller's buffer now: the backward must not read it
    kept = krnn._lstm_sequence_backward_raw(*args, ghs, gc)
    assert krnn._steps.take(tuple(args), ()) is None  # taken by the backward
    fresh = krnn._lstm_sequence_backward_raw(*args, ghs, gc)  # nothing kept: the forward again
    want = krnn.lstm_sequence_backward_composed(*(a.astype(np.float64) for a in args),
                                                ghs.astype(np.float64), gc.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b, c, arg in zip(kept, fresh, want, args):
        assert a.dtype == dtype and a.shape == arg.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
        np.testing.assert_allclose(a, krnn._sum_like(np.asarray(c), arg), rtol=tol, atol=tol)
    other = [a.copy() for a in args]  # equal values, other arrays: not found
    krnn._lstm_sequence_raw(*args)
    assert krnn._steps.take(tuple(other), ()) is None


# --------------------------------------------------------------------------- audit: every kernel, every check
# Issue 26 asks of each new primitive: VJP, JVP, batching rule, check_grads to second order in both modes,
# float32, the fake device; and of each layer: recorded torch outputs and gradients (running statistics for
# batch norm) for padding/stride/dilation/groups/ceil_mode variants, odd sizes, batch 1, float32 and float64.
# The two tests below keep that true as kernels are added: a primitive declared in a kernel module and missing
# from the spec table, or a layer family losing its recorded variants, fails here.

KERNEL_MODULES = (kattn, kconv, kdense, klayer, knorm, kpool, krnn, kact, klosses)


def _declared_primitives():
    found = {}
    for module in KERNEL_MODULES:
        for value in vars(module).values():
            prim = getattr(value, "primitive", None)
            if prim is not None and getattr(prim.raw, "__module__", None) == module.__name__:  # declared here
                found[prim.name] = prim
    return found


def test_every_kernel_primitive_has_its_rules_and_is_in_the_spec_table():
    declared = _declared_primitives()
    assert len(declared) >= 28, sorted(declared)
    for name, prim in declared.items():
        assert prim.batch_rule is not None, f"{name}: no batching rule"
        if not prim.differentiable:
            continue
        assert prim.vjps or prim.vjp_all, f"{name}: no VJP"
        assert prim.jvps or prim.jvp_all, f"{name}: no JVP"
    # which primitives each spec's function records (so each gets all of CHECKS)
    reached = set()
    for spec in SPECS:
        program = fg.make_program(spec.fn)(*spec.args())
        reached |= {eqn.prim.name for eqn in program.eqns}
    missing = sorted(set(declared) - reached)
    assert not missing, f"kernel primitives no spec reaches (add a Spec line): {missing}"
    for spec in SPECS:  # a skipped check says why, and no spec skips float32 or batching
        assert not {"float32", "vmap"} & set(spec.skip), spec.name


def _kwarg(kw, key, default):
    v = kw.get(key, default)
    return tuple(v) if isinstance(v, list) else v


def _nontrivial(v, neutral):
    return v not in (neutral, (neutral,) * 2, (neutral,) * 3, [neutral] * 2, None)


# family: (kinds in the fixture, {variant: predicate of a case}); each variant must be recorded in both dtypes
RECORDED_VARIANTS = {
    "convolution": (("conv1d", "conv2d", "conv3d", "Conv2d", "ConvTranspose2d"), {
        "padding": lambda kw, shapes: _nontrivial(_kwarg(kw, "padding", 0), 0),
        "stride": lambda kw, shapes: _nontrivial(_kwarg(kw, "stride", 1), 1),
        "dilation": lambda kw, shapes: _nontrivial(_kwarg(kw, "dilation", 1), 1),
        "groups": lambda kw, shapes: kw.get("groups", 1) > 1,
        "batch 1": lambda kw, shapes: shapes[0][0] == 1,
        "odd sizes": lambda kw, shapes: any(s % 2 for s in shapes[0][2:]),
        "1x1": lambda kw, shapes: all(k == 1 for k in shapes[1][2:]),
        "1d and 3d": lambda kw, shapes: len(shapes[0]) != 4}),
    "max pooling": (("max_pool1d", "max_pool2d"), {
        "padding": lambda kw, shapes: _nontrivial(_kwarg(kw, "padding", 0), 0),
        "overlapping": lambda kw, shapes: _kwarg(kw, "stride", None) not in (None, _kwarg(kw, "kernel_size", 0)),
        "dilation": lambda kw, shapes: _nontrivial(_kwarg(kw, "dilation", 1), 1),
        "ceil_mode": lambda kw, shapes: kw.get("ceil_mode", False),
        "batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "average pooling": (("avg_pool1d", "avg_pool2d"), {
        "padding": lambda kw, shapes: _nontrivial(_kwarg(kw, "padding", 0), 0),
        "ceil_mode": lambda kw, shapes: kw.get("ceil_mode", False),
        "count_include_pad=False": lambda kw, shapes: kw.get("count_include_pad", True) is False,
        "batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "batch norm": (("batch_norm",), {"(N, C)": lambda kw, shapes: len(shapes[0]) == 2,
                                     "(N, C, H, W)": lambda kw, shapes: len(shapes[0]) == 4}),
    "layer norm": (("layer_norm",), {"two axes": lambda kw, shapes: len(kw["normalized_shape"]) == 2}),
    "group norm": (("group_norm",), {"batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "LSTM cell": (("lstm_cell",), {"batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "GRU cell": (("gru_cell",), {"batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "LSTM sequence": (("lstm",), {"batch 1": lambda kw, shapes: shapes[0][1] == 1}),
    "packed LSTM sequence": (("lstm_packed",), {"lengths": lambda kw, shapes: len(set(kw["lengths"])) > 1}),
    "GRU sequence": (("gru",), {"several steps": lambda kw, shapes: shapes[0][0] > 1}),
    "attention": (("sdpa",), {"additive mask": lambda kw, shapes: shapes[3] is not None,
                              "batch 1": lambda kw, shapes: shapes[0][0] == 1}),
    "dense": (("linear",), {"no bias": lambda kw, shapes: shapes[2] is None,
                            "a stack": lambda kw, shapes: len(shapes[0]) > 2}),
    "softmax cross-entropy": (("cross_entropy",), {"classes on axis 1": lambda kw, shapes: len(shapes[0]) > 2}),
}


def test_recorded_torch_cases_cover_every_layer_family_and_variant():
    for family, (kinds, variants) in RECORDED_VARIANTS.items():
        cases = [c for c in TABLE["cases"].values() if c["float64"]["kind"] in kinds]
        assert cases, family
        for variant, has in variants.items():
            hits = [c for c in cases if has(c["float64"]["kwargs"], [None if a is None else a["shape"]
                                                                    for a in c["float64"]["inputs"]])]
            assert hits, f"{family}: no recorded case with {variant}"
            assert all(set(c) == {"float64", "float32"} for c in hits), f"{family} {variant}: both dtypes"
    steps = TABLE["bn_steps"]  # running statistics over calls: momentum, cumulative, frozen affine, eval
    assert {s["float32"]["momentum"] is None for s in steps.values()} == {True, False}
    assert not all(s["float32"].get("track", True) for s in steps.values())
    assert any(s["float32"]["frozen"] for s in steps.values())
