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
