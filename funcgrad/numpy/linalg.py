"""Linear algebra: products (dot, matmul, einsum, ...) and ``numpy.linalg``.

Importable as ``funcgrad.numpy.linalg`` (mirroring ``numpy.linalg``); the
product functions are also re-exported at the top of funcgrad.numpy.
"""

from __future__ import annotations

import funcgrad.numpy as fnp

from ..core import defjvp, defvjp, primitive
from ._util import backend_function, unbroadcast

__all__ = ["matmul", "dot"]

matmul = primitive(backend_function("matmul", 2), "matmul")
dot = primitive(backend_function("dot", 2), "dot")
