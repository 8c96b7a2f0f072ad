"""Shared test factories for the primitive families.

``no_fallback``: fail when a primitive takes vmap's loop fallback (it has no
batching rule) inside the block; warnings there are errors. It watches the engine
through the core's public hook (``funcgrad.core.hooks.watch_batching_fallback``),
not private state.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Iterable, Iterator

from funcgrad.core.hooks import watch_batching_fallback

__all__ = ["no_fallback"]


@contextlib.contextmanager
def no_fallback(allow: Iterable[str] = ()) -> Iterator[list[str]]:
    """Inside: warnings are errors; on exit, no primitive (other than those in ``allow``)
    may have taken vmap's loop fallback. Yields the list of those that did."""
    allowed = set(allow)
    with watch_batching_fallback() as seen, warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in allowed:
            warnings.filterwarnings("ignore", message=f"vmap: primitive '{name}' has no batching rule")
        yield seen
    bad = sorted(set(seen) - allowed)
    assert not bad, f"vmap fell back to a Python loop for {bad} (no batching rule)"
