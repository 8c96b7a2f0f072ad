"""``view_as_real`` / ``view_as_complex`` as views of the same memory, as PyTorch's: a complex
array's elements read as pairs of reals (``z[..., None].view(float)``) and a real array whose last
axis holds contiguous ``(re, im)`` pairs read as complex numbers (``x.view(complex)[..., 0]``), in
the array's own namespace (CuPy has ``.view`` too). Writes through one show in the other, the
version counter is shared, and an in-place change of the view rebases its base's history
(:mod:`funcgrad.tensor.views`).

Each is a primitive with its VJP, JVP and batching rule, written in funcgrad.numpy so they
differentiate again. Cotangents follow funcgrad's convention (JAX's): that of ``x + iy`` is
``ct_x - i ct_y``.

Example::

    z = ft.tensor([1 + 2j, 3 - 1j])
    r = ft.view_as_real(z)          # tensor([[ 1.,  2.], [ 3., -1.]]), r._base is z
    r[0, 1] = 5.0                   # z is now tensor([1.+5.j, 3.-1.j])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..core import defprimitive
from ..numpy._batching import move_to_front

__all__ = ["view_as_real_array", "view_as_complex_array", "view_as_complex_problem"]


def _real_dtype(z: Any) -> Any:
    return z.real.dtype


def _as_real_raw(z: Any) -> Any:
    return z[..., None].view(_real_dtype(z))  # (..., 1) complex -> (..., 2) real, the same memory


_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}


def _as_complex_raw(x: Any) -> Any:
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"view_as_complex: the last axis must hold (re, im) pairs (size 2), got shape {x.shape}")
    target = _COMPLEX_OF.get(x.dtype)
    if target is None or x.strides[-1] != x.itemsize:
        # NumPy has no complex type of half precision, or the pairs are not adjacent in memory (the
        # Tensor layer refuses that layout first, as PyTorch): a copy
        return x[..., 0] + 1j * x[..., 1]
    return x.view(target)[..., 0]  # (..., 2) real -> (..., 1) complex -> (...)


def _as_real_vjp(g: Any, ans: Any, z: Any) -> Any:
    return g[..., 0] - 1j * g[..., 1]


def _as_complex_vjp(g: Any, ans: Any, x: Any) -> Any:
    return fnp.stack([fnp.real(g), -fnp.imag(g)], axis=-1)


def _trailing_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """vmap rule of a map acting on the trailing axis: the batch axis first, then ``fn`` (a
    composition: under vmap there is no memory to share)."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        return fn(move_to_front(args[0], dims[0])), 0

    return rule


view_as_real_array: Callable[[Any], Any] = defprimitive(
    _as_real_raw, name="view_as_real", vjp=_as_real_vjp, reads={0: ()}, jvp=lambda t, ans, z: view_as_real_array(t),
    batch=_trailing_rule(lambda z: fnp.stack([fnp.real(z), fnp.imag(z)], axis=-1)),
    doc="A complex array ``(...)`` read as its ``(re, im)`` pairs ``(..., 2)``: a view of the same memory.")

view_as_complex_array: Callable[[Any], Any] = defprimitive(
    _as_complex_raw, name="view_as_complex", vjp=_as_complex_vjp, reads={0: ()}, jvp=lambda t, ans, x: view_as_complex_array(t),
    batch=_trailing_rule(lambda x: x[..., 0] + 1j * x[..., 1]),
    doc="A real array ``(..., 2)`` whose last axis is contiguous read as complex numbers ``(...)``: a view.")


def view_as_complex_problem(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> str | None:
    """PyTorch's reason (its words) why a real tensor of this layout (strides and offset in
    elements) cannot be viewed as complex, or None."""
    if not shape or shape[-1] != 2:
        return "Tensor must have a last dimension of size 2"
    if strides[-1] != 1:
        return "Tensor must have a last dimension with stride 1"
    if any(s % 2 for s in strides[:-1]):
        return "Tensor must have a stride divisible by 2 for all but last dimension"
    if offset % 2:
        return "Tensor must have a storage_offset divisible by 2"
    return None
