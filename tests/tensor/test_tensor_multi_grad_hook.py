"""ft.autograd.graph.register_multi_grad_hook: one call per backward pass over several tensors."""

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.backward import current_pass

reg = ft.autograd.graph.register_multi_grad_hook


def _leaves(n=2, size=3):
    g = ft.Generator().manual_seed(1)
    return [ft.randn(size, generator=g, dtype=ft.float64).requires_grad_() for _ in range(n)]


def _flags(grads):
    return [g is not None for g in grads]


def test_all_mode_gets_every_gradient_of_the_pass_once():
    a, b = _leaves()
    c, d = a * b, a * b
    calls = []
    h = reg((a, b, c, d), lambda gs: calls.append(list(gs)))
    c.sum().backward(retain_graph=True)
    assert len(calls) == 1
    assert _flags(calls[0]) == [True, True, True, False]  # d is not in c's graph
    np.testing.assert_allclose(calls[0][0].numpy(), b.detach().numpy())
    np.testing.assert_allclose(calls[0][1].numpy(), a.detach().numpy())
    np.testing.assert_allclose(calls[0][2].numpy(), np.ones(3))
    c.sum().backward(inputs=(a,), retain_graph=True)  # b's gradient is not needed for inputs=(a,)
    assert len(calls) == 2 and _flags(calls[1]) == [True, False, True, False]
    h.remove()
    c.sum().backward(retain_graph=True)
    assert len(calls) == 2


def test_all_mode_skips_passes_that_reach_none_of_the_tensors():
    a, b = _leaves()
    y, z = a * 2, b * 3
    calls = []
    reg((y,), lambda gs: calls.append(gs))
    z.sum().backward()
    assert calls == []
    y.sum().backward()
    assert len(calls) == 1


def test_all_mode_with_autograd_grad_and_non_leaves():
    a, b = _leaves()
    x, y, z = a * b, a * 2, b * 3
    out = (x + y + z).sum()
    calls = []
    reg((y, z), lambda gs: calls.append(_flags(gs)))
    ft.autograd.grad(out, (y,), retain_graph=True)
    ft.autograd.grad(out, (a,), retain_graph=True)  # z does not lead to a
    ft.autograd.grad(out, (z,), retain_graph=True)
    assert calls == [[True, False], [True, False], [False, True]]
    # leaves work with autograd.grad too (PyTorch raises there; see docs/tensor.md)
    leaf_calls = []
    reg((a, b), lambda gs: leaf_calls.append(_flags(gs)))
    ft.autograd.grad(out, (a,), retain_graph=True)
    assert leaf_calls == [[True, False]]


def test_all_mode_same_tensor_twice_and_return_value_ignored():
    a, _ = _leaves()
    y = a * 2
    calls = []

    def fn(gs):
        calls.append(_flags(gs))
        return [g * 0 for g in gs]

    reg((y, y), fn)
    y.sum().backward()
    assert calls == [[True, True]]
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.ones(3))


def test_all_mode_runs_after_the_pass_with_create_graph_gradients():
    (x,) = _leaves(1)
    seen = []
    reg((x,), lambda gs: seen.append(gs[0]))
    (g,) = ft.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert len(seen) == 1 and seen[0].requires_grad  # 3 x^2, differentiable again
    np.testing.assert_allclose(seen[0].detach().numpy(), 3 * x.detach().numpy() ** 2)
    g.sum().backward()
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1].numpy(), 6 * x.detach().numpy())


def test_any_mode_first_gradient_once_per_pass():
    (a,) = _leaves(1)
    y = a * 2
    z = y * 3  # z's gradient is computed before y's
    calls = []
    h = reg((y, z, ft.ones(3)), lambda g: calls.append(g), mode="any")  # a tensor without grad is skipped
    z.sum().backward(retain_graph=True)
    z.sum().backward(retain_graph=True)
    assert len(calls) == 2
    np.testing.assert_allclose(calls[0].numpy(), np.ones(3))
    h.remove()
    z.sum().backward()
    assert len(calls) == 2


def test_state_is_per_pass_after_an_error():
    (a,) = _leaves(1)

    class Boom(ft.autograd.Function):
        fail = True

        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            if Boom.fail:
                raise RuntimeError("boom in backward")
            return g

    y = a * 2
    out = Boom.apply(y) + y
    any_calls, all_calls = [], []
    reg((y,), lambda g: any_calls.append(g), mode="any")
    reg((y, a), lambda gs: all_calls.append(_flags(gs)))
    with pytest.raises(RuntimeError, match="boom in backward"):
        out.sum().backward(retain_graph=True)
    assert all_calls == []
    Boom.fail = False
    out.sum().backward()
    assert all_calls == [[True, True]] and len(any_calls) == 1


def test_nested_backward_inside_a_hook_is_its_own_pass():
    a, b = _leaves()
    inner = []
    outer = []
    reg((b,), lambda gs: inner.append(_flags(gs)))

    def hook(g):
        with ft.enable_grad():  # backward runs hooks with grad mode off
            (b * 2).sum().backward()  # a second pass, run from inside the first

    a.register_hook(hook)
    reg((a,), lambda gs: outer.append(_flags(gs)))
    (a * 3).sum().backward()
    assert inner == [[True]] and outer == [[True]]


def test_queue_callback_runs_after_the_walk():
    (a,) = _leaves(1)
    order = []
    assert current_pass() is None

    def hook(g):
        current_pass().queue_callback(lambda: order.append(("callback", a.grad is not None)))
        order.append(("hook", a.grad is not None))

    a.register_hook(hook)
    (a * 2).sum().backward()
    assert order == [("hook", False), ("callback", True)]
    assert current_pass() is None


@pytest.mark.parametrize("bad, err, words", [
    (dict(mode="some"), ValueError, "Expects mode to be one of"),
    (dict(fn=3), TypeError, "callable"),
    (dict(tensors=[np.ones(2)]), TypeError, "sequence of Tensors"),
    (dict(tensors=[ft.ones(2)]), RuntimeError, "doesn't require gradient"),
])
def test_errors(bad, err, words):
    kw = dict(tensors=[ft.ones(2, requires_grad=True)], fn=lambda gs: None, mode="all")
    kw.update(bad)
    with pytest.raises(err, match=words):
        reg(kw["tensors"], kw["fn"], mode=kw["mode"])


def test_handle_is_removable_and_context_manager():
    (a,) = _leaves(1)
    calls = []
    with reg((a,), lambda gs: calls.append(1)) as h:
        assert isinstance(h, ft.autograd.graph.RemovableHandle)
        (a * 2).sum().backward()
    (a * 2).sum().backward()
    assert calls == [1]


def test_execution_engine_queue_callback():
    (a,) = _leaves(1)
    done = []
    engine = ft.autograd.Variable._execution_engine
    a.register_hook(lambda g: engine.queue_callback(lambda: done.append(a.grad.numpy().copy())))
    (a * 2).sum().backward()
    assert len(done) == 1
    np.testing.assert_allclose(done[0], 2 * np.ones(3))
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        engine.queue_callback(lambda: None)


def test_failed_registration_leaves_no_hook_behind():
    (a,) = _leaves(1)
    calls = []
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        reg((a, ft.ones(3)), lambda gs: calls.append(gs))
    (a * 2).sum().backward()
    assert calls == []
