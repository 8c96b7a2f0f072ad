"""NaN debugging: raise at the first primitive whose result holds a NaN.

``fg.debug_nans()`` (a context manager), the config flag
``fg.config.update("debug_nans", True)`` and the environment variable
``FUNCGRAD_DEBUG_NANS=1`` (read at import) switch on a check of every
primitive's result: plain calls, traced forward values, and the primitives run
by derivative rules (a VJP in the backward pass, a JVP in forward mode). The
first NaN raises :class:`FloatingPointError` naming the primitive, whether it
ran in the forward computation or in a derivative rule (and whose), and the
user's line that led to it. Like ``jax_debug_nans`` it costs a device sync per
primitive while on; when off, the engine's fast path pays one global lookup.

Example::

    with fg.debug_nans():
        fg.grad(lambda x: fnp.sum(fnp.sqrt(x) * 0.0))(fnp.zeros(2))   # raises: VJP of sqrt, 0 * inf
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import FrameType
from typing import Any, Iterator

from .backend import namespace_of
from .core import trace as _trace
from .core.hooks import set_result_hook
from .core.trace import Box, Primitive

__all__ = ["debug_nans", "nan_checks_enabled", "enable_nan_checks"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _has_nan(x: Any) -> bool:
    while isinstance(x, Box):
        x = x._value
    dt = getattr(x, "dtype", None)
    if dt is None:
        return isinstance(x, float) and x != x or isinstance(x, complex) and x != x
    if getattr(dt, "kind", "") not in "fc":
        return False
    xp = namespace_of(x)
    return bool(xp.any(xp.isnan(x)))


def _where(prim: Primitive, kind: str) -> tuple[str, str]:
    """(where the NaN arose, the user's line): walk out of funcgrad to the first user frame."""
    if kind == "vjp":
        phase = f"VJP rule of '{prim.name}' (reverse-mode derivative)"
    elif kind == "jvp":
        phase = f"JVP rule of '{prim.name}' (forward-mode derivative)"
    else:
        phase = f"forward computation of '{prim.name}'"
    user = "<unknown>"
    f: FrameType | None = sys._getframe(2)
    inside_rule = kind != "forward"
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        name = f.f_code.co_name
        if not path.startswith(_PKG_DIR):
            user = f"{f.f_code.co_filename}:{f.f_lineno} in {name}"
            break
        if not inside_rule:  # a primitive called by a derivative rule
            outer = f.f_locals.get("prim")
            if name == "_walk" and path.endswith(os.path.join("core", "reverse.py")):  # backward_pass's loop
                phase += f", called by the VJP rule of '{getattr(outer, 'name', outer)}' (reverse-mode derivative)"
                inside_rule = True
            elif name in ("process", "output_tangent") and path.endswith(os.path.join("core", "forward.py")) and "ans" in f.f_locals:
                phase += f", called by the JVP rule of '{getattr(outer, 'name', outer)}' (forward-mode derivative)"
                inside_rule = True
        f = f.f_back
    return phase, user


def _check(prim: Primitive, result: Any, kind: str) -> Any:
    items = result if isinstance(result, (tuple, list)) else (result,)
    if any(_has_nan(r) for r in items):
        phase, user = _where(prim, kind)
        raise FloatingPointError(
            f"debug_nans: primitive '{prim.name}' produced a NaN in the {phase}; the user code that led "
            f"to it: {user}. Turn the check off with fg.config.update('debug_nans', False) once found."
        )
    return result


def nan_checks_enabled() -> bool:
    """Whether ``fg.debug_nans`` checks are on (``fg.config.debug_nans`` reads this)."""
    return _trace.result_hook is _check


def enable_nan_checks(on: bool) -> None:
    """Turn the NaN checks on or off (``fg.config.debug_nans = on`` calls this)."""
    if on:
        set_result_hook(_check)
    elif _trace.result_hook is _check:
        set_result_hook(None)


@contextlib.contextmanager
def debug_nans(enabled: bool = True) -> Iterator[None]:
    """Within the block, raise ``FloatingPointError`` at the first primitive (forward
    or derivative) whose result holds a NaN, naming it and the user's line.

    The flag is process-wide (all threads). Example::

        with fg.debug_nans():
            fg.grad(f)(x)
    """
    before = nan_checks_enabled()
    enable_nan_checks(enabled)
    try:
        yield
    finally:
        enable_nan_checks(before)


if os.environ.get("FUNCGRAD_DEBUG_NANS", "").strip().lower() not in ("", "0", "false", "no", "off"):
    enable_nan_checks(True)
