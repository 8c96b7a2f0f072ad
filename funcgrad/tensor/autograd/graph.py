"""``ft.autograd.graph``: graph nodes, saved-tensor hooks, gradient edges, multi-tensor gradient hooks."""

import threading
import weakref
from typing import Any, Callable, Sequence

from ..boxes import get_gradient_edge  # noqa: F401
from ..nodes import Node, RemovableHandle
from ..saved_tensors import SavedTensor
from ..saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks  # noqa: F401

__all__ = ["Node", "SavedTensor", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "get_gradient_edge", "register_multi_grad_hook", "to_dot", "to_svg"]


class _MultiHandle(RemovableHandle):
    """The handle of :func:`register_multi_grad_hook`: ``remove()`` takes off every tensor hook it placed."""

    __slots__ = ("_handles", "_removed")

    def __init__(self, handles: tuple[RemovableHandle, ...], removed: list[bool]):
        self._handles = handles
        self._removed = removed

    def remove(self) -> None:
        self._removed[0] = True
        for h in self._handles:
            h.remove()


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable[..., Any], *, mode: str = "all") -> RemovableHandle:
    """Call ``fn`` once per backward pass with the gradients of several tensors (``torch.autograd.graph``).

    ``mode="all"``: ``fn(grads)`` gets a list with one entry per tensor, the gradient
    computed in this pass or None for a tensor the pass did not reach (not in the graph,
    or not needed for the ``inputs=`` of ``backward``/``autograd.grad``); it runs when the
    pass has finished, and only in passes that reached at least one of the tensors.
    ``mode="any"``: ``fn(grad)`` gets the first of their gradients computed in the pass;
    tensors that do not require grad are skipped. ``fn``'s return value is ignored (the
    gradients are not replaced). Returns a handle whose ``remove()`` takes the hook off.

    Example::

        a = ft.ones(2, requires_grad=True)
        b = ft.ones(2, requires_grad=True)
        seen = []
        h = ft.autograd.graph.register_multi_grad_hook((a, b), lambda gs: seen.append([g is not None for g in gs]))
        (a * 2).sum().backward()   # seen == [[True, False]]
        h.remove()
    """
    from ..backward import BackwardPass, current_pass
    from ..tensor import Tensor

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    if not callable(fn):
        raise TypeError(f"register_multi_grad_hook expects a callable fn, got {type(fn).__name__}")
    tensors = tuple(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook expects a sequence of Tensors, got {type(t).__name__} at "
                            f"position {i}")
    lock = threading.Lock()
    removed = [False]

    def this_pass() -> BackwardPass:
        p = current_pass()
        if p is None:
            raise RuntimeError("expected this hook to be called inside a backward call")
        return p

    if mode == "all":
        n = len(tensors)
        pending: "weakref.WeakKeyDictionary[BackwardPass, list[Any]]" = weakref.WeakKeyDictionary()

        def flush(p: BackwardPass) -> None:
            grads = pending.pop(p)
            if not removed[0]:
                fn(grads)

        def gather(idx: int) -> Callable[[Any], None]:
            def hook(grad: Any) -> None:
                p = this_pass()
                with lock:
                    grads = pending.get(p)
                    first = grads is None
                    if grads is None:
                        grads = pending[p] = [None] * n
                grads[idx] = grad
                if first:
                    p.queue_callback(lambda: flush(p))
            return hook

        placed: list[RemovableHandle] = []
        try:
            for i, t in enumerate(tensors):
                placed.append(t.register_hook(gather(i)))
        except Exception:
            for h in placed:  # a tensor that cannot take a hook: leave none behind
                h.remove()
            raise
        handles = tuple(placed)
    else:
        ran: "weakref.WeakSet[BackwardPass]" = weakref.WeakSet()

        def first(grad: Any) -> None:
            p = this_pass()
            with lock:
                if p in ran:
                    return
                ran.add(p)
            fn(grad)

        handles = tuple(t.register_hook(first) for t in tensors if t._requires_grad)
    return _MultiHandle(handles, removed)


def _type_str(shape: tuple[Any, ...], dtype: object) -> str:
    name = str(dtype).replace("ft.", "").replace("torch.", "")
    return f"{name}[{','.join(str(d) for d in shape)}]"


def _escape(text: str) -> str:
    return text.replace('"', '\\"')


def to_dot(outputs: Any, rankdir: str = "TB") -> str:
    """The backward graph behind ``outputs`` (a tensor or a sequence of tensors) as Graphviz DOT.

    One box per ``grad_fn`` node (its ``name()`` and the names of the values it
    saved for backward), one ellipse per leaf that requires grad (its
    ``AccumulateGrad``, with shape and dtype), and the outputs; edges follow
    ``next_functions`` from inputs to outputs.

    Example::

        x = ft.randn(3, requires_grad=True)
        dot = ft.autograd.graph.to_dot((x * x).sum())
    """
    tensors = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    lines = [
        "digraph funcgrad_tensor {",
        f"  rankdir={rankdir};",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
    ]
    ids: dict[Any, str] = {}
    stack = []

    def node_id(fn: Any) -> str:
        """``fn``'s DOT id; the first time it is met, it is queued for drawing."""
        if fn not in ids:
            ids[fn] = f"n{len(ids)}"
            stack.append(fn)
        return ids[fn]

    for k, t in enumerate(tensors):
        oid = f"out{k}"
        label = f"output {k}\\n{_type_str(tuple(t.shape), t.dtype)}"
        lines.append(f'  {oid} [label="{_escape(label)}", shape=ellipse, style=filled, fillcolor="#d1e7dd"];')
        fn = t.grad_fn
        if fn is not None:
            lines.append(f"  {node_id(fn)} -> {oid};")
    while stack:
        fn = stack.pop()
        nid = ids[fn]
        variable = getattr(fn, "variable", None)
        if variable is not None:
            label = f"leaf\\n{_type_str(tuple(variable.shape), variable.dtype)}"
            lines.append(f'  {nid} [label="{_escape(label)}", shape=ellipse, style=filled, fillcolor="#cfe2ff"];')
        else:
            saved = sorted({n[len("_saved_"):] for n in dir(fn) if n.startswith("_saved_")})
            label = fn.name() + (f"\\nsaves {', '.join(saved)}" if saved else "")
            lines.append(f'  {nid} [label="{_escape(label)}", shape=box, style="rounded,filled", fillcolor="#fff8e1"];')
        for k, (child, _) in enumerate(fn.next_functions):
            if child is not None:
                lines.append(f'  {node_id(child)} -> {nid} [label="{k}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(outputs: Any, dot: str = "dot") -> str:
    """:func:`to_dot` rendered by the Graphviz ``dot`` executable (clear error without it)."""
    import shutil
    import subprocess

    exe = shutil.which(dot)
    if exe is None:
        raise RuntimeError(
            f"rendering SVG needs the Graphviz '{dot}' executable (e.g. apt-get install graphviz); "
            f"to_dot() gives the DOT text without it"
        )
    return subprocess.run([exe, "-Tsvg"], input=to_dot(outputs), capture_output=True, text=True, check=True).stdout
