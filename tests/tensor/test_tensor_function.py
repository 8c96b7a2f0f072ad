"""Custom autograd Functions."""

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.autograd import Function, once_differentiable


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulConst(Function):
    @staticmethod
    def forward(ctx, x, c):
        ctx.c = c
        return x * c

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c, None


class SortWithIndex(Function):
    @staticmethod
    def forward(ctx, x):
        idx = x.argsort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return x[idx], idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (idx,) = ctx.saved_tensors
        out = ft.zeros_like(g)
        out[idx] = g
        return out


def test_basic_function_and_node():
    x = ft.tensor([0.0, 1.0], requires_grad=True, dtype=ft.float64)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward" and y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))
    assert ft.autograd.gradcheck(Exp.apply, (x,))
    assert ft.autograd.gradgradcheck(Exp.apply, (x,))  # backward written with tensor ops: differentiable


def test_needs_input_grad_and_non_tensor_args():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["needs"] = ctx.needs_input_grad
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    a = ft.ones(2, requires_grad=True)
    Probe.apply(a, ft.ones(2), 3)
    assert seen["needs"] == (True, False, False)
    out = MulConst.apply(a, 5.0)
    out.sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]
    assert not MulConst.apply(ft.ones(2), 2.0).requires_grad  # nothing requires grad: no node


def test_mark_non_differentiable_and_materialize():
    x = ft.tensor([3.0, 1.0, 2.0], requires_grad=True)
    vals, idx = SortWithIndex.apply(x)
    assert vals.tolist() == [1.0, 2.0, 3.0] and not idx.requires_grad and vals.requires_grad
    (vals * ft.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [100.0, 1.0, 10.0]

    got = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            got["g2"] = g2
            return g1

    y = ft.ones(2, requires_grad=True)
    a, b = Two.apply(y)
    a.sum().backward()
    assert got["g2"] is None

    class TwoMat(Two):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

    a, b = TwoMat.apply(y)
    a.sum().backward()
    assert got["g2"].tolist() == [0.0, 0.0]  # materialized zeros by default


def test_mark_dirty():
    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = ft.ones(2, requires_grad=True)
    b = a * 2
    out = AddOneInplace.apply(b)
    assert out is b and b.tolist() == [3.0, 3.0] and b.grad_fn.name() == "AddOneInplaceBackward"
    b.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
        AddOneInplace.apply(ft.ones(2, requires_grad=True))


def test_saved_tensor_version_check_in_function():
    x = ft.ones(2, requires_grad=True)
    a = x * 1
    y = Exp.apply(a)
    y.mul_(2)  # Exp saved its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_once_differentiable():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ft.tensor([3.0], requires_grad=True)
    (g,) = ft.autograd.grad(Square.apply(x) * x, x, create_graph=True)  # the grad flowing in requires grad
    assert g.item() == 27.0
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with @once_differentiable"):
        g.backward()
    x.grad = None
    Square.apply(x).backward()
    assert x.grad.item() == 6.0


def test_wrong_gradient_count_and_shape():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients \\(expected 2, got 1\\)"):
        Bad.apply(ft.ones(2, requires_grad=True), ft.ones(2)).sum().backward()

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ft.ones(5)

    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0 - got \\[5\\] but expected shape compatible with \\[2\\]"):
        BadShape.apply(ft.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        Bad()


def test_setup_context_style_and_complex():
    class Mul(Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y.conj(), g * x.conj()  # PyTorch's convention for complex

    a = ft.randn(3, dtype=ft.complex128, requires_grad=True)
    b = ft.randn(3, dtype=ft.complex128, requires_grad=True)
    assert ft.autograd.gradcheck(Mul.apply, (a, b))
    p, q = ft.randn(3, dtype=ft.float64, requires_grad=True), ft.randn(3, dtype=ft.float64, requires_grad=True)
    assert ft.autograd.gradcheck(Mul.apply, (p, q))


def test_save_for_backward_names_the_bad_argument_after_a_tensor():
    class Saves(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)  # (a multi-element tensor before it: no elementwise == in the search)
            return x * 2

    with pytest.raises(TypeError, match="can only save variables, but argument 1 is of type int"):
        Saves.apply(ft.ones(3, requires_grad=True))
