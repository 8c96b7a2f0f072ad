"""NumPy's polynomial functions (coefficients highest power first), differentiable.

``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint`` and
``poly`` are compositions of differentiable functions (``poly`` of a square
matrix uses the Faddeev-LeVerrier recursion instead of eigenvalues). ``polyfit``
solves the column-scaled least-squares problem by QR. ``roots`` is a primitive:
NumPy's (companion matrix) roots forward, and for a simple root ``r`` of ``p``
the implicit-function rule ``dr = -(sum_k dp_k r**(n-k)) / p'(r)``.

Example::

    fg.grad(lambda c: fnp.sum(fnp.roots(c)))(fnp.asarray([1.0, -3.0, 2.0]))   # [-3, -1, 0]
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box, defprimitive
from ..core.batching import is_batched
from ._batching import fallback
from ._util import backend_function, dtype, shape, unbroadcast

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit", "roots"]


def _1d(a: Any) -> Any:
    a = a if isinstance(a, Box) or hasattr(a, "shape") else fnp.asarray(a)
    return fnp.atleast_1d(a)


def _pad_front(a: Any, n: int) -> Any:
    k = shape(a)[0]
    return a if k == n else fnp.pad(a, [(n - k, 0)])


def polyadd(a1: Any, a2: Any) -> Any:
    """``numpy.polyadd``: the sum of two polynomials.

    Example::

        fnp.polyadd([1.0, 2.0], [9.0, 5.0, 4.0])   # [9, 6, 6]
    """
    a1, a2 = _1d(a1), _1d(a2)
    n = max(shape(a1)[0], shape(a2)[0])
    return _pad_front(a1, n) + _pad_front(a2, n)


def polysub(a1: Any, a2: Any) -> Any:
    """``numpy.polysub``: the difference of two polynomials.

    Example::

        fnp.polysub([2.0, 10.0, -2.0], [3.0, 10.0, -4.0])   # [-1, 0, 2]
    """
    a1, a2 = _1d(a1), _1d(a2)
    n = max(shape(a1)[0], shape(a2)[0])
    return _pad_front(a1, n) - _pad_front(a2, n)


def polymul(a1: Any, a2: Any) -> Any:
    """``numpy.polymul``: the product of two polynomials (a convolution).

    Example::

        fnp.polymul([1.0, 2.0], [1.0, 3.0])   # [1, 5, 6]
    """
    return fnp.convolve(_1d(a1), _1d(a2))


def polyder(p: Any, m: int = 1) -> Any:
    """``numpy.polyder``: the ``m``-th derivative of a polynomial.

    Example::

        fnp.polyder([1.0, 1.0, 1.0, 1.0])   # [3, 2, 1]
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _1d(p)
    for _ in range(m):
        n = shape(p)[0] - 1
        p = p[:-1] * _const(p, np.arange(n, 0, -1))
    return p


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """``numpy.polyint``: the ``m``-th antiderivative, integration constants ``k`` (default 0).

    Example::

        fnp.polyint([3.0, 2.0, 1.0])   # [1, 1, 1, 0]
    """
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if k is None:
        ks: list[Any] = [0.0] * m
    elif fnp.shape(k) == ():
        ks = [k] * m
    else:
        if fnp.shape(k)[0] != m:
            raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
        ks = [k[i] for i in range(m)]
    p = _1d(p)
    if dtype(p).kind not in "fc":
        p = fnp.astype(p, np.float64)
    for i in range(m):
        n = shape(p)[0]
        c = fnp.reshape(fnp.asarray(ks[i]) if not isinstance(ks[i], Box) else ks[i], (1,))
        c = fnp.astype(c, dtype(p)) if dtype(c) != dtype(p) else c
        if not isinstance(c, Box) and not hasattr(c, "shape") or isinstance(c, np.ndarray):
            c = _const(p, np.asarray(c))
        p = fnp.concatenate([p / _const(p, np.arange(n, 0, -1).astype(dtype(p))), c])
    return p


def polydiv(u: Any, v: Any) -> tuple[Any, Any]:
    """``numpy.polydiv``: quotient and remainder of polynomial division (differentiable).

    Example::

        fnp.polydiv([3.0, 5.0, 2.0], [2.0, 1.0])   # ([1.5, 1.75], [0.25])
    """
    u, v = _1d(u) + 0.0, _1d(v) + 0.0
    m, n = shape(u)[0] - 1, shape(v)[0] - 1
    r = [u[i] for i in range(m + 1)]
    vs = [v[i] for i in range(n + 1)]
    scale = 1.0 / vs[0]
    q = []
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q.append(d)
        for j in range(n + 1):
            r[k + j] = r[k + j] - d * vs[j]
    quotient = fnp.stack(q) if q else fnp.zeros(1, dtype=dtype(u))
    rem = fnp.stack(r)
    while shape(rem)[0] > 1 and bool(fnp.allclose(_raw(rem[0]), 0, rtol=1e-14)):
        rem = rem[1:]
    return quotient, rem


def _const(like: Any, host: Any) -> Any:
    """Host constant ``host`` on the device of ``like`` (uploaded once, cached)."""
    from ..backend import device_constant

    return device_constant(_raw(like), host)


