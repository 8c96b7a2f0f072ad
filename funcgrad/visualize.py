"""Graph visualization: the reverse-mode tape of a function as a Graphviz graph.

``fg.make_graph(f)(*args)`` runs ``f`` once under a reverse-mode trace, exactly
as ``fg.grad`` or ``fg.vjp`` would, and returns a :class:`Graph` of what was
recorded: one node per primitive call (its name, the shape and dtype of what
it returned, the non-array parameters it was called with, and the arrays its
node keeps for the backward pass), the inputs (the differentiated leaves of
the arguments), constant arrays that entered the computation, and the
outputs. Edges follow the data flow, from a value to the calls that use it.

Example::

    import numpy as np
    import funcgrad as fg
    import funcgrad.numpy as fnp

    g = fg.make_graph(lambda w, x: fnp.sum(fnp.tanh(x @ w)))(np.ones((3, 2)), np.ones((4, 3)))
    print(g.to_dot())        # Graphviz DOT text
    g.to_svg()               # SVG text; needs Graphviz's ``dot`` executable
    g                        # a notebook shows the SVG (through _repr_svg_)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import shutil
import subprocess
from typing import Any, Callable, Sequence

import numpy as np

from .core.trace import shape_of, unbox_all
from . import tree_util
from .core import Box, ReverseTrace, VJPBox
from .core.reverse import ArraySpec, VJPNode, tape_order
from .core.trace import Primitive

__all__ = ["make_graph", "Graph", "GraphNode", "GraphEdge"]


# --------------------------------------------------------------------------
# the graph: plain data, no arrays


@dataclasses.dataclass(frozen=True)
class GraphNode:
    """One node of a :class:`Graph`.

    ``kind`` is ``"input"``, ``"primitive"``, ``"constant"`` or ``"output"``.
    ``name`` is the primitive's name, or the input's / output's path.
    ``shapes`` and ``dtypes`` describe the value (one entry per result of a
    primitive with several results). ``params`` holds the non-array arguments
    of a primitive call as ``(parameter name, formatted value)``, ``saved`` the
    arrays its tape node keeps for the backward pass as ``(what, shape,
    dtype)`` with ``what`` ``"arg<i>"`` (positional argument ``i``) or
    ``"ans"`` (``"ans[k]"`` for several results). ``used`` is False for a
    primitive call whose result never reaches an output, and for an output
    that carries no derivative (it is not traced: a constant, or the result
    of a primitive without a derivative such as ``argmax``).
    """

    id: str
    kind: str
    name: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    params: tuple[tuple[str, str], ...] = ()
    saved: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    used: bool = True

    @property
    def type_str(self) -> str:
        """``f64[3,2]``, or ``(f64[3,2], f64[2,2])`` for several results."""
        types = [_type_str(s, d) for s, d in zip(self.shapes, self.dtypes)]
        return types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"


@dataclasses.dataclass(frozen=True)
class GraphEdge:
    """Data flow from node ``src`` to node ``dst``.

    ``argnum`` is the position of the argument of ``dst`` that receives the
    value (None for an edge into an output); ``out_index`` picks one result
    of a ``src`` with several results (None otherwise).
    """

    src: str
    dst: str
    argnum: int | None = None
    out_index: int | None = None


class Graph:
    """The recorded tape of one call of a function; see :func:`make_graph`.

    ``nodes`` lists inputs, constants, primitive calls (in the order they ran)
    and outputs; ``edges`` the data flow between them. Render with
    :meth:`to_dot` (Graphviz DOT text) or :meth:`to_svg`.
    """

    def __init__(self, name: str, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], saved_bytes: int):
        self.name = name
        self.nodes: list[GraphNode] = list(nodes)
        self.edges: list[GraphEdge] = list(edges)
        #: bytes held by the tape for the backward pass (each array counted once)
        self.saved_bytes = saved_bytes

    def nodes_of_kind(self, kind: str) -> list[GraphNode]:
        """The nodes of one kind: ``"input"``, ``"primitive"``, ``"constant"`` or ``"output"``."""
        return [n for n in self.nodes if n.kind == kind]

    @property
    def primitive_calls(self) -> list[GraphNode]:
        """The primitive calls that were recorded, in the order they ran."""
        return self.nodes_of_kind("primitive")

    def __repr__(self) -> str:
        counts = {k: len(self.nodes_of_kind(k)) for k in ("input", "primitive", "output")}
        return (
            f"<Graph of {self.name}: {counts['input']} input(s), {counts['primitive']} primitive "
            f"call(s), {counts['output']} output(s), {_bytes_str(self.saved_bytes)} saved>"
        )

    # -- rendering ---------------------------------------------------------

    def to_dot(self, rankdir: str = "TB") -> str:
        """The graph as Graphviz DOT text.

        Inputs are blue ellipses, outputs green ones, constants grey notes and
        primitive calls boxes that list the result type, the parameters and
        what the node saves for the backward pass. Calls whose result reaches
        no output are dashed. ``rankdir`` is Graphviz's layout direction
        (``"TB"`` top to bottom, ``"LR"`` left to right).

        Example::

            dot = fg.make_graph(fnp.sin)(np.ones(3)).to_dot()
            pathlib.Path("sin.dot").write_text(dot)   # then: dot -Tpng sin.dot -o sin.png
        """
        if rankdir not in ("TB", "LR", "BT", "RL"):
            raise ValueError(f"to_dot: rankdir must be 'TB', 'LR', 'BT' or 'RL', got {rankdir!r}")
        n_prims = len(self.primitive_calls)
        title = (
            f"{self.name}: {n_prims} primitive call{'s' if n_prims != 1 else ''}, "
            f"{_bytes_str(self.saved_bytes)} saved for the backward pass"
        )
        lines = [
            "digraph funcgrad {",
            f"  rankdir={rankdir};",
            f"  label={_quote(title)};",
            "  labelloc=t;",
            '  fontname="Helvetica"; fontsize=11;',
            '  node [fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
        ]
        for n in self.nodes:
            lines.append(f"  {n.id} [{_node_attrs(n)}];")
        arity: dict[str, int] = {}  # edges into each primitive call
        for e in self.edges:
            if e.argnum is not None:
                arity[e.dst] = arity.get(e.dst, 0) + 1
        for e in self.edges:
            label = []
            if e.out_index is not None:
                label.append(f"[{e.out_index}]")
            if e.argnum is not None and (arity.get(e.dst, 0) > 1 or e.argnum > 0):
                label.append(f"arg{e.argnum}")
            attrs = f" [label={_quote(' '.join(label))}]" if label else ""
            lines.append(f"  {e.src} -> {e.dst}{attrs};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_svg(self, rankdir: str = "TB", *, dot: str = "dot") -> str:
        """The graph rendered as SVG text by Graphviz's ``dot`` executable.

        ``dot`` names the executable (or gives its path). Raises RuntimeError
        when it cannot be found or fails.
        """
        exe = shutil.which(dot)
        if exe is None:
            raise RuntimeError(
                f"to_svg needs Graphviz's '{dot}' executable, which was not found on PATH. Install "
                f"Graphviz (apt-get install graphviz, brew install graphviz or conda install "
                f"graphviz), or pass dot='/path/to/dot'; to_dot() works without it"
            )
        proc = subprocess.run([exe, "-Tsvg"], input=self.to_dot(rankdir), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"to_svg: '{exe} -Tsvg' failed (exit {proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def save(self, path: str, rankdir: str = "TB") -> None:
        """Write the graph to ``path``: SVG for a ``.svg`` name, DOT text otherwise."""
        text = self.to_svg(rankdir) if str(path).endswith(".svg") else self.to_dot(rankdir)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)

    def _repr_svg_(self) -> str | None:
        """Notebook display; None (plain repr) when Graphviz is not installed."""
        if shutil.which("dot") is None:
            return None
        try:
            return self.to_svg()
        except RuntimeError:
            return None


# --------------------------------------------------------------------------
# recording


class _RecordingTrace(ReverseTrace):
    """A reverse trace that also remembers every node it makes, in order."""

    __slots__ = ("nodes", "shown_args")

    def __init__(self, name: str):
        super().__init__(name, min_drop_bytes=0)  # show what the rules read, whatever the size
        self.nodes: list[VJPNode] = []
        # the arguments as given, for constants whose values the node did not keep
        self.shown_args: dict[VJPNode, list[Any]] = {}

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        given = list(args)
        out = super().process(prim, args, kwargs, argnums)
        node = None
        if isinstance(out, VJPBox):
            node = out._node
        elif isinstance(out, tuple) and out and isinstance(out[0], VJPBox) and out[0]._node.out_index is not None:
            node = out[0]._node.parents[0]
        if node is not None:
            self.nodes.append(node)
            self.shown_args[node] = [
                given[i] if isinstance(a, ArraySpec) else a for i, a in enumerate(node.args)
            ]
        return out


def make_graph(fun: Callable[..., Any], argnums: int | Sequence[int] | None = None) -> Callable[..., Graph]:
    """A function that runs ``fun`` once and returns the :class:`Graph` it recorded.

    ``make_graph(fun)(*args, **kwargs)`` traces ``fun`` in reverse mode as
    ``fg.vjp`` does. The floating-point and complex leaves of the positional
    arguments named by ``argnums`` (default: all of them) are the inputs;
    everything else (integer leaves, keyword arguments) is passed unchanged
    and treated as a constant. Primitives without a derivative (comparisons,
    ``argmax``, ...) are not recorded, as in ``fg.grad``.

    Example::

        g = fg.make_graph(lambda x: fnp.sum(fnp.sin(x) ** 2))(np.ones(3))
        [n.name for n in g.primitive_calls]      # ['sin', 'power', 'sum']
        print(g.to_dot())
    """
    if not callable(fun):
        raise TypeError(f"make_graph: expected a function, got {type(fun).__name__}")

    def graph_of(*args: Any, **kwargs: Any) -> Graph:
        if not args:
            raise TypeError("make_graph: call the result with the function's arguments: make_graph(f)(*args)")
        nums = _argnums(argnums, len(args))
        names = _arg_names(fun, len(args))
        trace = _RecordingTrace("make_graph")
        inputs: list[tuple[str, VJPNode]] = []
        # names for arrays passed in but not differentiated (shown as constants)
        known: dict[int, str] = {}
        for n, a in enumerate(args):
            for path, leaf in tree_util.tree_flatten_with_path(a)[0]:
                known[id(leaf)] = names[n] + tree_util.keystr(path)
        for key, a in kwargs.items():
            for path, leaf in tree_util.tree_flatten_with_path(a)[0]:
                known[id(leaf)] = key + tree_util.keystr(path)
        with trace:
            full = list(args)
            for n in nums:
                pairs, treedef = tree_util.tree_flatten_with_path(args[n])
                leaves = []
                for path, leaf in pairs:
                    if _is_float(leaf):
                        box = trace.new_input(leaf)
                        inputs.append((names[n] + tree_util.keystr(path), box._node))
                        leaves.append(box)
                    else:
                        leaves.append(leaf)
                full[n] = tree_util.tree_unflatten(treedef, leaves)
            out = fun(*full, **kwargs)
        out_pairs, _ = tree_util.tree_flatten_with_path(out)
        outputs = [("output" + tree_util.keystr(path), leaf) for path, leaf in out_pairs]
        return _build(_fname(fun), trace, inputs, outputs, known)

    graph_of.__name__ = f"make_graph_of_{_fname(fun)}"
    return graph_of


def _build(name: str, trace: _RecordingTrace, inputs: list[Any], outputs: list[Any], known: dict[int, str]) -> Graph:
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    ids: dict[VJPNode, str] = {}
    saved_ids: dict[int, int] = {}

    for k, (path, node) in enumerate(inputs):
        ids[node] = f"in{k}"
        nodes.append(GraphNode(f"in{k}", "input", path, (shape_of(node.ans),), (_dtype_str(node.ans),)))

    out_nodes = [leaf._node for _, leaf in outputs if isinstance(leaf, VJPBox) and leaf._trace is trace]
    reachable = tape_order(out_nodes) if out_nodes else {}
    const_ids: dict[int, str] = {}
    for k, node in enumerate(trace.nodes):
        pid = ids[node] = f"p{k}"
        prim = node.prim
        assert prim is not None  # the trace records primitive calls only
        ans = node.ans
        results = ans if prim.multiple_results else (ans,)
        pnames = _param_names(prim, len(node.args))
        traced = dict(zip(node.argnums, node.parents))
        params, saved = [], []
        shown = trace.shown_args.get(node, node.args)
        for i, a in enumerate(shown):
            label = pnames[i]
            parent = traced.get(i)
            if parent is not None:
                src, out_index = _source(parent, ids)
                edges.append(GraphEdge(src, pid, i, out_index))
            elif _is_array(a):
                if np.ndim(unbox_all(a)) == 0 and not isinstance(a, Box):
                    params.append((label, _short(unbox_all(a))))  # a scalar constant
                    continue
                cid = const_ids.get(id(a))
                if cid is None:
                    cid = const_ids[id(a)] = f"c{len(const_ids)}"
                    cname = known.get(id(a))
                    cname = "constant" if cname is None else f"{cname} (constant)"
                    nodes.append(GraphNode(cid, "constant", cname, (shape_of(a),), (_dtype_str(a),)))
                edges.append(GraphEdge(cid, pid, i, None))
            else:
                if a is None or _is_default(prim, label, a):
                    continue
                params.append((label, _short(a)))
                continue
            if not isinstance(node.args[i], ArraySpec):  # only the shape was kept: nothing saved
                saved.append((f"arg{i}", shape_of(a), _dtype_str(a)))
                saved_ids[id(a)] = _nbytes(a)
        for key, v in (node.kwargs or {}).items():
            if v is not None:
                params.append((key, _short(v)))
        for j, r in enumerate(results):
            if not isinstance(r, ArraySpec):
                saved.append(("ans" if len(results) == 1 else f"ans[{j}]", shape_of(r), _dtype_str(r)))
                saved_ids[id(r)] = _nbytes(r)
        nodes.append(GraphNode(
            pid, "primitive", prim.name, tuple(shape_of(r) for r in results), tuple(_dtype_str(r) for r in results),
            tuple(params), tuple(saved), node in reachable,
        ))

    for k, (path, leaf) in enumerate(outputs):
        oid = f"out{k}"
        is_traced = isinstance(leaf, VJPBox) and leaf._trace is trace
        nodes.append(GraphNode(oid, "output", path, (shape_of(leaf),), (_dtype_str(leaf),), used=is_traced))
        if is_traced:
            src, out_index = _source(leaf._node, ids)
            edges.append(GraphEdge(src, oid, None, out_index))
    return Graph(name, nodes, edges, sum(saved_ids.values()))


def _source(node: VJPNode, ids: dict[VJPNode, str]) -> tuple[str, int | None]:
    """The graph node a tape node's value comes from (one result of a multi-result call)."""
    if node.prim is None and node.out_index is not None:
        return ids[node.parents[0]], node.out_index
    return ids[node], None


