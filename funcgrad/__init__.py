"""funcgrad: composable automatic differentiation of NumPy code.

Example::

    import funcgrad as fg
    import funcgrad.numpy as fnp

    f = lambda x: fnp.sum(fnp.tanh(x) ** 2)
    fg.grad(f)(fnp.ones(3))
    fg.hessian(f)(fnp.ones(3))
"""

from __future__ import annotations

__version__ = "0.1.0"  # first: funcgrad.tensor reads it

from . import tree, tree_util  # noqa: F401
from . import numpy  # noqa: F401  (registers array behaviour on traced values)
from .core import LeakedTraceError, defprimitive, defjvp, defvjp, def_linear, nondiff_primitive, primitive  # noqa: F401
from .core.batching import defbatch  # noqa: F401
from .transforms import checkpoint, custom_jvp, custom_vjp, fori_loop, remat, scan  # noqa: F401
from .transforms import cond, switch, while_loop  # noqa: F401
from .transforms import (  # noqa: F401
    grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize, stop_gradient, value_and_grad, vjp, vmap,
)
from .transforms import jit, make_program  # noqa: F401
from .config import config  # noqa: F401
from . import testing  # noqa: F401
from .debugging import debug_nans  # noqa: F401
from . import nn, optim  # noqa: F401
from .serialization import load, save  # noqa: F401
from .visualize import make_graph  # noqa: F401
from .backend import (  # noqa: F401
    Device, block_until_ready, default_device, device_get, device_of, device_put, devices, set_default_device,
    to_numpy,
)


__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "jacobian", "hessian",
    "hvp", "stop_gradient", "vmap", "custom_jvp", "custom_vjp", "checkpoint", "remat", "scan", "fori_loop", "primitive", "nondiff_primitive", "defprimitive", "defvjp", "defjvp", "def_linear",
    "LeakedTraceError", "tree_util", "numpy", "testing", "nn", "optim", "save", "load", "make_graph", "Device", "devices", "device_put", "device_of", "to_numpy", "default_device",
    "set_default_device",
    "while_loop", "cond", "switch", "debug_nans", "jit", "make_program", "config",
]
__all__ += ["defbatch", "tree", "device_get", "block_until_ready"]


def __getattr__(name: str) -> object:
    """``fg.random`` without importing it in ``import funcgrad`` (it loads on first use)."""
    if name == "random":
        import importlib

        return importlib.import_module(".random", __name__)
    raise AttributeError(f"module 'funcgrad' has no attribute {name!r}")
