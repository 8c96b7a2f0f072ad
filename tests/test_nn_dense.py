"""The dense kernel (``x @ w.T + b`` as one primitive): each batching path against a loop, and the
batch-statistics result of the normalization kernel against a separate pass (the specs of
tests/test_nn_kernels.py check both kernels' derivatives to second order)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.nn.kernels import dense as kdense
from funcgrad.nn.kernels import normalization as knorm

RNG = np.random.default_rng(0)


def _loop(f, args, in_axes):
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    return np.stack([f(*[a if d is None else np.take(a, i, axis=d) for a, d in zip(args, in_axes)])
                     for i in range(size)])


AXES = [(0, None, None), (1, None, None), (None, 0, None), (None, None, 0), (0, 0, 0), (2, 1, None), (None, 2, 1)]


@pytest.mark.parametrize("x_shape,in_axes", [(s, a) for s in ((4, 3), (2, 4, 3), (3,)) for a in AXES
                                             if a[0] is None or a[0] <= len(s)])
def test_dense_vmap_matches_a_loop(x_shape, in_axes):
    B = 5
    x = RNG.standard_normal(x_shape[:in_axes[0]] + (B,) + x_shape[in_axes[0]:] if in_axes[0] is not None else x_shape)
    w = RNG.standard_normal((2, 3) if in_axes[1] is None else ((2, 3)[:in_axes[1]] + (B,) + (2, 3)[in_axes[1]:]))
    b = RNG.standard_normal((2,) if in_axes[2] is None else ((B, 2) if in_axes[2] == 0 else (2, B)))
    got = fg.vmap(kdense.dense, in_axes=in_axes)(x, w, b)
    np.testing.assert_allclose(got, _loop(kdense.dense_composed, (x, w, b), in_axes), rtol=1e-12)


def test_dense_keeps_float32_and_takes_no_bias():
    x, w = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal((2, 3)).astype(np.float32)
    y = kdense.dense(x, w, None)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-6)
    gx, gw = fg.grad(lambda x, w: fnp.sum(kdense.dense(x, w, None) ** 2), argnums=(0, 1))(x, w)
    assert gx.dtype == gw.dtype == np.float32


def test_dense_bias_of_another_dtype_promotes_as_the_sum():
    x, w, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), np.ones(4, np.float64)
    assert kdense.dense(x, w, b).dtype == (x @ w.T + b).dtype


def test_statistics_are_those_of_a_separate_pass():
    x = RNG.standard_normal((6, 3, 4, 5)).astype(np.float32)
    w, b = RNG.standard_normal((1, 3, 1, 1)), RNG.standard_normal((1, 3, 1, 1))
    y, mean, var = knorm.standardize_affine_statistics(x, w.astype(np.float32), b.astype(np.float32), (0, 2, 3), 1e-5)
    np.testing.assert_array_equal(y, knorm.standardize_affine(x, w.astype(np.float32), b.astype(np.float32),
                                                              (0, 2, 3), 1e-5))
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(axis=(0, 2, 3), keepdims=True), rtol=1e-5)
    assert mean.dtype == var.dtype == np.float32


def test_statistics_batch_over_a_stack():
    x = RNG.standard_normal((3, 4, 2, 5))  # vmapped over axis 0: batch norm of (4, 2, 5) over (0, 2)
    w, b = RNG.standard_normal((1, 2, 1)), RNG.standard_normal((1, 2, 1))
    got = fg.vmap(lambda x: knorm.standardize_affine_statistics(x, w, b, (0, 2), 1e-5))(x)
    for k in range(3):
        ref = np.stack([knorm.standardize_affine_statistics_composed(xi, w, b, (0, 2), 1e-5)[k] for xi in x])
        np.testing.assert_allclose(got[k], ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape", [(2, 3, 4), (1, 1, 4), (2, 0, 4), (3, 2, 2, 4)])
def test_dense_of_a_stack_is_one_product_over_the_rows(x_shape, dtype):
    # the forward runs (rows, in) @ w.T for a C-ordered stack; a strided stack keeps the batched product
    x = RNG.standard_normal(x_shape).astype(dtype)
    w, b = RNG.standard_normal((5, 4)).astype(dtype), RNG.standard_normal(5).astype(dtype)
    for xs in (x, np.swapaxes(x, 0, 1)):
        got = kdense.dense(xs, w, b)
        assert got.shape == xs.shape[:-1] + (5,) and got.dtype == dtype
        np.testing.assert_allclose(got, np.matmul(xs, w.T) + b, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,strided", [((4, 64, 16), False), ((4, 64, 16), True), ((300, 16), True),
                                             ((40, 16), False)])
def test_a_large_result_takes_its_bias_inside_the_product(x_shape, strided, dtype):
    # a result large against x and w: [x, 1] @ [w, b].T, one product (host arrays); the same values as the
    # product and the sum, eagerly, into a buffer, and through the jitted gradient
    x = RNG.standard_normal(x_shape).astype(dtype)
    x = np.swapaxes(np.swapaxes(x, 0, -2).copy(), 0, -2) if strided else x
    w, b = RNG.standard_normal((512, 16)).astype(dtype), RNG.standard_normal(512).astype(dtype)
    assert kdense._bias_in_product(np.ones((x.size // 16, 16), dtype), w, b) == (x.size // 16 >= 64)
    want = np.matmul(x, w.T) + b
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(kdense.dense(x, w, b), want, **tol)
    out = np.empty_like(want)
    assert kdense._dense_into(x, w, b, out=out) is out
    np.testing.assert_allclose(out, want, **tol)
    loss = lambda x, w, b: fnp.sum(fnp.sin(kdense.dense(x, w, b)))  # noqa: E731
    ref = lambda x, w, b: fnp.sum(fnp.sin(kdense.dense_composed(x, w, b)))  # noqa: E731
    jitted = fg.jit(fg.grad(loss, argnums=(0, 1, 2)), backend="numpy")
    for got, r in zip(jitted(x, w, b), fg.grad(ref, argnums=(0, 1, 2))(x, w, b)):
        np.testing.assert_allclose(got, r, **({"rtol": 1e-3, "atol": 1e-3} if dtype == np.float32 else tol))


def test_nn_linear_is_the_dense_node_and_matches_the_composition():
    x, w, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    prog = str(fg.make_program(lambda x, w, b: fnn.linear(x, w, b))(x, w, b))
    assert "dense" in prog and "matmul" not in prog
    f = lambda x, w, b: fnp.sum(fnp.sin(fnn.linear(x, w, b)))  # noqa: E731
    g = lambda x, w, b: fnp.sum(fnp.sin(kdense.dense_composed(x, w, b)))  # noqa: E731
    for got, ref in zip(fg.grad(f, argnums=(0, 1, 2))(x, w, b), fg.grad(g, argnums=(0, 1, 2))(x, w, b)):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    np.testing.assert_allclose(fnn.linear(x, w), x @ w.T, rtol=1e-12)
    assert fnn.Linear(4, 5, key=0)(x.astype(np.float32)).dtype == np.float32


def test_nn_linear_of_integers_promotes_as_the_product():
    x, w = np.arange(6).reshape(2, 3), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(fnn.linear(x, w), x @ w.T)


def test_nn_linear_names_mismatched_shapes():
    with pytest.raises(ValueError, match=r"linear: weight must be a matrix.*input shape \(2, 3\).*weight shape \(5, 4\)"):
        fnn.linear(np.ones((2, 3)), np.ones((5, 4)))
