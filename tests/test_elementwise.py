"""Elementwise primitives: forward values, derivatives to second order in both modes,
broadcasting, complex inputs, dtypes, and the conventions at non-smooth points."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads


# --- input domains ------------------------------------------------------------

def U(lo, hi):
    """Uniform in [lo, hi]."""
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def S(lo, hi):
    """Magnitude in [lo, hi], random sign (keeps away from 0)."""
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def C(rlo, rhi, ilo, ihi):
    """Complex, real part in [rlo, rhi], imaginary part in [ilo, ihi]."""
    return lambda rng, shape: rng.uniform(rlo, rhi, shape) + 1j * rng.uniform(ilo, ihi, shape)


def sample(domain, shape, dtype, seed=0):
    return np.asarray(domain(np.random.default_rng(seed), shape), dtype=dtype)


# name -> (real domain, complex domain or None). Complex domains stay clear of branch cuts.
UNARY = {
    "exp": (U(-2, 2), C(-1, 1, -2, 2)),
    "expm1": (U(-2, 2), C(-1, 1, -2, 2)),
    "exp2": (U(-2, 2), C(-1, 1, -2, 2)),
    "log": (U(0.2, 3), C(0.2, 2, -1.5, 1.5)),
    "log1p": (U(-0.5, 2), C(0.2, 2, -1.5, 1.5)),
    "log2": (U(0.2, 3), C(0.2, 2, -1.5, 1.5)),
    "log10": (U(0.2, 3), C(0.2, 2, -1.5, 1.5)),
    "sqrt": (U(0.2, 3), C(0.2, 2, -1.5, 1.5)),
    "cbrt": (S(0.2, 3), None),
    "square": (U(-2, 2), C(-1, 1, -1, 1)),
    "reciprocal": (S(0.5, 2), C(0.5, 2, -1, 1)),
    "abs": (S(0.2, 2), C(0.3, 1, 0.3, 1)),
    "absolute": (S(0.2, 2), C(-1, -0.3, 0.3, 1)),
    "fabs": (S(0.2, 2), None),
    "sin": (U(-2, 2), C(-1, 1, -1, 1)),
    "cos": (U(-2, 2), C(-1, 1, -1, 1)),
    "tan": (U(-1.2, 1.2), C(-0.5, 0.5, -0.5, 0.5)),
    "arcsin": (U(-0.8, 0.8), C(-0.5, 0.5, -0.5, 0.5)),
    "arccos": (U(-0.8, 0.8), C(-0.5, 0.5, -0.5, 0.5)),
    "arctan": (U(-2, 2), C(-0.5, 0.5, -0.5, 0.5)),
    "sinh": (U(-2, 2), C(-1, 1, -1, 1)),
    "cosh": (U(-2, 2), C(-1, 1, -1, 1)),
    "tanh": (U(-2, 2), C(-1, 1, -1, 1)),
    "arcsinh": (U(-2, 2), C(-0.5, 0.5, -0.5, 0.5)),
    "arccosh": (U(1.3, 3), C(1.3, 3, 0.2, 1)),
    "arctanh": (U(-0.8, 0.8), C(-0.5, 0.5, -0.5, 0.5)),
    "sinc": (U(-2, 2), C(-1, 1, -1, 1)),
    "deg2rad": (U(-2, 2), None),
    "rad2deg": (U(-2, 2), None),
    "radians": (U(-2, 2), None),
    "degrees": (U(-2, 2), None),
    "real": (U(-2, 2), C(-1, 1, -1, 1)),
    "imag": (U(-2, 2), C(-1, 1, -1, 1)),
    "conj": (U(-2, 2), C(-1, 1, -1, 1)),
    "conjugate": (U(-2, 2), C(-1, 1, -1, 1)),
    "angle": (S(0.2, 2), C(-1, 1, 0.3, 1)),
    "negative": (U(-2, 2), C(-1, 1, -1, 1)),
    "positive": (U(-2, 2), C(-1, 1, -1, 1)),
}

# name -> (domain of x, domain of y, complex domain or None). Pairs stay clear of kinks,
# ties and jumps (e.g. x / y away from integers for mod).
BINARY = {
    "add": (U(-2, 2), U(-2, 2), C(-1, 1, -1, 1)),
    "subtract": (U(-2, 2), U(-2, 2), C(-1, 1, -1, 1)),
    "multiply": (U(-2, 2), U(-2, 2), C(-1, 1, -1, 1)),
    "divide": (U(-2, 2), S(0.5, 2), C(0.5, 1.5, -1, 1)),
    "true_divide": (U(-2, 2), S(0.5, 2), C(0.5, 1.5, -1, 1)),
    "power": (U(0.5, 2), U(-2, 2), C(0.5, 1.5, -1, 1)),
    "float_power": (U(0.5, 2), U(-2, 2), None),
    "maximum": (S(0.5, 1), U(-0.4, 0.4), None),
    "minimum": (S(0.5, 1), U(-0.4, 0.4), None),
    "fmax": (S(0.5, 1), U(-0.4, 0.4), None),
    "fmin": (S(0.5, 1), U(-0.4, 0.4), None),
    "arctan2": (U(-2, 2), U(0.5, 2), None),
    "hypot": (S(0.5, 2), S(0.5, 2), None),
    "logaddexp": (U(-2, 2), U(-2, 2), None),
    "logaddexp2": (U(-2, 2), U(-2, 2), None),
    "mod": (S(2.2, 2.6), U(0.95, 1.05), None),
    "remainder": (S(2.2, 2.6), U(0.95, 1.05), None),
    "fmod": (S(2.2, 2.6), U(0.95, 1.05), None),
    "copysign": (S(0.5, 2), S(0.5, 2), None),
}


# --- forward values -------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_unary_forward_matches_numpy(name, dtype):
    real_dom, cplx_dom = UNARY[name]
    if dtype is np.complex128 and cplx_dom is None:
        pytest.skip("real-only function")
    x = sample(cplx_dom if dtype is np.complex128 else real_dom, (2, 3), dtype)
    out = getattr(fnp, name)(x)
    expected = getattr(np, name)(x)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_forward_matches_numpy(name, dtype):
    dx, dy, _ = BINARY[name]
    x, y = sample(dx, (2, 3), dtype), sample(dy, (3,), dtype, seed=1)
    for a, b in [(x, y), (x, float(y[0])), (float(x[0, 0]), y)]:
        out, expected = getattr(fnp, name)(a, b), getattr(np, name)(a, b)
        assert np.result_type(out) == np.result_type(expected)
        np.testing.assert_array_equal(out, expected)


def test_other_forward_values():
    x = np.array([-2.0, np.nan, 0.5, np.inf, -np.inf], dtype=np.float32)
    out = fnp.nan_to_num(x, nan=1.0, posinf=7.0)
    np.testing.assert_array_equal(out, np.nan_to_num(x, nan=1.0, posinf=7.0))
    assert out.dtype == np.float32
    a = np.linspace(-2, 2, 7)
    np.testing.assert_array_equal(fnp.clip(a, -1, 1), np.clip(a, -1, 1))
    np.testing.assert_array_equal(fnp.clip(a, None, 1), np.clip(a, None, 1))
    np.testing.assert_array_equal(fnp.clip(a, min=0.5), np.clip(a, 0.5, None))
    np.testing.assert_array_equal(fnp.clip(a, 1.0, -1.0), np.clip(a, 1.0, -1.0))  # a_min > a_max: a_max
    np.testing.assert_array_equal(fnp.where(a > 0, a, -a), np.where(a > 0, a, -a))
    np.testing.assert_array_equal(fnp.where(a > 0)[0], np.nonzero(a > 0)[0])
    np.testing.assert_array_equal(fnp.angle(1j, deg=True), 90.0)
    assert fnp.abs is fnp.absolute and fnp.remainder is fnp.mod and fnp.true_divide is fnp.divide


# --- derivatives against numerical differences, to second order ------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_unary_check_grads(name, dtype):
    real_dom, cplx_dom = UNARY[name]
    if dtype is np.complex128 and cplx_dom is None:
        pytest.skip("real-only function")
    x = sample(cplx_dom if dtype is np.complex128 else real_dom, (2, 3), dtype)
    check_grads(getattr(fnp, name), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_binary_check_grads(name, dtype):
    dx, dy, dc = BINARY[name]
    if dtype is np.complex128:
        if dc is None:
            pytest.skip("no complex version")
        dx = dy = dc
    x, y = sample(dx, (2, 3), dtype), sample(dy, (3,), dtype, seed=1)  # y broadcasts
    check_grads(getattr(fnp, name), (x, y), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_python_scalars(name):
    dx, dy, _ = BINARY[name]
    x, y = sample(dx, (4,), np.float64), sample(dy, (4,), np.float64, seed=1)
    f = getattr(fnp, name)
    check_grads(lambda a: f(a, float(y[0])), (x,), order=2)
    check_grads(lambda b: f(float(x[0]), b), (y,), order=2)
    x32 = x.astype(np.float32)
    assert fg.grad(lambda a: fnp.sum(f(a, float(y[0]))))(x32).dtype == np.float32


@settings(max_examples=25, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       seed=st.integers(0, 2**16), name=st.sampled_from(sorted(BINARY)))
def test_binary_broadcasting(shapes, seed, name):
    (sx, sy), _ = shapes
    dx, dy, _ = BINARY[name]
    x, y = sample(dx, sx, np.float64, seed), sample(dy, sy, np.float64, seed + 1)
    f = getattr(fnp, name)
    np.testing.assert_array_equal(f(x, y), getattr(np, name)(x, y))
    w = sample(U(-1, 1), np.broadcast_shapes(sx, sy), np.float64, seed + 2)
    gx, gy = fg.grad(lambda a, b: fnp.sum(f(a, b) * w), argnums=(0, 1))(x, y)
    assert np.shape(gx) == sx and np.shape(gy) == sy
    # values: central differences of sum(f * w) along random directions
    rng = np.random.default_rng(seed)
    vx, vy = rng.standard_normal(sx), rng.standard_normal(sy)
    eps = 1e-6
    num = (np.sum(getattr(np, name)(x + eps * vx, y + eps * vy) * w)
           - np.sum(getattr(np, name)(x - eps * vx, y - eps * vy) * w)) / (2 * eps)
    np.testing.assert_allclose(np.sum(gx * vx) + np.sum(gy * vy), num, rtol=1e-5, atol=1e-6)
    check_grads(f, (x, y), order=1, modes=("fwd", "rev"), seed=seed)


def test_box_operators_reach_the_elementwise_functions():
    x = np.array([0.7, 1.3, 2.2])
    y = np.array([0.9, 1.1, 1.05])
    check_grads(lambda a: a ** 2 + 2 ** a + a ** a, (x,))
    check_grads(lambda a: abs(-a) - (+a) / 2 + 2 / a, (x,))
    check_grads(lambda a, b: a % b + (3 * a) % b + 7.0 % b, (x, y))
    gx = fg.grad(lambda a: fnp.sum(a ** 3))(np.array([-2.0, 2.0]))
    np.testing.assert_allclose(gx, [12.0, 12.0])


# --- closed forms ---------------------------------------------------------------

X = np.array([-1.3, -0.4, 0.2, 0.9, 1.7])


def elementwise_grad(f):
    return lambda x: fg.grad(lambda v: fnp.sum(f(v)))(x)


@pytest.mark.parametrize("name, deriv, xs", [
    ("tanh", lambda x: 1 - np.tanh(x) ** 2, X),
    ("exp", np.exp, X),
    ("expm1", np.exp, X),
    ("exp2", lambda x: np.exp2(x) * np.log(2), X),
    ("log", lambda x: 1 / x, np.abs(X)),
    ("log1p", lambda x: 1 / (1 + x), np.abs(X)),
    ("log2", lambda x: 1 / (x * np.log(2)), np.abs(X)),
    ("log10", lambda x: 1 / (x * np.log(10)), np.abs(X)),
    ("sqrt", lambda x: 0.5 / np.sqrt(x), np.abs(X)),
    ("cbrt", lambda x: 1 / (3 * np.cbrt(x) ** 2), X),
    ("reciprocal", lambda x: -1 / x ** 2, X),
    ("arcsin", lambda x: 1 / np.sqrt(1 - x ** 2), X / 2),
    ("arccos", lambda x: -1 / np.sqrt(1 - x ** 2), X / 2),
    ("arctan", lambda x: 1 / (1 + x ** 2), X),
    ("sinh", np.cosh, X),
    ("cosh", np.sinh, X),
    ("arcsinh", lambda x: 1 / np.sqrt(1 + x ** 2), X),
    ("arccosh", lambda x: 1 / np.sqrt(x ** 2 - 1), np.abs(X) + 1.1),
    ("arctanh", lambda x: 1 / (1 - x ** 2), X / 2),
    ("tan", lambda x: 1 / np.cos(x) ** 2, X / 2),
    ("abs", np.sign, X),
    ("fabs", np.sign, X),
    ("deg2rad", lambda x: np.full_like(x, np.pi / 180), X),
    ("rad2deg", lambda x: np.full_like(x, 180 / np.pi), X),
    ("sinc", lambda x: (np.cos(np.pi * x) - np.sinc(x)) / x, X),
])
def test_closed_form_first_derivatives(name, deriv, xs):
    np.testing.assert_allclose(elementwise_grad(getattr(fnp, name))(xs), deriv(xs), rtol=1e-12, atol=1e-14)
    _, t = fg.jvp(getattr(fnp, name), (xs,), (np.ones_like(xs),))
    np.testing.assert_allclose(t, deriv(xs), rtol=1e-12, atol=1e-14)


def test_closed_form_second_derivatives():
    d2 = lambda f: elementwise_grad(elementwise_grad(f))  # noqa: E731
    t = np.tanh(X)
    np.testing.assert_allclose(d2(fnp.tanh)(X), -2 * t * (1 - t ** 2), rtol=1e-12)
    np.testing.assert_allclose(d2(fnp.sin)(X), -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(d2(fnp.arctan)(X), -2 * X / (1 + X ** 2) ** 2, rtol=1e-12)
    np.testing.assert_allclose(d2(fnp.log)(np.abs(X)), -1 / X ** 2, rtol=1e-12)
    np.testing.assert_allclose(d2(fnp.sqrt)(np.abs(X)), -0.25 * np.abs(X) ** -1.5, rtol=1e-12)
    np.testing.assert_allclose(d2(fnp.abs)(X), 0.0)


def test_sinc_derivatives_at_and_near_zero():
    d = fg.grad
    assert d(fnp.sinc)(0.0) == 0.0
    np.testing.assert_allclose(d(d(fnp.sinc))(0.0), -np.pi ** 2 / 3, rtol=1e-14)
    np.testing.assert_allclose(d(d(d(fnp.sinc)))(0.0), 0.0, atol=1e-14)
    np.testing.assert_allclose(d(d(d(d(fnp.sinc))))(0.0), np.pi ** 4 / 5, rtol=1e-14)
    # the series (|pi x| < 1) and the closed form agree across the switch and with the formula
    xs = np.array([1e-6, 1e-3, 0.1, 1 / np.pi - 1e-9, 1 / np.pi + 1e-9, 0.5])
    closed = (np.cos(np.pi * xs) - np.sinc(xs)) / xs
    np.testing.assert_allclose(elementwise_grad(fnp.sinc)(xs)[2:], closed[2:], rtol=1e-11)
    np.testing.assert_allclose(elementwise_grad(fnp.sinc)(xs)[:2], -np.pi ** 2 / 3 * xs[:2], rtol=1e-5)
    # second derivative: pi^2 f''(pi x), f''(u) = ((2 - u^2) sin u - 2 u cos u) / u^3
    u = np.pi * xs[2:]
    second = np.pi ** 2 * ((2 - u ** 2) * np.sin(u) - 2 * u * np.cos(u)) / u ** 3
    np.testing.assert_allclose(elementwise_grad(elementwise_grad(fnp.sinc))(xs[2:]), second, rtol=1e-9)
    # float32 stays float32, and is accurate at 0 and near it
    x32 = np.array([0.0, 1e-3, 0.3], dtype=np.float32)
    g32 = elementwise_grad(fnp.sinc)(x32)
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, elementwise_grad(fnp.sinc)(x32.astype(np.float64)), rtol=1e-5, atol=1e-6)
    check_grads(fnp.sinc, (np.array([0.0, 0.05, -0.2]),), order=2)
    check_grads(fnp.sinc, (np.array([0.0, 0.05 + 0.1j, -0.2j]),), order=2)


def test_binary_closed_forms():
    x1, x2 = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.4, -0.7])
    g1, g2 = fg.grad(lambda a, b: fnp.sum(fnp.arctan2(a, b)), argnums=(0, 1))(x1, x2)
    r2 = x1 ** 2 + x2 ** 2
    np.testing.assert_allclose(g1, x2 / r2, rtol=1e-12)
    np.testing.assert_allclose(g2, -x1 / r2, rtol=1e-12)
    g1, g2 = fg.grad(lambda a, b: fnp.sum(fnp.hypot(a, b)), argnums=(0, 1))(x1, x2)
    np.testing.assert_allclose(g1, x1 / np.sqrt(r2), rtol=1e-12)
    np.testing.assert_allclose(g2, x2 / np.sqrt(r2), rtol=1e-12)
    g1, g2 = fg.grad(lambda a, b: fnp.sum(fnp.logaddexp(a, b)), argnums=(0, 1))(x1, x2)
    softmax = np.exp(x1) / (np.exp(x1) + np.exp(x2))
    np.testing.assert_allclose(g1, softmax, rtol=1e-12)
    np.testing.assert_allclose(g2, 1 - softmax, rtol=1e-12)
    g1, g2 = fg.grad(lambda a, b: fnp.sum(fnp.logaddexp2(a, b)), argnums=(0, 1))(x1, x2)
    np.testing.assert_allclose(g1, 2 ** x1 / (2 ** x1 + 2 ** x2), rtol=1e-12)
    g1, g2 = fg.grad(lambda a, b: fnp.sum(fnp.divide(a, b)), argnums=(0, 1))(x1, x2)
    np.testing.assert_allclose(g2, -x1 / x2 ** 2, rtol=1e-12)
    # mod: slope 1 in x, -floor(x / y) in y; fmod: -trunc(x / y)
    a, b = np.array([-2.5, 2.5, 7.3]), np.array([1.0, 1.0, -2.0])
    for fn, q in [(fnp.mod, np.floor), (fnp.fmod, np.trunc)]:
        ga, gb = fg.grad(lambda u, v: fnp.sum(fn(u, v)), argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(ga, 1.0)
        np.testing.assert_allclose(gb, -q(a / b))
    # the quotient matches what numpy computed, also where x / y rounds to an integer
    gb = fg.grad(lambda v: fnp.fmod(1.0, v))(0.1)
    np.testing.assert_allclose(gb, -9.0)
    # copysign: slope +1 or -1 in x, none in y
    gx, gy = fg.grad(lambda u, v: fnp.sum(fnp.copysign(u, v)), argnums=(0, 1))(
        np.array([1.5, -1.5, 2.0, -0.5]), np.array([1.0, 1.0, -3.0, -1.0]))
    np.testing.assert_array_equal(gx, [1.0, -1.0, -1.0, 1.0])
    np.testing.assert_array_equal(gy, 0.0)


# --- power ------------------------------------------------------------------------

def test_power_negative_base_integer_exponent():
    d = fg.grad
    for p in (3, 3.0, np.float64(3.0)):
        assert d(lambda x: fnp.power(x, p))(-2.0) == 12.0
        assert d(d(lambda x: fnp.power(x, p)))(-2.0) == -12.0
    assert d(lambda x: x ** 2)(-2.0) == -4.0
    assert d(lambda x: x ** -1)(-2.0) == -0.25
    xs = np.array([-2.0, -1.5, 0.0, 1.5])
    ys = np.array([3.0, 2.0, 2.0, -1.0])
    gx, gy = fg.grad(lambda x, y: fnp.sum(fnp.power(x, y)), argnums=(0, 1))(xs, ys)
    np.testing.assert_allclose(gx, ys * xs ** (ys - 1))
    # d/dy: x^y log(x); nan for a negative base (no derivative in y there, as in JAX and
    # PyTorch), 0 at base 0
    np.testing.assert_allclose(gy, [np.nan, np.nan, 0.0, np.log(1.5) / 1.5])
    # the Hessian involves d/dy, so it is nan throughout (JAX and PyTorch agree) ...
    h = fg.hessian(lambda v: fnp.power(v[0], v[1]))(np.array([-2.0, 3.0]))
    assert np.all(np.isnan(h))
    # ... but second derivatives in x alone stay finite
    np.testing.assert_allclose(d(d(lambda x, y: fnp.power(x, y)))(-2.0, 3.0), -12.0)
    # exponent traced, base a negative Python number
    assert np.isnan(d(lambda y: (-2.0) ** y)(3.0))
    # forward mode agrees
    _, t = fg.jvp(lambda x: fnp.power(x, ys), (xs,), (np.ones(4),))
    np.testing.assert_allclose(t, gx)
    _, t = fg.jvp(lambda y: fnp.power(xs, y), (ys,), (np.ones(4),))
    np.testing.assert_allclose(t, gy)
    # integer exponents on negative bases: numerical check, both modes, second order
    check_grads(lambda x: fnp.power(x, np.array([2.0, 3.0, -1.0, 4.0])), (np.array([-2.0, -0.7, -1.3, -0.5]),))
    check_grads(lambda x: x ** 3, (np.array([-2.0, -0.7], dtype=np.float32),))


def _fixture_value(v):
    return float(v)  # JSON holds "nan", "inf", "-inf" as strings


def test_power_edges_match_jax_or_pytorch():
    """d(x ** y) at zero and negative bases against JAX's and PyTorch's numbers
    (tests/fixtures/power_edges.json, from make_power_edges.py). Where the two agree
    funcgrad gives the same; where they differ it takes one of them (documented in
    docs/sharp-bits.md: d/dx 0 ** 0 = 0 as PyTorch, d/dy 0 ** -1 = nan as JAX)."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "fixtures" / "power_edges.json").read_text())
    with np.errstate(all="ignore"):
        for row in data["rows"]:
            x, y = row["x"], row["y"]
            jax_g = [_fixture_value(v) for v in row["jax"]]
            torch_g = [_fixture_value(v) for v in row["torch"]]
            rev = fg.grad(lambda a, b: fnp.power(a, b), argnums=(0, 1))(x, y)
            fwd = [fg.jvp(lambda a: fnp.power(a, y), (x,), (1.0,))[1], fg.jvp(lambda b: fnp.power(x, b), (y,), (1.0,))[1]]
            for ours in (rev, fwd):
                for k in range(2):
                    same = [np.array_equal(ours[k], ref[k], equal_nan=True) for ref in (jax_g, torch_g)]
                    assert any(same), (x, y, k, ours[k], jax_g[k], torch_g[k])
                    if np.array_equal(jax_g[k], torch_g[k], equal_nan=True):
                        assert all(same), (x, y, k)


