"""PyTorch's gradient layout contract for leaves: a leaf whose value is dense gets a ``.grad`` with
its strides (a column-major weight, a column-major gradient), any other leaf a C-ordered one. The
strides below are what torch 2.13 gives for the same calls (``w.grad.stride()``)."""
import numpy as np

import funcgrad.tensor as ft


def _strides(t: ft.Tensor) -> tuple[int, ...]:
    a = t.numpy()
    return tuple(s // a.itemsize for s in a.strides)


def test_column_major_leaf_gets_column_major_grad_through_linear() -> None:
    w = ft.from_numpy(np.asfortranarray(np.arange(12.0).reshape(4, 3))).requires_grad_()
    x = ft.randn(5, 3, dtype=ft.float64)
    ft.nn.functional.linear(x, w).sum().backward()
    assert _strides(w.grad) == (1, 4)  # torch: (1, 4)
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (4, 1)))


def test_row_major_leaf_gets_row_major_grad_from_a_transposed_gradient() -> None:
    w = ft.randn(3, 4, dtype=ft.float64, requires_grad=True)
    (w.t() * 2).sum().backward()  # the gradient arrives as the transpose of a C array
    assert _strides(w.grad) == (4, 1)
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0))


def test_non_dense_leaf_gets_contiguous_grad() -> None:
    v = ft.from_numpy(np.random.rand(4, 6)[:, ::2]).requires_grad_()
    (v * 2).sum().backward()
    assert _strides(v.grad) == (3, 1)  # torch: (3, 1)
    np.testing.assert_array_equal(v.grad.numpy(), np.full((4, 3), 2.0))
