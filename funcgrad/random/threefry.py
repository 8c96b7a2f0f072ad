"""Keys and raw bits: the Threefry-2x32 counter-based generator, as JAX computes it.

A key is a plain ``uint32`` array of shape ``(2,)`` (a batch of keys: ``(..., 2)``).
Every operation is a pure function of the key, so keys are ordinary pytree
leaves: they go through ``vmap`` (a batch of keys), ``fg.jit`` (staged, never
frozen), ``scan`` and ``fori_loop``.

The three key primitives (``split``, ``fold_in``, ``bits``) hash counters with
Threefry-2x32 (Salmon et al., 20 rounds) exactly as JAX's default
``threefry2x32`` implementation does with ``jax_threefry_partitionable`` on
(JAX's default since 0.5): element ``i`` of a draw of shape ``s`` hashes the
64-bit counter ``i`` (split into high and low words) under the key. All the
arithmetic is vectorised ``uint32`` arithmetic in the key's own namespace
(NumPy, CuPy), one pass per round, no Python loop per number.

Example::

    key = fg.random.PRNGKey(0)
    key, sub = fg.random.split(key)
    fg.random.bits(sub, (3,))          # uint64, the same numbers as jax.random.bits
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import Box, defprimitive
from ..numpy._batching import batch_size, front
from . import native
from .key_array import PRNGImpl, PRNGKeyArray, resolve_impl, threefry2x32_impl, typed_data

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "split", "fold_in", "bits", "check_key",
           "is_key", "canonical_shape"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def threefry2x32(k1: Any, k2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """The Threefry-2x32 hash of the counter pairs ``(x1, x2)`` under the key ``(k1, k2)``.

    All four are ``uint32`` arrays that broadcast together; the result is two
    arrays of the broadcast shape. Plain (untraced) arrays only: this is the
    kernel under the key primitives. It runs in place over blocks of
    ``_BLOCK`` elements, so that the 100-odd passes of the rounds stay in cache.

    Example::

        threefry2x32(np.uint32(0), np.uint32(0), np.zeros(2, np.uint32), np.arange(2, dtype=np.uint32))
    """
    xp = namespace_of(k1, k2, x1, x2)
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in (k1, k2, x1, x2)))
    n = math.prod(shape)
    k1, k2 = (xp.asarray(a, dtype=xp.uint32) for a in (k1, k2))
    keys: tuple[Any, Any]
    if xp is np and k1.size == 1 and k2.size == 1:
        keys = (int(k1.reshape(-1)[0]), int(k2.reshape(-1)[0]))  # one key: its words as scalars
    else:
        keys = (xp.broadcast_to(k1, shape).reshape(n), xp.broadcast_to(k2, shape).reshape(n))
    # Flat 1-d arrays: uint32 array arithmetic wraps silently (0-d scalars would warn).
    x1, x2 = (xp.broadcast_to(xp.asarray(a, dtype=xp.uint32), shape).reshape(n) for a in (x1, x2))
    state = xp.empty((2, n), dtype=xp.uint32)  # both halves in one buffer: one add injects the key
    block = _BLOCK if xp is np else max(n, 1)
    for start in range(0, n, block):
        part = slice(start, min(n, start + block))
        block_keys = keys if isinstance(keys[0], int) else (keys[0][part], keys[1][part])  # type: ignore[index]
        _rounds(xp, block_keys, x1[part], x2[part], state[:, part])
    return state[0].reshape(shape), state[1].reshape(shape)


_BLOCK = 1 << 16
_MASK = 0xFFFFFFFF


def _rounds(xp: Any, keys: tuple[Any, Any], x1: Any, x2: Any, state: Any) -> None:
    """The 20 rounds and 5 key injections of the counters ``(x1, x2)``, written into the rows
    of ``state`` (``(2, m)``) in place. ``keys`` are two ints (one key) or two arrays."""
    a, b = state[0], state[1]
    k1, k2 = keys
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    spill = xp.empty_like(b)
    scalar = isinstance(k1, int)
    if scalar:
        xp.add(x1, xp.uint32(k1), out=a)
        xp.add(x2, xp.uint32(k2), out=b)
    else:
        xp.add(x1, ks[0], out=a)
        xp.add(x2, ks[1], out=b)
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            xp.add(a, b, out=a)
            xp.left_shift(b, xp.uint32(r), out=spill)
            xp.right_shift(b, xp.uint32(32 - r), out=b)
            xp.bitwise_or(b, spill, out=b)
            xp.bitwise_xor(b, a, out=b)
        if scalar:  # both injections in one pass over the two rows
            inject = np.array([[ks[(group + 1) % 3]], [(ks[(group + 2) % 3] + group + 1) & _MASK]], np.uint32)
            xp.add(state, inject, out=state)
        else:
            xp.add(a, ks[(group + 1) % 3], out=a)
            xp.add(b, ks[(group + 2) % 3], out=b)
            xp.add(b, xp.uint32(group + 1), out=b)


def _counters(xp: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The 64-bit row-major iota over ``shape`` as (high, low) ``uint32`` words."""
    n = math.prod(shape)
    if n < 2**32:
        lo = xp.arange(n, dtype=xp.uint32)
        hi = xp.zeros(n, dtype=xp.uint32)
    else:
        idx = xp.arange(n, dtype=xp.uint64)
        lo = (idx & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
        hi = (idx >> xp.uint64(32)).astype(xp.uint32)
    return hi.reshape(shape), lo.reshape(shape)


def _hash_counters(keys: Any, shape: tuple[int, ...], combine: str = "pair") -> Any:
    """Threefry of the counters of ``shape`` under each key of ``keys`` (``(..., 2)``), as two
    ``uint32`` arrays (``combine="pair"``), their xor (``"xor"``) or one ``uint64`` (``"wide"``).

    Large host draws take the compiled kernel of :mod:`funcgrad.random.native` when numba is
    installed (the same bits); everything else the vectorised NumPy/CuPy rounds."""
    xp = namespace_of(keys)
    lead = tuple(keys.shape[:-1])
    if xp is np:
        done = native.hash_counters(keys.reshape(-1, 2), math.prod(shape), combine)
        if done is not None:
            if combine == "pair":
                return done[0].reshape(lead + shape), done[1].reshape(lead + shape)
            return done.reshape(lead + shape)
    hi, lo = _counters(xp, shape)
    expand = lead + (1,) * len(shape)
    k1 = keys[..., 0].reshape(expand)
    k2 = keys[..., 1].reshape(expand)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    if combine == "xor":
        return xp.bitwise_xor(b1, b2, out=b1)
    if combine == "wide":
        wide = b1.astype(xp.uint64)
        xp.left_shift(wide, xp.uint64(32), out=wide)
        return xp.bitwise_or(wide, b2, out=wide)
    return b1, b2


def _split_raw(keys: Any, shape: tuple[int, ...] = (2,)) -> Any:
    xp = namespace_of(keys)
    b1, b2 = _hash_counters(keys, shape)
    return xp.stack([b1, b2], axis=-1)


def _fold_in_raw(keys: Any, data: Any) -> Any:
    xp = namespace_of(keys)
    data = xp.asarray(data)
    if data.dtype != xp.uint32:
        data = (data.astype(xp.int64) & 0xFFFFFFFF).astype(xp.uint32)
    b1, b2 = threefry2x32(keys[..., 0], keys[..., 1], xp.zeros_like(data), data)
    return xp.stack([b1, b2], axis=-1)


_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _bits_raw(keys: Any, shape: tuple[int, ...] = (), width: int = 32) -> Any:
    if width == 64:
        return _hash_counters(keys, shape, "wide")
    out = _hash_counters(keys, shape, "xor")
    return out if width == 32 else out.astype(_UINT[width])


def _key_batch_rule(fn: Any) -> Any:
    """vmap rule of a key primitive: every argument's batch axis in front, one call."""

    def rule(args: list[Any], dims: list[Any], **kwargs: Any) -> tuple[Any, int]:
        size = batch_size(args, dims)
        moved = [front(a, d, size) for a, d in zip(args, dims)]
        return fn(*moved, **kwargs), 0

    return rule


_split_p = defprimitive(_split_raw, name="random_split", differentiable=False, batch_from=_key_batch_rule,
                        doc="Keys ``(..., 2)`` -> ``(..., *shape, 2)`` (the key primitive under :func:`split`).")
_fold_in_p = defprimitive(_fold_in_raw, name="random_fold_in", differentiable=False, batch_from=_key_batch_rule,
                          doc="Keys ``(..., 2)`` and data -> new keys (the key primitive under :func:`fold_in`).")
_bits_p = defprimitive(_bits_raw, name="random_bits", differentiable=False, batch_from=_key_batch_rule,
                       doc="Keys ``(..., 2)`` -> unsigned bits ``(..., *shape)`` (under :func:`bits`).")


# ---------------------------------------------------------------- checks


def canonical_shape(shape: Any, name: str) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints, or a clear error naming ``name``."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of non-negative integers, got {shape!r}") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{name}: shape must be a tuple of non-negative integers, got {shape!r} "
                            f"(entry {d!r} is not an integer)")
        if d < 0:
            raise ValueError(f"{name}: shape must be a tuple of non-negative integers, got {shape!r} "
                             f"(negative entry {int(d)})")
        out.append(int(d))
    return tuple(out)


