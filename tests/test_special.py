"""funcgrad.scipy.special: values against SciPy, derivatives to second order, stability."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import special as fs
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)
DTYPES = [np.float64, np.float32]


def _uniform(lo, hi, shape=(2, 3)):
    return RNG.uniform(lo, hi, size=shape)


REAL = _uniform(-2.0, 2.0)
POS = _uniform(0.6, 3.0)
UNIT = _uniform(0.1, 0.9)
CUBE = _uniform(-2.0, 2.0, (2, 3, 2))
WEIGHTS = _uniform(0.2, 2.0, (3, 2))


# name -> (function of float arrays, its inputs, the reference built from SciPy)
CASES = {
    "logsumexp": (fs.logsumexp, (CUBE,), sp.logsumexp),
    "logsumexp_axis1": (lambda a: fs.logsumexp(a, axis=1), (CUBE,), lambda a: sp.logsumexp(a, axis=1)),
    "logsumexp_axis_neg": (lambda a: fs.logsumexp(a, axis=-1), (CUBE,), lambda a: sp.logsumexp(a, axis=-1)),
    "logsumexp_axes_keepdims": (
        lambda a: fs.logsumexp(a, axis=(0, 2), keepdims=True), (CUBE,),
        lambda a: sp.logsumexp(a, axis=(0, 2), keepdims=True)),
    "logsumexp_b": (
        lambda a, b: fs.logsumexp(a, axis=1, b=b), (CUBE, WEIGHTS),
        lambda a, b: sp.logsumexp(a, axis=1, b=b)),
    "logsumexp_b_keepdims_all": (
        lambda a, b: fs.logsumexp(a, b=b, keepdims=True), (CUBE, WEIGHTS),
        lambda a, b: sp.logsumexp(a, b=b, keepdims=True)),
    "logsumexp_b_wider_than_a": (
        lambda a, b: fs.logsumexp(a, axis=0, b=b), (WEIGHTS[0], WEIGHTS),
        lambda a, b: sp.logsumexp(a, axis=0, b=b)),
    "logsumexp_sign": (
        lambda a, b: fs.logsumexp(a, axis=2, b=b, return_sign=True), (CUBE, WEIGHTS * [1.0, -1.0]),
        lambda a, b: sp.logsumexp(a, axis=2, b=b, return_sign=True)),
    "softmax": (fs.softmax, (CUBE,), sp.softmax),
    "softmax_axis": (lambda x: fs.softmax(x, axis=-1), (CUBE,), lambda x: sp.softmax(x, axis=-1)),
    "softmax_axes": (lambda x: fs.softmax(x, axis=(0, 1)), (CUBE,), lambda x: sp.softmax(x, axis=(0, 1))),
    "log_softmax": (fs.log_softmax, (CUBE,), sp.log_softmax),
    "log_softmax_axis": (lambda x: fs.log_softmax(x, axis=1), (CUBE,), lambda x: sp.log_softmax(x, axis=1)),
    "expit": (fs.expit, (REAL,), sp.expit),
    "logit": (fs.logit, (UNIT,), sp.logit),
    "log_expit": (fs.log_expit, (REAL,), sp.log_expit),
    "erf": (fs.erf, (REAL,), sp.erf),
    "erfc": (fs.erfc, (REAL,), sp.erfc),
    "erfinv": (fs.erfinv, (UNIT * 1.6 - 0.8,), sp.erfinv),
    "erfcinv": (fs.erfcinv, (UNIT * 1.6 + 0.2,), sp.erfcinv),
    "gammaln": (fs.gammaln, (POS,), sp.gammaln),
    "gamma": (fs.gamma, (POS,), sp.gamma),
    "digamma": (fs.digamma, (POS,), sp.digamma),
    "polygamma0": (lambda x: fs.polygamma(0, x), (POS,), lambda x: sp.polygamma(0, x)),
    "polygamma1": (lambda x: fs.polygamma(1, x), (POS,), lambda x: sp.polygamma(1, x)),
    "polygamma3": (lambda x: fs.polygamma(3, x), (POS + 1,), lambda x: sp.polygamma(3, x)),
    "polygamma_n_array": (
        lambda x: fs.polygamma(np.array([0, 1, 2]), x), (POS,),
        lambda x: sp.polygamma(np.array([0, 1, 2]), x)),
    "xlogy": (fs.xlogy, (REAL, POS), sp.xlogy),
    "xlogy_broadcast": (fs.xlogy, (REAL[:1], POS[:, :1]), sp.xlogy),
    "xlog1py": (fs.xlog1py, (REAL, UNIT), sp.xlog1py),
    "i0": (fs.i0, (REAL,), sp.i0),
    "i1": (fs.i1, (REAL,), sp.i1),
}


PARAMS = list(CASES)


def _cast(args, dtype):
    return tuple(np.asarray(a, dtype=dtype) for a in args)


@pytest.mark.parametrize("name", PARAMS)
def test_values_match_scipy(name):
    f, args, ref = CASES[name]
    got, want = f(*args), ref(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", PARAMS)
def test_check_grads(name, dtype):
    f, args, _ = CASES[name]
    check_grads(f, _cast(args, dtype), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", PARAMS)
def test_dtype_kept(name):
    f, args, _ = CASES[name]
    args32 = _cast(args, np.float32)
    out = f(*args32)
    for o in out if isinstance(out, tuple) else (out,):
        assert np.asarray(o).dtype == np.float32, name
    # the derivative keeps it too
    out, f_vjp = fg.vjp(f, *args32)
    ct = tuple(np.ones_like(o) for o in out) if isinstance(out, tuple) else np.ones_like(out)
    for g in f_vjp(ct):
        assert np.asarray(g).dtype == np.float32, name


def test_works_on_traced_values_inside_other_code():
    # a small logistic-regression-like loss mixing several functions
    x = _uniform(-1, 1, (4, 3))
    y = np.array([1.0, -1.0, 1.0])

    def loss(w):
        logits = x * w
        return fnp.sum(fs.logsumexp(logits, axis=1)) - fnp.sum(fs.log_expit(y * w)) + fnp.sum(fs.erf(w) * fs.erf(w))

    w = np.array([0.3, -0.2, 0.5])
    check_grads(loss, (w,), order=2)
    want = (sp.softmax(x * w, axis=1) * x).sum(0) - y * sp.expit(-y * w) + 2 * sp.erf(w) * 2 / np.sqrt(np.pi) * np.exp(-w**2)
    np.testing.assert_allclose(fg.grad(loss)(w), want, rtol=1e-12)


# --- closed forms ------------------------------------------------------------

def _elementwise_grad(f):
    return fg.grad(lambda x: fnp.sum(f(x)))


def test_erf_derivative_closed_form():
    x = np.linspace(-2.5, 2.5, 11)
    np.testing.assert_allclose(_elementwise_grad(fs.erf)(x), 2 / np.sqrt(np.pi) * np.exp(-x**2), rtol=1e-13)
    np.testing.assert_allclose(_elementwise_grad(fs.erfc)(x), -2 / np.sqrt(np.pi) * np.exp(-x**2), rtol=1e-13)
    # second derivative: -2x * 2/sqrt(pi) exp(-x^2)
    d2 = _elementwise_grad(_elementwise_grad(fs.erf))(x)
    np.testing.assert_allclose(d2, -2 * x * 2 / np.sqrt(np.pi) * np.exp(-x**2), rtol=1e-12, atol=1e-15)


def test_erfinv_derivative_closed_form():
    y = np.linspace(-0.9, 0.9, 7)
    want = np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(y) ** 2)
    np.testing.assert_allclose(_elementwise_grad(fs.erfinv)(y), want, rtol=1e-12)
    np.testing.assert_allclose(_elementwise_grad(fs.erfcinv)(1 - y), -want, rtol=1e-12)


def test_gamma_family_derivative_chain():
    x = np.linspace(0.5, 6.0, 9)
    d1 = _elementwise_grad(fs.gammaln)
    np.testing.assert_allclose(d1(x), sp.digamma(x), rtol=1e-13)
    np.testing.assert_allclose(_elementwise_grad(d1)(x), sp.polygamma(1, x), rtol=1e-12)
    np.testing.assert_allclose(_elementwise_grad(_elementwise_grad(d1))(x), sp.polygamma(2, x), rtol=1e-12)
    np.testing.assert_allclose(_elementwise_grad(fs.digamma)(x), sp.polygamma(1, x), rtol=1e-13)
    np.testing.assert_allclose(
        _elementwise_grad(lambda x: fs.polygamma(2, x))(x), sp.polygamma(3, x), rtol=1e-13)
    np.testing.assert_allclose(_elementwise_grad(fs.gamma)(x), sp.gamma(x) * sp.digamma(x), rtol=1e-12)
    # known values: psi'(1) = pi^2 / 6
    np.testing.assert_allclose(fg.grad(fg.grad(fs.gammaln))(1.0), np.pi**2 / 6, rtol=1e-13)


def test_logistic_derivatives_closed_form():
    x = np.linspace(-6, 6, 13)
    s = sp.expit(x)
    np.testing.assert_allclose(_elementwise_grad(fs.expit)(x), s * (1 - s), rtol=1e-12)
    np.testing.assert_allclose(_elementwise_grad(_elementwise_grad(fs.expit))(x), s * (1 - s) * (1 - 2 * s),
                               rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(_elementwise_grad(fs.log_expit)(x), 1 - s, rtol=1e-12)
    p = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(_elementwise_grad(fs.logit)(p), 1 / (p * (1 - p)), rtol=1e-12)


def test_logsumexp_gradient_is_softmax_and_hessian_closed_form():
    a = np.array([0.5, -1.0, 2.0, 0.0])
    s = sp.softmax(a)
    np.testing.assert_allclose(fg.grad(fs.logsumexp)(a), s, rtol=1e-13)
    want_h = np.diag(s) - np.outer(s, s)
    np.testing.assert_allclose(fg.hessian(fs.logsumexp)(a), want_h, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fg.jacrev(fg.grad(fs.logsumexp))(a), want_h, rtol=1e-12, atol=1e-15)
    # Jacobian of softmax is the same matrix
    np.testing.assert_allclose(fg.jacfwd(fs.softmax)(a), want_h, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(fg.jacrev(fs.softmax)(a), want_h, rtol=1e-12, atol=1e-15)
    # log_softmax: I - 1 s^T
    np.testing.assert_allclose(fg.jacrev(fs.log_softmax)(a), np.eye(4) - s[None, :], rtol=1e-12, atol=1e-15)


def test_logsumexp_weights_gradients_closed_form():
    a = np.array([0.5, -1.0, 2.0])
    b = np.array([1.0, 3.0, 0.5])
    lse = sp.logsumexp(a, b=b)
    ga, gb = fg.grad(lambda a, b: fs.logsumexp(a, b=b), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, b * np.exp(a - lse), rtol=1e-13)
    np.testing.assert_allclose(gb, np.exp(a - lse), rtol=1e-13)
    # negative weights with return_sign: d log|s| / db = exp(a) / s
    b2 = np.array([1.0, -3.0, 0.5])
    s = np.sum(b2 * np.exp(a))
    gb2 = fg.grad(lambda b: fs.logsumexp(a, b=b, return_sign=True)[0])(b2)
    np.testing.assert_allclose(gb2, np.exp(a) / s, rtol=1e-13)
    ga2 = fg.grad(lambda a: fs.logsumexp(a, b=b2, return_sign=True)[0])(a)
    np.testing.assert_allclose(ga2, b2 * np.exp(a) / s, rtol=1e-13)


def test_i0_i1_derivatives_closed_form():
    x = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
    np.testing.assert_allclose(_elementwise_grad(fs.i0)(x), sp.i1(x), rtol=1e-13)
    want = (sp.i0(x) + sp.iv(2, x)) / 2  # I1' = (I0 + I2) / 2, = 1/2 at 0
    np.testing.assert_allclose(_elementwise_grad(fs.i1)(x), want, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(fg.grad(fs.i1))(0.0), 0.0, atol=1e-15)


def test_xlogy_derivatives_closed_form():
    x, y = np.array([0.0, 2.0, -1.5]), np.array([0.5, 3.0, 2.0])
    gx, gy = fg.grad(lambda x, y: fnp.sum(fs.xlogy(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.log(y), rtol=1e-13)
    np.testing.assert_allclose(gy, x / y, rtol=1e-13)
    gx, gy = fg.grad(lambda x, y: fnp.sum(fs.xlog1py(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.log1p(y), rtol=1e-13)
    np.testing.assert_allclose(gy, x / (1 + y), rtol=1e-13)


# --- stability ---------------------------------------------------------------

BIG = [1000.0, -1000.0, 0.5, -1000.0, 999.0, 1000.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_stable_at_large_magnitudes(dtype):
    x = np.array(BIG, dtype=dtype)
    x64 = np.array(BIG)

    lse = fs.logsumexp(x)
    assert lse.dtype == dtype and np.isfinite(lse)
    np.testing.assert_allclose(lse, 1000.0 + np.log(2 + np.exp(-1.0)), rtol=1e-6)
    g = fg.grad(fs.logsumexp)(x)
    assert g.dtype == dtype and np.all(np.isfinite(g))
    np.testing.assert_allclose(g, sp.softmax(x64), rtol=1e-5, atol=1e-7)
    v = np.arange(6, dtype=dtype)
    _, hv = fg.hvp(fs.logsumexp, (x,), (v,))
    s64 = sp.softmax(x64)
    assert hv.dtype == dtype and np.all(np.isfinite(hv))
    np.testing.assert_allclose(hv, s64 * v - s64 * np.dot(s64, v), rtol=1e-5, atol=1e-6)

    s = fs.softmax(x)
    assert s.dtype == dtype and np.all(np.isfinite(s))
    np.testing.assert_allclose(s, sp.softmax(x64), rtol=1e-5, atol=1e-7)
    gs = fg.grad(lambda x: fnp.sum(fs.softmax(x) * x64.astype(dtype)))(x)
    assert gs.dtype == dtype and np.all(np.isfinite(gs))

    ls = fs.log_softmax(x)
    assert ls.dtype == dtype and np.all(np.isfinite(ls))
    np.testing.assert_allclose(ls, sp.log_softmax(x64), rtol=1e-6)
    gls = fg.grad(lambda x: fnp.sum(fs.log_softmax(x)))(x)
    assert np.all(np.isfinite(gls))

    e = fs.expit(x)
    assert e.dtype == dtype and np.all(np.isfinite(e))
    np.testing.assert_array_equal(e[:2], [1.0, 0.0])
    ge = _elementwise_grad(fs.expit)(x)
    gge = _elementwise_grad(_elementwise_grad(fs.expit))(x)
    assert ge.dtype == dtype and np.all(np.isfinite(ge)) and np.all(np.isfinite(gge))
    np.testing.assert_array_equal(ge[:2], [0.0, 0.0])

    le = fs.log_expit(x)
    assert le.dtype == dtype and np.all(np.isfinite(le))
    np.testing.assert_allclose(le, sp.log_expit(x64), rtol=1e-6)
    gle = _elementwise_grad(fs.log_expit)(x)
    assert np.all(np.isfinite(gle))
    np.testing.assert_allclose(gle[:2], [0.0, 1.0])


def test_expit_float32_no_overflow_warning():
    x = np.array([-100.0, -89.0, 89.0, 100.0], dtype=np.float32)  # exp(89) overflows float32
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = fs.expit(x)
    assert out.dtype == np.float32
    # more accurate than SciPy's float32 expit, which flushes these to 0
    np.testing.assert_allclose(out, sp.expit(x.astype(np.float64)), rtol=1e-5, atol=1e-44)


# --- logsumexp semantics against SciPy ---------------------------------------

@pytest.mark.parametrize(
    "a, kwargs",
    [
        (np.array([-np.inf, 0.0, 1.0]), {}),
        (np.array([-np.inf, -np.inf]), {}),
        (np.array([np.inf, 0.0]), {}),
        (np.array([np.inf, 0.0]), {"b": np.array([0.0, 1.0])}),  # zero weight drops the inf
        (np.array([1.0, 2.0]), {"b": np.array([1.0, -1.0]), "return_sign": True}),
        (np.array([1.0, 2.0]), {"b": np.array([-1.0, -1.0]), "return_sign": True}),
        (np.array([[1.0, 2.0], [3.0, 4.0]]), {"b": 2.0, "axis": 0}),
        (np.array([[1.0, 2.0], [3.0, 4.0]]), {"axis": (0, 1), "keepdims": True}),
        (np.zeros((0, 3)), {"axis": 0}),
        (np.array(2.0), {}),
        (np.array([1, 2, 3]), {}),  # integers compute in float64
    ],
)
def test_logsumexp_edge_cases_match_scipy(a, kwargs):
    got, want = fs.logsumexp(a, **kwargs), sp.logsumexp(a, **kwargs)
    if kwargs.get("return_sign"):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_bad_axis_is_a_clear_error():
    with pytest.raises(np.exceptions.AxisError):
        fs.logsumexp(np.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="axis must be None, an int or a tuple"):
        fs.logsumexp(np.ones((2, 3)), axis=1.5)
    with pytest.raises(ValueError, match="more than once"):
        fs.logsumexp(np.ones((2, 3)), axis=(1, -1))


def test_polygamma_order_is_not_differentiable():
    with pytest.raises(TypeError, match="not differentiable with respect to the order n"):
        fg.grad(lambda n: fnp.sum(fs.polygamma(n, np.array([1.0, 2.0]))))(1.0)


# --- hypothesis over shapes and axes -----------------------------------------

@st.composite
def array_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a = draw(hnp.arrays(np.float64, shape, elements=st.floats(-5, 5, allow_nan=False)))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        axis = tuple(draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
    return a, axis


@settings(max_examples=30, deadline=None)
@given(array_and_axis(), st.booleans())
def test_logsumexp_hypothesis(a_axis, keepdims):
    a, axis = a_axis
    got = fs.logsumexp(a, axis=axis, keepdims=keepdims)
    want = sp.logsumexp(a, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # d sum(logsumexp) / da = softmax over the reduced axes
    g = fg.grad(lambda a: fnp.sum(fs.logsumexp(a, axis=axis, keepdims=keepdims)))(a)
    np.testing.assert_allclose(g, sp.softmax(a, axis=axis), rtol=1e-10, atol=1e-14)
    check_grads(lambda a: fs.logsumexp(a, axis=axis, keepdims=keepdims), (a,), order=1)


@settings(max_examples=30, deadline=None)
@given(array_and_axis())
def test_softmax_hypothesis(a_axis):
    a, axis = a_axis
    s = fs.softmax(a, axis=axis)
    np.testing.assert_allclose(s, sp.softmax(a, axis=axis), rtol=1e-12)
    np.testing.assert_allclose(np.sum(s, axis=axis), 1.0, rtol=1e-12)
    ls = fs.log_softmax(a, axis=axis)
    np.testing.assert_allclose(ls, sp.log_softmax(a, axis=axis), rtol=1e-12, atol=1e-13)
    check_grads(lambda a: fs.softmax(a, axis=axis), (a,), order=1)
    check_grads(lambda a: fs.log_softmax(a, axis=axis), (a,), order=1)
    # softmax sums to one, so the gradient of its sum vanishes
    np.testing.assert_allclose(fg.grad(lambda a: fnp.sum(fs.softmax(a, axis=axis)))(a), 0.0, atol=1e-13)


@settings(max_examples=25, deadline=None)
@given(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3),
    st.data(),
)
def test_logsumexp_weights_broadcasting_hypothesis(shapes, data):
    (sa, sb), full = shapes.input_shapes, shapes.result_shape
    a = data.draw(hnp.arrays(np.float64, sa, elements=st.floats(-3, 3)))
    b = data.draw(hnp.arrays(np.float64, sb, elements=st.floats(0.1, 3)))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(full), len(full) - 1)))
    got = fs.logsumexp(a, axis=axis, b=b)
    np.testing.assert_allclose(got, sp.logsumexp(a, axis=axis, b=b), rtol=1e-12)
    check_grads(lambda a, b: fs.logsumexp(a, axis=axis, b=b), (a, b), order=1)


# --- batching (vmap and the vectorized Jacobians) ----------------------------

BATCH = _uniform(-2.0, 2.0, (4, 2, 3))
BATCH_W = _uniform(0.5, 2.0, (4, 3))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vmap_logsumexp(axis, keepdims):
    lse = lambda a, b=None: fs.logsumexp(a, axis=axis, b=b, keepdims=keepdims)  # noqa: E731
    ref = lambda a, b=None: sp.logsumexp(a, axis=axis, b=b, keepdims=keepdims)  # noqa: E731
    np.testing.assert_allclose(fg.vmap(lse)(BATCH), np.stack([ref(a) for a in BATCH]), rtol=1e-12)
    np.testing.assert_allclose(
        fg.vmap(lse, in_axes=1)(BATCH), np.stack([ref(BATCH[:, i]) for i in range(2)]), rtol=1e-12)
    np.testing.assert_allclose(
        fg.vmap(lse)(BATCH, BATCH_W), np.stack([ref(a, b) for a, b in zip(BATCH, BATCH_W)]), rtol=1e-12)
    np.testing.assert_allclose(
        fg.vmap(lse, in_axes=(None, 0))(BATCH[0], BATCH_W), np.stack([ref(BATCH[0], b) for b in BATCH_W]),
        rtol=1e-12)
    got = fg.vmap(lambda a: fs.logsumexp(a, axis=axis, b=BATCH_W[0] - 1, keepdims=keepdims, return_sign=True))(BATCH)
    want = [sp.logsumexp(a, axis=axis, b=BATCH_W[0] - 1, keepdims=keepdims, return_sign=True) for a in BATCH]
    np.testing.assert_allclose(got[0], np.stack([w[0] for w in want]), rtol=1e-12)
    np.testing.assert_array_equal(got[1], np.stack([w[1] for w in want]))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
def test_vmap_softmax(axis):
    for f, ref in [(fs.softmax, sp.softmax), (fs.log_softmax, sp.log_softmax)]:
        got = fg.vmap(lambda x: f(x, axis=axis), in_axes=2)(BATCH)
        np.testing.assert_allclose(got, np.stack([ref(BATCH[:, :, i], axis=axis) for i in range(3)]), rtol=1e-12)


def test_vmap_elementwise_and_batch_rules_registered():
    np.testing.assert_allclose(fg.vmap(fs.erf)(BATCH), sp.erf(BATCH), rtol=1e-13)
    x = BATCH_W
    np.testing.assert_allclose(
        fg.vmap(lambda x: fs.polygamma(np.array([0, 1, 2]), x))(x), sp.polygamma(np.array([0, 1, 2]), x), rtol=1e-13)
    np.testing.assert_allclose(fg.vmap(fs.xlogy, in_axes=(0, None))(BATCH[:, 0], x[0]), sp.xlogy(BATCH[:, 0], x[0]))
    for name in ["_logsumexp", "_logsumexp_signed", "_softmax", "_log_softmax", "expit", "logit", "log_expit",
                 "erf", "erfc", "erfinv", "erfcinv", "gammaln", "gamma", "digamma", "polygamma", "xlogy",
                 "xlog1py", "i0", "i1"]:
        assert getattr(fs, name).primitive.batch_rule is not None, name


# --- namespaces and the optional SciPy dependency ----------------------------

def test_special_namespace_picks_the_module():
    assert fs._special_namespace(np) is sp
    fake = types.SimpleNamespace(__name__="fakexp", scipy_special=sp)
    assert fs._special_namespace(fake) is sp
    unknown = types.SimpleNamespace(__name__="mystery_arrays")
    with pytest.raises(NotImplementedError, match="mystery_arrays.*scipy_special"):
        fs._special_namespace(unknown, "erf")


def test_cupy_namespace_maps_to_cupyx():
    fake_cupy = types.ModuleType("cupy")
    try:
        import cupyx.scipy.special as want  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"cupyx\.scipy\.special.*funcgrad\[cuda\]"):
            fs._special_namespace(fake_cupy, "erf")
    else:
        assert fs._special_namespace(fake_cupy, "erf") is want


def test_missing_function_in_special_module_is_named():
    fake = types.SimpleNamespace(__name__="fakexp", scipy_special=types.SimpleNamespace(__name__="fakesp"))
    with pytest.raises(NotImplementedError, match="fakesp has no function 'erf'"):
        fs._special_function(fake, "erf")


def test_works_without_scipy():
    code = (
        "import sys; sys.modules['scipy'] = None; sys.modules['scipy.special'] = None\n"
        "import numpy as np, funcgrad as fg\n"
        "from funcgrad.scipy import special as fs\n"
        "x = np.array([0.5, -1.0, 2.0])\n"
        "assert abs(float(fs.logsumexp(x)) - np.log(np.exp(x).sum())) < 1e-12\n"
        "assert np.allclose(fg.grad(fs.logsumexp)(x), np.exp(x) / np.exp(x).sum())\n"
        "fs.softmax(x); fs.log_softmax(x); fs.expit(x); fs.logit(x / 4 + 0.5); fs.log_expit(x)\n"
        "try:\n"
        "    fs.erf(x)\n"
        "except ImportError as e:\n"
        "    print('IMPORTERROR', e)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "IMPORTERROR" in res.stdout
    assert "pip install funcgrad[scipy]" in res.stdout
    assert "erf" in res.stdout
