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

Degree and steps under ``fg.jit`` and on a device. The degree ``m`` and the number of steps
``s`` decide how many products run, which a staged program or a device that must not be
read back cannot take from the values. There a *step budget* is fixed first: ``(m,
s_max)`` from a static bound of the norm (``norm_bound=``; under ``fg.jit`` on host values,
twice the norm of the values traced), and the program computes ``s = ceil(||A - mu I||_1
/ theta_m)`` from the values themselves. It runs ``s_max`` steps of ``T_m(C/s)``; the
steps past ``s`` leave the result unchanged (a selection, not a branch: the count is a
value of the program). The result is then ``e^mu T_m(C/s)^s B`` as in the eager path,
with the whole series (no early stop), and its derivative is exact in the same sense.
Values whose norm exceeds the budget (``s > s_max``) give NaN, never a truncated series.
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
from ....transforms import stop_gradient
from .._arrays import SparseArray
from .._ops import matvec
from .._values import index_for, segment_sum
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


def _unboxed(x: Any) -> tuple[Any, bool, bool]:
    """The concrete values under ``x``'s boxes, whether vmap batches them and whether
    fg.jit stages them (their values are then the ones traced, not those of later calls)."""
    batched = staged = False
    while isinstance(x, Box):
        staged = staged or isinstance(x, StagingBox)
        batched = batched or isinstance(x, BatchBox)
        x = x._value
    return x, batched, staged


def _max_abs(x: Any) -> float:
    values = unbox_all(x)
    return float(namespace_of(values).max(namespace_of(values).abs(values))) if values.size else 0.0


def _norm1(data: Any, a: SparseArray, batched: bool) -> float:
    """``||A||_1`` from host values; over a vmap batch's stacked values ``sum |a_ij|`` (a
    bound for every member)."""
    if batched:
        return float(np.abs(data).sum())
    col_sums = np.zeros(a.shape[1])
    np.add.at(col_sums, a.pattern.col, np.abs(data))
    return float(col_sums.max()) if col_sums.size else 0.0


def _shifted_norm_bound(data: Any, a: SparseArray, batched: bool) -> float:
    """An upper bound of ``||A - mu I||_1`` from host values (a bound is enough: it only
    adds steps): ``||A||_1 + |mu|``; over a vmap batch ``2 sum |a_ij|``."""
    if batched:
        return 2.0 * _norm1(data, a, batched)
    on_diagonal = a.pattern.row == a.pattern.col
    return _norm1(data, a, batched) + abs(complex(np.sum(data[on_diagonal]))) / a.shape[0]


def _traced_norms(a: SparseArray, mu: Any) -> tuple[Any, Any]:
    """``||A||_1`` and ``||A - mu I||_1`` (``a`` in csr order: no duplicates), computed by the
    program from the values (no host read; they only set a step count and a shift, so they
    carry no derivative)."""
    data, mu = stop_gradient(a.data), stop_gradient(mu)
    p = a.pattern
    real = fnp.result_type(fnp.abs(data))
    on_diagonal, missing = (index_for(mask.astype(real), data)   # uploaded once per pattern
                            for mask in p.cached("diagonal masks", lambda: _diagonal_masks(p)))
    plain = fnp.max(segment_sum(fnp.abs(data), p.col, a.shape[1]))
    shifted_data = data - mu * on_diagonal
    shifted = fnp.max(segment_sum(fnp.abs(shifted_data), p.col, a.shape[1]) + fnp.abs(mu) * missing)
    return plain, shifted


def _diagonal_masks(p: Any) -> tuple[np.ndarray, np.ndarray]:
    """1.0 at the stored diagonal entries; 1.0 at the columns whose diagonal is not stored."""
    on = p.row == p.col
    return on.astype(np.float64), 1.0 - np.bincount(p.col[on], minlength=p.shape[1]).astype(np.float64)


def _unit_roundoff(a: SparseArray) -> float:
    return 2.0 ** -53 if fnp.result_type(a.data) in (np.float64, np.complex128) else 2.0 ** -24


def _taylor_step(a: SparseArray, mu: Any, s: Any, m: int, x: Any, tol: float | None) -> Any:
    """``e^(mu/s) T_m((A - mu I)/s) x``; with ``tol`` (host values only), the series stops once
    two successive terms are negligible (SciPy's test)."""
    out = term = x
    c1 = _max_abs(term) if tol is not None else 0.0
    for j in range(m):
        term = (matvec(a, term) - mu * term) / (s * (j + 1))
        out = out + term
        if tol is not None:
            c2 = _max_abs(term)
            if c1 + c2 <= tol * _max_abs(out):
                break
            c1 = c2
    return fnp.exp(mu / s) * out