def _dtype_of(x: Any) -> np.dtype:
    if isinstance(x, Box):
        return np.dtype(fnp.result_type(x))
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def is_key(x: Any) -> bool:
    """Is ``x`` a single PRNG key: a typed key of shape ``()`` or raw ``uint32`` data of shape ``(2,)``
    (traced or not)?

    Example::

        is_key(fg.random.PRNGKey(0)), is_key(fg.random.key(0))   # True True; an int seed: False
    """
    if isinstance(x, PRNGKeyArray):
        return x.shape == ()
    if not (isinstance(x, Box) or hasattr(x, "shape")) or isinstance(x, np.generic):
        return False
    return tuple(fnp.shape(x)) == (2,) and _dtype_of(x) == np.uint32


def _check_data(name: str, data: Any) -> Any:
    """``data`` if it is raw key data (``uint32`` of shape ``(..., 2)``), else a clear error."""
    if isinstance(data, (int, float, np.integer, np.floating)) or data is None:
        raise TypeError(
            f"{name}: expected a PRNG key (fg.random.key(seed), or the raw uint32 array of shape (2,) "
            f"of fg.random.PRNGKey(seed)), got {type(data).__name__} {data!r}; make one with "
            f"fg.random.key({data!r})"
        )
    if not isinstance(data, Box) and not hasattr(data, "shape"):
        data = np.asarray(data)
    shape = tuple(fnp.shape(data))
    dtype = _dtype_of(data)
    if dtype != np.uint32 or not shape or shape[-1] != 2:
        raise TypeError(
            f"{name}: expected a PRNG key (fg.random.key(seed), or the raw uint32 array of shape (2,) "
            f"of fg.random.PRNGKey(seed)), got an array of dtype {dtype} and shape {shape}"
        )
    return data


