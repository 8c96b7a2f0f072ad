"""gradcheck as PyTorch's: in-place perturbation, nondet_tol, zero/undefined output grads,
output shape/dtype checks, functions without differentiable outputs (our own tests)."""

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.autograd.gradcheck import GradcheckError


def _x(*vals):
    return ft.tensor(np.array(vals, dtype=np.float64), requires_grad=True)


def test_function_reading_inputs_through_a_closure_passes():
    x = _x(0.3, -0.7, 1.1)
    w = _x(0.5, 2.0, -1.0)

    def f(_unused):
        return (x.sin() * w).sum() + x.exp()  # reads x and w from the closure, not from its argument

    assert ft.autograd.gradcheck(f, (x,))
    assert ft.autograd.gradcheck(lambda a, b: a * w + b.sin() * x, (x, w))
    np.testing.assert_array_equal(x.detach().numpy(), [0.3, -0.7, 1.1])  # restored exactly


def _noisy_backward(scale):
    rng = np.random.default_rng(0)

    class Noisy(ft.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + ft.tensor(rng.standard_normal(tuple(g.shape)) * scale))

    return Noisy.apply


def test_nondet_tol():
    fn = _noisy_backward(1e-9)
    with pytest.raises(GradcheckError, match="Backward is not reentrant.*nondeterminism was 0.0"):
        ft.autograd.gradcheck(fn, (_x(1.0, 2.0),))
    assert ft.autograd.gradcheck(fn, (_x(1.0, 2.0),), nondet_tol=1e-6)
    assert ft.autograd.gradcheck(fn, (_x(1.0, 2.0),), raise_exception=False) is False
    assert ft.autograd.gradcheck(_noisy_backward(0.0), (_x(1.0, 2.0),))


def _with_backward(backward):
    class F(ft.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 3

    F.backward = staticmethod(backward)
    return F.apply


def test_zero_output_grads_must_give_zero_input_grads():
    def leaks(ctx, g):
        return g * 3 + (1.0 if float(g.abs().sum()) == 0 else 0.0)

    def raises(ctx, g):
        if float(g.abs().sum()) == 0:
            raise RuntimeError("cannot handle zeros")
        return g * 3

    for kw in ({}, {"check_undefined_grad": False}):  # as in PyTorch, this check always runs
        with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
            ft.autograd.gradcheck(_with_backward(leaks), (_x(1.0, 2.0),), **kw)
        with pytest.raises(RuntimeError, match="cannot handle zeros"):  # the backward's own error
            ft.autograd.gradcheck(_with_backward(raises), (_x(1.0, 2.0),), **kw)


def test_outputs_must_keep_shape_and_dtype_under_perturbation():
    with pytest.raises(AssertionError, match="same shape when inputs are perturbed"):
        ft.autograd.gradcheck(lambda t: t[t > 0.5], (_x(0.5, 1.0),))
    with pytest.raises(AssertionError, match="same dtype when inputs are perturbed"):
        ft.autograd.gradcheck(lambda t: t.float() if float(t[0]) > 0.5 else t, (_x(0.5, 1.0),))


def test_no_differentiable_outputs():
    x = _x(0.5, 1.0)
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        ft.autograd.gradcheck(lambda t: t.detach() * 2, (x,))
    assert ft.autograd.gradcheck(lambda t: t.detach() * 2, (x,), raise_exception=False) is False
    assert ft.autograd.gradcheck(lambda t: ft.ones(2, dtype=ft.float64), (x,))  # truly constant: fine
    assert ft.autograd.gradcheck(lambda t: (t > 0.7).long(), (x,))  # integer outputs are not checked


def test_mismatch_and_error_class():
    class Wrong(ft.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * t

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 t g

    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        ft.autograd.gradcheck(Wrong.apply, (_x(1.0, 2.0),))
    assert ft.autograd.gradcheck(Wrong.apply, (_x(1.0, 2.0),), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        ft.autograd.gradcheck(lambda t: t, (ft.ones(2, dtype=ft.float64),))
    with pytest.warns(UserWarning, match="not a double precision"):
        ft.autograd.gradcheck(lambda t: t * 2, (ft.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2)


def test_gradgradcheck_passes_options_through():
    x = _x(0.3, 0.9)
    assert ft.autograd.gradgradcheck(lambda t: t.sin() * t, (x,), nondet_tol=1e-12)
    assert ft.autograd.gradgradcheck(lambda t: t.tanh(), (x,), check_undefined_grad=False)
