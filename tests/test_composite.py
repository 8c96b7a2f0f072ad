"""Composite funcgrad.numpy functions (funcgrad/numpy/composite.py): values against NumPy,
derivatives to second order in both modes, vmap without loop fallbacks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import composite
from funcgrad.testing import check_grads

RNG = np.random.default_rng(1234)


def distinct(shape, dtype=np.float64, seed=0):
    """Well separated, distinct values (no ties for sort-based functions)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = (np.arange(n) * 0.37 + rng.uniform(0.0, 0.1, n))
    return rng.permutation(vals).reshape(shape).astype(dtype)


def close(a, b, **kw):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True, **kw)


# --------------------------------------------------------------------------
# names

def test_names_exported():
    for name in composite.__all__:
        assert getattr(fnp, name) is getattr(composite, name)
    for name in ["median", "percentile", "quantile", "diff", "ediff1d", "gradient", "trapezoid", "trapz",
                 "interp", "select", "polyval", "vander", "convolve", "correlate", "cov", "corrcoef",
                 "append", "nanmax", "nanmin", "nanvar", "nanstd", "nanmedian", "delete", "divmod", "modf"]:
        assert name in composite.__all__ and hasattr(fnp, name)


# --------------------------------------------------------------------------
# forward values

AXES = [None, 0, 1, -1, (0, 2)]


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile_family_values(axis, keepdims):
    a = RNG.normal(size=(4, 5, 6))
    close(fnp.median(a, axis=axis, keepdims=keepdims), np.median(a, axis=axis, keepdims=keepdims))
    for q in [0.3, [0.0, 0.5, 0.99, 1.0], np.array([[0.2, 0.7], [0.05, 1.0]])]:
        close(fnp.quantile(a, q, axis=axis, keepdims=keepdims), np.quantile(a, q, axis=axis, keepdims=keepdims))
        p = np.asarray(q) * 100
        close(fnp.percentile(a, p, axis=axis, keepdims=keepdims),
              np.percentile(a, p, axis=axis, keepdims=keepdims))


def test_median_odd_even_int_and_dtype():
    close(fnp.median(np.arange(5)), np.median(np.arange(5)))
    close(fnp.median(np.array([4, 1, 3, 2])), 2.5)
    assert fnp.median(np.arange(5)).dtype == np.float64
    assert fnp.median(np.ones(4, np.float32)).dtype == np.float32


def test_quantile_bad_method_and_empty():
    with pytest.raises(NotImplementedError, match="nearest"):
        fnp.quantile(np.ones(3), 0.5, method="nearest")
    with pytest.raises(ValueError, match="empty"):
        fnp.median(np.ones((2, 0)), axis=1)


@pytest.mark.parametrize("axis", [None, 0, 1, 2])
def test_nan_functions_values(axis):
    b = RNG.normal(size=(3, 4, 5))
    b[0, 1, 2] = np.nan
    b[1, :, 3] = np.nan  # an all-nan slice along axis 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["nanmedian", "nanmax", "nanmin", "nanvar", "nanstd"]:
            close(getattr(fnp, name)(b, axis=axis), getattr(np, name)(b, axis=axis))
        close(fnp.median(b, axis=axis), np.median(b, axis=axis))
        close(fnp.nanquantile(b, [0.25, 0.8], axis=axis), np.nanquantile(b, [0.25, 0.8], axis=axis))
        close(fnp.nanvar(b, axis=axis, ddof=1, keepdims=True), np.nanvar(b, axis=axis, ddof=1, keepdims=True))


