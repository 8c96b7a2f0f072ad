"""Tensor.norm's 2-norm forms (p=2, 'fro', None): values and second derivatives."""

import numpy as np
import pytest

import funcgrad.tensor as ft


@pytest.mark.parametrize("p", [None, 2, "fro"])
def test_two_norm_second_derivative_at_a_zero_component(p):
    x = ft.tensor([0.0, 3.0, -4.0], dtype=ft.float64, requires_grad=True)
    n = x.norm(p=p)
    g, = ft.autograd.grad(n, x, create_graph=True)
    h, = ft.autograd.grad(g[0], x)
    assert n.item() == pytest.approx(5.0)
    np.testing.assert_allclose(g.detach().numpy(), [0.0, 0.6, -0.8])
    # d2/dx0^2 sqrt(x0^2 + 25) at x0 = 0 is 1/5 (p=None squared |x|, whose second derivative at 0 was 0)
    np.testing.assert_allclose(h.numpy(), [0.2, 0.0, 0.0], atol=1e-12)


def test_two_norm_of_complex_is_the_modulus_norm():
    z = ft.tensor([3 + 4j, 0j], dtype=ft.complex128)
    assert z.norm().item() == pytest.approx(5.0) and z.norm(p=None).item() == pytest.approx(5.0)