def check_key(name: str, key: Any, batched: bool = False) -> Any:
    """The raw ``uint32`` data of ``key`` (typed, or raw of shape ``(2,)``; a batch of keys when
    ``batched``), else a clear error."""
    typed = isinstance(key, PRNGKeyArray)
    data = _check_data(name, typed_data(key) if typed else key)
    shape = tuple(fnp.shape(data))
    if not batched and len(shape) != 1:
        shown = f"{shape[:-1]} != ()" if typed else f"{shape} != (2,)"
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {shown}. "
                         f"Use fg.vmap for batching.")
    return data


def _like(key: Any, data: Any) -> Any:
    """``data`` as typed keys when ``key`` was typed, raw otherwise (JAX's rule for split/fold_in)."""
    return PRNGKeyArray(data) if isinstance(key, PRNGKeyArray) else data


# ---------------------------------------------------------------- public


def PRNGKey(seed: Any, impl: Any = None) -> Any:
    """The key of an integer seed: ``uint32[2]`` holding the seed's 64 bits (high word first).

    JAX's ``jax.random.PRNGKey`` with ``jax_enable_x64`` (the seed is a 64-bit
    integer, so a negative seed's high word is ``0xFFFFFFFF``; without x64 JAX
    truncates seeds to 32 bits, which gives the same key for seeds in
    ``[0, 2**31)``). A traced integer seed works too (inside ``fg.jit``).

    Example::

        key = fg.random.PRNGKey(42)      # array([ 0, 42], dtype=uint32)
    """
    resolve_impl(impl, "PRNGKey")
    if isinstance(seed, PRNGKeyArray):
        raise TypeError("PRNGKey accepts a scalar seed, but was given a PRNG key")
    if isinstance(seed, Box):
        if _dtype_of(seed).kind not in "iu" or fnp.shape(seed) != ():
            raise TypeError(f"PRNGKey: the seed must be a scalar integer, got dtype {_dtype_of(seed)} "
                            f"and shape {fnp.shape(seed)}")
        s = fnp.astype(seed, np.int64) if _dtype_of(seed) != np.uint64 else seed
        hi = fnp.astype(fnp.bitwise_and(fnp.right_shift(s, 32), 0xFFFFFFFF), np.uint32)
        lo = fnp.astype(fnp.bitwise_and(s, 0xFFFFFFFF), np.uint32)
        return fnp.stack([hi, lo])
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        arr = np.asarray(seed)
        if arr.shape != () or arr.dtype.kind not in "iu":
            raise TypeError(f"PRNGKey: the seed must be a scalar integer, got {seed!r}")
        seed = arr.item()
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise OverflowError(f"PRNGKey: the seed {seed} does not fit in 64 bits")
    seed &= 2**64 - 1
    return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)


