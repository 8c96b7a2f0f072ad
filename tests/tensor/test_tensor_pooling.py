"""ft.nn pooling beyond the PyTorch fixtures: errors, dtypes, tie gradients, second derivatives, vmap, devices.

Values, input gradients and indices against PyTorch live in the fixture cases of
tests/tensor/test_tensor_torch_nn.py (tests/fixtures/make_torch_nn.py, ``POOLING``).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F
from funcgrad.tensor.autograd import gradcheck, gradgradcheck

POOLS = [
    (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True), (1, 2, 6, 7)),
    (lambda x: F.max_pool1d(x, 2, 1, dilation=2), (2, 3, 7)),
    (lambda x: F.max_pool3d(x, 2, ceil_mode=True), (1, 1, 3, 4, 5)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 6, 6)),
    (lambda x: F.avg_pool3d(x, 2, ceil_mode=True, divisor_override=3), (1, 1, 3, 3, 5)),
    (lambda x: F.adaptive_max_pool3d(x, (2, 2, 3)), (1, 1, 3, 5, 4)),
    (lambda x: F.adaptive_avg_pool3d(x, (2, 1, 3)), (1, 1, 3, 5, 4)),
    (lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2), (1, 2, 4, 4)),
]


@pytest.mark.parametrize("fn, shape", POOLS)
def test_gradcheck_first_and_second_order(fn, shape):
    x = ft.tensor(np.random.default_rng(0).permutation(np.prod(shape)).reshape(shape) / 7.0, dtype=ft.float64,
                  requires_grad=True)  # distinct values: max pools are smooth here
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("fn, shape", POOLS)
def test_float32_is_kept(fn, shape):
    x = ft.randn(*shape, dtype=ft.float32, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    assert y.dtype == ft.float32 and x.grad.dtype == ft.float32


def test_indices_are_int64_flat_plane_positions():
    x = ft.arange(2 * 4 * 6, dtype=ft.float32).reshape(2, 4, 6)  # unbatched (C, H, W); the max is bottom-right
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert i.dtype == ft.int64
    assert i[0].tolist() == [[7, 9, 11], [19, 21, 23]] and i[1].tolist() == i[0].tolist()
    assert np.array_equal(y.numpy(), x.reshape(2, -1).gather(1, i.reshape(2, -1)).reshape(2, 2, 3).numpy())
    _, ia = F.adaptive_max_pool1d(ft.tensor([[3.0, 1.0, 3.0, 2.0, 5.0]]), 2, return_indices=True)
    assert ia.tolist() == [[0, 4]]


def test_ties_send_the_gradient_to_the_first_maximum():
    x = ft.ones(1, 1, 2, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]
    x = ft.ones(1, 5, requires_grad=True)  # overlapping adaptive windows [0, 3), [2, 5)
    F.adaptive_max_pool1d(x, 2).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 1.0, 0.0, 0.0]]


def test_ceil_mode_clamps_the_last_window():
    # L=4, k=2, s=2, p=1: ceil((4 + 2 - 2) / 2) + 1 = 3 windows; the last starts at 4 - 1 = 3, inside: kept
    assert tuple(F.max_pool1d(ft.randn(1, 4), 2, 2, 1, ceil_mode=True).shape) == (1, 3)
    # L=5, k=2, s=2, p=1: ceil((5 + 2 - 2) / 2) + 1 = 4; the 4th would start at 6 >= L + p (right padding): dropped
    assert tuple(F.max_pool1d(ft.randn(1, 5), 2, 2, 1, ceil_mode=True).shape) == (1, 3)
    assert tuple(F.avg_pool1d(ft.randn(1, 6), 3, 2, 0, ceil_mode=True).shape) == (1, 3)


def test_modules_return_indices_and_unpool():
    x = ft.randn(2, 3, 4, 6, 4)
    y, i = ft.nn.MaxPool3d(2, return_indices=True)(x)
    back = ft.nn.MaxUnpool3d(2)(y, i)
    assert back.shape == x.shape
    assert np.array_equal((back != 0).sum().numpy(), np.asarray(y.numel()))
    assert ft.nn.AdaptiveMaxPool2d(2, return_indices=True)(ft.randn(1, 3, 5, 5))[1].dtype == ft.int64
    assert tuple(ft.nn.ConvTranspose3d(2, 3, 2, stride=2)(ft.randn(1, 2, 2, 3, 2)).shape) == (1, 3, 4, 6, 4)


def test_vmap_matches_a_loop():
    xs = ft.randn(3, 2, 5, 5)
    fn = lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, dilation=1)  # noqa: E731
    out = ft.func.vmap(fn)(xs)
    assert np.allclose(out.numpy(), np.stack([fn(x).numpy() for x in xs]))


@pytest.mark.parametrize("call, words", [
    (lambda: F.max_pool2d(ft.randn(1, 1, 4, 4), 4, padding=3), "at most half the kernel size"),
    (lambda: F.max_pool2d(ft.randn(1, 1, 2, 2), 3, dilation=2), "does not fit"),
    (lambda: F.max_pool3d(ft.randn(4, 4), 2), "4-d or 5-d input"),
    (lambda: F.max_pool1d(ft.randn(1, 4), 2, stride=0), "stride must be 1 positive"),
    (lambda: F.avg_pool2d(ft.randn(1, 1, 4, 4), 2, divisor_override=0), "divisor must be not zero"),
    (lambda: F.adaptive_max_pool3d(ft.randn(1, 2, 3, 4), (1, 2)), "output_size must have 3 entries"),
    (lambda: F.adaptive_avg_pool2d(ft.randn(1, 2, 3, 4), 0), "must be positive"),
    (lambda: F.max_unpool1d(ft.randn(1, 2), ft.tensor([[0, 9]]), 2), "outside the output plane"),
    (lambda: F.max_unpool1d(ft.randn(1, 2), ft.tensor([[0.0, 1.0]]), 2), "indices must be integers"),
])
def test_pooling_errors_name_the_problem(call, words):
    with pytest.raises(RuntimeError, match=words):
        call()


def test_new_pools_on_the_fake_device_match_the_host():
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import fake_backend as fb

    def run(dev):
        x = ft.tensor(np.random.default_rng(1).standard_normal((1, 2, 5, 6, 4)).astype(np.float32), device=dev,
                      requires_grad=True)
        with fb.no_host_sync() if dev != "cpu" else _Null():
            y, i = F.max_pool3d(x, 2, ceil_mode=True, return_indices=True)
            a, j = F.adaptive_max_pool3d(x, (2, 3, 3), return_indices=True)
            loss = (y.sum() + a.sum() + F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False).sum()
                    + F.max_pool2d(x[0], 2, dilation=2).sum() + F.adaptive_avg_pool3d(x, 2).sum())
            loss.backward()
        return [t.detach().cpu().numpy() for t in (y, i, a, j, x.grad)]

    host = run("cpu")
    with fb.as_cuda():
        dev = run("cuda")
    for h, d in zip(host, dev):
        np.testing.assert_allclose(d, h, rtol=1e-6)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: object) -> None:
        return None
