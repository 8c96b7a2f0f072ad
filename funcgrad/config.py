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
_FLAGS = ("debug_nans", "jit_log_compiles", "jit_retrace_warn", "jit_threads", "jit_parallel_min_size",
          "jit_backend", "jit_native_after", "jit_native_wait", "jit_compiler", "host_memory_keep")


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
    - ``jit_backend`` (env ``FUNCGRAD_JIT_BACKEND``; default ``"auto"``): how ``fg.jit``
      runs programs: ``"numpy"`` (the NumPy replay), ``"native"`` (numba-compiled code,
      compiled on a background thread and used once ready; the replay meanwhile) or
      ``"auto"`` (native for programs called ``jit_native_after`` times). Without numba
      (``pip install funcgrad[native]``) all three are the replay. On CuPy arrays,
      ``"native"`` and ``"auto"`` run elementwise regions as CUDA kernels instead (no numba).
    - ``jit_native_after`` (default 10): calls of one program before ``"auto"`` compiles it.
    - ``jit_native_wait`` (env ``FUNCGRAD_JIT_NATIVE_WAIT=1``; default False): with
      ``"native"``, compile on the calling thread at the first call instead (tests, benchmarks).
    - ``jit_compiler`` (env ``FUNCGRAD_JIT_COMPILER``; default ``"process"``): where the
      background compiles run: ``"process"`` (numba in a worker process, killed at exit, so an
      exit never waits for a compile) or ``"thread"`` (numba on a thread of this process).
      Read at each background compile.
    - ``host_memory_keep`` (env ``FUNCGRAD_HOST_MEMORY_KEEP``, read at import; default 64 MiB):
      bytes of freed memory the C allocator (glibc) keeps for reuse instead of returning them to
      the OS, so a training step's large arrays do not page-fault afresh every step (see
      ``funcgrad.host_memory``). ``0`` in the environment leaves the allocator untouched; setting
      0 here restores glibc's static 128 KiB thresholds. Process-wide; no effect off glibc.
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
    def jit_backend(self) -> str:
        from .jit.tiered import settings

        return settings.backend

    @jit_backend.setter
    def jit_backend(self, value: str) -> None:
        from .jit.tiered import check_backend, settings

        settings.backend = check_backend(value, "jit_backend")

    @property
    def jit_native_after(self) -> int:
        from .jit.tiered import settings

        return settings.native_after

    @jit_native_after.setter
    def jit_native_after(self, value: int) -> None:
        from .jit.tiered import settings

        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"jit_native_after must be an integer >= 1 (calls), got {value!r}")
        settings.native_after = value

    @property
    def jit_native_wait(self) -> bool:
        from .jit.tiered import settings

        return settings.native_wait

    @jit_native_wait.setter
    def jit_native_wait(self, value: bool) -> None:
        from .jit.tiered import settings

        if not isinstance(value, bool):
            raise ValueError(f"jit_native_wait must be True or False, got {value!r}")
        settings.native_wait = value

    @property
    def jit_compiler(self) -> str:
        from .jit.tiered import settings

        return settings.compiler

    @jit_compiler.setter
    def jit_compiler(self, value: str) -> None:
        from .jit.tiered import check_compiler, settings

        settings.compiler = check_compiler(value, "jit_compiler")

    @property
    def host_memory_keep(self) -> int:
        from .host_memory import kept_bytes

        return kept_bytes()

    @host_memory_keep.setter
    def host_memory_keep(self, value: int) -> None:
        from .host_memory import keep_freed_memory

        keep_freed_memory(value)

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

from .host_memory import apply_environment  # noqa: E402  (config's import-time setting)

apply_environment()
