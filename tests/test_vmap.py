"""vmap: semantics, composition with differentiation, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)

rng = np.random.default_rng(0)


def loop(f, in_axes, *args, out_axis=0):
    """Reference: a Python loop over the batch."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = []
    for b in range(size):
        outs.append(f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]))
    return np.stack(outs, axis=out_axis)


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_in_axes_out_axes_and_broadcast_arguments():
    A = rng.standard_normal((3, 4))
    B = rng.standard_normal((4, 3))
    f = lambda a, b: fnp.sin(a) * b
    np.testing.assert_allclose(fg.vmap(f, in_axes=(0, 1))(A, B), loop(f, (0, 1), A, B))
    np.testing.assert_allclose(fg.vmap(f, in_axes=(0, None))(A, B[:, 0]), loop(f, (0, None), A, B[:, 0]))
    np.testing.assert_allclose(fg.vmap(f, in_axes=(0, 1), out_axes=1)(A, B), loop(f, (0, 1), A, B, out_axis=1))
    np.testing.assert_allclose(fg.vmap(f, in_axes=(-1, 1))(A.T, B), loop(f, (0, 1), A, B))


def test_pytree_in_axes_prefix_and_outputs():
    params = {"w": rng.standard_normal(4), "b": np.array(0.5)}
    xs = rng.standard_normal((5, 4))
    f = lambda p, x: {"y": fnp.sum(p["w"] * x) + p["b"], "z": x * 2.0}
    out = fg.vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(out["y"], xs @ params["w"] + 0.5)
    np.testing.assert_allclose(out["z"], xs * 2)
    out2 = fg.vmap(f, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(out2["y"], out["y"])


def test_unbatched_output_is_broadcast_and_axis_size():
    out = fg.vmap(lambda x: 3.0, in_axes=None, axis_size=4)(np.ones(2))
    np.testing.assert_allclose(out, [3.0] * 4)
    out = fg.vmap(lambda x, c: c * 1.0, in_axes=(0, None))(np.ones(3), np.array([1.0, 2.0]))
    assert out.shape == (3, 2)


def test_nested_vmap():
    X = rng.standard_normal((3, 4))
    Y = rng.standard_normal((5, 4))
    pairwise = fg.vmap(fg.vmap(lambda x, y: fnp.sum(x * y), in_axes=(None, 0)), in_axes=(0, None))
    np.testing.assert_allclose(pairwise(X, Y), X @ Y.T, atol=1e-12)


def test_per_example_shape_is_visible_inside():
    shapes = []
    fg.vmap(lambda x: shapes.append((x.shape, x.ndim, len(x))) or x)(np.ones((7, 2, 3)))
    assert shapes == [((2, 3), 2, 2)]


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_vmap_of_grad_is_per_example_gradient():
    w = rng.standard_normal(4)
    xs = rng.standard_normal((6, 4))
    ys = rng.standard_normal(6)
    loss = lambda w, x, y: (fnp.sum(fnp.tanh(w * x)) - y) ** 2
    per_ex = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    expected = np.stack([fg.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(per_ex, expected, atol=1e-12)


def test_grad_of_vmap():
    w = rng.standard_normal(4)
    xs = rng.standard_normal((6, 4))
    f = lambda w, x: fnp.sum(fnp.sin(w * x))
    g = fg.grad(lambda w: fnp.sum(fg.vmap(f, in_axes=(None, 0))(w, xs)))(w)
    np.testing.assert_allclose(g, np.sum(np.cos(w * xs) * xs, axis=0), atol=1e-12)


def test_jvp_of_vmap_and_vmap_of_jvp():
    xs = rng.standard_normal((3, 2))
    v = np.ones_like(xs)
    _, t = fg.jvp(fg.vmap(fnp.sin), (xs,), (v,))
    np.testing.assert_allclose(t, np.cos(xs))
    t2 = fg.vmap(lambda x, v: fg.jvp(fnp.sin, (x,), (v,))[1])(xs, v)
    np.testing.assert_allclose(t2, np.cos(xs))


@pytest.mark.eager_only  # the warning is once per process: the eager run has seen it
def test_primitive_without_rule_falls_back_with_one_warning():
    @fg.primitive
    def rowsum_plus(x):
        return x.sum(axis=-1) + 1.0 if hasattr(x, "sum") else x + 1.0

    fg.defvjp(rowsum_plus, lambda g, ans, x: fnp.broadcast_to(fnp.expand_dims(g, -1), fnp.shape(x)))
    X = rng.standard_normal((4, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fg.vmap(rowsum_plus)(X)
        fg.vmap(rowsum_plus)(X)
    np.testing.assert_allclose(out, X.sum(axis=1) + 1)
    msgs = [str(w.message) for w in caught if "rowsum_plus" in str(w.message)]
    assert len(msgs) == 1 and "no batching rule" in msgs[0]


@pytest.mark.eager_only("of_jit")  # bool() under vmap(jit(f)) raises the jit error
def test_errors():
    with pytest.raises(ValueError, match="inconsistent sizes.*3.*4"):
        fg.vmap(lambda a, b: a * b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"in_axes\[0\]=2 is out of range"):
        fg.vmap(fnp.sin, in_axes=(2,))(np.ones((3, 4)))
    with pytest.raises(ValueError, match="axis_size"):
        fg.vmap(fnp.sin, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="in_axes has 2 entries.*1 positional"):
        fg.vmap(fnp.sin, in_axes=(0, 0))(np.ones(3))
    with pytest.raises(TypeError, match="Python control flow"):
        fg.vmap(lambda x: x if x > 0 else -x)(np.ones(3))
    with pytest.raises(ValueError, match="out_axes.*None.*depends on the mapped"):
        fg.vmap(fnp.sin, out_axes=None)(np.ones(3))
