"""gradcheck / gradgradcheck / functional.jacobian semantics as PyTorch's (issue 29):
outputs aliasing the perturbed input, grad_output passed through by the first derivative,
undefined output gradients, the complex-output wording of mismatches, and strict mode with
``create_graph=True``."""

from __future__ import annotations

import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.gradcheck import GradcheckError


def _double(*shape: int) -> ft.Tensor:
    return ft.randn(*shape, dtype=ft.float64, requires_grad=True)


# 1. an output that is the input, or a view of it, has the identity Jacobian numerically too

@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x.view(6), lambda x: x[1:], lambda x: x.t(),
                                lambda x: (x, x * 2)],
                         ids=["identity", "view", "slice", "transpose", "identity-and-other"])
def test_gradcheck_output_aliasing_input(fn):
    assert ft.autograd.gradcheck(fn, (_double(2, 3),))


def test_gradcheck_alias_still_catches_wrong_backward():
    class WrongIdentity(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        ft.autograd.gradcheck(WrongIdentity.apply, (_double(3),))


# 2. gradgradcheck when the first derivative is grad_output itself

def test_gradgradcheck_grad_output_passed_through():
    x, a, b = _double(3), _double(3), _double(3)
    assert ft.autograd.gradgradcheck(lambda x, a, b: x + a * b, (x, a, b))


@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x.view(2, 2), lambda x: x.sum() + x])
def test_gradgradcheck_linear_functions(fn):
    assert ft.autograd.gradgradcheck(fn, (_double(4),))


def test_gradgradcheck_with_given_grad_outputs():
    x, y = _double(3), _double(3)
    assert ft.autograd.gradgradcheck(lambda x, y: x - y, (x, y), (ft.randn(3, dtype=ft.float64),))


# 3. undefined output gradients (check_undefined_grad=True)

