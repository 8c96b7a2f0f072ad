"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly``.

While enabled, every recorded operation keeps the Python traceback of the
forward call that created it. In backward, a node that raises, or that
returns NaN (with ``check_nan=True``), raises a ``RuntimeError`` naming the
node (e.g. ``DivBackward0``) and showing that forward traceback; a
``UserWarning`` carries the traceback too, as in PyTorch. Entering
``detect_anomaly`` warns that the mode is slow (PyTorch's warning).
"""

from __future__ import annotations

import warnings
from typing import Any

from .grad_mode import _DecoratorContextManager
from .debug_modes import anomaly as _anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return _anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly.check_nan


class detect_anomaly(_DecoratorContextManager):
    """Context manager/decorator enabling anomaly detection.

    Example::

        with ft.autograd.detect_anomaly():
            y = x / x            # 0/0 at x == 0
            y.sum().backward()   # RuntimeError: Function 'DivBackward0' returned nan values ...
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled, _anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc: Any) -> None:
        _anomaly.enabled, _anomaly.check_nan = self.prev

    def clone(self) -> "detect_anomaly":
        new = object.__new__(detect_anomaly)  # as a decorator: warn once, not per call
        new.check_nan = self.check_nan
        return new


class set_detect_anomaly(_DecoratorContextManager):
    """Turn anomaly detection on or off: at once as a call, or for a block as a context manager.

    Example::

        ft.autograd.set_detect_anomaly(True)
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        self.mode, self.check_nan_ = mode, check_nan
        _anomaly.enabled, _anomaly.check_nan = bool(mode), check_nan

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _anomaly.enabled, _anomaly.check_nan = self.prev

    def clone(self) -> "set_detect_anomaly":
        return set_detect_anomaly(self.mode, self.check_nan_)
