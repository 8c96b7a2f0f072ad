"""The special functions added by issue 16 (funcgrad/scipy/_special_more.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.special as ss

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import special as S

from factories import no_fallback
from scipy_harness import Case, check_fake_device, table_tests

X = np.array([0.3, 1.2, 2.5])
ORDERS = np.array([0.0, 1.0, 2.5])


def _in_x(name, first):
    """f(x) = special.<name>(first, x): the derivative is taken in x only."""
    f = getattr(S, name)

    def g(x, first):
        return f(first, x)

    g.__name__ = name
    return Case(g, (X,), lambda x, first: getattr(ss, name)(first, x), consts=(first,))


def _all(name, *args):
    return Case(getattr(S, name), args, getattr(ss, name))


def multigammaln3(a):
    return S.multigammaln(a, 3)


CASES = {c.fn.__name__: c for c in [
    _all("betaln", X, X + 1),
    _in_x("gammainc", X + 1), _in_x("gammaincc", X + 1), _in_x("zeta", X + 2),
    _all("ndtr", X - 1), _all("ndtri", X / 3), _all("log_ndtr", X - 2),
    _all("entr", X), _all("rel_entr", X, X + 0.5), _all("kl_div", X, X + 0.5),
    _all("j0", X), _all("j1", X), _all("y0", X), _all("y1", X),
    _in_x("iv", ORDERS), _in_x("kv", ORDERS), _in_x("jv", ORDERS), _in_x("yv", ORDERS),
    Case(multigammaln3, (X + 2,), lambda a: ss.multigammaln(a, 3)),
    _all("beta", X, X + 1), _all("rgamma", X + 0.5), _all("gammasgn", X - 1.6), _in_x("ive", ORDERS),
]}
# the shape a too: the series side (x < a + max(1, sqrt a)) and the quadrature side of the split
GAMMAINC_A = np.array([0.7, 1.5, 3.0, 2.0])
GAMMAINC_X = np.array([0.4, 2.0, 3.5, 9.0])
for _name in ("gammainc", "gammaincc"):
    _c = _all(_name, GAMMAINC_A, GAMMAINC_X)
    CASES[_name + "_a_x"] = _c._replace(fn=(lambda f: lambda a, x: f(a, x))(_c.fn))
# betainc in a, b and x: direct series (x < (a+1)/(a+b+2)) and the swapped one
CASES["betainc_a_b_x"] = Case((lambda a, b, x: S.betainc(a, b, x)), (np.array([0.7, 2.0, 3.0, 1.5]),
                              np.array([1.3, 2.5, 0.8, 4.0]), np.array([0.2, 0.5, 0.9, 0.1])), ss.betainc)
CASES["stdtr_df_t_x"] = Case((lambda df, t: S.stdtr(df, t)), (np.array([0.8, 3.0, 7.0]), np.array([-1.2, 0.4, 2.0])),
                             ss.stdtr)


test_values_match_scipy, test_check_grads_order2, test_float32, test_vmap_matches_loop = table_tests(CASES)


@pytest.mark.parametrize("name", sorted(n for n in CASES if not n.endswith("_x")))
def test_fake_device(name):
    check_fake_device(CASES[name], rtol=1e-9, atol=1e-12)


def test_closed_forms():
    x = np.array([-1.0, 0.5])
    np.testing.assert_allclose(fg.vmap(fg.grad(S.ndtr))(x), np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi))
    np.testing.assert_allclose(fg.vmap(fg.grad(S.j0))(x), -ss.j1(x))
    np.testing.assert_allclose(fg.vmap(fg.grad(S.entr))(np.array([0.5, 2.0])), -np.log([0.5, 2.0]) - 1)
    np.testing.assert_allclose(fg.grad(lambda x: S.gammainc(1.0, x))(0.7), np.exp(-0.7))


def test_log_ndtr_gradient_is_stable_in_the_tails():
    g = fg.vmap(fg.grad(S.log_ndtr))(np.array([-1e3, -40.0, 40.0, 1e3]))
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g[:2], [1e3, 40.0], rtol=1e-3)
    np.testing.assert_allclose(g[2:], 0.0, atol=1e-300)


FIXTURES = Path(__file__).resolve().parent / "fixtures"
GAMMAINC_DA = json.loads((FIXTURES / "gammainc_da.json").read_text())["rows"]


@pytest.mark.parametrize("row", GAMMAINC_DA, ids=lambda r: f"a={r['a']},x={r['x']}")
def test_gammainc_shape_derivatives_match_mpmath(row):
    """d/da and d2/da2 of P(a, x) vs 50-digit mpmath (tests/fixtures/make_gammainc_da.py)."""
    a, x = row["a"], row["x"]
    p = lambda s: S.gammainc(s, x)  # noqa: E731
    q = lambda s: S.gammaincc(s, x)  # noqa: E731
    for f, sign in ((p, 1), (q, -1)):
        np.testing.assert_allclose(fg.grad(f)(a), sign * row["d1"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(fg.grad(fg.grad(f))(a), sign * row["d2"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(fg.jvp(f, (a,), (1.0,))[1], sign * row["d1"], rtol=1e-12, atol=0)


def test_gammainc_shape_derivative_batches_the_fixture():
    a = np.array([r["a"] for r in GAMMAINC_DA])
    x = np.array([r["x"] for r in GAMMAINC_DA])
    with no_fallback():
        g = fg.vmap(fg.grad(S.gammainc))(a, x)
    np.testing.assert_allclose(g, [r["d1"] for r in GAMMAINC_DA], rtol=1e-12, atol=0)


def test_gammainc_shape_derivative_edges():
    a = np.array([1.0, 2.0, -1.0, 1.0])
    x = np.array([0.0, np.inf, 1.0, -1.0])
    g = fg.grad(lambda a: fnp.sum(S.gammainc(a, x)))(a)
    np.testing.assert_array_equal(g[:2], [0.0, 0.0])
    assert np.all(np.isnan(g[2:]))


def test_gammainc_shape_derivative_on_the_fake_device():
    """The series' convergence test reads one boolean back per 16 terms (an explicit transfer), so
    the derivative in a runs on a device but is not sync-free (the x derivative is)."""
    import fake_backend as fb

    fb.install()
    f = lambda a, x: fnp.sum(S.gammainc(a, x) + S.gammaincc(x, a))  # noqa: E731
    h = lambda a, x: fnp.sum(fg.grad(f)(a, x))  # noqa: E731
    want = fg.grad(h, argnums=(0, 1))(GAMMAINC_A, GAMMAINC_X)
    got = fg.grad(h, argnums=(0, 1))(fb.to_fake(GAMMAINC_A), fb.to_fake(GAMMAINC_X))
    for g, w in zip(got, want):
        assert isinstance(g, fb.FakeArray)
        np.testing.assert_allclose(fb.asnumpy(g), w, rtol=1e-12)


BETAINC_DAB = json.loads((FIXTURES / "betainc_dab.json").read_text())["rows"]


@pytest.mark.parametrize("row", BETAINC_DAB, ids=lambda r: f"a={r['a']},b={r['b']},x={r['x']}")
def test_betainc_shape_derivatives_match_mpmath(row):
    """First and second derivatives of I_x(a, b) in a, b vs 50-digit mpmath (JAX has none)."""
    a, b, x = row["a"], row["b"], row["x"]
    f = lambda a, b: S.betainc(a, b, x)  # noqa: E731
    scale = max(abs(row[k]) for k in ("da", "db", "daa", "dab", "dbb"))
    np.testing.assert_allclose(fg.grad(f, argnums=(0, 1))(a, b), [row["da"], row["db"]], rtol=1e-12,
                               atol=1e-13 * scale)
    h = fg.hessian(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose([[h[0][0], h[0][1]], [h[1][0], h[1][1]]],
                               [[row["daa"], row["dab"]], [row["dab"], row["dbb"]]], rtol=1e-11, atol=1e-13 * scale)
    hf = fg.jacfwd(fg.jacfwd(f, argnums=(0, 1)), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(hf[0][1], row["dab"], rtol=1e-11, atol=1e-13 * scale)


STDTR_DDF = json.loads((FIXTURES / "stdtr_ddf.json").read_text())["rows"]


@pytest.mark.parametrize("row", STDTR_DDF, ids=lambda r: f"df={r['df']},t={r['t']}")
def test_stdtr_df_derivatives_match_mpmath(row):
    f = lambda df: S.stdtr(df, row["t"])  # noqa: E731
    np.testing.assert_allclose(fg.grad(f)(row["df"]), row["d1"], rtol=1e-10)
    np.testing.assert_allclose(fg.grad(fg.grad(f))(row["df"]), row["d2"], rtol=1e-10)
    np.testing.assert_allclose(fg.jacfwd(fg.grad(f))(row["df"]), row["d2"], rtol=1e-10)


def test_betainc_shape_derivative_on_the_fake_device():
    import fake_backend as fb

    fb.install()
    a, b, x = (np.array([0.7, 2.0, 3.0]), np.array([1.3, 2.5, 0.8]), np.array([0.2, 0.5, 0.9]))
    f = lambda a, b, x: fnp.sum(S.betainc(a, b, x) + S.stdtr(a + 1, x - 0.5))  # noqa: E731
    h = lambda a, b, x: fnp.sum(fg.grad(f, argnums=(0, 1))(a, b, x)[0])  # noqa: E731
    want = fg.grad(h, argnums=(0, 1, 2))(a, b, x)
    got = fg.grad(h, argnums=(0, 1, 2))(*(fb.to_fake(v) for v in (a, b, x)))
    for g, w in zip(got, want):
        assert isinstance(g, fb.FakeArray)
        np.testing.assert_allclose(fb.asnumpy(g), w, rtol=1e-10)


def test_betainc_shape_derivative_edges_and_third_order():
    g = fg.grad(lambda a: fnp.sum(S.betainc(a, 2.0, np.array([0.0, 1.0, 1.5]))))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g[:2], [0.0, 0.0])
    assert np.isnan(g[2])
    with pytest.raises(NotImplementedError, match="second order only"):
        fg.grad(fg.grad(fg.grad(lambda a: S.betainc(a, 2.0, 0.3))))(1.5)
    fg.grad(fg.grad(fg.grad(lambda x: S.betainc(1.5, 2.0, x))))(0.3)   # x: any order


def test_gammainc_third_derivative_in_a_raises():
    with pytest.raises(NotImplementedError, match="second order only"):
        fg.grad(fg.grad(fg.grad(lambda a: S.gammainc(a, 2.0))))(1.5)
    # mixed derivatives with x stay available at any order
    fg.grad(fg.grad(fg.grad(lambda x: S.gammainc(1.5, x))))(2.0)
    fg.grad(lambda x: fg.grad(fg.grad(lambda a: S.gammainc(a, x)))(1.5))(2.0)


@pytest.mark.parametrize("name,arg", [("iv", "order"), ("kv", "order"), ("jv", "order"), ("zeta", "exponent x")])
def test_non_differentiable_arguments_say_so(name, arg):
    f = getattr(S, name)
    with pytest.raises(TypeError, match=f"not differentiable with respect to the {arg}"):
        fg.grad(lambda v: f(v, 2.0))(1.5)


def test_multigammaln_bad_d():
    with pytest.raises(ValueError, match="positive integer"):
        S.multigammaln(3.0, 0)


def test_reexported_from_special():
    from funcgrad.scipy import _special_more as M

    for name in M.__all__:
        assert getattr(S, name) is getattr(M, name)
        assert name in S.__all__
    assert fnp is not None
