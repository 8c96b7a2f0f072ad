"""Type aliases shared by funcgrad.numpy's (and funcgrad.scipy's) signatures.

Values flowing through funcgrad are arrays of any backend (NumPy, CuPy, ...), traced
boxes of them, or Python scalars, so ``ArrayLike`` and ``Array`` cannot be narrower
than ``Any``; the aliases name intent. Shapes and axes are checked precisely, so
``fnp.reshape(x, "3, 2")`` or ``fnp.sum(x, axis="rows")`` is flagged by a type checker.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, SupportsIndex, Tuple, Union

from typing_extensions import TypeAlias

__all__ = ["ArrayLike", "Array", "DTypeLike", "ShapeLike", "Axis", "UnaryUfunc", "BinaryUfunc"]

ArrayLike: TypeAlias = Any  # an array of any backend, a traced box, a Python scalar or nested list
Array: TypeAlias = Any  # what a funcgrad.numpy function returns: a backend array or a traced box
DTypeLike: TypeAlias = Any  # anything numpy.dtype accepts
ShapeLike: TypeAlias = Union[SupportsIndex, Sequence[SupportsIndex]]
Axis: TypeAlias = Union[None, int, Tuple[int, ...]]  # a reduction's axis: all (None), one, or several


class UnaryUfunc(Protocol):
    """A differentiable unary ufunc: ``f(x)``; on plain arrays NumPy's ufunc options pass through."""

    def __call__(self, x: ArrayLike, /, *out: Any, **kwargs: Any) -> Array: ...


class BinaryUfunc(Protocol):
    """A differentiable binary ufunc: ``f(x, y)``; on plain arrays NumPy's ufunc options pass through."""

    def __call__(self, x: ArrayLike, y: ArrayLike, /, *out: Any, **kwargs: Any) -> Array: ...
