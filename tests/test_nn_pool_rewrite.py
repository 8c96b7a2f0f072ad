"""``fg.jit`` runs ``max_pool(relu(x))`` as ``relu(max_pool(x))`` (``funcgrad.nn.pool_rewrite``): the relu
and its backward mask on the pooled arrays. Values and gradients must equal the eager ones bit for bit,
including windows whose maximum is negative or zero, ties, NaN, overlapping windows and padding."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.nn.rectifier import relu as relu_kernel

rng = np.random.default_rng(7)


def _x(dtype, shape=(2, 3, 8, 8)):
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, :2, :2] = -1.0  # a window with a negative maximum
    x[0, 1, :2, :2] = 0.0  # a window of zeros: ties
    x[1, 0, :2, :2] = [[0.5, 0.5], [-2.0, 0.5]]  # ties at the maximum
    x[1, 2, 2:4, 2:4] = [[-3.0, 0.0], [-1.0, -0.0]]  # a zero maximum
    return x


def _loss(kernel, stride, padding):
    def loss(x, w):
        h = fnn.max_pool2d(fnn.relu(x * w), kernel, stride, padding)
        return fnp.sum(h * h * fnp.arange(h.size, dtype=h.dtype).reshape(h.shape))
    return loss


def _prims(prog):
    return [e.prim.name for e in prog.eqns]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_jitted_pool_of_relu_matches_eager_bit_for_bit(dtype, kernel, stride, padding):
    loss = _loss(kernel, stride, padding)
    x, w = _x(dtype), np.asarray(1.5, dtype)
    prog = fg.make_program(fg.value_and_grad(loss))(x, w)
    names = _prims(prog)
    assert names.index("relu") > names.index("window_gather")  # relu on the pooled values
    assert names.index("positive_part") < names.index("window_scatter")  # its mask on the pooled cotangent
    want = fg.value_and_grad(loss)(x, w)
    jitted = fg.jit(fg.value_and_grad(loss), backend="numpy")
    for _ in range(2):
        got = jitted(x, w)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == dtype
    dx = fg.jit(fg.grad(lambda x: loss(x, w)))(x)
    np.testing.assert_array_equal(dx, fg.grad(lambda x: loss(x, w))(x))


def test_nan_in_a_window_and_pytorchs_mask_rule():
    x = _x(np.float32)
    x[0, 2, 4, 4] = np.nan

    def loss(x, nan_passes):
        r = relu_kernel(x, nan_passes=nan_passes)
        return fnp.sum(fnp.where(fnp.isnan(p := fnn.max_pool2d(r, 2)), 0.0, p) * 3.0)

    for nan_passes in (False, True):
        want = fg.grad(loss)(x, nan_passes)
        got = fg.jit(fg.grad(loss), static_argnums=1)(x, nan_passes)
        np.testing.assert_array_equal(got, want)


def test_not_rewritten_where_the_relu_output_is_read_elsewhere():
    x = _x(np.float64)

    def loss(x):
        r = fnn.relu(x)
        return fnp.sum(fnn.max_pool2d(r, 2)) + fnp.sum(r * r)

    prog = fg.make_program(fg.grad(loss))(x)
    names = _prims(prog)
    assert names.index("relu") < names.index("window_argmax")
    np.testing.assert_array_equal(fg.jit(fg.grad(loss))(x), fg.grad(loss)(x))


def test_the_cnn_block_under_ft_compile_matches_eager():
    ft = pytest.importorskip("funcgrad.tensor")
    ft.manual_seed(0)
    model = ft.nn.Sequential(ft.nn.Conv2d(3, 4, 3, padding=1), ft.nn.ReLU(), ft.nn.MaxPool2d(2))
    x = ft.tensor(_x(np.float32))
    eager = model(x).sum()
    eager.backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    compiled = ft.compile(model)
    for _ in range(2):
        for p in model.parameters():
            p.grad = None
        out = compiled(x).sum()
        out.backward()
    np.testing.assert_array_equal(out.detach().numpy(), eager.detach().numpy())
    for p, g in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6, atol=1e-6)
