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


# ==========================================================================
# vmap (batching rules) of this family
#
# vmap of the reductions family: every primitive (the private scan helpers too)
# against a Python loop over the batch, over generated shapes, axes and batch
# positions; ``where=`` / ``initial=`` under vmap; and the Jacobian transforms
# (which batch the VJP/JVP rules) running without the loop fallback.

from hypothesis.extra import numpy as hnp  # noqa: E402
from factories import no_fallback as _no_fallback  # noqa: E402
from funcgrad.numpy import creation as _creation, reductions as R  # noqa: E402
BATCH_SETTINGS = settings(max_examples=25, deadline=None, derandomize=True)


def tol(dtype):
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else {"rtol": 2e-5, "atol": 2e-5}


# Primitives of other families that this family's rules call and that have no
# batching rule yet (checked at import, so the tests turn strict by themselves
# once the rule exists): the fallback is tolerated for these names only.
_ELSEWHERE = {"astype": _creation._astype}
NOT_YET_BATCHED = sorted(name for name, fn in _ELSEWHERE.items() if fn.primitive.batch_rule is None)


def no_fallback():
    """No loop fallback inside (except for NOT_YET_BATCHED), and warnings are errors."""
    return _no_fallback(allow=NOT_YET_BATCHED)


def loop(f, in_axes, *args):
    """Reference: f on each example, stacked along axis 0."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]) for b in range(size)]
    return np.stack([np.asarray(o) for o in outs])


def assert_batched(f, in_axes, *args, dtype=np.float64):
    with no_fallback():
        got = fg.vmap(f, in_axes=in_axes)(*args)
    want = loop(f, in_axes, *args)
    assert np.asarray(got).dtype == want.dtype
    assert np.shape(got) == want.shape
    np.testing.assert_allclose(np.asarray(got), want, **tol(dtype))


def values(kind, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if kind == "factors":  # magnitudes in [0.5, 1.5]: products stay O(1)
        return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def batch_of(per, size, pos, kind, dtype, seed):
    """``size`` examples of shape ``per``, stacked along axis ``pos`` (may be negative)."""
    x = values(kind, (size,) + tuple(per), dtype, seed)
    return np.moveaxis(x, 0, pos)


@st.composite
def batch_case(draw, allow_tuple=True, min_dims=0):
    """(per-example shape, batch size, batch position, axis, keepdims, seed)."""
    per = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=4))
    nd = len(per)
    pos = draw(st.integers(-(nd + 1), nd))
    axis = draw(axis_for(nd, allow_tuple))
    return per, draw(st.integers(1, 3)), pos, axis, draw(st.booleans()), draw(st.integers(0, 2**16))


# --------------------------------------------------------------------------- every primitive vs a loop

# name -> (f(x, axis, keepdims), kind of values, takes a tuple axis)
REDUCTIONS = {
    "sum": (lambda x, axis, kd: fnp.sum(x, axis=axis, keepdims=kd), "normal", True),
    "mean": (lambda x, axis, kd: fnp.mean(x, axis=axis, keepdims=kd), "normal", True),
    "prod": (lambda x, axis, kd: fnp.prod(x, axis=axis, keepdims=kd), "factors", True),
    "max": (lambda x, axis, kd: fnp.max(x, axis=axis, keepdims=kd), "normal", True),
    "min": (lambda x, axis, kd: fnp.min(x, axis, None, kd), "normal", True),  # positional, as NumPy allows
    "amax": (lambda x, axis, kd: fnp.amax(x, axis=axis, keepdims=kd), "normal", True),
    "amin": (lambda x, axis, kd: fnp.amin(x, axis=axis, keepdims=kd), "normal", True),
    "ptp": (lambda x, axis, kd: fnp.ptp(x, axis=axis, keepdims=kd), "normal", True),
    "var": (lambda x, axis, kd: fnp.var(x, axis=axis, keepdims=kd), "normal", True),
    "std": (lambda x, axis, kd: fnp.std(x, axis, None, None, 0, kd), "normal", True),
    "nansum": (lambda x, axis, kd: fnp.nansum(x, axis=axis, keepdims=kd), "normal", True),
    "nanmean": (lambda x, axis, kd: fnp.nanmean(x, axis=axis, keepdims=kd), "normal", True),
    "average": (lambda x, axis, kd: fnp.average(x, axis=axis, keepdims=kd), "normal", True),
    "cumsum": (lambda x, axis, kd: fnp.cumsum(x, axis=axis), "normal", False),  # axis=None flattens
    "cumprod": (lambda x, axis, kd: fnp.cumprod(x, axis), "factors", False),
    "sort": (lambda x, axis, kd: fnp.sort(x, axis=axis), "normal", False),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@BATCH_SETTINGS
@given(data=st.data())
def test_vmap_matches_loop(name, dtype, data):
    f, kind, tuples = REDUCTIONS[name]
    per, size, pos, axis, keepdims, seed = data.draw(batch_case(allow_tuple=tuples, min_dims=0 if tuples else 1))
    if name == "sort" and axis is None and seed % 2:
        axis = -1  # sort's default
    x = batch_of(per, size, pos, kind, dtype, seed)
    g = lambda x: f(x, axis, keepdims)  # noqa: E731
    assert_batched(g, (pos,), x, dtype=dtype)
    # and against NumPy itself, example by example
    ref = getattr(np, name)
    kw = {} if name in ("cumsum", "cumprod", "sort") else {"keepdims": keepdims}
    want = np.stack([np.asarray(ref(np.take(x, b, axis=pos), axis=axis, **kw)) for b in range(size)])
    with no_fallback():
        np.testing.assert_allclose(fg.vmap(g, in_axes=pos)(x), want, **tol(dtype))


@pytest.mark.parametrize("name", ["sum", "prod", "var", "std", "cumsum", "cumprod", "sort", "mean"])
def test_vmap_complex(name):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((3, 2, 4)) + 1j * rng.standard_normal((3, 2, 4))
    f = lambda z: getattr(fnp, name)(z, axis=-1)  # noqa: E731
    for pos in (0, 1, -1):
        assert_batched(f, (pos,), np.moveaxis(z, 0, pos))


@BATCH_SETTINGS
@given(c=batch_case(), pos2=st.integers(-1, 0))
def test_nested_vmap(c, pos2):
    per, size, pos, axis, keepdims, seed = c
    x = batch_of((2,) + tuple(per), size, pos, "normal", np.float64, seed)  # two batch axes
    inner_axis = pos2 % (len(per) + 1)
    f = lambda x: fnp.var(fnp.cumprod(x, axis=None), keepdims=keepdims) + fnp.sum(x, axis=axis)  # noqa: E731
    with no_fallback():
        got = fg.vmap(fg.vmap(f, in_axes=inner_axis), in_axes=pos)(x)
    want = np.stack([loop(f, (inner_axis,), np.take(x, b, axis=pos)) for b in range(size)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_scan_of_scalar_examples_flattens_each():
    v = np.array([1.5, -2.0, 3.0])
    with no_fallback():
        for name in ("cumsum", "cumprod"):
            got = fg.vmap(getattr(fnp, name))(v)
            assert got.shape == (3, 1)
            np.testing.assert_array_equal(got, v[:, None])
        np.testing.assert_array_equal(fg.vmap(lambda x: fnp.sort(x, axis=None))(v), v[:, None])
        for name in ("sum", "mean", "prod", "max", "min", "var", "std", "nansum", "nanmean"):
            got = fg.vmap(getattr(fnp, name))(v)
            np.testing.assert_allclose(got, [getattr(np, name)(a) for a in v], err_msg=name)


def test_average_with_batched_weights():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 4, 2))
    w = rng.uniform(0.5, 2.0, (4, 3))  # per-example weights along axis 0 of a
    f = lambda a, w: fnp.average(a, axis=0, weights=w)  # noqa: E731
    assert_batched(f, (0, 1), a, w)
    assert_batched(f, (None, 1), a[0], w)
    assert_batched(f, (-1, None), np.moveaxis(a, 0, -1), w[:, 0])
    f2 = lambda a, w: fnp.average(a, axis=(1, 0), weights=w, returned=True)[0]  # noqa: E731
    assert_batched(f2, (2, None), a.transpose(1, 2, 0), rng.uniform(0.5, 2.0, (2, 4)))
    full = lambda a, w: fnp.average(a, weights=w)  # noqa: E731
    assert_batched(full, (0, 0), a, rng.uniform(0.5, 2.0, a.shape))


def test_var_std_ddof_correction_and_dtype_under_vmap():
    x = np.random.default_rng(5).standard_normal((4, 3, 5)).astype(np.float32)
    for f in (lambda x: fnp.var(x, axis=1, ddof=1), lambda x: fnp.std(x, 0, np.float64, None, 2),
              lambda x: fnp.std(x, axis=(0, 1), correction=1, keepdims=True),
              lambda x: fnp.sum(x, axis=-1, dtype=np.float64), lambda x: fnp.cumprod(x, dtype=np.float64)):
        assert_batched(f, (1,), x, dtype=np.float32)


# --------------------------------------------------------------------------- where= and initial=


def _masks(shape, seed):
    return np.random.default_rng(seed).uniform(size=shape) > 0.4


@BATCH_SETTINGS
@given(c=batch_case(), pos_w=st.integers(-1, 0), which=st.sampled_from(["both", "mask", "array"]),
       low_rank=st.booleans())
def test_sum_where_batched(c, pos_w, which, low_rank):
    per, size, pos, axis, keepdims, seed = c
    wper = per[1:] if low_rank and per else per  # a mask that broadcasts against the example
    x = batch_of(per, size, pos, "normal", np.float64, seed)
    m = np.moveaxis(_masks((size,) + tuple(wper), seed), 0, pos_w)
    f = lambda x, m: fnp.sum(x, axis=axis, keepdims=keepdims, where=m)  # noqa: E731
    in_axes = {"both": (pos, pos_w), "mask": (None, pos_w), "array": (pos, None)}[which]
    args = (np.take(x, 0, axis=pos) if which == "mask" else x, np.take(m, 0, axis=pos_w) if which == "array" else m)
    assert_batched(f, in_axes, *args)
    # closed form: the masked-out entries add nothing
    got = fg.vmap(f, in_axes=in_axes)(*args)
    xs = args[0] if in_axes[0] is not None else np.expand_dims(args[0], pos)
    ms = args[1] if in_axes[1] is not None else np.expand_dims(args[1], pos_w)
    want = np.stack([np.sum(np.take(xs, b % xs.shape[pos], axis=pos) * np.take(ms, b % ms.shape[pos_w], axis=pos_w),
                            axis=axis, keepdims=keepdims) for b in range(np.shape(got)[0])])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_mean_where_from_the_example_and_its_gradients():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 3, 4))
    x[:, 0, :] = np.abs(x[:, 0, :])  # every column has a positive entry: no empty slice

    def f(x):
        return fnp.sum(fnp.mean(x ** 2, axis=0, where=x > 0)) + fnp.sum(fnp.sin(x), where=x < 0.5)

    assert_batched(f, (0,), x)
    assert_batched(lambda x: fnp.mean(x, axis=(0, 1), keepdims=True, where=x > 0), (2,), np.moveaxis(x, 0, 2))
    assert_batched(fg.grad(f), (0,), x)
    with no_fallback():
        g = fg.grad(lambda x: fnp.sum(fg.vmap(f)(x)))(x)
        h = fg.vmap(fg.hessian(f))(x)
    want_g = np.stack([fg.grad(f)(e) for e in x])
    np.testing.assert_allclose(g, want_g, atol=1e-12)
    np.testing.assert_allclose(h, np.stack([fg.jacrev(fg.jacrev(f))(e) for e in x]), atol=1e-12)
    # closed form of the gradient of one example
    e = x[0]
    pos = e > 0
    want = np.where(pos, 2 * e / pos.sum(0), 0.0) + np.where(e < 0.5, np.cos(e), 0.0)
    np.testing.assert_allclose(g[0], want, atol=1e-12)


def test_where_batched_by_another_vmap():
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((6, 5))
    ws = rng.uniform(size=(3, 5)) > 0.5
    with no_fallback():
        outer_mask = fg.vmap(lambda w: fg.vmap(lambda x: fnp.sum(x, where=w))(xs))(ws)
        outer_x = fg.vmap(lambda x: fg.vmap(lambda w: fnp.mean(x, where=fnp.logical_or(w, x > 0)))(ws))(xs)
        # gradient through a mask that another vmap batches
        g = fg.grad(lambda x: fnp.sum(fg.vmap(lambda w: fnp.sum(x * x, where=w))(ws)))(xs[0])
    np.testing.assert_allclose(outer_mask, [[np.sum(x, where=w) for x in xs] for w in ws], atol=1e-12)
    np.testing.assert_allclose(outer_x, [[np.mean(x, where=fnp.logical_or(w, x > 0)) for w in ws] for x in xs], atol=1e-12)
    np.testing.assert_allclose(g, 2 * xs[0] * ws.sum(0), atol=1e-12)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_initial_under_vmap(name):
    rng = np.random.default_rng(8)
    x = rng.uniform(0.5, 1.5, (3, 4, 2))
    f = lambda x: getattr(fnp, name)(x, axis=0, initial=1.2)  # noqa: E731
    assert_batched(f, (1,), x)
    np.testing.assert_allclose(fg.vmap(f, in_axes=1)(x), getattr(np, name)(x, axis=0, initial=1.2))
    # a per-example (batched) initial: NumPy takes one scalar per call, so this loops
    c = np.array([0.9, 1.1, 2.0, 0.2])
    g = lambda x, c: getattr(fnp, name)(x, axis=-1, initial=c)  # noqa: E731
    got = fg.vmap(g, in_axes=(1, 0))(x, c)
    np.testing.assert_allclose(got, loop(g, (1, 0), x, c), atol=1e-12)
    np.testing.assert_allclose(got, [getattr(np, name)(x[:, b], axis=-1, initial=c[b]) for b in range(4)])


@pytest.mark.parametrize("dtype", FLOATS)
def test_initial_is_differentiable_for_sum_and_prod(dtype):
    x = np.array([[0.5, -1.5, 2.0], [1.25, 0.0, -0.75]], dtype)
    c = np.array(0.7, dtype)
    for f in (lambda x, c: fnp.sum(x, axis=1, initial=c), lambda x, c: fnp.prod(x, axis=0, initial=c),
              lambda x, c: fnp.prod(x, initial=c, keepdims=True)):
        check_grads(f, (x, c), order=2, modes=("fwd", "rev"))
    # d sum(x, initial=c) / dc = number of outputs; d prod(x, initial=c) / dc = prod(x)
    gc = fg.grad(lambda c: fnp.sum(fnp.sum(x, axis=1, initial=c)))(c)
    assert gc == 2 and gc.dtype == dtype
    y = np.array([0.5, -1.5, 2.0], dtype)
    np.testing.assert_allclose(fg.grad(lambda c: fnp.prod(y, initial=c))(c), np.prod(y), rtol=1e-6)
    with no_fallback():
        per_c = fg.vmap(fg.grad(lambda c: fnp.prod(y, initial=c)))(np.array([1.0, 2.0], dtype))
    np.testing.assert_allclose(per_c, [np.prod(y)] * 2, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="argument 4 of primitive 'max'"):
        fg.grad(lambda c: fnp.max(y, initial=c))(c)


def test_out_and_wrappers_keep_the_primitive():
    for name in ("sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std", "cumsum", "cumprod", "sort",
                 "nansum", "nanmean"):
        assert getattr(fnp, name).primitive.batch_rule is not None, name
    for prim in (R._shift, R._linrec, R._rcumprod, R._rcumsum, R._permute):
        assert prim.primitive.batch_rule is not None, prim
    with pytest.raises(TypeError, match="sum does not support out="):
        fnp.sum(np.ones(3), out=np.empty(()))


# --------------------------------------------------------------------------- private scan primitives


@pytest.mark.parametrize("dtype", FLOATS)
@BATCH_SETTINGS
@given(c=batch_case(allow_tuple=False, min_dims=1), offset=st.integers(-5, 5), reverse=st.booleans(),
       which=st.sampled_from(["both", "first", "second"]), pos2=st.integers(-1, 0))
def test_private_scans_match_loop(dtype, c, offset, reverse, which, pos2):
    per, size, pos, axis, _, seed = c
    axis = 0 if axis is None else axis
    x = batch_of(per, size, pos, "factors", dtype, seed)
    y = batch_of(per, size, pos2, "normal", dtype, seed + 1)
    assert_batched(lambda x: R._shift(x, offset, axis, 1.5), (pos,), x, dtype=dtype)
    assert_batched(lambda x: R._shift(x, offset, axis), (pos,), x, dtype=dtype)
    assert_batched(lambda x: R._rcumprod(x, axis), (pos,), x, dtype=dtype)
    assert_batched(lambda x: R._rcumsum(x, axis), (pos,), x, dtype=dtype)
    in_axes = {"both": (pos, pos2), "first": (pos, None), "second": (None, pos2)}[which]
    args = (x if in_axes[0] is not None else np.take(x, 0, axis=pos),
            y if in_axes[1] is not None else np.take(y, 0, axis=pos2))
    assert_batched(lambda a, b: R._linrec(a, b, axis, reverse), in_axes, *args, dtype=dtype)
    # a permutation along the axis: argsort of other values, example by example
    idx = np.moveaxis(np.argsort(np.moveaxis(y, pos2, 0), axis=axis % len(per) + 1), 0, pos2)
    idx_args = (args[0], idx if in_axes[1] is not None else np.take(idx, 0, axis=pos2))
    assert_batched(lambda a, i: R._permute(a, i, axis), in_axes, *idx_args, dtype=dtype)


def test_private_scans_closed_forms_under_vmap():
    a = np.array([[0.5, 2.0, -1.0], [1.0, 1.0, 1.0]])
    b = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]])
    with no_fallback():
        h = fg.vmap(lambda a, b: R._linrec(a, b, 0))(a, b)
        hr = fg.vmap(lambda a, b: R._linrec(a, b, -1, True), in_axes=(0, None))(a, b[1])
        s = fg.vmap(lambda x: R._shift(x, 1, 0, 9.0), in_axes=1)(a.T)
    np.testing.assert_allclose(h, [[1.0, 3.0, -2.0], [1.0, 3.0, 6.0]])  # h[i] = a[i] h[i-1] + b[i]
    np.testing.assert_allclose(hr, [[5.0, 8.0, 3.0], [6.0, 5.0, 3.0]])  # h[i] = a[i] h[i+1] + b[i]
    np.testing.assert_array_equal(s, [[9.0, 0.5, 2.0], [9.0, 1.0, 1.0]])


# --------------------------------------------------------------------------- Jacobian transforms: no fallback

X = np.random.default_rng(9).uniform(0.5, 1.5, (3, 4)) * np.array([1.0, -1.0, 1.0, -1.0])
X[1, 2] += 0.37  # no ties anywhere
ROWS = np.random.default_rng(10).uniform(0.5, 1.5, (2, 3, 4)) * np.array([1.0, 1.0, -1.0, 1.0])

# name -> scalar function of a (3, 4) array using that reduction (nonlinear around it)
SCALAR = {
    "sum": lambda x: fnp.sum(fnp.sum(x * x, axis=1) ** 2),
    "sum_where": lambda x: fnp.sum(fnp.sum(x ** 3, axis=0, where=x > 0) ** 2),
    "sum_initial": lambda x: fnp.sum(fnp.sum(x, axis=1, initial=0.5) ** 3),
    "mean": lambda x: fnp.sum(fnp.mean(x, axis=(0,), keepdims=True) ** 3),
    "mean_where": lambda x: fnp.sum(fnp.mean(x * x, axis=1, where=x < 1.2) ** 2),
    "prod": lambda x: fnp.sum(fnp.prod(x, axis=0) ** 2) + fnp.prod(x[:2, :2]),
    "prod_initial": lambda x: fnp.sum(fnp.prod(x, axis=1, initial=-1.5)),
    "max": lambda x: fnp.sum(fnp.max(x * x, axis=1) ** 2),
    "min": lambda x: fnp.min(fnp.sin(x)) ** 2,
    "amax": lambda x: fnp.sum(fnp.amax(x, axis=0, keepdims=True) * x),
    "amin": lambda x: fnp.sum(fnp.amin(x, axis=-1, initial=5.0) ** 3),
    "ptp": lambda x: fnp.sum(fnp.ptp(x, axis=0) ** 2),
    "var": lambda x: fnp.sum(fnp.var(x, axis=1, ddof=1) ** 2),
    "std": lambda x: fnp.sum(fnp.std(x, axis=0) * fnp.std(x)),
    "average": lambda x: fnp.sum(fnp.average(x, axis=1, weights=x[0] ** 2) ** 2),
    "cumsum": lambda x: fnp.sum(fnp.cumsum(x, axis=1) ** 3),
    "cumsum_none": lambda x: fnp.sum(fnp.sin(fnp.cumsum(x))),
    "cumprod": lambda x: fnp.sum(fnp.cumprod(x, axis=0) ** 2),
    "cumprod_none": lambda x: fnp.sum(fnp.cumprod(x) * fnp.arange(12.0)),
    "sort": lambda x: fnp.sum(fnp.sort(x * x, axis=0) * fnp.arange(12.0).reshape(3, 4)),
    "sort_none": lambda x: fnp.sum(fnp.sort(x, axis=None) ** 3 * fnp.arange(12.0)),
    "nansum": lambda x: fnp.sum(fnp.nansum(x * x, axis=1) ** 2),
    "nanmean": lambda x: fnp.sum(fnp.nanmean(x ** 3, axis=0) ** 2),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_jacobians_and_hessian_without_fallback(name):
    f = SCALAR[name]
    with no_fallback():
        hess = fg.hessian(f)(X)
        rr = fg.jacrev(fg.jacrev(f))(X)
        ff = fg.jacfwd(fg.jacfwd(f))(X)
        jf = fg.jacfwd(f)(X)
        per_example = fg.vmap(fg.grad(f), in_axes=1)(np.moveaxis(ROWS, 0, 1))
    assert hess.shape == (3, 4, 3, 4)
    np.testing.assert_allclose(hess, rr, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hess, ff, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(jf, fg.grad(f)(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(per_example, np.stack([fg.grad(f)(r) for r in ROWS]), rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(hess) > 0
    rows32 = ROWS.astype(np.float32)
    with no_fallback():
        per_example32 = fg.vmap(fg.grad(f))(rows32)
    assert per_example32.dtype == np.float32
    np.testing.assert_allclose(per_example32, np.stack([fg.grad(f)(r) for r in rows32]), rtol=1e-5, atol=1e-5)
    # the Hessian is symmetric, and its action matches a finite difference of the gradient
    np.testing.assert_allclose(hess, hess.transpose(2, 3, 0, 1), rtol=1e-9, atol=1e-9)
    v = np.random.default_rng(11).standard_normal(X.shape)
    eps = 1e-6
    fd = (fg.grad(f)(X + eps * v) - fg.grad(f)(X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(np.tensordot(hess, v, 2), fd, rtol=1e-5, atol=1e-5)


def test_hessian_of_private_scans_without_fallback():
    a = X[:, :3].T.copy()  # (3, 3)
    b = X[:, 1:].T.copy()
    idx = np.argsort(b, axis=0)
    f = lambda a, b: fnp.sum(  # noqa: E731
        fnp.sin(R._linrec(a, b, 0)) * R._rcumprod(a, 1)
        + R._shift(a * b, -1, 1, 2.0) ** 2 + R._rcumsum(a * a, 0) * R._permute(b * b, idx, 0))
    with no_fallback():
        hess = fg.hessian(f, argnums=(0, 1))(a, b)
        rr = fg.jacrev(fg.jacrev(f, argnums=(0, 1)), argnums=(0, 1))(a, b)
        per_example = fg.vmap(fg.grad(f, argnums=(0, 1)), in_axes=(2, None))(np.stack([a, 2 * a], -1), b)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(hess[i][j], rr[i][j], rtol=1e-10, atol=1e-10)
    want = [fg.grad(f, argnums=(0, 1))(s * a, b) for s in (1.0, 2.0)]
    for k in range(2):
        np.testing.assert_allclose(per_example[k], np.stack([w[k] for w in want]), rtol=1e-12, atol=1e-12)