def test_diff_values():
    a = RNG.normal(size=(4, 5))
    for n in [0, 1, 2, 3]:
        for axis in [0, 1, -1]:
            close(fnp.diff(a, n, axis), np.diff(a, n, axis))
    close(fnp.diff(a, axis=0, prepend=0.0, append=a[:1]), np.diff(a, axis=0, prepend=0.0, append=a[:1]))
    b = np.array([True, False, False, True])
    assert np.array_equal(fnp.diff(b), np.diff(b))
    with pytest.raises(ValueError, match="non-negative"):
        fnp.diff(a, -1)
    close(fnp.ediff1d(a, to_end=[1, 2], to_begin=5), np.ediff1d(a, to_end=[1, 2], to_begin=5))
    close(fnp.ediff1d(a), np.ediff1d(a))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_values(edge_order):
    a = RNG.normal(size=(4, 5))
    r, e = fnp.gradient(a, edge_order=edge_order), np.gradient(a, edge_order=edge_order)
    assert isinstance(r, tuple) and len(r) == len(e) == 2
    for x, y in zip(r, e):
        close(x, y)
    close(fnp.gradient(a, 0.3, axis=1, edge_order=edge_order), np.gradient(a, 0.3, axis=1, edge_order=edge_order))
    for x, y in zip(fnp.gradient(a, 0.3, 2.0, edge_order=edge_order), np.gradient(a, 0.3, 2.0, edge_order=edge_order)):
        close(x, y)
    close(fnp.gradient(a[0], edge_order=edge_order), np.gradient(a[0], edge_order=edge_order))
    with pytest.raises(NotImplementedError, match="scalar spacings"):
        fnp.gradient(a[0], np.arange(5.0))


def test_trapezoid_values():
    a = RNG.normal(size=(4, 5))
    x = np.sort(RNG.normal(size=5))
    close(fnp.trapezoid(a, x), np.trapezoid(a, x))
    close(fnp.trapezoid(a, dx=0.5, axis=0), np.trapezoid(a, dx=0.5, axis=0))
    close(fnp.trapezoid(a, x[:4], axis=0), np.trapezoid(a, x[:4], axis=0))
    close(fnp.trapezoid(a, np.cumsum(np.abs(a), axis=1)), np.trapezoid(a, np.cumsum(np.abs(a), axis=1)))
    assert fnp.trapz is fnp.trapezoid


def test_interp_values():
    xp = np.sort(RNG.normal(size=6))
    fp = RNG.normal(size=6)
    xs = np.concatenate([RNG.normal(size=20) * 2, xp])
    for left, right in [(None, None), (-5.0, 7.0)]:
        close(fnp.interp(xs, xp, fp, left, right), np.interp(xs, xp, fp, left, right))
    close(fnp.interp(0.3, xp, fp), np.interp(0.3, xp, fp))
    close(fnp.interp(xs.reshape(2, -1), xp, fp), np.interp(xs.reshape(2, -1), xp, fp))
    close(fnp.interp(xs, xp[:1], fp[:1]), np.interp(xs, xp[:1], fp[:1]))
    with pytest.raises(NotImplementedError, match="period"):
        fnp.interp(xs, xp, fp, period=1.0)
    with pytest.raises(ValueError, match="same length"):
        fnp.interp(xs, xp, fp[:3])


def test_select_polyval_vander_values():
    x = np.arange(10.0)
    close(fnp.select([x < 3, x > 5], [x, x ** 2], default=-1.0), np.select([x < 3, x > 5], [x, x ** 2], default=-1.0))
    close(fnp.select([x < 3], [2.0]), np.select([x < 3], [2.0]))
    with pytest.raises(TypeError, match="boolean"):
        fnp.select([x], [x])
    p = RNG.normal(size=4)
    a = RNG.normal(size=(3, 2))
    close(fnp.polyval(p, a), np.polyval(p, a))
    close(fnp.polyval([3.0], a), np.polyval([3.0], a))
    close(fnp.polyval(p, 0.7), np.polyval(p, 0.7))
    close(fnp.vander(p), np.vander(p))
    close(fnp.vander(p, 6, increasing=True), np.vander(p, 6, increasing=True))
    close(fnp.vander(p, 0), np.vander(p, 0))


@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (5, 5), (6, 4), (4, 6), (1, 1), (5, 1), (2, 5)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate_values(n, m, mode):
    u, v = RNG.normal(size=n), RNG.normal(size=m)
    close(fnp.convolve(u, v, mode), np.convolve(u, v, mode))
    close(fnp.correlate(u, v, mode), np.correlate(u, v, mode))
    uc, vc = u + 1j * RNG.normal(size=n), v + 1j * RNG.normal(size=m)
    close(fnp.convolve(uc, vc, mode), np.convolve(uc, vc, mode))
    close(fnp.correlate(uc, vc, mode), np.correlate(uc, vc, mode))


def test_convolve_errors():
    with pytest.raises(ValueError, match="mode"):
        fnp.convolve(np.ones(3), np.ones(2), "bogus")
    with pytest.raises(ValueError, match="empty"):
        fnp.convolve(np.ones(3), np.ones(0))
    with pytest.raises(ValueError, match="1-D"):
        fnp.convolve(np.ones((3, 2)), np.ones(2))


