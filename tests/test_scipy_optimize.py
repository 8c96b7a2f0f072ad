"""funcgrad.scipy.optimize: implicit differentiation through minimize and root."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy.optimize import OptimizeResult, minimize, root
from funcgrad.testing import check_grads

from scipy_harness import no_fallback

A = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, -1.0])
TIGHT = {"gtol": 1e-12}


def quad(x, M, b):
    return 0.5 * x @ M @ x - b @ x


def argmin_quad(M, b, method="BFGS"):
    opts = TIGHT if method != "L-BFGS-B" else {"gtol": 1e-12, "ftol": 1e-15}
    return minimize(quad, fnp.zeros(2), args=(M, b), method=method, options=opts).x


def quartic(x, a):
    return fnp.sum((x - a) ** 2) + fnp.sum(x ** 4) + x[0] * x[1] * a[0]


def argmin_quartic(a):
    return minimize(quartic, np.zeros(2), args=(a,), options=TIGHT).x


def cubic_root(a):
    return root(lambda x, a: x ** 3 + x - a, np.ones(2), args=(a,), tol=1e-14).x


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG"])
def test_quadratic_closed_form(method):
    # x* = M^-1 b: dx*/db = M^-1; d<x*, w>/dM = -(M^-1 w) x*^T, symmetrized (only the
    # symmetric part of M enters x^T M x)
    res = minimize(quad, np.zeros(2), args=(A, B), method=method, options={"gtol": 1e-12})
    assert isinstance(res, OptimizeResult) and bool(res.success)
    Mi = np.linalg.inv(A)
    xs = Mi @ B
    np.testing.assert_allclose(res.x, xs, rtol=1e-7)
    np.testing.assert_allclose(res.fun, -0.5 * B @ xs, rtol=1e-7)
    np.testing.assert_allclose(fg.jacobian(lambda b: argmin_quad(A, b, method))(B), Mi, rtol=1e-6)
    np.testing.assert_allclose(fg.jacfwd(lambda b: argmin_quad(A, b, method))(B), Mi, rtol=1e-6)
    w = np.array([0.3, 0.7])
    gM = fg.grad(lambda M: argmin_quad(M, B, method) @ w)(A)
    want = -np.outer(Mi @ w, xs)
    np.testing.assert_allclose(gM, (want + want.T) / 2, rtol=1e-6, atol=1e-9)


def test_minimize_check_grads_order2():
    # finite differences of an iterative solve carry its tolerance: looser than usual
    check_grads(argmin_quartic, (np.array([1.0, 2.0]),), order=2, modes=("fwd", "rev"), rtol=1e-4, atol=1e-5)


def test_root_check_grads_order2_and_closed_form():
    a = np.array([2.0, 10.0])
    np.testing.assert_allclose(cubic_root(a), [1.0, 2.0], rtol=1e-10)
    # x^3 + x = a  ->  dx/da = 1 / (3 x^2 + 1)
    np.testing.assert_allclose(fg.jacobian(cubic_root)(a), np.diag([1 / 4, 1 / 13]), rtol=1e-9)
    check_grads(cubic_root, (a,), order=2, modes=("fwd", "rev"), rtol=1e-5, atol=1e-7)


def test_pytree_args_and_x0_gets_zero():
    def f(x, p):
        return fnp.sum((x - p["a"]) ** 2) * p["s"] + fnp.sum(x ** 4)

    p = {"a": np.array([1.0, -0.5]), "s": np.array(2.0)}
    g = fg.grad(lambda p: fnp.sum(minimize(f, np.zeros(2), args=(p,), options=TIGHT).x))(p)
    eps = 1e-6
    num = (fnp.sum(minimize(f, np.zeros(2), args=({"a": p["a"], "s": p["s"] + eps},), options=TIGHT).x)
           - fnp.sum(minimize(f, np.zeros(2), args=({"a": p["a"], "s": p["s"] - eps},), options=TIGHT).x)) / (2 * eps)
    np.testing.assert_allclose(g["s"], num, rtol=1e-5)
    g0 = fg.grad(lambda x0: fnp.sum(minimize(f, x0, args=(p,), options=TIGHT).x))(np.zeros(2))
    np.testing.assert_array_equal(g0, 0.0)


@pytest.mark.parametrize("fn", [argmin_quartic, cubic_root])
def test_vmap_matches_loop_without_fallback(fn):
    a = np.array([[1.0, 2.0], [3.0, 1.0], [0.5, -1.0]])
    with no_fallback():
        got = fg.vmap(fn)(a)
        jac = fg.vmap(fg.jacobian(fn))(a)
    for k in range(3):
        np.testing.assert_allclose(got[k], fn(a[k]), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(jac[k], fg.jacobian(fn)(a[k]), rtol=1e-5, atol=1e-8)


def test_float32():
    a = np.array([1.0, 2.0], np.float32)
    x = argmin_quartic(a)
    assert x.dtype == np.float32
    assert fg.jacobian(argmin_quartic)(a).dtype == np.float32
    assert cubic_root(a).dtype == np.float32


def test_errors():
    with pytest.raises(ValueError, match="method must be one of"):
        minimize(quartic, np.zeros(2), args=(B,), method="Nelder-Mead")
    with pytest.raises(NotImplementedError, match="bounds"):
        minimize(quartic, np.zeros(2), args=(B,), bounds=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match="method must be one of"):
        root(lambda x: x, np.zeros(2), method="krylov")


def test_device_arrays_say_there_is_no_cupyx_counterpart():
    import fake_backend as fb

    fb.install()
    with pytest.raises(NotImplementedError, match="cupyx.scipy has no optimize.minimize"):
        minimize(quartic, fb.to_fake(np.zeros(2)), args=(fb.to_fake(B),))
    with pytest.raises(NotImplementedError, match="cupyx.scipy has no optimize.root"):
        root(lambda x: x, fb.to_fake(np.ones(2)))
