"""The ``torch`` namespace's fused multiply-add products and small products: ``addmm``, ``addmv``, ``addr``,
``baddbmm``, ``addbmm``, ``addcmul``, ``addcdiv``, ``chain_matmul``, ``inner``, each ``beta * input + alpha * ...``
composed of recorded Tensor operations (so every argument gets its gradient, to any order).
As in PyTorch, ``beta=0`` ignores ``input`` (its NaNs do not propagate).

Example::

    y = ft.addmm(bias, x, w.t())                        # bias + x @ w.T
    z = ft.baddbmm(z0, q, k.transpose(1, 2), alpha=0.125)
"""

from __future__ import annotations

from typing import Any

from .ops import matmul
from .tensor import Tensor
from .tensor import _as_tensor

__all__ = ["addmm", "addmv", "addr", "baddbmm", "addbmm", "addcmul", "addcdiv", "chain_matmul", "inner"]


def _combine(input: Any, product: Tensor, beta: float, alpha: float) -> Tensor:  # noqa: A002
    """``beta * input + alpha * product`` (``input`` broadcasts to the product's shape; not read when ``beta=0``)."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    base = _as_tensor(input)
    return (base if beta == 1 else base * beta) + scaled


def _check(t: Tensor, dim: int, what: str) -> None:
    if t.dim() != dim:
        raise RuntimeError(f"{what} must be a {dim}D tensor, got {t.dim()}D")


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``. Example: ``ft.addmm(b, x, w)``."""
    _check(mat1, 2, "mat1")
    _check(mat2, 2, "mat2")
    return _combine(input, matmul(mat1, mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``. Example: ``ft.addmv(b, A, v)``."""
    _check(mat, 2, "mat")
    _check(vec, 1, "vec")
    return _combine(input, matmul(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``. Example: ``ft.addr(M, u, v)``."""
    _check(vec1, 1, "vec1")
    _check(vec2, 1, "vec2")
    return _combine(input, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,  # noqa: A002
            alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``, batched matrices. Example: ``ft.baddbmm(c, a, b)``."""
    _check(batch1, 3, "batch1")
    _check(batch2, 3, "batch2")
    return _combine(input, matmul(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,  # noqa: A002
           alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``. Example: ``ft.addbmm(c, a, b)``."""
    _check(batch1, 3, "batch1")
    _check(batch2, 3, "batch2")
    return _combine(input, matmul(batch1, batch2).sum(0), beta, alpha)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``. Example: ``ft.addcmul(x, a, b, value=0.5)``."""
    return _as_tensor(input) + _as_tensor(tensor1) * _as_tensor(tensor2) * value


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``. Example: ``ft.addcdiv(x, a, b, value=0.5)``."""
    t1, t2 = _as_tensor(tensor1), _as_tensor(tensor2)
    if not t1.is_floating_point() and not t2.is_floating_point() and not t1.is_complex():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    return _as_tensor(input) + t1 / t2 * value


def chain_matmul(*matrices: Tensor) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...`` (deprecated in PyTorch for ``linalg.multi_dot``).

    Example: ``ft.chain_matmul(a, b, c)``.
    """
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The inner product over the last axes (``a @ b.T`` for matrices; scalars multiply).

    Example: ``ft.inner(ft.ones(2, 3), ft.ones(4, 3))`` -> ``(2, 4)``.
    """
    a, b = _as_tensor(input), _as_tensor(other)
    if a.dim() == 0 or b.dim() == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    return (a.reshape(tuple(a.shape[:-1]) + (1,) * (b.dim() - 1) + (a.shape[-1],)) * b).sum(-1)
