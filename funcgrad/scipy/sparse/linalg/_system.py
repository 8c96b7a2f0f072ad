"""The differentiable linear solve under every sparse solver: ``x = op(A)^-1 b`` with
``op`` one of ``N`` (A), ``T`` (A transposed), ``H`` (A conjugate-transposed).

``solve(data, b, x0, system=..., trans=...)``: ``data`` are the values of a sparse ``A``
over ``system.pattern`` (primitive ``sparse_solve``), or the parameters of a
:class:`LinearOperator` (primitive ``sparse_operator_solve``, whose parameters are its
trailing arguments); ``system`` says how to solve (a direct LU factorization, or an
iterative method with its tolerances). The rules are the implicit-function ones, whatever
the method:

- VJP: ``b_bar = op(A)^-T g`` (one adjoint solve; with LU the factorization of the
  forward pass is reused), ``A_bar = -b_bar x^T`` read only at the stored positions
  (``data_bar[k] = -b_bar[row_k] x[col_k]`` for ``N``), never a dense n x n. Complex
  values follow funcgrad's (JAX's) convention: the VJP transposes the linear map.
- JVP: ``dx = op(A)^-1 (db - op(dA) x)``.
- An operator's parameters ``p``: ``op(dA) x`` is forward mode through its ``matvec`` at
  the solution, and ``p_bar = -(d(op(A) x)/dp)^T b_bar`` reverse mode through it.
- vmap: a batch of right-hand sides is one solve with more columns; a batch of values
  is a loop of solves over one pattern.

The rules call the primitive again, so they differentiate again (second order).
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import defprimitive
from ....numpy._batching import move_to_front
from ....numpy._util import dtype, ndim, shape
from ....transforms import jvp, vjp
from .._backend import native_matrix, sparse_linalg_module
from .._pattern import Pattern
from .._values import gather, segment_sum

__all__ = ["System", "solve", "factor", "SingularMatrixError"]

SingularMatrixError = np.linalg.LinAlgError


class System:
    """How to solve: ``method`` ("lu", "cg", "gmres", "bicgstab", "minres") over a sparse
    ``pattern`` (csc order for "lu", csr otherwise) or an ``operator``; hashable, static."""

    __slots__ = ("pattern", "operator", "method", "options", "_key")

    def __init__(self, method: str, pattern: Pattern | None = None, operator: Any = None,
                 options: tuple[tuple[str, Any], ...] = ()):
        self.pattern, self.operator, self.method, self.options = pattern, operator, method, options
        self._key = (method, pattern, id(operator) if operator is not None else None,
                     tuple((k, id(v) if not isinstance(v, (int, float, str, type(None))) else v)
                           for k, v in options))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, System) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"System({self.method!r}, {self.pattern or self.operator})"

    def matrix_pattern(self) -> Pattern:
        """The pattern (a system over a sparse matrix; operators have no values to differentiate)."""
        if self.pattern is None:
            raise TypeError(f"{self!r} has no sparse pattern")
        return self.pattern

    @property
    def n(self) -> int:
        s = self.pattern.shape if self.pattern is not None else self.operator.shape
        return int(s[0])


# --------------------------------------------------------------------------------------
# factorizations, remembered per values array so that the adjoint solve reuses them

_FACTORS: list[tuple[Any, System, bytes, Any]] = []
_KEEP = 4


def factor(data: Any, system: System) -> Any:
    """The LU factorization (the backend's ``splu``) of the matrix with values ``data``.

    For host (NumPy) values it is remembered while ``data`` is alive (weakly; at most a
    few) together with a digest of the values, so that the VJP's adjoint solve and
    ``splu(A).solve`` reuse the forward factorization, and values changed in place are
    factorized again.
    """
    digest = b""
    if isinstance(data, np.ndarray):
        digest = hashlib.blake2b(np.ascontiguousarray(data).tobytes(), digest_size=16).digest()
        for ref, sys_, dig, lu in _FACTORS:
            if ref() is data and dig == digest and sys_ == system:
                return lu
    xp = namespace_of(data)
    mat = native_matrix(xp, data, system.matrix_pattern(), "csc")
    try:
        lu = sparse_linalg_module(xp).splu(mat, **dict(system.options))
    except RuntimeError as e:
        raise SingularMatrixError(f"funcgrad.scipy.sparse.linalg: the matrix is singular ({e}); a singular "
                                  f"system has no solution and no derivative") from e
    if isinstance(data, np.ndarray):
        _FACTORS.append((weakref.ref(data), system, digest, lu))
        del _FACTORS[:-_KEEP]
    return lu


def _result_dtype(*dts: Any) -> np.dtype:
    out = np.result_type(*dts)
    return out if out.kind in "fc" else np.dtype(np.float64)


def _solve_raw(data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    xp = namespace_of(data, b)
    want = _result_dtype(b.dtype, data.dtype)
    if data.dtype != want:
        data = data.astype(want)
    b = b.astype(want) if b.dtype != want else b
    if system.method == "lu":
        x = factor(data, system).solve(b, trans=trans)
        return x.astype(want) if x.dtype != want else x
    return _iterative(xp, data, b, x0, system, trans, want)


def _iterative(xp: Any, data: Any, b: Any, x0: Any, system: System, trans: str, want: Any) -> Any:
    """``data``: the values of a sparse matrix, or the parameters (a tuple) of an operator."""
    sla = sparse_linalg_module(xp)
    if system.operator is None:
        mat = native_matrix(xp, data, system.pattern, "csr")
        op: Any = mat if trans == "N" else (mat.T if trans == "T" else mat.conj().T)
    else:
        op = system.operator.scipy_operator(data, trans, sla, want)
    fn = getattr(sla, system.method, None)
    if fn is None:
        raise NotImplementedError(f"funcgrad.scipy.sparse.linalg.{system.method}: {getattr(sla, '__name__', sla)} has "
                                  f"no '{system.method}' for arrays of namespace {getattr(xp, '__name__', xp)!r}; "
                                  f"use another solver or move the arrays to the host with fg.device_put(x, 'cpu')")
    opts = dict(system.options)
    precond = opts.pop("M", None)
    if precond is not None and trans != "N":
        precond = _adjoint_preconditioner(precond, system.method, xp, b.shape[0], want)
    if precond is not None:
        opts["M"] = precond
    cols = [b] if b.ndim == 1 else [b[:, j] for j in range(b.shape[1])]
    starts = [None] * len(cols) if x0 is None else ([x0] if x0.ndim == 1 else [x0[:, j] for j in range(x0.shape[1])])
    outs = []
    for col, start in zip(cols, starts):
        x, _ = fn(op, col, x0=start, **opts)
        outs.append(x.astype(want) if x.dtype != want else x)
    return outs[0] if b.ndim == 1 else xp.stack(outs, axis=1)


def _adjoint_preconditioner(precond: Any, method: str, xp: Any, n: int, want: Any) -> Any:
    """The preconditioner of the adjoint solve: ``M^H`` when ``M`` has one (a matrix, or an
    operator with ``rmatvec``). Otherwise ``M`` itself for the Hermitian methods (cg,
    minres: ``M`` is Hermitian there) and none for the others. A preconditioner changes how
    fast the solver converges, never the solution, so the derivative is unchanged."""
    try:
        adjoint = precond.H if hasattr(precond, "H") else precond.conj().T
        if hasattr(adjoint, "matvec"):
            adjoint.matvec(xp.zeros(n, dtype=want))   # an operator without rmatvec fails here
        return adjoint
    except (TypeError, NotImplementedError, AttributeError):
        return precond if method in ("cg", "minres") else None


def _transposed(data: Any, g: Any, system: System, trans: str) -> Any:
    """``op(A)^-T g``: the transpose of the solve's linear map (funcgrad's, like JAX's, VJP
    convention for complex values: transposes, no conjugation)."""
    if trans == "N":
        return solve(data, g, None, system=system, trans="T")
    if trans == "T":
        return solve(data, g, None, system=system, trans="N")
    return fnp.conj(solve(data, fnp.conj(g), None, system=system, trans="N"))


def _pair_product(u: Any, v: Any, ru: np.ndarray, rv: np.ndarray) -> Any:
    """``sum_k u[ru, k] v[rv, k]`` per stored entry (``u``, ``v``: vectors or n x k)."""
    prod = gather(u, ru) * gather(v, rv)
    return fnp.sum(prod, axis=1) if ndim(prod) == 2 else prod


def _vjp_data(g: Any, ans: Any, data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    bb = _transposed(data, g, system, trans)
    p = system.matrix_pattern()
    if trans == "N":
        out = -_pair_product(bb, ans, p.row, p.col)
    elif trans == "T":
        out = -_pair_product(ans, bb, p.row, p.col)
    else:
        out = -fnp.conj(_pair_product(ans, bb, p.row, p.col))
    return fnp.real(out) if dtype(data).kind != "c" and dtype(out).kind == "c" else out


def _vjp_b(g: Any, ans: Any, data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    out = _transposed(data, g, system, trans)
    return fnp.real(out) if dtype(b).kind != "c" and dtype(out).kind == "c" else out


def _vjp_x0(g: Any, ans: Any, data: Any, b: Any, x0: Any, **_: Any) -> Any:
    return fnp.zeros_like(x0)  # the solution does not depend on the starting guess


def _op_times(t: Any, x: Any, system: System, trans: str) -> Any:
    """``op(dA) x`` for values' tangent ``t``."""
    p = system.matrix_pattern()
    tv = t if ndim(x) == 1 else fnp.reshape(t, (-1, 1))
    if trans == "N":
        return segment_sum(tv * gather(x, p.col), p.row, p.shape[0])
    if trans == "H":
        tv = fnp.conj(tv) if dtype(tv).kind == "c" else tv
    return segment_sum(tv * gather(x, p.row), p.col, p.shape[1])


