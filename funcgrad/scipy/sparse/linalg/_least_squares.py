"""``lsqr`` and ``lsmr``: damped least squares ``min ||A x - b||^2 + damp^2 ||x||^2`` for a
sparse (m, n) ``A``, through the backend's solver, with the solution differentiated
implicitly (never through the iterations).

At the solution ``N x = A^H b`` with ``N = A^H A + damp^2 I`` and residual ``r = b - A x``:

- JVP: ``dx = N^-1 (dA^H r + A^H (db - dA x))``;
- VJP (funcgrad's, JAX's, convention for complex values): with ``y = conj(N^-1 conj(g))``,
  ``b_bar = conj(A) y`` and ``data_bar[k] = conj(y[col_k] r[row_k]) - (conj(A) y)[row_k] x[col_k]``.

``N^-1`` is one differentiable sparse LU solve of the augmented (m+n) system
``[[I, A], [A^H, -damp^2 I]] [s; y] = [0; -g]`` (no ``A^H A`` formed, exact rather than
iterative), so the rules differentiate again. The derivative is the exact least-squares
solution's; a rank-deficient ``A`` with ``damp = 0`` has no unique solution and the
derivative raises ``SingularMatrixError``. The solver's diagnostics (``istop``, ``itn``,
the norm estimates) come back as the solver computed them, without derivatives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import defprimitive
from ....numpy._batching import move_to_front
from ....numpy._util import dtype, ndim, shape
from .._arrays import SparseArray, _is_foreign_sparse, csr_array
from .._backend import native_matrix, sparse_linalg_module
from .._pattern import Pattern
from .._values import gather, segment_sum, zeros
from ..construct import bmat, diags
from ._direct import spsolve

__all__ = ["lsqr", "lsmr"]

# the scalar outputs after x, per method (SciPy's order)
_STATS = {"lsqr": ("istop", "itn", "r1norm", "r2norm", "anorm", "acond", "arnorm", "xnorm"),
          "lsmr": ("istop", "itn", "normr", "normar", "norma", "conda", "normx")}
_DEFAULTS = {"damp": 0.0, "atol": 1e-6, "btol": 1e-6, "conlim": 1e8, "iter_lim": None, "maxiter": None}


def _raw(data: Any, b: Any, *, pattern: Pattern, method: str, options: tuple[tuple[str, Any], ...]) -> Any:
    xp = namespace_of(data, b)
    want = np.result_type(data.dtype, b.dtype)
    mat = native_matrix(xp, data.astype(want) if data.dtype != want else data, pattern, "csr")
    out = getattr(sparse_linalg_module(xp), method)(mat, b.astype(want) if b.dtype != want else b, **dict(options))
    x = out[0].astype(want) if out[0].dtype != want else out[0]
    real = np.empty(0, dtype=want).real.dtype
    scalars = out[1:1 + len(_STATS[method])]
    if xp is np:
        stats = np.asarray([float(v) for v in scalars], dtype=real)
    else:  # a device solver's scalars: device 0-d arrays (or numbers), stacked on the device
        stats = xp.stack([xp.asarray(v, dtype=real).reshape(()) for v in scalars])
    return x, stats


def _damp(options: tuple[tuple[str, Any], ...]) -> float:
    return float(dict(options).get("damp", 0.0))


def _times(data: Any, v: Any, p: Pattern, adjoint: bool) -> Any:
    """``A v`` or ``A^H v`` for values ``data`` of pattern ``p``."""
    if adjoint:
        values = fnp.conj(data) if fnp.result_type(data).kind == "c" else data
        return segment_sum(values * gather(v, p.row), p.col, p.shape[1])
    return segment_sum(data * gather(v, p.col), p.row, p.shape[0])


def _normal_solve(data: Any, g: Any, p: Pattern, damp: float) -> Any:
    """``N^-1 g`` with ``N = A^H A + damp^2 I``, by the augmented (m+n) sparse system."""
    m, n = p.shape
    a = csr_array._from(data, p)
    adjoint = a.conj().T if fnp.result_type(data).kind == "c" else a.T
    top_left = diags([zeros((m,), data) + 1.0], [0])
    bottom_right = diags([zeros((n,), data) - damp ** 2], [0])
    k = bmat([[top_left, a], [adjoint, bottom_right]], format="csc")
    rhs = fnp.concatenate([zeros((m,), g), -g])
    return spsolve(k, rhs, permc_spec="MMD_AT_PLUS_A")[m:]


def _jvp_all(tangents: list[Any], ans: Any, data: Any, b: Any, *, pattern: Pattern, method: str,
             options: tuple[tuple[str, Any], ...]) -> Any:
    x, stats = ans
    t_data, t_b = tangents
    r = b - _times(data, x, pattern, False)
    rhs = fnp.zeros_like(x)
    if t_data is not None:
        conj_t = fnp.conj(t_data) if fnp.result_type(t_data).kind == "c" else t_data
        rhs = rhs + segment_sum(conj_t * gather(r, pattern.row), pattern.col, pattern.shape[1])
        rhs = rhs - _times(data, _times(t_data, x, pattern, False), pattern, True)
    if t_b is not None:
        rhs = rhs + _times(data, t_b, pattern, True)
    return _normal_solve(data, rhs, pattern, _damp(options)), fnp.zeros_like(stats)


def _vjp_all(g: Any, ans: Any, argnums: Any, data: Any, b: Any, *, pattern: Pattern, method: str,
             options: tuple[tuple[str, Any], ...]) -> list[Any]:
    gx = g[0]
    x, _ = ans
    complex_ = fnp.result_type(data, b).kind == "c"
    if gx is None:
        return [fnp.zeros_like(data) if k == 0 else fnp.zeros_like(b) for k in argnums]
    conj = fnp.conj if complex_ else (lambda v: v)
    y = conj(_normal_solve(data, conj(gx), pattern, _damp(options)))
    ay = conj(_times(data, conj(y), pattern, False))          # conj(A) y
    out = []
    for k in argnums:
        if k == 0:
            r = b - _times(data, x, pattern, False)
            ct = conj(gather(y, pattern.col) * gather(r, pattern.row)) - gather(ay, pattern.row) * gather(x, pattern.col)
            out.append(fnp.real(ct) if dtype(data).kind != "c" and fnp.result_type(ct).kind == "c" else ct)
        else:
            out.append(fnp.real(ay) if dtype(b).kind != "c" and fnp.result_type(ay).kind == "c" else ay)
    return out


def _batch(args: list[Any], dims: list[Any], **kw: Any) -> tuple[Any, Any]:
    data, b = args
    size = next(shape(v)[d] for v, d in zip(args, dims) if d is not None)

    def member(v: Any, d: Any, i: int) -> Any:
        return v if d is None else move_to_front(v, d)[i]
    outs = [_least_squares(member(data, dims[0], i), member(b, dims[1], i), **kw) for i in range(size)]
    return (fnp.stack([o[0] for o in outs]), fnp.stack([o[1] for o in outs])), (0, 0)


_least_squares = defprimitive(_raw, name="sparse_least_squares", vjp_all=_vjp_all, jvp_all=_jvp_all, batch=_batch,
                              multiple_results=True)


def _solve(method: str, A: Any, b: Any, given: dict[str, Any]) -> Any:  # noqa: N803
    if isinstance(A, SparseArray):
        a = A.tocsr()
    elif _is_foreign_sparse(A) or hasattr(A, "shape"):
        a = csr_array(A)
    else:
        raise TypeError(f"{method}: A must be a sparse array (funcgrad.scipy.sparse or scipy.sparse) or a 2-D "
                        f"array, got {type(A).__name__}")
    m, n = a.shape
    if not hasattr(b, "shape"):
        b = np.asarray(b)
    if ndim(b) != 1 or shape(b)[0] != m:
        raise ValueError(f"{method}: b must be a vector of length {m} to match A of shape {a.shape}, "
                         f"got shape {tuple(shape(b))}")
    if fnp.result_type(b).kind in "iub":
        b = fnp.astype(b, np.float64)
    if given.get("damp", 0.0) < 0:
        raise ValueError(f"{method}: damp must be >= 0, got {given['damp']}")
    options = tuple((k, float(v) if isinstance(v, float) else v) for k, v in given.items()
                    if v is not None and v != _DEFAULTS.get(k))
    x, stats = _least_squares(a.data, b, pattern=a.pattern, method=method, options=options)
    if isinstance(stats, np.ndarray):  # concrete host numbers: SciPy's types (istop, itn ints)
        return x, tuple(int(v) if i < 2 else float(v) for i, v in enumerate(stats))
    return x, tuple(stats[i] for i in range(len(_STATS[method])))


def lsqr(A: Any, b: Any, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6, conlim: float = 1e8,  # noqa: N803
         iter_lim: int | None = None, show: bool = False, calc_var: bool = False, x0: Any = None) -> tuple[Any, ...]:
    """Damped least squares by LSQR (SciPy's ``lsqr``): ``(x, istop, itn, r1norm, r2norm,
    anorm, acond, arnorm, xnorm, var)``. ``x`` is differentiable in ``A``'s values and in ``b``
    (implicitly, as the exact least-squares solution: see the module docstring); the
    diagnostics are the solver's, without derivatives. ``var`` (``calc_var``) and ``x0`` are
    not supported.

    Example::

        A = sparse.random(8, 4, density=0.6, rng=0)
        x = lsqr(A, b, atol=1e-12, btol=1e-12)[0]
        fg.grad(lambda d: fnp.sum(lsqr(A._like(d), b, atol=1e-12, btol=1e-12)[0] ** 2))(A.data)
    """
    _unsupported("lsqr", calc_var=calc_var, x0=x0)
    x, stats = _solve("lsqr", A, b, {"damp": float(damp), "atol": float(atol), "btol": float(btol),
                                      "conlim": float(conlim), "iter_lim": iter_lim})
    out: tuple[Any, ...] = (x,) + stats + (fnp.zeros_like(fnp.real(x)),)
    return out


def lsmr(A: Any, b: Any, damp: float = 0.0, atol: float = 1e-6, btol: float = 1e-6, conlim: float = 1e8,  # noqa: N803
         maxiter: int | None = None, show: bool = False, x0: Any = None) -> tuple[Any, ...]:
    """Damped least squares by LSMR (SciPy's ``lsmr``): ``(x, istop, itn, normr, normar, norma,
    conda, normx)``, ``x`` differentiable as in :func:`lsqr`.

    Example::

        x = lsmr(A, b, atol=1e-12, btol=1e-12)[0]
    """
    _unsupported("lsmr", x0=x0)
    x, stats = _solve("lsmr", A, b, {"damp": float(damp), "atol": float(atol), "btol": float(btol),
                                      "conlim": float(conlim), "maxiter": maxiter})
    out: tuple[Any, ...] = (x,) + stats
    return out


def _unsupported(method: str, **given: Any) -> None:
    for name, value in given.items():
        if value is not None and value is not False:
            raise NotImplementedError(f"{method}: {name} is not supported (the solution is differentiated as the "
                                      f"exact least-squares solution, whatever the start)")
