"""The device suite on real CuPy arrays (an NVIDIA GPU). Skipped cleanly when CuPy cannot be
imported or no GPU is visible.

The table-driven tests of tests/test_device_suite.py run again with CuPy as the target:
forward, vjp, jvp, Hessian-vector products, VJP of VJP and vmap on ``cupy.ndarray``
inputs, compared with NumPy, inside ``cupyx.allow_synchronize(False)`` (CuPy raises
``DeviceSynchronized`` on a device synchronization there). Tolerances are looser than on
the fake backend (cuBLAS/cuSOLVER round differently from NumPy); functions whose output
has a library-specific sign convention (eigenvectors ...) are compared on the fake backend
only; a function CuPy lacks is reported as a skip naming it.
"""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'funcgrad[cuda]')")
try:
    _N_GPUS = int(cupy.cuda.runtime.getDeviceCount())
except Exception:  # noqa: BLE001 - CUDARuntimeError when there is no driver or device
    _N_GPUS = 0
if _N_GPUS == 0:
    pytest.skip("CuPy is installed but no CUDA device is visible", allow_module_level=True)

import cupyx  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
import test_device_suite as _suite  # noqa: E402
from funcgrad.backend import default_device, device_of, device_put, devices, to_numpy  # noqa: E402
from test_device_suite import (  # noqa: E402,F401  (collected here again, with CuPy as the target)
    test_binary, test_creation_and_inplace, test_einsum, test_indexing, test_indexing_data_dependent, test_linalg,
    test_linalg_complex, test_nn_functional, test_nondiff, test_nondiff_all, test_nondiff_data_dependent,
    test_nondiff_integers, test_nondiff_with_device_arguments, test_norm, test_products, test_products_complex_f32,
    test_reductions, test_second_order_paths, test_shape_ops, test_special, test_special_float32, test_transforms,
    test_unary, test_unary_float32,
)


def _no_sync():
    return cupyx.allow_synchronize(False)


CUPY = _suite.Target("cupy", cupy.asarray, cupy, _no_sync, rtol=1e-6, atol=1e-6, f32_tol=2e-3)


@pytest.fixture(autouse=True)
def _cupy_target():
    _suite.TARGET[0] = CUPY
    try:
        yield
    finally:
        _suite.TARGET[0] = _suite.FAKE


def test_devices_and_device_put_on_the_gpu():
    gpus = devices("cuda")
    assert len(gpus) == _N_GPUS and gpus[0] == "cuda:0"
    x = device_put(np.arange(3.0), "cuda")
    assert isinstance(x, cupy.ndarray) and device_of(x) == "cuda:0"
    assert device_put(x, "cuda") is x
    np.testing.assert_array_equal(to_numpy(x), np.arange(3.0))
    with default_device("cuda"):
        assert isinstance(fnp.zeros(2), cupy.ndarray)
    with pytest.raises(ValueError, match="different devices"):
        fnp.add(x, np.ones(3))


def test_mlp_training_step_on_the_gpu_matches_the_host():
    model = fg.nn.MLP(8, 4, hidden_sizes=(16,), key=0)
    opt = fg.optim.adam(1e-2)
    x = np.random.default_rng(0).standard_normal((32, 8)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 4, 32)

    def step(m, s, xb, yb):
        loss, g = fg.value_and_grad(lambda m: fg.nn.cross_entropy(m(xb), yb))(m)
        u, s = opt.update(g, s, m)
        return loss, fg.optim.apply_updates(m, u), s

    hl, hm, _ = step(model, opt.init(model), x, y)
    dm = device_put(model, "cuda")
    ds = opt.init(dm)
    dl, dm2, _ = step(dm, ds, *device_put((x, y), "cuda"))
    np.testing.assert_allclose(to_numpy(dl), hl, rtol=1e-4)
    for a, b in zip(fg.tree_util.tree_leaves(dm2), fg.tree_util.tree_leaves(hm)):
        assert isinstance(a, cupy.ndarray)
        np.testing.assert_allclose(to_numpy(a), b, rtol=1e-4, atol=1e-5)


def test_tensor_layer_on_the_gpu():
    import funcgrad.tensor as ft

    w = ft.randn(3, 2, device="cuda", requires_grad=True)
    x = ft.randn(4, 3).cuda()
    assert w.is_cuda and isinstance(x._value, cupy.ndarray)
    (x @ w).tanh().sum().backward()
    assert w.grad.is_cuda
    m = ft.nn.Linear(3, 2).cuda()
    assert all(p.is_cuda for p in m.parameters())
    assert m(x).cpu().device == ft.device("cpu")
