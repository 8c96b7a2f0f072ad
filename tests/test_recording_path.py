"""Issue 30: one rule dispatch for every walk (``VJPNode.run_rules``), primitives named at their
declaration (``front_of``), and the Tensor layer's per-primitive facts keyed by the primitive."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft
from funcgrad.core import Primitive, defprimitive, get_primitive
from funcgrad.core.declare import front_of
from funcgrad.core.reverse import VJPNode
from funcgrad.tensor import _tensor_shape, tensor_trace as _trace, views as _views
from funcgrad.tensor import torch_names
from funcgrad.tensor.boxes import as_numpy_box, as_tensor_box
from funcgrad.tensor.prim_node import PrimNode


def _scale_raw(x, y):
    return x * y


scale = defprimitive(_scale_raw, name="scale_for_run_rules", vjp=(lambda g, ans, x, y: g * y, None))


def test_run_rules_runs_each_traced_positions_rule():
    node = VJPNode(get_primitive(scale), [], [0], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    (ct,) = node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs)
    assert ct == 3.0


def test_run_rules_names_the_missing_rule():
    node = VJPNode(get_primitive(scale), [], [1], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    with pytest.raises(NotImplementedError, match="VJP of argument 1 of primitive 'scale_for_run_rules'"):
        node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs)


def test_run_rules_prefers_vjp_all_and_gives_it_every_argnum():
    seen = []

    def vjp_all(g, ans, argnums, x, y):
        seen.append(argnums)
        return [g * y if k == 0 else g * x for k in argnums]

    both = defprimitive(_scale_raw, name="scale_all_for_run_rules", vjp_all=vjp_all)
    node = VJPNode(get_primitive(both), [], [0, 1], [np.array(2.0), np.array(3.0)], {}, np.array(6.0))
    assert node.run_rules(np.array(1.0), np.array(1.0), node.ans, node.args, node.kwargs) == [3.0, 2.0]
    assert seen == [(0, 1)]


def test_the_core_walk_and_the_tensor_walk_agree_through_run_rules():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    want = fg.grad(lambda x, y: fnp.sum(fnp.arctan2(x, y)), argnums=(0, 1))(a, b)
    x, y = ft.tensor(a, requires_grad=True), ft.tensor(b, requires_grad=True)
    ft.atan2(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want[0])
    np.testing.assert_allclose(y.grad.numpy(), want[1])


def test_front_of_names_the_primitive_at_the_declaration():
    @front_of(scale)
    def scale_by(x, factor=2.0):
        return scale(x, factor)

    assert scale_by.primitive is get_primitive(scale)
    for fn in (fnp.sum, fnp.mean, fnp.prod, fnp.amax):
        assert isinstance(fn.primitive, Primitive) and fn.primitive.name == fn.__name__.replace("amax", "max")


def test_tensor_facts_are_keyed_by_primitive_objects():
    assert all(isinstance(p, Primitive) for p in _views.VIEW_PRIMITIVES)
    assert all(isinstance(p, Primitive) for p in torch_names.NODE_NAMES)
    assert torch_names.torch_name(get_primitive(fnp.multiply)) == "MulBackward0"
    assert torch_names.torch_name(get_primitive(scale)) == "ScaleForRunRulesBackward0"  # the default
    x = ft.ones(2, 3, requires_grad=True)
    assert type((x * 2).grad_fn).__name__ == "MulBackward0"
    assert type(x.reshape(6).grad_fn).__name__ == "ViewBackward0" and x.reshape(6)._base is x
    assert type(x.expand(4, 2, 3).grad_fn).__name__ == "ExpandBackward0"


# --------------------------------------------------------------------------
# one recording path: ReverseTrace.process is the skeleton, the Tensor trace overrides its steps

from funcgrad.core.reverse import USE_STEPS, ReverseTrace  # noqa: E402

_STEPS = ("link", "run", "save_and_box")


def test_the_tensor_trace_overrides_the_steps_and_keeps_the_skeleton():
    assert ReverseTrace.STEPS == _STEPS
    for step in _STEPS:
        assert getattr(_trace.TensorTrace, step) is not getattr(ReverseTrace, step), step
    assert "process" not in vars(_trace.TensorTrace)  # the core's skeleton, not an override
    assert _trace.TensorTrace.process is ReverseTrace.process
    for gone in ("record", "FUNC_TRANSFORM_HOOK", "_record_hooked"):
        assert not hasattr(_trace, gone), gone
    assert ReverseTrace.record_one is None  # fg.grad's tape: every call through the steps
    assert callable(_trace.TensorTrace.record_one)  # the one short way left (see docs/architecture.md)


def test_ft_func_installs_its_trace_kind_only_while_a_function_runs():
    from funcgrad.tensor import _func_support

    seen = []

    def f(x):
        seen.append(type(_trace.TRACE))
        return (x.sin() * 2).sum()

    assert type(_trace.TRACE) is _trace.TensorTrace
    g = ft.func.grad(f)(ft.tensor([0.5, 1.5]))
    assert seen == [_func_support.FuncTransformTrace]
    assert type(_trace.TRACE) is _trace.TensorTrace
    np.testing.assert_allclose(g.numpy(), 2 * np.cos([0.5, 1.5]))
    assert "process" not in vars(_trace.TensorTrace)


def test_a_reverse_trace_extends_the_skeleton_by_overriding_one_step():
    made = []

    class CountingTrace(ReverseTrace):
        __slots__ = ()

        def link(self, prim, args, kwargs, argnums):
            node, links = super().link(prim, args, kwargs, argnums)
            made.append(node.prim.name)
            return node, links

    with CountingTrace("counting") as trace:
        x = trace.new_input(np.array([0.5, 1.5]))
        y = fnp.sum(fnp.sin(x) * x)
    assert made == ["sin", "multiply", "sum"]  # every call, one box or several, through the steps
    (g,) = [ct for ct in fg.core.backward_pass([(y._node, np.array(1.0))]).values()]
    np.testing.assert_allclose(g, np.cos([0.5, 1.5]) * [0.5, 1.5] + np.sin([0.5, 1.5]))


def _tape_facts(box):
    node = box._node
    return (node.prim.name, [p.prim for p in node.parents], list(node.argnums), node.kwargs, node.out_index,
            node.versions, [type(a).__name__ for a in node.args[:2]], type(node.ans).__name__, type(box).__name__)


# what each VJP rule reads, per the declarations: (argument positions, the result?)
_READS = {"sin": ({0}, False), "exp": (set(), True), "tanh": (set(), True), "multiply": ({1}, False),
          "sum": (set(), False)}


@pytest.mark.parametrize("fn", [fnp.sin, fnp.exp, fnp.tanh, lambda x: fnp.multiply(x, 2.0), lambda x: fnp.sum(x)])
@pytest.mark.parametrize("size", [3, 1000])
@pytest.mark.parametrize("min_drop_bytes", [0, 4096])
def test_the_steps_make_the_expected_tape_node(fn, size, min_drop_bytes):
    a = np.linspace(0.1, 0.9, size)
    unary = fn in (fnp.sin, fnp.exp, fnp.tanh)
    with ReverseTrace("expect", min_drop_bytes=min_drop_bytes) as trace:
        x = trace.new_input(a)
        y = fn(fn(x) if unary else x)
        (g,) = fg.core.backward_pass([(y._node, np.ones_like(y._value))]).values()
    name = y._node.prim.name
    read_args, read_ans = _READS[name]
    big = a.nbytes >= min_drop_bytes  # (an unread array smaller than min_drop_bytes is kept as it is)
    arg0 = "ndarray" if 0 in read_args or not big else "ArraySpec"
    big_ans = (8 if name == "sum" else a.nbytes) >= min_drop_bytes
    ans = ("ndarray" if name != "sum" else "float64") if read_ans or not big_ans else "ArraySpec"
    want = (name, [y._node.prim if unary else None], [0], {}, None, None,
            [arg0, "float"] if name == "multiply" else [arg0] if name != "sum" else [arg0, "NoneType"], ans, "VJPBox")
    assert _tape_facts(y) == want
    expect = {"sin": lambda v: np.cos(np.sin(v)) * np.cos(v), "exp": lambda v: np.exp(np.exp(v)) * np.exp(v),
              "tanh": lambda v: (1 - np.tanh(np.tanh(v)) ** 2) * (1 - np.tanh(v) ** 2),
              "multiply": lambda v: np.full_like(v, 2.0), "sum": np.ones_like}[name]
    np.testing.assert_allclose(g, expect(a))


def test_the_steps_keep_the_versions_of_enclosing_boxes():
    with ReverseTrace("outer") as outer:
        a = outer.new_input(np.array([0.5, 1.5]))
        with ReverseTrace("inner") as trace:
            x = trace.new_input(np.array([0.25, 0.75]))
            mixed = fnp.multiply(x, a)  # another argument a box of an enclosing trace: saved by reference
            nested = fnp.sin(trace.new_input(a))  # the box's value a box of the enclosing trace
            plain = fnp.sin(x)  # plain arrays only: nothing to check
        assert mixed._node.versions == [(1, 0)] and mixed._node.args[1] is a
        assert nested._node.versions == [(0, 0)] and nested._node.args[0] is a
        assert plain._node.versions is None


def _traced_calls(fn):
    import sys

    seen = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "traced_call":
            seen.append(frame.f_code.co_filename)

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return len(seen)


@pytest.mark.parametrize("op", ["method", "function", "operator", "reflected", "unary_int"])
def test_every_tensor_op_goes_through_the_primitive_wrapper(op):
    x = ft.tensor([0.5, 1.5], requires_grad=True)
    n = ft.tensor([1, 2])
    call = {
        "method": lambda: x.sin(),
        "function": lambda: ft.tanh(x),
        "operator": lambda: x * x,
        "reflected": lambda: 2.0 - x,
        "unary_int": lambda: n.exp(),
    }[op]
    assert _traced_calls(call) >= 1


def _node_facts(out):
    node = out.grad_fn
    saved = tuple((pos, vc is not None, version) for pos, _, vc, version, _ in node._saved)
    return (type(node).__name__, [type(p).__name__ for p in node.parents], list(node.argnums), list(node._inputs),
            saved, [type(a).__name__ for a in node.args], [type(a).__name__ for a in node.ans], node._out_meta,
            out._requires_grad, out._output_nr, node._short_step)


# what the Tensor trace's rules read: the argument (0) or the result (-1)
def _spying_record_one(one, taken):
    """``record_one`` that also notes in ``taken`` whether it took the call (True) or left it to the steps."""
    def spy(self, prim, args, argnums):
        out = one(self, prim, args, argnums)
        taken.append(out is not USE_STEPS)
        return out
    return spy


_SAVES = {fnp.sin: 0, fnp.exp: -1, fnp.tanh: -1, fnp.log1p: 0, fnp.negative: None}


@pytest.mark.parametrize("fn", list(_SAVES))
@pytest.mark.parametrize("size", [3, 1000])  # small arrays kept, big ones replaced by their spec when unread
@pytest.mark.parametrize("way", ["record_one", "steps"])
def test_record_one_and_the_steps_make_the_expected_tensor_node(fn, size, way, monkeypatch):
    taken: list[bool] = []
    spy = _spying_record_one(_trace.TensorTrace.record_one, taken)
    monkeypatch.setattr(_trace.TensorTrace, "record_one", spy if way == "record_one" else None)
    leaf = ft.tensor(np.linspace(0.1, 0.9, size), requires_grad=True)
    for x, parent in ((leaf, "AccumulateGrad"), (leaf * 1.0, "MulBackward0")):  # a leaf, a value with history
        taken.clear()
        out = fn(x)
        assert taken == ([True] if way == "record_one" else [])
        pos = _SAVES[fn]
        big = size * 8 >= 4096
        want = (
            {fnp.sin: "SinBackward0", fnp.exp: "ExpBackward0", fnp.tanh: "TanhBackward0",
             fnp.log1p: "Log1PBackward0", fnp.negative: "NegBackward0"}[fn],
            [parent], [0], [0], () if pos is None else ((pos, True, 0),),
            ["ArraySpec" if pos != 0 and big else "ndarray"], ["ArraySpec" if pos != -1 and big else "ndarray"],
            (((size,), np.dtype("float64"), np),), True, 0, True,
        )
        assert _node_facts(out) == want
        out.sum().backward()
        d = {fnp.sin: np.cos, fnp.exp: np.exp, fnp.tanh: lambda v: 1 - np.tanh(v) ** 2,
             fnp.log1p: lambda v: 1 / (1 + v), fnp.negative: lambda v: -np.ones_like(v)}[fn]
        np.testing.assert_allclose(leaf.grad.numpy(), d(leaf.detach().numpy()))
        leaf.grad = None


def _general_view(b, op, rest, kwargs=None):
    """A Tensor view method's general way (the primitive wrapper and the recorder), instead of
    ``view_recorder.record_view``."""
    return op.general(b, *rest, **(kwargs or {}))


def _full_facts(out):
    """_node_facts, plus what each saved entry holds (the box, its history) and the result's class."""
    node = out._node
    held = tuple((type(box).__name__, history is box) for _, box, _, _, history in node._saved)
    return _node_facts(as_tensor_box(out)), held, type(out).__name__, _view_facts(out)


