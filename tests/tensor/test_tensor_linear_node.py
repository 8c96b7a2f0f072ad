"""``F.linear`` / ``nn.Linear`` as one recorded node (the dense kernel), against the product-and-sum
composition it replaces: values, gradients, double backward, dtypes, node names and the fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F

RNG = np.random.default_rng(3)


def _composed(x, w, b):
    out = x.matmul(w.t())
    return out if b is None else out + b


def _leaves(*shapes, dtype=ft.float64):
    return [ft.tensor(RNG.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]


@pytest.mark.parametrize("x_shape", [(4, 3), (2, 5, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_the_composition_to_second_order(x_shape, bias):
    x, w, b = _leaves(x_shape, (2, 3), (2,))
    b = b if bias else None
    ins = [t for t in (x, w, b) if t is not None]
    outs = []
    for f in (F.linear, _composed):
        y = f(x, w, b)
        g = ft.autograd.grad((y ** 3).sum(), ins, create_graph=True)
        gg = ft.autograd.grad(sum((gi ** 2).sum() for gi in g), ins)
        outs.append([y] + list(g) + list(gg))
    for a, r in zip(*outs):
        np.testing.assert_allclose(a.detach().numpy(), r.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_linear_is_one_node_named_as_torch():
    x, w, b = _leaves((4, 3), (2, 3), (2,))
    assert type(F.linear(x, w, b).grad_fn).__name__ == "AddmmBackward0"
    assert type(F.linear(x, w).grad_fn).__name__ == "MmBackward0"
    y = F.linear(x, w, b)
    assert {type(n).__name__ for n, _ in y.grad_fn.next_functions} == {"AccumulateGrad"}


def test_linear_keeps_float32():
    lin = ft.nn.Linear(3, 2)
    x = ft.randn(4, 3, requires_grad=True)
    y = lin(x)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == lin.weight.grad.dtype == lin.bias.grad.dtype == ft.float32


def test_linear_outside_the_kernel_keeps_torch_errors_and_vectors():
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        F.linear(ft.randn(4, 3), ft.randn(2, 5))
    x, w, b = _leaves((3,), (2, 3), (2,))  # a single vector: the composition
    np.testing.assert_allclose(F.linear(x, w, b).detach().numpy(), w.detach().numpy() @ x.detach().numpy()
                               + b.detach().numpy(), rtol=1e-12)


def test_norm_layers_record_pytorchs_node_names():
    # torch 2.13: LayerNorm -> NativeLayerNormBackward0, BatchNorm2d (training) -> NativeBatchNormBackward0
    x = ft.randn(2, 3, 4, 5, requires_grad=True)
    assert type(ft.nn.LayerNorm(5)(x).grad_fn).__name__ == "NativeLayerNormBackward0"
    assert type(ft.nn.BatchNorm2d(3)(x).grad_fn).__name__ == "NativeBatchNormBackward0"
