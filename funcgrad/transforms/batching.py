"""vmap: the batching transform."""

from __future__ import annotations

import functools
from typing import Any, Callable, ParamSpec

from ..core.trace import shape_of
from .. import tree_util
from ..core.batching import BatchBox, BatchTrace
from ..core.constant import ConstBox

__all__ = ["vmap"]

P = ParamSpec("P")


def _broadcast_prefix(prefix: Any, tree: Any, what: str, batched: int = 0) -> tuple[list[Any], list[str]]:
    """One axis spec per leaf of ``tree``, from a pytree prefix of specs (None is a spec). A negative
    axis counts from the end of the shape the user sees: an object that is a pytree node with a
    ``shape`` of its own (a typed key array, whose data has a trailing axis of 2) has its negative
    axis made non-negative against that shape (plus ``batched``: 1 for out_axes, whose range
    includes the batch axis) before it reaches its leaves."""
    prefix_def = tree_util.tree_structure(prefix, is_leaf=lambda x: x is None)
    spec_pairs, _ = tree_util.tree_flatten_with_path(prefix, is_leaf=lambda x: x is None)
    try:
        subtrees = prefix_def.flatten_up_to(tree)
    except ValueError as err:
        raise ValueError(
            f"vmap: {what} must be an int, None, or a pytree prefix of the arguments; {err}"
        ) from None
    axes: list[Any] = []
    paths: list[str] = []
    for (spec_path, spec), sub in zip(spec_pairs, subtrees):
        if not (isinstance(spec, int) and spec < 0):
            pairs, _ = tree_util.tree_flatten_with_path(sub)
            axes.extend([spec] * len(pairs))
            paths.extend(tree_util.keystr(tuple(spec_path) + tuple(path)) for path, _leaf in pairs)
            continue
        shaped, _ = tree_util.tree_flatten_with_path(sub, is_leaf=lambda x: hasattr(x, "shape"))
        for node_path, node in shaped:
            nd = len(node.shape) + batched if hasattr(node, "shape") else 0
            own = spec + nd if spec + nd >= 0 else spec
            for path, _leaf in tree_util.tree_flatten_with_path(node)[0]:
                axes.append(own)
                paths.append(tree_util.keystr(tuple(spec_path) + tuple(node_path) + tuple(path)))
    return axes, paths


def vmap(fun: Callable[P, Any], in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None) -> Callable[P, Any]:
    """Vectorize ``fun`` over a batch axis of its arguments.

    ``in_axes`` gives, per positional argument (or as a pytree prefix of the
    arguments), the axis to map over, or None for an argument that is shared
    by every example. ``out_axes`` places the batch axis in the outputs.
    ``axis_size`` sets the batch size when no argument is mapped.

    Example::

        per_example_grads = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
        fg.vmap(fnp.dot)(A, B)          # row-wise dot products
    """
    if not (in_axes is None or isinstance(in_axes, (int, tuple, list, dict))):
        raise TypeError(f"vmap: in_axes must be an int, None, or a tuple/pytree of them, got {in_axes!r}")

    @functools.wraps(fun)
    def vmapped(*args: P.args, **kwargs: P.kwargs) -> Any:
        if isinstance(in_axes, (tuple, list)) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap: in_axes has {len(in_axes)} entries but {getattr(fun, '__name__', 'the function')} "
                f"was called with {len(args)} positional arguments; give one entry per argument"
            )
        axes_prefix = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        axes, paths = _broadcast_prefix(axes_prefix, tuple(args), "in_axes")
        leaves, treedef = tree_util.tree_flatten(tuple(args))
        size = _batch_size(leaves, axes, paths, axis_size)
        trace = BatchTrace("vmap", size)
        with trace:
            boxed = []
            for leaf, axis, path in zip(leaves, axes, paths):
                if axis is None:
                    boxed.append(leaf)
                else:
                    nd = len(shape_of(leaf))
                    boxed.append(trace.new_input(leaf, axis % nd))
            out = fun(*tree_util.tree_unflatten(treedef, boxed), **kwargs)
        return _place_outputs(out, trace, size, out_axes)

    return vmapped


def _batch_size(leaves: list[Any], axes: list[Any], paths: list[str], axis_size: int | None) -> int:
    found: dict[int, str] = {}
    for leaf, axis, path in zip(leaves, axes, paths):
        if axis is None:
            continue
        if not isinstance(axis, int):
            raise TypeError(f"vmap: in_axes{path} must be an int or None, got {axis!r}")
        shape = shape_of(leaf)
        if not -len(shape) <= axis < len(shape):
            raise ValueError(
                f"vmap: in_axes{path}={axis} is out of range for an argument of shape {shape}"
            )
        found.setdefault(shape[axis], path)
    if len(found) > 1:
        detail = ", ".join(f"in_axes{p} maps an axis of size {n}" for n, p in found.items())
        raise ValueError(f"vmap got inconsistent sizes for the mapped axis: {detail}")
    if found:
        (size,) = found
        if axis_size is not None and axis_size != size:
            raise ValueError(f"vmap: axis_size={axis_size} but the mapped arguments have size {size}")
        return size
    if axis_size is None:
        raise ValueError("vmap: no argument is mapped (all in_axes are None); pass axis_size to set the batch size")
    return axis_size


def _place_outputs(out: Any, trace: BatchTrace, size: int, out_axes: Any) -> Any:
    import funcgrad.numpy as fnp

    leaves, treedef = tree_util.tree_flatten(out)
    if isinstance(out_axes, (tuple, list, dict)) or (isinstance(out_axes, int) and out_axes < 0):
        axes, paths = _broadcast_prefix(out_axes, out, "out_axes", batched=1)
    else:
        axes, paths = [out_axes] * len(leaves), [""] * len(leaves)
    placed = []
    for leaf, axis, path in zip(leaves, axes, paths):
        batched = isinstance(leaf, BatchBox) and leaf._trace is trace
        if axis is None:
            if batched:
                raise ValueError(
                    f"vmap: out_axes{path} is None but that output depends on the mapped inputs; "
                    f"give it an axis"
                )
            placed.append(leaf._value if type(leaf) is ConstBox else leaf)
            continue
        if batched:
            value, d = leaf._value, leaf._bdim
        else:  # does not depend on the batch: repeat it
            if type(leaf) is ConstBox:
                leaf = leaf._value
            value = fnp.broadcast_to(fnp.asarray(leaf), (size,) + shape_of(leaf))
            d = 0
        nd = len(shape_of(value))
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise TypeError(f"vmap: out_axes{path} must be an int or None, got {axis!r}")
        if not -nd <= axis < nd:
            # the batched output has one more axis than each example's: -nd <= axis < nd
            raise ValueError(
                f"vmap: out_axes{path}={axis} is out of range for an output of shape "
                f"{shape_of(leaf)} per example (batched shape {shape_of(value)}); it must be in "
                f"[{-nd}, {nd - 1}]"
            )
        target = axis % nd
        placed.append(value if target == d else fnp.moveaxis(value, d, target))
    return tree_util.tree_unflatten(treedef, placed)
