"""Process-wide settings that PyTorch scripts query and set: thread counts, deterministic algorithms,
float32 matmul precision, denormals, ``warn_always``.

funcgrad computes with NumPy (or CuPy) kernels, so these settings are recorded and reported back as set,
which is what scripts read them for; they change no result:

* ``get_num_threads()`` is the number of CPUs this process may use until ``set_num_threads(n)`` records
  another; the BLAS library's own thread pool is left as configured (``OMP_NUM_THREADS`` and friends).
* Every funcgrad operation is deterministic already: ``use_deterministic_algorithms(True)`` never raises.
* Matmuls run in the dtype of their operands: ``set_float32_matmul_precision`` accepts PyTorch's three
  values and changes nothing (float32 matmuls are full float32, PyTorch's ``"highest"``).
* ``set_flush_denormal`` returns False (not supported), as PyTorch does on CPUs without the feature.

Example::

    ft.set_num_threads(4); ft.get_num_threads()        # 4
    ft.use_deterministic_algorithms(True)
    ft.are_deterministic_algorithms_enabled()          # True
"""

from __future__ import annotations

import os

__all__ = [
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
    "init_num_threads", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "get_deterministic_debug_mode",
    "set_deterministic_debug_mode", "get_float32_matmul_precision", "set_float32_matmul_precision",
    "set_flush_denormal", "is_warn_always_enabled", "set_warn_always",
]


def _cpus() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


_SETTINGS: dict[str, object] = {
    "num_threads": None, "num_interop_threads": None, "deterministic": False, "warn_only": False,
    "matmul_precision": "highest", "warn_always": False,
}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_PRECISIONS = ("highest", "high", "medium")


def _positive(name: str, n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError(f"{name}: Expected number of threads to be positive, but got {n}")
    return n


def get_num_threads() -> int:
    """The intra-op thread count: the CPUs this process may use, or what ``set_num_threads`` recorded."""
    n = _SETTINGS["num_threads"]
    return _cpus() if n is None else int(n)  # type: ignore[call-overload]


def set_num_threads(n: int) -> None:
    """Record ``n`` threads (reported by ``get_num_threads``; NumPy's BLAS keeps its own setting)."""
    _SETTINGS["num_threads"] = _positive("set_num_threads", n)


def get_num_interop_threads() -> int:
    """The inter-op thread count (recorded; as ``get_num_threads`` until set)."""
    n = _SETTINGS["num_interop_threads"]
    return _cpus() if n is None else int(n)  # type: ignore[call-overload]


def set_num_interop_threads(n: int) -> None:
    """Record ``n`` inter-op threads."""
    _SETTINGS["num_interop_threads"] = _positive("set_num_interop_threads", n)


def init_num_threads() -> None:
    """Nothing to initialise (PyTorch's per-thread OpenMP set-up)."""


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the mode; funcgrad's operations are deterministic whatever it is."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """What ``use_deterministic_algorithms`` last recorded (False at start)."""
    return bool(_SETTINGS["deterministic"])


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return bool(_SETTINGS["warn_only"])


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``"default"``/0, ``"warn"``/1 or ``"error"``/2, as ``use_deterministic_algorithms`` off, warn-only, on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2 (see ``set_deterministic_debug_mode``)."""
    if not _SETTINGS["deterministic"]:
        return 0
    return 1 if _SETTINGS["warn_only"] else 2


def get_float32_matmul_precision() -> str:
    return str(_SETTINGS["matmul_precision"])


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"``: recorded; float32 matmuls stay full float32."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid value for float32_matmul_precision: {precision!r}; expected one of "
                           f"{', '.join(_PRECISIONS)}")
    _SETTINGS["matmul_precision"] = precision


def set_flush_denormal(mode: bool) -> bool:
    """False: flushing denormals to zero is not supported (PyTorch returns False likewise where the CPU lacks
    it); nothing changes."""
    return False


def is_warn_always_enabled() -> bool:
    return bool(_SETTINGS["warn_always"])


def set_warn_always(b: bool) -> None:
    """Record whether warnings PyTorch gives once should be given every time (funcgrad's warnings follow
    Python's ``warnings`` filters)."""
    _SETTINGS["warn_always"] = bool(b)
