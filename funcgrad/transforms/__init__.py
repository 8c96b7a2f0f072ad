"""The user-facing transforms: pytree-aware combinators over the core engine."""

from .batching import vmap  # noqa: F401
from .custom import checkpoint, custom_jvp, custom_vjp, remat  # noqa: F401
from .control import cond, fori_loop, scan, switch, while_loop  # noqa: F401
from .jit import jit, make_program  # noqa: F401
from .autodiff import (  # noqa: F401
    grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize, stop_gradient, value_and_grad, vjp,
)

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "jacobian",
    "hessian", "hvp", "stop_gradient", "vmap",
    "custom_jvp", "custom_vjp", "checkpoint", "remat", "scan", "fori_loop",
    "while_loop", "cond", "switch", "jit", "make_program",
]
