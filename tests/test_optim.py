"""funcgrad.optim: each optimizer against its update formulas, schedules, chaining, L-BFGS."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as nn
import funcgrad.numpy as fnp
import funcgrad.optim as optim
from funcgrad import tree_util
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)


def params_and_grads(dtype=np.float64):
    p = {"w": RNG.normal(size=(3, 2)).astype(dtype), "b": RNG.normal(size=2).astype(dtype)}
    gs = [tree_util.tree_map(lambda x: RNG.normal(size=x.shape).astype(dtype), p) for _ in range(4)]
    return p, gs


def run(opt, p, gs):
    state = opt.init(p)
    for g in gs:
        updates, state = opt.update(g, state, p)
        p = optim.apply_updates(p, updates)
    return p, state


def leafwise(ref_step, p, gs):
    """Apply a NumPy reference step ``ref_step(x, g, slot, t) -> x`` to every leaf."""
    out = {}
    for k in p:
        x, slot = p[k].copy(), {}
        for t, g in enumerate(gs, start=1):
            x = ref_step(x, g[k], slot, t)
        out[k] = x
    return out


def assert_tree_close(a, b, **kw):
    for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
        assert np.allclose(x, y, **kw), (x, y)


@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, False, 0.0), (0.9, True, 0.01)])
def test_sgd_matches_pytorch_formulas(momentum, nesterov, wd):
    p, gs = params_and_grads()
    lr = 0.1

    def ref(x, g, slot, t):
        g = g + wd * x
        if momentum:
            buf = slot["buf"] = momentum * slot.get("buf", 0) + g
            g = g + momentum * buf if nesterov else buf
        return x - lr * g

    got, _ = run(optim.sgd(lr, momentum=momentum, nesterov=nesterov, weight_decay=wd), p, gs)
    assert_tree_close(got, leafwise(ref, p, gs))
    with pytest.raises(ValueError, match="nesterov"):
        optim.sgd(0.1, nesterov=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_momentum_and_apply_on_host_arrays_keep_the_bits_and_dtypes_of_the_formulas(dtype):
    # host arrays take a short way (one new array per momentum update, dtypes read directly): the same bits
    # as g + m t and p + u, the same dtypes, and the general way still serves traced values and scalars
    p, gs = params_and_grads(dtype)
    tr = optim.trace(0.9, nesterov=True)
    state = tr.init(p)
    t = {k: np.zeros_like(v) for k, v in p.items()}
    for g in gs:
        out, state = tr.update(g, state, p)
        t = {k: g[k] + 0.9 * t[k] for k in t}
        for k in t:
            assert state.trace[k].dtype == dtype and state.trace[k].tobytes() == t[k].tobytes()
            assert out[k].tobytes() == (g[k] + 0.9 * t[k]).tobytes()
    wider = optim.apply_updates(p, {k: v.astype(np.float64) for k, v in gs[0].items()})
    for k in p:
        assert wider[k].dtype == dtype
        np.testing.assert_array_equal(wider[k], (p[k] + gs[0][k].astype(np.float64)).astype(dtype))
    traced = fg.grad(lambda w: fnp.sum(tr.update({"w": w}, tr.init({"w": w}), None)[0]["w"] ** 2))(p["w"])
    np.testing.assert_allclose(traced, 2 * p["w"] * 1.9 ** 2, rtol=1e-6)
    assert optim.apply_updates({"s": 1.0}, {"s": 0.5}) == {"s": 1.5}


def adam_ref(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    def ref(x, g, slot, t):
        m = slot["m"] = b1 * slot.get("m", 0) + (1 - b1) * g
        v = slot["v"] = b2 * slot.get("v", 0) + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        return x - lr * (mhat / (np.sqrt(vhat) + eps) + wd * x)

    return ref


def test_adam_and_adamw():
    p, gs = params_and_grads()
    got, state = run(optim.adam(1e-2), p, gs)
    assert_tree_close(got, leafwise(adam_ref(1e-2), p, gs))
    assert int(state[0].count) == 4
    got, _ = run(optim.adamw(1e-2, weight_decay=0.1), p, gs)
    assert_tree_close(got, leafwise(adam_ref(1e-2, wd=0.1), p, gs))
    # a mask keeps the decay off the bias
    got, _ = run(optim.adamw(1e-2, weight_decay=0.1, mask=lambda q: {"w": True, "b": False}), p, gs)
    assert np.allclose(got["b"], leafwise(adam_ref(1e-2), p, gs)["b"])
    assert np.allclose(got["w"], leafwise(adam_ref(1e-2, wd=0.1), p, gs)["w"])


def test_rmsprop_and_adagrad():
    p, gs = params_and_grads()

    def rms_ref(x, g, slot, t):
        v = slot["v"] = 0.9 * slot.get("v", 0) + 0.1 * g * g
        return x - 0.01 * g / (np.sqrt(v) + 1e-8)

    got, _ = run(optim.rmsprop(0.01, decay=0.9), p, gs)
    assert_tree_close(got, leafwise(rms_ref, p, gs))

    def centered_ref(x, g, slot, t):
        v = slot["v"] = 0.9 * slot.get("v", 0) + 0.1 * g * g
        m = slot["m"] = 0.9 * slot.get("m", 0) + 0.1 * g
        buf = slot["buf"] = 0.5 * slot.get("buf", 0) + g / (np.sqrt(v - m * m) + 1e-8)
        return x - 0.01 * buf

    got, _ = run(optim.rmsprop(0.01, decay=0.9, centered=True, momentum=0.5), p, gs)
    assert_tree_close(got, leafwise(centered_ref, p, gs))

    def adagrad_ref(x, g, slot, t):
        s = slot["s"] = slot.get("s", 0.1) + g * g
        return x - 0.5 * g / (np.sqrt(s) + 1e-10)

    got, _ = run(optim.adagrad(0.5, initial_accumulator_value=0.1), p, gs)
    assert_tree_close(got, leafwise(adagrad_ref, p, gs))


@pytest.mark.parametrize("make", [
    lambda: optim.sgd(0.1, momentum=0.9), lambda: optim.adam(1e-3), lambda: optim.adamw(1e-3),
    lambda: optim.rmsprop(1e-3), lambda: optim.adagrad(0.1),
    lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.adam(optim.cosine_decay_schedule(1e-3, 10))),
])
def test_float32_stays_float32_and_state_is_a_pytree(make):
    p, gs = params_and_grads(np.float32)
    opt = make()
    got, state = run(opt, p, gs)
    assert all(x.dtype == np.float32 for x in tree_util.tree_leaves(got))
    float_leaves = [x for x in tree_util.tree_leaves(state) if np.asarray(x).dtype.kind == "f" and np.ndim(x) > 0]
    assert all(x.dtype == np.float32 for x in float_leaves)
    # the state can be flattened, mapped and rebuilt like any pytree
    leaves, td = tree_util.tree_flatten(state)
    again = td.unflatten(leaves)
    _, s2 = opt.update(gs[0], again, got)
    assert tree_util.tree_structure(s2) == td


def test_clipping():
    g = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    assert np.isclose(optim.global_norm(g), 5.0)
    clip = optim.clip_by_global_norm(1.0)
    u, _ = clip.update(g, clip.init(g))
    assert np.isclose(optim.global_norm(u), 1.0) and np.allclose(u["a"], [0.6, 0])
    u, _ = clip.update(tree_util.tree_map(lambda x: x * 0.1, g), clip.init(g))
    assert np.isclose(optim.global_norm(u), 0.5)  # under the limit: unchanged
    c = optim.clip(1.0)
    u, _ = c.update(g, c.init(g))
    assert np.array_equal(u["a"], [1.0, 0.0])


def test_schedules():
    assert optim.constant_schedule(0.3)(100) == 0.3
    lin = optim.linear_schedule(1.0, 0.0, 10, transition_begin=5)
    assert [lin(s) for s in (0, 5, 10, 15, 20)] == [1.0, 1.0, 0.5, 0.0, 0.0]
    cos = optim.cosine_decay_schedule(2.0, 100, alpha=0.1)
    assert cos(0) == 2.0 and np.isclose(cos(50), 2.0 * (0.9 * 0.5 + 0.1)) and np.isclose(cos(100), 0.2)
    assert np.isclose(cos(1000), 0.2)
    ex = optim.exponential_decay(1.0, 10, 0.5)
    assert np.isclose(ex(20), 0.25) and np.isclose(ex(5), math.sqrt(0.5))
    st = optim.exponential_decay(1.0, 10, 0.5, staircase=True, end_value=0.2)
    assert st(15) == 0.5 and st(100) == 0.2
    wc = optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110, end_value=0.1)
    assert wc(0) == 0.0 and np.isclose(wc(5), 0.5) and np.isclose(wc(10), 1.0) and np.isclose(wc(110), 0.1)
    assert np.isclose(wc(60), 0.1 + 0.9 * 0.5)
    w = optim.warmup_schedule(1.0, 4)
    assert [w(s) for s in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    pc = optim.piecewise_constant_schedule(0.1, {10: 0.1, 20: 0.5})
    assert [pc(s) for s in (0, 10, 25)] == [0.1, pytest.approx(0.01), pytest.approx(0.005)]
    # a schedule drives the learning rate, one value per step
    p = {"x": np.zeros(1)}
    opt = optim.sgd(optim.linear_schedule(1.0, 0.0, 4))
    state = opt.init(p)
    xs = []
    for _ in range(5):
        u, state = opt.update({"x": np.ones(1)}, state, p)
        xs.append(float(u["x"][0]))
    assert xs == [-1.0, -0.75, -0.5, -0.25, -0.0]


def test_chain_masked_and_frozen_none_leaves():
    opt = optim.chain(optim.scale(2.0), optim.scale(-0.5), optim.identity())
    p = {"a": np.ones(2), "b": None}
    u, s = opt.update({"a": np.ones(2), "b": None}, opt.init(p), p)
    assert np.array_equal(u["a"], [-1.0, -1.0]) and u["b"] is None
    assert np.array_equal(optim.apply_updates(p, u)["a"], [0.0, 0.0])
    m = optim.masked(optim.scale(10.0), {"a": True, "c": False})
    q = {"a": np.ones(1), "c": np.ones(1)}
    u, _ = m.update(q, m.init(q), q)
    assert u["a"][0] == 10.0 and u["c"][0] == 1.0
    with pytest.raises(ValueError, match="state tuple"):
        opt.update(p, None, p)
    with pytest.raises(ValueError, match="different structures"):
        optim.apply_updates({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError, match="needs the parameters"):
        w = optim.adamw(1e-3)
        w.update(q, w.init(q))


def test_training_a_module_with_each_optimizer():
    X = RNG.normal(size=(64, 3))
    y = X @ np.array([[1.0], [-2.0], [0.5]]) + 0.3

    def loss(model):
        return nn.mse_loss(model(X), y)

    for opt in (optim.sgd(0.1, momentum=0.9), optim.adam(0.05), optim.rmsprop(0.03), optim.adagrad(0.5),
                optim.adamw(0.05, weight_decay=1e-3)):
        model = nn.Linear(3, 1, key=0, dtype=np.float64)
        state = opt.init(model)
        l0 = float(loss(model))
        for _ in range(60):
            g = fg.grad(loss)(model)
            u, state = opt.update(g, state, model)
            model = optim.apply_updates(model, u)
        assert type(model) is nn.Linear and float(loss(model)) < 0.1 * l0


def test_differentiating_through_an_update():
    """Optimizer steps are differentiable (meta-learning): check_grads through adam."""
    opt = optim.adam(0.1)
    x0 = RNG.normal(size=3)
    state = opt.init(x0)
    _, state = opt.update(RNG.normal(size=3), state, x0)

    def one_step(x):
        g = fg.grad(lambda z: fnp.sum(fnp.sin(z) * z))(x)
        u, _ = opt.update(g, state, x)
        return optim.apply_updates(x, u)

    check_grads(one_step, (x0,), order=1, modes=("rev",))


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_lbfgs_minimizes_rosenbrock():
    x, info = optim.minimize_lbfgs(rosen, np.full(6, -1.2), tol=1e-8, maxiter=500)
    assert info.converged and np.allclose(x, 1.0, atol=1e-6) and info.n_iter < 200
    # the transformation on a pytree, with the line search
    params = {"a": np.array([-1.2]), "b": np.array([1.0])}
    f = lambda p: 100 * (p["b"][0] - p["a"][0] ** 2) ** 2 + (1 - p["a"][0]) ** 2  # noqa: E731
    opt = optim.lbfgs(memory_size=5)
    state = opt.init(params)
    for _ in range(100):
        v, g = fg.value_and_grad(f)(params)
        u, state = opt.update(g, state, params, value=v, value_fn=f)
        params = optim.apply_updates(params, u)
    assert np.isclose(params["a"][0], 1.0, atol=1e-5) and np.isclose(params["b"][0], 1.0, atol=1e-5)
    assert isinstance(state, optim.LbfgsState)


def test_lbfgs_quadratic_and_against_scipy():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(8, 8))
    A = A @ A.T + 8 * np.eye(8)
    b = rng.normal(size=8)
    quad = lambda x: 0.5 * x @ (A @ x) - b @ x  # noqa: E731
    x, info = optim.minimize_lbfgs(quad, np.zeros(8), tol=1e-10, memory_size=10)
    assert np.allclose(x, np.linalg.solve(A, b), atol=1e-8) and info.n_iter <= 30, info
    so = pytest.importorskip("scipy.optimize")
    r = so.minimize(lambda x: float(rosen(x)), np.full(8, -1.2), jac=fg.grad(rosen), method="L-BFGS-B",
                    options={"gtol": 1e-9})
    _, ours = optim.minimize_lbfgs(rosen, np.full(8, -1.2), tol=1e-9, maxiter=1000)
    assert ours.converged and ours.n_iter <= 2 * r.nit + 20


def test_lbfgs_without_line_search_and_in_chain():
    opt = optim.chain(optim.lbfgs(learning_rate=0.5))
    p = np.array([3.0, -2.0])
    state = opt.init(p)
    for _ in range(40):
        g = fg.grad(lambda x: fnp.sum(x * x))(p)
        u, state = opt.update(g, state, p)
        p = optim.apply_updates(p, u)
    assert np.allclose(p, 0, atol=1e-6)
