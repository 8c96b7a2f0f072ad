"""Reductions and scans: forward values against NumPy, derivatives against finite
differences (check_grads, both modes, order 2) over generated shapes and axes,
and closed forms at the non-smooth or degenerate points (zeros in prod and
cumprod, ties in max/min, constant input to std, sort permutations)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)
FLOATS = [np.float64, np.float32]


# --------------------------------------------------------------------------- strategies

from strategies import axis_for, shapes  # noqa: E402


@st.composite
def case(draw, allow_tuple=True):
    shape = draw(shapes)
    axis = draw(axis_for(len(shape), allow_tuple))
    keepdims = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return shape, axis, keepdims, seed


def normal(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def separated(shape, dtype, seed):
    """Distinct values at least 0.15 apart: no ties, so max/min/sort are smooth there."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=int))
    v = rng.permutation(n) * 0.25 - 0.125 * n + rng.uniform(-0.05, 0.05, n)
    return v.reshape(shape).astype(dtype)


def factors(shape, dtype, seed):
    """Magnitudes in [0.5, 1.5] with random signs: products of many stay O(1)."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def assert_forward(f_fg, f_np, x):
    """funcgrad equals NumPy exactly on plain arrays, and on traced values."""
    want = f_np(x)
    got = f_fg(x)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    traced, _ = fg.jvp(f_fg, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(want))


def check(f, args):
    check_grads(f, args, order=2, modes=("fwd", "rev"))


# --------------------------------------------------------------------------- property tests


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
@SETTINGS
@given(c=case())
def test_linear_and_prod(name, dtype, c):
    shape, axis, keepdims, seed = c
    x = (factors if name == "prod" else normal)(shape, dtype, seed)
    f = lambda x: getattr(fnp, name)(x, axis=axis, keepdims=keepdims)  # noqa: E731
    assert_forward(f, lambda x: getattr(np, name)(x, axis=axis, keepdims=keepdims), x)
    check(f, (x,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "ptp"])
@SETTINGS
@given(c=case())
def test_extrema(name, dtype, c):
    shape, axis, keepdims, seed = c
    x = separated(shape, dtype, seed)
    f = lambda x: getattr(fnp, name)(x, axis=axis, keepdims=keepdims)  # noqa: E731
    assert_forward(f, lambda x: getattr(np, name)(x, axis=axis, keepdims=keepdims), x)
    check(f, (x,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["var", "std"])
@SETTINGS
@given(c=case(), ddof=st.integers(0, 2))
def test_moments(name, dtype, c, ddof):
    shape, axis, keepdims, seed = c
    x = normal(shape, dtype, seed)
    n = x.size // max(np.asarray(np.sum(x, axis=axis)).size, 1)
    ddof = min(ddof, n - 1)  # keep N - ddof > 0
    f = lambda x: getattr(fnp, name)(x, axis=axis, ddof=ddof, keepdims=keepdims)  # noqa: E731
    assert_forward(f, lambda x: getattr(np, name)(x, axis=axis, ddof=ddof, keepdims=keepdims), x)
    if name == "std" and n == 1:
        return  # a one-element slice: std is the constant 0 (tested below)
    check(f, (x,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "sort"])
@SETTINGS
@given(c=case(allow_tuple=False))
def test_scans_and_sort(name, dtype, c):
    shape, axis, _, seed = c
    if axis is None and name == "sort" and seed % 2:
        axis = -1  # sort's default
    if not shape and name == "sort" and axis is not None:
        shape = (3,)
    x = {"cumsum": normal, "cumprod": factors, "sort": separated}[name](shape, dtype, seed)
    f = lambda x: getattr(fnp, name)(x, axis=axis)  # noqa: E731
    assert_forward(f, lambda x: getattr(np, name)(x, axis=axis), x)
    check(f, (x,))


@st.composite
def average_case(draw):
    shape, axis, keepdims, seed = draw(case())
    full = axis is None or draw(st.booleans())
    if full:
        wshape = shape
    else:
        axes = (axis,) if isinstance(axis, int) else axis
        wshape = tuple(shape[a] for a in axes)
    return shape, axis, keepdims, seed, wshape, draw(st.booleans())


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(c=average_case())
def test_average(dtype, c):
    shape, axis, keepdims, seed, wshape, returned = c
    a = normal(shape, dtype, seed)
    w = np.random.default_rng(seed + 1).uniform(0.5, 2.0, wshape).astype(dtype)
    f = lambda a, w: fnp.average(a, axis, w, returned, keepdims=keepdims)  # noqa: E731
    want = np.average(a, axis, w, returned, keepdims=keepdims)
    got = f(a, w)
    for g_, w_ in zip(got if returned else [got], want if returned else [want]):
        assert np.asarray(g_).dtype == np.asarray(w_).dtype
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), rtol=1e-6 if dtype == np.float64 else 1e-5)
        assert np.shape(g_) == np.shape(w_)
    check(f, (a, w))
    # unweighted: the mean
    g = lambda a: fnp.average(a, axis, keepdims=keepdims)  # noqa: E731
    np.testing.assert_array_equal(g(a), np.average(a, axis, keepdims=keepdims))
    check(g, (a,))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std", "cumsum", "cumprod"])
def test_complex(name):
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    axis = 1 if name.startswith("cum") else (0, 1) if name == "prod" else 0
    f = lambda z: getattr(fnp, name)(z, axis=axis)  # noqa: E731
    np.testing.assert_array_equal(f(z), getattr(np, name)(z, axis=axis))
    check_grads(f, (z,), order=2)
    check_grads(f, (z.astype(np.complex64),), order=2)


# --------------------------------------------------------------------------- prod / cumprod with zeros


def _prod_grad_closed_form(x):
    return np.array([np.prod(np.delete(x, i)) for i in range(x.size)])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("zeros", [[1], [0, 3], [1, 2, 4]])
def test_prod_with_zeros(dtype, zeros):
    x = np.array([1.5, -2.0, 0.5, 3.0, -1.25], dtype)
    x[zeros] = 0
    g = fg.grad(fnp.prod)(x)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, _prod_grad_closed_form(x), rtol=1e-6)
    if len(zeros) == 1:
        assert g[zeros[0]] != 0 and np.all(np.delete(g, zeros) == 0)
    else:
        assert np.all(g == 0)
    # second order: d2 prod / dx_i dx_j = prod(x_k, k != i, j) off the diagonal, 0 on it
    n = x.size
    want = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)] for i in range(n)])
    for hess in (fg.hessian(fnp.prod)(x), fg.jacfwd(fg.jacrev(fnp.prod))(x), fg.jacrev(fg.jacrev(fnp.prod))(x)):
        np.testing.assert_allclose(np.asarray(hess), want, rtol=1e-6)
    check_grads(fnp.prod, (x,), order=2)


def test_prod_with_zeros_along_axes():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (3, 4, 2))
    x[0, 1, 0] = 0
    x[2, 1, 1] = 0
    x[2, 3, 1] = 0
    x[1, 0, 0] = 0
    x[1, 2, 1] = 0  # slice [1, :, :] holds two zeros
    for axis in [1, -1, (0, 2), (2, 1), None]:
        for keepdims in (False, True):
            f = lambda x: fnp.prod(x, axis=axis, keepdims=keepdims)  # noqa: E731
            np.testing.assert_array_equal(f(x), np.prod(x, axis=axis, keepdims=keepdims))
            check_grads(f, (x,), order=2)
    # closed form over (1, 2): each element's derivative is the product of the rest of its slice
    g = fg.grad(lambda x: fnp.sum(fnp.prod(x, axis=(1, 2)) * np.array([1.0, 2.0, 3.0])))(x)
    want = np.zeros_like(x)
    for i in range(3):
        flat = x[i].ravel()
        want[i] = (i + 1) * _prod_grad_closed_form(flat).reshape(4, 2)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    assert np.all(g[1] == 0)  # two zeros in that slice


def test_prod_initial_and_dtype():
    x = np.array([2.0, 0.0, 3.0], np.float32)
    g = fg.grad(lambda x: fnp.prod(x, initial=2.0))(x)
    np.testing.assert_allclose(g, [0.0, 12.0, 0.0])
    assert g.dtype == np.float32
    g = fg.grad(lambda x: fnp.prod(x, dtype=np.float64))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [0.0, 6.0, 0.0])
    check_grads(lambda x: fnp.prod(x, initial=-1.5), (np.array([0.5, 2.0, 0.0]),), order=2)


def _cumprod_jac_closed_form(x):
    n = x.size
    return np.array([[np.prod(np.delete(x[: k + 1], i)) if i <= k else 0.0 for i in range(n)] for k in range(n)])


@pytest.mark.parametrize("zeros", [[], [2], [0, 3], [1, 2]])
def test_cumprod_with_zeros(zeros):
    x = np.array([1.5, -2.0, 0.5, 3.0, -1.25])
    x[zeros] = 0
    want = _cumprod_jac_closed_form(x)
    np.testing.assert_allclose(fg.jacrev(fnp.cumprod)(x), want, rtol=1e-12)
    np.testing.assert_allclose(fg.jacfwd(fnp.cumprod)(x), want, rtol=1e-12)
    check_grads(fnp.cumprod, (x,), order=2)
    check_grads(fnp.cumprod, (x.astype(np.float32),), order=2)
    # along an axis of a 2-D array, each row on its own
    X = np.stack([x, x[::-1], np.ones_like(x)])
    J = fg.jacrev(lambda X: fnp.cumprod(X, axis=1))(X)
    for r in range(3):
        np.testing.assert_allclose(J[r, :, r, :], _cumprod_jac_closed_form(X[r]), rtol=1e-12)
    check_grads(lambda X: fnp.cumprod(X, axis=0), (X.T.copy(),), order=2)


def test_cumsum_closed_form():
    x = np.arange(1.0, 5.0)
    np.testing.assert_array_equal(fg.jacrev(fnp.cumsum)(x), np.tril(np.ones((4, 4))))
    np.testing.assert_array_equal(fg.jacfwd(fnp.cumsum)(x), np.tril(np.ones((4, 4))))
    X = np.ones((2, 3), np.float32)
    g = fg.grad(lambda X: fnp.sum(fnp.cumsum(X, axis=-1) * np.array([1.0, 10.0, 100.0], np.float32)))(X)
    np.testing.assert_array_equal(g, [[111.0, 110.0, 100.0]] * 2)
    assert g.dtype == np.float32


# --------------------------------------------------------------------------- ties in max / min


@pytest.mark.parametrize("dtype", FLOATS)
def test_ties_share_equally(dtype):
    x = np.array([1.0, 3.0, -2.0, 3.0, 0.5, 3.0], dtype)
    for name in ("max", "amax"):
        g = fg.grad(getattr(fnp, name))(x)
        assert g.dtype == dtype
        np.testing.assert_allclose(g, [0, 1 / 3, 0, 1 / 3, 0, 1 / 3], rtol=1e-6)
    y = np.array([-2.0, 3.0, -2.0, 0.0], dtype)
    for name in ("min", "amin"):
        np.testing.assert_allclose(fg.grad(getattr(fnp, name))(y), [0.5, 0, 0.5, 0], rtol=1e-6)
    # forward mode: the mean of the tangent over the tied positions
    t = np.arange(6, dtype=dtype)
    _, tt = fg.jvp(fnp.max, (x,), (t,))
    np.testing.assert_allclose(tt, (1 + 3 + 5) / 3, rtol=1e-6)
    assert np.asarray(tt).dtype == dtype
    # second order is zero (piecewise linear)
    np.testing.assert_array_equal(fg.hessian(fnp.max)(x), np.zeros((6, 6)))
    # ptp: max ties and min ties each share
    np.testing.assert_allclose(fg.grad(fnp.ptp)(y), [-0.5, 1, -0.5, 0], rtol=1e-6)


def test_ties_along_axes():
    x = np.array([[1.0, 4.0, 4.0], [2.0, 2.0, 2.0], [5.0, 0.0, 1.0]])
    for keepdims in (False, True):
        out, f_vjp = fg.vjp(lambda x: fnp.max(x, axis=1, keepdims=keepdims), x)
        np.testing.assert_array_equal(out, np.max(x, axis=1, keepdims=keepdims))
        u = np.array([3.0, 6.0, 1.0]).reshape(np.shape(out))
        (ct,) = f_vjp(u)
        np.testing.assert_allclose(ct, [[0, 1.5, 1.5], [2, 2, 2], [1, 0, 0]])
        _, tt = fg.jvp(lambda x: fnp.max(x, axis=1, keepdims=keepdims), (x,), (np.arange(9.0).reshape(3, 3),))
        np.testing.assert_allclose(np.ravel(tt), [1.5, 4.0, 6.0])
    g = fg.grad(lambda x: fnp.min(x, axis=(0, 1)))(np.array([[1.0, 1.0], [1.0, 2.0]]))
    np.testing.assert_allclose(g, [[1 / 3, 1 / 3], [1 / 3, 0]])


def test_max_initial_beats_everything():
    x = np.array([1.0, 2.0])
    assert fnp.max(x, initial=5.0) == 5.0
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.max(x, initial=5.0))(x), [0.0, 0.0])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.max(x, initial=0.0))(x), [0.0, 1.0])
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.min(x, initial=-5.0))(x), [0.0, 0.0])


# --------------------------------------------------------------------------- var / std


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_closed_form(ddof):
    x = np.array([1.0, 4.0, -2.0, 0.5, 3.0])
    n, m = x.size, x.mean()
    np.testing.assert_allclose(fg.grad(lambda x: fnp.var(x, ddof=ddof))(x), 2 * (x - m) / (n - ddof))
    s = np.std(x, ddof=ddof)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.std(x, ddof=ddof))(x), (x - m) / ((n - ddof) * s))
    # correction= is the array-API name for ddof
    np.testing.assert_allclose(fg.grad(lambda x: fnp.var(x, correction=ddof))(x), 2 * (x - m) / (n - ddof))
    # hessian of var: 2/(N - ddof) * (I - 1/N)
    np.testing.assert_allclose(
        fg.hessian(lambda x: fnp.var(x, ddof=ddof))(x), 2 / (n - ddof) * (np.eye(n) - 1 / n), atol=1e-12
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_std_at_constant_input(dtype):
    for c in (1.0, 0.0, -3.0):
        x = np.full((2, 3), c, dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no divide-by-zero / invalid warnings either
            g = fg.grad(lambda x: fnp.sum(fnp.std(x, axis=1)))(x)
            h = fg.hessian(fnp.std)(x)
            _, t = fg.jvp(fnp.std, (x,), (np.ones_like(x),))
        assert g.dtype == dtype
        np.testing.assert_array_equal(g, 0.0)
        assert np.all(np.isfinite(h))
        assert t == 0
    # constant only up to rounding (mean(0.1, 0.1, 0.1) != 0.1): finite, a valid subgradient
    x = np.full(3, 0.1)
    g = fg.grad(fnp.std)(x)
    assert np.all(np.isfinite(g)) and abs(g.sum()) < 1e-12 and np.linalg.norm(g) <= 1 / np.sqrt(3) + 1e-12


def test_moments_dtype_argument():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    for name in ("sum", "mean", "prod", "var", "std", "cumsum", "cumprod", "nansum", "nanmean"):
        f = getattr(fnp, name)
        assert f(x, dtype=np.float64).dtype == np.float64
        g = fg.grad(lambda x: fnp.sum(f(x, dtype=np.float64)))(x)
        assert g.dtype == np.float32, name
        np.testing.assert_allclose(g, fg.grad(lambda x: fnp.sum(f(x)))(x), rtol=1e-6)
        _, t = fg.jvp(lambda x: f(x, dtype=np.float64), (x,), (np.ones_like(x),))
        assert np.asarray(t).dtype == np.float64, name


# --------------------------------------------------------------------------- sort


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_gradient_is_a_permutation(axis):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5))
    u = rng.standard_normal(np.sort(x, axis=axis).shape)
    out, f_vjp = fg.vjp(lambda x: fnp.sort(x, axis=axis), x)
    np.testing.assert_array_equal(out, np.sort(x, axis=axis))
    (ct,) = f_vjp(u)
    perm = np.argsort(x, axis=axis)
    want = np.zeros(x.size) if axis is None else np.zeros_like(x)
    if axis is None:
        want[perm] = u
        want = want.reshape(x.shape)
    else:
        np.put_along_axis(want, perm, u, axis=axis)
    np.testing.assert_array_equal(ct, want)
    _, t = fg.jvp(lambda x: fnp.sort(x, axis=axis), (x,), (u.reshape(x.shape) if axis is None else u,))
    tx = u.reshape(x.shape) if axis is None else u
    np.testing.assert_array_equal(t, np.take_along_axis(tx.ravel() if axis is None else tx, perm, axis=axis or 0))


def test_sort_kwargs_and_ties():
    x = np.array([3.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(fnp.sort(x, kind="stable"), np.sort(x))
    np.testing.assert_array_equal(fnp.sort(x, stable=True), np.sort(x))
    g = fg.grad(lambda x: fnp.sum(fnp.sort(x) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    # tied 3.0s take slots 3 and 4 in some order
    assert g[1] == 1 and g[3] == 2 and sorted([g[0], g[2]]) == [3, 4]


# --------------------------------------------------------------------------- sum / mean extras, nan*, average


def test_sum_mean_where_initial():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([[True, False], [True, True]])
    assert fnp.sum(x, where=w) == np.sum(x, where=w)
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(x, where=w))(x), w.astype(float))
    np.testing.assert_array_equal(fnp.mean(x, axis=1, where=w), np.mean(x, axis=1, where=w))
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(fnp.mean(x, axis=1, where=w)))(x), [[1, 0], [0.5, 0.5]])
    check_grads(lambda x: fnp.mean(x, axis=0, where=w), (x,), order=2)
    assert fnp.sum(x, initial=10.0) == 20.0
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(x, initial=10.0))(x), np.ones((2, 2)))
    _, t = fg.jvp(lambda x: fnp.sum(x, initial=10.0), (x,), (np.ones_like(x),))
    assert t == 4.0
    # positional arguments, as NumPy takes them
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fnp.sum(x, 0, None, None, True) ** 2))(x), [[8, 12]] * 2)
    # box methods
    np.testing.assert_allclose(fg.grad(lambda x: x.prod(axis=0).sum() + x.max() + x.std(ddof=1))(x).shape, (2, 2))


def test_nan_reductions():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 2.0]])
    for name in ("nansum", "nanmean"):
        for axis in (None, 0, 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = getattr(np, name)(x, axis=axis)
            np.testing.assert_array_equal(getattr(fnp, name)(x, axis=axis), want)
    g = fg.grad(fnp.nansum)(x)
    np.testing.assert_array_equal(g, [[1, 0, 1], [0, 1, 1]])
    g = fg.grad(lambda x: fnp.sum(fnp.nanmean(x, axis=1)))(x)
    np.testing.assert_allclose(g, [[0.5, 0, 0.5], [0, 0.5, 0.5]])
    _, t = fg.jvp(lambda x: fnp.nanmean(x, axis=1, keepdims=True), (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, [[1.0], [1.0]])
    y = np.array([[1.0, 0.5, 3.0], [-1.0, 2.0, 2.5]])
    for dtype in FLOATS:
        check_grads(lambda y: fnp.nansum(y, axis=1), (y.astype(dtype),), order=2)
        check_grads(lambda y: fnp.nanmean(y, axis=0, keepdims=True), (y.astype(dtype),), order=2)


def test_average_closed_form_and_errors():
    a = np.array([1.0, 3.0, 8.0])
    w = np.array([1.0, 1.0, 2.0])
    # d avg / d w_i = (a_i - avg) / sum(w); d avg / d a_i = w_i / sum(w)
    avg = np.average(a, weights=w)
    ga, gw = fg.grad(lambda a, w: fnp.average(a, weights=w), argnums=(0, 1))(a, w)
    np.testing.assert_allclose(ga, w / w.sum())
    np.testing.assert_allclose(gw, (a - avg) / w.sum())
    avg2, scl = fnp.average(np.ones((2, 3)), axis=1, weights=w, returned=True)
    np.testing.assert_array_equal(scl, [4.0, 4.0])
    with pytest.raises(TypeError, match="axis must be specified"):
        fnp.average(np.ones((2, 3)), weights=w)
    with pytest.raises(ValueError, match="shape of weights"):
        fnp.average(np.ones((2, 3)), axis=0, weights=w)
    with pytest.raises(ZeroDivisionError, match="weights sum to zero"):
        fnp.average(a, weights=np.array([1.0, -1.0, 0.0]))
    ints = np.array([1, 2, 4])
    assert fnp.average(ints, weights=np.array([1, 1, 2])) == np.average(ints, weights=np.array([1, 1, 2]))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "var", "std", "cumsum", "cumprod", "nansum"])
def test_out_is_rejected(name):
    with pytest.raises(TypeError, match=f"{name} does not support out="):
        getattr(fnp, name)(np.ones(3), out=np.empty(()) if not name.startswith("cum") else np.empty(3))


def test_bad_axis_names_axis():
    with pytest.raises(np.exceptions.AxisError):
        fnp.sum(np.ones((2, 2)), axis=2)
    with pytest.raises(np.exceptions.AxisError):
        fg.grad(lambda x: fnp.max(x, axis=(0, 5)).sum())(np.ones((2, 2)))
