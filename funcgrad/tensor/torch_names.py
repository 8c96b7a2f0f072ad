"""PyTorch's names and messages, for what the Tensor layer records: node class names
(``MulBackward0``), the names of saved values (``_saved_self``), and the texts of PyTorch's
errors about saved values, in-place changes and views, so that code and tests written
against PyTorch read the same here.
"""

from __future__ import annotations

import re
import threading
from functools import partial
from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..core import Primitive, get_primitive
from ..nn.kernels.layer_norm import layer_norm_affine
from ..nn.kernels.normalization import standardize_affine_statistics
from ..nn.kernels.recurrent import lstm_layer
from ..numpy import creation as _creation
from ..numpy import elementwise as _elementwise
from ..numpy import indexing as _indexing
from ..numpy import shape_ops as _shape_ops
from ..scipy.special import expit
from . import dtypes as _dt
from .grad_mode import state as _mode

__all__ = ["torch_name", "named", "named_node_class", "rename_node", "view_rebase_error"]


_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def _type_desc(value: Any) -> str:
    d: Any = _dt._BY_NP.get(np.dtype(value.dtype))
    tname = _dt.TYPE_NAMES.get(d, str(value.dtype))
    return f"[ft.{tname} [{', '.join(str(s) for s in value.shape)}]]"


_NAMED_CLASSES: dict[Any, Any] = {}


def named_node_class(base: type, name: str) -> type:
    """A subclass of ``base`` called ``name``, so that ``type(grad_fn).__name__`` is PyTorch's
    node name (``MulBackward0``, ``<Function>Backward``); one class per name, cached."""
    cls = _NAMED_CLASSES.get((base, name))
    if cls is None:
        cls = _NAMED_CLASSES[(base, name)] = type(name, (base,), {"_named_base": base, "_name": name,
                                                                   "__module__": base.__module__})
    return cls


def named(name: str | tuple[str, str], fn: Callable[..., Any], prim: Any = None) -> Callable[..., Any]:
    """``fn`` whose call records its node under PyTorch's class ``name``, where the name depends on the
    op rather than on the primitive (``x.t()`` and ``x.permute(1, 0)`` both call ``transpose``):
    the node of ``prim`` (default: ``fn``'s own primitive; give it when ``fn`` is a function that
    calls it) made during the call is of that class from the start. A pair names a view primitive's
    node by its result: (the name when it is a view, the name when it is a copy). The outermost op
    names the nodes: ``x.unbind()`` is made of ``x[i]`` calls, whose nodes are ``UnbindBackward0``.
    Where ``name`` is the primitive's own (:func:`torch_name`), ``fn`` itself is returned.

    Example::

        named("TBackward0", fnp.transpose)(x)        # x.t(): grad_fn is TBackward0
    """
    key = (name, fn if prim is None else prim)  # (module-level objects: the primitive's function)
    request = _REQUESTS.get(key, False)
    if request is False:
        target = prim if isinstance(prim, Primitive) else get_primitive(fn if prim is None else prim)
        request = _REQUESTS[key] = None if name == torch_name(target) else (target, name)
    return fn if request is None else partial(_call_named, request, fn)


_REQUESTS: dict[Any, Any] = {}  # (name, primitive function) -> (primitive, name), None where it is its own


# How many named calls run now, in all threads: while none does, the recorder need not read its
# thread's request (a thread-local read on every op costs more than this list's)
NAMING: list[int] = [0]
_naming_lock = threading.Lock()