# --------------------------------------------------------------------------
# helpers


def _argnums(argnums: int | Sequence[int] | None, nargs: int) -> tuple[int, ...]:
    if argnums is None:
        return tuple(range(nargs))
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not isinstance(n, (int, np.integer)) or not -nargs <= n < nargs:
            raise ValueError(f"make_graph: argnums={argnums!r} is out of range for {nargs} positional argument(s)")
    return tuple(sorted({n % nargs for n in nums}))


def _arg_names(fun: Callable[..., Any], nargs: int) -> list[str]:
    names = [f"arg{i}" for i in range(nargs)]
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(params[:nargs]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
        elif p.kind == p.VAR_POSITIONAL:
            for j in range(i, nargs):
                names[j] = f"{p.name}[{j - i}]"
            break
        else:
            break
    return names


@functools.lru_cache(maxsize=1024)
def _positional_params(raw: Callable[..., Any]) -> tuple[tuple[str, Any], ...]:
    """(name, default) of a raw function's leading positional parameters."""
    named = []
    try:
        for p in inspect.signature(raw).parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            named.append((p.name, p.default))
    except (TypeError, ValueError):
        pass
    return tuple(named)


def _param_names(prim: Primitive, nargs: int) -> list[str]:
    """Names of a primitive's positional parameters (``arg{i}`` where unnamed)."""
    named = _positional_params(prim.raw)
    return [named[i][0] if i < len(named) else f"arg{i}" for i in range(nargs)]


def _is_default(prim: Primitive, name: str, value: Any) -> bool:
    """True when ``value`` is the default of the primitive's parameter ``name``."""
    for n, d in _positional_params(prim.raw):
        if n == name:
            return d is not inspect.Parameter.empty and type(d) is type(value) and d == value
    return False


def _fname(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _is_array(x: Any) -> bool:
    if isinstance(x, Box):
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _is_float(leaf: Any) -> bool:
    if isinstance(leaf, (bool, int, str, bytes)) or leaf is None:
        return False
    if isinstance(leaf, (float, complex)):
        return True
    d = getattr(unbox_all(leaf), "dtype", None)
    return d is not None and np.dtype(d).kind in "fc"


def _dtype_str(x: Any) -> str:
    v = unbox_all(x)
    d = getattr(v, "dtype", None)
    try:
        return str(np.dtype(d) if d is not None else np.result_type(v))
    except TypeError:
        return type(v).__name__


_SHORT = {"float": "f", "complex": "c", "int": "i", "uint": "u", "bool": "bool"}


def _type_str(shape: tuple[int, ...], dtype: str) -> str:
    """JAX-style ``f64[3,2]``."""
    for long, short in _SHORT.items():
        if dtype.startswith(long) and dtype[len(long):].isdigit():
            dtype = short + dtype[len(long):]
            break
    return f"{dtype}[{','.join(str(s) for s in shape)}]"


def _nbytes(x: Any) -> int:
    v = unbox_all(x)
    n = getattr(v, "nbytes", None)
    return int(n) if n is not None else 0


def _bytes_str(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} GiB"  # pragma: no cover


def _short(v: Any, limit: int = 32) -> str:
    if _is_array(v):
        return _type_str(shape_of(v), _dtype_str(v)) if np.ndim(unbox_all(v)) else repr(unbox_all(v).item())
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_STYLE = {
    "input": 'shape=ellipse, style=filled, fillcolor="#cfe2ff"',
    "output": 'shape=ellipse, style=filled, fillcolor="#d1e7dd"',
    "constant": 'shape=note, style=filled, fillcolor="#eeeeee", fontcolor="#555555"',
    "primitive": 'shape=box, style="rounded,filled", fillcolor="#fff8e1"',
}


def _node_attrs(n: GraphNode) -> str:
    if n.kind == "primitive":
        lines = [f"{n.name} -> {n.type_str}"]
        if n.params:
            lines.append(", ".join(f"{k}={v}" for k, v in n.params))
        if n.saved:
            lines.append("saves " + ", ".join(f"{w}: {_type_str(s, d)}" for w, s, d in n.saved))
        style = _STYLE["primitive"]
        if not n.used:
            lines.append("(result unused)")
            style = 'shape=box, style="rounded,dashed", color="#999999", fontcolor="#777777"'
    else:
        lines = [n.name, n.type_str]
        if n.kind == "output" and not n.used:
            lines.append("(constant: carries no derivative)")
        style = _STYLE[n.kind]
    return f"label={_quote(chr(10).join(lines))}, {style}"
