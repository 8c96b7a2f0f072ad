"""ft.func: torch.func's transforms on Tensors, through funcgrad's transforms; checked against
closed forms, ft.autograd and Python loops."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F
from funcgrad.tensor.func import (
    functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, stack_module_state, vjp, vmap,
)


@pytest.fixture(autouse=True)
def _f64():
    ft.set_default_dtype(ft.float64)


def _np(t):
    return t.detach().numpy()


def test_grad_value_and_aux():
    x = ft.tensor([0.5, 1.0, 2.0])
    np.testing.assert_allclose(_np(grad(lambda t: (t.sin() * t).sum())(x)), np.cos(x.numpy()) * x.numpy()
                               + np.sin(x.numpy()))
    g, v = grad_and_value(lambda t: ft.exp(t).sum())(x)
    np.testing.assert_allclose(_np(g), np.exp(x.numpy()))
    assert np.isclose(v.item(), np.exp(x.numpy()).sum())
    g, (v, aux) = grad_and_value(lambda t: ((t ** 2).sum(), t.mean()), has_aux=True)(x)
    np.testing.assert_allclose(_np(g), 2 * x.numpy())
    assert np.isclose(aux.item(), x.numpy().mean())
    ga, gb = grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, 2 * x)
    np.testing.assert_allclose(_np(ga), 2 * x.numpy())
    np.testing.assert_allclose(_np(gb), x.numpy())
    assert isinstance(ga, ft.Tensor)


def test_vjp_jvp_jacobians_hessian():
    x = ft.tensor([0.3, -1.2, 0.8])

    def f(t):
        return t.tanh() * t

    out, vjp_fn = vjp(f, x)
    (ct,) = vjp_fn(ft.ones(3))
    J = np.diag(np.tanh(x.numpy()) + x.numpy() / np.cosh(x.numpy()) ** 2)
    np.testing.assert_allclose(_np(out), np.tanh(x.numpy()) * x.numpy())
    np.testing.assert_allclose(_np(ct), J.sum(0))
    o, t = jvp(f, (x,), (ft.ones(3),))
    np.testing.assert_allclose(_np(t), J.sum(1))
    np.testing.assert_allclose(_np(jacrev(f)(x)), J)
    np.testing.assert_allclose(_np(jacfwd(f)(x)), J)
    H = hessian(lambda t: (t ** 3).sum())(x)
    np.testing.assert_allclose(_np(H), np.diag(6 * x.numpy()))
    with pytest.raises(RuntimeError, match="tuples"):
        jvp(f, x, ft.ones(3))


def test_grad_agrees_with_autograd_on_a_network():
    ft.manual_seed(0)
    model = ft.nn.Sequential(ft.nn.Linear(4, 8), ft.nn.Tanh(), ft.nn.Linear(8, 3))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = ft.randn(5, 4), ft.tensor([0, 2, 1, 1, 0])

    def loss(p):
        return F.cross_entropy(functional_call(model, p, (x,)), y)

    g = grad(loss)(params)
    F.cross_entropy(model(x), y).backward()
    for k, p in model.named_parameters():
        np.testing.assert_allclose(_np(g[k]), _np(p.grad), rtol=1e-10, atol=1e-12)
    # the module's own parameters are back in place
    assert all(isinstance(p, ft.nn.Parameter) for p in model.parameters())


def test_per_example_gradients_vmap_equals_a_loop():
    ft.manual_seed(1)
    model = ft.nn.Linear(3, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = ft.randn(6, 3), ft.randn(6, 1)

    def loss(p, x, y):
        return ((functional_call(model, p, (x,)) - y) ** 2).mean()

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(6):
        gi = grad(loss)(params, xs[i], ys[i])
        for k in params:
            np.testing.assert_allclose(_np(per[k][i]), _np(gi[k]), rtol=1e-10)


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 10])
def test_vmap_in_out_dims_and_chunks(chunk_size):
    a, b = ft.randn(7, 3), ft.randn(3, 7)
    out = vmap(lambda u, v: (u * v).sum(), in_dims=(0, 1), chunk_size=chunk_size)(a, b)
    np.testing.assert_allclose(_np(out), (a.numpy() * b.numpy().T).sum(1))
    out = vmap(lambda u: u * 2, out_dims=1, chunk_size=chunk_size)(a)
    np.testing.assert_allclose(_np(out), 2 * a.numpy().T)
    out = vmap(lambda u, w: F.linear(u, w), in_dims=(0, None), chunk_size=chunk_size)(a, ft.ones(2, 3))
    assert out.shape == (7, 2)


def test_stack_module_state_ensemble():
    ft.manual_seed(2)
    models = [ft.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and buffers == {}
    x = ft.randn(5, 3)
    out = vmap(lambda p, xx: functional_call(models[0], p, (xx,)), in_dims=(0, None))(params, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(_np(out[i]), _np(m(x)), rtol=1e-12)
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([ft.nn.Linear(2, 2), ft.nn.Tanh()])


def test_functional_call_errors():
    m = ft.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="no parameter or buffer"):
        functional_call(m, {"nope": ft.ones(2)}, (ft.ones(2),))
    with pytest.raises(RuntimeError, match="missing keys"):
        functional_call(m, {"weight": ft.ones(2, 2)}, (ft.ones(2),), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        functional_call(m, ({"weight": ft.ones(2, 2)}, {"weight": ft.ones(2, 2)}), (ft.ones(2),))
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(lambda t: t, chunk_size=0)


def test_reading_a_traced_value_out_raises():
    with pytest.raises(Exception):
        grad(lambda t: t.sum() if t.sum().item() > 0 else -t.sum())(ft.ones(2))


CASES = {
    "relu": lambda a: a.relu().sum(), "clamp": lambda a: a.clamp(-0.5, 0.5).sum(),
    "clamp_min": lambda a: a.clamp_min(0.1).sum(), "clamp_max": lambda a: a.clamp_max(0.1).sum(),
    "masked_fill": lambda a: a.masked_fill(a > 0, 0.0).sum(), "where": lambda a: ft.where(a > 0, a, 0.0).sum(),
    "maximum": lambda a: ft.maximum(a, a * 0.5).sum(), "softmax": lambda a: a.softmax(0)[1],
    "norm_std": lambda a: a.norm() + a.std(), "getitem_matmul": lambda a: (a[1:3] * a[0]).sum() + a @ a,
    "leaky_relu": lambda a: F.leaky_relu(a, 0.1).sum(), "hardtanh": lambda a: F.hardtanh(a, -0.5, 0.5).sum(),
    "softplus": lambda a: F.softplus(a, 2.0, 1.0).sum(), "gelu_silu_mish": lambda a: (F.gelu(a) + F.silu(a) + F.mish(a)).sum(),
    "hardswish": lambda a: F.hardswish(a).sum(), "normalize": lambda a: F.normalize(a, dim=0)[0],
    "layer_norm": lambda a: F.layer_norm(a, (4,)).pow(2).sum(), "losses": lambda a: F.mse_loss(a, a * 0.3)
    + F.huber_loss(a, a * 0.2) + F.cross_entropy(a.unsqueeze(0), ft.tensor([1])),
    "threshold_shrink": lambda a: (F.threshold(a, 0.1, 2.0) + F.hardshrink(a, 0.3) + F.softshrink(a, 0.3)).sum(),
    "prelu_glu": lambda a: F.prelu(a, ft.tensor([0.2])).sum() + F.glu(a).sum(),
}


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_and_vmap_of_grad_equal_loops(name):
    """Tensor methods under the transforms, against per-example eager evaluation and ft.autograd."""
    f = CASES[name]
    X = ft.tensor(np.random.default_rng(0).uniform(0.2, 0.9, (3, 4)) * np.array([1, -1, 1, -1]))
    want_v = np.array([f(x).item() for x in X])
    want_g = []
    for x in X:
        x = x.clone().requires_grad_(True)
        f(x).backward()
        want_g.append(x.grad.numpy())
    np.testing.assert_allclose(_np(vmap(f)(X)), want_v, rtol=1e-10)
    np.testing.assert_allclose(_np(vmap(grad(f))(X)), np.array(want_g), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(grad(f)(X[0])), want_g[0], rtol=1e-10, atol=1e-12)


IMAGE_CASES = {
    "conv2d": lambda a: F.conv2d(a.unsqueeze(0), ft.ones(2, 1, 2, 2) * 0.3, stride=1, padding=1).tanh().sum(),
    "conv_transpose2d": lambda a: F.conv_transpose2d(a.unsqueeze(0), ft.ones(1, 2, 3, 3) * 0.2, stride=2,
                                                     padding=1, output_padding=1).pow(2).sum(),
    "interpolate": lambda a: F.interpolate(a.unsqueeze(0), size=(5, 3), mode="bilinear").pow(2).sum(),
    "pad_reflect": lambda a: F.pad(a, (1, 2, 0, 1), mode="reflect").pow(2).sum(),
    "pools": lambda a: (F.max_pool2d(a, 2) * F.avg_pool2d(a, 2)).sum() + F.adaptive_avg_pool2d(a, (3, 2)).pow(2).sum()
    + F.adaptive_max_pool2d(a, 3).sum(),
    "group_instance_norm": lambda a: (F.group_norm(a.unsqueeze(0), 1) * F.instance_norm(a.unsqueeze(0))).sum(),
    "unfold_fold": lambda a: F.fold(F.unfold(a.unsqueeze(0), 2) * 1.5, (4, 4), 2).pow(2).sum(),
    "batch_norm_eval": lambda a: F.batch_norm(a.unsqueeze(0), ft.zeros(1), ft.ones(1) * 2.0, training=False).pow(3).sum(),
}


@pytest.mark.parametrize("name", list(IMAGE_CASES))
def test_image_ops_under_vmap_and_grad_equal_loops(name):
    f = IMAGE_CASES[name]
    X = ft.tensor(np.random.default_rng(1).standard_normal((3, 1, 4, 4)))
    want_g = []
    for x in X:
        x = x.clone().requires_grad_(True)
        f(x).backward()
        want_g.append(x.grad.numpy())
    np.testing.assert_allclose(_np(vmap(f)(X)), np.array([f(x).item() for x in X]), rtol=1e-10)
    np.testing.assert_allclose(_np(vmap(grad(f))(X)), np.array(want_g), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,kwargs", [
    ("argmax", {}), ("argmax", {"dim": 1, "keepdim": True}), ("argmin", {"dim": -1}), ("argsort", {"descending": True}),
    ("all", {}), ("any", {"dim": 0}), ("count_nonzero", {}), ("count_nonzero", {"dim": 1}),
])
def test_vmap_of_index_and_boolean_reductions_equals_a_loop(name, kwargs):
    """torch.func.vmap batches argmax/argmin/argsort/all/any/count_nonzero (integer and boolean results
    of a traced value: they used to be refused as a NumPy conversion)."""
    x = ft.tensor(np.random.default_rng(3).normal(size=(4, 3, 5))) * ft.tensor([1.0, 0.0, 1.0, 1.0, 0.0])
    got = ft.func.vmap(lambda t: getattr(t, name)(**kwargs))(x)
    want = ft.stack([getattr(t, name)(**kwargs) for t in x])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_median_method_nan_rows_and_gradient():
    """Tensor.median as torch's (recorded from torch 2.15 on this input): the lower median, NaN and the
    index of the first NaN where a NaN is reduced; the gradient goes to the chosen element."""
    nan = float("nan")
    x = ft.tensor([[3.0, nan, 1.0, nan], [4.0, 2.0, 1.0, 5.0], [nan, 0.0, 0.0, 7.0]], dtype=ft.float64)
    assert np.isnan(x.median().item()) and ft.median(x[1]).item() == 2.0
    v, i = x.median(1)
    np.testing.assert_array_equal(v.numpy(), [nan, 2.0, nan])
    np.testing.assert_array_equal(i.numpy(), [1, 1, 0])
    v0, i0 = x.median(0, keepdim=True)
    np.testing.assert_array_equal(v0.numpy(), [[nan, nan, 1.0, nan]])
    np.testing.assert_array_equal(i0.numpy(), [[2, 0, 0, 0]])
    assert tuple(ft.tensor(5.0).median(0)) == (5.0, 0) and ft.tensor(5.0).median(0).indices.dim() == 0
    y = ft.tensor([[4.0, 2.0, 1.0, 5.0], [0.5, 3.0, 9.0, 6.0]], dtype=ft.float64, requires_grad=True)
    y.median(1).values.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [[0, 1, 0, 0], [0, 1, 0, 0]])
