"""NumPy's floating-point warnings silenced around a Tensor operation: Tensor ops return inf and
nan quietly, as PyTorch's do. ``quiet_run(fn, *args)`` runs a call in a context whose error
state is "ignore" (~10 ns); ``fp_quiet()``/``fp_restore(token)`` set and reset the state
around anything else (~140 ns).
"""

from __future__ import annotations

import contextvars
from functools import partial
from typing import Any, Callable

import numpy as np

__all__ = ["fp_quiet", "fp_restore", "quiet_run", "context_busy"]


try:  # NumPy >= 2: set the floating-point error state directly (~0.3 us; np.errstate costs ~2 us)
    from numpy._core._ufunc_config import _extobj_contextvar  # type: ignore[attr-defined]
    from numpy._core.umath import _make_extobj

    # fp_quiet() silences NumPy's floating-point warnings (0/0, log(0), overflow) until
    # fp_restore(token): tensor ops return inf/nan as PyTorch does, without a RuntimeWarning.
    # (C callables: no Python frame on the hot path)
    fp_quiet: Callable[[], Any] = partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    fp_restore: Callable[[Any], None] = _extobj_contextvar.reset
    # quiet_run(fn, *args): fn(*args) as under fp_quiet, in a context of its own whose error state
    # is "ignore" (entering a context costs ~10 ns; setting and resetting the variable ~140 ns).
    # Only for a primitive's declared fast path (``fast_fn`` on ``fast_types``: NumPy's own
    # functions on arrays, no one's Python code), so nothing in it misses the caller's other
    # context variables. One thread at a time: another finds it entered (RuntimeError, see
    # ``context_busy``) and falls back.
    _QUIET_CONTEXT = contextvars.Context()
    _QUIET_CONTEXT.run(_extobj_contextvar.set, _make_extobj(all="ignore"))
    quiet_run: Callable[..., Any] = _QUIET_CONTEXT.run
except ImportError:  # pragma: no cover - older NumPy
    def fp_quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def fp_restore(token: Any) -> None:
        token.__exit__(None, None, None)

    def quiet_run(fn: Callable[..., Any], *args: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(*args)


def context_busy(err: RuntimeError) -> bool:
    """Whether ``err`` is ``quiet_run``'s context being in use already (by another thread, or
    by a call further up this one's stack): the caller runs the call under fp_quiet instead."""
    return str(err).startswith("cannot enter context")
