"""Library-wide settings: ``fg.config`` (one object, like ``jax.config``).

Example::

    fg.config.update("debug_nans", True)   # raise at the first primitive producing a NaN
    fg.config.jit_log_compiles = True      # log each fg.jit (re)trace and why
    fg.config.jit_retrace_warn = 8         # warn when one function is traced more often
    fg.config.jit_threads = 1              # compiled programs use the calling thread only
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["config", "Config"]


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


# JAX's spellings are accepted too, so code ported from JAX keeps working.
_ALIASES = {"jax_debug_nans": "debug_nans", "funcgrad_debug_nans": "debug_nans",
            "jax_log_compiles": "jit_log_compiles"}
_FLAGS = ("debug_nans", "jit_log_compiles", "jit_retrace_warn", "jit_threads", "jit_parallel_min_size")


class Config:
    """Settings read at the moment they matter (changing them takes effect at once).

    - ``debug_nans`` (env ``FUNCGRAD_DEBUG_NANS=1``): raise ``FloatingPointError`` at the
      first primitive, forward or derivative, whose result holds a NaN (see
      ``fg.debug_nans``), inside compiled ``fg.jit`` programs too. Process-wide.
    - ``jit_log_compiles`` (env ``FUNCGRAD_LOG_COMPILES=1``): log every trace of a
      ``fg.jit`` function, with the argument that changed, to the ``funcgrad.jit`` logger.
    - ``jit_retrace_warn`` (env ``FUNCGRAD_JIT_RETRACE_WARN``): warn once when one jitted
      function has been traced more than this many times.
    - ``jit_threads`` (env ``FUNCGRAD_JIT_THREADS``; default: the usable cores, at most 8):
      threads a compiled program may use for the blocks of its elementwise regions on large
      host NumPy arrays (ufuncs release the GIL). 1 runs everything on the calling thread.
      Results are the same bits with any setting.
    - ``jit_parallel_min_size`` (default 131072): the fewest elements an elementwise region
      needs before it is split across threads (regions start at 65536 elements; regions of
      only arithmetic, comparisons and ``where`` are never split).
    """

    def __init__(self) -> None:
        self.jit_log_compiles: bool = _env_flag("FUNCGRAD_LOG_COMPILES")
        self.jit_retrace_warn: int = int(os.environ.get("FUNCGRAD_JIT_RETRACE_WARN", "10"))

    @property
    def jit_threads(self) -> int:
        from .jit.blocking import settings

        return settings.threads

    @jit_threads.setter
    def jit_threads(self, value: int) -> None:
        from .jit.blocking import check_threads, settings

        settings.threads = check_threads(value)

    @property
    def jit_parallel_min_size(self) -> int:
        from .jit.blocking import settings

        return settings.min_size

    @jit_parallel_min_size.setter
    def jit_parallel_min_size(self, value: int) -> None:
        from .jit.blocking import settings

        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"jit_parallel_min_size must be an integer >= 0 (elements), got {value!r}")
        settings.min_size = value

    @property
    def debug_nans(self) -> bool:
        from .debugging import nan_checks_enabled

        return nan_checks_enabled()

    @debug_nans.setter
    def debug_nans(self, value: bool) -> None:
        from .debugging import enable_nan_checks

        enable_nan_checks(bool(value))

    def update(self, name: str, value: Any) -> None:
        """Set flag ``name`` (JAX's spellings such as ``"jax_debug_nans"`` work too)."""
        flag = _ALIASES.get(name, name)
        if flag not in _FLAGS:
            raise KeyError(f"fg.config.update: unknown flag {name!r}; known flags: {', '.join(map(repr, _FLAGS))}")
        setattr(self, flag, value)

    def __repr__(self) -> str:
        return (f"Config(debug_nans={self.debug_nans}, jit_log_compiles={self.jit_log_compiles}, "
                f"jit_retrace_warn={self.jit_retrace_warn}, jit_threads={self.jit_threads}, "
                f"jit_parallel_min_size={self.jit_parallel_min_size})")


config = Config()
