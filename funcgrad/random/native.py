"""The Threefry-2x32 hash and XLA's ``erf_inv`` as compiled loops (numba), for large host draws.

When numba is installed (the native tier of ``fg.jit``: ``pip install
funcgrad[native]``) and ``fg.config.jit_backend`` is not ``"numpy"``, a draw of
at least ``MIN_SIZE`` numbers from host keys hashes its counters in one
compiled loop per key instead of the hundred-odd NumPy passes of
:func:`funcgrad.random.threefry.threefry2x32`: each counter goes through the 20
rounds in registers and only the result is stored, already combined into the
draw's bits. The arithmetic is the same ``uint32`` arithmetic (carried in 64-bit
registers and masked), so the bits are identical. Likewise ``erf_inv`` (under
``normal`` and ``truncated_normal``) evaluates its polynomial branches per
element in one loop, with the same operations in the same order as the NumPy
path (``log1p`` stays NumPy's), so its values are identical too. A test checks
both paths against each other and against JAX's recorded values. Nothing here imports
numba until the first large draw; the kernels are cached on disk by numba.

Example::

    from funcgrad.random import native
    native.hash_counters(np.array([[0, 42]], np.uint32), 10**6, "xor")   # uint32 (1, 10**6), or None
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MIN_SIZE", "enabled", "kernels_for", "hash_counters"]

MIN_SIZE = 1 << 16

_KERNEL_SOURCE = '''
import numba
import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_ROTATIONS = np.array([13, 15, 26, 6, 17, 29, 16, 24], dtype=np.uint64)
_PARITY = np.uint64(0x1BD11BDA)


@numba.njit(inline="always")
def _threefry(k1, k2, k3, x0, x1):
    x0 = (x0 + k1) & _MASK
    x1 = (x1 + k2) & _MASK
    for group in range(5):
        base = (group % 2) * 4
        for r in range(4):
            rot = _ROTATIONS[base + r]
            x0 = (x0 + x1) & _MASK
            x1 = ((x1 << rot) | (x1 >> (np.uint64(32) - rot))) & _MASK
            x1 = x1 ^ x0
        m = (group + 1) % 3
        x0 = (x0 + (k1 if m == 0 else (k2 if m == 1 else k3))) & _MASK
        m = (group + 2) % 3
        x1 = (x1 + (k1 if m == 0 else (k2 if m == 1 else k3)) + np.uint64(group + 1)) & _MASK
    return x0, x1


@numba.njit(cache=True, nogil=True)
def hash_pair(keys, n, out1, out2):
    for j in range(keys.shape[0]):
        k1 = np.uint64(keys[j, 0])
        k2 = np.uint64(keys[j, 1])
        k3 = k1 ^ k2 ^ _PARITY
        for i in range(n):
            c = np.uint64(i)
            a, b = _threefry(k1, k2, k3, c >> np.uint64(32), c & _MASK)
            out1[j, i] = np.uint32(a)
            out2[j, i] = np.uint32(b)


@numba.njit(cache=True, nogil=True)
def hash_xor(keys, n, out):
    for j in range(keys.shape[0]):
        k1 = np.uint64(keys[j, 0])
        k2 = np.uint64(keys[j, 1])
        k3 = k1 ^ k2 ^ _PARITY
        for i in range(n):
            c = np.uint64(i)
            a, b = _threefry(k1, k2, k3, c >> np.uint64(32), c & _MASK)
            out[j, i] = np.uint32(a ^ b)


@numba.njit(cache=True, nogil=True)
def hash_wide(keys, n, out):
    for j in range(keys.shape[0]):
        k1 = np.uint64(keys[j, 0])
        k2 = np.uint64(keys[j, 1])
        k3 = k1 ^ k2 ^ _PARITY
        for i in range(n):
            c = np.uint64(i)
            a, b = _threefry(k1, k2, k3, c >> np.uint64(32), c & _MASK)
            out[j, i] = (a << np.uint64(32)) | b


_BLOCK = 256


@numba.njit(cache=True, nogil=True)
def erf_inv_f64(x, log_one_plus, num, den, small, middle, large, out):
    """out = erf_inv(x); log_one_plus = log(1 - x*x) from NumPy (XLA's log1p takes it above its cut)."""
    n = x.shape[0]
    w = np.empty(_BLOCK)
    v = np.empty(_BLOCK)
    p = np.empty(_BLOCK)
    q = np.empty(_BLOCK)
    for start in range(0, n, _BLOCK):
        m = min(_BLOCK, n - start)
        # XLA's log1p(-x*x): the rational function on the whole block (selected below)
        for i in range(m):
            v[i] = x[start + i] * -x[start + i]
        for i in range(m):
            p[i] = v[i] * num[0] + num[1]
            q[i] = v[i] * den[0] + den[1]
        for k in range(2, num.shape[0]):
            for i in range(m):
                p[i] = p[i] * v[i] + num[k]
                q[i] = q[i] * v[i] + den[k]
        for i in range(m):
            vi = v[i]
            v2 = vi * vi
            rational = vi + (-0.5 * v2 + (vi * v2) * (p[i] / q[i]))
            w[i] = -(rational if abs(vi) < 0.41421356237309504880 else log_one_plus[start + i])
        # the central branch (w < 6.25) on the whole block, the tails element by element
        for i in range(m):
            v[i] = w[i] - 3.125
            p[i] = v[i] * small[0] + small[1]
        for k in range(2, small.shape[0]):
            for i in range(m):
                p[i] = p[i] * v[i] + small[k]
        for i in range(m):
            xi = x[start + i]
            wi = w[i]
            if wi < 6.25:
                out[start + i] = p[i] * xi
                continue
            if abs(xi) == 1.0:
                out[start + i] = xi * np.inf
                continue
            if wi < 16.0:
                t = np.sqrt(wi) - 3.25
                c = middle
            elif wi >= 16.0:
                t = np.sqrt(wi) - 5.0
                c = large
            else:
                out[start + i] = np.nan
                continue
            r = t * c[0] + c[1]
            for k in range(2, c.shape[0]):
                r = r * t + c[k]
            out[start + i] = r * xi


@numba.njit(inline="always")
def _fma32(a, b, c):
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


@numba.njit(cache=True, nogil=True)
def erf_inv_f32(x, log_one_plus, num, den, small, large, out):
    """float32: every multiply-add fused (rounded once, through float64), as XLA's."""
    n = x.shape[0]
    w = np.empty(_BLOCK, dtype=np.float32)
    v = np.empty(_BLOCK, dtype=np.float32)
    p = np.empty(_BLOCK, dtype=np.float32)
    q = np.empty(_BLOCK, dtype=np.float32)
    for start in range(0, n, _BLOCK):
        m = min(_BLOCK, n - start)
        for i in range(m):
            v[i] = x[start + i] * -x[start + i]
        for i in range(m):
            p[i] = _fma32(num[0], v[i], num[1])
            q[i] = _fma32(den[0], v[i], den[1])
        for k in range(2, num.shape[0]):
            for i in range(m):
                p[i] = _fma32(p[i], v[i], num[k])
                q[i] = _fma32(q[i], v[i], den[k])
        for i in range(m):
            vi = v[i]
            v2 = vi * vi
            rational = vi + (np.float32(-0.5) * v2 + (vi * v2) * (p[i] / q[i]))
            w[i] = -(rational if abs(vi) < np.float32(0.41421356237309504880) else log_one_plus[start + i])
        for i in range(m):
            v[i] = w[i] - np.float32(2.5)
            p[i] = _fma32(small[0], v[i], small[1])
        for k in range(2, small.shape[0]):
            for i in range(m):
                p[i] = _fma32(p[i], v[i], small[k])
        for i in range(m):
            xi = x[start + i]
            wi = w[i]
            if wi < np.float32(5.0):
                out[start + i] = p[i] * xi
                continue
            if abs(xi) == np.float32(1.0):
                out[start + i] = xi * np.float32(np.inf)
                continue
            if wi >= np.float32(5.0):
                t = np.sqrt(wi) - np.float32(3.0)
                r = _fma32(large[0], t, large[1])
                for k in range(2, large.shape[0]):
                    r = _fma32(r, t, large[k])
                out[start + i] = r * xi
            else:
                out[start + i] = np.float32(np.nan)
'''

_kernels: Any = None
_failed = False


def enabled() -> bool:
    """Will large host draws use the compiled hash (numba installed, ``jit_backend`` not ``"numpy"``)?"""
    from ..jit import native as jit_native
    from ..jit.tiered import settings

    return not _failed and settings.backend != "numpy" and jit_native.installed()


def _load() -> Any:
    """The compiled kernels' module (written once to the native tier's cache folder, so that
    numba's on-disk cache keeps the machine code between processes), or None."""
    global _kernels, _failed
    if _kernels is None and not _failed:
        import hashlib
        import importlib.util
        import os
        import sys

        from ..jit import native as jit_native

        if jit_native._load_numba() is None:
            _failed = True
            return None
        tag = hashlib.sha256(_KERNEL_SOURCE.encode()).hexdigest()[:16]
        name = f"funcgrad_random_threefry_{tag}"
        folder = jit_native.cache_dir()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name + ".py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(_KERNEL_SOURCE)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception:  # noqa: BLE001 - a broken numba means: the NumPy path
            del sys.modules[name]
            _failed = True
            return None
        _kernels = module
    return _kernels


def kernels_for(size: int) -> Any:
    """The compiled kernels' module when a host computation of ``size`` elements should use it, else None."""
    if size < MIN_SIZE or not enabled():
        return None
    return _load()


def hash_counters(keys: Any, n: int, combine: str) -> Any:
    """The hash of the counters ``0 .. n-1`` under each key of ``keys`` (host ``uint32`` ``(K, 2)``):
    ``combine`` ``"pair"`` -> two ``uint32`` ``(K, n)`` arrays, ``"xor"`` -> their xor,
    ``"wide"`` -> ``uint64`` ``(high << 32) | low``. None when the compiled path does not apply.

    Example::

        hash_counters(np.zeros((1, 2), np.uint32), 1 << 20, "wide")
    """
    kernels = kernels_for(n * keys.shape[0])
    if kernels is None:
        return None
    keys = np.ascontiguousarray(keys, dtype=np.uint32)
    count = keys.shape[0]
    if combine == "pair":
        out1 = np.empty((count, n), dtype=np.uint32)
        out2 = np.empty((count, n), dtype=np.uint32)
        kernels.hash_pair(keys, n, out1, out2)
        return out1, out2
    out = np.empty((count, n), dtype=np.uint64 if combine == "wide" else np.uint32)
    (kernels.hash_wide if combine == "wide" else kernels.hash_xor)(keys, n, out)
    return out
