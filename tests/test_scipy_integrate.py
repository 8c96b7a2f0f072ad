"""funcgrad.scipy.integrate: quadrature vs SciPy, odeint's adjoint gradients vs the unrolled
solver, forward mode, second order, vmap, float32, fake device."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import integrate as I

from scipy_harness import Case, check_derivatives, check_fake_device, check_float32, check_values, check_vmap

rng = np.random.default_rng(0)
Y = rng.standard_normal((3, 5))
XS = np.cumsum(rng.uniform(0.5, 1.5, 5))


def trap(y):
    return I.trapezoid(y, dx=0.5)


def trap_x(y, x):
    return I.trapezoid(y, x)


def cumtrap(y):
    return I.cumulative_trapezoid(y, dx=0.5, initial=0)


def cumtrap_x(y, x):
    return I.cumulative_trapezoid(y, x)


def simp(y):
    return I.simpson(y, dx=0.5)


def simp_even(y):
    return I.simpson(y[:, :4], x=XS[:4])


QUAD = {c.fn.__name__: c for c in [
    Case(trap, (Y,), lambda y: si.trapezoid(y, dx=0.5)),
    Case(trap_x, (Y, XS), si.trapezoid),
    Case(cumtrap, (Y,), lambda y: si.cumulative_trapezoid(y, dx=0.5, initial=0)),
    Case(cumtrap_x, (Y, XS), si.cumulative_trapezoid),
    Case(simp, (Y,), lambda y: si.simpson(y, dx=0.5)),
    Case(simp_even, (Y,), lambda y: si.simpson(y[:, :4], x=XS[:4])),
]}


@pytest.mark.parametrize("name", sorted(QUAD))
def test_quadrature(name):
    c = QUAD[name]
    check_values(c)
    check_derivatives(c)
    check_float32(c)
    check_vmap(c)


# --------------------------------------------------------------------------
# odeint

T = np.linspace(0.0, 2.0, 5)


def oscillator(y, t, k, p):
    return fnp.stack([y[1], -k * y[0] - p["c"] * y[1] + fnp.sin(t)])


def ode_case(y0, k, c, t=T):
    return I.odeint(oscillator, y0, fnp.asarray(t, dtype=fnp.result_type(y0)), k, {"c": c}, substeps=4)


ODE_ARGS = (np.array([1.0, 0.0]), np.array(2.0), np.array(0.3))


def test_odeint_matches_scipy():
    ys = I.odeint(oscillator, ODE_ARGS[0], T, 2.0, {"c": 0.3}, substeps=50)
    want = si.odeint(lambda y, t: [y[1], -2 * y[0] - 0.3 * y[1] + np.sin(t)], ODE_ARGS[0], T, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(ys, want, atol=1e-8)


def test_adjoint_gradient_equals_unrolled_gradient():
    def loss(adjoint):
        return lambda y0, k, c: fnp.sum(I.odeint(oscillator, y0, T, k, {"c": c}, substeps=20, adjoint=adjoint) ** 2)

    g_adj = fg.grad(loss(True), argnums=(0, 1, 2))(*ODE_ARGS)
    g_unr = fg.grad(loss(False), argnums=(0, 1, 2))(*ODE_ARGS)
    for a, u in zip(g_adj, g_unr):
        np.testing.assert_allclose(a, u, rtol=1e-7, atol=1e-9)
    # forward mode is the exact derivative of the discrete solution: equal to rounding
    tan = (np.array([0.3, -0.2]), np.array(0.7), np.array(-0.4))
    f_adj = fg.jvp(loss(True), ODE_ARGS, tan)[1]
    f_unr = fg.jvp(loss(False), ODE_ARGS, tan)[1]
    np.testing.assert_allclose(f_adj, f_unr, rtol=1e-11)


def test_closed_form_decay():
    # y' = -k y: y(t) = y0 exp(-k t), dy(1)/dk = -t y0 exp(-k t)
    t = np.array([0.0, 0.5, 1.0])
    g = fg.grad(lambda k: I.odeint(lambda y, t, k: -k * y, np.array([2.0]), t, k, substeps=40)[-1, 0])(0.7)
    np.testing.assert_allclose(g, -2.0 * np.exp(-0.7), rtol=1e-7)


def test_odeint_check_grads_order2():
    # numerical derivatives see the discrete solution; the adjoint differs by O(h^4)
    check_derivatives(Case(ode_case, ODE_ARGS), rtol=1e-4, atol=1e-6)


def test_odeint_float32():
    args32 = tuple(np.asarray(a, np.float32) for a in ODE_ARGS)
    ys = ode_case(*args32)
    assert ys.dtype == np.float32
    g = fg.grad(lambda *a: fnp.sum(ode_case(*a)), argnums=(0, 1, 2))(*args32)
    assert all(np.asarray(x).dtype == np.float32 for x in g)
    np.testing.assert_allclose(ys, ode_case(*ODE_ARGS), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("argnums", [(0, 1, 2), (0,), (1,), (2,)])
def test_odeint_vmap_matches_loop(argnums):
    check_vmap(Case(ode_case, ODE_ARGS), argnums=argnums)


def test_odeint_vmap_of_grad():
    from scipy_harness import no_fallback

    ks = np.array([1.0, 2.0, 3.0])

    def g(k):
        return fg.grad(lambda k: fnp.sum(ode_case(ODE_ARGS[0], k, ODE_ARGS[2])))(k)

    with no_fallback():
        got = fg.vmap(g)(ks)
    np.testing.assert_allclose(got, [g(k) for k in ks], rtol=1e-10)


def test_odeint_fake_device():
    check_fake_device(Case(ode_case, ODE_ARGS, consts=(T,)), rtol=1e-9, atol=1e-12)


def test_odeint_errors():
    with pytest.raises(ValueError, match="method must be 'rk4' or 'dopri5'"):
        I.odeint(lambda y, t: -y, np.ones(1), T, method="lsoda")
    with pytest.raises(ValueError, match="rtol must be a non-negative"):
        I.odeint(lambda y, t: -y, np.ones(1), T, method="dopri5", rtol=-1.0)
    with pytest.raises(ValueError, match="cannot both be 0"):
        I.odeint(lambda y, t: -y, np.ones(1), T, method="dopri5", rtol=0.0, atol=0.0)
    with pytest.raises(FloatingPointError, match="step size underflowed|not finite"):
        I.odeint(lambda y, t: y * y, np.ones(1), np.array([0.0, 2.0]), method="dopri5")
    with pytest.raises(ValueError, match="substeps"):
        I.odeint(lambda y, t: -y, np.ones(1), T, substeps=0)
    with pytest.raises(ValueError, match="1-D array of times"):
        I.odeint(lambda y, t: -y, np.ones(1), np.ones((2, 2)))
    with pytest.raises(TypeError, match="callable"):
        I.odeint(None, np.ones(1), T)
    with pytest.raises(NotImplementedError, match="shared by the batch"):
        fg.vmap(lambda t: I.odeint(lambda y, t: -y, np.ones(1), t))(np.stack([T, T]))
    with pytest.raises(ValueError, match="initial must be None or 0"):
        I.cumulative_trapezoid(Y, initial=1.0)


def test_solve_ivp_front_end():
    te = np.linspace(0.0, 2.0, 6)
    sol = I.solve_ivp(lambda t, y, k: -k * y + fnp.sin(t), (0.0, 2.0), np.array([1.0, 2.0]), t_eval=te, args=(0.7,),
                      substeps=40)
    want = si.solve_ivp(lambda t, y: -0.7 * y + np.sin(t), (0.0, 2.0), [1.0, 2.0], t_eval=te, rtol=1e-11, atol=1e-12)
    assert sol.y.shape == (2, 6)
    np.testing.assert_allclose(sol.y, want.y, atol=1e-8)
    g = fg.grad(lambda k: fnp.sum(I.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.array([1.0]), args=(k,),
                                              substeps=40).y[:, -1]))(0.7)
    np.testing.assert_allclose(g, -np.exp(-0.7), rtol=1e-7)
    with pytest.raises(NotImplementedError, match="RK4"):
        I.solve_ivp(lambda t, y: -y, (0.0, 1.0), np.ones(1), method="LSODA")
    rk45 = I.solve_ivp(lambda t, y, k: -k * y + fnp.sin(t), (0.0, 2.0), np.array([1.0, 2.0]), t_eval=te, args=(0.7,),
                       method="RK45", rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rk45.y, want.y, atol=1e-8)


# --------------------------------------------------------------------------
# odeint: derivatives in the times, adaptive Dormand-Prince, pytree states


def ode_t_case(y0, k, t):
    # numerical derivatives in t see the discrete solution (its step size moves with t): fine steps
    return I.odeint(oscillator, y0, t, k, {"c": 0.3}, substeps=40)


def test_odeint_time_derivative_closed_form():
    # y' = -k y from t0: y(t_i) = y0 exp(-k (t_i - t0)); d/dt_i = -k y(t_i), d/dt0 = k y(t_i)
    k, y0 = 0.7, 2.0
    t = np.array([0.2, 0.5, 1.0])

    def last(t):
        return I.odeint(lambda y, t, k: -k * y, np.array([y0]), t, k, substeps=40)[-1, 0]

    want = y0 * np.exp(-k * (t[-1] - t[0]))
    np.testing.assert_allclose(fg.grad(last)(t), [k * want, 0.0, -k * want], rtol=1e-7)
    np.testing.assert_allclose(fg.jacfwd(last)(t), [k * want, 0.0, -k * want], rtol=1e-7)


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_odeint_time_derivative_adjoint_equals_unrolled(method):
    t = np.array([0.1, 0.7, 1.3, 2.0])

    def loss(adjoint):
        return lambda t, k: fnp.sum(I.odeint(oscillator, ODE_ARGS[0], t, k, {"c": 0.3}, substeps=100,
                                             adjoint=adjoint, method=method, rtol=1e-10, atol=1e-12) ** 2)

    g_adj = fg.grad(loss(True), argnums=(0, 1))(t, 2.0)
    g_unr = fg.grad(loss(False), argnums=(0, 1))(t, 2.0)
    for a, u in zip(g_adj, g_unr):
        np.testing.assert_allclose(a, u, rtol=1e-7, atol=1e-9)
    f_adj = fg.jvp(loss(True), (t, 2.0), (np.array([0.3, -0.1, 0.2, 0.5]), 0.4))[1]
    f_unr = fg.jvp(loss(False), (t, 2.0), (np.array([0.3, -0.1, 0.2, 0.5]), 0.4))[1]
    np.testing.assert_allclose(f_adj, f_unr, rtol=1e-7)


def test_odeint_time_check_grads_order2():
    check_derivatives(Case(ode_t_case, (ODE_ARGS[0], ODE_ARGS[1], np.array([0.1, 0.8, 1.5]))), rtol=1e-4, atol=1e-6)


def dopri_case(y0, k, c, t=T):
    return I.odeint(oscillator, y0, fnp.asarray(t, dtype=fnp.result_type(y0)), k, {"c": c}, method="dopri5",
                    rtol=1e-10, atol=1e-12)


def test_dopri5_matches_scipy():
    ys = dopri_case(*ODE_ARGS)
    want = si.odeint(lambda y, t: [y[1], -2 * y[0] - 0.3 * y[1] + np.sin(t)], ODE_ARGS[0], T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ys, want, atol=1e-8)
    # a loose tolerance is honoured, roughly (the global error is a small multiple of it)
    loose = I.odeint(oscillator, ODE_ARGS[0], T, 2.0, {"c": 0.3}, method="rk45", rtol=1e-4, atol=1e-6)
    assert 0 < np.max(np.abs(loose - want)) < 1e-3


def test_dopri5_adjoint_gradient_equals_unrolled_gradient():
    def loss(adjoint):
        return lambda y0, k, c: fnp.sum(I.odeint(oscillator, y0, T, k, {"c": c}, adjoint=adjoint, method="dopri5",
                                                 rtol=1e-10, atol=1e-12) ** 2)

    g_adj = fg.grad(loss(True), argnums=(0, 1, 2))(*ODE_ARGS)
    g_unr = fg.grad(loss(False), argnums=(0, 1, 2))(*ODE_ARGS)
    for a, u in zip(g_adj, g_unr):
        np.testing.assert_allclose(a, u, rtol=1e-7, atol=1e-9)


def test_dopri5_check_grads_order2():
    # over the first half of T (three output times, the same adaptive path): half the steps to differentiate
    check_derivatives(Case(lambda y0, k, c: dopri_case(y0, k, c, t=T[:3]), ODE_ARGS), rtol=1e-4, atol=1e-6)


def test_dopri5_float32_and_vmap():
    args32 = tuple(np.asarray(a, np.float32) for a in ODE_ARGS)
    ys = I.odeint(oscillator, args32[0], T.astype(np.float32), args32[1], {"c": args32[2]}, method="dopri5",
                  rtol=1e-5, atol=1e-6)
    assert ys.dtype == np.float32
    np.testing.assert_allclose(ys, dopri_case(*ODE_ARGS), rtol=1e-3, atol=1e-4)
    # the batch shares one step-size sequence (from the batch's error norm): equal to tolerance
    from factories import no_fallback

    ks = np.array([1.0, 2.0, 3.0])
    with no_fallback():
        got = fg.vmap(lambda k: dopri_case(ODE_ARGS[0], k, ODE_ARGS[2]))(ks)
    for i, k in enumerate(ks):
        np.testing.assert_allclose(got[i], dopri_case(ODE_ARGS[0], k, ODE_ARGS[2]), atol=1e-8)


def oscillator_tree(s, t, k):
    return {"x": s["v"], "v": -k * s["x"] - 0.3 * s["v"] + fnp.sin(t)}


def test_pytree_state_equals_flat_state():
    def tree(x0, v0, k):
        out = I.odeint(oscillator_tree, {"x": x0, "v": v0}, T, k, substeps=4)
        return fnp.stack([out["x"], out["v"]], axis=1)

    def flat(x0, v0, k):
        return I.odeint(oscillator, fnp.stack([x0, v0]), T, k, {"c": 0.3}, substeps=4)

    args = (np.array(1.0), np.array(0.0), np.array(2.0))
    out = I.odeint(oscillator_tree, {"x": args[0], "v": args[1]}, T, args[2], substeps=4)
    assert set(out) == {"x", "v"} and out["x"].shape == T.shape
    np.testing.assert_allclose(tree(*args), flat(*args), rtol=1e-13)
    for g, w in zip(fg.grad(lambda *a: fnp.sum(tree(*a) ** 2), argnums=(0, 1, 2))(*args),
                    fg.grad(lambda *a: fnp.sum(flat(*a) ** 2), argnums=(0, 1, 2))(*args)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    check_derivatives(Case(tree, args), rtol=1e-4, atol=1e-6)
    check_vmap(Case(tree, args))


def test_pytree_state_mixed_shapes():
    y0 = (np.ones(2), {"m": np.full((2, 2), 0.5)})
    out = I.odeint(lambda s, t: (-s[0], {"m": -2 * s[1]["m"]}), y0, np.array([0.0, 1.0]), substeps=30)
    assert out[0].shape == (2, 2) and out[1]["m"].shape == (2, 2, 2)
    np.testing.assert_allclose(out[1]["m"][-1], 0.5 * np.exp(-2.0), rtol=1e-6)