def _view_facts(out):
    """What makes ``out`` a view: its base's class, the replay of the view, the version counter shared."""
    if out._base is None:
        return None
    fns = [(prim.name, args, kwargs) for prim, args, kwargs in out._view_fns]
    return (type(out._base).__name__, repr(fns), out._version_counter is out._base._version_counter,
            out._view_version)


# calls of several boxes (Tensors; the nn bridge's NumPy-semantics boxes), small and big arrays
_MANY = {
    "product": lambda a, b: a * b,  # each argument read by the other's rule
    "quotient": lambda a, b: a / b,
    "one_requires_grad": lambda a, b: a * b.detach(),
    "sum": lambda a, b: a + b,  # nothing read
    "numpy_boxes": lambda a, b: fnp.multiply(as_numpy_box(a), as_numpy_box(b)),
    "numpy_box": lambda a, b: fnp.exp(as_numpy_box(a)),
    "linear": lambda a, b: ft.nn.functional.linear(a.reshape(1, -1), b.reshape(1, -1), b[:1]),  # (the bridge)
    # views (funcgrad.numpy's, as the bridge's maths makes them; Tensor methods name theirs: the steps)
    "reshape": lambda a, b: fnp.reshape(a * b, (-1, 1)),  # of a value with history
    "swapaxes": lambda a, b: fnp.swapaxes(as_numpy_box(b.reshape(1, -1)), 0, 1),  # of the bridge's box of a view
    "bridge_view": lambda a, b: fnp.reshape(as_numpy_box(b), (-1, 1)),
    # named by the Tensor method (torch_names.named): a view's name, a copy's name, another primitive's
    "reshape_method": lambda a, b: (a * b).reshape(1, -1),
    "getitem": lambda a, b: (a * b)[1:],
    "index_copy": lambda a, b: (a * b)[[0, 2]],
    "unsqueeze": lambda a, b: b.unsqueeze(0),
    # a view as the argument (not stale): of a view of a value with history, of a leaf's, several boxes
    "view_of_view": lambda a, b: (a * b).reshape(-1, 1).transpose(0, 1)[:, 1:],
    "view_of_a_leafs_view": lambda a, b: b[1:].unsqueeze(0),
    "view_argument": lambda a, b: a * b[:],
    "views_argument": lambda a, b: (a * 1.0)[:] * b[:],
    "op_of_view": lambda a, b: (a * b)[1:].tanh(),
    # Parameters (a Tensor subclass) beside Tensors: the result a Tensor
    "parameter_product": lambda a, b: a * ft.nn.Parameter(b.detach()),
    "parameter_view": lambda a, b: ft.nn.Parameter(b.detach())[1:],
    "parameter_dense": lambda a, b: ft.nn.functional.linear(a.reshape(1, -1), ft.nn.Parameter(b.detach().reshape(1, -1)),
                                                           ft.nn.Parameter(b.detach()[:1])),
    "max_pool": lambda a, b: ft.nn.functional.max_pool1d((a * b).reshape(1, 1, -1), 2),
    "layer_norm": lambda a, b: ft.nn.functional.layer_norm(a.reshape(1, -1), tuple(b.shape), ft.nn.Parameter(b.detach()),
                                                         ft.nn.Parameter(b.detach() * 0.5)),
    "conv": lambda a, b: ft.nn.functional.conv1d((a * b).reshape(1, 1, -1), ft.nn.Parameter(b.detach()[:1].reshape(1, 1, 1)),
                                                 ft.nn.Parameter(b.detach()[:1])) * 2.0,
    "batch_norm": lambda a, b: ft.nn.functional.batch_norm(
        (a * b).reshape(-1, 1), ft.zeros(1, dtype=ft.float64), ft.ones(1, dtype=ft.float64),
        ft.nn.Parameter(b.detach()[:1] + 1.0), ft.nn.Parameter(b.detach()[:1]), training=True) * a.reshape(-1, 1),
    "attention": lambda a, b: (ft.manual_seed(0), ft.nn.MultiheadAttention(2, 1, batch_first=True).double())[1](
        *(a[:2].reshape(1, 1, 2) * b[:2].reshape(1, 1, 2),) * 3, need_weights=False)[0],
    # one Tensor beside a constant array (record_one's narrowest way): what no rule reads, as its spec when big
    "constant_beside": lambda a, b: fnp.add(a, np.full(a.shape, 2.0)),  # neither read
    "constant_read": lambda a, b: fnp.multiply(b, np.full(b.shape, 2.0)),  # the constant read, the leaf not
}


