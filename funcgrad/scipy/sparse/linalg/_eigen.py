"""``eigsh``: a few eigenpairs of a real symmetric or complex Hermitian sparse matrix,
through the backend's ``eigsh``, differentiable in the values (eigenvalues and
eigenvectors, to any order).

For a simple eigenvalue ``lam`` with unit eigenvector ``v`` of symmetric ``A``:

- ``d lam = v^T dA v``, so the eigenvalues' cotangent is
  ``data_bar[k] = sum_i g_i v_i[row_k] v_i[col_k]`` (at the stored entries only);
- ``dv = -(A - lam I)^+ (I - v v^T) dA v``: the pseudo-inverse acts on the rest of the
  spectrum, which ``eigsh`` has not computed. Instead of a dense n x n, ``dv`` solves the
  bordered system (sparse, (n+1) x (n+1), nonsingular exactly when ``lam`` is simple)::

      [[A - lam I, v], [v^T, 0]] [dv; mu] = [-dA v; 0]     (then v^T dv = 0, mu = -d lam)

  with the differentiable sparse LU solve. The system is symmetric, so the VJP is the same
  solve applied to the cotangent: ``z = top of M^-1 [gv; 0]``, ``data_bar[k] -= z[row_k] v[col_k]``.

Both rules are written with differentiable operations (the sparse solve, gathers,
scatter-adds), so they differentiate again. Eigenvectors are made unique by their sign:
the entry of largest magnitude is positive.

Complex Hermitian ``A``: ``d lam = Re(v^H dA v)``; the bordered system has ``v^H`` in its
last row (so ``v^H dv = 0``), and the gauge (the entry ``v[p]`` of largest magnitude real
and positive) adds the phase correction ``dv -= i Im(dv[p] / v[p]) v``. The VJP is the
transpose of these maps in funcgrad's (JAX's) convention for complex values: the
correction's transpose moves ``-i Im(g . v) / v[p]`` onto the cotangent's entry ``p``,
and the bordered solve's transpose is ``conj(M^-1 conj(.))`` (``M`` is Hermitian). A repeated eigenvalue has no differentiable
eigenvectors (only their span is defined): the bordered system is then singular and the
derivative raises :class:`SingularMatrixError` rather than give a wrong number.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ....backend import namespace_of
from ....core import Box, defprimitive, unbox_all
from ....numpy._batching import move_to_front
from ....numpy._util import shape
from .._arrays import coo_array
from .._backend import native_matrix, sparse_linalg_module
from .._pattern import Pattern
from .._values import gather, segment_sum
from ._direct import as_square_sparse, spsolve
from ._system import SingularMatrixError

__all__ = ["eigsh"]


def _eigsh_raw(data: Any, *, pattern: Pattern, k: int, which: str, tol: float,
               sigma: float | None = None) -> tuple[Any, Any]:
    xp = namespace_of(data)
    mat = native_matrix(xp, data, pattern, "csr")
    n = pattern.shape[0]
    fn = sparse_linalg_module(xp).eigsh
    start = xp.ones(n, dtype=data.dtype)
    if sigma is None:
        w, v = fn(mat, k=k, which=which, tol=tol, v0=start)
    elif xp is np:   # shift-invert: the eigenpairs of A nearest sigma (the derivative rules are A's)
        w, v = fn(mat.tocsc(), k=k, sigma=sigma, which=which, tol=tol, v0=start)
    else:
        raise NotImplementedError(f"eigsh(sigma=...): shift-invert is not available for arrays of namespace "
                                  f"{getattr(xp, '__name__', xp)!r} (cupyx's eigsh has no sigma); move the "
                                  f"values to the host with fg.device_put(x, 'cpu')")
    order = xp.argsort(w)
    w, v = w[order], v[:, order]
    # the gauge: the entry of largest magnitude of each eigenvector is real and positive
    big = xp.take_along_axis(v, xp.argmax(xp.abs(v), axis=0)[None, :], axis=0)
    if np.dtype(data.dtype).kind == "c":
        v = v * (xp.conj(big) / xp.abs(big))
    else:
        v = v * xp.where(big < 0, -1.0, 1.0).astype(v.dtype)
    return w.astype(_real_dtype(data.dtype)), v.astype(data.dtype)


def _real_dtype(dt: Any) -> np.dtype:
    return np.empty(0, dtype=dt).real.dtype


def _is_complex(x: Any) -> bool:
    return bool(fnp.result_type(x).kind == "c")


def _bordered_solve(data: Any, lam: Any, v: Any, rhs: Any, pattern: Pattern) -> Any:
    """The first n entries of ``[[A - lam I, v], [v^H, 0]]^-1 [rhs; 0]`` (sparse LU)."""
    n = pattern.shape[0]
    diag = np.arange(n)
    edge = np.full(n, n)
    rows = np.concatenate([pattern.row, diag, diag, edge])
    cols = np.concatenate([pattern.col, diag, edge, diag])
    values = fnp.concatenate([data, fnp.zeros_like(v) - lam, v, fnp.conj(v) if _is_complex(v) else v])
    bordered = coo_array((values, (rows, cols)), shape=(n + 1, n + 1))
    # structurally symmetric: a minimum-degree ordering of A + A^T keeps the LU's fill low
    full = spsolve(bordered, fnp.concatenate([rhs, fnp.zeros_like(rhs[:1])]), permc_spec="MMD_AT_PLUS_A")
    return full[:n]


def _gauge_entries(v: Any) -> Any:
    """Per eigenvector, the position of its entry of largest magnitude (where the gauge
    makes it real and positive), as a traced index (no host read; jit records it)."""
    return fnp.argmax(fnp.abs(v), axis=0)


def _entry(x: Any, position: Any) -> Any:
    """``x[position]`` (a 1-element array) for a traced 0-d ``position``."""
    return fnp.take(x, fnp.reshape(position, (1,)))


def _repeated(w: Any) -> bool:
    """Whether the computed eigenvalues (host values) hold a repeated one. (A repetition with
    an eigenvalue not computed makes the bordered solve singular instead.)"""
    values = unbox_all(w)
    if not isinstance(values, np.ndarray) or values.size < 2:
        return False
    gaps = np.diff(np.sort(values))
    scale = max(float(np.max(np.abs(values))), float(np.finfo(values.dtype).tiny))
    return bool(np.any(gaps <= (1e-10 if values.dtype == np.float64 else 1e-5) * scale))


def _check_simple(w: Any) -> None:
    """Refuse eigenvector derivatives at a repeated eigenvalue."""
    if _repeated(w):
        values = unbox_all(w)
        raise SingularMatrixError(
            f"eigsh: the computed eigenvalues {values} are repeated (a singular bordered system): the eigenvectors "
            "of a repeated eigenvalue are not unique (only their span is), so they have no derivative; "
            "differentiate the eigenvalues, or a function of the span (e.g. the projector v v^T)")


def _times_vectors(t: Any, v: Any, p: Pattern) -> Any:
    """``dA v`` (n x k) for values' tangent ``t`` of pattern ``p``."""
    return segment_sum(fnp.reshape(t, (-1, 1)) * gather(v, p.col), p.row, p.shape[0])