def test_power_zero_base_and_zero_exponent():
    d = fg.grad
    gx, gy = d(lambda x, y: fnp.power(x, y), argnums=(0, 1))(0.0, 0.0)
    assert gx == 0.0 and gy == 0.0
    gx, gy = d(lambda x, y: fnp.power(x, y), argnums=(0, 1))(0.0, 2.0)
    assert gx == 0.0 and gy == 0.0
    assert d(lambda x: fnp.power(x, 0))(0.0) == 0.0
    assert d(lambda x: fnp.power(x, 1))(0.0) == 1.0
    assert d(d(lambda x: fnp.power(x, 2)))(0.0) == 2.0
    assert d(lambda y: fnp.power(0.0, y))(2.0) == 0.0
    gy = d(lambda y: fnp.sum(fnp.power(np.array([0.0, 3.0, 2.0]), y)))(2.0)
    np.testing.assert_allclose(gy, 9 * np.log(3) + 4 * np.log(2))
    # second order with x == y == 0 in an array exponent: no nan
    H = fg.hessian(lambda v: fnp.sum(fnp.power(v[:2], v[2:])))(np.array([0.0, 2.0, 0.0, 3.0]))
    assert np.all(np.isfinite(H))


def test_complex_power_integer_exponent():
    z = np.array([0.5 + 1j, -1.2 + 0.3j, -0.4 - 0.9j])
    for k in (2, 3, -2):
        check_grads(lambda v: fnp.power(v, k), (z,), order=2)
    check_grads(lambda v: fnp.power(v, np.array([2, 3, 4])), (z,), order=2)
    _, t = fg.jvp(lambda v: v ** 3, (z,), (np.ones_like(z),))
    np.testing.assert_allclose(t, 3 * z ** 2)