@pytest.mark.parametrize("case", list(_MANY))
@pytest.mark.parametrize("size", [3, 1000])
def test_record_one_makes_what_the_steps_make_for_several_boxes(case, size, monkeypatch):
    """record_one's calls of several boxes, and of the nn bridge's boxes, against the steps: the same node
    (class, parents, traced positions, saved entries, what stays in args/ans), result and gradients."""
    facts, grads = [], []
    one = _trace.TensorTrace.record_one
    for way in ("record_one", "steps"):
        taken: list[bool] = []
        spy = _spying_record_one(one, taken)
        monkeypatch.setattr(_trace.TensorTrace, "record_one", spy if way == "record_one" else None)
        monkeypatch.setattr(_tensor_shape, "record_view", _general_view)  # (the view methods' short way: below)
        leaf = ft.tensor(np.linspace(0.1, 0.9, size), requires_grad=True)
        other = ft.tensor(np.linspace(1.0, 2.0, size), requires_grad=True)
        a, b = leaf * 1.0, other  # a value with history, a leaf
        taken.clear()
        out = _MANY[case](a, b)
        assert taken[-1:] == ([True] if way == "record_one" else [])
        facts.append(_full_facts(out))
        as_tensor_box(out).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy().copy() for t in (leaf, other)])
    assert facts[0] == facts[1]
    for got, want in zip(*grads):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", ["constants", "no_derivative", "bridge_no_derivative", "constant_view"])
