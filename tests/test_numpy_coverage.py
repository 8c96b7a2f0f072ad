"""NumPy's whole namespace in funcgrad.numpy: every public name classified; the functions added
for it (funcgrad/numpy/{aliases,rearrange,more_math,polynomials,windows,index_tricks,functional,
passthrough}.py) checked from one table: values against NumPy in float64 and float32, check_grads
to order 2 in both modes, vmap against a Python loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import coverage
from funcgrad.testing import check_grads


# --------------------------------------------------------------------------
# classification

def test_every_numpy_name_is_classified():
    unclassified = [n for n in coverage.numpy_names() if coverage.status(n) is None]
    assert not unclassified, f"public NumPy names with no status in funcgrad.numpy: {unclassified}"
    for prefix in ("fft", "linalg"):
        rows = coverage.table(prefix)
        assert rows and all(s in coverage.STATUSES for _, s, _ in rows), rows


def test_status_values():
    assert coverage.status("sin")[0] == "differentiable"
    assert coverage.status("polyfit")[0] == "differentiable"
    assert coverage.status("argmax")[0] == "passes through"
    assert coverage.status("histogram")[0] == "passes through"
    assert coverage.status("float64")[0] == "numpy's own"
    assert coverage.status("matrix")[0] == "refused"
    assert coverage.status("ma")[0] == "refused"
    assert coverage.status("fft.rfft")[0] == "differentiable"
    assert coverage.status("linalg.lstsq")[0] == "refused"
    assert coverage.status("no_such_name") is None


@pytest.mark.parametrize("name", ["asmatrix", "bmat", "matrix", "frompyfunc", "nditer", "memmap", "recarray"])
def test_refused_functions_say_why(name):
    with pytest.raises(NotImplementedError, match=f"funcgrad.numpy.{name} is not supported: .+"):
        getattr(fnp, name)(np.ones(2))


@pytest.mark.parametrize("name", sorted(coverage.REFUSED_MODULES))
def test_refused_modules_say_why(name):
    with pytest.raises(AttributeError, match=f"funcgrad.numpy.{name} is not provided: .+"):
        getattr(fnp, name)


def test_aliases_are_the_same_functions():
    assert fnp.acos is fnp.arccos and fnp.atan2 is fnp.arctan2 and fnp.pow is fnp.power
    assert fnp.concat is fnp.concatenate
    assert fnp.bitwise_invert is fnp.invert and fnp.row_stack is fnp.vstack


# --------------------------------------------------------------------------
# the table: (id, funcgrad function, NumPy function, argument makers)

R = np.random.default_rng(3)


def vec(n, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n)


def mat(m, n, seed=0):
    return np.random.default_rng(seed).normal(size=(m, n))


X = np.linspace(0.0, 1.0, 7)
Y = X ** 2 + 0.3 * np.sin(5 * X)


def _both(name, *args, **kw):
    return name, (lambda m, *a: getattr(m, name)(*a, **kw)), args


CASES = [
    _both("insert", mat(2, 3), ),
    ("insert_axis", lambda m, a, v: m.insert(a, [1, 1], v, axis=1), (mat(2, 3), vec(2, seed=1))),
    ("insert_flat", lambda m, a, v: m.insert(a, 2, v), (mat(2, 2), vec(3, seed=2))),
    ("resize", lambda m, a: m.resize(a, (3, 4)), (vec(5),)),
    ("block", lambda m, a, b: m.block([[a, b], [b, a]]), (mat(2, 2), mat(2, 2, seed=1))),
    ("rollaxis", lambda m, a: m.rollaxis(a, 2, 1), (R.normal(size=(2, 3, 4)),)),
    ("partition", lambda m, a: m.partition(a, 2, axis=1), (mat(2, 5),)),
    ("partition_none", lambda m, a: m.partition(a, (1, 3), axis=None), (mat(2, 3),)),
    ("sort_complex", lambda m, a: m.sort_complex(a * (1 + 0.5j)), (vec(5),)),
    ("trim_zeros", lambda m, a: m.trim_zeros(m.concatenate([a[:2] * 0, a[2:4], a[4:] * 0])), (vec(5, 1, 2),)),
    ("geomspace", lambda m, a: m.geomspace(a, 8.0 * a, 5), (np.float64(1.5),)),
    ("nanprod", lambda m, a: m.nanprod(a, axis=1), (np.where(np.arange(6).reshape(2, 3) == 1, np.nan, mat(2, 3)),)),
    ("nancumsum", lambda m, a: m.nancumsum(a), (np.where(np.arange(6) == 2, np.nan, vec(6)),)),
    ("nancumprod", lambda m, a: m.nancumprod(a, axis=0), (np.where(np.arange(6).reshape(2, 3) == 4, np.nan, mat(2, 3)),)),
    ("ldexp", lambda m, a: m.ldexp(a, -2), (vec(3),)),
    ("frexp", lambda m, a: m.frexp(a)[0], (vec(4, 0.2, 9.0),)),
    ("i0", lambda m, a: m.i0(a), (vec(4, -2, 2),)),
    ("unwrap", lambda m, a: m.unwrap(m.cumsum(a * 0 + 1.0) * 1.3 + a), (vec(6, -0.1, 0.1),)),
    ("real_if_close", lambda m, a: m.real_if_close(a + 1e-17j), (vec(3),)),
    ("polyadd", lambda m, a, b: m.polyadd(a, b), (vec(2), vec(3, seed=1))),
    ("polysub", lambda m, a, b: m.polysub(a, b), (vec(3), vec(2, seed=1))),
    ("polymul", lambda m, a, b: m.polymul(a, b), (vec(3), vec(2, seed=1))),
    ("polydiv_q", lambda m, a, b: m.polydiv(a, b)[0], (vec(4), vec(2, 1, 2, seed=1))),
    ("polydiv_r", lambda m, a, b: m.polydiv(a, b)[1], (vec(4), vec(2, 1, 2, seed=1))),
    ("polyder", lambda m, a: m.polyder(a, 2), (vec(5),)),
    ("polyint", lambda m, a: m.polyint(a, 2, [0.5, -1.0]), (vec(3),)),
    ("poly_roots", lambda m, a: m.poly(a), (vec(3),)),
    ("poly_matrix", lambda m, a: m.poly(a), (mat(3, 3),)),
    ("polyfit", lambda m, x, y: m.polyfit(x, y, 2), (X, Y)),
    ("roots_real", lambda m, a: m.roots(a), (np.array([1.0, -6.0, 11.0, -6.0]) + vec(4, -0.01, 0.01),)),
    ("roots_complex", lambda m, a: m.roots(a), (np.array([1.0, 0.5, 2.0]) + vec(3, -0.1, 0.1),)),
    ("kaiser", lambda m, b: m.kaiser(6, b), (np.float64(4.0),)),
    ("cumulative_sum", lambda m, a: m.cumulative_sum(a, axis=1, include_initial=True), (mat(2, 3),)),
    ("cumulative_prod", lambda m, a: m.cumulative_prod(a), (vec(4),)),
    ("unique_values", lambda m, a: m.unique_values(a[[0, 1, 0, 2]]), (vec(3),)),
    ("unique_counts", lambda m, a: m.unique_counts(a[[0, 1, 0, 2]]).values, (vec(3),)),
    ("r_", lambda m, a: m.r_[a, 0.5, a * 2], (vec(3),)),
    ("c_", lambda m, a, b: m.c_[a, b], (vec(3), vec(3, seed=1))),
    ("apply_along_axis", lambda m, a: m.apply_along_axis(lambda r: m.diff(r) * r[0], 1, a), (mat(2, 4),)),
    ("apply_over_axes", lambda m, a: m.apply_over_axes(m.sum, a, [0, 2]), (R.normal(size=(2, 3, 2)),)),
    ("piecewise", lambda m, a: m.piecewise(a, [a < 0, a >= 0], [lambda v: v ** 3, lambda v: m.sin(v)]), (vec(6),)),
    ("vectorize", lambda m, a: m.vectorize(lambda u, w: m.maximum(u, w) ** 2 + u)(a, 0.1), (vec(5),)),
    ("fill_diagonal", None, (mat(3, 3), vec(3, seed=1))),
    ("put", None, (vec(5), vec(2, seed=1))),
    ("putmask", None, (vec(5), vec(2, seed=1))),
    ("place", None, (vec(5), vec(2, seed=1))),
    ("copyto", None, (vec(5), vec(5, seed=1))),
]


def _inplace(name):
    """funcgrad and NumPy versions of an in-place helper, as functions returning the array."""
    mask = np.array([True, False, True, True, False])

    def run(m, a, v):
        a = m.array(a) if m is np else a + 0.0  # a fresh array: traced inside transforms
        if name == "fill_diagonal":
            m.fill_diagonal(a, v)
        elif name == "put":
            m.put(a, [0, 3], v)
        elif name == "putmask":
            m.putmask(a, mask, v)
        elif name == "place":
            m.place(a, mask, v)
        else:
            m.copyto(a, v, where=mask)
        return a
    return run


CASES = [(n, f if f is not None else _inplace(n), a) for n, f, a in CASES]
CASES = [c for c in CASES if c[0] != "insert"]  # the first row only showed _both's shape
IDS = [c[0] for c in CASES]


def _cast(args, dtype):
    return tuple(np.asarray(a, dtype=dtype) if np.asarray(a).dtype.kind == "f" else a for a in args)


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_numpy(name, f, args, dtype):
    args = _cast(args, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f(np, *[np.array(a) for a in args])
        got = f(fnp, *args)
    tol = 2e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)
    # under a transform (traced values) too
    traced = fg.vjp(lambda *a: f(fnp, *a), *args)[0]
    np.testing.assert_allclose(np.asarray(traced), np.asarray(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_check_grads(name, f, args):
    check_grads(lambda *a: f(fnp, *a), args, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,f,args", CASES[::4], ids=IDS[::4])
def test_check_grads_float32(name, f, args):
    check_grads(lambda *a: f(fnp, *a), _cast(args, np.float32), order=1, modes=("fwd", "rev"))


LOOP_ONLY = {"trim_zeros", "roots_real", "roots_complex", "real_if_close", "unique_values", "unique_counts",
             "place", "putmask"}


@pytest.mark.parametrize("name,f,args", CASES, ids=IDS)
def test_vmap_matches_loop(name, f, args):
    batch = [np.stack([a, a * 0.9 + 0.05]) for a in args]
    if name in LOOP_ONLY:
        pytest.skip(f"{name}: decides from values or masks; batching is by the loop fallback or refused")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = fg.vmap(lambda *a: f(fnp, *a))(*batch)
    want = np.stack([np.asarray(f(fnp, *[b[i] for b in batch])) for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------
# pass-through functions and lists of traced values

def test_pass_through_functions_accept_traced_values():
    x = vec(20, seed=4)

    def f(x):
        counts, edges = fnp.histogram(x, bins=4)
        u = fnp.union1d(x[:3], x[2:6])
        s = fnp.spacing(x) + fnp.nextafter(x, 2.0) - x
        return fnp.sum(x * x) + fnp.sum(counts) + fnp.sum(edges) * 0 + fnp.sum(u) * 0 + fnp.sum(s) * 0

    np.testing.assert_allclose(fg.grad(f)(x), 2 * x)
    np.testing.assert_array_equal(fg.vmap(lambda x: fnp.histogram(x, bins=3)[0])(np.stack([x, -x])),
                                  [np.histogram(x, 3)[0], np.histogram(-x, 3)[0]])
    assert fnp.array2string(fg.vjp(lambda x: (fnp.array2string(x), x)[1], x[:2])[0]) == np.array2string(x[:2])
    np.testing.assert_array_equal(fnp.bitwise_count(np.array([3, 7])), [2, 3])
    path = fnp.einsum_path("ij,jk->ik", mat(2, 3), mat(3, 2))
    assert path[0][0] == "einsum_path"


@pytest.mark.parametrize("reduce", ["mean", "sum", "max", "prod", "std", "var", "median", "cumsum", "nanmean"])
def test_reductions_accept_lists_of_traced_values(reduce):
    x = vec(3, 0.5, 2.0)
    f = lambda x: fnp.sum(getattr(fnp, reduce)([x, x * x + 2.0]))  # noqa: E731
    g = lambda x: fnp.sum(getattr(fnp, reduce)(fnp.stack([x, x * x + 2.0])))  # noqa: E731
    np.testing.assert_allclose(fg.grad(f)(x), fg.grad(g)(x))
    np.testing.assert_allclose(f(x), getattr(np, reduce)([x, x * x + 2.0]).sum())


def test_joins_accept_nested_lists_of_traced_values():
    x = vec(3)
    for f in (lambda x: fnp.concatenate([[x[0]], x]), lambda x: fnp.hstack([x, [x[1], x[2]]]),
              lambda x: fnp.vstack([x, [x[0], x[1], x[2]]]), lambda x: fnp.linalg.norm([x[0], x[1]])):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
