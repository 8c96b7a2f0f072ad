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

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits", "check_key", "is_key", "canonical_shape"]

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
    # Flat 1-d arrays: uint32 array arithmetic wraps silently (0-d scalars would warn).
    k1, k2, x1, x2 = (xp.broadcast_to(xp.asarray(a, dtype=xp.uint32), shape).reshape(n) for a in (k1, k2, x1, x2))
    out1 = xp.empty(n, dtype=xp.uint32)
    out2 = xp.empty(n, dtype=xp.uint32)
    block = _BLOCK if xp is np else max(n, 1)
    for start in range(0, n, block):
        part = slice(start, min(n, start + block))
        _rounds(xp, k1[part], k2[part], x1[part], x2[part], out1[part], out2[part])
    return out1.reshape(shape), out2.reshape(shape)


_BLOCK = 1 << 16


def _rounds(xp: Any, k1: Any, k2: Any, x1: Any, x2: Any, a: Any, b: Any) -> None:
    """The 20 rounds and 5 key injections, written into ``a`` and ``b`` in place."""
    ks = (k1, k2, k1 ^ k2 ^ xp.uint32(_PARITY))
    xp.add(x1, ks[0], out=a)
    xp.add(x2, ks[1], out=b)
    spill = xp.empty_like(b)
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            xp.add(a, b, out=a)
            xp.left_shift(b, xp.uint32(r), out=spill)
            xp.right_shift(b, xp.uint32(32 - r), out=b)
            xp.bitwise_or(b, spill, out=b)
            xp.bitwise_xor(b, a, out=b)
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
    """Is ``x`` a single PRNG key (a ``uint32`` array of shape ``(2,)``, traced or not)?

    Example::

        is_key(fg.random.PRNGKey(0))   # True; an int seed or a numpy Generator: False
    """
    if not (isinstance(x, Box) or hasattr(x, "shape")) or isinstance(x, np.generic):
        return False
    return tuple(fnp.shape(x)) == (2,) and _dtype_of(x) == np.uint32


def check_key(name: str, key: Any, batched: bool = False) -> Any:
    """``key`` if it is a key (``uint32`` of shape ``(2,)``; ``(..., 2)`` when ``batched``), else a clear error."""
    if isinstance(key, (int, float, np.integer, np.floating)) or key is None:
        raise TypeError(
            f"{name}: expected a PRNG key (a uint32 array of shape (2,), from fg.random.PRNGKey(seed) "
            f"or split), got {type(key).__name__} {key!r}; make one with fg.random.PRNGKey({key!r})"
        )
    if not isinstance(key, Box) and not hasattr(key, "shape"):
        key = np.asarray(key)
    shape = tuple(fnp.shape(key))
    dtype = _dtype_of(key)
    if dtype != np.uint32 or not shape or shape[-1] != 2:
        raise TypeError(
            f"{name}: expected a PRNG key (a uint32 array of shape (2,), from fg.random.PRNGKey(seed) "
            f"or split), got an array of dtype {dtype} and shape {shape}"
        )
    if not batched and len(shape) != 1:
        raise ValueError(
            f"{name} accepts a single key, but was given a key array of shape {shape} != (2,). "
            f"Use fg.vmap for batching."
        )
    return key


# ---------------------------------------------------------------- public


def PRNGKey(seed: Any) -> Any:
    """The key of an integer seed: ``uint32[2]`` holding the seed's 64 bits (high word first).

    JAX's ``jax.random.PRNGKey`` with ``jax_enable_x64`` (the seed is a 64-bit
    integer, so a negative seed's high word is ``0xFFFFFFFF``; without x64 JAX
    truncates seeds to 32 bits, which gives the same key for seeds in
    ``[0, 2**31)``). A traced integer seed works too (inside ``fg.jit``).

    Example::

        key = fg.random.PRNGKey(42)      # array([ 0, 42], dtype=uint32)
    """
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


def key(seed: Any) -> Any:
    """A key from a seed. funcgrad has no typed key arrays: this is :func:`PRNGKey`.

    Example::

        k = fg.random.key(0)
        fg.random.key_data(k)            # the same uint32[2]
    """
    return PRNGKey(seed)


def key_data(keys: Any) -> Any:
    """The ``uint32`` data of a key (array) -- the keys themselves, checked.

    Example::

        fg.random.key_data(fg.random.split(fg.random.key(0)))   # shape (2, 2)
    """
    return check_key("key_data", keys, batched=True)


def wrap_key_data(key_bits_array: Any) -> Any:
    """Keys from their ``uint32`` data (the data itself, checked). Example: ``wrap_key_data(np.array([0, 1], np.uint32))``."""
    return check_key("wrap_key_data", key_bits_array, batched=True)


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (``num`` an int or a shape) from one key: ``(num, 2)``.

    Example::

        key, sub = fg.random.split(key)
        keys = fg.random.split(key, 8)         # (8, 2), e.g. one per example for vmap
    """
    key = check_key("split", key)
    shape = canonical_shape(num, "split")
    return _split_p(key, shape=shape)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from a key and a 32-bit integer (a step number, a rank ...).

    ``data`` may be traced (the index of ``fori_loop``); it is taken modulo
    ``2**32`` like JAX's conversion to ``uint32``.

    Example::

        step_key = fg.random.fold_in(key, step)
    """
    key = check_key("fold_in", key)
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
    return _fold_in_p(key, data)


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
