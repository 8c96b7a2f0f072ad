"""What a kernel's forward computed, kept for the backward of the very same inputs.

A layer's backward primitive takes the forward's inputs (so that it differentiates again, and
runs alone under vmap or a second derivative), which would make it compute again what the
forward already had: the convolution's im2col, the LSTM's gates of every step. A
:class:`ForwardMemo` hands those over: the forward ``put``s them under its inputs' identities
(weak references: an entry never keeps an input alive and is dropped with it) and a geometry;
the backward ``take``s them out (a later backward of the same inputs builds them afresh). It is
per thread and bounded (``size`` entries, none over ``max_bytes``); a miss costs only the
recomputation.

Example::

    memo = ForwardMemo()
    memo.put((x,), geometry, columns)
    memo.take((x,), geometry)     # columns; a second take gives None
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["ForwardMemo"]


def _nbytes(value: Any) -> int:
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0))


class ForwardMemo:
    """A bounded per-thread store of forward results keyed by the identities of the inputs (see the module
    docstring). ``inputs`` is a tuple of arrays (``None`` entries allowed, matched as ``None``)."""

    SIZE = 4
    MAX_BYTES = 64 * 2 ** 20  # per entry

    def __init__(self) -> None:
        self.local = threading.local()

    def _entries(self) -> "OrderedDict[Any, Any]":
        entries = getattr(self.local, "entries", None)
        if entries is None:
            entries = self.local.entries = OrderedDict()
        return entries

    @staticmethod
    def _key(inputs: tuple[Any, ...], geometry: tuple[Any, ...]) -> tuple[Any, ...]:
        # (dtype objects hash as they are: their names cost more than the rest of the key)
        return tuple((id(a), getattr(a, "shape", None), getattr(a, "dtype", None)) for a in inputs) + geometry

    def put(self, inputs: tuple[Any, ...], geometry: tuple[Any, ...], value: Any) -> None:
        if _nbytes(value) > self.MAX_BYTES:
            return
        entries = self._entries()
        key = self._key(inputs, geometry)

        def forget(_: Any) -> None:
            entries.pop(key, None)

        try:
            refs = tuple(None if a is None else weakref.ref(a, forget) for a in inputs)
        except TypeError:  # an array type without weak references: nothing kept
            return
        entries[key] = (refs, value)
        while len(entries) > self.SIZE:
            entries.popitem(last=False)

    def take(self, inputs: tuple[Any, ...], geometry: tuple[Any, ...]) -> Any:
        """What the forward of these very inputs kept (removed from the memo), or None."""
        found = self._entries().pop(self._key(inputs, geometry), None)
        if found is None:
            return None
        refs, value = found
        if any((r is None) != (a is None) or (r is not None and r() is not a) for r, a in zip(refs, inputs)):
            return None
        return value