def test_record_one_makes_no_node_where_the_steps_make_none(case, monkeypatch):
    """No input that requires grad, or a primitive with no derivative: a result without a node, as the steps'."""
    one = _trace.TensorTrace.record_one
    results = []
    for way in ("record_one", "steps"):
        taken: list[bool] = []
        spy = _spying_record_one(one, taken)
        monkeypatch.setattr(_trace.TensorTrace, "record_one", spy if way == "record_one" else None)
        x = ft.tensor([0.5, 2.5, 1.5], requires_grad=True)
        out = {"constants": lambda: ft.ones(3) * ft.tensor([1.0, 2.0, 3.0]),
               "no_derivative": lambda: fnp.argmax(x),
               "bridge_no_derivative": lambda: fnp.sign(as_numpy_box(x * 1.0)),
               "constant_view": lambda: fnp.reshape(x.detach(), (-1, 1))}[case]()
        assert taken[-1:] == ([True] if way == "record_one" else [])
        results.append((type(out).__name__, out._node, out._requires_grad, _view_facts(out), out._inference,
                        out._output_nr, out._value.tolist()))
    assert results[0] == results[1]
    assert results[0][1] is None and results[0][2] is False


def test_record_one_takes_one_tensor_that_requires_grad_its_narrowest_way(monkeypatch):
    """The commonest call (one Tensor that requires grad, no view, no naming) never reaches the wider frame;
    a call of two Tensors, or of a Tensor that requires no grad, does."""
    wide = []
    record_wide = _trace._record_wide
    monkeypatch.setattr(_trace, "_record_wide", lambda *a: wide.append(a[0].name) or record_wide(*a))
    x = ft.tensor([0.5, 1.5], requires_grad=True)
    y = x.tanh() * 2.0 * x  # (tanh and the product by a number: one Tensor; the last product: two)
    assert wide == ["multiply"] and type(y.grad_fn).__name__ == "MulBackward0"
    x.detach().exp()
    assert wide == ["multiply", "exp"]


