"""Stabilised functions at extreme inputs: derivatives in both modes, to second order.

Each case gives a scalar function of a vector, the point, and the exact gradient and
Hessian there (closed forms evaluated so that they cannot overflow). A rule written as
``exp(a - logsumexp(a))`` passes ordinary gradient checks but is wrong by a factor of 2
at [1e17, 1e17] (logsumexp rounds to 1e17): only points like these can see it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.scipy import special as fsp


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _lse_hessian(s: np.ndarray) -> np.ndarray:
    """diag(s) - s s^T, with the diagonal s_i * sum_{j != i} s_j (no 1 - s_i cancellation)."""
    h = -np.outer(s, s)
    for i in range(len(s)):
        h[i, i] = s[i] * (np.sum(s[:i]) + np.sum(s[i + 1:]))
    return h


def _lse_case(x):
    s = _softmax(np.asarray(x, np.float64))
    return s, _lse_hessian(s)


def _softmax0_case(x):
    s = _softmax(np.asarray(x, np.float64))
    d0 = (np.arange(len(s)) == 0).astype(float)
    g = s[0] * (d0 - s)
    h = s[0] * np.outer(d0 - s, d0 - s) - s[0] * _lse_hessian(s)
    return g, h


def _log_softmax0_case(x):
    s = _softmax(np.asarray(x, np.float64))
    d0 = (np.arange(len(s)) == 0).astype(float)
    return d0 - s, -_lse_hessian(s)


def _pair_case(w: float, scale: float = 1.0):
    """f(x, y) with df/dx = w, df/dy = 1 - w, and Hessian scale * w (1 - w) [[1, -1], [-1, 1]]."""
    c = scale * w * (1 - w)
    return np.array([w, 1 - w]), c * np.array([[1.0, -1.0], [-1.0, 1.0]])


def _scalar_case(d1: float, d2: float):
    return np.array([d1]), np.array([[d2]])


def _log_expit_case(x: float):
    return _scalar_case(_expit(-x), -_expit(x) * _expit(-x))


def _softplus_case(x: float):
    return _scalar_case(_expit(x), _expit(x) * _expit(-x))


def _expit_case(x: float):
    d1 = _expit(x) * _expit(-x)  # s (1 - s) without the cancellation in 1 - s
    return _scalar_case(d1, -d1 * math.tanh(x / 2))


def _silu_case(x: float):
    s, s1 = _expit(x), _expit(x) * _expit(-x)
    return _scalar_case(s + x * s1, s1 * (2 - x * math.tanh(x / 2)))


def _bce1_case(x: float):
    """binary cross-entropy with logits at target 1: softplus(-x)."""
    return _scalar_case(-_expit(-x), _expit(x) * _expit(-x))


def _w(x: float, y: float, base: float = math.e) -> float:
    """base**x / (base**x + base**y), without overflow."""
    return _expit((x - y) * math.log(base))


def _ce(logits):
    return nn.cross_entropy(fnp.reshape(logits, (1, -1)), np.array([0]))


# name, function of a 1-d array, point, closed-form (gradient, Hessian)
CASES = [
    ("special.logsumexp", fsp.logsumexp, [1e17, 1e17], _lse_case([0.0, 0.0])),
    ("special.logsumexp", fsp.logsumexp, [1e4, 1e4], _lse_case([0.0, 0.0])),
    ("special.logsumexp", fsp.logsumexp, [-1e4, -1e4, -1e4], _lse_case([0.0, 0.0, 0.0])),
    ("special.logsumexp", fsp.logsumexp, [1e4, 0.0], _lse_case([1e4, 0.0])),
    ("special.logsumexp", fsp.logsumexp, [1e17, 1e17 + 128], _lse_case([0.0, 128.0])),
    ("special.logsumexp(b)", lambda a: fsp.logsumexp(a, b=np.array([1.0, 3.0], fnp.result_type(a))), [1e17, 1e17],
     (np.array([0.25, 0.75]), np.diag([0.25, 0.75]) - np.outer([0.25, 0.75], [0.25, 0.75]))),
    ("special.logsumexp(sign)", lambda a: fsp.logsumexp(a, b=np.array([2.0, -1.0], fnp.result_type(a)), return_sign=True)[0],
     [1e17, 1e17], (np.array([2.0, -1.0]), np.array([[-2.0, 2.0], [2.0, -2.0]]))),
    ("nn.logsumexp", nn.logsumexp, [1e17, 1e17], _lse_case([0.0, 0.0])),
    ("nn.logsumexp", nn.logsumexp, [1e4, 1e4], _lse_case([0.0, 0.0])),
    ("special.softmax", lambda x: fsp.softmax(x)[0], [1e17, 1e17], _softmax0_case([0.0, 0.0])),
    ("nn.softmax", lambda x: nn.softmax(x)[0], [1e4, 1e4], _softmax0_case([0.0, 0.0])),
    ("nn.softmax", lambda x: nn.softmax(x)[0], [1e4, -1e4], _softmax0_case([1e4, -1e4])),
    ("special.log_softmax", lambda x: fsp.log_softmax(x)[0], [1e17, 1e17], _log_softmax0_case([0.0, 0.0])),
    ("nn.log_softmax", lambda x: nn.log_softmax(x)[0], [-1e4, 1e4], _log_softmax0_case([-1e4, 1e4])),
    ("nn.cross_entropy", _ce, [1e17, 1e17], (-_log_softmax0_case([0.0, 0.0])[0], -_log_softmax0_case([0.0, 0.0])[1])),
    ("nn.cross_entropy", _ce, [-1e4, 1e4], (-_log_softmax0_case([-1e4, 1e4])[0], -_log_softmax0_case([-1e4, 1e4])[1])),
    ("special.log_expit", lambda x: fsp.log_expit(x[0]), [1e4], _log_expit_case(1e4)),
    ("special.log_expit", lambda x: fsp.log_expit(x[0]), [-1e4], _log_expit_case(-1e4)),
    ("special.log_expit", lambda x: fsp.log_expit(x[0]), [-30.0], _log_expit_case(-30.0)),
    ("nn.log_sigmoid", lambda x: nn.log_sigmoid(x[0]), [-800.0], _log_expit_case(-800.0)),
    ("nn.softplus", lambda x: nn.softplus(x[0]), [1e4], _softplus_case(1e4)),
    ("nn.softplus", lambda x: nn.softplus(x[0]), [-1e4], _softplus_case(-1e4)),
    ("nn.softplus", lambda x: nn.softplus(x[0]), [40.0], _softplus_case(40.0)),
    ("special.expit", lambda x: fsp.expit(x[0]), [1e4], _expit_case(1e4)),
    ("special.expit", lambda x: fsp.expit(x[0]), [-1e4], _expit_case(-1e4)),
    ("special.expit", lambda x: fsp.expit(x[0]), [-30.0], _expit_case(-30.0)),
    ("nn.sigmoid", lambda x: nn.sigmoid(x[0]), [20.0], _expit_case(20.0)),
    ("nn.silu", lambda x: nn.silu(x[0]), [-40.0], _silu_case(-40.0)),
    ("nn.silu", lambda x: nn.silu(x[0]), [1e4], _silu_case(1e4)),
    ("nn.silu", lambda x: nn.silu(x[0]), [-1e4], _silu_case(-1e4)),
    ("nn.bce_with_logits", lambda x: nn.binary_cross_entropy_with_logits(x, fnp.ones_like(x)), [1e4], _bce1_case(1e4)),
    ("nn.bce_with_logits", lambda x: nn.binary_cross_entropy_with_logits(x, fnp.ones_like(x)), [-1e4], _bce1_case(-1e4)),
    ("nn.bce_with_logits", lambda x: nn.binary_cross_entropy_with_logits(x, fnp.ones_like(x)), [40.0], _bce1_case(40.0)),
    ("logaddexp", lambda v: fnp.logaddexp(v[0], v[1]), [1e17, 1e17], _pair_case(0.5)),
    ("logaddexp", lambda v: fnp.logaddexp(v[0], v[1]), [1e4, -1e4], _pair_case(1.0)),
    ("logaddexp", lambda v: fnp.logaddexp(v[0], v[1]), [1e4, 1e4 + 3], _pair_case(_w(0, 3))),
    ("logaddexp2", lambda v: fnp.logaddexp2(v[0], v[1]), [1e17, 1e17], _pair_case(0.5, math.log(2))),
    ("logaddexp2", lambda v: fnp.logaddexp2(v[0], v[1]), [-1e4, 1e4], _pair_case(0.0, math.log(2))),
    ("logaddexp2", lambda v: fnp.logaddexp2(v[0], v[1]), [1e4, 1e4 - 2], _pair_case(_w(2, 0, 2), math.log(2))),
    ("xlogy", lambda v: fsp.xlogy(v[0], v[1]), [1e300, 1e300],
     (np.array([math.log(1e300), 1.0]), np.array([[0.0, 1e-300], [1e-300, -1e-300]]))),
    ("xlog1py", lambda v: fsp.xlog1py(v[0], v[1]), [1e300, 1e300],
     (np.array([math.log1p(1e300), 1.0]), np.array([[0.0, 1e-300], [1e-300, -1e-300]]))),
]


def _cases():
    for name, f, x, (g, h) in CASES:
        for dtype in (np.float64, np.float32):
            if dtype == np.float32 and np.any(np.array(x, np.float32) != np.array(x)):
                continue  # the point is not representable in float32
            yield pytest.param(f, np.array(x, dtype), g, h, id=f"{name}-{list(x)}-{np.dtype(dtype).name}")


def _close(got, want, dtype, what):
    got = np.asarray(got)
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}"
    assert np.all(np.isfinite(got)), f"{what}: {got}"
    tol = 1e-10 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-290 if dtype == np.float64 else 1e-30,
                               err_msg=what)


@pytest.mark.parametrize("f, x, g, h", list(_cases()))
def test_derivatives_at_extreme_inputs(f, x, g, h):
    dtype = x.dtype
    with np.errstate(over="ignore", under="ignore"):
        _close(fg.grad(f)(x), g, dtype, "grad (reverse)")
        _close(fg.jacfwd(f)(x), g, dtype, "jacfwd (forward)")
        _close(fg.hessian(f)(x), h, dtype, "hessian (forward over reverse)")
        _close(fg.jacrev(fg.grad(f))(x), h, dtype, "reverse over reverse")
        _close(fg.jacfwd(fg.jacfwd(f))(x), h, dtype, "forward over forward")


def test_logsumexp_zero_weights_leave_out_infinite_terms():
    """b = 0 leaves a term out even where a = +inf (the forward's rule): its gradient in a is 0,
    the others are the softmax of the kept terms; d/db of the left-out term is exp(inf) = inf."""
    a, b = np.array([np.inf, 0.0, 1.0]), np.array([0.0, 1.0, 1.0])
    s = _softmax(np.array([0.0, 1.0]))
    with np.errstate(invalid="ignore", over="ignore"):
        np.testing.assert_allclose(fg.grad(lambda v: fsp.logsumexp(v, b=b))(a), [0.0, *s])
        np.testing.assert_allclose(fg.grad(lambda w: fsp.logsumexp(a, b=w))(b), [np.inf, *s])