def key(seed: Any, impl: Any = None) -> PRNGKeyArray:
    """A typed key array of shape ``()`` from an integer seed (JAX's ``jax.random.key``).

    Its numbers are those of ``PRNGKey(seed)`` (the same data); ``key_data`` gives the data.
    ``impl`` may be None or ``"threefry2x32"`` (the only implementation). A traced seed works
    (inside ``fg.jit``).

    Example::

        k = fg.random.key(0)             # PRNGKeyArray((), dtype=key<fry>)
        fg.random.key_data(k)            # array([0, 0], dtype=uint32)
    """
    resolve_impl(impl, "key")
    if isinstance(seed, PRNGKeyArray) or (hasattr(seed, "shape") and tuple(fnp.shape(seed)) == (2,)
                                          and _dtype_of(seed) == np.uint32):
        raise TypeError("key accepts a scalar seed, but was given a PRNG key; a key needs no re-keying "
                        "(wrap raw uint32 key data with fg.random.wrap_key_data)")
    if (isinstance(seed, Box) or hasattr(seed, "shape")) and tuple(fnp.shape(seed)) != ():
        raise TypeError(f"key accepts a scalar seed, but was given an array of shape {tuple(fnp.shape(seed))} "
                        f"!= (). Use fg.vmap for batching")
    return PRNGKeyArray(PRNGKey(seed))


def key_data(keys: Any) -> Any:
    """The ``uint32`` data of a key array, shape ``keys.shape + (2,)`` (raw keys: themselves, checked).

    Example::

        fg.random.key_data(fg.random.split(fg.random.key(0)))   # shape (2, 2)
    """
    if isinstance(keys, PRNGKeyArray):
        return _check_data("key_data", typed_data(keys))
    return check_key("key_data", keys, batched=True)


def wrap_key_data(key_bits_array: Any, impl: Any = None) -> PRNGKeyArray:
    """Typed keys around their ``uint32`` data (shape ``batch + (2,)``): the inverse of :func:`key_data`.

    Example::

        k = fg.random.wrap_key_data(np.array([0, 1], np.uint32))   # a key of shape ()
    """
    resolve_impl(impl, "wrap_key_data")
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data expects uint32 key data, but was given a typed key array; "
                        "it is already wrapped (fg.random.key_data unwraps)")
    return PRNGKeyArray(_check_data("wrap_key_data", key_bits_array))


def key_impl(keys: Any) -> PRNGImpl:
    """The implementation of a key (array), typed or raw: Threefry-2x32, the only one funcgrad has.

    Example::

        str(fg.random.key_impl(fg.random.key(0)))   # 'threefry2x32'
    """
    check_key("key_impl", keys, batched=True)
    return threefry2x32_impl


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (``num`` an int or a shape) from one key: raw data ``(num, 2)``, or a typed
    key array of shape ``(num,)`` from a typed key.

    Example::

        key, sub = fg.random.split(key)
        keys = fg.random.split(key, 8)         # (8, 2), e.g. one per example for vmap
    """
    data = check_key("split", key)
    shape = canonical_shape(num, "split")
    return _like(key, _split_p(data, shape=shape))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from a key and a 32-bit integer (a step number, a rank ...).

    ``data`` may be traced (the index of ``fori_loop``); it is taken modulo
    ``2**32`` like JAX's conversion to ``uint32``.

    Example::

        step_key = fg.random.fold_in(key, step)
    """
    data_of_key = check_key("fold_in", key)
    if fnp.ndim(data) != 0:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {fnp.shape(data)} != (). "
                        f"Use fg.vmap for batching.")
    if not isinstance(data, Box):
        arr = np.asarray(data)
        if arr.dtype.kind not in "iub":
            raise TypeError(f"fold_in: data must be an integer, got {data!r}")
        data = np.asarray(int(arr) & 0xFFFFFFFF, dtype=np.uint32)
    elif _dtype_of(data).kind not in "iu":
        raise TypeError(f"fold_in: data must be an integer, got dtype {_dtype_of(data)}")
    return _like(key, _fold_in_p(data_of_key, data))


def random_bits(key: Any, width: int, shape: tuple[int, ...]) -> Any:
    """Unsigned bits of ``width`` (8/16/32/64) and ``shape`` from a checked key (no checks)."""
    return _bits_p(key, shape=shape, width=width)


def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform random bits: an unsigned-integer array of ``shape``.

    ``dtype`` is uint8, uint16, uint32 or uint64 (the default, as JAX with x64,
    like funcgrad's float64 and int64 defaults).

    Example::

        fg.random.bits(fg.random.PRNGKey(0), (2, 3), np.uint64)
    """
    key = check_key("bits", key)
    dt = np.dtype(np.uint64 if dtype is None else dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return random_bits(key, dt.itemsize * 8, canonical_shape(shape, "bits"))
