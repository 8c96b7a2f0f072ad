"""JAX and PyTorch spellings users type first (issue 31): fg.tree, fg.device_get,
fg.block_until_ready, funcgrad.tensor.__version__, funcgrad.numpy.__version__."""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft


def test_tree_is_jax_tree():
    tree = {"a": 1.0, "b": (2.0, np.ones(2))}
    out = fg.tree.map(lambda x: 2 * x, tree)
    assert out["a"] == 2.0 and out["b"][0] == 4.0
    np.testing.assert_array_equal(out["b"][1], 2 * np.ones(2))
    leaves, treedef = fg.tree.flatten(tree)
    assert len(leaves) == 3 and fg.tree.leaves(tree)[0] == 1.0
    assert fg.tree.unflatten(treedef, leaves)["a"] == 1.0
    assert fg.tree.structure(tree) == treedef
    assert fg.tree.reduce(lambda a, b: a + np.sum(b), tree, 0.0) == 5.0
    assert fg.tree.all({"x": True, "y": [True]})
    assert [fg.tree_util.keystr(p) for p, _ in fg.tree.leaves_with_path(tree)] == ["['a']", "['b'][0]", "['b'][1]"]
    assert fg.tree.map is fg.tree_util.tree_map


def test_device_get_and_block_until_ready():
    tree = {"w": fnp.ones(2), "b": [fnp.zeros(1)]}
    host = fg.device_get(tree)
    assert isinstance(host["w"], np.ndarray) and isinstance(host["b"][0], np.ndarray)
    assert fg.block_until_ready(tree) is tree


def test_block_until_ready_waits_on_a_device():
    import fake_backend as fb

    fb.install()
    x = fb.to_fake(np.ones(3))
    with fb.no_host_sync():   # waiting is not a copy to the host
        assert fg.block_until_ready({"x": x})["x"] is x
    np.testing.assert_array_equal(fg.device_get(x), np.ones(3))


def test_versions():
    assert ft.__version__ == fg.__version__
    assert fnp.__version__ == np.__version__
