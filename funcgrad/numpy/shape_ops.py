"""Shape and layout primitives (reshape, transpose, concatenate, ...) and their rules."""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp

from ..core import def_linear, defvjp, primitive
from ._util import backend_function, shape

__all__ = ["reshape", "broadcast_to", "expand_dims"]

reshape = primitive(backend_function("reshape"), "reshape")
defvjp(reshape, lambda g, ans, x, *args, **kwargs: fnp.reshape(g, shape(x)))
def_linear(reshape)

broadcast_to = primitive(backend_function("broadcast_to"), "broadcast_to")


def _broadcast_to_vjp(g, ans, x, shape_):
    from ._util import unbroadcast

    return unbroadcast(g, x)


defvjp(broadcast_to, _broadcast_to_vjp)
def_linear(broadcast_to)

expand_dims = primitive(backend_function("expand_dims"), "expand_dims")
defvjp(expand_dims, lambda g, ans, x, axis: fnp.reshape(g, shape(x)))
def_linear(expand_dims)