def _jvp_data(t: Any, ans: Any, data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    return solve(data, -_op_times(t, ans, system, trans), None, system=system, trans=trans)


def _jvp_b(t: Any, ans: Any, data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    return solve(data, t, None, system=system, trans=trans)


def _jvp_x0(t: Any, ans: Any, *args: Any, **_: Any) -> Any:
    return fnp.zeros_like(ans)


def _batch(args: list[Any], dims: list[Any], *, system: System, trans: str = "N") -> tuple[Any, Any]:
    data, b, x0 = args
    ddim, bdim, xdim = dims
    if ddim is not None:      # a batch of values over one pattern: one solve per member
        size = shape(data)[ddim]
        data = move_to_front(data, ddim)
        b = move_to_front(b, bdim) if bdim is not None else fnp.broadcast_to(b, (size,) + tuple(shape(b)))
        x0 = None if x0 is None else (move_to_front(x0, xdim) if xdim is not None
                                      else fnp.broadcast_to(x0, (size,) + tuple(shape(x0))))
        outs = [solve(data[i], b[i], None if x0 is None else x0[i], system=system, trans=trans) for i in range(size)]
        return fnp.stack(outs), 0
    # a batch of right-hand sides: more columns of one solve
    size = shape(b)[bdim] if bdim is not None else shape(x0)[xdim]
    b = move_to_front(b, bdim) if bdim is not None else fnp.broadcast_to(b, (size,) + tuple(shape(b)))
    per = tuple(shape(b))[1:]
    cols = fnp.reshape(fnp.moveaxis(b, 0, -1), (per[0], -1))
    start = None
    if x0 is not None:
        x0 = move_to_front(x0, xdim) if xdim is not None else fnp.broadcast_to(x0, (size,) + tuple(shape(x0)))
        start = fnp.reshape(fnp.moveaxis(x0, 0, -1), (per[0], -1))
    out = solve(data, cols, start, system=system, trans=trans)
    return fnp.reshape(out, per + (size,)), len(per)


_matrix_solve = defprimitive(
    _solve_raw, name="sparse_solve",
    vjp={0: _vjp_data, 1: _vjp_b, 2: _vjp_x0},
    jvp={0: _jvp_data, 1: _jvp_b, 2: _jvp_x0},
    batch=_batch,
)



# --------------------------------------------------------------------------------------
# solves with a LinearOperator: the parameters are the primitive's trailing arguments


def _operator_solve_raw(b: Any, x0: Any, *leaves: Any, system: System, trans: str = "N") -> Any:
    xp = namespace_of(b)
    given = () if system.operator.dtype is None else (system.operator.dtype,)
    want = _result_dtype(b.dtype, *given, *(getattr(v, "dtype", np.float64) for v in leaves))
    b = b.astype(want) if b.dtype != want else b
    return _iterative(xp, leaves, b, x0, system, trans, want)


def _operator_product(leaves: Any, x: Any, system: System, trans: str) -> Any:
    return system.operator.apply(leaves, x, trans)


def _operator_vjp_all(g: Any, ans: Any, argnums: Any, b: Any, x0: Any, *leaves: Any, system: System,
                      trans: str = "N") -> list[Any]:
    bb = _transposed(leaves, g, system, trans)
    param_cts: Any = ()
    if any(k >= 2 for k in argnums):  # -(d(op(A) x)/dp)^T bb, by reverse mode through matvec
        _, pullback = vjp(lambda *ls: _operator_product(ls, ans, system, trans), *leaves)
        param_cts = pullback(-bb)
    out = []
    for k in argnums:
        if k == 0:
            out.append(fnp.real(bb) if dtype(b).kind != "c" and dtype(bb).kind == "c" else bb)
        elif k == 1:
            out.append(fnp.zeros_like(x0))
        else:
            ct = param_cts[k - 2]
            out.append(fnp.real(ct) if dtype(leaves[k - 2]).kind != "c" and dtype(ct).kind == "c" else ct)
    return out


def _operator_jvp_all(tangents: list[Any], ans: Any, b: Any, x0: Any, *leaves: Any, system: System,
                      trans: str = "N") -> Any:
    rhs = tangents[0] if tangents[0] is not None else fnp.zeros_like(ans)
    moved = [i for i, t in enumerate(tangents[2:]) if t is not None]
    if moved:  # op(dA) x, by forward mode through matvec
        ts = tuple(tangents[2 + i] if tangents[2 + i] is not None else fnp.zeros_like(leaves[i])
                   for i in range(len(leaves)))
        _, d = jvp(lambda *ls: _operator_product(ls, ans, system, trans), tuple(leaves), ts)
        rhs = rhs - d
    return solve(leaves, rhs, None, system=system, trans=trans)


def _operator_batch(args: list[Any], dims: list[Any], *, system: System, trans: str = "N") -> tuple[Any, Any]:
    b, x0, leaves = args[0], args[1], args[2:]
    bdim, xdim, ldims = dims[0], dims[1], dims[2:]
    if all(d is None for d in ldims):  # a batch of right-hand sides: one operator
        return _batch([tuple(leaves), b, x0], [None, bdim, xdim], system=system, trans=trans)
    size = next(shape(v)[d] for v, d in zip(leaves, ldims) if d is not None)

    def member(x: Any, d: Any, i: int) -> Any:
        return x if d is None else move_to_front(x, d)[i]
    outs = [solve(tuple(member(v, d, i) for v, d in zip(leaves, ldims)), member(b, bdim, i),
                  None if x0 is None else member(x0, xdim, i), system=system, trans=trans) for i in range(size)]
    return fnp.stack(outs), 0


_operator_solve = defprimitive(
    _operator_solve_raw, name="sparse_operator_solve",
    vjp_all=_operator_vjp_all, jvp_all=_operator_jvp_all, batch=_operator_batch,
)


def solve(data: Any, b: Any, x0: Any, *, system: System, trans: str = "N") -> Any:
    """``x = op(A)^-1 b``, differentiable in ``data`` and ``b`` (see the module docstring).
    ``data``: the values of a sparse matrix over ``system.pattern``, or the parameters (a
    tuple of arrays) of ``system.operator``, a LinearOperator's static form."""
    if system.operator is None:
        return _matrix_solve(data, b, x0, system=system, trans=trans)
    return _operator_solve(b, x0, *data, system=system, trans=trans)
