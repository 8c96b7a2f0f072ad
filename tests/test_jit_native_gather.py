"""The native tier's gathers and scatters with integer-array indices, einsum, and solve with
broadcasting batch axes (funcgrad/jit/native_gather.py, native_ops.py): each program runs
wholly native (a test fails where an equation that lowers is left to the replay) and equals
the NumPy replay (gathers and ``set`` bit for bit, sums within the bound docs/jit.md states);
the cases that do not lower are left to the replay with the rest lowered around them.

Few programs, many checks each: every compile costs seconds. Skips without numba.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native
from funcgrad.jit.ir import Var
from test_jit_native_lowerings import assert_within_bound, grid, spd_stack

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")


def compiled_both(f, *args):
    """(native result, replay result, Compiled) of fg.jit(f) on ``args``, the native code in use."""
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(*args).compile()
    assert compiled.backend == "native", compiled.why
    return nat(*args), fg.jit(f, backend="numpy")(*args), compiled


def assert_all_native(compiled):
    assert compiled.left == 0, [e for e in compiled.program.eqns if not native.lowerable(e)]


X = grid(4, 5, 3)
STATIC_INDICES = [  # (index, what it shows): NumPy's placement rules, repeats, negatives, masks
    ((np.array([0, 3, 3, -1]),), "one array, repeated and negative"),
    ((np.array([[0, 1], [2, -4]]), slice(None), np.array([2, 0])), "arrays separated by a slice: in front"),
    ((slice(1, None), np.array([4, 0, 4]), np.array([[1], [2]])), "adjacent arrays after a slice: in place"),
    ((Ellipsis, np.array([1, -1])), "ellipsis then an array"),
    ((None, np.array([2, 1]), 0, slice(None, None, -1)), "None, array, int (adjacent), negative step"),
    ((np.array([1, 0]), None, np.array([2, 2])), "None between arrays: in front"),
    ((np.arange(20).reshape(4, 5) % 3 == 0,), "a static boolean mask"),
    ((slice(None), np.array([True, False, True, True, False])), "a mask on a later axis"),
    ((np.array(2), slice(None), np.array([0, 1])), "a 0-d array counts as an integer"),
    ((None, np.array(-2), slice(None, None, 2), np.array(1)), "0-d arrays alone"),
]


def gathers(x, i, j):
    """Every static index above, and the program's own index values ``i`` (int64, with repeats and
    negatives) and ``j`` (an int32 scalar), each read by an elementwise function."""
    outs = [fnp.sin(x)[idx] * 2.0 for idx, _ in STATIC_INDICES]
    outs += [x[i] + 1.0, x[:, i, j] * 3.0, x[i, :, np.array([[0], [2]])], fnp.take(x, i, axis=1),
             fnp.take_along_axis(x, np.broadcast_to(np.array([[[2], [0], [1], [1], [0]]]), (4, 5, 1)), axis=2),
             x[j] - x[-1]]
    return tuple(outs)


def test_gathers_run_native_and_equal_numpy_bit_for_bit():
    i, j = np.array([3, -1, 0, 3]), np.int32(2)
    got, want, compiled = compiled_both(gathers, X, i, j)
    assert_all_native(compiled)
    expect = [np.sin(X)[idx] * 2.0 for idx, _ in STATIC_INDICES]
    expect += [X[i] + 1.0, X[:, i, j] * 3.0, X[i, :, np.array([[0], [2]])], np.take(X, i, axis=1), None, X[j] - X[-1]]
    for (g, w, e), what in zip(zip(got, want, expect), [w for _, w in STATIC_INDICES] + ["program's"] * 6):
        assert g.shape == w.shape and g.dtype == w.dtype, what
        np.testing.assert_array_equal(g, w, err_msg=what)
        if e is not None:
            np.testing.assert_array_equal(g, e, err_msg=what)
    # other index values: the same compiled code, no retrace
    i2 = np.array([-4, 1, 1, 2])
    for g, w in zip(fg.jit(gathers, backend="native")(X, i2, np.int32(-3)), gathers(X, i2, np.int32(-3))):
        np.testing.assert_array_equal(g, w)


def test_an_index_out_of_bounds_raises_index_error_as_the_replay_does():
    f = fg.jit(lambda x, i: fnp.sin(x[i]) * 2.0, backend="native")
    i = np.array([0, 2, -3])
    assert f.lower(grid(3, 2), i).compile().backend == "native"
    np.testing.assert_array_equal(f(grid(3, 2), i), np.sin(grid(3, 2)[i]) * 2.0)
    for bad in (np.array([0, 3, 1]), np.array([-4, 0, 0])):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
            f(grid(3, 2), bad)
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
            fg.jit(lambda x, i: fnp.sin(x[i]) * 2.0, backend="numpy")(grid(3, 2), bad)


def test_gradient_of_gathers_is_a_native_scatter_add_and_repeats_accumulate():
    i = np.array([0, 2, 2, -1, 2])

    def loss(x, i):
        return fnp.sum(fnp.tanh(x[i]) ** 2) + fnp.sum(x[:, np.array([1, 1, 4])] * 3.0) + fnp.sum(x[i, 1:3])

    got, want, compiled = compiled_both(fg.grad(loss), grid(3, 5), i)
    assert_all_native(compiled)
    assert_within_bound(got, want, 4)
    x = grid(3, 5)
    closed = np.zeros_like(x)
    for r in i:  # d/dx of sum(tanh(x[r])^2) per occurrence
        closed[r] += 2 * np.tanh(x[r]) / np.cosh(x[r]) ** 2
        closed[r, 1:3] += 1.0
    closed[:, 1] += 6.0
    closed[:, 4] += 3.0
    np.testing.assert_allclose(got, closed, rtol=1e-13, atol=1e-13)


def scatters(x, i, v):
    """``.at[]`` updates with repeated positions: set (last write wins), add (accumulates), and
    mul/min/max (rounds of gathers and sets), with static and program index values."""
    rep = np.array([[0, 3], [3, 3]])
    return (x.at[i].set(v), x.at[i].add(v), x.at[rep, 1:].set(fnp.arange(16.0).reshape(2, 2, 4)),
            x.at[:, np.array([2, 2, 0])].add(1.5), x.at[np.array([1, 1, -3])].multiply(v[:3]),
            x.at[np.array([0, 0, 2]), np.array([1, 1, 1])].min(v[:3, 0]), x.at[np.array([2, 2])].max(v[:2] * 0.5),
            x.at[i, 0].set(fnp.cos(v[:, 1])))


def scatters_and_gradient(x, i, v):
    """:func:`scatters`, and the gradient of a loss through a set and an add with repeats (the
    set's reaches only the last write to each position: a winner mask): one compiled program."""

    def loss(x, v):
        y = x.at[i].set(v * 2.0).at[np.array([0, 0])].add(x[1:3])
        return fnp.sum(fnp.sin(y) * y)

    return scatters(x, i, v), fg.grad(loss, argnums=(0, 1))(x, v)


def test_scatters_with_repeated_indices_and_their_gradients_run_native():
    i = np.array([3, 1, 3, -1, 0])
    v = grid(5, 5, lo=-2.0, hi=2.0)
    (got, grads), (want, grads_want), compiled = compiled_both(scatters_and_gradient, grid(4, 5), i, v)
    assert_all_native(compiled)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)  # (the adds add at most two terms per position)
    for g, w in zip(grads, grads_want):
        assert_within_bound(g, w, 4)
    # row 3 is written by occurrences 0, 2 and 3 (index -1): only the last reaches the result
    assert np.all(grads[1][0] == 0.0) and np.all(grads[1][2] == 0.0) and np.all(grads[1][3] != 0.0)
    x = grid(4, 5)
    last = x.copy()
    last[i] = v
    np.testing.assert_array_equal(got[0], last)
    added = x.copy()
    np.add.at(added, i, v)
    np.testing.assert_array_equal(got[1], added)


