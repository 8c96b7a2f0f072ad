"""``expm_multiply``: ``expm(A) B`` for sparse ``A`` without forming ``expm(A)``, by the
truncated Taylor series with scaling of Al-Mohy and Higham (2011): with ``mu = trace(A)/n``
and ``C = A - mu I``, ``expm(A) B = e^mu T_m(C/s)^s B``, the degree ``m`` and the number of
steps ``s`` chosen from ``||C||_1`` so that the series is accurate to unit roundoff.

Derivatives. The result is built from differentiable operations (sparse products at the
stored entries, sums, scalar products), so every transform applies: the derivative is the
exact derivative of the computed approximant ``e^mu T_m(C/s)^s B`` (the way Al-Mohy and
Higham compute the Fréchet derivative of ``expm``: differentiate the algorithm), which
agrees with the Fréchet derivative ``L(A, E) B`` (the top block of ``expm([[A, E], [0, A]])
[0; B]``) to the same accuracy as the value agrees with ``expm(A) B``. The cotangent of
``A`` is read only at its stored entries: no dense n x n. Linear in ``B``; the derivative in
a time ``t`` comes from ``expm_multiply(t * A, B)``.

The degree and the number of steps depend on the values (a norm, read on the host), so
``expm_multiply`` is refused under ``fg.jit``, which would freeze them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import Box, unbox_all
from ....core.batching import BatchBox
from ....core.staging import StagingBox
from ....numpy._util import dtype
from .._arrays import SparseArray
from .._ops import matvec
from ._direct import _rhs, as_square_sparse

__all__ = ["expm_multiply"]

# theta_m: the largest ||C/s||_1 for which the degree-m Taylor series of exp meets the
# double-precision tolerance 2^-53 (Al-Mohy and Higham 2011, Table 3.1).
THETA = {1: 2.29e-16, 2: 2.58e-08, 3: 1.39e-05, 4: 0.00034, 5: 0.0024, 6: 0.00907, 7: 0.0238, 8: 0.05,
         9: 0.0896, 10: 0.144, 11: 0.214, 12: 0.3, 13: 0.4, 14: 0.514, 15: 0.641, 16: 0.781, 17: 0.931,
         18: 1.09, 19: 1.26, 20: 1.44, 21: 1.62, 22: 1.82, 23: 2.01, 24: 2.22, 25: 2.43, 26: 2.64, 27: 2.86,
         28: 3.08, 29: 3.31, 30: 3.54, 35: 4.7, 40: 6.0, 45: 7.2, 50: 8.5, 55: 9.9}


def degree_and_steps(norm1: float) -> tuple[int, int]:
    """The (m, s) of least cost m * s with ``norm1 / s <= THETA[m]`` (norm1 > 0)."""
    best = None
    for m, theta in THETA.items():
        s = max(1, math.ceil(norm1 / theta))
        if best is None or m * s < best[0] * best[1]:
            best = (m, s)
    assert best is not None
    return best


def _host_values(x: Any, what: str) -> tuple[Any, bool]:
    """The concrete values under ``x``'s boxes, and whether vmap batches them."""
    batched = False
    while isinstance(x, Box):
        if isinstance(x, StagingBox):
            raise NotImplementedError(
                f"expm_multiply: the Taylor degree and number of steps depend on {what}'s values (its norm), "
                "which fg.jit cannot stage; call expm_multiply outside fg.jit")
        batched = batched or isinstance(x, BatchBox)
        x = x._value
    return x, batched


def _max_abs(x: Any) -> float:
    values = unbox_all(x)
    return float(namespace_of(values).max(namespace_of(values).abs(values))) if values.size else 0.0


def _shifted_norm_bound(xp: Any, data: Any, a: SparseArray, batched: bool) -> float:
    """An upper bound of ``||A - mu I||_1`` (a bound is enough: it only adds steps):
    ``||A||_1 + |mu|`` on the host; ``2 sum |a_ij|`` on a device (one scalar read back) or
    over a vmap batch's stacked values (a bound for every member)."""
    if xp is not np or batched:
        return float(xp.abs(data).sum()) * 2.0
    col_sums = np.zeros(a.shape[1])
    np.add.at(col_sums, a.pattern.col, np.abs(data))
    on_diagonal = a.pattern.row == a.pattern.col
    return float(col_sums.max()) + abs(complex(np.sum(data[on_diagonal]))) / a.shape[0]


def _expm_apply(a: SparseArray, b: Any) -> Any:
    n = a.shape[0]
    data, batched = _host_values(a.data, "A")
    _, b_batched = _host_values(b, "B")
    xp = namespace_of(data)
    mu = fnp.sum(a.diagonal()) / n
    norm1 = _shifted_norm_bound(xp, data, a, batched)
    if norm1 == 0.0:
        return fnp.exp(mu) * b
    m, s = degree_and_steps(norm1)
    tol = 2.0 ** -53 if dtype(data) in (np.float64, np.complex128) else 2.0 ** -24
    # stop a step's series once its terms are negligible (SciPy's test), on the host only: a
    # batch's norms mix its members, and on a device each test would be a host sync
    stop_early = xp is np and not (batched or b_batched)
    eta = fnp.exp(mu / s)
    out = b
    term = b
    for _ in range(s):
        c1 = _max_abs(term) if stop_early else 0.0
        for j in range(m):
            term = (matvec(a, term) - mu * term) / (s * (j + 1))
            out = out + term
            if stop_early:
                c2 = _max_abs(term)
                if c1 + c2 <= tol * _max_abs(out):
                    break
                c1 = c2
        out = eta * out
        term = out
    return out


def expm_multiply(A: Any, B: Any, start: Any = None, stop: Any = None, num: Any = None,  # noqa: N803
                  endpoint: Any = None, traceA: Any = None) -> Any:  # noqa: N803
    """``expm(A) @ B`` for a sparse square ``A`` and a dense vector or matrix ``B`` (SciPy's
    ``expm_multiply``), without forming ``expm(A)``; with ``start``, ``stop``, ``num``,
    ``endpoint``, the stack of ``expm(t A) @ B`` over ``numpy.linspace(start, stop, num,
    endpoint)``. Differentiable in ``A``'s values and in ``B`` to any order (see the module
    docstring); the derivative in a time ``t``: ``expm_multiply(t * A, B)``.

    Example::

        A = sparse.diags([fnp.array([-1.0, -2.0])], [0])
        expm_multiply(A, fnp.ones(2))                                   # [e^-1, e^-2]
        fg.grad(lambda t: fnp.sum(expm_multiply(t * A, fnp.ones(2))))(1.0)
    """
    a = as_square_sparse(A, "csr", "expm_multiply")
    b = _rhs(B, a.shape[0], "expm_multiply")
    if fnp.result_type(b).kind != fnp.result_type(a.data).kind or dtype(unbox_all(b)) != dtype(unbox_all(a.data)):
        want = fnp.result_type(a.data, b)
        a = a._like(fnp.astype(a.data, want)) if fnp.result_type(a.data) != want else a
        b = fnp.astype(b, want) if fnp.result_type(b) != want else b
    if start is None and stop is None and num is None and endpoint is None:
        return _expm_apply(a, b)
    if isinstance(start, Box) or isinstance(stop, Box):
        raise TypeError("expm_multiply: start and stop must be concrete numbers; for a derivative in the time, "
                        "use expm_multiply(t * A, B)")
    times = np.linspace(0.0 if start is None else float(start), 1.0 if stop is None else float(stop),
                        50 if num is None else int(num), endpoint=True if endpoint is None else bool(endpoint))
    return fnp.stack([_expm_apply(a * float(t), b) for t in times])