def _raw(x: Any) -> Any:
    while isinstance(x, Box):
        x = x._value
    return x


def poly(seq_of_zeros: Any) -> Any:
    """``numpy.poly``: the coefficients of the monic polynomial with the given roots, or the
    characteristic polynomial of a square matrix.

    Example::

        fnp.poly([1.0, 2.0])   # [1, -3, 2]
    """
    z = _1d(seq_of_zeros)
    sh = shape(z)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        return _charpoly(z)
    if len(sh) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if sh[0] == 0:
        return 1.0
    if dtype(z).kind not in "fc":
        z = fnp.astype(z, np.float64)
    a = fnp.ones_like(z[:1])
    for i in range(sh[0]):
        a = fnp.convolve(a, fnp.concatenate([fnp.ones_like(z[:1]), -z[i:i + 1]]))
    if dtype(a).kind == "c":
        r = _raw(z)
        from ..backend import namespace_of

        xp = namespace_of(r)
        if bool(xp.all(xp.sort(r) == xp.sort(r.conjugate()))):
            a = fnp.real(a)
    return a


def _charpoly(A: Any) -> Any:
    """Faddeev-LeVerrier: coefficients of det(t I - A), highest power first."""
    if dtype(A).kind not in "fc":
        A = fnp.astype(A, np.float64)
    n = shape(A)[0]
    eye = fnp.diag(fnp.ones_like(fnp.diagonal(A)))
    coeffs = [fnp.ones_like(A[0, 0])]
    M = fnp.zeros_like(A)
    for k in range(1, n + 1):
        M = A @ M + coeffs[-1] * eye
        coeffs.append(-fnp.trace(A @ M) / k)
    return fnp.stack(coeffs)


def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None, cov: Any = False) -> Any:
    """``numpy.polyfit``: least-squares polynomial fit, differentiable in ``x``, ``y`` and ``w``.

    With traced values the column-scaled Vandermonde system is solved by QR
    (full rank assumed); ``full=True`` and ``cov=True`` work on plain arrays only.

    Example::

        fnp.polyfit(x, 2.0 * x + 1.0, 1)   # [2, 1]
    """
    if not any(isinstance(a, Box) for a in (x, y, w)):
        from ..backend import namespace_of

        if all(namespace_of(a) is np for a in (x, y, w) if a is not None and hasattr(a, "shape")):
            return np.polyfit(x, y, deg, rcond, full, w, cov)  # type: ignore[call-overload]
    if full or cov:
        raise NotImplementedError("polyfit(full=True or cov=True) works on plain NumPy arrays only; drop the option "
                                  "or compute residuals from fnp.polyval")
    deg = int(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    x, y = _1d(x), fnp.asarray(y) if not isinstance(y, Box) else y
    if dtype(x).kind not in "fc":
        x = fnp.astype(x, np.float64)
    lhs = fnp.vander(x, deg + 1)
    rhs = y
    if w is not None:
        lhs = lhs * w[:, None]
        rhs = rhs * w if len(shape(rhs)) == 1 else rhs * w[:, None]
    scale = fnp.sqrt(fnp.sum(lhs * lhs, axis=0))
    q, r = fnp.linalg.qr(lhs / scale)
    c = fnp.linalg.solve(r, fnp.swapaxes(q, 0, 1) @ rhs)
    return c / scale if len(shape(c)) == 1 else c / scale[:, None]


def _roots_vjp(g: Any, ans: Any, p: Any) -> Any:
    n = shape(p)[0] - 1
    d = fnp.polyval(polyder(p), ans)
    ct = -(fnp.swapaxes(fnp.vander(ans, n + 1), 0, 1) @ (g / d))
    return unbroadcast(ct, p)


def _roots_jvp(t: Any, ans: Any, p: Any) -> Any:
    n = shape(p)[0] - 1
    d = fnp.polyval(polyder(p), ans)
    return -(fnp.vander(ans, n + 1) @ t) / d


def _roots_batch(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
    return fallback(_roots.primitive, args, dims, shape(args[0])[dims[0]], {})  # type: ignore[attr-defined]


_roots = defprimitive(backend_function("roots"), name="roots", vjp=_roots_vjp, jvp=_roots_jvp,
                      batch=_roots_batch)


def roots(p: Any) -> Any:
    """``numpy.roots``: the roots of a polynomial, differentiable at simple roots.

    Leading zeros are dropped (they lower the degree); NumPy's root order is kept.

    Example::

        fnp.roots([1.0, -3.0, 2.0])   # [2, 1]
    """
    p = _1d(p)
    if len(shape(p)) != 1:
        raise ValueError("Input must be a rank-1 array.")
    from ..backend import to_numpy

    nz = np.flatnonzero(to_numpy(_raw(p)) != 0) if not is_batched(p) else None
    if nz is not None:
        if nz.size == 0:
            return _raw(p)[:0]
        p = p[int(nz[0]):]
        if shape(p)[0] < 2:
            return fnp.zeros(0, dtype=dtype(p))[:0] if not isinstance(p, Box) else cast(Any, p)[:0] * 0
    return _roots(p)


