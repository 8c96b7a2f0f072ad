"""``ft.cuda``: the CUDA queries scripts make (``is_available``, ``device_count``, seeding).

Example::

    dev = "cuda" if ft.cuda.is_available() else "cpu"
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_available", "device_count", "current_device", "manual_seed", "manual_seed_all", "synchronize"]


def device_count() -> int:
    """The number of GPUs funcgrad's backend sees (CuPy); 0 without one. Example: ``ft.cuda.device_count()``."""
    from .. import backend

    try:
        return len(backend.devices("cuda"))
    except Exception:  # no CUDA backend registered or no driver
        return 0


def is_available() -> bool:
    """True when a GPU is usable. Example: ``ft.cuda.is_available()``."""
    return device_count() > 0


def current_device() -> int:
    """Index of the current GPU (always 0). Example: ``ft.cuda.current_device()``."""
    return 0


def manual_seed(seed: int) -> None:
    """Seed ft's generator (one generator serves every device). Example: ``ft.cuda.manual_seed(0)``."""
    from .creation import manual_seed as _seed

    _seed(seed)


manual_seed_all = manual_seed


def synchronize(device: Any = None) -> None:
    """Wait for queued GPU work (a no-op without a GPU). Example: ``ft.cuda.synchronize()``."""
    if is_available():
        import cupy

        cupy.cuda.Device().synchronize()
