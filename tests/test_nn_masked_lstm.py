"""``fg.nn.lstm(..., mask=)``: a batch of sequences of different lengths in the one masked-sequence
primitive (``masked_lstm_sequence``; its rules are checked to second order in tests/test_nn_kernels.py's
spec table). Each sequence's final state equals an unmasked run over that sequence alone."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.testing import check_grads

T, N, I, H = 5, 3, 2, 4
LENGTHS = np.array([5, 2, 3])


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(T, N, I)), rng.normal(size=(N, H)), rng.normal(size=(N, H)),
            rng.normal(size=(4 * H, I)), rng.normal(size=(4 * H, H)), rng.normal(size=4 * H), rng.normal(size=4 * H))


def _mask():
    return np.arange(T)[:, None] < LENGTHS[None, :]


def test_final_state_is_each_sequences_last_valid_step():
    xs, h0, c0, *w = _args()
    hs, (h, c) = nn.lstm(xs, h0, c0, *w, mask=_mask())
    for b, n in enumerate(LENGTHS):
        hs_b, (h_b, c_b) = nn.lstm(xs[:n, b:b + 1], h0[b:b + 1], c0[b:b + 1], *w)
        np.testing.assert_allclose(h[b], h_b[0], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(c[b], c_b[0], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(hs[:n, b], hs_b[:, 0], rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(hs[n:, b], np.broadcast_to(h_b[0], (T - n, H)), rtol=1e-13, atol=1e-14)


def test_all_ones_mask_equals_the_unmasked_kernel():
    args = _args(1)
    hs, (h, c) = nn.lstm(*args, mask=np.ones((T, N)))
    hs0, (h0, c0) = nn.lstm(*args)
    np.testing.assert_allclose(hs, hs0, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(c, c0, rtol=1e-14, atol=1e-15)


def test_batch_first_mask_and_float32():
    xs, h0, c0, *w = (a.astype(np.float32) for a in _args(2))
    hs, (h, c) = nn.lstm(np.swapaxes(xs, 0, 1), h0, c0, *w, batch_first=True, mask=_mask().T)
    ref, (h_ref, _) = nn.lstm(xs, h0, c0, *w, mask=_mask())
    assert hs.dtype == np.float32 and h.dtype == np.float32
    np.testing.assert_allclose(np.swapaxes(hs, 0, 1), ref, rtol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-6)


def test_gradients_to_second_order_both_modes():
    xs, h0, c0, *w = _args(3)
    mask = _mask()

    def loss(xs, h0, c0, w_hh):
        hs, (h, c) = nn.lstm(xs, h0, c0, w[0], w_hh, w[2], w[3], mask=mask)
        return fnp.sum(hs * hs) + fnp.sum(h * c)

    check_grads(loss, (xs, h0, c0, w[1]), order=2, modes=("fwd", "rev"))


def test_gradient_past_a_length_is_zero_and_matches_the_short_run():
    xs, h0, c0, *w = _args(4)
    g = fg.grad(lambda xs: fnp.sum(nn.lstm(xs, h0, c0, *w, mask=_mask())[1][0]))(xs)
    for b, n in enumerate(LENGTHS):
        assert np.all(g[n:, b] == 0)
        g_b = fg.grad(lambda x: fnp.sum(nn.lstm(x, h0[b:b + 1], c0[b:b + 1], *w)[1][0]))(xs[:n, b:b + 1])
        np.testing.assert_allclose(g[:n, b], g_b[:, 0], rtol=1e-12, atol=1e-13)


def test_vmap_and_jit_of_the_masked_kernel():
    xs, h0, c0, *w = _args(5)
    mask = _mask()
    f = lambda x: nn.lstm(x, h0, c0, *w, mask=mask)[1][0]  # noqa: E731
    batched = fg.vmap(f)(np.stack([xs, 2 * xs]))
    np.testing.assert_allclose(batched[1], f(2 * xs), rtol=1e-12)
    np.testing.assert_allclose(fg.jit(f)(xs), f(xs), rtol=1e-13)


@pytest.mark.parametrize("mask, batch_first, words", [
    (np.ones((T, N + 1)), False, r"mask must have the shape of the input without its feature axis.*\(5, 3\).*\(5, 4\)"),
    (np.ones((N, T, 1)), True, r"batch_first mask must be \(batch, T\)"),
])
def test_bad_mask_shapes_are_named(mask, batch_first, words):
    xs, h0, c0, *w = _args()
    if batch_first:
        xs = np.swapaxes(xs, 0, 1)
    with pytest.raises(ValueError, match=words):
        nn.lstm(xs, h0, c0, *w, batch_first=batch_first, mask=mask)