def test_record_one_refuses_a_saved_change_in_place_as_the_steps_do():
    a = ft.tensor([0.5, 1.5], requires_grad=True)
    b = ft.tensor([2.0, 3.0]) * 1.0
    out = a * b  # record_one: b is saved
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("case", ["no_grad", "keyword", "inference", "stale_view", "mixed_boxes"])
def test_record_one_leaves_the_other_calls_to_the_steps(case, monkeypatch):
    taken: list[bool] = []
    spy = _spying_record_one(_trace.TensorTrace.record_one, taken)
    monkeypatch.setattr(_trace.TensorTrace, "record_one", spy)
    x = ft.tensor([0.5, 1.5, 2.5], requires_grad=True)
    if case == "no_grad":
        with ft.no_grad():
            out = x.sin()
        assert out.grad_fn is None and not out.requires_grad
    elif case == "mixed_boxes":  # a Tensor and a NumPy-semantics box: the result's class is the steps' choice
        from funcgrad.tensor.boxes import as_numpy_box

        out = fnp.multiply(x, as_numpy_box(x))
        assert type(out).__name__ == "Tensor" and [pos for pos, *_ in out.grad_fn._saved] == [0, 1]
    elif case == "keyword":
        from funcgrad.nn.rectifier import relu

        out = relu(x, nan_passes=True)  # (Tensor.relu gives it by position: record_one's way)
        assert type(out.grad_fn).__name__ == "ReluBackward0"
    elif case == "inference":
        with ft.inference_mode():
            out = ft.ones(3).sin()
        assert out.is_inference()
    else:  # a view whose base changed in place takes the base's new history when it is used
        base = x * 1.0
        view = base[:2]
        base.mul_(3.0)
        out = view.sin()
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3 * np.cos(1.5), 3 * np.cos(4.5), 0.0])
        return
    assert not any(taken)


