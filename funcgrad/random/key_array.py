"""Typed key arrays: ``fg.random.key(seed)``, JAX's ``jax.random.key`` for funcgrad.

A :class:`PRNGKeyArray` holds the ``uint32`` data of a batch of Threefry keys
(shape ``batch + (2,)``) and shows only the batch: ``key(0).shape == ()``,
``split(key(0), 3).shape == (3,)``; its dtype is :data:`key_dtype`
(``key<fry>``). It is a pytree whose one leaf is the data, so a key array goes
through ``vmap`` (the batch axes of the keys are the leading axes of the data),
``fg.jit`` inputs and outputs, ``scan`` carries, ``tree_map`` and ``device_put``
as its data does. It indexes and reshapes over the batch axes as an array of
keys. Arithmetic, comparison with raw ``uint32`` keys and conversion to a NumPy
array are refused, as JAX refuses them; ``key_data`` gives the data.

Example::

    k = fg.random.key(0)                 # PRNGKeyArray((), dtype=key<fry>)
    keys = fg.random.split(k, 4)         # shape (4,)
    fg.random.key_data(keys[1])          # the uint32[2] data of the second key
    fg.random.issubdtype(keys.dtype, fg.random.prng_key)   # True
"""

from __future__ import annotations

from typing import Any

import numpy as np

import funcgrad.numpy as fnp

from ..tree_util import register_pytree_node

__all__ = ["PRNGKeyArray", "PRNGImpl", "KeyDType", "prng_key", "key_dtype", "threefry2x32_impl",
           "issubdtype", "is_typed_key", "resolve_impl", "typed_data"]


class prng_key:  # noqa: N801 (JAX's spelling: jax.dtypes.prng_key)
    """The abstract dtype of every key array, for ``issubdtype(k.dtype, prng_key)``."""


class KeyDType:
    """The dtype of a typed key array: ``key<fry>`` for Threefry-2x32 keys.

    Example::

        fg.random.key(0).dtype           # key<fry>
    """

    def __init__(self, impl: "PRNGImpl") -> None:
        self.impl = impl
        self.name = f"key<{impl.tag}>"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyDType) and other.impl == self.impl

    def __hash__(self) -> int:
        return hash(("KeyDType", self.impl.name))


class PRNGImpl:
    """A key implementation: its name, its key data's shape and the tag of its dtype.

    funcgrad implements one, Threefry-2x32 (JAX's default), ``threefry2x32_impl``.

    Example::

        str(fg.random.key_impl(fg.random.key(0)))   # 'threefry2x32'
    """

    def __init__(self, name: str, key_shape: tuple[int, ...], tag: str) -> None:
        self.name, self.key_shape, self.tag = name, key_shape, tag

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGImpl) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


threefry2x32_impl = PRNGImpl("threefry2x32", (2,), "fry")
key_dtype = KeyDType(threefry2x32_impl)


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """``numpy.issubdtype`` that also knows key dtypes (JAX's ``jax.dtypes.issubdtype``).

    Example::

        fg.random.issubdtype(fg.random.key(0).dtype, fg.random.prng_key)   # True
        fg.random.issubdtype(np.float32, np.floating)                      # True
    """
    key1 = isinstance(arg1, KeyDType) or arg1 is prng_key
    key2 = isinstance(arg2, KeyDType) or arg2 is prng_key
    if key1 or key2:
        if not (key1 and key2):
            return False
        return arg2 is prng_key or arg1 == arg2
    return bool(np.issubdtype(arg1, arg2))


def resolve_impl(impl: Any, name: str) -> PRNGImpl:
    """``impl`` (None, ``"threefry2x32"`` or :data:`threefry2x32_impl`) as the implementation, or a clear error."""
    if impl is None or impl == threefry2x32_impl or impl == "threefry2x32":
        return threefry2x32_impl
    raise ValueError(f"{name}: unrecognized PRNG implementation {impl!r}; funcgrad implements only "
                     f"\"threefry2x32\" (JAX's default), so impl must be None or \"threefry2x32\"")


def _refuse(op: str) -> Any:
    def method(self: "PRNGKeyArray", *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{op} does not accept key arrays (dtype {self.dtype}): keys are not numbers; "
                        f"to compute with the key's bits use fg.random.key_data(key), to derive new "
                        f"keys use fg.random.split or fg.random.fold_in")

    method.__name__ = f"__{op}__"
    return method


