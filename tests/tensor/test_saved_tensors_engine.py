"""Saved tensors of graph nodes: version counters, pack hooks, detach_ (PyTorch's
test_saved_variable_* and test_saved_tensor_hooks_* behaviours; our own tests)."""

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_saved_result_shares_the_outputs_version_counter():
    a = ft.rand(2, requires_grad=True)
    b = ft.exp(a)
    r = b.grad_fn._saved_result
    assert r._version == b._version
    np.testing.assert_array_equal(r.detach().numpy(), b.detach().numpy())
    with ft.no_grad():
        b += 1
    assert r._version == b._version  # the same counter: the in-place change is seen
    np.testing.assert_array_equal(r.detach().numpy(), b.detach().numpy())
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.grad_fn._saved_result
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_detach_in_place_of_a_saved_input_raises_at_backward():
    a = ft.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="saved tensor that has been detached in-place"):
        b.backward()
    # a saved output may be detached: the node saved the value, not the tensor's history
    a = ft.tensor(1.0, requires_grad=True).clone()
    b = a.exp()
    a.detach_()
    b.backward()


def test_pack_hook_gets_a_detached_alias_without_recording():
    seen = []

    def pack(t):
        seen.append((t.requires_grad, t.grad_fn, ft.is_grad_enabled(), t._version))
        return t

    a = ft.tensor([1.0, 2.0], requires_grad=True)
    x = a * 1
    with ft.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = x.sin()
    assert seen == [(False, None, False, 0)]
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos([1.0, 2.0]))
    # the alias shares memory and version counter with the saved tensor
    holder = []
    with ft.autograd.graph.saved_tensors_hooks(lambda t: holder.append(t) or t, lambda t: t):
        z = x.sin()  # saves its input, x
    with ft.no_grad():
        x.add_(1)
    assert holder[0]._version == x._version
    np.testing.assert_allclose(holder[0].numpy(), x.detach().numpy())
    del z


def test_pack_hook_that_modifies_its_input_in_place_raises():
    a = ft.randn(5, requires_grad=True)

    def inc(t):
        t += 1
        return t

    with ft.autograd.graph.saved_tensors_hooks(inc, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            ft.exp(a)
    y = ft.exp(a)
    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        y.grad_fn._raw_saved_result.register_hooks(inc, lambda t: t)


def test_saved_tensor_objects_are_made_once_and_follow_the_node():
    # nodes keep raw arrays and make SavedTensor objects when asked: the same object each time
    x = ft.randn(3, requires_grad=True)
    y = (x * 1).sin()
    raw = y.grad_fn._raw_saved_self
    assert raw is y.grad_fn._raw_saved_self
    y.sum().backward()
    assert raw._data is None  # released with the node
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn._saved_self
    # asked for only after backward: a released SavedTensor
    z = (x * 1).exp()
    z.sum().backward()
    assert isinstance(z.grad_fn._raw_saved_result, ft.autograd.graph.SavedTensor)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.grad_fn._saved_result
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.sum().backward()


def test_a_node_that_saved_nothing_runs_again_after_backward():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x + 1  # AddBackward0 saves no tensor: PyTorch lets it run twice
    y.sum().backward()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_saved_values_checked_in_backward_without_being_asked_for():
    # the in-place and detach_ checks hold for nodes whose saved values nobody looked at
    a = ft.tensor([1.0, 2.0], requires_grad=True) * 1
    b = a.tanh()  # saves its result
    with ft.no_grad():
        b.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of Tanh, is at version 1; expected version 0"):
        b.sum().backward()
    a = ft.tensor([1.0, 2.0], requires_grad=True) * 1
    c = a.sin() * 3  # SinBackward0 saves a, reached through MulBackward0
    a.detach_()
    with pytest.raises(RuntimeError, match="detached in-place"):
        c.sum().backward()
    # retain_graph: the same gradients twice, then the saved values are gone
    x = ft.tensor([0.5, 1.5], requires_grad=True)
    y = x.sin().tanh().sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
