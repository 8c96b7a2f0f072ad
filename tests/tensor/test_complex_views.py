"""``view_as_real`` / ``view_as_complex`` as primitives (funcgrad/tensor/complex_views.py): values,
that they share memory, their rules to second order in both modes, vmap, and the fake device
(no host read). Their autograd view semantics against torch are in test_autograd_semantics_more.py."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fake_backend as fb  # noqa: E402
import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
from funcgrad.tensor.complex_views import view_as_complex_array, view_as_real_array  # noqa: E402
from funcgrad.testing import check_grads  # noqa: E402

RNG = np.random.default_rng(0)
Z = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
X = RNG.normal(size=(3, 4, 2))


@pytest.mark.parametrize("z", [Z, Z.T, Z[:, ::2], Z[1], Z.astype(np.complex64), np.array(1 + 2j)])
def test_view_as_real_is_a_view_of_any_layout(z):
    r = view_as_real_array(z)
    assert r.shape == z.shape + (2,) and r.dtype == z.real.dtype and np.shares_memory(r, z)
    np.testing.assert_array_equal(r[..., 0], z.real)
    np.testing.assert_array_equal(r[..., 1], z.imag)


@pytest.mark.parametrize("x", [X, X[:, 1:], X.astype(np.float32)])
def test_view_as_complex_is_a_view_when_pairs_are_adjacent(x):
    c = view_as_complex_array(x)
    assert c.shape == x.shape[:-1] and np.shares_memory(c, x)
    np.testing.assert_array_equal(c, x[..., 0] + 1j * x[..., 1])


def test_view_as_complex_of_a_wrong_last_axis_is_named():
    with pytest.raises(ValueError, match=r"last axis must hold \(re, im\) pairs \(size 2\), got shape \(3, 4\)"):
        view_as_complex_array(Z.real)


def test_view_as_complex_copies_other_layouts_and_half():
    y = np.swapaxes(RNG.normal(size=(2, 3)), 0, 1)  # pairs not adjacent
    np.testing.assert_array_equal(view_as_complex_array(y), y[..., 0] + 1j * y[..., 1])
    h = X.astype(np.float16)
    assert view_as_complex_array(h).dtype == np.complex64


def test_rules_to_second_order_both_modes():
    check_grads(lambda z: fnp.sin(view_as_real_array(z)), (Z,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: fnp.sin(view_as_complex_array(x)), (X,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: view_as_real_array(view_as_complex_array(x) ** 2), (X,), order=2, modes=("fwd", "rev"))


def test_gradient_convention_on_a_real_loss():
    """d/dz of sum(w * view_as_real(z)) is w_re - i w_im in funcgrad's (JAX's) convention."""
    w = RNG.normal(size=(3, 4, 2))
    g = fg.grad(lambda z: fnp.sum(w * view_as_real_array(z)))(Z)
    np.testing.assert_allclose(g, w[..., 0] - 1j * w[..., 1])
    g = fg.grad(lambda x: fnp.real(fnp.sum(Z * view_as_complex_array(x))))(X)
    np.testing.assert_allclose(g, np.stack([Z.real, -Z.imag], -1))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_over_any_axis(axis):
    x = np.moveaxis(X, 0, axis) if axis < 2 else RNG.normal(size=(3, 2, 5))  # axis 2: the batch after the pairs
    got = fg.vmap(lambda a: view_as_complex_array(a), in_axes=axis)(x)
    want = np.stack([view_as_complex_array(np.ascontiguousarray(np.take(x, i, axis=axis)))
                     for i in range(x.shape[axis])])
    np.testing.assert_allclose(got, want)
    got = fg.vmap(lambda z: view_as_real_array(z), in_axes=1)(Z)
    np.testing.assert_allclose(got, np.stack([view_as_real_array(Z[:, i]) for i in range(4)]))


def test_on_the_fake_device_without_a_host_read():
    with fb.as_cuda():
        x = ft.tensor(X, device="cuda", requires_grad=True)
        with fb.no_host_sync():
            y = x * 1
            c = ft.view_as_complex(y)
            r = ft.view_as_real(c * c)
            r.sum().backward()
        assert c.device.type == "cuda" and r.device.type == "cuda"
        got = x.grad.cpu().numpy()
    xh = ft.tensor(X, requires_grad=True)
    ft.view_as_real(ft.view_as_complex(xh * 1) ** 2).sum().backward()
    np.testing.assert_allclose(got, xh.grad.numpy(), rtol=1e-13)
