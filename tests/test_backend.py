"""Devices and array namespaces: funcgrad.backend (fg.devices, fg.device_put, fg.to_numpy,
fg.default_device), creation on a device, checkpoints across devices, and the errors for a
missing CuPy or GPU. Device arrays come from the fake backend (tests/fake_backend.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import backend
from funcgrad.backend import (
    Device, DeviceError, default_device, device_of, device_put, devices, set_default_device, to_numpy,
)

fb.install()


def fake(x):
    return fb.to_fake(np.asarray(x))


# --------------------------------------------------------------------------
# CuPy is optional and imported lazily

def test_importing_funcgrad_never_imports_cupy():
    code = (
        "import sys, numpy as np\n"
        "import funcgrad as fg, funcgrad.numpy as fnp, funcgrad.nn, funcgrad.optim, funcgrad.tensor\n"
        "import funcgrad.scipy.special\n"
        "from funcgrad import backend\n"
        "fg.grad(lambda x: fnp.sum(fnp.tanh(x)))(np.ones(3))\n"
        "backend.device_put(np.ones(2), 'cpu'); backend.default_device()\n"
        "assert 'cupy' not in sys.modules and 'cupyx' not in sys.modules, sorted(m for m in sys.modules if 'cupy' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _fresh_cupy_backend(monkeypatch, cupy_module):
    """A new CuPy backend (no cached import) with ``cupy`` replaced by ``cupy_module``."""
    monkeypatch.setitem(sys.modules, "cupy", cupy_module)
    for name in ("_registered", "_NAMESPACE_BY_TYPE", "_BACKEND_BY_NAMESPACE"):  # undo its registrations after
        monkeypatch.setattr(backend, name, type(getattr(backend, name))(getattr(backend, name)))
    b = backend._CuPyBackend()
    monkeypatch.setitem(backend._BACKENDS, "cuda", b)
    return b


@pytest.mark.skipif("cupy" in sys.modules, reason="CuPy is installed here")
def test_asking_for_a_gpu_without_cupy_says_what_to_install(monkeypatch):
    _fresh_cupy_backend(monkeypatch, None)  # `import cupy` raises ImportError
    for ask in (lambda: devices("cuda"), lambda: device_put(np.ones(2), "cuda"),
                lambda: default_device("cuda"), lambda: fnp.zeros(3, device="cuda"),
                lambda: fnp.asarray([1.0], device="gpu")):
        with pytest.raises(DeviceError, match=r"CuPy.*pip install 'funcgrad\[cuda\]'"):
            ask()
    assert devices() == [backend.CPU] + [Device("fake", i) for i in range(2)]  # no error, no GPU listed


def test_cupy_without_a_visible_gpu_says_so(monkeypatch):
    def no_device():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    cp = types.ModuleType("cupy")
    cp.ndarray = type("ndarray", (), {})
    cp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_device))
    _fresh_cupy_backend(monkeypatch, cp)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(DeviceError, match=r"no CUDA device is visible \(CUDA_VISIBLE_DEVICES=''\)"):
        devices("cuda")
    with pytest.raises(DeviceError, match="no CUDA device is visible"):
        device_put(np.ones(2), "cuda")
    assert all(d.platform != "cuda" for d in devices())


def test_bad_device_strings():
    with pytest.raises(ValueError, match="unknown device platform 'tpu'"):
        device_put(np.ones(2), "tpu")
    with pytest.raises(ValueError, match="one CPU device"):
        device_put(np.ones(2), "cpu:1")
    with pytest.raises(ValueError, match="bad device string"):
        device_put(np.ones(2), "fake:x")
    with pytest.raises(DeviceError, match="no device fake:5"):
        device_put(np.ones(2), "fake:5")


# --------------------------------------------------------------------------
# devices

def test_devices_and_device_objects():
    assert devices("cpu") == [backend.CPU]
    assert devices("fake") == [Device("fake", 0), Device("fake", 1)]
    d = devices("fake")[1]
    assert str(d) == "fake:1" and repr(d) == "Device('fake:1')"
    assert d == "fake:1" and d != "fake:0" and d != "cpu" and d != "nonsense"
    assert backend.as_device("FAKE") == Device("fake", 0) and backend.as_device("host") == backend.CPU
    assert d.namespace is fb.fake and backend.CPU.namespace is np
    assert len({Device("fake", 1), d}) == 1


def test_device_of():
    assert device_of(np.ones(2)) == "cpu" and device_of(1.5) == "cpu"
    x = fake([1.0, 2.0])
    assert device_of(x) == "fake:0"
    assert device_of(device_put(x, "fake:1")) == "fake:1"
    seen = []
    fg.grad(lambda v: seen.append(device_of(v)) or fnp.sum(v))(x)  # traced values too
    assert seen == [Device("fake", 0)]


# --------------------------------------------------------------------------
# the default device

def test_default_device_context_and_global_setting():
    assert default_device() == "cpu"
    with default_device("fake") as d:
        assert d == "fake:0" and default_device() == d
        assert isinstance(fnp.zeros(3), fb.FakeArray)
        with default_device("fake:1"):
            assert device_of(fnp.ones((2, 2))) == "fake:1"
        assert device_of(fnp.ones(2)) == "fake:0"
    assert default_device() == "cpu" and type(fnp.zeros(3)) is np.ndarray
    with devices("fake")[1]:  # a Device is a context manager too
        assert device_of(fnp.arange(3)) == "fake:1"
    old = set_default_device("fake")
    try:
        assert old == "cpu" and device_of(fnp.eye(2)) == "fake:0"
        with default_device("cpu"):
            assert type(fnp.eye(2)) is np.ndarray
    finally:
        set_default_device(None)
    assert type(fnp.eye(2)) is np.ndarray


def test_default_device_is_per_thread():
    seen = []
    with default_device("fake"):
        t = threading.Thread(target=lambda: seen.append(type(fnp.zeros(1))))
        t.start()
        t.join()
        assert isinstance(fnp.zeros(1), fb.FakeArray)
    assert seen == [np.ndarray]


def test_operations_run_where_their_inputs_are():
    """The default device decides creation only: host inputs stay on the host."""
    with default_device("fake"):
        assert type(fnp.sin(np.ones(2))) is np.ndarray
        assert type(fg.grad(lambda x: fnp.sum(x ** 2))(np.ones(2))) is np.ndarray


# --------------------------------------------------------------------------
# creation functions on a device

CREATION = [
    ("zeros", lambda **k: fnp.zeros((2, 3), **k), lambda: np.zeros((2, 3))),
    ("ones_f32", lambda **k: fnp.ones(3, np.float32, **k), lambda: np.ones(3, np.float32)),
    ("empty", lambda **k: fnp.empty((2,), **k) * 0, lambda: np.zeros(2)),
    ("full", lambda **k: fnp.full((2, 2), 1.5, **k), lambda: np.full((2, 2), 1.5)),
    ("full_int", lambda **k: fnp.full(3, 7, **k), lambda: np.full(3, 7)),
    ("arange", lambda **k: fnp.arange(5, **k), lambda: np.arange(5)),
    ("arange_step", lambda **k: fnp.arange(1.0, 2.0, 0.25, **k), lambda: np.arange(1.0, 2.0, 0.25)),
    ("arange_kw", lambda **k: fnp.arange(3, step=2, **k) if False else fnp.arange(0, 6, 2, **k),
     lambda: np.arange(0, 6, 2)),
    ("linspace", lambda **k: fnp.linspace(0, 1, 5, **k), lambda: np.linspace(0, 1, 5)),
    ("logspace", lambda **k: fnp.logspace(0, 2, 3, **k), lambda: np.logspace(0, 2, 3)),
    ("eye", lambda **k: fnp.eye(3, 4, 1, **k), lambda: np.eye(3, 4, 1)),
    ("identity", lambda **k: fnp.identity(2, **k), lambda: np.identity(2)),
    ("tri", lambda **k: fnp.tri(3, **k), lambda: np.tri(3)),
    ("array", lambda **k: fnp.array([[1.0, 2.0]], **k), lambda: np.array([[1.0, 2.0]])),
    ("asarray", lambda **k: fnp.asarray(np.arange(3.0), **k), lambda: np.arange(3.0)),
    ("asarray_list", lambda **k: fnp.asarray([1, 2], dtype=np.float32, **k), lambda: np.array([1, 2], np.float32)),
]


@pytest.mark.parametrize("name,make,want", CREATION, ids=[c[0] for c in CREATION])
def test_creation_on_a_device(name, make, want):
    expected = want()
    for kwargs, dev in (({"device": "fake:1"}, "fake:1"), ({}, "cpu")):
        out = make(**kwargs)
        assert device_of(out) == dev
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(to_numpy(out), expected)
    with default_device("fake"):
        out = make()
        assert device_of(out) == "fake:0"
        np.testing.assert_array_equal(to_numpy(out), expected)
        out = make(device="cpu")
        assert type(out) is np.ndarray


def test_array_and_asarray_keep_device_arrays_where_they_are():
    x = fake([1.0, 2.0])
    assert fnp.asarray(x) is x
    with default_device("cpu"):
        assert device_of(fnp.array(x)) == "fake:0" and fnp.array(x) is not x
    assert type(fnp.asarray(x, device="cpu")) is np.ndarray  # an explicit request copies
    assert device_of(fnp.array([x, x * 2])) == "fake:0"  # a list of device arrays stacks on the device
    np.testing.assert_array_equal(to_numpy(fnp.array([x, x * 2])), [[1, 2], [2, 4]])
    assert device_of(fnp.full((2,), x[0])) == "fake:0"  # a device fill value fills on its device
    with pytest.raises(ValueError, match="different devices"):
        fnp.array([x, np.ones(2)])


def test_creation_inside_transforms_on_a_device():
    def f(v):
        out = fnp.zeros((2, 2), device=device_of(v))
        out[0] = v
        out[1] = v ** 2
        return fnp.sum(out * fnp.linspace(v[0], v[1], 2))

    x = np.array([0.5, 2.0])
    with fb.no_host_sync():
        g = fg.grad(f)(fake(x))
    np.testing.assert_allclose(to_numpy(g), fg.grad(f)(x))


# --------------------------------------------------------------------------
# device_put and to_numpy

def test_device_put_arrays_and_pytrees():
    tree = {"w": np.ones((2, 2)), "b": [np.zeros(2), np.float32(3.0), 4, None], "name": "layer"}
    on = device_put(tree, "fake")
    assert isinstance(on["w"], fb.FakeArray) and isinstance(on["b"][0], fb.FakeArray)
    assert on["b"][1:] == [np.float32(3.0), 4, None] and on["name"] == "layer"
    assert device_put(on, "fake")["w"] is on["w"]  # already there: no copy
    assert device_put(tree, "cpu")["w"] is tree["w"]
    moved = device_put(on, "fake:1")
    assert device_of(moved["w"]) == "fake:1"
    back = device_put(moved, "cpu")
    assert type(back["w"]) is np.ndarray
    np.testing.assert_array_equal(back["w"], tree["w"])
    host = to_numpy(on)
    assert type(host["b"][0]) is np.ndarray
    np.testing.assert_array_equal(host["w"], tree["w"])
    with default_device("fake:1"):
        assert device_of(device_put(np.ones(1))) == "fake:1"  # None: the default device


def test_device_put_counts_one_transfer_per_leaf():
    tree = [np.ones(3), np.ones(4)]
    with fb.count_transfers() as c:
        on = device_put(tree, "fake")
        to_numpy(on)
    assert (c.h2d, c.d2h) == (2, 2)


def test_device_put_is_differentiable():
    def f(x):
        y = device_put(x, "fake")  # host -> device inside the function
        return fnp.sum(fnp.sin(y) * y)

    x = np.array([0.3, -1.2, 2.0])
    g = fg.grad(f)(x)
    assert type(g) is np.ndarray  # the cotangent came back to the host, like x
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x))
    t = fg.jvp(f, (x,), (np.ones(3),))[1]
    np.testing.assert_allclose(to_numpy(t), np.sum(np.cos(x) * x + np.sin(x)))
    h = fg.hessian(f)(x)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x) - x * np.sin(x)))
    xb = fake(x)
    gb = fg.grad(lambda v: fnp.sum(device_put(v, "cpu") ** 2))(xb)
    assert device_of(gb) == "fake:0"
    np.testing.assert_allclose(to_numpy(gb), 2 * x)


# --------------------------------------------------------------------------
# scatters and cached constants

def test_scatter_on_each_backend():
    for put in (lambda a: a, fake):
        out = put(np.zeros(4))
        backend.scatter_add(out, put(np.array([0, 0, 3])), put(np.array([1.0, 2.0, 3.0])))
        np.testing.assert_array_equal(to_numpy(out), [3.0, 0.0, 0.0, 3.0])
        out = put(np.zeros(3))
        backend.scatter(out, (np.array([1, 1, 2]),), put(np.array([5.0, 7.0, -1.0])), "maximum")
        np.testing.assert_array_equal(to_numpy(out), [0.0, 7.0, 0.0])
        out = put(np.zeros(2))
        backend.scatter(out, (np.array([1, 1]),), 2.0)  # broadcast values, repeated index
        np.testing.assert_array_equal(to_numpy(out), [0.0, 4.0])


def test_device_constant_uploads_once_per_device():
    like0, like1 = fake([1.0]), device_put(fake([1.0]), "fake:1")
    idx = np.array([2, 0, 1])
    with fb.count_transfers() as c:
        a = backend.device_constant(like0, idx)
        b = backend.device_constant(like0, idx.copy())
        d = backend.device_constant(like1, idx)
    assert a is b and device_of(a) == "fake:0" and device_of(d) == "fake:1" and c.h2d == 2
    assert backend.device_constant(np.ones(1), idx) is idx


# --------------------------------------------------------------------------
# checkpoints saved on one device load on either

def test_checkpoints_across_devices(tmp_path):
    model = fg.nn.MLP(3, 2, hidden_sizes=(4,), key=0)
    opt_state = fg.optim.adam(1e-3).init(model)
    on_dev = device_put({"model": model, "opt": opt_state}, "fake:1")
    path = tmp_path / "ckpt.npz"
    fg.save(path, on_dev)  # device arrays are copied to the host for the file
    host_like = {"model": model, "opt": opt_state}
    restored = fg.load(path, like=host_like)
    for a, b in zip(fg.tree_util.tree_leaves(restored), fg.tree_util.tree_leaves(host_like)):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, to_numpy(b))
    back_on_dev = fg.load(path, like=on_dev)  # to the device (and index) of `like`
    leaves = fg.tree_util.tree_leaves(back_on_dev["model"])
    assert leaves and all(device_of(v) == "fake:1" for v in leaves)
    forced = fg.load(path, like=host_like, device="fake")
    assert all(device_of(v) == "fake:0" for v in fg.tree_util.tree_leaves(forced["model"]))
    raw = fg.load(path, device="fake")
    assert all(isinstance(v, fb.FakeArray) for v in raw.values())
    np.testing.assert_array_equal(to_numpy(raw["['model'].layers[0].weight"]), model.layers[0].weight)


# --------------------------------------------------------------------------
# fused elementwise kernels (one launch on CuPy for the logistic functions and their rules)

def test_fused_kernels_are_used_where_the_backend_compiles_them(monkeypatch):
    from funcgrad.scipy import special

    specs = {f.spec.name: f.spec for f in (special._expit_kernel, special._log_expit_kernel,
                                          special._expit_grad_kernel, special._log_expit_grad_kernel)}
    built, launched = [], []

    class ElementwiseKernel:  # CuPy's factory, recording; runs the spec's fallback on the fake device
        def __init__(self, in_params, out_params, operation, name):
            built.append(name)
            self.spec = specs[name]
            assert (in_params, out_params, operation) == (self.spec.in_params, self.spec.out_params,
                                                          self.spec.operation)

        def __call__(self, *args):
            launched.append(self.spec.name)
            return self.spec.fallback(fb.fake, *args)

    monkeypatch.setattr(fb.fake, "ElementwiseKernel", ElementwiseKernel, raising=False)
    monkeypatch.setattr(backend.get_backend("fake"), "_kernels", {}, raising=False)
    x = np.array([-30.0, -0.5, 0.0, 2.0, 40.0], dtype=np.float32)

    def f(v):
        return fnp.sum(special.expit(v) * 2.0 + special.log_expit(v))

    g_host = fg.grad(f)(x)
    with fb.no_host_sync():
        g_dev = fg.grad(f)(fake(x))
    np.testing.assert_allclose(to_numpy(g_dev), g_host, rtol=1e-6)
    assert launched.count("funcgrad_expit") >= 1 and "funcgrad_expit_grad" in launched
    assert "funcgrad_log_expit" in launched and "funcgrad_log_expit_grad" in launched
    fg.grad(f)(fake(x))
    assert sorted(built) == sorted(set(built))  # compiled once per backend, then cached
    launched.clear()
    special.expit(fake(np.array([1.0, 2.0], dtype=np.float16)))  # not float32/64: the fallback
    special._expit_grad(fake(np.ones(2)), fake(np.ones(2, np.float32)))  # mixed dtypes: the fallback
    assert launched == []
    # second derivatives go through the fused primitives' own (differentiable) rules
    h_host = fg.hessian(f)(x.astype(np.float64))
    h_dev = fg.hessian(f)(fake(x.astype(np.float64)))
    np.testing.assert_allclose(to_numpy(h_dev), h_host, rtol=1e-10)


def test_fused_logistic_rules_to_second_order():
    from funcgrad.scipy import special
    from funcgrad.testing import check_grads

    x = np.array([-3.0, -0.4, 0.3, 2.5])
    g = np.array([0.5, -1.0, 2.0, 0.25])
    s = special.expit(x)
    np.testing.assert_allclose(special._expit_grad(g, x), g * s * (1 - s))  # from x: precise tails
    np.testing.assert_allclose(special._log_expit_grad(g, x), g / (1 + np.exp(x)))
    check_grads(special._expit_grad, (g, x), order=2, modes=("fwd", "rev"))
    check_grads(special._log_expit_grad, (g, x), order=2, modes=("fwd", "rev"))
    check_grads(lambda v: fg.nn.softplus(v) * fg.nn.sigmoid(v), (x,), order=3, modes=("fwd", "rev"))
