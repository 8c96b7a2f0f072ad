"""fg.random keys in fg.nn: key-based dropout (Equinox style) and initializers that accept keys."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.random as fr
from funcgrad.nn import init

KEY = fr.PRNGKey(0)


def test_fg_random_is_reachable_from_the_package():
    assert fg.random is fr
    assert fg.random.normal is fr.normal


def test_dropout_with_a_key_is_jax_bernoulli_mask():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    y = fg.nn.Dropout(0.25)(x, key=KEY)
    keep = fr.bernoulli(KEY, np.float64(0.75), (3, 4))
    np.testing.assert_allclose(y, np.where(keep, x / 0.75, 0.0))
    np.testing.assert_array_equal(fg.nn.Dropout(0.25)(x), x)                # no key: evaluation
    np.testing.assert_array_equal(fg.nn.Dropout(0.25)(x, key=KEY, training=False), x)


def test_dropout_per_example_under_vmap_and_new_masks_under_jit():
    drop = fg.nn.Dropout(0.5)
    x = np.ones((4, 6))
    keys = fr.split(KEY, 4)
    batched = fg.vmap(lambda xi, k: drop(xi, key=k))(x, keys)
    np.testing.assert_array_equal(batched, np.stack([drop(x[i], key=keys[i]) for i in range(4)]))
    assert len({tuple(row) for row in batched}) > 1     # each example its own mask
    step = fg.jit(lambda x, k: drop(x, key=k))
    np.testing.assert_array_equal(step(x, keys[0]), drop(x, key=keys[0]))
    assert not np.array_equal(step(x, keys[0]), step(x, keys[1]))


def test_dropout_gradient_is_the_mask():
    x = np.ones((3, 5))
    g = fg.grad(lambda x: fnp.sum(fg.nn.dropout(x, 0.4, key=KEY)))(x)
    keep = fr.bernoulli(KEY, np.float64(0.6), (3, 5))
    np.testing.assert_allclose(g, np.where(keep, 1 / 0.6, 0.0))


def test_dropout_keeps_float32():
    x = np.ones(8, np.float32)
    assert fg.nn.Dropout(0.5)(x, key=KEY).dtype == np.float32


def test_initializers_accept_keys():
    w = init.normal(KEY, (3, 2), std=0.5)
    np.testing.assert_allclose(w, 0.5 * fr.normal(KEY, (3, 2), np.float32), rtol=1e-6)
    assert w.dtype == np.float32
    u = init.glorot_uniform(KEY, (4, 5))
    a = np.sqrt(6.0 / 9.0)
    np.testing.assert_allclose(u, fr.uniform(KEY, (4, 5), np.float32, -a, a), rtol=1e-6)
    q = init.orthogonal(KEY, (3, 3), np.float64)
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-12)
    np.testing.assert_array_equal(init.kaiming_normal(KEY, (4, 3)), init.kaiming_normal(KEY, (4, 3)))


def test_layers_accept_keys_reproducibly():
    a = fg.nn.Linear(3, 2, key=KEY)
    b = fg.nn.Linear(3, 2, key=fr.PRNGKey(0))
    c = fg.nn.Linear(3, 2, key=fr.PRNGKey(1))
    np.testing.assert_array_equal(a.weight, b.weight)
    assert not np.array_equal(a.weight, c.weight)


def test_bad_keys_are_refused():
    with pytest.raises(TypeError, match="fg.random key"):
        init.rng("seed")
    with pytest.raises(ValueError, match="needs a random key"):
        fg.nn.Dropout(0.5)(np.ones(3), training=True)
