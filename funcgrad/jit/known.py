"""The primitives of :mod:`funcgrad.numpy` that the compiler's passes and backends
recognise, by object (never by name: a user primitive called ``"sum"`` is not NumPy's
sum). Each backend keeps its own table keyed by these objects.
"""

from __future__ import annotations

from typing import Any

from ..core import get_primitive
from ..core.trace import Primitive
from .. import numpy as fnp
from ..numpy import elementwise as _elementwise, linalg as _linalg, shape_ops as _shape_ops

__all__ = ["primitive_of", "ADD", "SUBTRACT", "MULTIPLY", "WHERE", "SUM", "BROADCAST_TO", "TENSORDOT",
           "EXPAND_DIMS", "SQUEEZE", "MATMUL"]


def primitive_of(fn: Any) -> Primitive:
    """The primitive a funcgrad.numpy function records (its own, or the one it wraps)."""
    return fn if isinstance(fn, Primitive) else get_primitive(fn)


ADD = primitive_of(fnp.add)
SUBTRACT = primitive_of(fnp.subtract)
MULTIPLY = primitive_of(fnp.multiply)
SUM = primitive_of(fnp.sum)
EXPAND_DIMS = primitive_of(fnp.expand_dims)
SQUEEZE = primitive_of(fnp.squeeze)
# recorded by public functions that check their arguments first
WHERE = primitive_of(_elementwise._where)
BROADCAST_TO = primitive_of(_shape_ops._broadcast_to)
TENSORDOT = primitive_of(_linalg._tensordot)
MATMUL = primitive_of(fnp.matmul)
