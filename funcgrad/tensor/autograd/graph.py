"""``ft.autograd.graph``: graph nodes, saved-tensor hooks, gradient edges."""

from typing import Any

from ..graph import (  # noqa: F401
    Node, RemovableHandle, SavedTensor, disable_saved_tensors_hooks, get_gradient_edge, save_on_cpu,
    saved_tensors_hooks,
)

__all__ = ["Node", "SavedTensor", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "get_gradient_edge", "to_dot", "to_svg"]


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
    ids: dict[Any, Any] = {}
    stack = []
    for k, t in enumerate(tensors):
        oid = f"out{k}"
        label = f"output {k}\\n{_type_str(tuple(t.shape), t.dtype)}"
        lines.append(f'  {oid} [label="{_escape(label)}", shape=ellipse, style=filled, fillcolor="#d1e7dd"];')
        fn = t.grad_fn
        if fn is None:
            continue
        if fn not in ids:
            ids[fn] = f"n{len(ids)}"
            stack.append(fn)
        lines.append(f"  {ids[fn]} -> {oid};")
    while stack:
        fn = stack.pop()
        nid = ids[fn]
        variable = getattr(fn, "variable", None)
        if variable is not None:
            label = f"leaf\\n{_type_str(tuple(variable.shape), variable.dtype)}"
            lines.append(f'  {nid} [label="{_escape(label)}", shape=ellipse, style=filled, fillcolor="#cfe2ff"];')
        else:
            saved = sorted({n[len("_saved_"):] for n in dir(fn) if n.startswith("_saved_") and n != "_saved_names"})
            label = fn.name() + (f"\\nsaves {', '.join(saved)}" if saved else "")
            lines.append(f'  {nid} [label="{_escape(label)}", shape=box, style="rounded,filled", fillcolor="#fff8e1"];')
        for k, (child, _) in enumerate(fn.next_functions):
            if child is None:
                continue
            if child not in ids:
                ids[child] = f"n{len(ids)}"
                stack.append(child)
            lines.append(f'  {ids[child]} -> {nid} [label="{k}"];')
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