def _call_named(request: tuple[Primitive, Any], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    state = _mode
    outer = state.name_request
    if outer is not None and outer[0] is request[0]:  # an enclosing op of the same primitive names it
        return fn(*args, **kwargs)
    with _naming_lock:
        NAMING[0] += 1
    state.name_request = request
    try:
        return fn(*args, **kwargs)
    finally:
        state.name_request = outer
        with _naming_lock:
            NAMING[0] -= 1


def rename_node(node: Any, name: str) -> None:
    """Give ``node`` PyTorch's ``name`` (its ``name()`` and its class's name)."""
    node._name = name
    base = getattr(type(node), "_named_base", None)
    if base is not None:
        node.__class__ = named_node_class(base, name)


# PyTorch's names of positional arguments, for ``grad_fn._saved_<name>`` (default: self, other, arg<k>)
_DEFAULT_ARG_NAMES = ["self", "other"]
ARG_NAMES: dict[Primitive, list[str]] = {
    get_primitive(fnp.matmul): ["self", "other"], get_primitive(fnp.power): ["self", "exponent"],
    get_primitive(_elementwise._where): ["condition", "self", "other"],
    get_primitive(_elementwise._clip): ["self", "min", "max"],
}

# PyTorch's node class name per primitive, where it is not the default of torch_name (CamelCase of
# the primitive's name + "Backward0"). Tensor methods rename where PyTorch distinguishes more.
NODE_NAMES: dict[Primitive, str] = {get_primitive(fn): name for fn, name in (
    (fnp.subtract, "SubBackward0"), (fnp.multiply, "MulBackward0"), (fnp.divide, "DivBackward0"),
    (fnp.negative, "NegBackward0"), (fnp.positive, "AliasBackward0"), (fnp.power, "PowBackward0"),
    (fnp.square, "PowBackward0"), (fnp.absolute, "AbsBackward0"), (fnp.max, "MaxBackward1"),
    (fnp.min, "MinBackward1"), (fnp.matmul, "MmBackward0"), (fnp.reshape, "ViewBackward0"),
    (fnp.transpose, "PermuteBackward0"), (fnp.swapaxes, "TransposeBackward0"), (fnp.moveaxis, "PermuteBackward0"),
    (fnp.expand_dims, "UnsqueezeBackward0"), (_shape_ops._broadcast_to, "ExpandBackward0"),
    (_indexing._getitem, "IndexBackward0"), (_creation._astype, "ToCopyBackward0"), (fnp.copy, "CloneBackward0"),
    (_shape_ops._concatenate, "CatBackward0"), (_elementwise._clip, "ClampBackward1"),
    (fnp.log1p, "Log1PBackward0"), (fnp.conjugate, "ConjBackward0"), (fnp.tile, "RepeatBackward0"),
    (fnp.arctan, "AtanBackward0"), (fnp.arcsin, "AsinBackward0"), (fnp.arccos, "AcosBackward0"),
    (fnp.arctan2, "Atan2Backward0"), (expit, "SigmoidBackward0"),
    (layer_norm_affine, "NativeLayerNormBackward0"), (standardize_affine_statistics, "NativeBatchNormBackward0"),
    (lstm_layer, "MkldnnRnnLayerBackward0"),
)}


def torch_name(prim: Primitive) -> str:
    """PyTorch's name of the node that records ``prim`` (``MulBackward0``)."""
    got = NODE_NAMES.get(prim)
    if got is None:
        got = NODE_NAMES[prim] = "".join(p.capitalize() for p in prim.name.strip("_").split("_")) + "Backward0"
    return got


def arg_names(prim: Primitive) -> list[str]:
    """PyTorch's names of ``prim``'s positional arguments, as far as they are known."""
    return ARG_NAMES.get(prim, _DEFAULT_ARG_NAMES)


_AMBIGUOUS_VIEW = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code "
                   "by moving both the view and the inplace either both inside the {} block (if you don't want the "
                   "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


_VIEW_FIX = {
    "no_grad": _AMBIGUOUS_VIEW.format("no_grad"),
    "inference": _AMBIGUOUS_VIEW.format("inference_mode"),
    "multi_output": (" This view is the output of a function that returns multiple views. Such functions do not "
                     "allow the output views to be modified inplace. You should replace the inplace operation by an "
                     "out-of-place one."),
    "custom_function": (" This view was created inside a custom Function (or because an input was returned as-is) "
                        "and the autograd logic to handle view+inplace would override the custom backward associated "
                        "with the custom Function, leading to incorrect gradients. This behavior is forbidden. You "
                        "can fix this by cloning the output of the custom Function."),
}


def _output_nr(t: Any) -> int:
    """PyTorch's ``output_nr`` of ``t`` (a piece of split/chunk/unbind is output k of one node)."""
    return int(t.__dict__.get("_multi_index", t._output_nr))


def _short_name(node: Any) -> str:
    """A node's name as PyTorch's messages give it: ``MulBackward0`` -> ``Mul``."""
    return _strip_backward(getattr(node, "_short", None) or node.name())


def _strip_backward(name: str) -> str:
    return re.sub(r"Backward\d*$", "", name)


def view_rebase_error(t: Any, indirect: bool) -> str:
    """PyTorch's message for a view that may not be rebased: ``t`` is modified in place
    (``indirect=False``) or its base / another view of it was (``indirect=True``)."""
    kind = t._view_kind
    node = t._node
    mode, with_mode = ("inference mode", " in normal mode.") if kind == "inference" else \
        ("no_grad mode", " with grad mode enabled.")
    what = "its base or another view of its base has been modified inplace" if indirect else "is being modified inplace"
    if node is None:
        head = f"A view was created in {mode} and "
    elif kind in ("no_grad", "inference"):  # a view (with history) of such a view
        head = f"Output {_output_nr(t)} of {_short_name(node)} is a view of a view which was created in {mode} and "
    else:
        head, with_mode = f"Output {_output_nr(t)} of {_short_name(node)} is a view and ", "."
    return head + what + with_mode + _VIEW_FIX[kind]


_INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `ft.no_grad()` instead of `ft.inference_mode()`."
)
