"""tanh's derivative is computed as ``-(y * y) + 1`` for a large NumPy array, so that NumPy computes
it, and the VJP ``g * d``, in one temporary (NumPy computes an operator on a temporary of >= 256 KiB
in place, but not ``1 - t``): one array of the layer's size fewer per tanh in every backward pass.
The float64 MLP benchmark's Tensor step fell into glibc's trim-and-fault cycle by that one array
(benchmarks/RESULTS.md, "Issue 12 (session 4)"). The derivative keeps ``1 - y * y``'s bits, +0
included."""

import tracemalloc

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft


def _peak_new_bytes(fn, *args):
    """The most memory ``fn(*args)`` held at once beyond what was held before (NumPy's data included)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not tracing:
            tracemalloc.stop()
    return peak - before


def _numpy_reuses_temporaries(x):
    return _peak_new_bytes(lambda a: -(a * a) + a.dtype.type(1), x) < 1.5 * x.nbytes


def _tensor_step(t):
    t.grad = None
    ft.tanh(t).sum().backward()


# 512 KiB per array: over NumPy's 256 KiB limit for computing in a temporary
@pytest.mark.parametrize("dtype, shape", [(np.float64, (128, 512)), (np.float64, (64, 2, 512)),
                                          (np.float32, (256, 512))])
def test_tanh_backward_holds_its_output_and_one_array(dtype, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    if not _numpy_reuses_temporaries(x):
        pytest.skip("this NumPy build does not compute operators in temporaries")
    n = x.nbytes
    g = fg.grad(lambda x: fnp.sum(fnp.tanh(x)))
    g(x)
    # tanh's output (saved for the VJP) and the VJP's one array; with ``1 - y * y`` it was three
    assert _peak_new_bytes(g, x) < 2.5 * n
    t = ft.tensor(x, requires_grad=True)
    _tensor_step(t)
    assert _peak_new_bytes(_tensor_step, t) < 2.5 * n


# 2001 elements (the small form) and 70001 (the large one: 547 KiB in float64, 273 KiB in float32)
@pytest.mark.parametrize("n", [2001, 70001])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_tanh_derivative_has_the_bits_of_one_minus_square(dtype, n):
    rng = np.random.default_rng(1)
    x = np.concatenate([np.linspace(-30, 30, n), [0.0, -0.0, 19.5, -19.5, 40.0]]).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 0.3j * rng.standard_normal(x.shape)
    y = np.tanh(x)
    want = 1 - y * y
    got = fg.grad(lambda x: fnp.sum(fnp.real(fnp.tanh(x))))(x) if np.dtype(dtype).kind == "c" else \
        fg.grad(lambda x: fnp.sum(fnp.tanh(x)))(x)
    if np.dtype(dtype).kind == "c":  # (the rules' convention: f'(z) itself)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)
    else:
        np.testing.assert_array_equal(got.view(f"i{got.itemsize}"), want.view(f"i{want.itemsize}"))
        assert not np.signbit(got).any()  # saturated: +0, not -0
    xt = ft.tensor(x.real.copy(), requires_grad=True)
    ft.tanh(xt).sum().backward()
    yt = np.tanh(x.real)
    np.testing.assert_array_equal(xt.grad.numpy(), 1 - yt * yt)


def test_tanh_rules_to_second_order():
    x = np.random.default_rng(2).standard_normal((3, 4))
    fg.testing.check_grads(lambda x: fnp.sum(fnp.tanh(x) ** 2), (x,), order=2, modes=("rev", "fwd"))
    fg.testing.check_grads(lambda x: fnp.sum(fnp.arctanh(0.5 * fnp.tanh(x))), (x,), order=2, modes=("rev", "fwd"))
    big = np.linspace(-0.9, 0.9, 70000)  # the large form of arctanh's derivative
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fnp.arctanh(x)))(big), 1 / (1 - big * big))
    h = fg.hessian(lambda x: fnp.sum(fnp.tanh(x)))(x[0])
    y = np.tanh(x[0])
    np.testing.assert_allclose(h, np.diag(-2 * y * (1 - y * y)), rtol=1e-12, atol=1e-15)
