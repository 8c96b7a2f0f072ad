"""all/any/count_nonzero and masked_select of device tensors stay on the device (the fake GPU backend of
tests/fake_backend.py refuses implicit host conversion), with the host results' values and dtypes."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fake_backend as fb  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402


@pytest.mark.parametrize("call", [
    lambda t: t.all(), lambda t: t.any(), lambda t: t.all(1), lambda t: t.any(0, keepdim=True),
    lambda t: t.count_nonzero(), lambda t: t.count_nonzero(1), lambda t: (t > 0).all(), lambda t: ft.any(t, 1),
])
def test_untracked_reductions_on_a_device(call):
    host = ft.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
    expected = call(host)
    with fb.as_cuda(), fb.no_host_sync():
        got = call(host.cuda())
        assert isinstance(got._value, fb.FakeArray) and got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


def test_masked_select_on_a_device():
    host = ft.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
    for mask in (host > 1, (host > 1)[0]):  # full and broadcast masks
        with fb.as_cuda():
            got = host.cuda().masked_select(mask.cuda())
            assert isinstance(got._value, fb.FakeArray)
            np.testing.assert_array_equal(got.cpu().numpy(), host.masked_select(mask).numpy())
