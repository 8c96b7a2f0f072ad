"""Module.register_full_backward_hook / register_full_backward_pre_hook (PyTorch's semantics)."""

import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft


def _lin():
    ft.manual_seed(3)
    return ft.nn.Linear(3, 2).double()


def _x(requires_grad=True):
    g = ft.Generator().manual_seed(4)
    return ft.randn(4, 3, generator=g, dtype=ft.float64).requires_grad_(requires_grad)


class ThreeArgs(ft.nn.Module):
    """Two tensors and a number in, a tensor, a number and a tensor out."""

    def forward(self, a, k, b):
        return a * k + b, 3, b * 2


def test_grad_input_and_grad_output_values():
    lin, x = _lin(), _x()
    seen = []
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append((m, gin, gout)))
    lin(x).sum().backward()
    assert len(seen) == 1
    m, gin, gout = seen[0]
    assert m is lin and isinstance(gin, tuple) and isinstance(gout, tuple) and len(gin) == len(gout) == 1
    np.testing.assert_allclose(gout[0].numpy(), np.ones((4, 2)))
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(gin[0].numpy(), np.ones((4, 2)) @ w)
    np.testing.assert_allclose(x.grad.numpy(), np.ones((4, 2)) @ w)


def test_hook_result_replaces_grad_input_only():
    lin, x = _lin(), _x()
    lin(x).sum().backward()
    w_grad = lin.weight.grad.clone()
    lin.zero_grad()
    x.grad = None
    lin.register_full_backward_hook(lambda m, gin, gout: (gin[0] * 3,))
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.ones((4, 2)) @ lin.weight.detach().numpy())
    np.testing.assert_allclose(lin.weight.grad.numpy(), w_grad.numpy())  # parameters are inside the module


def test_pre_hook_replaces_grad_output_for_everything_behind_it():
    lin, x = _lin(), _x()
    lin(x).sum().backward()
    x_grad, w_grad = x.grad.clone(), lin.weight.grad.clone()
    lin.zero_grad()
    x.grad = None
    order = []
    lin.register_full_backward_pre_hook(lambda m, gout: order.append("pre") or (gout[0] * 10,))
    lin.register_full_backward_hook(lambda m, gin, gout: order.append(("full", gout[0].numpy()[0, 0])))
    lin(x).sum().backward()
    assert order == ["pre", ("full", 10.0)]
    np.testing.assert_allclose(x.grad.numpy(), 10 * x_grad.numpy())
    np.testing.assert_allclose(lin.weight.grad.numpy(), 10 * w_grad.numpy())


def test_none_for_non_tensors_zeros_for_tensors_without_gradient():
    m = ThreeArgs()
    seen = []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append((gin, gout)))
    a = ft.randn(2, requires_grad=True)
    b = ft.randn(2)  # does not require grad
    out = m(a, 2.0, b)
    assert isinstance(out, tuple) and out[1] == 3 and not out[2].requires_grad
    assert out[0].grad_fn.name() == "BackwardHookFunctionBackward"
    out[0].sum().backward()
    (gin, gout) = seen[0]
    assert gin[1] is None and gout[1] is None and gout[2] is None  # non-tensors; an output without gradient
    np.testing.assert_allclose(gin[0].numpy(), [2.0, 2.0])
    np.testing.assert_allclose(gin[2].numpy(), [0.0, 0.0])  # a tensor input that got no gradient: zeros
    np.testing.assert_allclose(gout[0].numpy(), [1.0, 1.0])


def test_no_input_requires_grad_warns_and_passes_none():
    lin = _lin()
    seen = []
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append(gin))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(_x(False)).sum().backward()
    assert seen == [(None,)]
    assert lin.weight.grad is not None


