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
