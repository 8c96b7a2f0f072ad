"""Batch normalization's running-statistics update as one kernel (funcgrad/nn/kernels/running_statistics.py).

The pure primitive and the in-place kernel give the numbers of the composition they replace, bit for bit;
they are one recorded op, not differentiated under grad/jvp (and leave the layer's gradients alone), batch
under vmap (a batch of models), stage under jit, stay on a device, and fg.nn.batch_norm and ft.nn's BatchNorm
reach PyTorch's recorded running statistics through them (momentum, the cumulative average, no running
statistics, eval mode: tests/fixtures/torch_kernels.json's ``bn_steps``).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.nn.kernels.running_statistics import blend_running_statistics, blend_running_statistics_into

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "torch_kernels.json"
with open(FIXTURE) as _f:
    BN_STEPS = json.load(_f)["bn_steps"]


def _arr(d):
    return np.asarray(d["data"], dtype=d["dtype"]).reshape(d["shape"])


def _stats(dtype, c=5, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype),
            rng.standard_normal(c).astype(dtype), rng.uniform(0.1, 3, c).astype(dtype)]


def _composition(rm, rv, bm, bv, m, count):
    """The update fg.nn.batch_norm and ft.nn's BatchNorm recorded before the kernel (about ten ops)."""
    bv = bv * (count / max(count - 1, 1))
    return (fnp.astype((1 - m) * rm + m * bm, fnp.result_type(rm)),
            fnp.astype((1 - m) * rv + m * bv, fnp.result_type(rv)))


@pytest.mark.parametrize("momentum", [0.1, 0.3, 1.0, 1 / 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pure_and_in_place_match_the_composition_bit_for_bit(dtype, momentum):
    rm, rv, bm, bv = _stats(dtype)
    before = [a.copy() for a in (rm, rv, bm, bv)]
    want = _composition(rm, rv, bm, bv, momentum, 12)
    got = blend_running_statistics(rm, rv, bm, bv, momentum, 12)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == dtype
    for a, b in zip((rm, rv, bm, bv), before):  # the pure primitive leaves its arguments alone
        np.testing.assert_array_equal(a, b)
    mean_buffer, var_buffer = rm.copy(), rv.copy()
    assert blend_running_statistics_into(mean_buffer, var_buffer, bm, bv, momentum, 12) is None
    np.testing.assert_array_equal(mean_buffer, want[0])
    np.testing.assert_array_equal(var_buffer, want[1])


def test_running_statistics_keep_their_dtype():
    rm, rv, _, _ = _stats(np.float64)
    _, _, bm, bv = _stats(np.float32, seed=1)
    new_mean, new_var = blend_running_statistics(rm, rv, bm, bv, np.asarray(0.25), 4)  # a 0-d momentum
    assert new_mean.dtype == new_var.dtype == np.float64
    want = _composition(rm, rv, bm, bv, 0.25, 4)
    np.testing.assert_allclose(new_mean, want[0], rtol=1e-15)
    np.testing.assert_allclose(new_var, want[1], rtol=1e-15)
    low = blend_running_statistics(*_stats(np.float32), np.asarray(0.25, np.float64), 4)
    assert low[0].dtype == low[1].dtype == np.float32  # a float64 momentum does not widen float32 buffers


def test_one_recorded_op_and_no_derivative():
    rm, rv, bm, bv = _stats(np.float64)
    prog = fg.make_program(lambda m, v: blend_running_statistics(rm, rv, m, v, 0.1, 8))(bm, bv)
    assert [e.prim.name for e in prog.eqns] == ["blend_running_statistics"]
    g = fg.grad(lambda m: fnp.sum(blend_running_statistics(rm, rv, m, bv, 0.1, 8)[0]))(bm)
    np.testing.assert_array_equal(g, np.zeros_like(bm))
    _, tangent = fg.jvp(lambda m: blend_running_statistics(rm, rv, m, bv, 0.1, 8)[0], (bm,), (np.ones_like(bm),))
    np.testing.assert_array_equal(tangent, np.zeros_like(bm))


def _layer(dtype=np.float64, c=3):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, c, 3, 2)) * 2 + 1).astype(dtype)
    w, b = rng.uniform(0.5, 1.5, c).astype(dtype), rng.standard_normal(c).astype(dtype)
    return x, w, b, np.linspace(-0.5, 0.5, c).astype(dtype), np.linspace(0.5, 1.5, c).astype(dtype)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_gradients_do_not_see_the_running_statistics(affine):
    """The loss reads the new running statistics too: they add nothing to any gradient, and the staged
    training program blends them with one op."""
    x, w, b, rm, rv = _layer()
    w, b = (w, b) if affine else (None, None)

    def loss(x, w, b, with_running):
        y, new_mean, new_var = fnn.batch_norm(x, rm, rv, w, b, training=True)
        extra = fnp.sum(new_mean * 3.0) + fnp.sum(new_var * new_var) if with_running else 0.0
        return fnp.sum(fnp.sin(y)) + extra

    args = (0, 1, 2) if affine else 0
    want = fg.grad(lambda *a: loss(*a, False), argnums=args)(x, w, b)
    got = fg.grad(lambda *a: loss(*a, True), argnums=args)(x, w, b)
    for g, h in zip(fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)
    _, t_running = fg.jvp(lambda x: fnn.batch_norm(x, rm, rv, w, b, training=True)[1], (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t_running, np.zeros_like(rm))
    prog = fg.make_program(lambda x: fnn.batch_norm(x, rm, rv, w, b, training=True))(x)
    names = [e.prim.name for e in prog.eqns]
    assert names.count("blend_running_statistics") == 1
    assert not {"multiply", "add", "subtract", "astype"} & set(names), names


def test_vmap_over_a_batch_of_models_and_over_batches():
    x, w, b, rm, rv = _layer()
    xs = np.stack([x, x[::-1] * 2.0, x + 1.0])
    rms, rvs = np.stack([rm, rm + 1, rm * 2]), np.stack([rv, rv * 2, rv + 0.5])

    def step(x, rm, rv):
        return fnn.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)

    for in_axes, r_means, r_vars in (((0, 0, 0), rms, rvs), ((0, None, None), [rm] * 3, [rv] * 3)):
        got = fg.vmap(step, in_axes=in_axes)(xs, rms if in_axes[1] == 0 else rm, rvs if in_axes[2] == 0 else rv)
        for i in range(3):
            want = step(xs[i], r_means[i], r_vars[i])
            for g, h in zip(got, want):
                np.testing.assert_allclose(g[i], h, rtol=1e-12, atol=1e-12)
    # the momentum batched too, and the models' statistics on another axis
    moms = np.array([0.1, 0.5, 0.9])
    bm, bv = rms[::-1] * 0.5, rvs[::-1]
    got = fg.vmap(lambda r, v, m, mo: blend_running_statistics(r, v, m, bv[0], mo, 7), in_axes=(1, None, 0, 0))(
        rms.T, rv, bm, moms)
    for i in range(3):
        want = _composition(rms[i], rv, bm[i], bv[0], moms[i], 7)
        np.testing.assert_allclose(got[0][i], want[0], rtol=1e-15)
        np.testing.assert_allclose(got[1][i], want[1], rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jit_gives_the_eager_running_statistics(dtype):
    x, w, b, rm, rv = _layer(dtype)

    def step(x, rm, rv):
        return fnn.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3)[1:]

    for g, h in zip(fg.jit(step)(x, rm, rv), step(x, rm, rv)):
        np.testing.assert_array_equal(g, h)
        assert g.dtype == dtype


