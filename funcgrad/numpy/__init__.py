"""funcgrad.numpy: NumPy's namespace, differentiable.

Every function here mirrors the NumPy function of the same name and
signature. Called on plain arrays it costs one type check over NumPy; called
on traced values (inside ``fg.grad`` and the other transforms) it records
itself so that derivatives can be taken, to any order.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp

    fg.grad(lambda x: fnp.sum(fnp.tanh(x) ** 2))(fnp.ones(3))
"""

from __future__ import annotations

import numpy as _np

# Constants and dtypes are NumPy's own.
from numpy import (  # noqa: F401
    bool_, complex64, complex128, dtype, e, euler_gamma, finfo, float16, float32, float64, iinfo,
    inf, int8, int16, int32, int64, integer, floating, complexfloating, nan, newaxis, number, pi,
    uint8, uint16, uint32, uint64, ndarray, generic,
)

from .nondiff import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape_ops import *  # noqa: F401,F403
from . import linalg, indexing  # noqa: F401
from .linalg import *  # noqa: F401,F403  (dot, matmul, einsum ... live beside numpy.linalg)
from .indexing import *  # noqa: F401,F403
from .composite import *  # noqa: F401,F403

# What the core needs from an array library, registered explicitly.
from ..core.constant import ConstBox as _ConstBox  # noqa: E402
from ..core.hooks import register_box_methods as _register_box_methods  # noqa: E402
from ..core.hooks import register_zeros_like as _register_zeros_like  # noqa: E402
from . import _batching  # noqa: E402,F401  (registers vmap's loop fallback)
from .box_methods import ArrayMethods as _ArrayMethods  # noqa: E402
from .inplace import ConstMethods as _ConstMethods, InPlaceMethods as _InPlaceMethods  # noqa: E402

_register_box_methods(_ArrayMethods)
_register_box_methods(_InPlaceMethods)
_register_box_methods(_ConstMethods, _ConstBox)
_register_zeros_like(zeros_like)  # noqa: F405  cotangents of unused results
