"""The one backward walk (core.reverse.backward_pass with the Tensor layer's visitor):
hook order at nodes and leaves, ``inputs=`` pruning and capture, nodes of several outputs.

PyTorch's test/test_autograd.py is the specification (test_prehook_ordering,
test_accumulate_grad_posthooks_*, test_hook_edge_case_when_called_with_grad,
test_grad_fn_prehooks_multiple_outputs); these are our own tests of those behaviours.
"""

import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.core.reverse import VJPNode, ReverseTrace
from funcgrad.tensor import inplace_writes as _inplace, tensor_trace as _trace


def test_nodes_are_tape_nodes_and_the_trace_a_reverse_trace():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sin()
    assert isinstance(_trace.TRACE, ReverseTrace)
    assert isinstance(y.grad_fn, VJPNode)
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert isinstance(acc, VJPNode) and acc.variable is x
    assert type(y.grad_fn).__name__ == "SinBackward0"
    # a tape node's parents are where its gradients go
    assert y.grad_fn.parents == [y.grad_fn.next_functions[0][0]]


def test_prehook_ordering_tensor_hooks_then_node_prehooks():
    log = []

    def tensor_hook(g):
        log.append(1)
        return g * 3

    def node_prehook(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = ft.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(tensor_hook)
    acc.register_prehook(node_prehook)
    a.register_hook(tensor_hook)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]
    assert a.grad.item() == 3 * 4 * 9 * 2

    # autograd.grad runs the tensor hooks of a leaf it returns, not its node's hooks
    log.clear()
    (ga,) = ft.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]
    assert ga.item() == 3 * 4 * 9

    # backward(inputs=(non_leaf,)): its tensor hooks, then its node's prehooks; .grad sees
    # only the tensor hooks (it is taken before the node's prehooks run)
    log.clear()
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the non-leaf .grad warning
        assert b.grad.item() == 3


def test_accumulate_grad_node_hooks_observe_tensor_hooks():
    a = ft.tensor(1.0, requires_grad=True)
    seen = {}

    def posthook(grad_inputs, grad_outputs):
        seen["post"] = (len(grad_inputs), grad_outputs[0].item())

    def prehook(grad_outputs):
        seen["pre"] = (len(grad_outputs), grad_outputs[0].item())

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(lambda g: g * 2)
    b.backward()
    assert seen == {"pre": (1, 2.0), "post": (0, 2.0)}
    assert a.grad.item() == 2.0


def test_accumulate_grad_prehook_can_replace_the_gradient():
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    y = (a * 3).sum()
    _, acc_edge = y.grad_fn.next_functions[0][0], ft.autograd.graph.get_gradient_edge(a)
    acc_edge[0].register_prehook(lambda gs: (gs[0] * 10,))
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), [30.0, 30.0])


def test_hooks_of_unneeded_leaves_do_not_run():
    def boom(*args):
        raise RuntimeError("must not run")

    a = ft.tensor(1.0, requires_grad=True)
    a.register_hook(boom)
    b = ft.tensor(1.0, requires_grad=True)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(boom)
    out = a + b + c
    out.sum().backward(inputs=[b])
    assert b.grad.item() == 1.0 and a.grad is None


@pytest.mark.parametrize("call, want", [
    ("grad_b", (1, 0, 0)),
    ("grad_ab", (2, 1, 1)),
    ("backward", (2, 2, 2)),
    ("backward_ab", (2, 2, 2)),
])
def test_which_hooks_run_for_grad_and_backward(call, want):
    a = ft.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = [0, 0, 0]  # tensor hooks, node prehooks, node posthooks

    def tensor_hook(g):
        counts[0] += 1

    def prehook(g):
        counts[1] += 1

    def posthook(gi, go):
        counts[2] += 1

    a.register_hook(tensor_hook)
    b.register_hook(tensor_hook)
    acc = b.grad_fn.next_functions[0][0]
    for node in (acc, b.grad_fn):
        node.register_hook(posthook)
        node.register_prehook(prehook)
    if call == "grad_b":
        ft.autograd.grad(c, inputs=(b,))
    elif call == "grad_ab":
        ft.autograd.grad(c, inputs=(a, b))
    elif call == "backward":
        c.backward()
    else:
        c.backward(inputs=(a, b))
    assert tuple(counts) == want


