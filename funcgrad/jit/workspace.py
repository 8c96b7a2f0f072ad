"""Buffers a compiled program keeps from one call to the next, for its large temporaries.

A training step's program makes the same large temporaries at every call (a layer's
activations, their cotangents). Made afresh, the larger ones come from memory the C
allocator has just given back to the system, and every page of them faults again (the
Transformer step's two 2 MiB feed-forward products cost 0.9-1.3 ms each that way, half of
it in faults). The replay instead writes such a temporary into a buffer of its
:class:`Workspace`, made once per thread and handed back when the call returns, where the
buffer can never be seen by the caller: the temporary is no output, and no output can be a
view of it or be written into it (:func:`reachable_from_outputs`).

A call that finds its thread's buffers taken (a nested call of the same program, or one
that raised before handing them back) makes new ones, so no two running calls share one.

Where the buffers of a call add up to a huge page (2 MiB) or more and the system allows it
(Linux's transparent huge pages in ``madvise`` or ``always`` mode), they are carved out of one
mapping aligned to huge pages and advised to use them: a step's large temporaries are then
covered by a few TLB entries instead of one per 4 KiB page (the Transformer step's two 2 MiB
feed-forward buffers: 4% off the passes and products over them). Elsewhere they are plain
``numpy.empty`` arrays.

Example::

    ws = Workspace([((256, 2048), np.dtype("float32"))])
    bufs = ws.take()        # bufs[0]: this thread's buffer, made at the first call
    ws.give(bufs)           # the next take() on this thread returns the same list
"""

from __future__ import annotations

import mmap
import threading
from typing import Any, Callable

import numpy as np

from .ir import Program, Var

__all__ = ["Workspace", "reachable_from_outputs", "make_buffers", "WORKSPACE_BYTES", "HUGE_PAGE"]

WORKSPACE_BYTES = 1 << 18  # temporaries from this size are kept between calls (smaller ones rarely fault)
HUGE_PAGE = 1 << 21  # the size of a transparent huge page on x86-64 and most aarch64 Linux systems
_ALIGN = 64  # each buffer in a shared mapping starts on a cache line


def _huge_pages_allowed() -> bool:
    """Does this system give transparent huge pages to memory advised to use them?"""
    if not hasattr(mmap, "MADV_HUGEPAGE"):
        return False
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


HUGE_PAGES = _huge_pages_allowed()  # (read once; tests may turn it off)


def _huge_page_region(nbytes: int) -> Any:
    """A writable uint8 array of ``nbytes`` starting on a huge-page boundary of an anonymous mapping advised to
    use huge pages, or None where the mapping or the advice fails."""
    size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE  # room to align the start
    try:
        mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mapping.madvise(mmap.MADV_HUGEPAGE)
    except (OSError, ValueError, AttributeError):
        return None
    whole = np.frombuffer(mapping, dtype=np.uint8)  # keeps the mapping alive while any buffer is
    start = -whole.ctypes.data % HUGE_PAGE
    return whole[start:start + nbytes]


def make_buffers(slots: list[tuple[tuple[int, ...], Any]]) -> list[Any]:
    """New arrays of these ``(shape, dtype)``, in one huge-page mapping where they fill one (see the module
    docstring), else each by ``numpy.empty``."""
    sizes = [int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in slots]
    offsets, total = [], 0
    for n in sizes:
        offsets.append(total)
        total += -(-n // _ALIGN) * _ALIGN
    region = _huge_page_region(total) if HUGE_PAGES and total >= HUGE_PAGE else None
    if region is None:
        return [np.empty(shape, dtype=dtype) for shape, dtype in slots]
    return [region[o:o + n].view(dtype).reshape(shape) for o, n, (shape, dtype) in zip(offsets, sizes, slots)]


class Workspace:
    """One buffer per slot ``(shape, dtype)`` (host NumPy arrays), per thread, kept between calls."""

    def __init__(self, slots: list[tuple[tuple[int, ...], Any]]) -> None:
        self.slots = list(slots)
        self.local = threading.local()

    def take(self) -> list[Any]:
        """This thread's buffers (made at its first call, or when another call holds them)."""
        free = getattr(self.local, "free", None)
        if free is not None:
            self.local.free = None
            return free  # type: ignore[no-any-return]
        return make_buffers(self.slots)

    def give(self, buffers: list[Any]) -> None:
        """Hand the buffers back at the end of a call (the next call on this thread takes them)."""
        self.local.free = buffers

    @property
    def nbytes(self) -> int:
        """The bytes one thread's buffers take."""
        return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in self.slots)


def reachable_from_outputs(prog: Program, separates: Callable[[Any], bool]) -> set[int]:
    """The ids of the vars whose memory an output (or an input) of ``prog`` may share: walking back from
    the outputs and inputs through every equation but those that ``separates`` (whose results are new
    arrays that share no memory with their arguments and that no argument is ever written into) — a
    view, an in-place write or any call not known to separate passes sharing from its results to its
    arguments. Temporaries outside this set can live in a :class:`Workspace`."""
    reach = {id(o) for o in prog.outs if isinstance(o, Var)} | {id(v) for v in prog.invars}
    for e in reversed(prog.eqns):
        if separates(e) or not any(id(o) in reach for o in e.outs):
            continue
        reach.update(id(a) for a in e.ins if isinstance(a, Var))
    return reach
