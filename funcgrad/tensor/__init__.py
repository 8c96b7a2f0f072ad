"""funcgrad.tensor: a PyTorch-style Tensor API on funcgrad's engine.

Bring PyTorch autograd code over by changing the import::

    import funcgrad.tensor as ft

    x = ft.randn(5, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    x.grad                      # 2 * x

Tensors record on the same graph machinery as the functional transforms
(a trace of level 0 below all of theirs); semantics follow PyTorch's
"Autograd mechanics" (see docs/tensor.md for the supported surface and the
known differences).
"""

from __future__ import annotations

from typing import Any

from . import creation as _creation
from . import legacy as _legacy
from . import ops
from .dtypes import (  # noqa: F401
    bool, cdouble, cfloat, complex64, complex128, double, dtype, float, float16, float32, float64, get_default_dtype,
    half, int, int8, int16, int32, int64, long, set_default_dtype, short, uint8, finfo, iinfo,
)
from .grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .tensor import Size, Tensor, device, is_tensor  # noqa: F401
from .creation import *  # noqa: F401,F403
from .creation import Generator, default_generator  # noqa: F401
from .ops import *  # noqa: F401,F403
from .legacy import *  # noqa: F401,F403
from . import autograd, linalg  # noqa: F401
from . import nn, optim, utils  # noqa: F401
from . import distributed  # noqa: F401  (ft.distributed; mpi4py is loaded on first use)
from .serialization import load, save  # noqa: F401
from . import nn_ops as _nn_ops
from .nn_ops import *  # noqa: F401,F403  (the torch namespace's forms of nn ops)
from . import blas_ops as _blas_ops
from .blas_ops import *  # noqa: F401,F403
from . import safetensors  # noqa: F401  (ft.safetensors: the safetensors.torch API)
from . import backends, cuda, func  # noqa: F401
from .. import __version__ as __version__  # funcgrad's version (torch.__version__'s place)
from .toplevel import (  # noqa: F401
    bernoulli, bincount, get_default_device, median, multinomial, set_default_device,
    unique,
)
from .tensor_repr import set_printoptions  # noqa: F401
from .compiled import compile  # noqa: F401  (torch.compile: staged with fg.jit)
from .anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from . import torch_math as _torch_math
from .torch_math import *  # noqa: F401,F403  (maths: special functions, scans, quantiles, windows, in-place forms)
from . import special  # noqa: F401  (ft.special: torch.special's functions)
from . import loss_ops as _loss_ops
from .loss_ops import *  # noqa: F401,F403  (torch.kl_div, ...: the losses with reduction enums)
from . import torch_shapes as _torch_shapes, torch_config as _torch_config  # noqa: E401
from .torch_shapes import *  # noqa: F401,F403  (shapes, indexing, linalg, creation: issue 29 part B)
from .torch_config import *  # noqa: F401,F403  (threads, determinism, matmul precision)
from .func import vmap  # noqa: F401,E402  (torch.vmap is torch.func.vmap)

# the public names; ``creation``, ``ops`` and ``legacy`` contribute their own lists (star-imported above)
__all__ = [
    "bool", "cdouble", "cfloat", "complex64", "complex128", "double", "dtype", "float", "float16", "float32",
    "float64", "get_default_dtype", "half", "int", "int8", "int16", "int32", "int64", "long", "set_default_dtype",
    "short", "uint8", "finfo", "iinfo", "enable_grad", "inference_mode", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "set_grad_enabled", "Size", "Tensor", "device", "default_generator",
    "autograd", "linalg", "nn", "optim", "utils", "distributed", "backends", "cuda", "func", "load", "save",
    "bernoulli", "bincount", "compile", "get_default_device", "median", "multinomial", "set_default_device",
    "set_printoptions", "unique", "is_inference", "get_rng_state", "set_rng_state", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]
__all__ += _creation.__all__
__all__ += ops.__all__
__all__ += _legacy.__all__
__all__ += _nn_ops.__all__
__all__ += _blas_ops.__all__
__all__ += _torch_math.__all__
__all__ += ["special"]
__all__ += _loss_ops.__all__
__all__ += _torch_shapes.__all__ + _torch_config.__all__ + ["vmap"]


def is_inference(t: Tensor) -> object:
    """True for tensors created in inference mode."""
    return t.is_inference()


def get_rng_state() -> dict[Any, Any]:
    return default_generator.get_state()


def set_rng_state(state: dict[Any, Any]) -> None:
    default_generator.set_state(state)