def test_float_power_keeps_cotangent_dtype():
    x = np.array([0.5, 1.5], dtype=np.float32)
    g = fg.grad(lambda v: fnp.sum(fnp.float_power(v, 2.5)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2.5 * x.astype(np.float64) ** 1.5, rtol=1e-6)


# --- selection: ties, where, clip -----------------------------------------------------

@pytest.mark.parametrize("fn", [fnp.maximum, fnp.minimum, fnp.fmax, fnp.fmin])
def test_max_min_ties_split_half_half(fn):
    gx, gy = fg.grad(lambda a, b: fnp.sum(fn(a, b)), argnums=(0, 1))(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 5.0]))
    big = fn in (fnp.maximum, fnp.fmax)
    np.testing.assert_array_equal(gx, [0.5, 1.0, 0.0] if big else [0.5, 0.0, 1.0])
    np.testing.assert_array_equal(gy, [0.5, 0.0, 1.0] if big else [0.5, 1.0, 0.0])
    assert fg.grad(lambda a: fn(a, a))(1.5) == 1.0
    # forward mode splits the same way
    _, t = fg.jvp(lambda a: fn(a, 1.0), (np.array([1.0, 2.0, 0.0]),), (np.ones(3),))
    np.testing.assert_array_equal(t, [0.5, 1.0 if big else 0.0, 0.0 if big else 1.0])
    # broadcasting: one scalar against many ties
    gy = fg.grad(lambda b: fnp.sum(fn(np.array([1.0, 1.0, 1.0]), b)))(1.0)
    assert gy == 1.5


