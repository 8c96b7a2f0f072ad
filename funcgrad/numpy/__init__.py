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

import typing as _py_typing

import numpy as _np

# Constants and dtypes are NumPy's own (`name as name`: re-exported for type checkers).
from numpy import (  # noqa: F401
    bool_ as bool_, complex64 as complex64, complex128 as complex128, dtype as dtype, e as e,
    euler_gamma as euler_gamma, finfo as finfo, float16 as float16, float32 as float32,
    float64 as float64, iinfo as iinfo, inf as inf, int8 as int8, int16 as int16, int32 as int32,
    int64 as int64, integer as integer, floating as floating, complexfloating as complexfloating,
    nan as nan, newaxis as newaxis, number as number, pi as pi, uint8 as uint8, uint16 as uint16,
    uint32 as uint32, uint64 as uint64, ndarray as ndarray, generic as generic,
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
from . import fft  # noqa: F401,E402  (funcgrad.numpy.fft)
# The rest of NumPy's namespace, by family (see funcgrad.numpy.coverage for every name's status)
from .aliases import *  # noqa: F401,F403
from .rearrange import *  # noqa: F401,F403
from .more_math import *  # noqa: F401,F403
from .polynomials import *  # noqa: F401,F403
from .windows import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
from .functional import *  # noqa: F401,F403
from .passthrough import *  # noqa: F401,F403

# What the core needs from an array library, registered explicitly.
from ..core.constant import ConstBox as _ConstBox  # noqa: E402
from ..core.hooks import register_box_methods as _register_box_methods  # noqa: E402
from ..core.hooks import register_zeros_like as _register_zeros_like  # noqa: E402
from ..core.hooks import register_sequence_packer as _register_sequence_packer  # noqa: E402
from . import _batching  # noqa: E402,F401  (registers vmap's loop fallback)
from .box_methods import ArrayMethods as _ArrayMethods  # noqa: E402
from .inplace import ConstMethods as _ConstMethods, InPlaceMethods as _InPlaceMethods  # noqa: E402

_register_box_methods(_ArrayMethods)
_register_box_methods(_InPlaceMethods)
_register_box_methods(_ConstMethods, _ConstBox)
_register_zeros_like(zeros_like)  # noqa: F405  cotangents of unused results
_register_sequence_packer(array)  # noqa: F405  lists holding traced values (fnp.mean([x, x + 2]))

__version__ = _np.__version__  # the NumPy whose semantics this namespace follows (code checks np.__version__)


if not _py_typing.TYPE_CHECKING:  # hidden from type checkers, so that they flag a misspelt name

    def __getattr__(name: str) -> _py_typing.NoReturn:  # the submodules of numpy not provided here: say why
        from .coverage import ELSEWHERE, REFUSED_MODULES

        if name in REFUSED_MODULES:
            raise AttributeError(f"funcgrad.numpy.{name} is not provided: {REFUSED_MODULES[name]}")
        if name in ELSEWHERE:
            raise AttributeError(f"module 'funcgrad.numpy' has no attribute {name!r} (NumPy has none either); "
                                 f"use {ELSEWHERE[name]}")
        raise AttributeError(f"module 'funcgrad.numpy' has no attribute {name!r}")