def test_no_input_requires_grad_hook_must_return_none():
    lin = _lin()
    lin.register_full_backward_hook(lambda m, gin, gout: (ft.ones(4, 3),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="no input requires gradient should always return None"):
            lin(_x(False)).sum().backward()
    lin2 = _lin()
    lin2.register_full_backward_hook(lambda m, gin, gout: (None,))  # all None is fine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin2(_x(False)).sum().backward()


def test_pre_hook_alone_does_not_warn():
    lin = _lin()
    seen = []
    lin.register_full_backward_pre_hook(lambda m, gout: seen.append(len(gout)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lin(_x(False)).sum().backward()
    assert seen == [1]


@pytest.mark.parametrize("register, hook, words", [
    ("register_full_backward_hook", lambda m, gin, gout: (gin[0], gin[0]),
     "Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
    ("register_full_backward_pre_hook", lambda m, gout: (gout[0], gout[0]),
     "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
])
def test_wrong_number_of_gradients(register, hook, words):
    lin = _lin()
    getattr(lin, register)(hook)
    with pytest.raises(RuntimeError, match=words):
        lin(_x()).sum().backward()


def test_in_place_on_outputs_is_refused():
    lin = _lin()
    lin.register_full_backward_hook(lambda m, gin, gout: None)
    y = lin(_x())
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified inplace"):
        y.add_(1)
    z = lin(_x()).clone()
    z.add_(1)  # a clone may change
    z.sum().backward()


def test_non_tensor_output_warns_and_hook_does_not_run():
    class Dict(ft.nn.Module):
        def forward(self, a):
            return {"y": a * 2}

    m = Dict()
    seen = []
    m.register_full_backward_hook(lambda *args: seen.append(1))
    a = ft.randn(2, requires_grad=True)
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = m(a)
    out["y"].sum().backward()
    assert seen == []
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])


def test_no_grad_call_is_not_wrapped():
    lin = _lin()
    lin.register_full_backward_hook(lambda m, gin, gout: None)
    with ft.no_grad():
        y = lin(_x())
    assert not y.requires_grad and y.grad_fn is None


def test_once_per_call_and_per_pass_remove_and_prepend():
    lin = ft.nn.Linear(3, 3).double()
    order = []
    h1 = lin.register_full_backward_hook(lambda m, gin, gout: order.append("first"))
    lin.register_full_backward_hook(lambda m, gin, gout: order.append("prepended"), prepend=True)
    x = _x()
    lin(lin(x)).sum().backward()  # two calls of the module
    assert order == ["prepended", "first"] * 2
    order.clear()
    y = lin(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert order == ["prepended", "first"] * 2
    order.clear()
    h1.remove()
    lin(x).sum().backward()
    assert order == ["prepended"]


def test_autograd_grad_and_double_backward():
    class Cube(ft.nn.Module):
        def forward(self, x):
            return x ** 3

    m = Cube()
    seen = []
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(gin[0]))
    x = ft.tensor([1.0, 2.0], dtype=ft.float64, requires_grad=True)
    (g,) = ft.autograd.grad(m(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0].detach().numpy(), [3.0, 12.0])
    (h,) = ft.autograd.grad(g.sum(), x)  # reaches the inputs' node without the outputs': no hook call
    np.testing.assert_allclose(h.numpy(), [6.0, 12.0])
    assert len(seen) == 1


def test_module_gradients_unchanged_by_hooks():
    lin, x = _lin(), _x()
    lin(x).pow(2).sum().backward()
    ref = [p.grad.clone() for p in lin.parameters()] + [x.grad.clone()]
    lin.zero_grad()
    x.grad = None
    lin.register_full_backward_hook(lambda m, gin, gout: None)
    lin.register_full_backward_pre_hook(lambda m, gout: None)
    lin(x).pow(2).sum().backward()
    for r, got in zip(ref, [p.grad for p in lin.parameters()] + [x.grad]):
        np.testing.assert_allclose(got.numpy(), r.numpy())


def test_in_place_module_on_hooked_inputs_is_refused():
    class Doubler(ft.nn.Module):
        def forward(self, x):
            return x.mul_(2)  # in place on its input, like ReLU(inplace=True)

    hooked = Doubler()
    hooked.register_full_backward_hook(lambda m, gin, gout: None)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        hooked(_x() * 1)
    x = _x()
    Doubler()(x * 1).sum().backward()  # without hooks it is allowed
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((4, 3)))