def test_a_tensor_op_with_arguments_that_are_not_plain_arrays_runs_the_raw_function(monkeypatch):
    """``run`` hands a call whose arguments are not all plain arrays (a tuple, a Python number)
    straight to the raw function, NumPy's warnings silenced, with no second type scan."""
    calls = []
    scans = _trace._raw_call

    def spy(prim, args, kwargs):  # (the scanning entry point: the steps must not go through it)
        calls.append(prim.name)
        return scans(prim, args, kwargs)

    monkeypatch.setattr(_trace, "_raw_call", spy)
    x = ft.tensor(np.arange(6.0), requires_grad=True)
    y = x.reshape((2, 3)) * 2
    np.testing.assert_array_equal(y.detach().numpy(), np.arange(6.0).reshape(2, 3) * 2)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(6, 2.0))
    assert calls == []
    with np.errstate(all="raise"):  # silenced: no FloatingPointError from the raw call
        z = ft.tensor(np.array([0.0, 1.0])).clamp(0.5, None) / 0
    assert np.isinf(z.numpy()).all()


def test_a_tensor_op_on_a_lower_traces_value_goes_to_the_traced_entry_point():
    """An ``ft.func`` transform's value among arguments that are not plain arrays: the primitive's
    traced entry point, so the transform sees the call (its gradient is right)."""
    def f(x):
        return (x.reshape((2, 2)) * 3.0).sum()

    g = ft.func.grad(f)(ft.tensor(np.ones(4)))
    np.testing.assert_array_equal(g.numpy(), np.full(4, 3.0))


def test_shape_errors_of_calls_that_are_not_plain_arrays_are_pytorchs(monkeypatch):
    seen = []
    not_plain = _trace._not_plain_call
    monkeypatch.setattr(_trace, "_not_plain_call", lambda *a: seen.append(a[0].name) or not_plain(*a))
    a, b = ft.tensor(np.ones((2, 3)), requires_grad=True), ft.tensor(np.ones((2, 4)))
    with pytest.raises(RuntimeError, match="concatenate: sizes of tensors must match"):
        ft.cat([a, b], 0)
    assert seen == ["concatenate"]


def test_as_numpy_box_shares_the_record_and_sends_a_leafs_gradient_to_its_accumulator():
    from funcgrad.tensor.boxes import NumpyBox, as_numpy_box, get_accumulator

    leaf = ft.tensor(np.arange(4.0), requires_grad=True)
    box = as_numpy_box(leaf)
    assert type(box) is NumpyBox and box._value is leaf._value
    assert box._node is get_accumulator(leaf) and box._requires_grad
    assert box._version_counter is leaf._version_counter
    base = ft.tensor(np.arange(4.0))
    view = base[1:]
    base.add_(1.0)  # the view is stale until refreshed
    np.testing.assert_array_equal(as_numpy_box(view)._value, [2.0, 3.0, 4.0])
    plain = ft.tensor(np.ones(2))
    assert as_numpy_box(plain)._node is None and not as_numpy_box(plain)._requires_grad


