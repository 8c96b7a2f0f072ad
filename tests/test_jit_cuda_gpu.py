"""fg.jit's CUDA backend on a real GPU (CuPy's ElementwiseKernel, compiled by NVRTC).

Skipped cleanly when CuPy cannot be imported or no GPU is visible. The same programs as
tests/test_jit_cuda.py (which checks structure on the fake device): here the kernels are
compiled and run, and their results are compared with the NumPy replay on the host within
the bound docs/jit.md states for CUDA's math functions, inside
``cupyx.allow_synchronize(False)`` (no device-to-host synchronization while they run).
"""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'funcgrad[cuda]')")
if not cupy.is_available():  # no driver, or no device visible
    pytest.skip("CuPy is installed but no CUDA device is usable", allow_module_level=True)

import cupyx  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from funcgrad.jit import cuda, tiered  # noqa: E402

# CUDA's math functions are within 1-2 ulp (float64) and 1-4 ulp (float32) of the exact value,
# NumPy's within 1-4: results of one function within 8 ulp of the replay's; through the short
# chains below the bounds add up, hence the relative tolerances
RTOL = {np.float64: 1e-12, np.float32: 4e-6, np.complex128: 1e-12, np.complex64: 4e-6}


@pytest.fixture(autouse=True)
def compile_at_once(monkeypatch):
    monkeypatch.setattr(tiered.settings, "native_wait", True)


def _no_sync():
    return cupyx.allow_synchronize(False)


def chain(x, y):
    z = fnp.tanh(fnp.sin(x) * y + 1.0) - x / 3.0
    return fnp.where(z > 0.2, fnp.exp(-z) * z, fnp.log1p(z * z)) + fnp.maximum(x, y) ** 2


def loss(w, x):
    h = fnp.tanh(x * w[0] + w[1])
    return fnp.sum(fnp.where(h > 0.1, h * h, fnp.exp(h) - 1.0) * fnp.cos(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_chain_runs_as_one_kernel(dtype):
    x = np.linspace(-1, 2, 3000, dtype=dtype).reshape(3, 1000)
    y = np.linspace(0.5, 1.5, 1000, dtype=dtype)
    jf = fg.jit(chain, backend="native")
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    compiled = jf.lower(dx, dy).compile()
    assert compiled.backend == "native" and compiled.left == 0, compiled.why
    with _no_sync():
        out = jf(dx, dy)
    assert isinstance(out, cupy.ndarray) and out.dtype == dtype
    np.testing.assert_allclose(cupy.asnumpy(out), chain(x, y), rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_kernels(dtype):
    z = (np.linspace(0.1, 1.0, 64) + 1j * np.linspace(-1.0, 0.5, 64)).astype(dtype)

    def f(v):
        return fnp.exp(v) * v - fnp.sqrt(v) / (v + 2.0) + fnp.square(fnp.sin(v))

    jf = fg.jit(f, backend="native")
    dz = cupy.asarray(z)
    assert jf.lower(dz).compile().backend == "native"
    with _no_sync():
        out = jf(dz)
    np.testing.assert_allclose(cupy.asnumpy(out), f(z), rtol=RTOL[dtype])


@pytest.mark.parametrize("make,reference", [
    (lambda: fg.jit(fg.grad(loss), backend="native"), fg.grad(loss)),
    (lambda: fg.grad(fg.jit(loss, backend="native")), fg.grad(loss)),
    (lambda: fg.jit(fg.hessian(loss), backend="native"), fg.hessian(loss)),
], ids=["jit(grad)", "grad(jit)", "jit(hessian)"])
def test_derivatives_through_jit(make, reference):
    w, x = np.array([0.7, -0.2]), np.linspace(-1.0, 1.5, 4097)
    g = make()
    dw, dx = cupy.asarray(w), cupy.asarray(x)
    before = cuda.cache_info()["built"] + cuda.cache_info()["hits"]
    for _ in range(2):
        got = g(dw, dx)
    assert cuda.cache_info()["built"] + cuda.cache_info()["hits"] > before
    np.testing.assert_allclose(cupy.asnumpy(got), reference(w, x), rtol=1e-11)


def test_backend_numpy_makes_no_kernel():
    x = cupy.linspace(0, 1, 10)
    before = cuda.cache_info()
    compiled = fg.jit(lambda v: fnp.sin(v) * 2.0 + v, backend="numpy").lower(x).compile()
    assert compiled.backend == "numpy" and cuda.cache_info() == before