def _vjp_all(g: tuple[Any, Any], ans: tuple[Any, Any], argnums: Any, data: Any, **kw: Any) -> list[Any]:
    gw, gv = g
    p: Pattern = kw["pattern"]
    w, v = ans
    complex_ = _is_complex(v)
    out = fnp.zeros_like(data)
    if gw is not None:
        left = gather(fnp.conj(v) if complex_ else v, p.row)
        out = out + fnp.sum(left * gather(v, p.col) * gw, axis=1)
    if gv is not None and not (isinstance(gv, np.ndarray) and not gv.any()):  # skip a host zero cotangent
        _check_simple(w)
        where: Any = _gauge_entries(v) if complex_ else None
        for i in range(shape(v)[1]):
            vi, gi = v[:, i], gv[:, i]
            if complex_:
                # the gauge's phase correction (see _jvp), transposed: gi - i Im(gi . vi) / vi[p] e_p
                s = fnp.sum(gi * vi)
                fix = -1j * fnp.imag(s) / _entry(vi, where[i])
                gi = fnp.at(gi)[fnp.reshape(where[i], (1,))].add(fix)
                z = fnp.conj(_bordered_solve(data, w[i], vi, fnp.conj(gi), p))
            else:
                z = _bordered_solve(data, w[i], vi, gi, p)
            out = out - gather(z, p.row) * gather(vi, p.col)
    return [out for _ in argnums]