def test_grad_does_not_run_nodes_that_lead_nowhere():
    class Boom(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("this node must not run")

    x = Boom.apply(ft.randn(1, requires_grad=True) * 2)
    y = ft.randn(1, requires_grad=True)
    z = ft.randn(1, requires_grad=True)
    gy, gz = ft.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gy is None and gz.item() == 1.0
    ft.autograd.backward(Boom.apply(ft.randn(1, requires_grad=True) * 2), inputs=(y,))
    assert y.grad is None


def test_prehook_of_a_node_with_several_outputs_sees_all_of_them():
    m = ft.tensor([[2.0, 0.5], [0.5, 1.0]])
    b = (m + 0).requires_grad_()
    w, v = ft.linalg.eigh(b)
    (w.sum() + v.abs().sum()).backward()
    a = b.detach().requires_grad_()
    calls = []

    def prehook(grad_outputs):
        calls.append(len(grad_outputs))
        return tuple(g * 2 for g in grad_outputs)

    w, v = ft.linalg.eigh(a)
    assert w.grad_fn is v.grad_fn and (w.output_nr, v.output_nr) == (0, 1)
    assert w.grad_fn.next_functions == ((ft.autograd.graph.get_gradient_edge(a)[0], 0),)
    v.grad_fn.register_prehook(prehook)
    (w.sum() + v.abs().sum()).backward()
    assert calls == [2]
    np.testing.assert_allclose(a.grad.numpy(), 2 * b.grad.numpy())


def test_hooks_and_capture_on_one_output_of_several():
    x = ft.tensor([[2.0, 0.5], [0.5, 1.0]], requires_grad=True)
    w, v = ft.linalg.eigh(x)
    w.register_hook(lambda g: g * 5)
    w.retain_grad()
    (w.sum() + 0 * v.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), [5.0, 5.0])
    np.testing.assert_allclose(x.grad.numpy(), 5 * np.eye(2), atol=1e-6)
    w, v = ft.linalg.eigh(x)
    (gw,) = ft.autograd.grad((w * w).sum() + v.sum(), (w,))
    np.testing.assert_allclose(gw.numpy(), 2 * w.detach().numpy())


class _DeepReentrant(ft.autograd.Function):
    """Each backward runs a whole backward pass of one more level (PyTorch's test_deep_reentrant)."""

    @staticmethod
    def forward(ctx, x):
        with ft.enable_grad():
            ctx.x = x.detach().requires_grad_(True) - 1
        return ctx.x.detach()

    @staticmethod
    def backward(ctx, g):
        if ctx.x < 0:
            return g
        with ft.enable_grad():
            _DeepReentrant.apply(ctx.x).sum().backward()
        return g


def test_deep_reentrant_backward_does_not_hit_the_recursion_limit():
    import sys

    assert sys.getrecursionlimit() < 2000 * 10  # each level is many Python frames
    v = ft.tensor(2000.0, requires_grad=True)
    _DeepReentrant.apply(v).sum().backward()
    assert v.grad.item() == 1.0