# Issue 26: the Tensor view methods' one-frame recorder (view_recorder.record_view) against their general way
# (the primitive wrapper, then record_one or the steps): each op of a 2-D tensor
_VIEW_OPS = {
    "reshape": lambda t: t.reshape(3, -1),
    "reshape_copy": lambda t: t.transpose(0, 1).reshape(-1),  # no view possible: a copy, UnsafeViewBackward0
    "view": lambda t: t.view(-1),
    "flatten": lambda t: t.flatten(),
    "transpose": lambda t: t.transpose(0, -1),
    "t": lambda t: t.t(),
    "permute": lambda t: t.permute(-1, 0),
    "unsqueeze": lambda t: t.unsqueeze(-1),
    "squeeze": lambda t: t[:1].squeeze(),
    "squeeze_dim": lambda t: t[:1].squeeze(0),
    "squeeze_dims": lambda t: t[:1].squeeze((0, 1)),
    "select": lambda t: t[1],
    "slice": lambda t: t[1:],
    "index_tuple": lambda t: t[:, -1],
    "new_axis": lambda t: t[None],
    "ellipsis": lambda t: t[..., 0],
    "alias": lambda t: t[...],
    "view_of_view": lambda t: t[1:].transpose(0, 1)[0].unsqueeze(0),
    "split": lambda t: t.split(1, 1)[1],
    "split_sizes": lambda t: t.split([1, 2], 1)[0],
    "chunk": lambda t: t.chunk(2, 0)[-1],
    "unbind": lambda t: t.unbind(1)[2],
    "view_of_piece": lambda t: t.chunk(2, 1)[0].transpose(0, 1),  # its parent: output 0 of a joined node
}


def _no_grad_view(leaf):
    with ft.no_grad():
        return (leaf * 1.0)[...]  # a view made in no_grad mode: its views inherit how it was made


_VIEW_SOURCES = {
    "history": lambda leaf: leaf * 1.0,
    "leaf": lambda leaf: leaf,
    "no_grad_input": lambda leaf: leaf.detach() * 1.0,
    "parameter": lambda leaf: ft.nn.Parameter(leaf.detach() * 1.0),
    "no_grad_view": _no_grad_view,
    "float32": lambda leaf: leaf.float() * 1.0,
}


def _view_op_facts(out):
    """What a view op makes: the result (class, value, strides, view facts) and its node, recursively
    through the nodes a joined node (split, unbind) points to."""
    def node_facts(node, depth):
        if node is None or depth == 0:
            return type(node).__name__
        parents = [node_facts(p, depth - 1) for p in getattr(node, "parents", ())]
        if not isinstance(node, PrimNode):
            return type(node).__name__, parents, getattr(node, "_out_meta", None)
        saved = tuple((pos, version) for pos, _, _, version, _ in node._saved)
        return (type(node).__name__, node.prim.name, parents, list(node.argnums), list(node._inputs), saved,
                [type(a).__name__ for a in node.args], repr(node.args[1:]), dict(node.kwargs),
                [type(a).__name__ for a in node.ans], node._out_meta, node._short_step, node._n_outputs)

    v = out._value
    return (type(out).__name__, v.dtype, v.shape, v.strides, v.tolist(), out._requires_grad, out._output_nr,
            out._inference, _view_facts(out), out._view_kind, getattr(out, "_multi_index", None),
            out.is_contiguous(), out._base is not None and np.shares_memory(v, out._base._value),
            node_facts(out._node, 3))


@pytest.mark.parametrize("op", list(_VIEW_OPS))
@pytest.mark.parametrize("source, rows", [(source, 2) for source in _VIEW_SOURCES] + [("history", 200), ("leaf", 200)])
def test_record_view_makes_what_the_general_way_makes(op, source, rows, monkeypatch):
    """The view methods' short way against their general way through record_one and through the steps: the
    same result and node (class, parents, arguments, saved entries, view facts, strides), the same gradients
    (and second derivatives), the same in-place change through the view (or the same refusal). A small input
    is kept in the node's arguments, a big one (200 rows) as its spec."""
    results = []
    for way in ("short", "general", "steps"):
        if way != "short":
            monkeypatch.setattr(_tensor_shape, "record_view", _general_view)
        if way == "steps":
            monkeypatch.setattr(_trace.TensorTrace, "record_one", None)
        leaf = ft.tensor(np.arange(rows * 3.0).reshape(rows, 3) / 7 + 0.5, requires_grad=True)
        t = _VIEW_SOURCES[source](leaf)
        if source == "parameter":
            leaf = t
        out = _VIEW_OPS[op](t)
        facts = [_view_op_facts(out)]
        if out.requires_grad:  # first and second derivatives through the view
            (g,) = ft.autograd.grad((out ** 3).sum(), leaf, create_graph=True)
            g.sum().backward()
            facts.append((g.detach().numpy().tolist(), leaf.grad.numpy().tolist()))
            leaf.grad = None
        if out._base is not None:  # an in-place change through the view, then a gradient through its base
            try:
                out.mul_(2.0)
                facts.append(("written", out._base._value.tolist(), out._version, type(out._base.grad_fn).__name__))
                if out._base.requires_grad:
                    out._base.sum().backward()
                    facts.append(leaf.grad.numpy().tolist())
            except RuntimeError as err:
                facts.append(("refused", str(err)))
        results.append(facts)
    assert results[0] == results[1] == results[2]