def test_cov_corrcoef_values():
    b, y = RNG.normal(size=(3, 6)), RNG.normal(size=(2, 6))
    for kw in [{}, {"rowvar": False}, {"bias": True}, {"ddof": 3}]:
        close(fnp.cov(b, **kw), np.cov(b, **kw))
        close(fnp.cov(b[0], **kw), np.cov(b[0], **kw))
    close(fnp.cov(b, y), np.cov(b, y))
    close(fnp.cov(b.T, y.T, rowvar=False), np.cov(b.T, y.T, rowvar=False))
    bc = b + 1j * RNG.normal(size=b.shape)
    close(fnp.cov(bc), np.cov(bc))
    close(fnp.corrcoef(b), np.corrcoef(b))
    close(fnp.corrcoef(b[0], y[0]), np.corrcoef(b[0], y[0]))
    close(fnp.corrcoef(b.T, rowvar=False), np.corrcoef(b.T, rowvar=False))
    close(fnp.corrcoef(b[0]), np.corrcoef(b[0]))
    with pytest.raises(NotImplementedError, match="aweights"):
        fnp.cov(b, aweights=np.ones(6))


def test_append_delete_divmod_modf_values():
    b, y = RNG.normal(size=(3, 6)), RNG.normal(size=(2, 6))
    close(fnp.append(b, y), np.append(b, y))
    close(fnp.append(b, y, axis=0), np.append(b, y, axis=0))
    for obj in [1, [0, 2], slice(1, None, 2), np.array([True, False, True, False, False, False])]:
        close(fnp.delete(b, obj, axis=1), np.delete(b, obj, axis=1))
    close(fnp.delete(b, [0, 5]), np.delete(b, [0, 5]))
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.delete(b, 9, axis=1)
    z = RNG.normal(size=5) * 3
    for r, e in zip(fnp.divmod(z, 1.3), np.divmod(z, 1.3)):
        close(r, e)
    for r, e in zip(fnp.modf(z), np.modf(z)):
        close(r, e)


# --------------------------------------------------------------------------
# derivatives

def _grad_cases(dtype):
    a = distinct((3, 4), dtype)
    v1 = distinct((7,), dtype, seed=1)
    xp = np.sort(distinct((6,), dtype, seed=2))
    fp = RNG.normal(size=6).astype(dtype)
    xq = (xp[:-1] + np.diff(xp) * np.array([0.3, 0.6, 0.45, 0.7, 0.2])).astype(dtype)  # inside, off the knots
    w = RNG.normal(size=3).astype(dtype)
    nanx = distinct((3, 4), dtype, seed=3)
    nanmask = np.zeros((3, 4), bool)
    nanmask[0, 1] = nanmask[2, 3] = True
    m = RNG.normal(size=(3, 6)).astype(dtype)
    return {
        "median": (lambda x: fnp.median(x, axis=1), (a,)),
        "median_all": (lambda x: fnp.median(x), (a,)),
        "quantile": (lambda x: fnp.quantile(x, [0.3, 0.75], axis=0), (a,)),
        "quantile_q": (lambda x, q: fnp.quantile(x, q, axis=1), (a, np.array([0.3, 0.55], dtype))),
        "percentile": (lambda x: fnp.percentile(x, 40.0, axis=(0, 1)), (a,)),
        "nanmedian": (lambda x: fnp.nanmedian(fnp.where(nanmask, fnp.nan, x), axis=1), (nanx,)),
        "nanmax": (lambda x: fnp.nanmax(fnp.where(nanmask, fnp.nan, x), axis=0), (nanx,)),
        "nanmin": (lambda x: fnp.nanmin(fnp.where(nanmask, fnp.nan, x), axis=1), (nanx,)),
        "nanvar": (lambda x: fnp.nanvar(fnp.where(nanmask, fnp.nan, x), axis=1, ddof=1), (nanx,)),
        "nanstd": (lambda x: fnp.nanstd(fnp.where(nanmask, fnp.nan, x)), (nanx,)),
        "diff": (lambda x: fnp.diff(x, 2, axis=0, prepend=x[:1] * 2.0), (a,)),
        "ediff1d": (lambda x: fnp.ediff1d(x, to_begin=x[0, 0]), (a,)),
        "gradient": (lambda x: fnp.gradient(x, 0.5, axis=1, edge_order=2), (a,)),
        "gradient2": (lambda x: fnp.stack(fnp.gradient(x)), (a,)),
        "trapezoid": (lambda y, x: fnp.trapezoid(y, x, axis=0), (a, np.sort(v1[:3]))),
        "interp": (lambda x, f: fnp.interp(x, xp, f), (xq, fp)),
        "interp_xp": (lambda p: fnp.interp(xq, p, fp), (xp,)),
        "select": (lambda x, y: fnp.select([a > 1.0, a < 0.5], [x * y, fnp.sin(x)], default=y), (a, a + 1.0)),
        "polyval": (lambda p, x: fnp.polyval(p, x), (w, a)),
        "vander": (lambda x: fnp.vander(x, 4), (w,)),
        "convolve": (lambda u, v: fnp.convolve(u, v, "same"), (v1, w)),
        "convolve_valid": (lambda u, v: fnp.convolve(u, v, "valid"), (w, v1)),
        "correlate": (lambda u, v: fnp.correlate(u, v, "full"), (v1, w)),
        "cov": (lambda x: fnp.cov(x), (m,)),
        "corrcoef": (lambda x: fnp.corrcoef(x, rowvar=False), (m.T,)),
        "append": (lambda x, y: fnp.append(x, y, axis=0), (a, a[:1] * 3.0)),
        "delete": (lambda x: fnp.delete(x, [0, 2], axis=1), (a,)),
        "modf": (lambda x: fnp.modf(x)[0], (a + 0.05,)),
    }