def test_reentrant_autograd_grad_inside_backward_and_its_errors():
    class Reentrant(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with ft.enable_grad():
                ctx.x = x.detach().requires_grad_(True)
                ctx.y = ctx.x * ctx.x
            return x * 2

        @staticmethod
        def backward(ctx, g):
            with ft.enable_grad():
                total = ctx.y.sum()
            (gx,) = ft.autograd.grad(total, ctx.x)
            return g * gx

    x = ft.tensor([1.0, 3.0], requires_grad=True)
    Reentrant.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])

    class Failing(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.depth = int(x.item())
            with ft.enable_grad():
                ctx.x = x.detach().requires_grad_(True) - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            if ctx.depth <= 0:
                raise ValueError("deepest level failed")
            with ft.enable_grad():
                Failing.apply(ctx.x).sum().backward()
            return g

    with pytest.raises(ValueError, match="deepest level failed"):
        Failing.apply(ft.tensor(300.0, requires_grad=True)).sum().backward()


def test_reentrant_backward_keeps_the_callers_grad_mode_and_hooks():
    seen = []

    class Probe(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with ft.enable_grad():
                ctx.x = x.detach().requires_grad_(True) - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            seen.append(ft.is_grad_enabled())
            if ctx.x >= 0:
                with ft.enable_grad():
                    Probe.apply(ctx.x).sum().backward()
            return g

    v = ft.tensor(500.0, requires_grad=True)
    Probe.apply(v).sum().backward()
    assert len(seen) == 501 and not any(seen)  # backward runs without recording (create_graph=False)


def test_leaf_grad_takes_a_gradient_only_the_walk_holds_and_copies_any_other():
    w = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    x = ft.randn(2, 3, dtype=ft.float64)
    (x @ w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy().sum(0)[:, None] * np.ones((1, 4)))
    # a seed the caller holds reaches the leaf unchanged (clone's rule passes it on): copied
    a = ft.zeros(3, requires_grad=True)
    seed = ft.tensor([1.0, 2.0, 3.0])
    a.clone().backward(seed)
    assert not np.shares_memory(a.grad.numpy(), seed.numpy())
    with ft.no_grad():
        a.grad.add_(1)
    np.testing.assert_array_equal(seed.numpy(), [1.0, 2.0, 3.0])
    # one array for two leaves (add passes it to both): each leaf gets its own
    b, c = ft.zeros(3, requires_grad=True), ft.zeros(3, requires_grad=True)
    (b + c).backward(ft.tensor([1.0, 1.0, 1.0]))
    assert not np.shares_memory(b.grad.numpy(), c.grad.numpy())
    # a hook that keeps what it was given does not share memory with .grad
    kept = []
    d = ft.zeros(3, requires_grad=True)
    d.register_hook(lambda g: kept.append(g))
    (d * 2).sum().backward()
    with ft.no_grad():
        d.grad.add_(1)
    np.testing.assert_array_equal(kept[0].numpy(), [2.0, 2.0, 2.0])


def test_graph_of_a_node_with_several_outputs_is_freed_without_the_garbage_collector():
    import gc
    import weakref

    gc.disable()
    try:
        x = ft.tensor([[2.0, 0.5], [0.5, 1.0]], requires_grad=True)
        w, v = ft.linalg.eigh(x)
        y = w.sum() + v.sum()
        node = weakref.ref(w.grad_fn)
        del w, v, y
        assert node() is None  # no reference cycle between the node and its outputs' tape nodes
    finally:
        gc.enable()


def test_backward_inputs_one_output_of_a_node_with_several():
    import warnings

    x = ft.tensor([[2.0, 0.5], [0.5, 1.0]], requires_grad=True)
    w, v = ft.linalg.eigh(x)
    (3 * w.sum() + v.sum()).backward(inputs=(w,))
    assert x.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the non-leaf .grad warning
        np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_a_re_pointed_edge_changes_where_gradients_go():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    z = ft.tensor([3.0, 4.0], requires_grad=True)
    y = x * 2
    _inplace._repoint_edge(y.grad_fn, 0, ft.autograd.graph.get_gradient_edge(z))
    assert y.grad_fn.next_functions[0][0].variable is z
    y.sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(z.grad.numpy(), [2.0, 2.0])


def test_a_node_returning_gradients_per_input_runs_on_the_walk():
    from funcgrad.tensor.nodes import Node

    class Triple(Node):
        """Gradients returned per input (None where no edge), not per parent."""

        def __init__(self, edge):
            super().__init__((0, 1), (None, edge))

        def apply(self, grads, create_graph):
            return [None, grads[0] * 3]

    x = ft.tensor([1.0, 2.0], requires_grad=True)
    node = Triple(ft.autograd.graph.get_gradient_edge(x))
    node._out_meta = (((2,), np.dtype("float64"), np),)
    assert node.next_functions[0] == (None, 0) and node.next_functions[1][0].variable is x
    y = ft.Tensor._make(np.array([1.0, 2.0]), node, 0, True)
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
