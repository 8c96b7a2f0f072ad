"""Tensor-layer constructs that stop or replace gradients in eager mode (detach, no_grad, in-place
setitem, a custom Function's backward) under ``ft.func.grad`` (these were once silently
differentiated through: the transforms did not see them) and under ``ft.autograd.functional``
(which batches the eager backward walk). PyTorch's values (torch.func 2.15) are written in; the
full table of constructs and transforms is in test_tensor_func_semantics.py."""

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.autograd.functional as AF

X = [1.0, 2.0]


def _detach(t):
    return (t.detach() * t).sum()


def _no_grad(t):
    with ft.no_grad():
        y = t * t
    return (y * t).sum()


def _setitem(t):
    y = t.clone()
    y[0] = t[1]
    return y.sum()


CASES = {  # name: (function, torch.func.grad's value at X)
    "detach": (_detach, [1.0, 2.0]),
    "no_grad": (_no_grad, [1.0, 4.0]),
    "setitem": (_setitem, [0.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_func_grad_respects_eager_gradient_stops(name):
    f, expected = CASES[name]
    got = ft.func.grad(f)(ft.tensor(X, dtype=ft.float64))
    np.testing.assert_allclose(got.numpy(), expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_autograd_functional_respects_them(name):
    f, expected = CASES[name]
    _, g = AF.vjp(f, ft.tensor(X, dtype=ft.float64))
    np.testing.assert_allclose(g.numpy(), expected)
    jac = AF.jacobian(f, ft.tensor(X, dtype=ft.float64))
    np.testing.assert_allclose(jac.numpy(), expected)


def test_func_grad_refuses_or_uses_custom_function_backward():
    class Sq(ft.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g * 100

    x = ft.tensor(X, dtype=ft.float64)
    with pytest.raises(RuntimeError, match="setup_context"):  # forward(ctx, ...): torch.func refuses too
        ft.func.grad(lambda t: Sq.apply(t).sum())(x)

    class Sq2(ft.autograd.Function):  # the torch.func style: forward without ctx, plus setup_context
        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 100

    got = ft.func.grad(lambda t: Sq2.apply(t).sum())(x)
    np.testing.assert_allclose(got.numpy(), [100.0, 100.0])
