"""PyTorch's names and messages, for what the Tensor layer records: node class names
(``MulBackward0``), the names of saved values (``_saved_self``), and the texts of PyTorch's
errors about saved values, in-place changes and views, so that code and tests written
against PyTorch read the same here.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from . import dtypes as _dt

__all__ = ["torch_name", "named_node_class", "rename_node", "view_rebase_error"]


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


def rename_node(node: Any, name: str) -> None:
    """Give ``node`` PyTorch's ``name`` (its ``name()`` and its class's name)."""
    node._name = name
    base = getattr(type(node), "_named_base", None)
    if base is not None:
        node.__class__ = named_node_class(base, name)


_DEFAULT_ARG_NAMES = ["self", "other"]


_ARG_NAMES: dict[str, list[Any]] = {
    "matmul": ["self", "other"], "power": ["self", "exponent"], "where": ["condition", "self", "other"],
    "clip": ["self", "min", "max"],
}


# prim name -> PyTorch node name (Tensor methods rename where PyTorch distinguishes more)
_NAMES = {  # where PyTorch's name is not the default of torch_name
    "subtract": "SubBackward0", "multiply": "MulBackward0", "divide": "DivBackward0", "true_divide": "DivBackward0",
    "negative": "NegBackward0", "positive": "AliasBackward0", "power": "PowBackward0", "square": "PowBackward0",
    "absolute": "AbsBackward0", "max": "MaxBackward1", "min": "MinBackward1", "matmul": "MmBackward0",
    "reshape": "ViewBackward0", "transpose": "PermuteBackward0", "swapaxes": "TransposeBackward0",
    "moveaxis": "PermuteBackward0", "expand_dims": "UnsqueezeBackward0", "broadcast_to": "ExpandBackward0",
    "getitem": "IndexBackward0", "_getitem": "IndexBackward0", "astype": "ToCopyBackward0",
    "copy": "CloneBackward0", "concatenate": "CatBackward0", "_concatenate": "CatBackward0",
    "clip": "ClampBackward1", "_clip": "ClampBackward1", "log1p": "Log1PBackward0", "conjugate": "ConjBackward0",
    "tile": "RepeatBackward0", "take_along_axis": "GatherBackward0", "_take_along_axis": "GatherBackward0",
    "arctan": "AtanBackward0", "arcsin": "AsinBackward0", "arccos": "AcosBackward0", "arctan2": "Atan2Backward0",
    "expit": "SigmoidBackward0", "ravel": "ViewBackward0",
}


def torch_name(prim_name: str) -> str:
    got = _NAMES.get(prim_name)
    if got is None:
        got = _NAMES[prim_name] = "".join(p.capitalize() for p in prim_name.strip("_").split("_")) + "Backward0"
    return got


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
