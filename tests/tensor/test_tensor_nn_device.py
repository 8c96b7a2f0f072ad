"""The new ft.nn layers, losses and optimizers on a device (the fake GPU backend refuses any implicit
device-to-host copy inside ``no_host_sync``), matching the host."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fake_backend as fb  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
import funcgrad.tensor.nn.functional as F  # noqa: E402

nn = ft.nn


@pytest.fixture(autouse=True)
def fake_cuda():
    with fb.as_cuda() as b:
        yield b


def _models():
    ft.manual_seed(0)
    # no bias before the batch norm: its true gradient is 0, and Adam-type steps blow the rounding of that
    # zero (which depends on the buffers' alignment) up to visible parameter changes
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(4, 4, 2, stride=2, groups=2), nn.GroupNorm(2, 4), nn.GELU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Dropout(0.0), nn.Linear(4, 3))
    rnn = nn.LSTM(3, 5, num_layers=2, batch_first=True, bidirectional=True)
    gru = nn.GRU(3, 4)
    att = nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0, batch_first=True)
    return cnn, rnn, gru, att


def _run(dev, opt_name):
    cnn, rnn, gru, att = _models()
    mods = [cnn, rnn, gru, att]
    if dev != "cpu":
        for m in mods:
            m.to(dev)
    params = [p for m in mods for p in m.parameters()]
    opt = getattr(ft.optim, opt_name)(params, lr=1e-2)
    rng = np.random.default_rng(0)
    x = ft.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32), device=dev)
    s = ft.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32), device=dev)
    a = ft.tensor(rng.standard_normal((4, 5, 6)).astype(np.float32), device=dev)
    y = ft.tensor([0, 2, 1, 1], device=dev)
    w = ft.tensor([1.0, 2.0, 0.5], device=dev)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        with fb.no_host_sync() if dev != "cpu" else _null():
            loss = F.cross_entropy(cnn(x), y, weight=w, label_smoothing=0.1)
            out, _ = rnn(s)
            loss = loss + out.pow(2).mean() + gru(s.transpose(0, 1))[0].mean()
            loss = loss + att(a).pow(2).mean() + F.mse_loss(F.interpolate(x, scale_factor=2, mode="bilinear"),
                                                            F.pad(x, (4, 4, 4, 4), mode="reflect"))
            loss.backward()
            nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in params]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.mark.parametrize("opt_name", ["AdamW", "RMSprop", "NAdam"])
def test_layers_train_on_the_device_like_on_the_host(opt_name):
    h_loss, h_params = _run("cpu", opt_name)
    d_loss, d_params = _run("cuda", opt_name)
    np.testing.assert_allclose(d_loss, h_loss, rtol=1e-4)
    for a, b in zip(d_params, h_params):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("mode, padding", [("bilinear", "zeros"), ("bilinear", "reflection"), ("nearest", "border")])
def test_grid_sample_on_the_device_matches_the_host(mode, padding):
    rng = np.random.default_rng(3)
    x_host, theta_host = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 2, 3)) * 0.6
    outs = []
    for dev in ("cpu", "cuda"):
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        theta = ft.tensor(theta_host, device=dev, requires_grad=True)
        with fb.no_host_sync() if dev != "cpu" else _null():
            y = F.grid_sample(x, F.affine_grid(theta, (2, 3, 3, 4), align_corners=False), mode=mode,
                              padding_mode=padding, align_corners=False)
            (y * y).sum().backward()
        outs.append([None if t is None else t.detach().cpu().numpy() for t in (y, x.grad, theta.grad)])
    for a, b in zip(*outs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- index arrays stay on the device
# Each function runs on the host and on the fake device with the same inputs; on the device, forward and
# backward run inside ``no_host_sync`` (or count their one documented explicit read), and values, indices and
# gradients must equal the host's.

_RNG = np.random.default_rng(29)
_W = _RNG.standard_normal((6, 3))
_X = _RNG.standard_normal((3, 5))
_LP = _RNG.standard_normal((6, 2, 4))


def _on_both(run, reads=0):
    """``run(dev)`` -> list of tensors, on the host and on the device (where exactly ``reads`` device-to-host
    copies may happen: none means inside ``no_host_sync``); the results as host arrays, pairwise."""
    outs = []
    for dev in ("cpu", "cuda"):
        if dev == "cpu":
            got = run(dev)
        elif reads == 0:
            with fb.no_host_sync():
                got = run(dev)
        else:
            with fb.count_transfers() as c:
                got = run(dev)
            assert c.d2h == reads
        outs.append([t.detach().cpu().numpy() for t in got])
    for dev_value in outs[1]:
        assert isinstance(dev_value, np.ndarray)
    return zip(*outs)


def _assert_same(pairs):
    for host, dev in pairs:
        assert host.shape == dev.shape and host.dtype == dev.dtype
        np.testing.assert_allclose(dev, host, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mode, idx, offsets, extra", [
    ("sum", [1, 2, 4, 5, 4, 3], [0, 3, 3], {}),
    ("mean", [1, 2, 4, 5, 4, 3], [0, 2], {"padding_idx": 4}),
    ("max", [1, 2, 4, 5, 4, 3], [0, 2, 2], {}),
    ("sum", [1, 2, 4, 5, 4, 3], [0, 2, 5], {"include_last_offset": True}),
    ("max", [[0, 2, 1], [5, 5, 4]], None, {}),
    ("sum", [0, 2, 1, 2], [0, 1], {"per_sample_weights": True}),
])
def test_embedding_bag_indices_and_offsets_stay_on_the_device(mode, idx, offsets, extra):
    def run(dev):
        w = ft.tensor(_W, device=dev, requires_grad=True)
        kw = dict(extra)
        s = None
        if kw.pop("per_sample_weights", False):
            s = ft.tensor(np.linspace(0.5, 2.0, len(idx)), device=dev, requires_grad=True)
        y = F.embedding_bag(ft.tensor(idx, device=dev), w, None if offsets is None else ft.tensor(offsets, device=dev),
                            mode=mode, per_sample_weights=s, **kw)
        (y * y).sum().backward()
        return [y, w.grad] + ([s.grad] if s is not None else [])

    _assert_same(_on_both(run))


def test_embedding_bag_module_on_the_device():
    def run(dev):
        ft.manual_seed(0)
        bag = nn.EmbeddingBag(6, 3, mode="mean").to(dev)
        y = bag(ft.tensor([1, 2, 4, 5], device=dev), ft.tensor([0, 1], device=dev))
        y.pow(2).sum().backward()
        return [y, bag.weight.grad]

    _assert_same(_on_both(run))


@pytest.mark.parametrize("p, weighted", [(1, False), (2, True)])
def test_multi_margin_loss_targets_stay_on_the_device(p, weighted):
    def run(dev):
        x = ft.tensor(_X, device=dev, requires_grad=True)
        wt = ft.tensor([1.0, 2.0, 3.0, 0.5, 0.1], device=dev) if weighted else None
        y = F.multi_margin_loss(x, ft.tensor([3, 0, 4], device=dev), p=p, margin=0.7, weight=wt, reduction="none")
        (y * y).sum().backward()
        return [y, x.grad]

    _assert_same(_on_both(run))


def test_multilabel_margin_loss_targets_stay_on_the_device():
    target = [[2, 0, -1, 3, 1], [1, -1, 0, 0, 0], [4, 3, 2, 1, 0]]

    def run(dev):
        x = ft.tensor(_X, device=dev, requires_grad=True)
        y = F.multilabel_margin_loss(x, ft.tensor(target, device=dev), reduction="none")
        (y * y).sum().backward()
        x1 = ft.tensor(_X[0], device=dev, requires_grad=True)
        nn.MultiLabelMarginLoss()(x1, ft.tensor([3, 1, -1, 0, 0], device=dev)).backward()
        return [y, x.grad, x1.grad]

    _assert_same(_on_both(run))


@pytest.mark.parametrize("targets, lengths, kw", [
    ([[1, 2, 2], [3, 1, 0]], ([6, 4], [3, 2]), {}),
    ([1, 2, 2, 3, 1], ([6, 5], [3, 2]), {"reduction": "sum"}),
    ([[1, 1, 1], [3, 1, 0]], ([3, 4], [3, 2]), {"reduction": "none", "zero_infinity": True}),
    ([[1, 1, 1], [3, 1, 0]], ([3, 4], [3, 2]), {"reduction": "none"}),
])
def test_ctc_loss_reads_only_the_lengths_in_one_explicit_copy(targets, lengths, kw):
    def run(dev):
        x = ft.tensor(_LP, device=dev, requires_grad=True)
        il, tl = (ft.tensor(v, device=dev) for v in lengths)
        y = F.ctc_loss(x.log_softmax(-1), ft.tensor(targets, device=dev), il, tl, **kw)
        y.sum().backward()
        return [y, x.grad]

    _assert_same(_on_both(run, reads=1))  # the lengths (both vectors together), as PyTorch copies them to the CPU


def test_ctc_loss_with_host_lengths_or_host_targets_reads_nothing_back():
    def run(dev, targets_dev):
        x = ft.tensor(_LP, device=dev, requires_grad=True)
        y = F.ctc_loss(x.log_softmax(-1), ft.tensor([[1, 2, 2], [3, 1, 0]], device=targets_dev), [6, 4], (3, 2))
        y.backward()
        return [y, x.grad]

    _assert_same(_on_both(lambda dev: run(dev, dev)))
    _assert_same(_on_both(lambda dev: run(dev, "cpu")))  # log_probs on the device, targets on the host


@pytest.mark.parametrize("nsp", [2, 3])
def test_fractional_max_pool_samples_stay_on_the_device(nsp):
    x_host = _RNG.standard_normal((2, 3) + (7,) * nsp)
    samples = _RNG.random((2, 3, nsp))
    pool = F.fractional_max_pool2d if nsp == 2 else F.fractional_max_pool3d

    def run(dev):
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        y, i = pool(x, 2, output_size=3, return_indices=True, _random_samples=ft.tensor(samples, device=dev))
        (y * y).sum().backward()
        return [y, i, x.grad]

    _assert_same(_on_both(run))


def test_fractional_max_pool_default_samples_on_the_device():
    x_host = _RNG.standard_normal((1, 2, 8, 8))

    def run(dev):
        ft.manual_seed(5)
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        y = nn.FractionalMaxPool2d(2, output_ratio=0.5)(x)
        y.sum().backward()
        return [y, x.grad]

    _assert_same(_on_both(run))


def test_adaptive_log_softmax_reads_the_targets_in_one_explicit_copy():
    x_host = _RNG.standard_normal((5, 4))

    def run(dev):
        ft.manual_seed(0)
        asm = nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[3, 6], div_value=2.0).to(dev)
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        out = asm(x, ft.tensor([0, 4, 9, 2, 7], device=dev))
        out.loss.backward()
        return [out.output, out.loss, x.grad, asm.head.weight.grad]

    _assert_same(_on_both(run, reads=1))  # the targets: which rows each cluster gets sets its sizes, as in PyTorch


def test_embedding_from_pretrained_keeps_the_device():
    w = ft.tensor(_W, device="cuda")
    with fb.no_host_sync():
        for layer in (nn.Embedding.from_pretrained(w), nn.EmbeddingBag.from_pretrained(w, mode="sum")):
            assert layer.weight.is_cuda


# value checks of index arrays run on host arrays only (on a device they would read the indices back)
_HOST_CHECKS = [
    (lambda: F.multilabel_margin_loss(ft.randn(2, 3), ft.tensor([[0, 3, -1], [1, -1, 5]])), RuntimeError,
     "target index 3 is out of bounds for 3 classes"),
    (lambda: F.embedding_bag(ft.tensor([0, 1, 2]), ft.randn(3, 2), ft.tensor([1, 2])), RuntimeError,
     "offsets\\[0\\] has to be 0"),
    (lambda: F.embedding_bag(ft.tensor([0, 1, 2]), ft.randn(3, 2), ft.tensor([0, 2, 1])), RuntimeError,
     "non-decreasing"),
]


@pytest.mark.parametrize("call, error, words", _HOST_CHECKS)
def test_value_checks_of_host_index_arrays(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ctc_loss's lengths are read (explicitly) on a device too, so their checks hold there
_LENGTH_CHECKS = [
    (lambda d: F.ctc_loss(ft.randn(3, 1, 4, device=d).log_softmax(-1), ft.tensor([[1]], device=d),
                          ft.tensor([5], device=d), ft.tensor([1], device=d)), "input_lengths to have value at most 3"),
    (lambda d: F.ctc_loss(ft.randn(3, 1, 4, device=d).log_softmax(-1), ft.tensor([[1]], device=d),
                          ft.tensor([3], device=d), ft.tensor([2], device=d)), "size at least 2 at dimension 1"),
]


@pytest.mark.parametrize("call, words", _LENGTH_CHECKS)
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_ctc_length_checks_on_the_host_and_the_device(call, words, dev):
    with pytest.raises(RuntimeError, match=words):
        call(dev)


@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_hard_builds_its_one_hot_on_the_device(dim):
    x_host = _RNG.standard_normal((3, 4))

    def run(dev):
        ft.manual_seed(3)
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        y = F.gumbel_softmax(x, tau=0.5, hard=True, dim=dim)
        (y * ft.arange(4.0, device=dev)).sum().backward()
        return [y, x.grad]

    pairs = list(_on_both(run))
    _assert_same(pairs)
    assert set(np.unique(pairs[0][1])) == {0.0, 1.0}


def test_deepcopy_of_a_module_keeps_its_parameters_on_the_device():
    import copy

    layer = nn.Linear(3, 2).to("cuda")
    with fb.no_host_sync():
        twin = copy.deepcopy(layer)
    assert twin.weight.is_cuda and isinstance(twin.weight, nn.Parameter) and twin.weight is not layer.weight
    np.testing.assert_array_equal(twin.weight.cpu().detach().numpy(), layer.weight.cpu().detach().numpy())


@pytest.mark.parametrize("nsp", [1, 2])
def test_max_unpool_scatters_on_the_device(nsp):
    x_host = _RNG.standard_normal((2, 3) + (6,) * nsp)
    pool, unpool = (F.max_pool1d, F.max_unpool1d) if nsp == 1 else (F.max_pool2d, F.max_unpool2d)

    def run(dev):
        x = ft.tensor(x_host, device=dev, requires_grad=True)
        y, i = pool(x, 2, return_indices=True)
        z = unpool(y, i, 2)
        (z * z).sum().backward()
        return [z, x.grad]

    _assert_same(_on_both(run))


def test_one_hot_on_the_device_reads_only_to_count_classes():
    labels = [[0, 3], [2, 2]]
    _assert_same(_on_both(lambda dev: [F.one_hot(ft.tensor(labels, device=dev), 5)]))
    _assert_same(_on_both(lambda dev: [F.one_hot(ft.tensor(labels, device=dev))], reads=1))  # the largest value


def test_max_norm_renormalizes_the_looked_up_rows_on_the_device():
    def run(dev):
        w = ft.tensor(_W, device=dev)
        y = F.embedding_bag(ft.tensor([1, 2, 1, 5], device=dev), w, ft.tensor([0, 2], device=dev), max_norm=0.5)
        return [y, w]

    _assert_same(_on_both(run))


def test_new_constructors_keep_the_tensor_device():
    x = ft.ones(2, 3, device="cuda")
    with fb.no_host_sync():
        made = [x.new_zeros(2), x.new_ones((2, 2)), x.new_empty(3), x.new_full((2,), 7.0),
                x.new_tensor([1.0, 2.0])]
    for t in made:
        assert t.device.type == "cuda" and t.dtype == x.dtype
    assert x.new_zeros(2, device="cpu").device.type == "cpu"
    assert ft.ones(1).new_zeros(2).device.type == "cpu"