def einsums(a, b, c):
    return (fnp.einsum("ij,jk->ik", a, b), fnp.einsum("ii->i", c), fnp.einsum("ii", c),
            fnp.einsum("...j,jk->...k", a[None], b), fnp.einsum("ij,ij,ij->i", a, a, fnp.cos(a)),
            fnp.einsum("ij,i->j", fnp.ones((1, 4)), a[:, 0]), fnp.einsum("iij,jk->ik", c[:, :, None] * a[0, :2], b[:2]))


def test_einsum_runs_native_as_loops_and_blas_and_its_derivatives_too():
    a, b, c = grid(3, 4), grid(4, 5, lo=0.0, hi=2.0), grid(3, 3)
    big_a, big_b = grid(40, 50), grid(50, 30)

    def f(a, b, c, p, q):
        def loss(a, b, c):  # (diagonals rebuilt by identities, labels summed away by ones: einsums too)
            return sum(fnp.sum(fnp.tanh(y)) for y in einsums(a, b, c)[1:5])
        return einsums(a, b, c), fg.grad(loss, argnums=(0, 1, 2))(a, b, c), fnp.einsum("ij,jk->ik", fnp.sin(p), q)

    (got, grads, big), (want, grads_want, big_want), compiled = compiled_both(f, a, b, c, big_a, big_b)
    assert_all_native(compiled)
    for g, w in zip(got, want):
        assert_within_bound(g, w, 4)
    np.testing.assert_allclose(got[2], np.trace(c), rtol=1e-15)
    for g, w in zip(grads, grads_want):
        assert_within_bound(g, w, 16)
    assert_within_bound(big, big_want, 50)
    segment = native.plan(compiled.program)[0]
    assert "np.dot(" in native.segment_source(segment.eqns, segment.ins, segment.outs)  # BLAS