def test_on_a_device_pure_and_in_place_with_no_host_sync():
    fb.install()
    host = _stats(np.float32)
    want = _composition(*host, 0.1, 9)
    dev = [fb.to_fake(a) for a in host]
    with fb.no_host_sync():
        got = blend_running_statistics(*dev, 0.1, 9)
        assert all(isinstance(g, fb.FakeArray) for g in got)
        blend_running_statistics_into(dev[0], dev[1], dev[2], dev[3], 0.1, 9)
    for g, buffer, w in zip(got, dev[:2], want):
        np.testing.assert_array_equal(g.get(), w)
        np.testing.assert_array_equal(buffer.get(), w)


def _tol(dtype):
    return {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(BN_STEPS))
def test_fg_nn_batch_norm_matches_recorded_torch_over_calls(name, dtype):
    """fg.nn.batch_norm carrying its running statistics over three training calls, then an eval call:
    PyTorch's outputs and running statistics (momentum None: the cumulative average, momentum 1/n; no
    running statistics: every call normalizes with the batch's)."""
    rec = BN_STEPS[name][dtype]
    tracked = rec.get("track", True)
    c = rec["shape"][1]
    w, b = _arr(rec["weight"]), _arr(rec["bias"])
    rm, rv = (np.zeros(c, dtype), np.ones(c, dtype)) if tracked else (None, None)
    for i, step in enumerate(rec["steps"]):
        training = i < 3
        momentum = 1.0 / (i + 1) if rec["momentum"] is None else rec["momentum"]
        y, rm, rv = fnn.batch_norm(_arr(step["x"]), rm, rv, w, b, training=training, momentum=momentum)
        what = f"{name} {dtype} call {i + 1}"
        np.testing.assert_allclose(y, _arr(step["out"]), **_tol(dtype), err_msg=what)
        if tracked:
            np.testing.assert_allclose(rm, _arr(step["running_mean"]), **_tol(dtype), err_msg=what)
            np.testing.assert_allclose(rv, _arr(step["running_var"]), **_tol(dtype), err_msg=what)
            assert rm.dtype == rv.dtype == dtype
        else:
            assert rm is None and rv is None


def test_ft_batch_norm_updates_its_buffers_in_place_with_one_kernel():
    """ft.nn.BatchNorm2d in training writes the blend into the arrays its buffers already hold (their
    version counters advance; nothing is recorded for them), with the composition's numbers."""
    import funcgrad.tensor as ft

    x, w, b, rm, rv = _layer(np.float32)
    layer = ft.nn.BatchNorm2d(3, momentum=0.2)
    with ft.no_grad():
        layer.weight.copy_(ft.tensor(w))
        layer.bias.copy_(ft.tensor(b))
        layer.running_mean.copy_(ft.tensor(rm))
        layer.running_var.copy_(ft.tensor(rv))
    arrays = layer.running_mean._value, layer.running_var._value
    versions = layer.running_mean._version, layer.running_var._version
    y = layer(ft.tensor(x, requires_grad=True))
    assert layer.running_mean._value is arrays[0] and layer.running_var._value is arrays[1]
    assert layer.running_mean._version == versions[0] + 1 and layer.running_var._version == versions[1] + 1
    assert layer.running_mean.grad_fn is None and not layer.running_mean.requires_grad
    _, bm, bv = fnn.norm.batch_norm_train(x, w, b)
    want = _composition(rm, rv, bm.reshape(-1), bv.reshape(-1), 0.2, x.size // 3)
    np.testing.assert_array_equal(layer.running_mean.numpy(), want[0])
    np.testing.assert_array_equal(layer.running_var.numpy(), want[1])
    want_y, _, _ = fnn.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    np.testing.assert_array_equal(y.detach().numpy(), want_y)
