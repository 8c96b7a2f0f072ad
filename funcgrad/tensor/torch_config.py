"""The ``torch`` namespace's process settings that real scripts call at start-up: thread counts,
deterministic algorithms, float32 matmul precision, ``set_warn_always``, ``set_flush_denormal``, and the
small queries ``typename``, ``is_storage``, ``is_distributed``.

funcgrad.tensor's kernels are NumPy's (and CuPy's): their results do not depend on these settings,
which are recorded and reported back as PyTorch does. Threads are NumPy's BLAS threads, which are set
when NumPy starts (``OMP_NUM_THREADS``); ``set_num_threads`` records the request.

Example::

    ft.use_deterministic_algorithms(True)
    ft.set_float32_matmul_precision("high")
    ft.get_num_threads()
"""

from __future__ import annotations

import os
import warnings
from typing import Any

__all__ = [
    "set_num_threads", "get_num_threads", "init_num_threads", "set_num_interop_threads", "get_num_interop_threads",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode", "get_deterministic_debug_mode",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
    "set_flush_denormal", "typename", "is_storage", "is_distributed", "set_default_tensor_type",
]

_SETTINGS: dict[str, Any] = {
    "threads": os.cpu_count() or 1, "interop_threads": os.cpu_count() or 1, "deterministic": False,
    "warn_only": False, "matmul_precision": "highest", "warn_always": False,
}


def set_num_threads(n: int) -> None:
    """Record the intra-op thread count (NumPy's BLAS threads are fixed at start-up). Example: ``ft.set_num_threads(4)``."""
    if int(n) <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _SETTINGS["threads"] = int(n)


def get_num_threads() -> int:
    """The intra-op thread count (the CPU count, or what ``set_num_threads`` recorded). Example: ``ft.get_num_threads()``."""
    return int(_SETTINGS["threads"])


def init_num_threads() -> None:
    """Nothing to initialise (PyTorch's per-thread OpenMP set-up). Example: ``ft.init_num_threads()``."""


def set_num_interop_threads(n: int) -> None:
    """Record the inter-op thread count. Example: ``ft.set_num_interop_threads(2)``."""
    if int(n) <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _SETTINGS["interop_threads"] = int(n)


def get_num_interop_threads() -> int:
    """The inter-op thread count. Example: ``ft.get_num_interop_threads()``."""
    return int(_SETTINGS["interop_threads"])


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms. funcgrad's CPU kernels are deterministic already; CuPy's scatter-adds
    accumulate in an unspecified order. Example: ``ft.use_deterministic_algorithms(True)``."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """What ``use_deterministic_algorithms`` set. Example: ``ft.are_deterministic_algorithms_enabled()``."""
    return bool(_SETTINGS["deterministic"])


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(..., warn_only=True)`` was set."""
    return bool(_SETTINGS["warn_only"])


def set_deterministic_debug_mode(debug_mode: Any) -> None:
    """``0``/``"default"``, ``1``/``"warn"``, ``2``/``"error"``: ``use_deterministic_algorithms`` in one call.

    Example: ``ft.set_deterministic_debug_mode("warn")``.
    """
    names = {"default": 0, "warn": 1, "error": 2}
    mode = names.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    if mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(mode != 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2 (see ``set_deterministic_debug_mode``). Example: ``ft.get_deterministic_debug_mode()``."""
    if not _SETTINGS["deterministic"]:
        return 0
    return 1 if _SETTINGS["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"``, ``"high"`` or ``"medium"`` (recorded; float32 products here are always full precision).

    Example: ``ft.set_float32_matmul_precision("high")``.
    """
    if precision not in ("highest", "high", "medium"):  # PyTorch warns and keeps the setting
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _SETTINGS["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """What ``set_float32_matmul_precision`` recorded (``"highest"`` by default)."""
    return str(_SETTINGS["matmul_precision"])


def set_warn_always(b: bool) -> None:
    """Record whether once-only warnings should repeat (Python's warning filters decide here)."""
    _SETTINGS["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """What ``set_warn_always`` recorded."""
    return bool(_SETTINGS["warn_always"])


def set_flush_denormal(mode: bool) -> bool:
    """False: denormals are not flushed here (NumPy has no such switch), as PyTorch reports on CPUs without it."""
    return False


def typename(obj: Any) -> str:
    """The type name: a tensor's ``type()`` (``"ft.FloatTensor"`` for a float32 CPU tensor, as PyTorch's
    ``"torch.FloatTensor"``), else the object's qualified type name. Example: ``ft.typename(ft.ones(1))``."""
    from .tensor import Tensor

    if isinstance(obj, Tensor):
        return str(obj.type())
    t = type(obj)
    return t.__qualname__ if t.__module__ in ("builtins", "__builtin__", None) else f"{t.__module__}.{t.__qualname__}"


def is_storage(obj: Any) -> bool:
    """False: funcgrad.tensor has no separate storage objects."""
    return False


def is_distributed(obj: Any) -> bool:
    """False (no tensor is distributed here)."""
    return False


def set_default_tensor_type(t: Any) -> None:
    """Set the default float dtype from a legacy tensor type (``ft.DoubleTensor`` or ``"torch.DoubleTensor"``;
    deprecated in PyTorch for ``set_default_dtype``). Example: ``ft.set_default_tensor_type("torch.DoubleTensor")``."""
    from . import dtypes as _dt

    name = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    short = name.rsplit(".", 1)[-1]
    table = {"FloatTensor": _dt.float32, "DoubleTensor": _dt.float64, "HalfTensor": _dt.float16}
    if short not in table:
        raise TypeError(f"invalid type: {name!r}; expected one of torch.FloatTensor, torch.DoubleTensor, "
                        f"torch.HalfTensor")
    _dt.set_default_dtype(table[short])
