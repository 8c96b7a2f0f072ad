"""fg.make_graph: the recorded tape as a graph, DOT text and SVG."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.visualize import Graph, make_graph

HAS_DOT = shutil.which("dot") is not None

NODE = re.compile(r'^  (\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$', re.M)
EDGE = re.compile(r'^  (\w+) -> (\w+)(?: \[label="([^"]*)"\])?;$', re.M)


def parse(dot: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str, str]]]:
    """{id: (label, attributes)} and [(src, dst, label)] of our DOT output."""
    nodes = {m[1]: (m[2].replace("\\n", "\n"), m[3]) for m in NODE.finditer(dot)}
    edges = [(m[1], m[2], m[3] or "") for m in EDGE.finditer(dot)]
    return nodes, edges


def prim_ids(nodes: dict) -> list[str]:
    return [k for k in nodes if re.fullmatch(r"p\d+", k)]


def test_chain_nodes_edges_shapes_dtypes():
    x = np.linspace(0.1, 1.0, 6).reshape(3, 2).astype(np.float32)
    g = make_graph(lambda x: fnp.sum(fnp.sin(x) * 2.0))(x)
    assert isinstance(g, Graph)
    assert [n.name for n in g.primitive_calls] == ["sin", "multiply", "sum"]
    dot = g.to_dot()
    assert dot.startswith("digraph funcgrad {") and dot.rstrip().endswith("}")
    nodes, edges = parse(dot)
    assert len(prim_ids(nodes)) == 3
    assert set(nodes) == {"in0", "p0", "p1", "p2", "out0"}
    assert sorted((s, d) for s, d, _ in edges) == sorted(
        [("in0", "p0"), ("p0", "p1"), ("p1", "p2"), ("p2", "out0")]
    )
    assert nodes["in0"][0] == "x\nf32[3,2]"
    assert nodes["p0"][0].startswith("sin -> f32[3,2]")
    assert "saves arg0: f32[3,2]" in nodes["p0"][0] and "ans:" not in nodes["p0"][0]  # sin' reads x only
    assert nodes["p2"][0].startswith("sum -> f32[]")
    assert nodes["out0"][0] == "output\nf32[]"
    assert "y=2.0" in nodes["p1"][0]  # the Python scalar is a parameter, not a node
    assert "#cfe2ff" in nodes["in0"][1] and "#d1e7dd" in nodes["out0"][1]


def test_edges_name_argument_positions_and_fan_out():
    x = np.array([0.5, 1.5])
    g = make_graph(lambda x, y: fnp.sum(fnp.subtract(y, x * x)))(x, np.array([2.0, 3.0]))
    nodes, edges = parse(g.to_dot())
    by_name = {nodes[k][0].split(" ->")[0]: k for k in prim_ids(nodes)}
    mul, sub = by_name["multiply"], by_name["subtract"]
    # x feeds both arguments of multiply; y is argument 0 of subtract
    assert sorted(e for e in edges if e[1] == mul) == [("in0", mul, "arg0"), ("in0", mul, "arg1")]
    assert ("in1", sub, "arg0") in edges and (mul, sub, "arg1") in edges
    assert nodes["in1"][0].startswith("y\n")


def test_multiple_results_are_one_node_with_indexed_edges():
    w = np.array([[2.0, 0.5], [0.3, 1.0], [0.1, 0.2]])
    g = make_graph(lambda w: fnp.sum(fnp.linalg.qr(w)[1]) + fnp.sum(fnp.linalg.qr(w)[0][0]))(w)
    qr = [n for n in g.primitive_calls if n.name == "qr"]
    assert len(qr) == 2
    assert qr[0].shapes == ((3, 2), (2, 2)) and qr[0].type_str == "(f64[3,2], f64[2,2])"
    nodes, edges = parse(g.to_dot())
    out_labels = sorted(lab for s, _, lab in edges if s in (qr[0].id, qr[1].id))
    assert out_labels == ["[0]", "[1]"]
    assert len(prim_ids(nodes)) == len(g.primitive_calls)
    assert "ans[0]: f64[3,2], ans[1]: f64[2,2]" in nodes[qr[0].id][0]


def test_constants_unused_calls_and_constant_outputs():
    def f(x, c):
        a = fnp.zeros(3)
        a[1] = x[0]              # an in-place write into a constant array
        fnp.exp(x)               # recorded but never used
        return fnp.sum(a * c), np.ones(2), x

    g = make_graph(f, argnums=0)(np.array([0.2, 0.4, 0.6]), np.array([1.0, 2.0, 3.0]))
    consts = g.nodes_of_kind("constant")
    assert sorted(n.name for n in consts) == ["c (constant)", "constant"]
    assert [n.name for n in g.primitive_calls if not n.used] == ["exp"]
    nodes, edges = parse(g.to_dot())
    exp_id = next(n.id for n in g.primitive_calls if n.name == "exp")
    assert "dashed" in nodes[exp_id][1] and "(result unused)" in nodes[exp_id][0]
    assert [n.used for n in g.nodes_of_kind("output")] == [True, False, True]
    assert "constant: carries no derivative" in nodes["out1"][0]
    assert not any(d == "out1" for _, d, _ in edges)
    assert ("in0", "out2", "") in edges  # an input returned as it is
    index_set = next(n for n in g.primitive_calls if n.name == "index_set")
    assert ("idx", "(1,)") in index_set.params
    const_zero = next(n.id for n in consts if n.name == "constant")
    assert (const_zero, index_set.id, "arg0") in edges


def test_pytree_inputs_argnums_and_kwargs():
    params = {"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32), "n": 4}

    def f(p, x, scale=1.0):
        return fnp.sum((x @ p["w"] + p["b"]) * scale) * p["n"]

    g = make_graph(f)(params, np.ones((5, 2), np.float32), scale=0.5)
    assert [n.name for n in g.nodes_of_kind("input")] == ["p['b']", "p['w']", "x"]
    g0 = make_graph(f, argnums=0)(params, np.ones((5, 2), np.float32))
    assert [n.name for n in g0.nodes_of_kind("input")] == ["p['b']", "p['w']"]
    assert [n.name for n in g0.nodes_of_kind("constant")] == ["x (constant)"]
    assert all(d == "float32" for n in g.nodes for d in n.dtypes)


def test_nested_transforms_are_recorded():
    x = np.linspace(0.1, 1.0, 4)
    f = lambda y: fnp.sum(fnp.sin(y) ** 2)  # noqa: E731
    forward = make_graph(f)(x)
    inner = make_graph(fg.grad(f))(x)  # the forward and backward pass of grad, recorded
    assert len(forward.primitive_calls) == 3
    assert len(inner.primitive_calls) > len(forward.primitive_calls)
    assert "cos" in [n.name for n in inner.primitive_calls]
    assert [n.used for n in inner.nodes_of_kind("output")] == [True]


def test_checkpoint_and_scan_are_single_nodes():
    x = np.linspace(0.1, 1.0, 3)
    g = make_graph(lambda x: fnp.sum(fg.checkpoint(lambda y: fnp.tanh(fnp.sin(y)))(x)))(x)
    assert [n.name.split("[")[0] for n in g.primitive_calls] == ["checkpoint", "sum"]
    step = lambda h, xs: (fnp.tanh(h + xs), fnp.sum(h))  # noqa: E731
    g = make_graph(lambda h: fg.scan(step, h, np.ones((5, 3)))[1])(x)
    assert [n.name for n in g.primitive_calls] == ["scan"]


def test_inside_an_outer_transform():
    seen = {}

    def outer(x):
        seen["g"] = make_graph(lambda y: fnp.sin(y) * x)(np.ones(3))
        return fnp.sum(x ** 2)

    assert np.allclose(fg.grad(outer)(np.array([1.0, 2.0, 3.0])), [2.0, 4.0, 6.0])
    g = seen["g"]
    assert [n.name for n in g.primitive_calls] == ["sin", "multiply"]
    assert [n.type_str for n in g.nodes_of_kind("constant")] == ["f64[3]"]  # the outer x


UNARY = {"sin": fnp.sin, "tanh": fnp.tanh, "exp": fnp.exp, "negative": fnp.negative, "square": fnp.square}


@settings(max_examples=30, deadline=None)
@given(
    ops=st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=6),
    shape=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_random_chains(ops, shape, dtype):
    def f(x):
        for name in ops:
            x = UNARY[name](x)
        return x

    x = np.full(shape, 0.3, dtype=dtype)
    g = make_graph(f)(x)
    assert [n.name for n in g.primitive_calls] == ops
    nodes, edges = parse(g.to_dot())
    assert len(prim_ids(nodes)) == len(ops)
    chain = ["in0"] + [f"p{k}" for k in range(len(ops))] + ["out0"]
    assert [(s, d) for s, d, _ in edges] == list(zip(chain, chain[1:]))
    tstr = f"{'f32' if dtype == np.float32 else 'f64'}[{','.join(map(str, shape))}]"
    for k, name in enumerate(ops):
        assert nodes[f"p{k}"][0].startswith(f"{name} -> {tstr}")
    # saved bytes: each distinct array a rule reads, once (the tape keeps only those)
    kept = set()
    for k, node in enumerate(g.primitive_calls):
        for what, _, _ in node.saved:
            kept.add(k if what == "ans" else k - 1)  # arg0 of call k is the result of call k-1
    assert g.saved_bytes == len(kept) * x.nbytes


def test_topological_order_of_nodes():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))

    def f(x):
        y = fnp.tanh(a @ x)
        z = fnp.concatenate([y, fnp.sin(x)])
        return fnp.sum(z * z) + fnp.max(x)

    g = make_graph(f)(rng.standard_normal(3))
    order = {n.id: i for i, n in enumerate(g.nodes)}
    assert all(order[e.src] < order[e.dst] for e in g.edges)
    ids = {n.id for n in g.nodes}
    assert all(e.src in ids and e.dst in ids for e in g.edges)


def test_dot_escapes_names():
    @fg.primitive
    def weird(x):
        return x * 1.0

    weird.primitive.name = 'we"ird\\name'
    fg.defvjp(weird, lambda g, ans, x: g)
    dot = make_graph(lambda x: weird(x))(np.ones(2)).to_dot()
    assert 'label="we\\"ird\\\\name -> f64[2]' in dot
    if HAS_DOT:
        assert "<svg" in make_graph(lambda x: weird(x))(np.ones(2)).to_svg()


def test_rankdir_and_errors():
    x = np.ones(2)
    g = make_graph(fnp.sin)(x)
    assert "rankdir=LR;" in g.to_dot("LR")
    with pytest.raises(ValueError, match="rankdir"):
        g.to_dot("sideways")
    with pytest.raises(TypeError, match="expected a function"):
        make_graph(3)
    with pytest.raises(TypeError, match="make_graph\\(f\\)\\(\\*args\\)"):
        make_graph(fnp.sin)()
    with pytest.raises(ValueError, match="argnums"):
        make_graph(fnp.sin, argnums=2)(x)
    with pytest.raises(RuntimeError, match="Graphviz.*not found.*to_dot"):
        g.to_svg(dot="no-such-graphviz-dot")
    assert "1 input(s), 1 primitive call(s), 1 output(s)" in repr(g)


def test_repr_svg_without_graphviz(monkeypatch):
    import funcgrad.visualize as viz

    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    g = make_graph(fnp.sin)(np.ones(2))
    assert g._repr_svg_() is None
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        g.to_svg()


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot executable is not installed")
def test_svg(tmp_path):
    g = make_graph(lambda x: fnp.sum(fnp.tanh(x)))(np.ones(3))
    svg = g.to_svg()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "tanh" in svg and "f64[3]" in svg
    assert g._repr_svg_() == svg
    g.save(str(tmp_path / "g.svg"))
    g.save(str(tmp_path / "g.dot"))
    assert (tmp_path / "g.svg").read_text() == svg
    assert (tmp_path / "g.dot").read_text() == g.to_dot()


def test_values_and_inputs_untouched():
    x = np.array([0.1, 0.2])
    before = x.copy()

    def f(x):
        x[0] = 5.0  # rebinds the traced box, never the caller's array
        return fnp.sum(x)

    g = make_graph(f)(x)
    assert np.array_equal(x, before)
    assert [n.name for n in g.primitive_calls] == ["index_set", "sum"]
    nodes, edges = parse(g.to_dot())
    assert ("in0", "p0", "") in edges and ("p0", "p1", "") in edges


def test_exported_as_fg_make_graph():
    assert fg.make_graph is make_graph


def test_docs_page_shows_what_its_code_produces(monkeypatch):
    """docs/graphs.md: the DOT text it shows is what its own example returns, and the
    picture it shows is committed."""
    import pathlib

    monkeypatch.setattr(fg, "make_graph", make_graph, raising=False)  # test_docs.py checks the export
    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "graphs.md"
    text = page.read_text()
    namespace: dict = {}
    exec(compile(re.findall(r"```python\n(.*?)```", text, re.S)[0], "graphs.md", "exec"), namespace)
    shown = re.findall(r"```dot\n(.*?)```", text, re.S)
    assert shown == [namespace["dot"]]
    image = re.search(r"!\[[^\]]*\]\(([^)]+\.svg)\)", text)[1]
    svg = (page.parent / image).read_text()
    assert "<svg" in svg and all(n.name.split(" ")[0] in svg for n in namespace["g"].nodes)