def test_solve_with_broadcasting_batch_axes_runs_native():
    a = spd_stack(2, 1)  # (2, 1, 4, 4)
    b = grid(3, 4)

    def solves(a, b):  # batch axes (2, 1) against (3,); () against (3,); (2, 1) against (1, 3)
        return (fnp.linalg.solve(a, b[..., None]), fnp.linalg.solve(a[0, 0], b[:, :, None] * 2.0),
                fnp.linalg.solve(a, b[None, :, :, None]))

    def f(a, b):
        return solves(a, b), fg.grad(lambda a, b: fnp.sum(solves(a, b)[0] ** 2), argnums=(0, 1))(a, b)

    (got, grads), (want, grads_want), compiled = compiled_both(f, a, b)
    assert_all_native(compiled)
    assert got[0].shape == (2, 3, 4, 1) and got[1].shape == (3, 4, 1) and got[2].shape == (2, 3, 4, 1)
    for g, w in zip(got, want):
        assert_within_bound(g, w, 16)
    for g, w in zip(grads, grads_want):  # (solves with the transposed matrices, products, sums over broadcast axes)
        assert_within_bound(g, w, 64)


def test_gathers_in_a_compiled_loop_with_neighbour_indices():
    nb = np.array([[1, 2], [0, 3], [3, 1], [2, 0]])

    def run(s):
        return fg.fori_loop(0, 4, lambda k, s: s + fnp.sin(s[nb]).sum(axis=1) * 0.1 + s[k] * 0.01, s)

    got, want, compiled = compiled_both(lambda s: (run(s), fg.grad(lambda s: fnp.sum(run(s) ** 2))(s)), grid(4))
    assert_all_native(compiled)
    for g, w in zip(got, want):
        assert_within_bound(g, w, 8)


def test_unsupported_indices_stay_on_the_replay_and_the_rest_lowers():
    table = grid(6, 3)  # a gather from a constant lowers; one by unsigned index values, or of integers, does not

    def f(x, u):
        y = fnp.exp(x) * 2.0
        counts = u[np.array([2, 1, 0])]  # a gather of integers: replayed
        return fnp.tanh(y[u] + fnp.asarray(table)[np.array([5, 0, -1])]) + fnp.cos(y[:3]) * counts[:, None]

    got, want, compiled = compiled_both(f, grid(6, 3), np.array([1, 1, 4], dtype=np.uint8))
    left = [e for e in compiled.program.eqns if not native.lowerable(e)]
    assert compiled.lowered > 0 and compiled.left == len(left) > 0
    # left: the two gathers by or of uint8 values and what reads the integers; the constant's gather lowered
    assert len(left) == 4 and all(isinstance(e.ins[0], Var) for e in left), left
    assert_within_bound(got, want)
    x, u = grid(6, 3), np.array([1, 1, 4])
    assert_within_bound(got, np.tanh(np.exp(x)[u] * 2.0 + table[[5, 0, -1]]) + np.cos(np.exp(x)[:3] * 2.0) * u[[2, 1, 0], None])
