"""Linear-algebra methods of ``Tensor``: the fused BLAS products (``addmm``, ``addmv``, ``addr``, ``baddbmm``,
``addbmm``, ``addcmul``, ``addcdiv``, each with its in-place form), ``vdot``, ``geqrf``/``orgqr``/``ormqr``, ``matrix_power``,
``matrix_exp``, ``pinverse``, ``slogdet``, ``qr``, ``svd``, ``lu``/``lu_solve``, ``triangular_solve``,
``cholesky_solve``/``cholesky_inverse``, and PyTorch's removed legacy names (``solve``, ``lstsq``, ``eig``,
``symeig``), which raise PyTorch's error pointing at ``ft.linalg``.

Every result is composed of ``funcgrad.numpy`` operations on ``self``, so it is recorded and
differentiable (to any order) in every tensor argument.

Example::

    y = bias.addmm(x, w.t())                     # bias + x @ w.T
    LU, pivots = A.lu()
    x = b.lu_solve(LU, pivots)                   # solves A x = b
"""

# A method's result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor
# class ``TensorT`` (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import builtins
import collections
from typing import Any

import numpy as np

import funcgrad.numpy as fnp
import funcgrad.scipy.linalg as fsl

from ..backend import namespace_of
from . import dtypes as _dt
from .inplace_variant import inplace_variant
from .method_args import operand, recorded_as
from .tensor_helpers import _raw
from .tensor_class import new_tensor
from .tensor_type import TensorBase, TensorT

# torch.return_types: named tuples that print as PyTorch's
SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])  # type: ignore[name-match]
QRResult = collections.namedtuple("qr", ["Q", "R"])  # type: ignore[name-match]
SVDResult = collections.namedtuple("svd", ["U", "S", "V"])  # type: ignore[name-match]
TriangularSolveResult = collections.namedtuple(  # type: ignore[name-match]
    "triangular_solve", ["solution", "cloned_coefficient"])
GeqrfResult = collections.namedtuple("geqrf", ["a", "tau"])  # type: ignore[name-match]
LUUnpackResult = collections.namedtuple("lu_unpack", ["P", "L", "U"])  # type: ignore[name-match]

REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization.\nX = torch.solve(B, A).solution should be replaced "
             "with:\nX = torch.linalg.solve(A, B)",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple.\nX, _ = torch.lstsq(B, A)"
             ".solution[:A.size(1)] should be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors.\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
           "L_complex, V_complex = torch.linalg.eig(A)",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by default "
              "to using the lower triangular portion.\nL, V = torch.symeig(A, eigenvectors=True) should be "
              "replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "matrix_rank": "Please use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was "
                   "renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def removed(name: str) -> Any:
    """The function PyTorch 2 keeps under a legacy ``name`` only to raise: its RuntimeError, with the advice."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {REMOVED[name]}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Removed in PyTorch 1.9 (raises, as ``torch.{name}`` does): {REMOVED[name]}"
    return fn


def _check_dim(t: Any, dim: int, what: str) -> None:
    if t.dim() != dim:
        raise RuntimeError(f"{what} must be a {dim}D tensor, got {t.dim()}D")


def _combine(self: Any, product: Any, beta: Any, alpha: Any) -> Any:
    """``beta * self + alpha * product`` (``self`` not read when ``beta == 0``, as PyTorch)."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:  # ``self`` gets a zero gradient; its NaNs do not reach the result
        everywhere = namespace_of(self._value).ones((), dtype=bool)
        return fnp.where(everywhere, scaled, self)
    return (self if beta == 1 else self * beta) + scaled


def _square(A: Any, op: str) -> None:
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2] if A.dim() > 1 else 1}"
                           f" by {A.shape[-1] if A.dim() else 1} matrices")


def _float(t: Any) -> Any:
    return t if t.dtype.is_floating_point or t.dtype.is_complex else t.to(_dt.get_default_dtype())


def _eye_like(t: Any, n: int) -> Any:
    xp = namespace_of(t._value)
    return new_tensor(xp.eye(n, dtype=t._value.dtype))


def _permutations(pivots: Any, n: int) -> Any:
    """The permutation matrices ``P`` (``A = P L U``) of LAPACK's 1-based ``pivots`` (batched), on the host."""
    piv = np.asarray(pivots.cpu()._value).astype(np.int64) - 1
    flat = piv.reshape(-1, piv.shape[-1])
    out = np.empty((flat.shape[0], n, n))
    for b, row in enumerate(flat):
        perm = np.arange(n)
        for i, p in enumerate(row):
            perm[i], perm[p] = perm[p], perm[i]
        out[b] = np.eye(n)[perm].T
    return out.reshape(piv.shape[:-1] + (n, n))


