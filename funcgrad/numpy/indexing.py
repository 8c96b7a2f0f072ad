"""Indexing: ``x[idx]``, take, take_along_axis, and ``x.at[idx].set/add/...``."""

from __future__ import annotations

import funcgrad.numpy as fnp

from ..core import defjvp, defvjp, primitive

__all__: list[str] = []


def getitem(x, idx):
    raise NotImplementedError


class _IndexUpdateHelper:
    def __init__(self, x):
        self.x = x