def _jvp(t: Any, ans: tuple[Any, Any], data: Any, **kw: Any) -> tuple[Any, Any]:
    # The eigenvector tangents are computed even when only eigenvalues are returned: the
    # eigenvalues' second derivative reads them (through ``v`` in ``tw``).
    p: Pattern = kw["pattern"]
    w, v = ans
    complex_ = _is_complex(v)
    dav = _times_vectors(t, v, p)
    tw = fnp.sum((fnp.conj(v) if complex_ else v) * dav, axis=0)
    if complex_:
        tw = fnp.real(tw)
    if _repeated(w):  # the eigenvectors have no derivative: NaN, never a finite wrong number
        return tw, fnp.full(shape(v), np.nan, dtype=fnp.result_type(v))
    where: Any = _gauge_entries(v) if complex_ else None
    cols = []
    for i in range(shape(v)[1]):
        z = _bordered_solve(data, w[i], v[:, i], -dav[:, i], p)     # v^H z = 0
        if complex_:  # keep v[p] real: remove the imaginary part of z[p] / v[p] along v
            z = z - 1j * fnp.imag(_entry(z, where[i]) / _entry(v[:, i], where[i])) * v[:, i]
        cols.append(z)
    return tw, fnp.stack(cols, axis=1)


def _batch(args: list[Any], dims: list[Any], **kw: Any) -> tuple[Any, Any]:
    data = move_to_front(args[0], dims[0])
    outs = [_eigsh(data[i], **kw) for i in range(shape(data)[0])]
    return (fnp.stack([o[0] for o in outs]), fnp.stack([o[1] for o in outs])), (0, 0)


_eigsh = defprimitive(_eigsh_raw, name="sparse_eigsh", vjp_all=_vjp_all, jvp=_jvp, batch=_batch,
                      multiple_results=True)


def eigsh(A: Any, k: int = 6, M: Any = None, sigma: Any = None, which: str = "LM", v0: Any = None,  # noqa: N803
          ncv: Any = None, maxiter: Any = None, tol: float = 0, return_eigenvectors: bool = True,
          Minv: Any = None, OPinv: Any = None, mode: str = "normal") -> Any:  # noqa: N803
    """``k`` eigenvalues (ascending) and eigenvectors of a real symmetric or complex
    Hermitian sparse ``A`` (SciPy's ``eigsh``; ``which`` 'LM', 'SM', 'LA', 'SA', or 'BE' for
    real ``A``; with ``sigma``, shift-invert mode: the eigenpairs nearest ``sigma``, on the
    host), differentiable in ``A``'s values to any order, without a dense n x n:
    eigenvalues by ``v^H dA v``, eigenvectors by one sparse bordered solve per pair (see
    the module docstring).

    Eigenvectors are unique up to sign (a phase, when complex); funcgrad makes the entry of
    largest magnitude real and positive, and differentiates in that gauge (compare phase-
    invariant quantities such as ``|v|^2`` or ``v v^H`` with other libraries). For a repeated eigenvalue only the eigenvectors' span is defined: their
    derivative raises ``SingularMatrixError`` (the eigenvalues' stays defined).
    Differentiate through a symmetric (Hermitian) function of the values (e.g. ``A + A.T``,
    ``A + A.conj().T``): the derivative assumes ``A`` stays so.

    Example::

        w, v = eigsh(A, k=2, which="LA")
        fg.grad(lambda d: fnp.sum(eigsh(A._like(d), k=1, which="LA")[1] ** 4))(A.data)
    """
    if M is not None or Minv is not None or OPinv is not None or mode != "normal":
        raise NotImplementedError("eigsh: generalized problems (M, Minv, OPinv) and the modes other than 'normal' "
                                  "are not supported")
    if sigma is not None and (isinstance(sigma, Box) or not np.isscalar(sigma) or np.iscomplexobj(sigma)):
        raise TypeError(f"eigsh: sigma must be a concrete real number (the shift picks which eigenpairs; "
                        f"their derivatives are A's), got {sigma!r}")
    a = as_square_sparse(A, "csr", "eigsh")
    n = a.shape[0]
    if not 0 < k < n:
        raise ValueError(f"eigsh: k must satisfy 0 < k < n = {n}, got {k}")
    w, v = _eigsh(a.data, pattern=a.pattern, k=int(k), which=which, tol=float(tol),
                  sigma=None if sigma is None else float(sigma))  # type: ignore[arg-type]
    return (w, v) if return_eigenvectors else w
