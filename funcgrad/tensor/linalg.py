"""``ft.linalg``: PyTorch's ``torch.linalg`` names over ``funcgrad.numpy.linalg`` (differentiable).

Example::

    A = ft.randn(3, 3, dtype=ft.float64, requires_grad=True)
    ft.linalg.det(A).backward()          # A.grad = det(A) * inv(A).T
"""

# A result is made by funcgrad.numpy from Tensors (typed ``Any``) and returned as the Tensor class
# ``TensorT`` of the argument (see tensor_type.py), hence:
# mypy: disable-error-code="no-any-return"

from __future__ import annotations

import collections
from typing import Any

import funcgrad.numpy as fnp

from .tensor_helpers import _as_tensor, _float
from .torch_names import named
from .tensor_type import TensorBase, TensorT


__all__ = ["inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "norm",
           "vector_norm", "matrix_norm", "pinv", "matrix_power"]

_SlogDet = collections.namedtuple("slogdet", ["sign", "logabsdet"])  # type: ignore[name-match]
_Eigh = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])  # type: ignore[name-match]
_SVD = collections.namedtuple("svd", ["U", "S", "Vh"])  # type: ignore[name-match]  # repr as torch.return_types
_QR = collections.namedtuple("qr", ["Q", "R"])  # type: ignore[name-match]  # repr as torch.return_types


def _t(x: Any) -> Any:
    return _float(_as_tensor(x))


def _named(name: str, fn: Any, A: TensorBase[TensorT]) -> TensorT:
    """``fn(A)`` (a primitive) as a Tensor whose ``grad_fn`` is PyTorch's node ``name``."""
    return _as_tensor(named(name, fn)(_t(A)))


def _results(kind: Any, outs: Any) -> Any:
    """Several outputs as Tensors in PyTorch's named tuple ``kind`` (``torch.return_types``)."""
    return kind(*(_as_tensor(o) for o in outs))


def inv(A: TensorBase[TensorT]) -> TensorT:
    return _named("LinalgInvExBackward0", fnp.linalg.inv, A)


def det(A: TensorBase[TensorT]) -> TensorT:
    return _named("LinalgDetBackward0", fnp.linalg.det, A)


def slogdet(A: TensorBase[TensorT]) -> Any:
    return _results(_SlogDet, fnp.linalg.slogdet(_t(A)))


def solve(A: TensorBase[TensorT], B: TensorBase[TensorT], *, left: bool = True) -> TensorT:
    if not left:
        return solve(_t(A).mT, _t(B).mT).mT
    return _as_tensor(fnp.linalg.solve(_t(A), _t(B)))


def cholesky(A: TensorBase[TensorT], *, upper: bool = False) -> TensorT:
    L = _as_tensor(fnp.linalg.cholesky(_t(A)))
    return L.mH if upper else L


def eigh(A: TensorBase[TensorT], UPLO: str = "L") -> Any:
    return _results(_Eigh, fnp.linalg.eigh(_t(A), UPLO=UPLO))


def eigvalsh(A: TensorBase[TensorT], UPLO: str = "L") -> TensorT:
    return _as_tensor(fnp.linalg.eigvalsh(_t(A), UPLO=UPLO))


def svd(A: TensorBase[TensorT], full_matrices: bool = True) -> Any:
    return _results(_SVD, fnp.linalg.svd(_t(A), full_matrices=full_matrices))


def svdvals(A: TensorBase[TensorT]) -> TensorT:
    return _as_tensor(fnp.linalg.svd(_t(A), compute_uv=False))


def qr(A: TensorBase[TensorT], mode: str = "reduced") -> Any:
    return _results(_QR, fnp.linalg.qr(_t(A), mode=mode))


def pinv(A: TensorBase[TensorT]) -> TensorT:
    return _as_tensor(fnp.linalg.pinv(_t(A)))


def matrix_power(A: TensorBase[TensorT], n: int) -> TensorT:
    return _as_tensor(fnp.linalg.matrix_power(_t(A), n))


def vector_norm(x: TensorBase[TensorT], ord: Any = 2, dim: Any = None, keepdim: bool = False) -> TensorT:  # noqa: A002
    return _t(x).norm(p=ord, dim=dim, keepdim=keepdim)


def matrix_norm(A: TensorBase[TensorT], ord: Any = "fro", dim: tuple[Any, ...] = (-2, -1),  # noqa: A002
                keepdim: bool = False) -> TensorT:
    return _as_tensor(fnp.linalg.norm(_t(A), ord=ord, axis=dim, keepdims=keepdim))


def norm(A: TensorBase[TensorT], ord: Any = None, dim: Any = None, keepdim: bool = False) -> TensorT:  # noqa: A002
    A = _t(A)
    if ord is None and (dim is None or isinstance(dim, int)):
        return A.norm(dim=dim, keepdim=keepdim)
    return _as_tensor(fnp.linalg.norm(A, ord=ord, axis=dim, keepdims=keepdim))