class PRNGKeyArray:
    """An array of typed PRNG keys (see the module docstring): made by :func:`fg.random.key`,
    :func:`fg.random.wrap_key_data` and by ``split``/``fold_in`` of a typed key.

    Example::

        keys = fg.random.split(fg.random.key(0), (2, 3))
        keys.shape, keys[0].shape, keys.reshape(6).shape     # (2, 3) (3,) (6,)
    """

    __slots__ = ("_data",)
    __array_priority__ = 1000

    def __init__(self, data: Any) -> None:
        # No checks: pytree unflattening builds key arrays around placeholders too.
        self._data = data

    # ---- what it is
    @property
    def dtype(self) -> KeyDType:
        return key_dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(fnp.shape(self._data))[:-1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object: a single key (shape ())")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"PRNGKeyArray({self.shape}, dtype={self.dtype}) overlaying:\n{self._data!r}"

    def __funcgrad_key_data__(self) -> Any:
        """The ``uint32`` data: how layers below ``fg.random`` (scipy's ``random_state``) read a key."""
        return self._data

    # ---- the batch axes, as an array of keys
    def __getitem__(self, index: Any) -> "PRNGKeyArray":
        if not isinstance(index, tuple):
            index = (index,)
        if self.ndim == 0:
            raise IndexError("too many indices for a key array of shape () (a single key)")
        return PRNGKeyArray(self._data[index + (slice(None),)])

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    def reshape(self, *shape: Any) -> "PRNGKeyArray":
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return PRNGKeyArray(fnp.reshape(self._data, tuple(shape) + (2,)))

    def ravel(self) -> "PRNGKeyArray":
        return self.reshape(-1)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> "PRNGKeyArray":
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        return PRNGKeyArray(fnp.squeeze(self._data, axis=tuple(a % self.ndim for a in axes)))

    def transpose(self, *axes: Any) -> "PRNGKeyArray":
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        order = tuple(a % self.ndim for a in axes) if axes else tuple(reversed(range(self.ndim)))
        return PRNGKeyArray(fnp.transpose(self._data, order + (self.ndim,)))

    @property
    def T(self) -> "PRNGKeyArray":  # noqa: N802 (NumPy's spelling)
        return self.transpose()

    # ---- comparison: keys with keys only
    def __eq__(self, other: object) -> Any:
        if not isinstance(other, PRNGKeyArray):
            raise TypeError(f"equal does not accept a key array (dtype {self.dtype}) and "
                            f"{type(other).__name__}: compare typed keys with typed keys, or "
                            f"fg.random.key_data(key) with raw uint32 keys")
        return fnp.all(fnp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other: object) -> Any:
        return fnp.logical_not(self.__eq__(other))

    __hash__ = None  # type: ignore[assignment]

    # ---- refused: conversion and arithmetic
    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(f"a key array (dtype {self.dtype}) cannot be converted to a NumPy array; "
                        f"use fg.random.key_data(key) for its uint32 data")

    def __bool__(self) -> bool:
        raise TypeError("a key array cannot be converted to boolean")

    def __float__(self) -> float:
        raise TypeError("a key array cannot be converted to a float")

    def __int__(self) -> int:
        raise TypeError("a key array cannot be converted to an int")

    def __index__(self) -> int:
        raise TypeError("a key array cannot be used as an index")

    def astype(self, dtype: Any) -> Any:
        raise TypeError(f"a key array (dtype {self.dtype}) cannot be cast to {dtype}; use "
                        f"fg.random.key_data(key) for its uint32 data")

    __add__ = __radd__ = _refuse("add")
    __sub__ = __rsub__ = _refuse("sub")
    __mul__ = __rmul__ = _refuse("mul")
    __truediv__ = __rtruediv__ = _refuse("div")
    __floordiv__ = __rfloordiv__ = _refuse("floordiv")
    __mod__ = __rmod__ = _refuse("mod")
    __pow__ = __rpow__ = _refuse("pow")
    __matmul__ = __rmatmul__ = _refuse("matmul")
    __and__ = __rand__ = _refuse("and")
    __or__ = __ror__ = _refuse("or")
    __xor__ = __rxor__ = _refuse("xor")
    __lshift__ = __rlshift__ = _refuse("shift_left")
    __rshift__ = __rrshift__ = _refuse("shift_right")
    __lt__ = _refuse("lt")
    __le__ = _refuse("le")
    __gt__ = _refuse("gt")
    __ge__ = _refuse("ge")
    __neg__ = _refuse("neg")
    __pos__ = _refuse("pos")
    __abs__ = _refuse("abs")
    __invert__ = _refuse("not")


register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None), lambda aux, children: PRNGKeyArray(children[0]))


def is_typed_key(x: Any) -> bool:
    """Is ``x`` a typed key array (from ``fg.random.key``), of any batch shape?

    Example::

        is_typed_key(fg.random.key(0)), is_typed_key(fg.random.PRNGKey(0))   # True False
    """
    return isinstance(x, PRNGKeyArray)


def typed_data(keys: PRNGKeyArray) -> Any:
    """The ``uint32`` data (``batch + (2,)``) of a typed key array (for funcgrad.random's own use)."""
    return keys._data
