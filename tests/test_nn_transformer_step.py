"""Issue 26: the Transformer step's kernels (``nn.linear``'s one dense node, q/k/v split by one node, the
attention kernel, ``layer_norm_affine``, relu) against the compositions they replace and against PyTorch's
recorded TransformerEncoderLayer (tests/fixtures/torch_transformer.json, written by
tests/fixtures/make_torch_transformer.py; no torch needed here), in float64 and float32, eagerly, under
``fg.jit`` and through ``ft.nn.TransformerEncoderLayer``."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.nn.kernels.normalization import standardize

TABLE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torch_transformer.json").read_text())
HEADS = 2


def _arr(d):
    return np.asarray(d["data"], dtype=d["dtype"]).reshape(d["shape"])


def _tol(dtype):
    return {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}


def encoder_layer(p, x):
    """PyTorch's post-norm TransformerEncoderLayer (ReLU, no dropout), batch-first, over its state_dict keys."""
    n, L, d = fnp.shape(x)
    qkv = fnn.linear(x, p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"])
    q, k, v = (fnp.swapaxes(fnp.reshape(part, (n, L, HEADS, d // HEADS)), 1, 2) for part in fnp.split(qkv, 3, axis=-1))
    a = fnp.reshape(fnp.swapaxes(fnn.dot_product_attention(q, k, v), 1, 2), (n, L, d))
    h = fnn.layer_norm(x + fnn.linear(a, p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"]), 1,
                       p["norm1.weight"], p["norm1.bias"])
    f = fnn.linear(fnn.relu(fnn.linear(h, p["linear1.weight"], p["linear1.bias"])), p["linear2.weight"],
                   p["linear2.bias"])
    return fnn.layer_norm(h + f, 1, p["norm2.weight"], p["norm2.bias"])


def encoder_layer_composed(p, x):
    """The same layer as the primitives before the kernels: transposed products and sums, slices, softmax."""
    n, L, d = fnp.shape(x)

    def lin(h, name):
        return fnp.matmul(h, fnp.transpose(p[name + ".weight"])) + p[name + ".bias"]

    def norm(h, name):
        return standardize(h, (2,), 1e-5) * p[name + ".weight"] + p[name + ".bias"]

    qkv = fnp.matmul(x, fnp.transpose(p["self_attn.in_proj_weight"])) + p["self_attn.in_proj_bias"]
    q, k, v = (fnp.swapaxes(fnp.reshape(qkv[..., i * d:(i + 1) * d], (n, L, HEADS, d // HEADS)), 1, 2)
               for i in range(3))
    w = fnn.softmax(fnp.matmul(q, fnp.swapaxes(k, -1, -2)) / float(np.sqrt(d // HEADS)), axis=-1)
    a = fnp.reshape(fnp.swapaxes(fnp.matmul(w, v), 1, 2), (n, L, d))
    h = norm(x + lin(a, "self_attn.out_proj"), "norm1")
    return norm(h + lin(fnp.maximum(lin(h, "linear1"), 0.0), "linear2"), "norm2")


def _case(dtype):
    rec = TABLE["encoder_layer"][dtype]
    return rec, {k: _arr(v) for k, v in rec["params"].items()}, _arr(rec["x"]), _arr(rec["cot"])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("how", ["eager", "jit", "composed"])
def test_encoder_layer_matches_recorded_torch(dtype, how):
    rec, p, x, cot = _case(dtype)
    fn = encoder_layer_composed if how == "composed" else encoder_layer

    def step(p, x):
        out, f_vjp = fg.vjp(fn, p, x)
        return out, f_vjp(cot)

    out, (gp, gx) = (fg.jit(step) if how == "jit" else step)(p, x)
    tol = _tol(dtype)
    np.testing.assert_allclose(out, _arr(rec["out"]), **tol)
    np.testing.assert_allclose(gx, _arr(rec["grad_x"]), **tol)
    for name, g in rec["grads"].items():
        np.testing.assert_allclose(gp[name], _arr(g), **tol, err_msg=name)
        assert np.asarray(gp[name]).dtype == dtype
    assert np.asarray(out).dtype == dtype


def test_encoder_layer_records_one_node_per_projection_and_norm():
    _, p, x, _ = _case("float64")
    names = [e.prim.name for e in fg.make_program(encoder_layer)(p, x).eqns]
    assert names.count("dense") == 4 and names.count("layer_norm_affine") == 2 and names.count("split") == 1
    assert not {"matmul", "transpose", "getitem", "standardize"} & set(names), names
    old = fg.make_program(encoder_layer_composed)(p, x).eqns
    assert len(names) < len(old)


def test_encoder_layer_second_order_matches_the_composition():
    _, p, x, cot = _case("float64")
    rng = np.random.default_rng(1)
    tx = rng.standard_normal(x.shape)

    def hvp(fn):  # forward over reverse: a Hessian-vector product in x of <fn(p, x), cot>
        return fg.jvp(fg.grad(lambda x: fnp.sum(fn(p, x) * cot)), (x,), (tx,))[1]
    np.testing.assert_allclose(hvp(encoder_layer), hvp(encoder_layer_composed), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ft_transformer_encoder_layer_matches_recorded_torch(dtype):
    import funcgrad.tensor as ft

    rec, p, x, cot = _case(dtype)
    layer = ft.nn.TransformerEncoderLayer(8, HEADS, 16, dropout=0.0, batch_first=True, dtype=getattr(ft, dtype))
    layer.load_state_dict({k: ft.tensor(v) for k, v in p.items()})
    tx = ft.tensor(x, requires_grad=True)
    out = layer(tx)
    (out * ft.tensor(cot)).sum().backward()
    tol = _tol(dtype)
    np.testing.assert_allclose(out.detach().numpy(), _arr(rec["out"]), **tol)
    np.testing.assert_allclose(tx.grad.numpy(), _arr(rec["grad_x"]), **tol)
    for name, param in layer.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), _arr(rec["grads"][name]), **tol, err_msg=name)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_norm_over_the_last_axis_matches_recorded_torch(dtype):
    rec = TABLE["layer_norm_last_axis"][dtype]
    x, w, b = (_arr(a) for a in rec["inputs"])
    out, f_vjp = fg.vjp(lambda x, w, b: fnn.layer_norm(x, 1, w, b), x, w, b)
    tol = _tol(dtype)
    np.testing.assert_allclose(out, _arr(rec["out"]), **tol)
    for got, ref in zip(f_vjp(_arr(rec["cot"])), rec["grads"]):
        np.testing.assert_allclose(got, _arr(ref), **tol)
        assert got.dtype == dtype


def _mha_case(layout, masks):
    """An ft MultiheadAttention self-attention call's inputs: (x, kwargs) for batch-first, sequence-first or
    unbatched x (2 sequences of 4 tokens, width 8, 2 heads), with the given masks."""
    import funcgrad.tensor as ft

    rng = np.random.default_rng(11)
    n, L, E = (1 if layout == "unbatched" else 2), 4, 8
    x = rng.standard_normal((L, E) if layout == "unbatched" else (n, L, E) if layout == "batch_first" else (L, n, E))
    kwargs = {}
    if "causal" in masks:
        kwargs["attn_mask"] = ft.tensor(np.triu(np.ones((L, L), bool), 1))
    if "float3d" in masks:  # one additive mask per (sequence, head), itself differentiable
        kwargs["attn_mask"] = ft.tensor(rng.standard_normal((n * HEADS, L, L)), requires_grad=True)
    if "padding" in masks:
        pad = np.zeros((n, L), bool)
        pad[-1, -1] = True
        kwargs["key_padding_mask"] = ft.tensor(pad[0] if layout == "unbatched" else pad)
    return ft.tensor(x, requires_grad=True), kwargs


@pytest.mark.parametrize("layout", ["batch_first", "seq_first", "unbatched"])
@pytest.mark.parametrize("masks", [(), ("causal", "padding"), ("float3d", "padding")])
def test_ft_multihead_attention_kernel_on_head_views_matches_the_weights_path(layout, masks):
    """Packed self-attention through the attention kernel takes q, k, v as views (N, H, L, hd) of the one
    projection and merges the heads from (N, H, L, hd); the weights path (need_weights=True) keeps the
    (N*H, L, hd) layout. Outputs, input, parameter and mask gradients agree."""
    import funcgrad.tensor as ft

    ft.manual_seed(0)
    mha = ft.nn.MultiheadAttention(8, HEADS, batch_first=layout == "batch_first").double()
    cot = np.random.default_rng(12).standard_normal(_mha_case(layout, masks)[0].shape)
    results = []
    for need in (False, True):
        x, kwargs = _mha_case(layout, masks)
        mha.zero_grad()
        y, w = mha(x, x, x, need_weights=need, **kwargs)
        assert (w is None) == (not need) and y.shape == x.shape
        (y * ft.tensor(cot)).sum().backward()
        mask_grad = kwargs["attn_mask"].grad if "float3d" in masks else None
        results.append([y.detach().numpy(), x.grad.numpy(), *(p.grad.numpy() for p in mha.parameters()),
                        *([] if mask_grad is None else [mask_grad.numpy()])])
    for fast, slow in zip(*results):
        np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_ft_multihead_attention_kernel_records_the_heads_as_views():
    """The kernel path's graph: one projection, its heads as views (a view, a permute, three selects), the
    kernel, the merge (a transpose and one copy), the output projection."""
    import funcgrad.tensor as ft

    ft.manual_seed(0)
    mha = ft.nn.MultiheadAttention(8, HEADS, batch_first=True).double()
    x = ft.tensor(np.random.default_rng(3).standard_normal((2, 4, 8)), requires_grad=True)
    y, _ = mha(x, x, x, need_weights=False)
    seen, todo = {}, [y.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen[id(node)] = type(node).__name__
        todo.extend(n for n, _ in node.next_functions)
    assert sorted(seen.values()) == sorted([
        "ViewBackward0",  # the input projection (dense of a 3-d input, as PyTorch names it)
        "ViewBackward0", "PermuteBackward0", "SelectBackward0", "SelectBackward0", "SelectBackward0",  # the heads
        "AttentionBackward0", "TransposeBackward0", "UnsafeViewBackward0",  # the kernel, the merge
        "ViewBackward0"]), sorted(seen.values())  # the output projection
