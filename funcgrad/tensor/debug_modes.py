"""The Tensor layer's debugging modes that recording consults: anomaly detection (the forward
stack of each node, NaN checks in backward) and the profiler's event recording. The user-facing
switches are in ``anomaly.py`` and ``profiler.py``.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

__all__ = ["anomaly", "profiling", "user_stack"]


class _Anomaly:
    enabled = False
    check_nan = True
    running: Any = None  # the node whose backward is running (anomaly mode only)


anomaly = _Anomaly()


class _Profiling:
    active: list[Any] = []


profiling = _Profiling()


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Stack(list[Any]):
    """Formatted frames, and the node whose backward was running when they were taken (if any)."""

    __slots__ = ("parent",)
    parent: Any


def user_stack() -> list[Any]:
    """The current Python stack without funcgrad's own frames (for anomaly mode); its ``parent``
    is the node whose backward created this one (double backward), for the nested report."""
    frames = traceback.extract_stack()
    keep = [f for f in frames if not f.filename.startswith(_PKG_DIR)]
    stack = _Stack(traceback.format_list(keep))
    stack.parent = anomaly.running
    return stack
