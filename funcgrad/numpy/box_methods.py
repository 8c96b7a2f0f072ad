"""Array behaviour for traced values: operators, attributes and methods.

A traced value (a :class:`funcgrad.core.Box`) acts like the array it wraps:
Python operators and the common ndarray methods call the differentiable
functions of funcgrad.numpy. Plain NumPy functions called on a box dispatch
there too (``__array_function__`` / ``__array_ufunc__``); a NumPy function
that funcgrad does not support raises an error that names it.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn, cast

import numpy as np

import funcgrad.numpy as fnp

from ..core import Box
from ..backend import dtype_of
from ..core.batching import BatchBox
from ..core.staging import check_concrete



def _defers(other: Any) -> bool:
    """NumPy's protocol: an operand that is no array (no ``__array__``) and whose type sets
    ``__array_ufunc__ = None`` (a sparse array, say) handles binary operators with arrays
    itself (its reflected method runs)."""
    t = type(other)
    return getattr(t, "__array_ufunc__", False) is None and not hasattr(t, "__array__")


# Operands of other libraries that a traced value meets in ``@`` / ``*`` (SciPy's sparse
# matrices): a higher layer registers how to compute with them (funcgrad.scipy.sparse does
# for scipy.sparse); unregistered ones from scipy.sparse get an error naming the way out.
_FOREIGN: list[tuple[Any, Any]] = []
_SPARSE_HINT = ("use funcgrad.scipy.sparse: import it (then SciPy sparse matrices work with traced values in "
                "A @ x, x @ A and spmatrix * x), or wrap the matrix, funcgrad.scipy.sparse.csr_array(A) @ x")


def register_foreign_operand(predicate: Any, handler: Any) -> None:
    """``handler(op, left, right)`` computes ``left @ right`` (``op='matmul'``) or
    ``left * right`` (``op='mul'``) when one side is a traced value and the other satisfies
    ``predicate``; it may return NotImplemented.

    Example::

        register_foreign_operand(lambda o: isinstance(o, MyMatrix), my_handler)
    """
    _FOREIGN.append((predicate, handler))


def _foreign(op: str, left: Any, right: Any, other: Any) -> Any:
    """The registered result, or None when ``other`` is an ordinary operand."""
    if isinstance(other, (np.ndarray, Box, int, float, complex)):
        return None
    t = type(other)
    if t.__module__.startswith("funcgrad"):
        return None
    for predicate, handler in _FOREIGN:
        if predicate(other):
            return handler(op, left, right)
    if t.__module__.startswith("scipy.sparse"):
        raise TypeError(f"a scipy.sparse {t.__name__} and a traced value: " + _SPARSE_HINT)
    return None


def _scipy_sparse_caller() -> Any:
    """When NumPy conversion of a traced value was asked by scipy.sparse: its frame."""
    frame = sys._getframe(2)
    return frame if str(frame.f_globals.get("__name__", "")).startswith("scipy.sparse") else None

class ConversionError(TypeError):
    """A traced value was converted to a Python number, which would drop its derivative.

    A TypeError, as JAX's ConcretizationTypeError."""


def _owner_refcount(out: Any) -> int:
    arr = out[0] if isinstance(out, tuple) and len(out) == 1 else None
    if type(arr) is not np.ndarray or arr.base is not None:
        return -1
    return sys.getrefcount(arr)


def _sole_owner(out: Any) -> bool:
    """Is ``out`` (an ``out=`` tuple) a plain array that owns its memory and is held
    only by the variable of an augmented assignment (``a += x``)? Each alias or
    view adds a reference, so the count tells (calibrated once, below)."""
    return _owner_refcount(out) == _SOLE_OWNER_REFCOUNT


def _calibrate() -> int:
    """The count _owner_refcount gives for ``a += x`` with ``a`` held by one variable."""
    seen = []

    class Probe:
        __array_priority__ = 1000.0

        def __array_ufunc__(self, ufunc: Any, method: Any, *inputs: Any, **kwargs: Any) -> Any:
            out = kwargs.pop("out", None)
            seen.append(_owner_refcount(out))
            return 0

    def run() -> None:
        a: Any = np.zeros(1)
        a += Probe()

    run()
    return seen[0]