CASES64 = _grad_cases(np.float64)


@pytest.mark.parametrize("name", sorted(CASES64))
def test_check_grads_float64(name):
    f, args = CASES64[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


CASES32 = _grad_cases(np.float32)


@pytest.mark.parametrize("name", ["median", "quantile", "interp", "convolve", "cov", "nanvar", "gradient", "trapezoid"])
def test_check_grads_float32(name):
    f, args = CASES32[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))
    out = f(*args)
    assert np.asarray(out).dtype == np.float32
    g = fg.grad(lambda *xs: fnp.sum(f(*xs)))(*args)
    assert np.asarray(g).dtype == np.float32


def test_check_grads_complex_correlate():
    u = RNG.normal(size=5) + 1j * RNG.normal(size=5)
    v = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    check_grads(lambda a, b: fnp.correlate(a, b, "same"), (u, v), order=2, modes=("fwd", "rev"))


def test_interp_gradient_closed_form():
    xp = np.array([0.0, 1.0, 3.0, 4.0])
    fp = np.array([1.0, 3.0, -1.0, 2.0])
    x = np.array([-1.0, 0.25, 1.5, 2.5, 3.75, 5.0])
    slope = np.array([0.0, 2.0, -2.0, -2.0, 3.0, 0.0])  # zero outside (constant extension)
    gx = fg.grad(lambda x: fnp.sum(fnp.interp(x, xp, fp)))(x)
    close(gx, slope)
    # d y(x_k) / d fp_j: the hat function weights
    J = fg.jacrev(lambda f: fnp.interp(x, xp, f))(fp)
    W = np.stack([np.interp(x, xp, np.eye(4)[j]) for j in range(4)], axis=1)
    close(J, W)
    gl = fg.grad(lambda L: fnp.sum(fnp.interp(x, xp, fp, left=L)))(0.5)
    close(gl, 1.0)


def test_median_gradient_closed_form_and_nan_zero_grad():
    x = np.array([3.0, 1.0, 2.0, 5.0])
    close(fg.grad(fnp.median)(x), [0.5, 0.0, 0.5, 0.0])
    y = np.array([3.0, np.nan, 2.0, 5.0])
    g = fg.grad(fnp.nanstd)(y)
    assert g[1] == 0.0 and np.all(np.isfinite(g))
    g = fg.grad(fnp.nanmax)(y)
    close(g, [0.0, 0.0, 0.0, 1.0])


# --------------------------------------------------------------------------
# vmap: equals a loop, and no primitive falls back to a loop (that would warn)

from factories import no_fallback as _no_loop_fallback  # noqa: E402


def _vmap_equals_loop(f, *args, in_axes=0):
    with _no_loop_fallback():
        out = fg.vmap(f, in_axes=in_axes)(*args)
    batched = [i for i, ax in enumerate(in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args))
               if ax is not None]
    n = np.shape(args[batched[0]])[0]
    ref = np.stack([f(*[a[k] if i in batched else a for i, a in enumerate(args)]) for k in range(n)])
    close(out, ref)


