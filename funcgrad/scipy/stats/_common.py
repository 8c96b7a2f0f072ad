"""Helpers shared by the distributions: standardizing, support masks."""

from __future__ import annotations

import math
from typing import Any

import funcgrad.numpy as fnp


def standardize(x: Any, loc: Any, scale: Any) -> Any:
    return (x - loc) / scale


def where_in(inside: Any, value: Any, outside: float) -> Any:
    """``value`` where ``inside``, the constant ``outside`` elsewhere (dtype kept)."""
    return fnp.where(inside, value, fnp.full_like(value, outside))


def log_from_cdf(c: Any) -> Any:
    return fnp.log(c)


def log_param(v: Any) -> Any:
    """log of a parameter; a Python number stays a Python number (keeps float32 results float32)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return math.log(v)
    return fnp.log(v)