def _three_outputs(backward):
    class ThreeOutputs(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3, x * 4

        @staticmethod
        def backward(ctx, *grads):
            return backward(grads)

    return ThreeOutputs.apply


def _scaled(grads):
    return [g * k for g, k in zip(grads, (2, 3, 4)) if g is not None]


def _or_none(grads, total):
    """``total`` of the defined gradients, None when every one is undefined."""
    return None if all(g is None for g in grads) else total


def test_undefined_grad_backward_that_fails_on_some_none():
    # a backward assuming "all or exactly one defined" passes the Jacobian checks (one output seeded
    # at a time); the undefined-gradient check runs it with every gradient undefined first, where it
    # fails with a ValueError, which propagates (only a RuntimeError becomes a GradcheckError, as in
    # PyTorch 2.13: this file passes on torch too)
    def backward(grads):
        if all(g is not None for g in grads):
            return sum(_scaled(grads))
        (only,) = _scaled(grads)
        return only

    fn, x = _three_outputs(backward), _double(3)
    with pytest.raises(ValueError, match="not enough values to unpack"):
        ft.autograd.gradcheck(fn, (x,))
    assert ft.autograd.gradcheck(fn, (x,), check_undefined_grad=False)

    def refuse_some_none(grads):  # the same bug, raised as a RuntimeError
        if 0 < sum(g is None for g in grads) < 2 or all(g is None for g in grads):
            raise RuntimeError("cannot handle an undefined gradient")
        return sum(_scaled(grads))

    fn = _three_outputs(refuse_some_none)
    with pytest.warns(UserWarning, match="check_undefined_grad=False"):
        with pytest.raises(GradcheckError, match="Expected backward function to handle undefined output grads"):
            ft.autograd.gradcheck(fn, (x,))
    with pytest.warns(UserWarning, match="Backwards compatibility"):
        assert ft.autograd.gradcheck(fn, (x,), raise_exception=False) is False


def test_undefined_grad_backward_handling_none_passes():
    assert ft.autograd.gradcheck(_three_outputs(lambda grads: _or_none(grads, sum(_scaled(grads)))), (_double(3),))


def test_undefined_grad_backward_returning_a_number_is_refused():
    # every gradient undefined: sum([]) is the int 0, which PyTorch refuses with a RuntimeError
    with pytest.warns(UserWarning, match="Backwards compatibility"):
        with pytest.raises(GradcheckError, match="Expected backward function to handle undefined output grads"):
            ft.autograd.gradcheck(_three_outputs(lambda grads: sum(_scaled(grads))), (_double(3),))


def test_undefined_grad_must_give_zero_input_grads():
    def backward(grads):  # invents a gradient when exactly one output's is undefined
        if sum(g is None for g in grads) == 1:
            return sum(_scaled(grads)) + 1
        return _or_none(grads, sum(_scaled(grads)))

    with pytest.warns(UserWarning, match="Backwards compatibility"):
        with pytest.raises(GradcheckError, match="Expected all input grads to be undefined or zero when all output "
                                                 "grads are undefined or zero"):
            ft.autograd.gradcheck(_three_outputs(backward), (_double(3),))


def test_undefined_grad_materialized_by_default():
    class TwoOutputs(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x.sin()

        @staticmethod
        def backward(ctx, g1, g2):  # zeros stand in for undefined gradients
            (x,) = ctx.saved_tensors
            return g1 * 2 + g2 * x.cos()

    assert ft.autograd.gradcheck(TwoOutputs.apply, (_double(3),))


# 3'. the complex-output wording of mismatches

def _complex_scale(backward):
    class ComplexScale(ft.autograd.Function):  # real x -> (1 + 2j) x
        @staticmethod
        def forward(ctx, x):
            return x * (1 + 2j)

        @staticmethod
        def backward(ctx, g):
            return backward(g)

    return ComplexScale.apply


def test_complex_output_correct_backward_passes():
    assert ft.autograd.gradcheck(_complex_scale(lambda g: (g * (1 - 2j)).real), (_double(3),))


def test_complex_output_imaginary_part_mismatch():
    fn = _complex_scale(lambda g: (g * (1 + 1j)).real)  # right for the real part only
    with pytest.raises(GradcheckError, match="^While considering the imaginary part of complex outputs only, "
                                             "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        ft.autograd.gradcheck(fn, (_double(3),))


def test_complex_output_real_part_mismatch():
    fn = _complex_scale(lambda g: (g * (2 - 2j)).real)  # right for the imaginary part only
    with pytest.raises(GradcheckError, match="^While considering the real part of complex outputs only, "
                                             "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        ft.autograd.gradcheck(fn, (_double(3),))


def test_real_output_mismatch_has_no_prefix():
    class Wrong(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        ft.autograd.gradcheck(Wrong.apply, (_double(3),))


# 4. functional.jacobian(strict=True, create_graph=True)

def test_jacobian_strict_create_graph_independent_jacobian():
    x = _double(4)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is independent of input 0. "
                                           "This is not allowed in strict mode when create_graph=True."):
        ft.autograd.functional.jacobian(lambda a: a.clone(), x, strict=True, create_graph=True)
    res = ft.autograd.functional.jacobian(lambda a: a.clone(), x, strict=False, create_graph=True)
    assert (res.detach().numpy() == ft.eye(4, dtype=ft.float64).numpy()).all()
    # without create_graph a constant Jacobian is fine in strict mode
    res = ft.autograd.functional.jacobian(lambda a: a.clone(), x, strict=True)
    assert (res.numpy() == ft.eye(4, dtype=ft.float64).numpy()).all()


def test_jacobian_strict_create_graph_numbers_by_output():
    # PyTorch's message names the output's index ("input {i}" with i the output)
    with pytest.raises(RuntimeError, match="independent of input 1. This is not allowed in strict mode when "
                                           "create_graph=True"):
        ft.autograd.functional.jacobian(lambda a: (a ** 2, a * 2), _double(3), strict=True, create_graph=True)


def test_jacobian_strict_create_graph_nonlinear_ok():
    x = _double(3)
    jac = ft.autograd.functional.jacobian(lambda a: a ** 2, x, strict=True, create_graph=True)
    assert jac.requires_grad
    assert ft.allclose(jac.detach(), ft.diag(2 * x.detach()))