def _expm_apply(a: SparseArray, b: Any, norm_bound: float | None) -> Any:
    data, batched, staged = _unboxed(a.data)
    _, b_batched, b_staged = _unboxed(b)
    xp = namespace_of(data)
    mu = fnp.sum(a.diagonal()) / a.shape[0]
    if norm_bound is None and (staged or xp is not np):
        if xp is not np:
            raise ValueError(
                "expm_multiply: on a device, give norm_bound= (an upper bound of ||A||_1, a Python float): the "
                "Taylor degree and number of steps depend on the norm, and reading it from the device would "
                "copy it to the host")
        norm_bound = 2.0 * _norm1(data, a, batched)   # the budget of the traced values
    if norm_bound is not None:
        return _budgeted(a, b, mu, float(norm_bound))
    norm1 = _shifted_norm_bound(data, a, batched)
    if norm1 == 0.0:
        return fnp.exp(mu) * b
    m, s = degree_and_steps(norm1)
    # stop a step's series early on concrete host values only: a batch's norms mix its
    # members, and a staged B's values are the traced ones, not those of later calls
    tol = None if (batched or b_batched or b_staged) else _unit_roundoff(a)
    out = b
    for _ in range(s):
        out = _taylor_step(a, mu, s, m, out, tol)
    return out


def _budgeted(a: SparseArray, b: Any, mu: Any, norm_bound: float) -> Any:
    """``expm(A) B`` in at most ``s_max`` steps fixed by ``norm_bound >= ||A||_1`` (see the
    module docstring). The shift ``mu`` is used when it lowers the norm, so the budget of
    ``||A||_1`` always suffices."""
    if not (norm_bound >= 0.0 and math.isfinite(norm_bound)):
        raise ValueError(f"expm_multiply: norm_bound must be a finite number >= 0, got {norm_bound!r}")
    m, s_max = degree_and_steps(max(norm_bound, THETA[1]))
    plain, shifted = _traced_norms(a, mu)
    use_shift = shifted <= plain
    mu = fnp.where(use_shift, mu, fnp.zeros_like(mu))
    norm = fnp.where(use_shift, shifted, plain)
    s = fnp.maximum(fnp.ceil(norm / THETA[m]), 1.0)
    out = b
    for step in range(s_max):
        out = fnp.where(step < s, _taylor_step(a, mu, s, m, out, None), out)
    # over the budget: NaN, in the value and in every derivative (never a truncated series)
    within = fnp.where(norm <= s_max * THETA[m], 1.0, fnp.nan)
    return out * fnp.astype(within, fnp.result_type(fnp.real(out)))


def expm_multiply(A: Any, B: Any, start: Any = None, stop: Any = None, num: Any = None,  # noqa: N803
                  endpoint: Any = None, traceA: Any = None, *, norm_bound: float | None = None) -> Any:  # noqa: N803
    """``expm(A) @ B`` for a sparse square ``A`` and a dense vector or matrix ``B`` (SciPy's
    ``expm_multiply``), without forming ``expm(A)``; with ``start``, ``stop``, ``num``,
    ``endpoint``, the stack of ``expm(t A) @ B`` over ``numpy.linspace(start, stop, num,
    endpoint)``. Differentiable in ``A``'s values and in ``B`` to any order (see the module
    docstring); the derivative in a time ``t``: ``expm_multiply(t * A, B)``.

    ``norm_bound`` (funcgrad's addition; a Python float bounding ``||A||_1``) fixes the
    number of products in advance, as ``fg.jit`` and device arrays need (on a device it is
    required; under ``fg.jit`` it defaults to twice the norm of the values traced). Values
    whose norm exceeds it give NaN. ``traceA`` is accepted and not needed.

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
        return _expm_apply(a, b, norm_bound)
    if isinstance(start, Box) or isinstance(stop, Box):
        raise TypeError("expm_multiply: start and stop must be concrete numbers; for a derivative in the time, "
                        "use expm_multiply(t * A, B)")
    times = np.linspace(0.0 if start is None else float(start), 1.0 if stop is None else float(stop),
                        50 if num is None else int(num), endpoint=True if endpoint is None else bool(endpoint))
    return fnp.stack([_expm_apply(a * float(t), b, None if norm_bound is None else norm_bound * abs(float(t)))
                      for t in times])

