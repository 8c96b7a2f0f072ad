"""Issue 29's small PyTorch-fidelity fixes, each with PyTorch's own result or message (checked
against torch 2.13 when these tests were written): default_collate's float64, F.pad's reflect-size
error, cross_entropy/nll_loss's IndexError for out-of-range targets, calculate_gain's Python ints,
ft.func.grad/grad_and_value's RuntimeError for a non-scalar output."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F
from funcgrad.tensor.utils.data import default_collate


def test_default_collate_keeps_python_floats_float64():
    assert default_collate([0.5, 1.5]).dtype is ft.float64
    assert default_collate([1, 2]).dtype is ft.int64
    assert default_collate([True, False]).dtype is ft.bool
    assert default_collate([np.float32(1), np.float32(2)]).dtype is ft.float32  # NumPy scalars keep theirs
    assert default_collate([np.float64(1), np.float64(2)]).dtype is ft.float64
    batch = default_collate([(ft.ones(2), 0.25, 3), (ft.zeros(2), 0.75, 4)])
    assert batch[1].dtype is ft.float64 and batch[1].tolist() == [0.25, 0.75] and batch[2].dtype is ft.int64


@pytest.mark.parametrize("shape, pad, msg", [
    ((1, 1, 3), (3, 3), "Argument #4: Padding size should be less than the corresponding input dimension, but got: "
                        "padding (3, 3) at dimension 2 of input [1, 1, 3]"),
    ((1, 1, 3), (1, 3), "padding (1, 3) at dimension 2 of input [1, 1, 3]"),
    ((1, 1, 3, 3), (0, 0, 3, 1), "Argument #6: Padding size should be less than the corresponding input dimension, "
                                 "but got: padding (3, 1) at dimension 2 of input [1, 1, 3, 3]"),
])
def test_pad_reflect_size_errors_are_pytorchs(shape, pad, msg):
    with pytest.raises(RuntimeError) as e:
        F.pad(ft.zeros(*shape), pad, mode="reflect")
    assert msg in str(e.value)
    assert F.pad(ft.arange(3.0).reshape(1, 1, 3), (2, 2), mode="reflect").tolist() == [[[2, 1, 0, 1, 2, 1, 0]]]


@pytest.mark.parametrize("target", [3, -1, 7])
def test_out_of_range_targets_are_index_errors(target):
    x, t = ft.zeros(2, 3), ft.tensor([0, target])
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        F.cross_entropy(x, t, weight=ft.ones(3))
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        F.nll_loss(x, t)
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        F.cross_entropy(ft.zeros(1, 3, 2), ft.tensor([[0, target]]))
    assert F.cross_entropy(x, ft.tensor([0, -100])).item() == pytest.approx(np.log(3))  # ignore_index is fine


def test_calculate_gain_types_are_pytorchs():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "sigmoid"):
        g = ft.nn.init.calculate_gain(name)
        assert g == 1 and type(g) is int, name
    assert ft.nn.init.calculate_gain("tanh") == 5.0 / 3
    assert ft.nn.init.calculate_gain("relu") == np.sqrt(2.0)
    assert ft.nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(1.3867504905630728, rel=1e-15)
    assert ft.nn.init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        ft.nn.init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        ft.nn.init.calculate_gain("gelu")


@pytest.mark.parametrize("name", ["grad", "grad_and_value"])
def test_grad_of_non_scalar_output_is_a_runtime_error(name):
    transform = getattr(ft.func, name)
    with pytest.raises(RuntimeError, match=rf"{name}\(f\)\(\*args\): Expected f\(\*args\) to return a scalar Tensor, "
                                           r"got tensor with 1 dims. Maybe you wanted to use the vjp or jacrev"):
        transform(lambda x: x * 2)(ft.ones(3))
    with pytest.raises(RuntimeError, match="got tensor with 1 dims"):
        transform(lambda x: (x * 2, None), has_aux=True)(ft.ones(3))
    g = transform(lambda x: (x * x).sum())(ft.ones(3))
    assert (g[0] if name == "grad_and_value" else g).tolist() == [2.0, 2.0, 2.0]


def test_vmap_result_keeps_autograd_history():
    x = ft.tensor(np.arange(6.0).reshape(3, 2) / 5, requires_grad=True)
    w = ft.tensor([0.3, -0.7], requires_grad=True)
    y = ft.func.vmap(lambda r, ww: (r * ww).sin().sum(), in_dims=(0, None))(x, w)
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    xv, wv = x.detach().numpy(), w.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv * wv) * wv, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), (np.cos(xv * wv) * xv).sum(0), rtol=1e-6)
    # chunked, and several outputs (an integer one is a constant)
    s, idx = ft.func.vmap(lambda r: (r.sin(), r.argmax()), chunk_size=2)(x)
    assert s.requires_grad and not idx.requires_grad and idx.tolist() == [1, 1, 1]
    # functional_call with the parameters passed in (torch.func's pattern for per-example calls)
    m = ft.nn.Linear(2, 1)
    out = ft.func.vmap(lambda p, xx: ft.func.functional_call(m, p, (xx,)), in_dims=(None, 0))(
        dict(m.named_parameters()), x.detach())
    out.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), xv.sum(0, keepdims=True), rtol=1e-6)
    assert m.bias.grad.tolist() == pytest.approx([3.0])
    # without grad mode, or with nothing requiring grad: plain results
    with ft.no_grad():
        assert not ft.func.vmap(ft.sin)(x).requires_grad


def test_vmap_result_refuses_a_second_order_backward():
    x = ft.ones(3, 2, requires_grad=True)
    y = ft.func.vmap(lambda r: (r ** 2).sum())(x).sum()
    with pytest.raises(RuntimeError, match="recorded for one backward pass.*create_graph=True"):
        ft.autograd.grad(y, x, create_graph=True)
    (g,) = ft.autograd.grad(ft.func.vmap(lambda r: (r ** 2).sum())(x).sum(), x)
    assert g.tolist() == [[2.0, 2.0]] * 3