def test_relu_and_nan_handling():
    g = fg.grad(lambda x: fnp.sum(fnp.maximum(x, 0.0)))(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])
    # fmax ignores a nan: the derivative goes to the other argument
    gx, gy = fg.grad(lambda a, b: fnp.sum(fnp.fmax(a, b)), argnums=(0, 1))(np.array([1.0, np.nan]), np.array([np.nan, 2.0]))
    np.testing.assert_array_equal(gx, [1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0])


def test_where():
    c = np.array([True, False, True])
    x, y = np.array([1.0, 2.0, 3.0]), np.array([[4.0], [5.0]])  # broadcasts to (2, 3)
    gx, gy = fg.grad(lambda a, b: fnp.sum(fnp.where(c, a, b) * 2.0), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [4.0, 0.0, 4.0])
    np.testing.assert_array_equal(gy, [[2.0], [2.0]])
    check_grads(lambda a, b: fnp.where(c, a, b), (x, y), order=2)
    check_grads(lambda a: fnp.where(a > 2.5, a ** 2, -a), (x.astype(np.float32),), order=2)
    # a Python scalar on either side, and the classic leaky-ReLU
    g = fg.grad(lambda a: fnp.sum(fnp.where(a > 0, a, 0.1 * a)))(np.array([-1.0, 2.0]))
    np.testing.assert_allclose(g, [0.1, 1.0])
    g = fg.grad(lambda a: fnp.sum(fnp.where(a > 0, 0.0, a)))(np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(g, [1.0, 0.0])
    # a traced condition carries no derivative
    g = fg.grad(lambda a: fnp.sum(fnp.where(a, a, 2 * a)))(np.array([0.0, 2.0]))
    np.testing.assert_array_equal(g, [2.0, 1.0])
    # one argument: nonzero, no derivative
    idx = fg.grad(lambda a: fnp.sum(a[fnp.where(a > 1)]))(np.array([0.5, 2.0, 3.0]))
    np.testing.assert_array_equal(idx, [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="both x and y"):
        fnp.where(c, x)


def test_clip_gradients_flow_to_active_bounds():
    a = np.array([-2.0, -0.5, 0.3, 0.9, 3.0])
    lo, hi = np.full(5, -1.0), np.full(5, 1.0)
    ga, glo, ghi = fg.grad(lambda u, l, h: fnp.sum(fnp.clip(u, l, h)), argnums=(0, 1, 2))(a, lo, hi)
    np.testing.assert_array_equal(ga, [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(glo, [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(ghi, [0, 0, 0, 0, 1])
    # scalar bounds: their cotangent sums over the elements they clip
    glo, ghi = fg.grad(lambda l, h: fnp.sum(fnp.clip(a, l, h)), argnums=(0, 1))(-1.0, 1.0)
    assert glo == 1.0 and ghi == 1.0
    # None bounds, numpy 2 min/max spellings, the Box method
    np.testing.assert_array_equal(fg.grad(lambda u: fnp.sum(fnp.clip(u, None, 1.0)))(a), [1, 1, 1, 1, 0])
    np.testing.assert_array_equal(fg.grad(lambda u: fnp.sum(fnp.clip(u, min=0.0)))(a), [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(fg.grad(lambda u: fnp.sum(u.clip(0.0, 1.0)))(a), [0, 0, 1, 1, 0])
    np.testing.assert_array_equal(fg.grad(lambda u: fnp.sum(fnp.clip(u, None, None)))(a), 1.0)
    # ties split half/half, like maximum/minimum
    ga, glo = fg.grad(lambda u, l: fnp.sum(fnp.clip(u, l, 5.0)), argnums=(0, 1))(np.array([1.0, 2.0]), 1.0)
    np.testing.assert_array_equal(ga, [0.5, 1.0])
    assert glo == 0.5
    # numerical check in both modes with array bounds that are active
    lo, hi = np.array([-1.0, 0.5, -3.0, 0.0, -0.2]), np.array([1.0, 2.0, -2.5, 0.5, 0.1])
    check_grads(fnp.clip, (a, lo, hi), order=2)
    check_grads(lambda u, h: fnp.clip(u, max=h), (a.astype(np.float32), hi.astype(np.float32)), order=2)
    with pytest.raises(TypeError, match="lower bound once"):
        fnp.clip(a, 0.0, min=0.0)


def test_nan_to_num():
    x = np.array([1.0, np.nan, np.inf, -2.0, -np.inf])
    g = fg.grad(lambda v: fnp.sum(fnp.nan_to_num(v, posinf=5.0, neginf=-5.0) * 3.0))(x)
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.0, 3.0, 0.0])
    check_grads(fnp.nan_to_num, (np.array([1.0, -2.0]),), order=2)
    z = np.array([complex(1.0, np.nan), complex(np.inf, 2.0)])
    _, t = fg.jvp(fnp.nan_to_num, (z,), (np.array([1 + 1j, 1 + 1j]),))
    np.testing.assert_array_equal(t, [1.0, 1j])
    check_grads(fnp.nan_to_num, (np.array([1.0 + 2j, -0.5j]),), order=2)


# --- complex conventions (JAX's) -----------------------------------------------------

def test_complex_real_valued_functions_follow_jax():
    z = 3.0 + 4.0j
    np.testing.assert_allclose(fg.grad(fnp.abs)(z), 0.6 - 0.8j)
    np.testing.assert_allclose(fg.grad(fnp.real)(z), 1.0)
    np.testing.assert_allclose(fg.grad(fnp.imag)(z), -1j)
    np.testing.assert_allclose(fg.grad(fnp.angle)(z), -1j / z)
    np.testing.assert_allclose(fg.grad(lambda v: fnp.angle(v, deg=True))(z), -1j / z * 180 / np.pi)
    # angle equals arctan2(imag, real), and so do its derivatives
    zs = np.array([1 + 1j, -0.5 + 2j, 0.3 - 0.7j])
    g1 = fg.grad(lambda v: fnp.sum(fnp.angle(v)))(zs)
    g2 = fg.grad(lambda v: fnp.sum(fnp.arctan2(fnp.imag(v), fnp.real(v))))(zs)
    np.testing.assert_allclose(g1, g2, rtol=1e-12)
    # |z|^2 = z conj(z): gradient 2 conj(z) in this convention
    np.testing.assert_allclose(fg.grad(lambda v: fnp.real(v * fnp.conj(v)))(z), 2 * np.conj(z))
    # abs of a real number
    np.testing.assert_array_equal(elementwise_grad(fnp.abs)(np.array([-2.0, 0.0, 3.0])), [-1.0, 0.0, 1.0])
    # angle of real input: piecewise constant
    np.testing.assert_array_equal(elementwise_grad(fnp.angle)(np.array([-2.0, 3.0])), 0.0)


def test_singular_points_give_zero_not_nan():
    assert fg.grad(fnp.abs)(0.0) == 0.0
    assert fg.grad(fnp.abs)(0j) == 0
    gx, gy = fg.grad(fnp.arctan2, argnums=(0, 1))(0.0, 0.0)
    assert gx == 0.0 and gy == 0.0
    gx, gy = fg.grad(fnp.hypot, argnums=(0, 1))(0.0, 0.0)
    assert gx == 0.0 and gy == 0.0
    assert fg.grad(fnp.angle)(0j) == 0
    for a, b, ga, gb in [(-np.inf, -np.inf, 0.5, 0.5), (np.inf, np.inf, 0.5, 0.5), (np.inf, 1.0, 1.0, 0.0),
                         (1.0, -np.inf, 1.0, 0.0)]:
        for fn in (fnp.logaddexp, fnp.logaddexp2):
            assert fg.grad(fn, argnums=(0, 1))(a, b) == (ga, gb)


# --- dtypes -------------------------------------------------------------------------

_seen: list = []
_probe = fg.primitive(lambda x: x, "dtype_probe")
fg.defvjp(_probe, lambda g, ans, x: _seen.append(fnp.result_type(g)) or g)
fg.defjvp(_probe, lambda t, ans, x: _seen.append(fnp.result_type(t)) or t)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32_stays_float32_inside_the_graph(name):
    """Cotangents and tangents that a rule produces keep float32 (not only after the final cast)."""
    fn = getattr(fnp, name)
    x = sample(UNARY[name][0], (3,), np.float32)
    _seen.clear()
    g = fg.grad(lambda v: fnp.sum(fn(_probe(v))))(x)
    _, t = fg.jvp(lambda v: _probe(fn(v)), (x,), (np.ones_like(x),))
    assert g.dtype == np.float32 and t.dtype == np.float32
    assert _seen == [np.float32, np.float32]
    # second order too
    _seen.clear()
    fg.grad(lambda v: fnp.sum(fg.grad(lambda w: fnp.sum(fn(_probe(w))))(v)))(x)
    assert _seen and all(d == np.float32 for d in _seen)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float32_stays_float32_inside_the_graph(name):
    fn = getattr(fnp, name)
    dx, dy, _ = BINARY[name]
    x, y = sample(dx, (2, 3), np.float32), sample(dy, (3,), np.float32, seed=1)
    _seen.clear()
    gx, gy = fg.grad(lambda a, b: fnp.sum(fn(_probe(a), _probe(b))), argnums=(0, 1))(x, y)
    assert gx.dtype == gy.dtype == np.float32
    expected = fnp.result_type(fn(x, y))  # float64 only for float_power
    _, t = fg.jvp(lambda a, b: _probe(fn(a, b)), (x, y), (np.ones_like(x), np.ones_like(y)))
    assert t.dtype == expected
    assert _seen == [np.float32, np.float32, expected]
    # a Python scalar on the other side keeps float32 too
    _seen.clear()
    fg.grad(lambda a: fnp.sum(fn(_probe(a), float(y[0]))))(x)
    fg.grad(lambda b: fnp.sum(fn(float(x[0, 0]), _probe(b))))(y)
    assert _seen == [np.float32, np.float32]


OTHERS = {
    "where": lambda v: fnp.where(v > 0, v, 0.5 * v),
    "where-scalar": lambda v: fnp.where(v > 0, 1.0, v),
    "clip": lambda v: fnp.clip(v, -0.5, 0.5),
    "clip-array": lambda v: fnp.clip(v, v[::-1] * 0.5, None),
    "nan_to_num": fnp.nan_to_num,
    "angle-deg": lambda v: fnp.angle(v, deg=True),
    "sinc-second": lambda v: elementwise_grad(elementwise_grad(fnp.sinc))(v),
    "power-array": lambda v: fnp.power(v, np.array([2.0, 3.0, 0.0], dtype=np.float32)),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_functions_keep_float32_inside_the_graph(name):
    fn = OTHERS[name]
    x = np.array([-0.7, 0.3, 1.2], dtype=np.float32)
    _seen.clear()
    g = fg.grad(lambda v: fnp.sum(fn(_probe(v))))(x)
    _, t = fg.jvp(lambda v: _probe(fn(v)), (x,), (np.ones_like(x),))
    assert g.dtype == np.float32 and t.dtype == np.float32
    assert _seen == [np.float32, np.float32]


# --- errors -----------------------------------------------------------------------------

def test_ufunc_options_on_traced_values_are_refused_clearly():
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"funcgrad.numpy.add takes no keyword arguments other than out=.*'dtype'"):
        fg.grad(lambda v: fnp.sum(fnp.add(v, 1.0, dtype=np.float32)))(x)
    with pytest.raises(TypeError, match=r"funcgrad.numpy.exp takes no keyword arguments.*'where'"):
        fg.jvp(lambda v: fnp.exp(v, where=v > 0), (x,), (x,))
    with pytest.raises(TypeError, match=r"funcgrad.numpy.sin takes no keyword.*'casting'"):
        fg.vmap(lambda v: fnp.sin(v, casting="unsafe"))(x)
    with pytest.raises(TypeError, match=r"funcgrad.numpy.clip takes no keyword.*'dtype'"):
        fg.grad(lambda v: fnp.sum(fnp.clip(v, 0.0, 1.0, dtype=np.float64)))(x)
    with pytest.raises(TypeError, match="give out= as a keyword argument"):
        fg.grad(lambda v: fnp.sum(fnp.multiply(v, 2.0, np.empty(3))))(x)
    with pytest.raises(TypeError, match="where= is supported on plain arrays only"):
        fg.grad(lambda v: fnp.sum(v * fnp.less(v, 2.0, where=v > 0)))(x)
    with pytest.raises(TypeError, match="where= is supported on plain arrays only"):
        fg.vmap(lambda v: fnp.less(v, 2.0, where=True))(x)


# --- ufunc options (out=, where=, dtype= ...) ------------------------------------------

@pytest.mark.parametrize("name", ["add", "multiply", "power", "arctan2", "maximum", "logaddexp"])
def test_binary_out_on_plain_arrays_is_numpy(name):
    a = np.array([0.5, 1.5, 2.5])
    b = np.array([[1.0], [2.0]])
    out_f, out_n = np.full((2, 3), 7.0), np.full((2, 3), 7.0)
    assert getattr(fnp, name)(a, b, out=out_f) is out_f
    getattr(np, name)(a, b, out=out_n)
    np.testing.assert_array_equal(out_f, out_n)
    assert not np.any(out_f == 7.0)
    out = np.zeros((2, 3))
    assert fnp.add(a, b, out) is out  # positional out, as in NumPy
    np.testing.assert_array_equal(out, a + b)
    out_tuple = np.zeros((2, 3))
    assert fnp.add(a, b, out=(out_tuple,)) is out_tuple


def test_unary_and_clip_out_where_dtype_on_plain_arrays_are_numpy():
    x = np.array([-1.0, 0.5, 2.0])
    for name in ("exp", "sin", "sqrt", "negative", "abs", "conj"):
        out_f, out_n = np.full(3, 9.0), np.full(3, 9.0)
        with np.errstate(invalid="ignore"):
            assert getattr(fnp, name)(x, out=out_f) is out_f
            getattr(np, name)(x, out=out_n)
        np.testing.assert_array_equal(out_f, out_n)
    # where= leaves the other entries of out alone; dtype= computes in that dtype
    out_f, out_n = np.full(3, 9.0), np.full(3, 9.0)
    fnp.exp(x, out=out_f, where=x > 0)
    np.exp(x, out=out_n, where=x > 0)
    np.testing.assert_array_equal(out_f, out_n)
    assert out_f[0] == 9.0
    assert fnp.add(x, 1.0, dtype=np.float32).dtype == np.float32
    assert fnp.sin(x.astype(np.float32), dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError):  # NumPy's own casting error, as in NumPy
        fnp.add(x, 1.0, out=np.zeros(3, dtype=np.int64))
    out = np.zeros(3)
    assert fnp.clip(x, 0.0, 1.0, out=out) is out
    np.testing.assert_array_equal(out, [0.0, 0.5, 1.0])
    out32 = np.zeros(3, dtype=np.float32)
    fnp.clip(x, 0.0, 1.0, out=out32, casting="unsafe")
    np.testing.assert_array_equal(out32, np.float32([0.0, 0.5, 1.0]))
    # nondiff ufuncs too
    mask = np.zeros(3, dtype=bool)
    assert fnp.greater(x, 0.0, out=mask) is mask
    np.testing.assert_array_equal(mask, [False, True, True])


def test_out_on_traced_values_writes_into_an_fnp_array():
    x = np.array([0.3, 1.2, 2.0])

    def f(v):
        c = fnp.zeros(3)
        r = fnp.add(v, v * v, out=c)
        assert r is c
        fnp.multiply(c, 2.0, out=c)
        fnp.clip(c, 0.0, 5.0, out=c)
        fnp.sin(c, out=c)
        return fnp.sum(c)

    u = 2 * (x + x * x)
    expected_value = np.sum(np.sin(np.clip(u, 0.0, 5.0)))
    expected_grad = np.cos(np.clip(u, 0, 5)) * (u < 5) * 2 * (1 + 2 * x)
    np.testing.assert_allclose(f(x), expected_value)
    np.testing.assert_allclose(fg.grad(f)(x), expected_grad)
    _, t = fg.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(t, np.sum(expected_grad))
    check_grads(f, (x,), order=2)
    # under vmap the fnp array holds a batch
    out = fg.vmap(lambda v: fnp.add(v, 1.0, out=fnp.zeros(3)))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(out, np.stack([x + 1, 2 * x + 1]))
    with pytest.raises(TypeError, match="out= is a plain array"):
        fg.grad(lambda v: fnp.sum(fnp.add(v, 1.0, out=np.zeros(3))))(x)


# ==========================================================================
# vmap (batching rules) of this family
#
# vmap of the elementwise and nondiff families: every primitive (the private helpers
# of the rules too) against a Python loop over the batch, over generated shapes,
# batch positions (negative ones too) and unbatched arguments; the functions whose
# output shape depends on the values; and vmap(grad) / jacfwd / hessian running
# without the loop fallback.

from funcgrad.numpy import elementwise as E  # noqa: E402
from funcgrad.numpy import nondiff as N  # noqa: E402
from factories import no_fallback  # noqa: E402
BATCH_SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


def take(a, b, ax):
    return a if ax is None else np.take(a, b, axis=ax)


def loop(f, in_axes, *args):
    """Reference: f on each example (plain arrays: NumPy itself), stacked along axis 0."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[take(a, b, ax) for a, ax in zip(args, in_axes)]) for b in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def check_same(got, want, exact=False):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check_same(g, w, exact)
        return
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-12 if want.dtype in (np.float64, np.complex128) else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def assert_batched(f, in_axes, *args, exact=False):
    with no_fallback():
        got = fg.vmap(f, in_axes=in_axes)(*args)
    check_same(got, loop(f, in_axes, *args), exact)


def stack_at(per_example, pos):
    """Stack a list of per-example arrays along axis ``pos`` (negative counts from the end)."""
    return np.moveaxis(np.stack(per_example), 0, pos)


@st.composite
def batch_spec(draw, per_ndim, may_be_none=True):
    """An in_axes entry for an argument with ``per_ndim`` example axes: None, or a
    position among ``per_ndim + 1``, written positive or negative."""
    if may_be_none and draw(st.booleans()):
        return None
    pos = draw(st.integers(0, per_ndim))
    return pos - (per_ndim + 1) if draw(st.booleans()) else pos


def make_arg(domain, per_shape, size, spec, dtype, seed):
    if spec is None:
        return sample(domain, per_shape, dtype, seed)
    return stack_at([sample(domain, per_shape, dtype, seed + 17 * b) for b in range(size)], spec)


# --- every primitive has a rule --------------------------------------------------

@pytest.mark.parametrize("module", [E, N], ids=["elementwise", "nondiff"])
def test_every_primitive_has_a_batching_rule(module):
    prims = {id(v.primitive): name for name, v in vars(module).items() if hasattr(getattr(v, "primitive", None), "batch_rule")}
    assert len(prims) > 30
    missing = [name for name, v in vars(module).items()
               if hasattr(getattr(v, "primitive", None), "batch_rule") and v.primitive.batch_rule is None]
    assert missing == []
    # the private helpers of the rules are there too
    if module is E:
        assert {"_sinc_derivative", "_where", "_clip", "_nan_to_num"} <= set(vars(module))


# --- differentiable elementwise functions ------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@given(per=st.lists(st.integers(1, 3), max_size=2), size=st.integers(1, 3), data=st.data())
@BATCH_SETTINGS
def test_unary(name, per, size, data):
    real_dom, cplx_dom = UNARY[name]
    dtype = data.draw(st.sampled_from([np.float64, np.float32] + ([np.complex128] if cplx_dom else [])))
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    x = make_arg(cplx_dom if dtype is np.complex128 else real_dom, tuple(per), size, spec, dtype, 1)
    assert_batched(getattr(fnp, name), (spec,), x)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@BATCH_SETTINGS
def test_binary(name, shapes, size, data):
    dom_x, dom_y, cplx = BINARY[name]
    dtype = data.draw(st.sampled_from([np.float64, np.float32] + ([np.complex128] if cplx else [])))
    sx, sy = shapes.input_shapes
    specs = (data.draw(batch_spec(len(sx))), data.draw(batch_spec(len(sy))))
    if specs == (None, None):
        specs = (0, specs[1])
    doms = (cplx, cplx) if dtype is np.complex128 else (dom_x, dom_y)
    x = make_arg(doms[0], sx, size, specs[0], dtype, 1)
    y = make_arg(doms[1], sy, size, specs[1], dtype, 2)
    assert_batched(getattr(fnp, name), specs, x, y)


@pytest.mark.parametrize("name", ["add", "multiply", "power", "maximum", "arctan2"])
def test_binary_with_python_scalars_and_0d_examples(name):
    x = np.array([0.7, 1.3, 1.9])  # three 0-d examples
    assert_batched(lambda v: getattr(fnp, name)(v, 1.5), (0,), x)
    assert_batched(lambda v: getattr(fnp, name)(2.0, v), (0,), x)
    assert_batched(getattr(fnp, name), (0, None), x, np.array([[1.1], [0.6]]))


def test_sinc_derivative_helper_batches():
    x = np.array([[-1.3, 0.0, 0.4], [2e-9, 0.9, -0.2]])
    for n in (1, 2, 3):
        assert_batched(lambda v: E._sinc_derivative(v, n), (1,), x)
    assert_batched(fnp.sinc, (-1,), x)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@BATCH_SETTINGS
def test_vmap_where(shapes, size, data):
    sc, sx, sy = shapes.input_shapes
    specs = tuple(data.draw(batch_spec(len(s))) for s in (sc, sx, sy))
    if specs == (None, None, None):
        specs = (None, 0, None)
    c = make_arg(lambda r, s: r.uniform(-1, 1, s) > 0, sc, size, specs[0], bool, 3)
    x = make_arg(lambda r, s: r.standard_normal(s), sx, size, specs[1], np.float64, 4)
    y = make_arg(lambda r, s: r.standard_normal(s), sy, size, specs[2], np.float64, 5)
    assert_batched(fnp.where, specs, c, x, y, exact=True)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=3), size=st.integers(1, 3),
       bounds=st.sampled_from(["both", "lo", "hi"]), data=st.data())
@BATCH_SETTINGS
def test_clip(shapes, size, bounds, data):
    sa, slo, shi = shapes.input_shapes
    specs = [data.draw(batch_spec(len(s))) for s in (sa, slo, shi)]
    if bounds == "lo":
        specs[2] = None
    if bounds == "hi":
        specs[1] = None
    if specs == [None, None, None]:
        specs[0] = 0
    a = make_arg(lambda r, s: r.uniform(-2, 2, s), sa, size, specs[0], np.float64, 6)
    lo = make_arg(lambda r, s: r.uniform(-1, -0.2, s), slo, size, specs[1], np.float64, 7)
    hi = make_arg(lambda r, s: r.uniform(0.2, 1, s), shi, size, specs[2], np.float64, 8)
    lo = None if bounds == "hi" else lo
    hi = None if bounds == "lo" else hi
    assert_batched(lambda a, lo, hi: fnp.clip(a, lo, hi), tuple(specs), a, lo, hi, exact=True)


def test_nan_to_num_angle_and_kwargs_pass_through():
    x = np.array([[1.0, np.nan, -np.inf], [np.inf, 2.0, 0.5]])
    assert_batched(lambda v: fnp.nan_to_num(v, nan=-1.0, posinf=7.0, neginf=-7.0), (1,), x, exact=True)
    z = np.array([[1 + 1j, -1 + 0.5j], [0.3 - 2j, -1 - 1j]])
    assert_batched(lambda v: fnp.angle(v, deg=True), (0,), z)
    assert_batched(lambda v: fnp.angle(v), (-1,), z)


def test_vmap_of_traced_kwargs_free_calls_in_both_nesting_orders():
    xs = np.array([[0.2, -0.7, 1.1], [1.5, 0.3, -0.4]])
    f = lambda v: fnp.sum(fnp.where(v > 0, fnp.sin(v) * v, fnp.clip(v, -0.5, None) ** 2))
    with no_fallback():
        per_example = fg.vmap(fg.grad(f))(xs)
        through = fg.grad(lambda w: fnp.sum(fg.vmap(f)(w)))(xs)
    want = np.stack([fg.grad(f)(x) for x in xs])
    np.testing.assert_allclose(per_example, want, rtol=1e-12)
    np.testing.assert_allclose(through, want, rtol=1e-12)


# --- Jacobians: the transforms batch the VJP/JVP rules --------------------------------

JAC_CASES = {
    # unary functions whose rules use only this family (same shapes: no unbroadcast)
    **{name: (lambda n: lambda v: getattr(fnp, n)(v))(name) for name in
       ("exp", "log", "sqrt", "sin", "tanh", "arctan", "sinc", "abs", "cbrt", "reciprocal")},
    "arccosh": lambda v: fnp.arccosh(v + 1.0),
    "power": lambda v: fnp.power(v, v[::-1]),
    "power-scalar": lambda v: fnp.power(v, 3.0),
    "divide": lambda v: fnp.divide(v, v * v + 1.0),
    "maximum": lambda v: fnp.maximum(v, 1.6 - v),
    "arctan2": lambda v: fnp.arctan2(v, v + 3.0),
    "hypot": lambda v: fnp.hypot(v, 1.0 + v * 0.5),
    "logaddexp": lambda v: fnp.logaddexp(v, v * v),
    "mod": lambda v: fnp.mod(3.3 * v, 0.9 + 0 * v),
    "fmod": lambda v: fnp.fmod(3.3 * v, 0.9 + 0 * v),
    "copysign": lambda v: fnp.copysign(v, v - 1.5),
    "where": lambda v: fnp.where(v > 1.3, v * v, fnp.exp(v)),
    "clip": lambda v: fnp.clip(v * v, 0.3, 3.0 * v),
    "nan_to_num": lambda v: fnp.nan_to_num(fnp.where(v > 1.5, np.inf, v * v), posinf=2.0),
}


@pytest.mark.parametrize("name", sorted(JAC_CASES))
def test_jacfwd_jacrev_hessian_without_fallback(name):
    f = JAC_CASES[name]
    x = np.array([0.6, 1.35, 1.9])
    w = np.array([0.5, -1.0, 2.0])
    scalar = lambda v: fnp.dot(f(v), w)  # dot has its own batching rule
    with no_fallback():
        jf = fg.jacfwd(f)(x)
        jr = fg.jacrev(f)(x)
        h = fg.hessian(scalar)(x)
        per_example = fg.vmap(fg.grad(scalar))(np.stack([x, x * 0.9 + 0.1]))
    np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12)
    # against the unbatched derivatives: one gradient per row / column
    rows = np.stack([fg.grad(lambda v: f(v)[i])(x) for i in range(3)])
    np.testing.assert_allclose(jr, rows, rtol=1e-10, atol=1e-12)
    cols = np.stack([fg.jvp(fg.grad(scalar), (x,), (e,))[1] for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(h, cols, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(per_example[0], fg.grad(scalar)(x), rtol=1e-12)
    np.testing.assert_allclose(per_example[1], fg.grad(scalar)(x * 0.9 + 0.1), rtol=1e-12)


def test_jacobians_of_complex_functions_without_fallback():
    z = np.array([0.6 + 0.3j, -0.4 + 1.1j])
    f = lambda v: fnp.real(fnp.exp(v) * fnp.conj(v)) + fnp.angle(v) + fnp.imag(fnp.sqrt(v))
    h = lambda v: fnp.exp(v) * fnp.sin(v) / (v + 2.0) + fnp.log1p(v) ** 2  # holomorphic
    loss = lambda v: fnp.sum(f(v))
    with no_fallback():
        jr = fg.jacrev(h, holomorphic=True)(z)
        jh = fg.jacfwd(h, holomorphic=True)(z)
        per_example = fg.vmap(fg.grad(loss))(np.stack([z, z[::-1]]))
    np.testing.assert_allclose(per_example[0], fg.grad(loss)(z), rtol=1e-12)
    np.testing.assert_allclose(per_example[1], fg.grad(loss)(z[::-1]), rtol=1e-12)
    np.testing.assert_allclose(jr, jh, rtol=1e-12)
    dh = lambda v: np.exp(v) * (np.sin(v) + np.cos(v)) / (v + 2) - np.exp(v) * np.sin(v) / (v + 2) ** 2 \
        + 2 * np.log1p(v) / (1 + v)
    np.testing.assert_allclose(jh, np.diag(dh(z)), rtol=1e-12)


# --- nondiff: elementwise -------------------------------------------------------------

NONDIFF_UNARY = ["isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit", "logical_not", "floor",
                 "ceil", "rint", "trunc", "fix", "sign", "iscomplex", "isreal", "round", "around"]
NONDIFF_BINARY = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
                  "logical_or", "logical_xor", "isclose", "floor_divide", "heaviside"]
INT_UNARY = ["invert", "bitwise_not"]
INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm"]


def special_values(r, s):
    """Normal numbers, halves (rounding ties), zeros of both signs, infinities and nan."""
    pool = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 0.7, -1.3, np.inf, -np.inf, np.nan])
    return r.choice(pool, s)


def small_ints(r, s):
    return r.integers(1, 9, s)


@pytest.mark.parametrize("name", NONDIFF_UNARY + INT_UNARY)
@given(per=st.lists(st.integers(1, 3), max_size=2), size=st.integers(1, 3), data=st.data())
@BATCH_SETTINGS
def test_nondiff_unary(name, per, size, data):
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    if name in INT_UNARY:
        x = make_arg(small_ints, tuple(per), size, spec, np.int64, 1)
    else:
        x = make_arg(special_values, tuple(per), size, spec, np.float64, 1)
    assert_batched(getattr(fnp, name), (spec,), x, exact=True)
    if name in ("round", "around"):
        assert_batched(lambda v: getattr(fnp, name)(v * 3.14159, 2), (spec,), x, exact=True)


@pytest.mark.parametrize("name", NONDIFF_BINARY + INT_BINARY)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@BATCH_SETTINGS
def test_nondiff_binary(name, shapes, size, data):
    sx, sy = shapes.input_shapes
    specs = (data.draw(batch_spec(len(sx))), data.draw(batch_spec(len(sy))))
    if specs == (None, None):
        specs = (None, 0)
    dom, dt = (small_ints, np.int64) if name in INT_BINARY else (special_values, np.float64)
    x = make_arg(dom, sx, size, specs[0], dt, 1)
    y = make_arg(dom, sy, size, specs[1], dt, 2)
    with np.errstate(all="ignore"):
        assert_batched(getattr(fnp, name), specs, x, y, exact=True)


def test_comparison_operators_and_where_of_a_mask_inside_vmap():
    xs = np.array([[0.5, -1.0, 2.0], [-0.5, 3.0, 0.0]])
    assert_batched(lambda v: fnp.logical_and(v > 0, v <= 2.0), (0,), xs, exact=True)
    assert_batched(lambda v, y: fnp.where(v == y, v, -y), (1, None), xs.T, xs[0], exact=True)
    assert_batched(lambda v: fnp.isclose(v, 0.5, atol=0.6), (0,), xs, exact=True)


# --- nondiff: reductions and axis functions -------------------------------------------

@st.composite
def axis_args(draw, nd, allow_tuple):
    kind = draw(st.sampled_from(["default", "none"] + (["int", "int-positional"] if nd else [])
                                + (["tuple"] if allow_tuple and nd else [])))
    if kind == "default":
        return (), {}
    if kind == "none":
        return (), {"axis": None}
    if kind == "tuple":
        axes = draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda a: a % nd))
        return (), {"axis": tuple(axes)}
    ax = draw(st.integers(-nd, nd - 1))
    return ((ax,), {}) if kind == "int-positional" else ((), {"axis": ax})


AXIS_FUNCTIONS = {  # name: (tuple axes allowed, keepdims allowed)
    "argmax": (False, True), "argmin": (False, True), "nanargmax": (False, True),
    "nanargmin": (False, True), "argsort": (False, False), "any": (True, True), "all": (True, True),
    "count_nonzero": (True, True),
}


@pytest.mark.parametrize("name", sorted(AXIS_FUNCTIONS))
@given(per=st.lists(st.integers(1, 3), max_size=3), size=st.integers(1, 3), data=st.data())
@BATCH_SETTINGS
def test_axis_functions(name, per, size, data):
    allow_tuple, allow_keepdims = AXIS_FUNCTIONS[name]
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    args, kwargs = data.draw(axis_args(len(per), allow_tuple))
    if allow_keepdims and data.draw(st.booleans()):
        kwargs["keepdims"] = True
    if name in ("any", "all", "count_nonzero"):
        x = make_arg(lambda r, s: r.integers(0, 2, s), tuple(per), size, spec, np.int64, 1)
    else:  # distinct values: no ties for argsort / argmax
        x = make_arg(lambda r, s: r.permutation(np.prod(s, dtype=int)).reshape(s), tuple(per), size, spec,
                     np.float64, 1)
    fn = getattr(fnp, name)
    assert_batched(lambda v: fn(v, *args, **kwargs), (spec,), x, exact=True)


@given(per=st.lists(st.integers(2, 4), min_size=1, max_size=2), size=st.integers(1, 3), data=st.data())
@BATCH_SETTINGS
def test_argpartition(per, size, data):
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    axis = data.draw(st.sampled_from([None, -1, 0]))
    n = int(np.prod(per)) if axis is None else per[axis]
    kth = data.draw(st.integers(0, n - 1))
    x = make_arg(lambda r, s: r.permutation(np.prod(s, dtype=int)).reshape(s), tuple(per), size, spec,
                 np.float64, 2)
    kw = {} if axis == -1 else {"axis": axis}
    with no_fallback():
        got = fg.vmap(lambda v: fnp.argpartition(v, kth, **kw), in_axes=spec)(x)
    want = loop(lambda v: np.argpartition(v, kth, **kw), (spec,), x)
    assert got.shape == want.shape
    # the k-th element is in place (the rest of the order is unspecified)
    along = 1 if axis is None else 1 + axis % len(per)
    np.testing.assert_array_equal(np.take(got, kth, axis=along), np.take(want, kth, axis=along))


def test_argsort_keepdims_and_kwargs_positional_axis():
    x = np.random.default_rng(3).permutation(24).reshape(2, 3, 4).astype(float)
    assert_batched(lambda v: fnp.argsort(v, 0, kind="stable"), (2,), x, exact=True)
    assert_batched(lambda v: fnp.argmax(v, axis=None, keepdims=True), (1,), x, exact=True)
    assert_batched(lambda v: fnp.any(v > 5, 1, None, True), (0,), x, exact=True)
    mask = np.array([[True, False, True, False]] * 3)
    assert_batched(lambda v: fnp.all(v > 5, axis=0, where=mask), (0,), x, exact=True)  # plain where=
    with pytest.raises(TypeError, match="where= cannot be a traced value under vmap"):
        fg.vmap(lambda v: fnp.all(v > 5, where=v > 7))(x)


# --- nondiff: shaped like one argument ----------------------------------------------------

def test_searchsorted_digitize_isin():
    rng = np.random.default_rng(4)
    a = np.sort(rng.standard_normal((3, 5)), axis=1)
    v = rng.standard_normal((3, 4))
    for side in ("left", "right"):
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (None, 0), a[0], v, exact=True)
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (None, -1), a[0], v.T, exact=True)
        # a batched sorted array: one call per example (correct; no warning)
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (0, 0), a, v, exact=True)
    assert_batched(lambda x, b: fnp.digitize(x, b), (1, None), v.T, a[1], exact=True)
    assert_batched(lambda x, b: fnp.digitize(x, b, right=True), (0, 0), v, a, exact=True)
    ints = rng.integers(0, 6, (3, 4))
    assert_batched(lambda e, t: fnp.isin(e, t), (0, None), ints, np.array([1, 3, 5]), exact=True)
    assert_batched(lambda e, t: fnp.isin(e, t, invert=True), (0, 1), ints, ints.T[::-1], exact=True)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_functions_are_batched_like_their_argument(name):
    x = np.arange(24.0).reshape(2, 3, 4)
    fn = getattr(fnp, name)
    for spec in (0, 1, -1):
        with no_fallback():
            out = fg.vmap(fn, in_axes=spec)(x)
        want_shape = np.moveaxis(x, spec, 0).shape
        assert out.shape == want_shape and out.dtype == x.dtype
        if name != "empty_like":
            np.testing.assert_array_equal(out, getattr(np, name)(np.moveaxis(x, spec, 0)))
    with no_fallback():
        out = fg.vmap(lambda v: fn(v, dtype=np.int32))(x)
        same = fg.vmap(lambda v: fn(v, np.float32, shape=(5,)))(x)
    assert out.shape == (2, 3, 4) and out.dtype == np.int32
    assert same.shape == (2, 5) and same.dtype == np.float32  # not batched, repeated by vmap
    if name != "empty_like":
        assert_batched(lambda v: v * 2.0 + fn(v), (1,), x)


# --- nondiff: whole-array predicates ----------------------------------------------------

def test_allclose_array_equal_array_equiv():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3))
    y = x.copy()
    y[1, 2] += 1e-3
    y[3, 0] = np.nan
    x[3, 0] = np.nan
    for f in (fnp.allclose, lambda a, b: fnp.allclose(a, b, 1e-2), lambda a, b: fnp.allclose(a, b, equal_nan=True),
              fnp.array_equal, lambda a, b: fnp.array_equal(a, b, True), fnp.array_equiv):
        assert_batched(f, (0, 0), x, y, exact=True)
        assert_batched(f, (1, None), x.T, y[2], exact=True)
    assert_batched(fnp.allclose, (0, None), x[:, :1], y[0], exact=True)  # broadcasting examples
    assert_batched(fnp.array_equiv, (0, None), x[:, :1], np.ones(3), exact=True)
    assert_batched(fnp.array_equiv, (0, None), np.ones((4, 1)), np.ones(3), exact=True)
    # different example shapes: False for every example, as in NumPy
    with no_fallback():
        assert not np.any(fg.vmap(fnp.array_equal, in_axes=(0, None))(x, np.ones(2)))
        assert not np.any(fg.vmap(fnp.array_equiv, in_axes=(0, None))(x, np.ones(2)))
        out = fg.vmap(fnp.array_equal, in_axes=(0, None))(x, np.ones(2))
    assert out.shape == (4,)


# --- nondiff: tuples of index arrays ---------------------------------------------------

def test_unravel_index_and_index_builders():
    idx = np.array([[0, 5, 11], [7, 3, 2]])
    assert_batched(lambda i: fnp.unravel_index(i, (3, 4)), (1,), idx, exact=True)
    assert_batched(lambda i: fnp.unravel_index(i, (4, 3), order="F"), (0,), idx, exact=True)
    A = np.zeros((2, 3, 3))
    for f in (fnp.tril_indices_from, lambda a: fnp.triu_indices_from(a, 1), fnp.diag_indices_from):
        assert_batched(f, (0,), A, exact=True)
        assert_batched(f, (-1,), np.moveaxis(A, 0, -1), exact=True)
    with pytest.raises(ValueError):
        fg.vmap(fnp.tril_indices_from)(np.zeros((2, 3)))  # examples are 1-d: NumPy's own error


# --- nondiff: output shape depends on the values ------------------------------------------

def test_data_dependent_functions_batch_when_the_shapes_agree():
    x = np.array([[0.0, 1.0, 2.0, 0.0], [3.0, 0.0, 0.0, 4.0]])  # two nonzeros per example
    assert_batched(fnp.nonzero, (0,), x, exact=True)
    assert_batched(fnp.argwhere, (1,), x.T, exact=True)
    assert_batched(fnp.flatnonzero, (0,), x, exact=True)
    assert_batched(lambda v: fnp.where(v > 0.5), (0,), x, exact=True)
    X = np.stack([x, x[::-1]], axis=-1)  # examples of shape (2, 4)
    assert_batched(fnp.nonzero, (-1,), X, exact=True)


@pytest.mark.parametrize("name", ["nonzero", "argwhere", "flatnonzero"])
def test_data_dependent_functions_refuse_disagreeing_shapes(name):
    x = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=rf"vmap cannot batch {name}: its output shape depends on the values.*"
                                         r"example 0 gives shape \(2"):
        fg.vmap(getattr(fnp, name))(x)
    with pytest.raises(ValueError, match="empty batch"):
        fg.vmap(getattr(fnp, name))(np.zeros((0, 3)))


def test_nondiff_functions_inside_grad_inside_vmap_and_around():
    xs = np.array([[0.5, -1.2, 2.0], [-0.3, 0.8, 1.5]])

    def f(v):
        k = fnp.argmax(v)
        mask = fnp.logical_and(v > -1.0, fnp.isfinite(v))
        return fnp.sum(fnp.where(mask, v * v, 0.0)) + fnp.take(v, k) * fnp.count_nonzero(mask)

    want = np.stack([fg.grad(f)(x) for x in xs])
    with no_fallback():
        np.testing.assert_allclose(fg.vmap(fg.grad(f))(xs), want, rtol=1e-12)
        np.testing.assert_allclose(fg.grad(lambda w: fnp.sum(fg.vmap(f)(w)))(xs), want, rtol=1e-12)
        nested = fg.vmap(fg.vmap(lambda v: fnp.argsort(v)))(np.stack([xs, -xs]))
    np.testing.assert_array_equal(nested, np.argsort(np.stack([xs, -xs]), axis=-1))