_SOLE_OWNER_REFCOUNT = _calibrate()

_PLAIN_ARRAY_HINT = (
    "If you are writing it into a plain NumPy array (a[i] = x, or out=a), create that array "
    "with funcgrad.numpy inside the function (fnp.zeros, fnp.empty, fnp.zeros_like, fnp.array "
    "...): such arrays can hold traced values."
)


def _concrete(x: Any, what: str) -> Any:
    """The plain value behind ``x`` for Python control flow; refused under vmap,
    where one Python value cannot stand for a whole batch."""
    box = x
    while isinstance(x, Box):
        if isinstance(x, BatchBox):
            raise TypeError(
                f"{what} of a value batched by vmap: Python control flow cannot depend on "
                f"per-example values. Use fnp.where / fnp.select instead"
            )
        x = x._value
    check_concrete(box, what)  # fg.jit: the value is not known while tracing
    return x


class ArrayMethods:
    """Methods copied onto :class:`Box`; kept as a class for readability."""

    # --- attributes -------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        s: tuple[int, ...] = fnp.shape(self)
        return s

    @property
    def ndim(self) -> Any:
        return fnp.ndim(self)

    @property
    def size(self) -> Any:
        return fnp.size(self)

    @property
    def dtype(self) -> Any:
        return fnp.result_type(self)

    @property
    def T(self) -> Any:
        return fnp.transpose(self)

    @property
    def mT(self) -> Any:
        return fnp.swapaxes(self, -1, -2)

    @property
    def real(self) -> Any:
        return fnp.real(self)

    @property
    def imag(self) -> Any:
        return fnp.imag(self)

    @property
    def at(self) -> Any:
        return fnp.indexing._IndexUpdateHelper(self)

    def __len__(self) -> int:
        s = fnp.shape(self)
        if not s:
            raise TypeError("len() of a 0-d array")
        return s[0]

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    # --- conversions ------------------------------------------------------
    def __bool__(self) -> bool:
        return bool(_concrete(self, "bool()"))

    def __index__(self) -> int:
        i: int = _concrete(self, "use as an index").__index__()
        return i

    def __int__(self) -> int:
        return int(_concrete(self, "int()"))

    def __float__(self) -> NoReturn:
        # fg.jit's staged values raise a ValueError here, not a TypeError: NumPy swallows
        # TypeErrors from float() when a box is written into a plain array (c[0] = x).
        check_concrete(self, "float()")
        raise ConversionError(
            "float() of a traced value would drop its derivative. Keep it an array "
            "(e.g. x.sum() or x[0]), or use fg.stop_gradient(x) first if no derivative is wanted. "
            + _PLAIN_ARRAY_HINT
        )

    def __complex__(self) -> NoReturn:
        check_concrete(self, "complex()")
        raise ConversionError(
            "complex() of a traced value would drop its derivative. Keep it an array, "
            "or use fg.stop_gradient(x) first if no derivative is wanted"
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        caller = _scipy_sparse_caller()
        if caller is not None:
            owner = caller.f_locals.get("self")
            if caller.f_code.co_name == "_matmul_dispatch" and any(p(owner) for p, _ in _FOREIGN):
                # SciPy returns NotImplemented for an opaque 0-d object array: Python then
                # calls this value's __rmatmul__ / __rmul__, which the registered handler serves
                out = np.empty((), dtype=object)
                out[()] = self
                return out
            raise TypeError(f"scipy.sparse ({caller.f_code.co_name}) cannot compute with a traced value: "
                            + _SPARSE_HINT)
        check_concrete(self, "conversion to a NumPy array (numpy.asarray)")
        if dtype is not None:  # numpy.int64(x), numpy.float32(x), numpy.asarray(x, dtype=...)
            name = np.dtype(dtype).name
            raise TypeError(
                f"numpy.{name}(x) (or numpy.asarray(x, dtype={name})) of a traced value (from "
                f"{cast(Any, self)._trace.name}) would drop its derivative. Use fnp.astype(x, fnp.{name}) (an "
                f"integer type carries no derivative), or fg.stop_gradient(x) first if no derivative is wanted. "
                + _PLAIN_ARRAY_HINT
            )
        if dtype_of(self).kind in "iub":  # most often a traced index: Q[t] with Q a NumPy array
            raise TypeError(
                f"an integer or boolean traced value (from {cast(Any, self)._trace.name}) cannot be converted to a "
                f"NumPy array, so it cannot index a plain NumPy array (Q[t]) either. Index a funcgrad "
                f"array instead: fnp.take(Q, t, axis=0), or fnp.array(Q)[t] (an array that can hold traced values)"
            )
        raise TypeError(
            f"a traced value (from {cast(Any, self)._trace.name}) cannot be converted to a NumPy array: "
            f"that would drop its derivative. Use funcgrad.numpy functions on it, or "
            f"fg.stop_gradient(x) if no derivative is wanted. " + _PLAIN_ARRAY_HINT
        )

    def item(self) -> NoReturn:
        check_concrete(self, "item()")
        raise TypeError(
            "item() of a traced value would drop its derivative; index it instead (x[()]), "
            "or use fg.stop_gradient(x).item()"
        )

    def tolist(self) -> NoReturn:
        check_concrete(self, "tolist()")
        raise TypeError("tolist() of a traced value would drop its derivative; iterate over it instead")

    # --- NumPy protocol dispatch -----------------------------------------
    def __array_ufunc__(self, ufunc: Any, method: Any, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__":
            return _unsupported(f"numpy.{ufunc.__name__}.{method}")
        fn = getattr(fnp, ufunc.__name__, None)
        if fn is None:
            return _unsupported(f"numpy.{ufunc.__name__}")
        out = kwargs.pop("out", None)
        rebindable = out is not None and _sole_owner(out)
        if isinstance(out, tuple):
            out = out[0] if len(out) == 1 else out
        result = fn(*inputs, **kwargs)
        if out is None:
            return result
        write = getattr(out, "_write_all", None)
        if write is not None:
            write(result)
            return out
        if rebindable:
            # ``a += traced`` on a plain array that nothing else refers to (no alias,
            # no view): Python stores what __iadd__ returns back into ``a``, so the
            # traced result can take its place without any stale copy being visible.
            return result
        raise TypeError(_PLAIN_ARRAY_HINT)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        fn = _dispatch_target(func)
        if fn is None:
            return _unsupported(f"{func.__module__}.{func.__name__}")
        return fn(*args, **kwargs)

    # --- operators --------------------------------------------------------
    def __neg__(self) -> Any:
        return fnp.negative(self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return fnp.abs(self)

    def __add__(self, other: Any) -> Any:
        if _defers(other):
            return NotImplemented
        return fnp.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return fnp.add(other, self)

    def __sub__(self, other: Any) -> Any:
        if _defers(other):
            return NotImplemented
        return fnp.subtract(self, other)

    def __rsub__(self, other: Any) -> Any:
        return fnp.subtract(other, self)

    def __mul__(self, other: Any) -> Any:
        if _defers(other):
            return NotImplemented
        done = _foreign("mul", self, other, other)
        if done is not None:
            return done
        return fnp.multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        done = _foreign("mul", other, self, other)
        if done is not None:
            return done
        return fnp.multiply(other, self)

    def __truediv__(self, other: Any) -> Any:
        if _defers(other):
            return NotImplemented
        return fnp.divide(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return fnp.divide(other, self)

    def __floordiv__(self, other: Any) -> Any:
        return fnp.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return fnp.floor_divide(other, self)

    def __mod__(self, other: Any) -> Any:
        return fnp.mod(self, other)

    def __rmod__(self, other: Any) -> Any:
        return fnp.mod(other, self)

    def __pow__(self, other: Any) -> Any:
        return fnp.power(self, other)

    def __rpow__(self, other: Any) -> Any:
        return fnp.power(other, self)

    def __matmul__(self, other: Any) -> Any:
        if _defers(other):
            return NotImplemented
        done = _foreign("matmul", self, other, other)
        if done is not None:
            return done
        return fnp.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        done = _foreign("matmul", other, self, other)
        if done is not None:
            return done
        return fnp.matmul(other, self)

    # comparisons carry no derivative: they return plain boolean arrays
    def __lt__(self, other: Any) -> Any:
        return fnp.less(self, other)

    def __le__(self, other: Any) -> Any:
        return fnp.less_equal(self, other)

    def __gt__(self, other: Any) -> Any:
        return fnp.greater(self, other)

    def __ge__(self, other: Any) -> Any:
        return fnp.greater_equal(self, other)

    def __eq__(self, other: Any) -> Any:
        return fnp.equal(self, other)

    def __ne__(self, other: Any) -> Any:
        return fnp.not_equal(self, other)

    __hash__ = object.__hash__

    # logic on boolean arrays (comparisons give plain booleans, but vmap keeps them batched)
    def __and__(self, other: Any) -> Any:
        return fnp.logical_and(self, other) if fnp.result_type(self) == bool else fnp.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return fnp.logical_and(other, self) if fnp.result_type(self) == bool else fnp.bitwise_and(other, self)

    def __or__(self, other: Any) -> Any:
        return fnp.logical_or(self, other) if fnp.result_type(self) == bool else fnp.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return fnp.logical_or(other, self) if fnp.result_type(self) == bool else fnp.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return fnp.logical_xor(self, other) if fnp.result_type(self) == bool else fnp.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return fnp.logical_xor(other, self) if fnp.result_type(self) == bool else fnp.bitwise_xor(other, self)

    def __invert__(self) -> Any:
        return fnp.logical_not(self) if fnp.result_type(self) == bool else fnp.invert(self)

    def __round__(self, ndigits: Any = None) -> Any:
        return fnp.round(self, ndigits or 0)

    # --- indexing ---------------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        return fnp.indexing.getitem(self, idx)

    # --- methods ----------------------------------------------------------
    def sum(self, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        return fnp.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        return fnp.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        return fnp.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: Any = False) -> Any:
        return fnp.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: Any = False) -> Any:
        return fnp.min(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: Any = False) -> Any:
        return fnp.var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std(self, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: Any = False) -> Any:
        return fnp.std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis: Any = None) -> Any:
        return fnp.cumsum(self, axis=axis)

    def cumprod(self, axis: Any = None) -> Any:
        return fnp.cumprod(self, axis=axis)

    def argmax(self, axis: Any = None) -> Any:
        return fnp.argmax(self, axis=axis)

    def argmin(self, axis: Any = None) -> Any:
        return fnp.argmin(self, axis=axis)

    def argsort(self, axis: Any = -1) -> Any:
        return fnp.argsort(self, axis=axis)

    def any(self, axis: Any = None, keepdims: Any = False) -> Any:
        return fnp.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: Any = False) -> Any:
        return fnp.all(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape: Any, order: Any = "C") -> Any:
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return fnp.reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return fnp.transpose(self, axes or None)

    def swapaxes(self, a: Any, b: Any) -> Any:
        return fnp.swapaxes(self, a, b)

    def ravel(self, order: Any = "C") -> Any:
        return fnp.ravel(self, order=order)

    def flatten(self, order: Any = "C") -> Any:
        return fnp.ravel(self, order=order)

    def squeeze(self, axis: Any = None) -> Any:
        return fnp.squeeze(self, axis=axis)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        return fnp.repeat(self, repeats, axis=axis)

    def clip(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - mirrors numpy
        return fnp.clip(self, min, max)

    def dot(self, other: Any) -> Any:
        return fnp.dot(self, other)

    def conj(self) -> Any:
        return fnp.conj(self)

    def conjugate(self) -> Any:
        return fnp.conj(self)

    def diagonal(self, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Any:
        return fnp.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Any:
        return fnp.trace(self, offset, axis1, axis2)

    def astype(self, dtype: Any, copy: Any = True) -> Any:
        return fnp.astype(self, dtype)

    def copy(self) -> Any:
        return fnp.copy(self)


def _dispatch_target(func: Any) -> Any:
    module = func.__module__ or ""
    name = func.__name__
    if module.startswith("numpy.linalg"):
        return getattr(fnp.linalg, name, None)
    return getattr(fnp, name, None)


def _unsupported(what: str) -> None:
    raise TypeError(
        f"{what} is not supported on traced values by funcgrad. Use the function of the same "
        f"name from funcgrad.numpy if there is one, build it from supported functions, or make "
        f"it a primitive with fg.primitive(...) and give it rules with fg.defvjp / fg.defjvp"
    )