def test_record_view_takes_no_step_of_the_general_way():
    """The short way is taken: no primitive wrapper runs for a view of a Tensor, a Parameter or a view."""
    x = ft.tensor(np.ones((3, 3)), requires_grad=True) * 1.0
    p = ft.nn.Parameter(ft.ones(3, 3))
    for op in _VIEW_OPS.values():
        for t in (x, p, x[1:], x.detach()):
            assert _traced_calls(lambda: op(t)) == 0


@pytest.mark.parametrize("case", ["no_grad", "inference", "anomaly", "named", "stale_view", "debug_nans",
                                  "func_transform", "device", "bad_shape", "bad_index"])
def test_record_view_leaves_the_other_cases_to_the_general_way(case):
    """Grad mode off, inference mode, anomaly mode, an op naming the node, a stale view, fg.debug_nans, an
    ft.func frame, another backend's array, what NumPy refuses: the general way (the primitive wrapper),
    which records them (or raises PyTorch's error) as before."""
    x = ft.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    if case == "no_grad":
        with ft.no_grad():
            assert _traced_calls(lambda: x.transpose(0, 1)) == 1
            v = x.transpose(0, 1)
        assert v._base is x and v._view_kind == "no_grad" and v.grad_fn is None
    elif case == "inference":
        with ft.inference_mode():
            v = ft.ones(2, 3)[1:]
            assert _traced_calls(lambda: v.reshape(-1)) == 1
        assert v.is_inference()
    elif case == "anomaly":
        with ft.autograd.detect_anomaly():
            assert _traced_calls(lambda: x.unsqueeze(0)) == 1
            assert x.unsqueeze(0).grad_fn._stack is not None
    elif case == "named":  # an enclosing op names the node of the same primitive (x.unbind's selects)
        (a, b) = x.unbind(0)
        assert type(a.grad_fn).__name__ == "UnbindBackward0"
        v = torch_names.named("OuterBackward0", lambda: x.transpose(0, 1), get_primitive(fnp.swapaxes))()
        assert type(v.grad_fn).__name__ == "OuterBackward0" and v._base is x
    elif case == "stale_view":
        base = x * 1.0
        view = base[1:]
        base.mul_(2.0)
        assert _traced_calls(lambda: view.transpose(0, 1)) >= 1
        view.transpose(0, 1).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [2, 2, 2]])
    elif case == "debug_nans":
        with fg.debug_nans():
            assert _traced_calls(lambda: x[0]) == 1
    elif case == "func_transform":
        g = ft.func.grad(lambda t: (t.transpose(0, 1)[0] ** 2).sum())(x.detach())
        np.testing.assert_array_equal(g.numpy(), [[0, 0, 0], [6, 0, 0]])
    elif case == "device":
        sys_path_fake_backend()
        import fake_backend as fb

        with fb.as_cuda():
            d = x.detach().cuda().requires_grad_()
            v = d.transpose(0, 1)[1:]
            assert isinstance(v._value, fb.FakeArray) and type(v.grad_fn).__name__ == "SliceBackward0"
            v.sum().backward()
            assert d.grad.is_cuda
    elif case == "bad_shape":
        with pytest.raises(ValueError, match="cannot reshape array of size 6 into shape"):
            x.reshape(4, 2)
    else:
        with pytest.raises(IndexError, match="out of bounds|out of range"):
            x[5]


def sys_path_fake_backend():
    import pathlib
    import sys

    here = str(pathlib.Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
