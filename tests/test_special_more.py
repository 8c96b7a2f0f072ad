"""The special functions added by issue 16 (funcgrad/scipy/_special_more.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import special as S

from scipy_harness import Case, check_derivatives, check_fake_device, check_float32, check_values, check_vmap

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
]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_scipy(name):
    check_values(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads_order2(name):
    check_derivatives(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32(name):
    check_float32(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_loop(name):
    check_vmap(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
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


@pytest.mark.parametrize("name,arg", [("iv", "order"), ("kv", "order"), ("jv", "order"), ("gammainc", "shape a"),
                                      ("gammaincc", "shape a"), ("zeta", "exponent x")])
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
