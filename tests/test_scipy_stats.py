"""funcgrad.scipy.stats: values vs scipy.stats, derivatives to order 2 in every continuous
argument, vmap, float32, fake device."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import stats as S

from scipy_harness import Case, check_derivatives, check_fake_device, check_float32, check_values, check_vmap

X = np.array([0.3, 1.2, 2.5])
U = np.array([0.2, 0.45, 0.7])
K = np.array([0.0, 1.0, 3.0])
B01 = np.array([0.0, 1.0, 1.0])
LOC, SCALE = np.array(0.2), np.array(1.5)

CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
DISC = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]

# distribution: (methods, [(argument, value, differentiable in it)])
SPECS = {
    "norm": (CONT, [("x", X, True), ("loc", LOC, True), ("scale", SCALE, True)]),
    "t": (CONT, [("x", X, True), ("df", np.array(3.5), True), ("loc", LOC, True), ("scale", SCALE, True)]),
    "gamma": (CONT, [("x", X, True), ("a", np.array(2.5), True), ("loc", LOC * 0, True), ("scale", SCALE, True)]),
    "chi2": (CONT, [("x", X, True), ("df", np.array(3.0), True), ("loc", LOC * 0, True), ("scale", SCALE, True)]),
    "beta": (CONT, [("x", U, True), ("a", np.array(2.5), True), ("b", np.array(1.7), True)]),
    "expon": (CONT, [("x", X, True), ("loc", LOC * 0.5, True), ("scale", SCALE, True)]),
    "laplace": (CONT, [("x", X - 1.1, True), ("loc", LOC, True), ("scale", SCALE, True)]),
    "logistic": (CONT, [("x", X - 1, True), ("loc", LOC, True), ("scale", SCALE, True)]),
    "poisson": (DISC, [("k", K, False), ("mu", np.array(2.3), True)]),
    "bernoulli": (DISC, [("k", B01, False), ("p", np.array(0.3), True)]),
    "binom": (DISC, [("k", K, False), ("n", np.array(5.0), True), ("p", np.array(0.35), True)]),
}
# shape parameters whose CDF has no derivative here (gammainc / betainc / stdtr in a, b, df)
NO_CDF_DERIV = {"binom": {"n"}}
# differentiable, but the series for d/da gammainc reads its convergence back to the host (not sync-free)
SYNCING_CDF_DERIV = {"gamma": {"a"}, "chi2": {"df"}, "beta": {"a", "b"}, "t": {"df"}}


def _case(dist, method, spec, no_deriv=NO_CDF_DERIV):
    cdfish = method in ("cdf", "logcdf", "sf", "logsf")
    diff = [i for i, (name, _, d) in enumerate(spec) if d and not (cdfish and name in no_deriv.get(dist, ()))]
    const = [i for i in range(len(spec)) if i not in diff]
    if dist == "bernoulli" and cdfish:   # sf(1) = 0: its log has no derivative
        spec = [("k", np.array([0.0, 0.5, 0.2]), False)] + spec[1:]
    f_ours, f_ref = getattr(getattr(S, dist), method), getattr(getattr(st, dist), method)

    def order(args):
        full = [None] * len(spec)
        for i, a in zip(diff + const, args):
            full[i] = a
        return full

    def fn(*args):
        return f_ours(*order(args))

    def ref(*args):
        return f_ref(*order(args))

    fn.__name__ = f"{dist}.{method}"
    return Case(fn, tuple(spec[i][1] for i in diff), ref, consts=tuple(spec[i][1] for i in const), rtol=1e-9)


CASES = {}
for _dist, (_methods, _spec) in SPECS.items():
    for _m in _methods:
        c = _case(_dist, _m, _spec)
        CASES[c.fn.__name__] = c


def mvn_logpdf(x, mean, cov):
    return S.multivariate_normal.logpdf(x, mean, cov)


def dirichlet_logpdf(x, alpha):
    return S.dirichlet.logpdf(x, alpha)


_rng = np.random.default_rng(0)
_M = _rng.standard_normal((3, 3))
CASES["mvn.logpdf"] = Case(mvn_logpdf, (_rng.standard_normal((4, 3)), np.array([0.1, -0.2, 0.3]),
                                        _M @ _M.T + 2 * np.eye(3)), st.multivariate_normal.logpdf, rtol=1e-9)
CASES["dirichlet.logpdf"] = Case(dirichlet_logpdf, (np.array([[0.2, 0.3], [0.3, 0.3], [0.5, 0.4]]),
                                                    np.array([1.5, 2.0, 3.0])), st.dirichlet.logpdf, rtol=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy(name):
    check_values(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads_order2(name):
    c = CASES[name]
    if name == "mvn.logpdf":   # a symmetric direction for cov: the density reads its lower triangle
        check_derivatives(Case(lambda x, m, c: mvn_logpdf(x, m, (c + c.T) / 2), c.args))
        return
    check_derivatives(c)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32(name):
    check_float32(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_loop(name):
    check_vmap(CASES[name])


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.endswith(("logpdf", "logpmf", ".cdf"))))
def test_fake_device(name):
    dist, method = name.split(".")
    case = CASES[name]
    if dist in SYNCING_CDF_DERIV and dist in SPECS:
        case = _case(dist, method, SPECS[dist][1], {**NO_CDF_DERIV, **SYNCING_CDF_DERIV})
    check_fake_device(case, rtol=1e-9, atol=1e-12)


def test_out_of_support_and_tails():
    assert S.gamma.logpdf(-1.0, 2.0) == -np.inf
    assert S.beta.logpdf(1.5, 2.0, 2.0) == -np.inf
    assert S.poisson.logpmf(2.5, 2.0) == -np.inf
    np.testing.assert_allclose(S.poisson.cdf(np.array([-1.0, 0.0, 2.5]), 2.0), st.poisson.cdf([-1, 0, 2.5], 2.0))
    np.testing.assert_allclose(S.binom.cdf(np.array([-1.0, 0, 2, 5, 6]), 5.0, 0.3),
                               st.binom.cdf([-1, 0, 2, 5, 6], 5, 0.3))
    np.testing.assert_allclose(S.bernoulli.cdf(np.array([-1.0, 0, 0.5, 1, 2]), 0.3),
                               st.bernoulli.cdf([-1, 0, 0.5, 1, 2], 0.3))
    np.testing.assert_allclose(S.norm.logcdf(-40.0), st.norm.logcdf(-40.0), rtol=1e-12)
    np.testing.assert_allclose(fg.grad(S.norm.logcdf)(-40.0), 40.0249688, rtol=1e-6)
    np.testing.assert_allclose(S.logistic.logpdf(800.0), st.logistic.logpdf(800.0))
    np.testing.assert_allclose(S.norm.ppf(0.3, 1.0, 2.0), st.norm.ppf(0.3, 1.0, 2.0))


def test_gradient_closed_forms():
    # d/dmu log N(x; mu, s) = (x - mu) / s^2 ; d/ds = ((x - mu)^2 / s^2 - 1) / s
    g_mu, g_s = fg.grad(S.norm.logpdf, argnums=(1, 2))(1.3, 0.4, 2.0)
    np.testing.assert_allclose([g_mu, g_s], [0.9 / 4, (0.81 / 4 - 1) / 2])
    # d/dp binom.logpmf = k/p - (n-k)/(1-p)
    np.testing.assert_allclose(fg.grad(S.binom.logpmf, argnums=2)(2.0, 5.0, 0.3), 2 / 0.3 - 3 / 0.7)


def test_shape_derivatives_of_cdfs_stop_at_second_order():
    for f in (lambda v: S.t.cdf(0.5, v), lambda v: S.gamma.cdf(1.0, v), lambda v: S.beta.cdf(0.5, v, 2.0)):
        assert np.isfinite(fg.grad(fg.grad(f))(2.0))
        with pytest.raises(NotImplementedError, match="second order only"):
            fg.grad(fg.grad(fg.grad(f)))(2.0)


def test_errors():
    with pytest.raises(ValueError, match="components"):
        S.dirichlet.logpdf(np.ones(2) / 2, np.ones(3))
    with pytest.raises(ValueError, match="cov must be"):
        S.multivariate_normal.logpdf(np.zeros(2), None, np.eye(3))
    assert fnp is not None


@pytest.mark.parametrize("fn,args", [
    (lambda x, a, s: S.gamma.logpdf(x, a, 0.0, s), (np.array([-1.0, 2.0]), np.array(2.5), np.array(1.5))),
    (lambda x, a, b: S.beta.logpdf(x, a, b), (np.array([-0.5, 0.3, 1.5]), np.array(2.5), np.array(1.7))),
    (lambda k, mu: S.poisson.logpmf(k, mu), (np.array([-1.0, 2.5, 2.0]), np.array(2.3))),
    (lambda k, n, p: S.binom.logpmf(k, n, p), (np.array([-1.0, 7.0, 2.0]), np.array(5.0), np.array(0.35))),
])
def test_gradients_outside_the_support_are_zero_not_nan(fn, args):
    g = fg.grad(lambda *a: fnp.sum(fnp.where(fnp.isfinite(fn(*a)), fn(*a), 0.0)), argnums=tuple(range(1, len(args))))(*args)
    assert all(np.all(np.isfinite(x)) for x in g), g


_Q = np.linalg.qr(np.random.default_rng(5).standard_normal((3, 3)))[0]
SINGULAR = _Q @ np.diag([2.0, 0.5, 0.0]) @ _Q.T          # rank 2
ON_RANGE = _Q @ np.array([[0.3, -0.2, 0.0], [1.0, 0.4, 0.0]]).T


def test_multivariate_normal_allow_singular():
    for x in ON_RANGE.T:
        want = st.multivariate_normal.logpdf(x, None, SINGULAR, allow_singular=True)
        np.testing.assert_allclose(S.multivariate_normal.logpdf(x, None, SINGULAR, allow_singular=True), want, rtol=1e-10)
    np.testing.assert_allclose(S.multivariate_normal.logpdf(ON_RANGE.T, np.zeros(3), SINGULAR, allow_singular=True),
                               st.multivariate_normal.logpdf(ON_RANGE.T, np.zeros(3), SINGULAR, allow_singular=True),
                               rtol=1e-10)
    assert S.multivariate_normal.logpdf(_Q[:, 2], None, SINGULAR, allow_singular=True) == -np.inf  # off the range
    # the gradient in x is -pinv(cov) (x - mean)
    x = ON_RANGE[:, 0]
    g = fg.grad(lambda x: S.multivariate_normal.logpdf(x, None, SINGULAR, allow_singular=True))(x)
    np.testing.assert_allclose(g, -np.linalg.pinv(SINGULAR) @ x, rtol=1e-8)
    # a nonsingular cov gives the Cholesky path's value
    np.testing.assert_allclose(S.multivariate_normal.pdf(x, None, SINGULAR + np.eye(3), allow_singular=True),
                               S.multivariate_normal.pdf(x, None, SINGULAR + np.eye(3)), rtol=1e-10)
    with pytest.raises(ValueError, match="positive semi-definite"):
        S.multivariate_normal.logpdf(x, None, np.diag([1.0, 1.0, -1.0]), allow_singular=True)


def test_multivariate_normal_entropy():
    for mean, cov in [(None, SINGULAR), (np.zeros(3), SINGULAR + np.eye(3)), (None, 2.0), (np.zeros(2), 1.5)]:
        np.testing.assert_allclose(S.multivariate_normal.entropy(mean, cov), st.multivariate_normal.entropy(mean, cov),
                                   rtol=1e-12)
    # d/dcov of log det(cov) / 2 is inv(cov) / 2
    c = SINGULAR + np.eye(3)
    np.testing.assert_allclose(fg.grad(lambda c: S.multivariate_normal.entropy(None, c))(c), np.linalg.inv(c) / 2,
                               rtol=1e-8)


def test_dirichlet_rvs_random_state_as_in_scipy():
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(S.dirichlet.rvs(a, 2, random_state=0), st.dirichlet.rvs(a, 2, random_state=0))
    np.testing.assert_allclose(S.dirichlet.rvs(a, (2, 4), random_state=np.random.default_rng(3)),
                               st.dirichlet.rvs(a, (2, 4), random_state=np.random.default_rng(3)))
    np.testing.assert_allclose(S.dirichlet.rvs(a, random_state=np.random.RandomState(1)),
                               st.dirichlet.rvs(a, random_state=np.random.RandomState(1)))
    assert S.dirichlet.rvs(a).shape == (1, 3)
    with pytest.raises(TypeError, match="random_state must be None, an int seed or a numpy.random.Generator"):
        S.dirichlet.rvs(a, random_state="seed")
    with pytest.raises(TypeError, match="no derivative"):
        fg.grad(lambda a: fnp.sum(S.dirichlet.rvs(a)))(a)