class _LinalgMixin(TensorBase[TensorT]):
    __slots__ = ()

    # ------------------------------------------------------------------ fused products
    @recorded_as("AddmmBackward0")
    def addmm(self: TensorT, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> "TensorT":
        """``beta * self + alpha * (mat1 @ mat2)``. Example: ``bias.addmm(x, w)``."""
        for name, m in (("mat1", mat1), ("mat2", mat2)):
            if m.dim() != 2:
                raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
        return _combine(self, mat1.matmul(mat2), beta, alpha)

    @recorded_as("AddmvBackward0")
    def addmv(self: TensorT, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> "TensorT":
        """``beta * self + alpha * (mat @ vec)``. Example: ``b.addmv(A, v)``."""
        if mat.dim() != 2 or vec.dim() != 1 or self.dim() > 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.dim()}, {mat.dim()}, {vec.dim()}")
        return _combine(self, mat.matmul(vec), beta, alpha)

    @recorded_as("AddrBackward0")
    def addr(self: TensorT, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> "TensorT":
        """``beta * self + alpha * outer(vec1, vec2)``. Example: ``M.addr(u, v)``."""
        for name, v in (("vec1", vec1), ("vec2", vec2)):
            if v.dim() != 1:
                raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
        return _combine(self, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha)

    @recorded_as("BaddbmmBackward0")
    def baddbmm(self: TensorT, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> "TensorT":
        """``beta * self + alpha * (batch1 @ batch2)`` over a batch of matrices. Example: ``c.baddbmm(a, b)``."""
        _check_dim(batch1, 3, "batch1")
        _check_dim(batch2, 3, "batch2")
        return _combine(self, batch1.matmul(batch2), beta, alpha)

    @recorded_as("AddbmmBackward0")
    def addbmm(self: TensorT, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> "TensorT":
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])``. Example: ``c.addbmm(a, b)``."""
        _check_dim(batch1, 3, "batch1")
        _check_dim(batch2, 3, "batch2")
        return _combine(self, batch1.matmul(batch2).sum(0), beta, alpha)

    @recorded_as("AddcmulBackward0")
    def addcmul(self: TensorT, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "TensorT":
        """``self + value * tensor1 * tensor2``. Example: ``x.addcmul(a, b, value=0.5)``."""
        return self + operand(self, tensor1) * operand(self, tensor2) * value

    @recorded_as("AddcdivBackward0")
    def addcdiv(self: TensorT, tensor1: Any, tensor2: Any, *, value: Any = 1) -> "TensorT":
        """``self + value * tensor1 / tensor2`` (floating tensors). Example: ``x.addcdiv(a, b, value=0.5)``."""
        t1, t2 = operand(self, tensor1), operand(self, tensor2)
        if not (t1.is_floating_point() or t1.is_complex() or t2.is_floating_point() or t2.is_complex()):
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                               "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
                               ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
                               "float inputs. The future addcdiv behavior is just the latter implementation: "
                               "(input + value * tensor1 / tensor2), for all dtypes.")
        return self + t1 / t2 * value

    addmm_ = inplace_variant("addmm")
    addmv_ = inplace_variant("addmv")
    addr_ = inplace_variant("addr")
    baddbmm_ = inplace_variant("baddbmm")
    addbmm_ = inplace_variant("addbmm")

    @recorded_as("VdotBackward0")
    def vdot(self: TensorT, other: Any) -> "TensorT":
        """``sum(conj(self) * other)`` of two 1-D tensors. Example: ``ft.tensor([1., 2.]).vdot(ft.tensor([3., 4.]))``."""
        other = operand(self, other)
        if self.dim() != 1 or other.dim() != 1:
            raise RuntimeError(f"1D tensors expected, but got {self.dim()}D and {other.dim()}D tensors")
        if self.dtype != other.dtype:
            raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {self.dtype} and "
                               f"{other.dtype}")
        return (self.conj() * other).sum()

    # ------------------------------------------------------------------ matrix functions
    def matrix_power(self: TensorT, n: builtins.int) -> "TensorT":
        """``self`` multiplied by itself ``n`` times (the inverse's powers for ``n < 0``). Example: ``A.matrix_power(3)``."""
        _square(self, "linalg.matrix_power")
        return fnp.linalg.matrix_power(self, n)

    @recorded_as("LinalgMatrixExpBackward0")
    def matrix_exp(self: TensorT) -> "TensorT":
        """The matrix exponential (batched). Example: ``ft.zeros(2, 2).matrix_exp()`` is the identity."""
        _square(self, "linalg.matrix_exp")
        return fsl.expm(_float(self))

    @recorded_as("LinalgPinvBackward0")
    def pinverse(self: TensorT, rcond: builtins.float = 1e-15) -> "TensorT":
        """The Moore-Penrose pseudo-inverse. Example: ``ft.ones(2, 3).pinverse()``."""
        return fnp.linalg.pinv(_float(self), rcond)

    def slogdet(self: TensorT) -> Any:
        """``(sign, logabsdet)`` of the determinant. Example: ``sign, logabs = A.slogdet()``."""
        _square(self, "linalg.slogdet")
        sign, logabs = fnp.linalg.slogdet(_float(self))
        return SlogdetResult(sign, logabs)

    def qr(self: TensorT, some: builtins.bool = True) -> Any:
        """``(Q, R)`` with ``Q`` orthonormal and ``R`` upper triangular (``some=False``: complete ``Q``).

        Example: ``Q, R = A.qr()``.
        """
        Q, R = fnp.linalg.qr(_float(self), mode="reduced" if some else "complete")
        return QRResult(Q, R)

    def svd(self: TensorT, some: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:
        """``(U, S, V)`` with ``self = U diag(S) V^H`` (``V``, not ``Vh``, as PyTorch's legacy ``svd``).

        Example: ``U, S, V = A.svd()``.
        """
        A = _float(self)
        if not compute_uv:
            S = fnp.linalg.svd(A, compute_uv=False)
            m, n = self.shape[-2], self.shape[-1]
            xp = namespace_of(A._value)
            zeros = new_tensor(xp.zeros(tuple(self.shape[:-2]) + (m, m if not some else builtins.min(m, n)),
                                        dtype=A._value.dtype))
            return SVDResult(zeros, S.detach(), new_tensor(xp.zeros(tuple(self.shape[:-2]) + (
                n, n if not some else builtins.min(m, n)), dtype=A._value.dtype)))
        U, S, Vh = fnp.linalg.svd(A, full_matrices=not some)
        return SVDResult(U, S, Vh.mH)

    # ------------------------------------------------------------------ factorizations and solves
    def lu(self: TensorT, pivot: builtins.bool = True, get_infos: builtins.bool = False) -> Any:
        """``(LU, pivots)``: the packed LU factorization (unit lower factor below the diagonal, upper factor on
        and above it) and LAPACK's 1-based int32 row interchanges; ``get_infos=True`` adds a zero info tensor.
        Differentiable in ``self``.

        Example: ``LU, pivots = A.lu(); P, L, U = ft.lu_unpack(LU, pivots)``.
        """
        if not pivot:
            raise RuntimeError("lu without pivoting is not implemented on the CPU")
        _square(self, "torch.lu")
        LU, piv = fsl.lu_factor(_float(self))
        xp = namespace_of(self._value)
        pivots = new_tensor(xp.asarray(_raw(piv)).astype(np.int32) + 1)
        if get_infos:
            return LU, pivots, new_tensor(xp.zeros(tuple(self.shape[:-2]), dtype=np.int32))
        return LU, pivots

    @recorded_as("LinalgLuSolveBackward0")
    def lu_solve(self: TensorT, LU_data: Any, LU_pivots: Any) -> "TensorT":
        """The solution ``X`` of ``A X = self`` from ``A.lu()``'s ``LU_data`` and ``LU_pivots``; differentiable
        in ``self`` and ``LU_data`` (the pivots are read on the host).

        Example: ``LU, piv = A.lu(); X = B.lu_solve(LU, piv)``.
        """
        P, L, U = lu_unpack(LU_data, LU_pivots)
        y = fnp.linalg.solve(L, P.mT.matmul(self))
        return fnp.linalg.solve(U, y)

    def triangular_solve(self: TensorT, A: Any, upper: builtins.bool = True, transpose: builtins.bool = False,
                         unitriangular: builtins.bool = False) -> Any:
        """``(X, A.clone())`` with ``X`` solving ``A X = self`` for the upper (or lower) triangle of ``A``;
        ``transpose`` solves with ``A^T``, ``unitriangular`` takes ``A``'s diagonal as ones.

        Example: ``X, _ = b.triangular_solve(R)``.
        """
        A = operand(self, A)
        tri = A.triu() if upper else A.tril()
        if unitriangular:
            n = A.shape[-1]
            tri = (A.triu(1) if upper else A.tril(-1)) + _eye_like(A, n)
        if transpose:
            tri = tri.mT
        return TriangularSolveResult(fnp.linalg.solve(tri, self), A.clone())

    @recorded_as("CholeskySolveBackward0")
    def cholesky_solve(self: TensorT, input2: Any, upper: builtins.bool = False) -> "TensorT":
        """The solution ``X`` of ``A X = self`` where ``A = L L^H`` has the Cholesky factor ``input2`` (``upper``:
        ``A = U^H U``). Example: ``X = B.cholesky_solve(ft.linalg.cholesky(A))``."""
        L = operand(self, input2)
        if upper:
            L = L.mH
        return fnp.linalg.solve(L.mH, fnp.linalg.solve(L, self))

    @recorded_as("CholeskyInverseBackward0")
    def cholesky_inverse(self: TensorT, upper: builtins.bool = False) -> "TensorT":
        """The inverse of ``A = L L^H`` from its Cholesky factor ``self`` (``upper``: ``A = U^H U``).

        Example: ``ft.linalg.cholesky(A).cholesky_inverse()`` is ``A.inverse()``.
        """
        _square(self, "cholesky_inverse")
        return _eye_like(self, self.shape[-1]).expand(*self.shape).cholesky_solve(self, upper)

    # ------------------------------------------------------------------ Householder (LAPACK's geqrf form)
    def geqrf(self: TensorT) -> Any:
        """``(a, tau)``: LAPACK's QR in Householder form (``R`` on and above the diagonal, the reflectors'
        tails below, their scales in ``tau``); not differentiable, as PyTorch's. Example: ``a, tau = A.geqrf()``."""
        if self.dim() < 2:
            raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
        A = _float(self).detach()
        xp = namespace_of(A._value)
        flat = xp.reshape(A._value, (-1,) + tuple(A.shape[-2:]))
        hs, taus = [], []
        for m in flat:
            h, tau = xp.linalg.qr(m, mode="raw")
            hs.append(h.T)
            taus.append(tau)
        k = builtins.min(A.shape[-2:])
        a = xp.reshape(xp.stack(hs), tuple(A.shape))
        tau = xp.reshape(xp.stack(taus), tuple(A.shape[:-2]) + (k,))
        return GeqrfResult(new_tensor(xp.ascontiguousarray(a)), new_tensor(tau))

    def _householder_q(self: TensorT, tau: Any, columns: builtins.int) -> "TensorT":
        """``H_1 H_2 ... H_k`` (``H_i = I - tau_i v_i v_i^H``, ``v_i`` = column ``i`` of ``self`` below the
        diagonal with a unit on it), its first ``columns`` columns; differentiable in ``self`` and ``tau``."""
        m, n = self.shape[-2], self.shape[-1]
        tau = operand(self, tau)
        k = tau.shape[-1]
        if k > n:
            raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal "
                               "to tau.shape[-1]")
        reflectors = self.tril(-1) + _eye_like(self, builtins.max(m, n))[:m, :n]
        Q = _eye_like(self, m).expand(*(tuple(self.shape[:-2]) + (m, m)))
        for i in range(k):
            v = reflectors[..., :, i:i + 1]
            Q = Q - tau[..., i:i + 1].unsqueeze(-1) * Q.matmul(v).matmul(v.mH)
        return Q[..., :columns]

    @recorded_as("LinalgHouseholderProductBackward0")
    def orgqr(self: TensorT, input2: Any) -> "TensorT":
        """The first ``n`` columns of ``Q`` from ``geqrf``'s ``(self, tau=input2)`` (``householder_product``);
        differentiable. Example: ``Q = a.orgqr(tau)``."""
        if self.shape[-2] < self.shape[-1]:
            raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal "
                               "to input.shape[-1]")
        return self._householder_q(input2, self.shape[-1])

    @recorded_as("OrmqrBackward0")
    def ormqr(self: TensorT, input2: Any, input3: Any, left: builtins.bool = True,
              transpose: builtins.bool = False) -> "TensorT":
        """``Q @ other`` (``left=False``: ``other @ Q``; ``transpose``: with ``Q^H``) for the full ``Q`` of
        ``geqrf``'s ``(self, tau=input2)``; differentiable. Example: ``a.ormqr(tau, C)``."""
        Q = self._householder_q(input2, self.shape[-2])
        if transpose:
            Q = Q.mH
        other = operand(self, input3)
        return Q.matmul(other) if left else other.matmul(Q)

    solve = removed("solve")
    lstsq = removed("lstsq")
    eig = removed("eig")
    symeig = removed("symeig")


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: builtins.bool = True,
              unpack_pivots: builtins.bool = True) -> Any:
    """``(P, L, U)`` with ``A = P @ L @ U`` from ``A.lu()``'s packed factors (``torch.lu_unpack``); ``L`` and
    ``U`` are differentiable in ``LU_data``.

    Example: ``P, L, U = ft.lu_unpack(*A.lu())``.
    """
    n = LU_data.shape[-1]
    xp = namespace_of(LU_data._value)
    L = LU_data.tril(-1) + _eye_like(LU_data, n) if unpack_data else None
    U = LU_data.triu() if unpack_data else None
    P = new_tensor(xp.asarray(_permutations(LU_pivots, n).astype(LU_data._value.dtype))) if unpack_pivots else None
    return LUUnpackResult(P, L, U)
