"""How much freed host memory the C allocator keeps for reuse: ``fg.config.host_memory_keep``.

A training step frees and allocates the same large arrays every step. glibc's ``malloc`` serves
blocks above its mmap threshold with fresh ``mmap`` pages and hands freed memory above its trim
threshold back to the OS, so each step touches new pages again: one minor page fault per 4 KiB,
1,300-3,000 per step for the 32x32 CNN and the Transformer of ``benchmarks/workloads/training.py``,
a fifth to a quarter of their step time. glibc raises both thresholds by itself after freeing a
large mmapped block (up to 32 MiB and 64 MiB), which is why a process that also ran some other
library's big arrays can be faster. funcgrad sets those same ceilings at import, so the first step
already reuses memory; ``FUNCGRAD_HOST_MEMORY_KEEP=0`` (before import) leaves the allocator alone.

Only glibc has these settings; elsewhere (macOS, Windows, musl) nothing is changed.

Example::

    fg.config.host_memory_keep = 128 * 2**20   # keep up to 128 MiB of freed memory
    fg.config.host_memory_keep                 # 134217728
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

__all__ = ["DEFAULT_KEEP", "MMAP_THRESHOLD_MAX", "keep_freed_memory", "kept_bytes", "apply_environment"]

DEFAULT_KEEP = 64 * 2**20
"""Freed bytes kept by default: twice glibc's largest dynamic mmap threshold, as glibc would."""

MMAP_THRESHOLD_MAX = 32 * 2**20
"""glibc's cap on the mmap threshold for 64-bit processes (``HEAP_MAX_SIZE / 2``)."""

_GLIBC_DEFAULT_THRESHOLD = 128 * 1024
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_state = {"kept": 0}


def _mallopt() -> Any:
    """glibc's ``mallopt``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt


def keep_freed_memory(nbytes: int) -> bool:
    """Let the C allocator keep up to ``nbytes`` of freed memory for reuse (0: glibc's static
    defaults of 128 KiB, its dynamic adjustment stays off once set). Returns whether the allocator
    took the setting (False on a C library without ``mallopt``).

    Example::

        keep_freed_memory(64 * 2**20)   # True on glibc
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 <= nbytes < 2**31:
        raise ValueError(f"host_memory_keep must be an integer number of bytes in [0, 2**31), got {nbytes!r}")
    mallopt = _mallopt()
    if mallopt is None:
        return False
    trim = nbytes if nbytes else _GLIBC_DEFAULT_THRESHOLD
    mmap = min(nbytes // 2, MMAP_THRESHOLD_MAX) if nbytes else _GLIBC_DEFAULT_THRESHOLD
    ok = bool(mallopt(_M_MMAP_THRESHOLD, max(mmap, _GLIBC_DEFAULT_THRESHOLD))) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim))
    if ok:
        _state["kept"] = nbytes
    return ok


def kept_bytes() -> int:
    """The setting in force: the bytes last given to :func:`keep_freed_memory` (0 if never set)."""
    return _state["kept"]


def apply_environment() -> None:
    """At import: ``FUNCGRAD_HOST_MEMORY_KEEP`` (bytes; ``0`` leaves the allocator untouched), else
    :data:`DEFAULT_KEEP`."""
    raw = os.environ.get("FUNCGRAD_HOST_MEMORY_KEEP", "").strip()
    try:
        nbytes = int(raw) if raw else DEFAULT_KEEP
    except ValueError:
        raise ValueError(f"FUNCGRAD_HOST_MEMORY_KEEP must be an integer number of bytes, got {raw!r}") from None
    if nbytes:
        keep_freed_memory(nbytes)
