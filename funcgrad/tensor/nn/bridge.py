"""Tensors through ``funcgrad.nn``'s functional maths: the helpers ``ft.nn.functional`` and
the layers share (the Tensors go in as recorded NumPy-semantics boxes and come back as
Tensors, so the formulas live in one place and record on the tensor graph). A layer whose maths
is one primitive (``dense``, ``attention``, ``lstm_sequence`` ...) calls it on the Tensors directly:
a primitive takes any box, and the boxes would only cost their conversions."""

from __future__ import annotations

from typing import Any, Callable, cast

import numpy as np

from funcgrad.backend import namespace_of

from ..creation import default_generator
from ..grad_mode import no_grad
from ..boxes import as_numpy_box, as_tensor_box
from ..tensor import Tensor
from ..tensor import _as_tensor
from ..tensor_helpers import _finish_inplace, named_result, node_mark


def _maybe_inplace(x: Tensor, fn: Callable[[Tensor], Any], inplace: bool) -> Tensor:
    """``fn(x)``; with ``inplace=True`` (PyTorch's activations and dropouts) written into ``x``,
    which is returned: an in-place change like any other (values ``fn`` saved are kept, a leaf
    that requires grad refuses)."""
    if not inplace:
        return cast("Tensor", fn(x))
    mark = node_mark()
    out = fn(x)
    return x if out is x else _finish_inplace(x, _as_tensor(out), mark)


def _boxes(*values: Any) -> list[Any]:
    """The Tensors among ``values`` as recorded NumPy-semantics boxes, for ``funcgrad.nn``'s maths."""
    return [as_numpy_box(t) if isinstance(t, Tensor) else t for t in values]


def _run_on_tensors(fn: Callable[..., Any], *tensors: Any, **kwargs: Any) -> Tensor:
    return cast("Tensor", as_tensor_box(fn(*_boxes(*tensors), **kwargs)))


def _run_on_tensors_named(name: str, fn: Callable[..., Any], *tensors: Any, **kwargs: Any) -> Tensor:
    """``_run_on_tensors(fn, ...)`` whose result's ``grad_fn`` carries PyTorch's node ``name`` (``MseLossBackward0``;
    ``fn`` is a composite of ``funcgrad.nn``, its last primitive depending on the arguments)."""
    return cast("Tensor", named_result(name, _run_on_tensors)(fn, *tensors, **kwargs))


def _like(t: Tensor, host: Any) -> Tensor:
    """A constant made on the host (indices, masks, weights) as a Tensor on ``t``'s device."""
    xp = namespace_of(t._value)
    return Tensor._make(np.asarray(host) if xp is np else xp.asarray(host))


def _check_dropout_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(x: Tensor, p: float, training: bool, mask_shape: tuple[Any, ...]) -> Tensor:
    """Zero with probability ``p`` through a mask of ``mask_shape`` (broadcast against ``x``: whole
    channels when it has ones), scaling the rest by ``1/(1-p)``; ``x`` itself outside training."""
    _check_dropout_p(p)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = default_generator._rng.random(mask_shape) >= p
    return x * _like(x, (keep / (1.0 - p)).astype(x._value.dtype))


def _renorm_rows_(weight: Tensor, idx: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``max_norm`` of the embeddings: the rows of ``weight`` that ``idx`` looks up and whose
    ``norm_type``-norm exceeds ``max_norm`` are scaled down to it, in place and unrecorded."""
    with no_grad():
        w = weight._value
        xp = namespace_of(w)
        # every looked-up row, repeats included (a repeated row gets the same scale, written twice): no
        # unique(), whose size would have to be read back from a device
        rows = idx._value.reshape(-1)
        norms = xp.sum(xp.abs(w[rows]) ** norm_type, axis=1) ** (1.0 / norm_type)
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        w[rows] = w[rows] * scale[:, None].astype(w.dtype)
        weight._version_counter[0] += 1
