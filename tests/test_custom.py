"""custom_jvp, custom_vjp and checkpoint: the rules are used, nest, and batch."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)


# --- custom_jvp: a numerically stable log(1 + exp(x)) --------------------------

def _naive_log1pexp(x):
    return fnp.log(1.0 + fnp.exp(x))


@fg.custom_jvp
def log1pexp(x):
    return fnp.where(x > 30.0, x, fnp.log1p(fnp.exp(fnp.minimum(x, 30.0))))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + fnp.exp(x)))


def test_custom_jvp_rule_is_used_where_autodiff_gives_nan():
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(fg.grad(_naive_log1pexp)(1000.0))
    np.testing.assert_allclose(fg.grad(log1pexp)(1000.0), 1.0)
    np.testing.assert_allclose(fg.jvp(log1pexp, (1000.0,), (2.0,))[1], 2.0)


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_custom_jvp_matches_closed_form_and_higher_order():
    x = np.array([-2.0, 0.0, 1.5])
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(log1pexp(x)))(x), sig)
    np.testing.assert_allclose(fg.vmap(fg.grad(fg.grad(log1pexp)))(x), sig * (1 - sig))
    fg.testing.check_grads(log1pexp, (x,), order=2)


def test_custom_jvp_nondiff_argnums_and_pytrees():
    @fg.custom_jvp
    def scaled(n, p):
        return {"y": p["a"] * n}

    @scaled.defjvp
    def _(n, primals, tangents):
        (p,), (t,) = primals, tangents
        return scaled(n, p), {"y": t["a"] * n * 10.0}  # deliberately "wrong": visible in the result

    scaled.nondiff_argnums = (0,)
    g = fg.grad(lambda a: scaled(3, {"a": a})["y"])(2.0)
    np.testing.assert_allclose(g, 30.0)


# --- custom_vjp -----------------------------------------------------------------

@fg.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (fnp.clip(g, -1.0, 1.0),))


def test_custom_vjp_clipped_gradient():
    f = lambda x: fnp.sum(clip_gradient(x) * 5.0)
    np.testing.assert_allclose(fg.grad(f)(np.array([1.0, 2.0])), [1.0, 1.0])


@fg.custom_vjp
def sin_with_residual(x):
    return fnp.sin(x)


sin_with_residual.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda cos_x, g: (g * cos_x,))


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_custom_vjp_higher_order_through_residuals():
    # grad(grad) differentiates the residual cos(x) computed in fwd
    np.testing.assert_allclose(fg.grad(fg.grad(sin_with_residual))(0.7), -np.sin(0.7))
    np.testing.assert_allclose(fg.hessian(lambda x: fnp.sum(sin_with_residual(x)))(np.array([0.7])), [[-np.sin(0.7)]])
    # forward mode differentiates fwd
    np.testing.assert_allclose(fg.jvp(sin_with_residual, (0.7,), (1.0,))[1], np.cos(0.7))


def test_custom_vjp_under_vmap():
    xs = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(fg.vmap(fg.grad(sin_with_residual))(xs), np.cos(xs))
    np.testing.assert_allclose(fg.vmap(fg.grad(lambda x: clip_gradient(x) * 3.0))(xs), [1.0] * 3)


def test_custom_vjp_implicit_function_fixed_point():
    """d/da of the fixed point z* = cos(a z*) by the implicit function theorem."""

    def solve(a, z0=0.5, iters=200):
        z = z0
        for _ in range(iters):
            z = np.cos(a * z)
        return z

    @fg.custom_vjp
    def fixed_point(a):
        return solve(fg.core.unbox_all(a))

    def fwd(a):
        z = fixed_point(a)
        return z, (a, z)

    def bwd(res, g):
        a, z = res
        # F(z, a) = cos(a z) - z = 0  =>  dz/da = -F_a / F_z
        f_a = -fnp.sin(a * z) * z
        f_z = -fnp.sin(a * z) * a - 1.0
        return (g * (-f_a / f_z),)

    fixed_point.defvjp(fwd, bwd)
    a = 0.9
    eps = 1e-6
    numeric = (solve(a + eps) - solve(a - eps)) / (2 * eps)
    np.testing.assert_allclose(fg.grad(fixed_point)(a), numeric, rtol=1e-6)


def test_custom_vjp_bad_bwd_output_is_a_clear_error():
    @fg.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g,))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument"):
        fg.grad(f)(1.0, 2.0)


def test_custom_rules_missing_raise():
    f = fg.custom_jvp(fnp.sin)
    with pytest.raises(AttributeError, match="defjvp"):
        fg.grad(f)(1.0)


# --- checkpoint --------------------------------------------------------------------

@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_checkpoint_gradients_equal_and_nest():
    layer = lambda w, x: fnp.tanh(x * w)
    ck = fg.checkpoint(layer)

    def deep(w, x, f):
        for _ in range(3):  # (checkpoints in a row; kept short: its native run compiles five programs)
            x = f(w, x)
        return fnp.sum(x)

    w, x = 0.9, np.linspace(-0.5, 1.0, 4)
    g_plain = fg.grad(deep)(w, x, layer)
    g_ck = fg.grad(deep)(w, x, ck)
    np.testing.assert_allclose(g_ck, g_plain, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(fg.grad(deep))(w, x, ck), fg.grad(fg.grad(deep))(w, x, layer), rtol=1e-10)
    np.testing.assert_allclose(fg.jvp(lambda w: deep(w, x, ck), (w,), (1.0,))[1], g_plain, rtol=1e-12)


@pytest.mark.eager_only("of_jit")  # counts Python calls, which jit replaces
def test_checkpoint_recomputes_in_backward():
    calls = []

    def f(x):
        calls.append(1)
        return fnp.sin(x)

    ck = fg.checkpoint(f)
    fg.grad(lambda x: ck(x) * 2.0)(0.3)
    assert len(calls) == 2  # forward once, recomputed once for the backward pass


@pytest.mark.eager_only("of_jit")  # the value is traced by jit, not grad
def test_checkpoint_closing_over_a_traced_value_is_a_clear_error():
    def f(w):
        return fnp.sum(fg.checkpoint(lambda x: x * w)(np.ones(2) * w))

    with pytest.raises(TypeError, match="closes over a value traced by grad.*as arguments"):
        fg.grad(f)(2.0)


def test_checkpoint_closing_over_an_outer_traced_value_is_fine():
    def outer(a):
        inner = fg.checkpoint(lambda x: fnp.sin(a * x))
        return fg.grad(lambda x: inner(x))(0.5)  # a cos(a x)

    a = 0.8
    np.testing.assert_allclose(fg.grad(outer)(a), np.cos(a * 0.5) - a * 0.5 * np.sin(a * 0.5))


# --------------------------------------------------------------------------
# defjvps, and custom_vjp functions whose fwd calls the function itself (JAX's idiom)

def _self_calling_vjp(scale):
    @fg.custom_vjp
    def f(x):
        return fnp.sin(x) * x

    def f_fwd(x):
        return f(x), (x,)

    def f_bwd(res, g):
        (x,) = res
        return (scale * g * (fnp.cos(x) * x + fnp.sin(x)),)

    f.defvjp(f_fwd, f_bwd)
    return f


def test_custom_vjp_fwd_calling_itself_forward_mode_and_hessians():
    f = _self_calling_vjp(1.0)
    x = 0.5
    d1, d2 = np.cos(x) * x + np.sin(x), 2 * np.cos(x) - x * np.sin(x)
    out, t = fg.jvp(f, (x,), (1.0,))
    np.testing.assert_allclose([out, t], [np.sin(x) * x, d1])
    np.testing.assert_allclose(fg.hessian(f)(x), d2)
    xs = np.array([0.5, 1.0])
    np.testing.assert_allclose(fg.jacfwd(fg.jacrev(f))(xs)[[0, 1], [0, 1], [0, 1]],
                               2 * np.cos(xs) - xs * np.sin(xs))
    np.testing.assert_allclose(fg.jacfwd(f)(xs), np.diag(np.cos(xs) * xs + np.sin(xs)))
    np.testing.assert_allclose(fg.vmap(fg.grad(f))(xs), np.cos(xs) * xs + np.sin(xs))


def test_custom_vjp_hessian_uses_the_custom_bwd():
    # a bwd that deliberately doubles the derivative: reverse-mode levels must use it
    f = _self_calling_vjp(2.0)
    np.testing.assert_allclose(fg.grad(f)(0.5), 2 * (np.cos(0.5) * 0.5 + np.sin(0.5)))
    np.testing.assert_allclose(fg.hessian(f)(0.5), 2 * (2 * np.cos(0.5) - 0.5 * np.sin(0.5)))


def test_defjvps_one_rule_per_argument():
    @fg.custom_jvp
    def f(x, y):
        return fnp.sin(x) * y

    f.defjvps(lambda tx, out, x, y: fnp.cos(x) * tx * y, lambda ty, out, x, y: fnp.sin(x) * ty)
    x, y = 0.7, np.array([1.0, -2.0])
    out, t = fg.jvp(f, (x, y), (1.0, np.array([0.5, 0.25])))
    np.testing.assert_allclose(out, np.sin(x) * y)
    np.testing.assert_allclose(t, np.cos(x) * y + np.sin(x) * np.array([0.5, 0.25]))
    gx, gy = fg.grad(lambda x, y: fnp.sum(f(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose([gx], [np.cos(x) * np.sum(y)])
    np.testing.assert_allclose(gy, np.sin(x) * np.ones(2))
    fg.testing.check_grads(lambda x, y: f(x, y), (x, y), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(fg.vmap(f, in_axes=(0, None))(np.array([0.1, 0.2]), y),
                               np.sin([[0.1], [0.2]]) * y)


def test_defjvps_none_rule_and_count_error():
    @fg.custom_jvp
    def g(x, y):
        return x * y

    g.defjvps(lambda tx, out, x, y: tx * y, None)
    assert fg.grad(g, argnums=1)(3.0, 2.0) == 0.0  # no rule for y: zero derivative, by the user's rule
    assert fg.grad(g)(3.0, 2.0) == 2.0
    g.defjvps(lambda tx, out, x, y: tx * y)
    with pytest.raises(TypeError, match="1 rules for 2 differentiable arguments"):
        fg.grad(g)(3.0, 2.0)
