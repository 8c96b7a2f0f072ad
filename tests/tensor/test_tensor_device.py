"""The Tensor layer on a device: ``.to('cuda')``, ``.cuda()``, ``.cpu()``, ``device=``,
``.device``, modules and optimizers on the device. ``'cuda'`` is served by the fake device
backend (tests/fake_backend.py), which raises on any device-to-host copy inside
``no_host_sync()``."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fake_backend as fb  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
from funcgrad.backend import DeviceError  # noqa: E402


@pytest.fixture(autouse=True)
def fake_cuda():
    with fb.as_cuda() as b:
        yield b


def test_to_cuda_cpu_and_device_attribute():
    x = ft.tensor([1.0, 2.0, 3.0])
    assert x.device == ft.device("cpu") and not x.is_cuda and x.is_cpu
    for y in (x.cuda(), x.to("cuda"), x.to(ft.device("cuda", 0)), x.to(device="cuda:0"), x.cuda(0)):
        assert isinstance(y._value, fb.FakeArray)
        assert y.is_cuda and y.device == ft.device("cuda", 0) and str(y.device) == "cuda:0"
        assert y.dtype == ft.float32
    y = x.cuda()
    assert y.cuda() is y and y.to("cuda") is y  # already there: the same tensor
    assert x.cpu() is x
    z = x.to("cuda:1")
    assert z.device == ft.device("cuda", 1) and z.device.index == 1
    back = z.cpu()
    assert back.device == ft.device("cpu")
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0, 3.0])
    assert x.to("cuda", ft.float64).dtype == ft.float64
    assert ft.device(0) == ft.device("cuda:0") and ft.device(1).type == "cuda"


def test_creation_with_device():
    for t in (ft.tensor([1.0, 2.0], device="cuda"), ft.zeros(2, 3, device="cuda"), ft.ones(2, device="cuda:1"),
              ft.randn(3, device="cuda"), ft.arange(4, device="cuda"), ft.full((2,), 1.5, device="cuda"),
              ft.eye(2, device=ft.device("cuda")), ft.empty(2, device="cuda"), ft.linspace(0, 1, 3, device="cuda")):
        assert t.is_cuda, t
    assert ft.ones(2, device="cuda:1").device.index == 1
    np.testing.assert_array_equal(ft.arange(4, device="cuda").cpu().numpy(), np.arange(4))
    w = ft.randn(2, 2, device="cuda", requires_grad=True)
    assert w.is_leaf and w.requires_grad and w.is_cuda


def test_numpy_item_and_repr_of_device_tensors():
    y = ft.tensor([1.5, 2.5]).cuda()
    with pytest.raises(TypeError, match=r"cuda:0 device type tensor to numpy.*Tensor.cpu\(\)"):
        y.numpy()
    np.testing.assert_array_equal(y.cpu().numpy(), [1.5, 2.5])
    assert y[0].item() == 1.5  # explicit reads are fine (one transfer each)
    assert "device='cuda:0'" in repr(y)


def test_to_device_is_recorded_and_differentiable():
    w = ft.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    x = ft.tensor([[1.0, 2.0], [3.0, -1.0]]).cuda()
    wc = w.to("cuda")
    assert wc.requires_grad and not wc.is_leaf and "ToCopyBackward0" in repr(wc.grad_fn)
    with fb.no_host_sync():
        loss = (x @ wc).tanh().sum()
    loss.backward()  # the gradient goes back to w, on the host
    assert w.grad.device == ft.device("cpu")
    xh = np.array([[1.0, 2.0], [3.0, -1.0]])
    wh = np.array([[0.5, -1.0], [2.0, 0.25]])
    np.testing.assert_allclose(w.grad.numpy(), xh.T @ (1 - np.tanh(xh @ wh) ** 2), rtol=1e-6)


def test_leaf_on_device_gets_its_gradient_there():
    w = ft.randn(3, device="cuda", requires_grad=True)
    with fb.no_host_sync():
        (w * w).sum().backward()
    assert w.grad.is_cuda
    np.testing.assert_allclose(w.grad.cpu().numpy(), 2 * w.detach().cpu().numpy())


def test_mixing_devices_is_an_error_naming_both():
    a = ft.ones(2)
    b = ft.ones(2, device="cuda")
    with pytest.raises(ValueError, match=r"different devices.*(cpu.*cuda:0|cuda:0.*cpu)"):
        a + b
    with pytest.raises(RuntimeError, match="located on device 'cpu' to a tensor located on device 'cuda:0'"):
        w = ft.ones(2, device="cuda", requires_grad=True)
        w.grad = ft.ones(2)


def _model(seed=0):
    ft.manual_seed(seed)
    return ft.nn.Sequential(ft.nn.Linear(4, 8), ft.nn.Tanh(), ft.nn.Linear(8, 3))


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_module_cuda_and_training_step_match_the_host(opt_name):
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0, 2])

    def train(model, dev):
        opt = ft.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "SGD" else \
            ft.optim.Adam(model.parameters(), lr=1e-2)
        xs, ys = ft.tensor(x, device=dev), ft.tensor(y, device=dev)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            with fb.no_host_sync() if dev != "cpu" else _null():
                loss = ft.nn.functional.cross_entropy(model(xs), ys)
                loss.backward()
                opt.step()
            losses.append(loss.item())
        return losses

    host_model = _model()
    dev_model = _model().cuda()
    assert all(p.is_cuda for p in dev_model.parameters())
    h, d = train(host_model, "cpu"), train(dev_model, "cuda")
    np.testing.assert_allclose(d, h, rtol=1e-5)
    for p, q in zip(dev_model.parameters(), host_model.parameters()):
        assert p.is_cuda and p.grad.is_cuda
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    dev_model.cpu()
    assert all(not p.is_cuda and not p.grad.is_cuda for p in dev_model.parameters())
    dev_model.to("cuda:1")
    assert all(p.device == ft.device("cuda", 1) for p in dev_model.parameters())


def test_module_to_moves_integer_buffers_too_but_casts_only_floats():
    m = _model()
    m.register_buffer("steps", ft.tensor([3]))
    m.to("cuda")
    assert m.steps.is_cuda and m.steps.dtype == ft.int64
    m.to(ft.float64)
    assert m.steps.dtype == ft.int64 and next(m.parameters()).dtype == ft.float64


def test_cross_entropy_ignore_index():
    logits = ft.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0], [2.0, 1.0, 1.0]], requires_grad=True)
    target = ft.tensor([1, -100, 0])
    loss = ft.nn.functional.cross_entropy(logits, target)
    z = logits.detach().numpy()
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.item(), -(logp[0, 1] + logp[2, 0]) / 2, rtol=1e-6)
    loss.backward()
    assert np.all(logits.grad.numpy()[1] == 0)
    lc = logits.detach().cuda().requires_grad_()
    with fb.no_host_sync():  # on a device no label is read back to look for ignored ones
        dloss = ft.nn.functional.cross_entropy(lc, target.cuda(), reduction="sum")
    np.testing.assert_allclose(dloss.item(), -(logp[0, 1] + logp[2, 0]), rtol=1e-6)


def test_cuda_without_cupy_says_what_to_install(monkeypatch):
    from funcgrad import backend

    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(backend._BACKENDS, "cuda", backend._CuPyBackend())
    with pytest.raises(DeviceError, match=r"pip install 'funcgrad\[cuda\]'"):
        ft.ones(2).cuda()
    with pytest.raises(DeviceError, match="CuPy"):
        ft.zeros(2, device="cuda")


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def test_state_dicts_and_checkpoints_across_devices(tmp_path):
    m = _model().cuda()
    opt = ft.optim.Adam(m.parameters(), lr=1e-2)
    m(ft.randn(5, 4, device="cuda")).sum().backward()
    opt.step()
    osd = opt.state_dict()  # the moments stay on the device, as in PyTorch
    moments = [v for st in osd["state"].values() for k, v in st.items() if isinstance(v, ft.Tensor) and k != "step"]
    assert moments and all(v.is_cuda for v in moments)
    assert not any(st["step"].is_cuda for st in osd["state"].values())  # PyTorch keeps `step` on the host
    path = tmp_path / "ckpt.ft"
    ft.save({"model": m.state_dict(), "optim": osd}, path)
    back = ft.load(path)  # to the device each tensor was saved from
    assert back["model"]["0.weight"].is_cuda
    on_cpu = ft.load(path, map_location="cpu")
    assert not on_cpu["model"]["0.weight"].is_cuda
    mapped = ft.load(path, map_location={"cuda:0": "cuda:1"})
    assert mapped["model"]["0.weight"].device == ft.device("cuda", 1)
    host = _model()
    host.load_state_dict(on_cpu["model"])
    m2 = _model().cuda()
    m2.load_state_dict(on_cpu["model"])  # host values copied into device parameters
    np.testing.assert_allclose(m2(ft.ones(1, 4, device="cuda")).detach().cpu().numpy(),
                               host(ft.ones(1, 4)).detach().numpy(), rtol=1e-6)
    opt2 = ft.optim.Adam(m2.parameters(), lr=1e-2)
    opt2.load_state_dict(on_cpu["optim"])  # state follows the parameters onto the device
    with fb.no_host_sync():
        m2(ft.randn(5, 4, device="cuda")).sum().backward()
        opt2.step()
    assert all(p.is_cuda for p in m2.parameters())


def test_clip_grad_norm_on_the_device_needs_no_host_sync():
    a = ft.ones(2, requires_grad=True, device="cuda")
    a.grad = ft.tensor([3.0, 4.0]).cuda()
    with fb.no_host_sync():
        total = ft.nn.utils.clip_grad_norm_([a], 1.0, norm_type="inf")
    assert isinstance(total._value, fb.FakeArray) and isinstance(a.grad._value, fb.FakeArray)
    np.testing.assert_allclose(total.cpu().numpy(), 4.0)
    np.testing.assert_allclose(a.grad.cpu().numpy(), [0.75, 1.0], rtol=1e-6)
    a.grad = ft.tensor([np.nan, 1.0]).cuda()
    with pytest.raises(RuntimeError, match="non-finite"):  # checking needs the host: a sync, as in PyTorch
        ft.nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)


def test_embedding_on_the_device_refuses_out_of_range_indices():
    emb = ft.nn.Embedding(4, 2).cuda()
    assert emb(ft.tensor([0, 3]).cuda()).shape == (2, 2)
    with pytest.raises(IndexError, match="index out of range in self"):
        emb(ft.tensor([1, -1]).cuda())


def test_func_gradient_stops_inplace_and_functions_stay_on_the_device():
    class Sq(ft.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * 100 * ctx.saved_tensors[0]

    def f(t):
        with ft.no_grad():
            s = t * t
        y = t.clone()
        y[0] = t[1]
        y[1:].mul_(t[:1])
        return (s * y + t.detach() * t + Sq.apply(t)).sum()

    x = ft.tensor([1.0, 2.0]).cuda()
    with fb.no_host_sync():
        g = ft.func.grad(f)(x)
    assert isinstance(g._value, fb.FakeArray)
    # s = [1, 4] constant; y = [t1, t1 * t0]; detach: t; Sq: 100 t
    np.testing.assert_allclose(g.cpu().numpy(), [4 * 2 + 1 + 100, 1 + 4 * 1 + 2 + 200], rtol=1e-6)
    xb = ft.tensor([[1.0, 2.0], [2.0, 1.0]]).cuda()
    with fb.no_host_sync():
        gb = ft.func.vmap(ft.func.grad(f))(xb)
    assert isinstance(gb._value, fb.FakeArray)
    np.testing.assert_allclose(gb.cpu().numpy()[0], g.cpu().numpy(), rtol=1e-6)
