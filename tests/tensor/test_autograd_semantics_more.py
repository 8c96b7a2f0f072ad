"""Autograd semantics as PyTorch 2.13's, the last bullets of issue 29, each checked live
against torch when written (its test_autograd.py cases): errors, warnings, multi-output
nodes, in-place and view corner cases, and messages."""

from __future__ import annotations

import pytest

import funcgrad.tensor as ft

_FREED = "Trying to backward through the graph a second time"


# ---------------------------------------------------------------- errors

def test_second_backward_through_index_put_of_an_index_raises():
    a = ft.randn(4, requires_grad=True)
    b = a * 2
    c = ft.zeros(4)
    c[[1, 2]] = b[[1, 1]]
    c.sum().backward()
    with pytest.raises(RuntimeError, match=_FREED):
        c.sum().backward()


@pytest.mark.parametrize("fn", [lambda a: a[[1, 1]], lambda a: a[ft.tensor([1, 1])],
                                lambda a: a.gather(0, ft.tensor([1, 1])),
                                lambda a: a.index_select(0, ft.tensor([0, 2])),
                                lambda a: ft.where(a > 0, a, 0.0), lambda a: a[a > 0]],
                         ids=["list", "tensor", "gather", "index_select", "where", "mask"])
def test_second_backward_through_saved_indices_raises(fn):
    a = ft.tensor([1.0, -2.0, 3.0, 4.0], requires_grad=True)
    out = fn(a)
    out.sum().backward()
    with pytest.raises(RuntimeError, match=_FREED):
        out.sum().backward()


@pytest.mark.parametrize("fn", [lambda a: a[1:3], lambda a: a + ft.ones(4), lambda a: a[[1, 1]]],
                         ids=["slice", "add", "index"])
def test_second_backward_allowed_when_nothing_index_saved_or_retained(fn):
    a = ft.randn(4, requires_grad=True)
    out = fn(a)
    out.sum().backward(retain_graph=True)
    out.sum().backward()  # PyTorch: a slice and add save no tensors; retain_graph keeps indices
    assert a.grad is not None


def test_data_of_integer_dtype_on_a_tensor_requiring_grad_raises():
    for a in (ft.randn(3, requires_grad=True), ft.randn(3, requires_grad=True) * 2):
        with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
            a.data = ft.tensor([1, 2, 3])
    b = ft.randn(3)
    b.data = ft.tensor([1, 2, 3])  # allowed without requires_grad, as in PyTorch
    assert b.dtype == ft.int64


def test_grad_assignment_checks():
    x = ft.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    with pytest.raises(RuntimeError, match="gradient of size '\\[4\\]' to a tensor of size '\\[3\\]'"):
        x.grad = ft.randn(4)
    with pytest.raises(RuntimeError, match="gradient with dtype 'double' to a tensor with grad_dtype 'Float'"):
        x.grad = ft.randn(3, dtype=ft.float64)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = [1.0, 2.0, 3.0]
    x.grad = x.detach()  # the same memory as another tensor is fine
    assert x.grad is not None


def test_inplace_on_inference_tensor_outside_inference_mode_raises():
    with ft.inference_mode():
        x = ft.randn(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        x.add_(1)