def test_vmap_median_quantile():
    a = distinct((5, 3, 4))
    _vmap_equals_loop(lambda x: fnp.median(x, axis=1), a)
    _vmap_equals_loop(lambda x: fnp.quantile(x, [0.2, 0.9]), a)


def test_vmap_interp():
    xp = np.sort(distinct((6,)))
    xs = RNG.uniform(-1.0, 3.0, size=(4, 7))
    fps = RNG.normal(size=(4, 6))
    _vmap_equals_loop(lambda x: fnp.interp(x, xp, fps[0]), xs)
    _vmap_equals_loop(lambda x, f: fnp.interp(x, xp, f), xs, fps)


def test_vmap_convolve_diff():
    us, vs = RNG.normal(size=(4, 7)), RNG.normal(size=(4, 3))
    _vmap_equals_loop(lambda u, v: fnp.convolve(u, v, "same"), us, vs)
    _vmap_equals_loop(lambda u: fnp.correlate(u, vs[0], "full"), us)
    _vmap_equals_loop(lambda u: fnp.diff(u, 2), us)
    _vmap_equals_loop(lambda u: fnp.gradient(u), us)


def test_grad_of_vmap_median():
    a = distinct((4, 5))
    with _no_loop_fallback():
        g = fg.grad(lambda x: fnp.sum(fg.vmap(fnp.median)(x)))(a)
    ref = np.stack([fg.grad(fnp.median)(row) for row in a])
    close(g, ref)


def test_vmap_polyval_vander_cov_nanvar():
    xs, ps = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 3))
    _vmap_equals_loop(lambda p, x: fnp.polyval(p, x), ps, xs)
    _vmap_equals_loop(lambda x: fnp.vander(x, 3), xs)
    _vmap_equals_loop(lambda x: fnp.cov(fnp.reshape(x[:4], (2, 2))), xs)
    b = xs.copy()
    b[1, 2] = np.nan
    _vmap_equals_loop(lambda x: fnp.nanvar(x), b)


# --------------------------------------------------------------------------
# device arrays (fake CuPy-like backend): results stay on the device, no host syncs

def test_fake_device_forward_and_grad():
    import fake_backend as fb

    fb.install()
    def F(x):
        return fb.to_fake(np.asarray(x))

    a = F(distinct((3, 4)))
    v, w, xp = F(RNG.normal(size=6)), F(RNG.normal(size=3)), F(np.sort(RNG.normal(size=6)))
    mask = np.zeros((3, 4), bool)
    mask[0, 0] = True
    fm = F(mask)
    cases = [
        lambda x: fnp.median(x, axis=1), lambda x: fnp.quantile(x, [0.2, 0.7]),
        lambda x: fnp.percentile(x, 30.0), lambda x: fnp.nanmedian(fnp.where(fm, fnp.nan, x), axis=0),
        lambda x: fnp.nanstd(fnp.where(fm, fnp.nan, x), axis=0), lambda x: fnp.diff(x, axis=0, prepend=0.0),
        lambda x: fnp.gradient(x, 0.5, axis=1, edge_order=2), lambda x: fnp.trapezoid(x, x[0]),
        lambda x: fnp.interp(x, xp, v), lambda x: fnp.select([x > 1.0], [x * 2], 0.0),
        lambda x: fnp.polyval(w, x), lambda x: fnp.polyval(np.array([1.0, 2.0]), x),
        lambda x: fnp.vander(x[0]), lambda x: fnp.convolve(x[0], v, "same"),
        lambda x: fnp.correlate(x[0], v, "full"), lambda x: fnp.corrcoef(x),
        lambda x: fnp.delete(x, [1], axis=1), lambda x: fnp.append(x, x),
    ]
    for f in cases:
        with fb.no_host_sync():
            r = f(a)
            g = fg.grad(lambda x, f=f: fnp.sum(f(x)))(a)
        assert isinstance(r, fb.FakeArray) and isinstance(g, fb.FakeArray)
    # values agree with the host computation
    close(fnp.median(a, axis=1).get(), np.median(a.get(), axis=1))
    close(fnp.convolve(a[0], v, "same").get(), np.convolve(a.get()[0], v.get(), "same"))
