"""Tests for funcgrad.numpy shape and layout functions (funcgrad/numpy/shape_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

HYP = settings(max_examples=30, deadline=None)
DTYPES = [np.float64, np.float32]


def rand(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def assert_tree_equal(got, want):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_tree_equal(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# table: (id, f(m, *arrays) with m = numpy or funcgrad.numpy, argument shapes)

CASES = [
    ("reshape", lambda m, x: m.reshape(x, (3, 2)), [(2, 3)]),
    ("reshape_-1", lambda m, x: m.reshape(x, (-1, 4)), [(2, 3, 4)]),
    ("reshape_int", lambda m, x: m.reshape(x, 6), [(2, 3)]),
    ("reshape_F", lambda m, x: m.reshape(x, (4, 3), order="F"), [(2, 6)]),
    ("reshape_kw", lambda m, x: m.reshape(x, shape=(2, 2, 3), order="F"), [(3, 4)]),
    ("ravel", lambda m, x: m.ravel(x), [(2, 3)]),
    ("ravel_F", lambda m, x: m.ravel(x, order="F"), [(2, 3, 2)]),
    ("transpose", lambda m, x: m.transpose(x), [(2, 3, 4)]),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, 2, 0)), [(2, 3, 4)]),
    ("transpose_neg", lambda m, x: m.transpose(x, (-1, 0, -2)), [(2, 3, 4)]),
    ("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1)), [(2, 3, 4)]),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x), [(2, 3, 4)]),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, -1), [(2, 3, 4)]),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), [(2, 3, 4)]),
    ("moveaxis_seq", lambda m, x: m.moveaxis(x, (0, 1), (2, 0)), [(2, 3, 4)]),
    ("expand_dims", lambda m, x: m.expand_dims(x, 1), [(2, 3)]),
    ("expand_dims_tuple", lambda m, x: m.expand_dims(x, (0, -1)), [(2, 3)]),
    ("squeeze", lambda m, x: m.squeeze(x), [(1, 3, 1, 2)]),
    ("squeeze_int", lambda m, x: m.squeeze(x, 2), [(1, 3, 1, 2)]),
    ("squeeze_tuple", lambda m, x: m.squeeze(x, axis=(0, -2)), [(1, 3, 1, 2)]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 2, 3)), [(2, 1)]),
    ("broadcast_to_int", lambda m, x: m.broadcast_to(x, 5), [(1,)]),
    ("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), [(3, 1), (1, 4)]),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), [()]),
    ("atleast_2d", lambda m, x: m.atleast_2d(x), [(3,)]),
    ("atleast_3d_1", lambda m, x: m.atleast_3d(x), [(3,)]),
    ("atleast_3d_2", lambda m, x: m.atleast_3d(x), [(2, 3)]),
    ("atleast_2d_many", lambda m, x, y: m.atleast_2d(x, y), [(), (2, 3)]),
    ("concatenate", lambda m, x, y: m.concatenate([x, y]), [(2, 3), (4, 3)]),
    ("concatenate_ax1", lambda m, x, y, z: m.concatenate((x, y, z), axis=1), [(2, 1), (2, 3), (2, 2)]),
    ("concatenate_neg", lambda m, x, y: m.concatenate([x, y], axis=-1), [(2, 3, 1), (2, 3, 2)]),
    ("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), [(2, 3), (4,)]),
    ("concatenate_one", lambda m, x: m.concatenate([x]), [(3, 2)]),
    ("concat", lambda m, x, y: m.concat([x, y], axis=1), [(2, 2), (2, 1)]),
    ("stack", lambda m, x, y: m.stack([x, y]), [(2, 3), (2, 3)]),
    ("stack_neg", lambda m, x, y, z: m.stack([x, y, z], axis=-1), [(2, 3), (2, 3), (2, 3)]),
    ("stack_mid", lambda m, x, y: m.stack((x, y), axis=1), [(2, 3), (2, 3)]),
    ("stack_one", lambda m, x: m.stack([x], axis=-2), [(3,)]),
    ("stack_scalars", lambda m, x, y: m.stack([x, y, x]), [(), ()]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [(2, 3), (2, 1)]),
    ("hstack_1d", lambda m, x, y: m.hstack([x, y]), [(3,), (2,)]),
    ("vstack", lambda m, x, y: m.vstack([x, y]), [(3,), (2, 3)]),
    ("dstack", lambda m, x, y: m.dstack([x, y]), [(2, 3), (2, 3)]),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), [(3,), (3, 2)]),
    ("split", lambda m, x: m.split(x, 3), [(6, 2)]),
    ("split_list", lambda m, x: m.split(x, [1, 3], axis=1), [(2, 5)]),
    ("split_neg", lambda m, x: m.split(x, [-2], axis=-1), [(2, 5)]),
    ("split_overlap", lambda m, x: m.split(x, [3, 1]), [(5,)]),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=1), [(2, 7)]),
    ("array_split_list", lambda m, x: m.array_split(x, [2, 2, 9]), [(5, 2)]),
    ("hsplit", lambda m, x: m.hsplit(x, 2), [(3, 4)]),
    ("hsplit_1d", lambda m, x: m.hsplit(x, [1]), [(4,)]),
    ("vsplit", lambda m, x: m.vsplit(x, 2), [(4, 3)]),
    ("dsplit", lambda m, x: m.dsplit(x, [1]), [(2, 2, 3)]),
    ("unstack", lambda m, x: m.unstack(x, axis=1), [(2, 3)]),
    ("tile", lambda m, x: m.tile(x, 3), [(2,)]),
    ("tile_2d", lambda m, x: m.tile(x, (2, 1, 3)), [(2, 3)]),
    ("tile_short", lambda m, x: m.tile(x, (2,)), [(2, 3)]),
    ("repeat", lambda m, x: m.repeat(x, 2), [(2, 3)]),
    ("repeat_axis", lambda m, x: m.repeat(x, 3, axis=1), [(2, 3)]),
    ("repeat_per", lambda m, x: m.repeat(x, [1, 0, 3], axis=-1), [(2, 3)]),
    ("repeat_per_none", lambda m, x: m.repeat(x, [2, 1, 0, 1]), [(2, 2)]),
    ("repeat_len1", lambda m, x: m.repeat(x, [2], axis=0), [(3, 2)]),
    ("flip", lambda m, x: m.flip(x), [(2, 3)]),
    ("flip_axis", lambda m, x: m.flip(x, -1), [(2, 3, 2)]),
    ("flip_tuple", lambda m, x: m.flip(x, (0, 2)), [(2, 3, 2)]),
    ("fliplr", lambda m, x: m.fliplr(x), [(2, 3)]),
    ("flipud", lambda m, x: m.flipud(x), [(3,)]),
    ("roll", lambda m, x: m.roll(x, 2), [(2, 3)]),
    ("roll_axis", lambda m, x: m.roll(x, -1, axis=1), [(2, 3)]),
    ("roll_tuple", lambda m, x: m.roll(x, (1, 2), axis=(0, 1)), [(2, 3)]),
    ("roll_tuple_none", lambda m, x: m.roll(x, (1, 3)), [(2, 3)]),
    ("rot90", lambda m, x: m.rot90(x), [(2, 3)]),
    ("rot90_k", lambda m, x: m.rot90(x, 3, axes=(1, 2)), [(2, 3, 4)]),
    ("pad", lambda m, x: m.pad(x, 1), [(2, 3)]),
    ("pad_widths", lambda m, x: m.pad(x, ((1, 0), (2, 3))), [(2, 3)]),
    ("pad_constant", lambda m, x: m.pad(x, (1, 2), constant_values=3.5), [(3,)]),
    ("pad_constant_axes", lambda m, x: m.pad(x, 1, constant_values=((1.0, 2.0), (3.0, 4.0))), [(2, 2)]),
    ("pad_edge", lambda m, x: m.pad(x, ((2, 1), (0, 3)), mode="edge"), [(2, 3)]),
    ("pad_reflect", lambda m, x: m.pad(x, ((2, 1), (1, 2)), mode="reflect"), [(3, 3)]),
    ("pad_reflect_big", lambda m, x: m.pad(x, 5, mode="reflect"), [(3,)]),
    ("pad_symmetric", lambda m, x: m.pad(x, ((3, 1), (1, 2)), mode="symmetric"), [(2, 3)]),
    ("pad_wrap", lambda m, x: m.pad(x, ((1, 4), (2, 0)), mode="wrap"), [(2, 3)]),
    ("diag_1d", lambda m, x: m.diag(x), [(3,)]),
    ("diag_1d_k", lambda m, x: m.diag(x, -2), [(3,)]),
    ("diag_2d", lambda m, x: m.diag(x), [(3, 3)]),
    ("diag_2d_k", lambda m, x: m.diag(x, 1), [(3, 5)]),
    ("diag_2d_negk", lambda m, x: m.diag(x, k=-1), [(4, 2)]),
    ("diagflat", lambda m, x: m.diagflat(x, 1), [(2, 2)]),
    ("diagonal", lambda m, x: m.diagonal(x), [(3, 4)]),
    ("diagonal_args", lambda m, x: m.diagonal(x, 1, 2, 0), [(3, 2, 4)]),
    ("diagonal_neg", lambda m, x: m.diagonal(x, offset=-1, axis1=-1, axis2=-2), [(2, 3, 4)]),
    ("trace", lambda m, x: m.trace(x), [(3, 3)]),
    ("trace_args", lambda m, x: m.trace(x, 1, 0, 2), [(3, 2, 4)]),
    ("triu", lambda m, x: m.triu(x), [(3, 4)]),
    ("triu_k", lambda m, x: m.triu(x, -1), [(2, 3, 3)]),
    ("triu_1d", lambda m, x: m.triu(x, 1), [(3,)]),
    ("tril", lambda m, x: m.tril(x), [(4, 3)]),
    ("tril_k", lambda m, x: m.tril(x, k=1), [(3, 3)]),
    ("meshgrid_xy", lambda m, x, y: m.meshgrid(x, y), [(3,), (2,)]),
    ("meshgrid_ij", lambda m, x, y, z: m.meshgrid(x, y, z, indexing="ij"), [(3,), (2,), (2,)]),
    ("meshgrid_sparse", lambda m, x, y: m.meshgrid(x, y, sparse=True), [(3,), (2,)]),
    ("meshgrid_one", lambda m, x: m.meshgrid(x), [(3,)]),
]
IDS = [c[0] for c in CASES]


def _args(shapes, dtype):
    return tuple(rand(s, dtype, seed=i) for i, s in enumerate(shapes))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_forward_matches_numpy(name, f, shapes):
    for dt in DTYPES:
        args = _args(shapes, dt)
        assert_tree_equal(f(fnp, *args), f(np, *args))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_forward_traced_matches_numpy(name, f, shapes):
    # jvp's primal output comes from the traced computation.
    for dt in DTYPES:
        args = _args(shapes, dt)
        out, _ = fg.jvp(lambda *a: f(fnp, *a), args, args)
        assert_tree_equal(out, f(np, *args))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_check_grads(name, f, shapes, dtype):
    check_grads(lambda *a: f(fnp, *a), _args(shapes, dtype), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_check_grads_complex(name, f, shapes):
    args = tuple(a + 1j * rand(a.shape, seed=7) for a in _args(shapes, np.float64))
    check_grads(lambda *a: f(fnp, *a), args, order=1, modes=("fwd", "rev"))


def _first(out):
    return out[0] if isinstance(out, (list, tuple)) else out


@pytest.mark.parametrize("name,f,shapes", CASES[::3], ids=IDS[::3])
def test_check_grads_nonlinear(name, f, shapes):
    # Curvature through the layout op: second derivatives are not all zero.
    def g(*a):
        y = _first(f(fnp, *a))
        return fnp.sin(y) * y

    check_grads(g, _args(shapes, np.float64), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_dtype_kept(name, f, shapes):
    args = _args(shapes, np.float32)
    out = f(fnp, *args)
    for leaf in fg.tree_util.tree_leaves(out):
        assert np.asarray(leaf).dtype == np.float32
    _, f_vjp = fg.vjp(lambda *a: f(fnp, *a), *args)
    cts = f_vjp(fg.tree_util.tree_map(lambda y: np.ones_like(y), out))
    for ct, a in zip(cts, args):
        assert np.asarray(ct).dtype == np.float32 and np.shape(ct) == a.shape


# --------------------------------------------------------------------------
# closed forms and special cases

def test_split_unused_pieces():
    x = rand((6, 2))

    def f(x):
        a, b, c = fnp.split(x, 3)
        return fnp.sum(b * b)

    g = fg.grad(f)(x)
    want = np.zeros_like(x)
    want[2:4] = 2 * x[2:4]
    np.testing.assert_allclose(g, want)
    check_grads(lambda x: fnp.split(x, [1, 4])[1], (x,), order=2)
    check_grads(lambda x: fnp.array_split(x, 4, axis=1)[-1], (rand((3, 5)),), order=2)
    # jvp through unused pieces
    _, t = fg.jvp(lambda x: fnp.split(x, 3)[2], (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(t, np.ones((2, 2)))


def test_split_errors():
    x = rand((5,))
    with pytest.raises(ValueError, match="equal division"):
        fg.grad(lambda x: fnp.sum(fnp.split(x, 2)[0]))(x)
    with pytest.raises(ValueError, match="larger than 0"):
        fg.grad(lambda x: fnp.sum(fnp.array_split(x, 0)[0]))(x)
    with pytest.raises(ValueError, match="vsplit"):
        fnp.vsplit(x, 1)


def test_concatenate_mixed_traced_untraced_lists():
    x = rand((2, 3))
    c = rand((1, 3), seed=3)

    def f(x):
        return fnp.concatenate([c, x, [[1.0, 2.0, 3.0]], x * 2])

    out = f(x)
    np.testing.assert_array_equal(out, np.concatenate([c, x, [[1.0, 2.0, 3.0]], x * 2]))
    w = rand((6, 3), seed=5)
    g = fg.grad(lambda x: fnp.sum(f(x) * w))(x)
    np.testing.assert_allclose(g, w[1:3] + 2 * w[4:6])
    check_grads(f, (x,), order=2)
    check_grads(lambda x: fnp.stack([c[0], fnp.sum(x, axis=0), [1.0, 2.0, 3.0]]), (x,), order=2)


def test_concatenate_mixed_dtypes():
    x32 = rand((3,), np.float32)
    c64 = rand((2,), np.float64)
    out, f_vjp = fg.vjp(lambda x: fnp.concatenate([x, c64]), x32)
    assert out.dtype == np.float64  # as NumPy promotes
    (ct,) = f_vjp(np.arange(5.0))
    assert ct.dtype == np.float32
    np.testing.assert_array_equal(ct, np.arange(3.0, dtype=np.float32))
    _, t = fg.jvp(lambda x: fnp.concatenate([x, c64]), (x32,), (np.ones(3, np.float32),))
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t, [1, 1, 1, 0, 0])
    # a real input concatenated with a complex one gets a real cotangent
    out, f_vjp = fg.vjp(lambda x: fnp.concatenate([x, np.ones(1, complex)]), rand((2,)))
    (ct,) = f_vjp(np.array([1 + 2j, 3 - 1j, 5j]))
    assert ct.dtype == np.float64
    np.testing.assert_array_equal(ct, [1.0, 3.0])


def test_concatenate_dtype_kwarg():
    x = rand((2,), np.float64)
    out, f_vjp = fg.vjp(lambda x: fnp.concatenate([x, x], dtype=np.float32, casting="unsafe"), x)
    assert out.dtype == np.float32
    (ct,) = f_vjp(np.ones(4, np.float32))
    assert ct.dtype == np.float64
    np.testing.assert_array_equal(ct, [2.0, 2.0])


def test_stack_of_traced_scalars():
    def f(a, b):
        return fnp.stack([a * b, a, fnp.sin(b)])

    a, b = np.array(0.7), np.array(-1.3)
    np.testing.assert_allclose(f(a, b), [a * b, a, np.sin(b)])
    check_grads(f, (a, b), order=2)
    g = fg.grad(lambda a, b: fnp.sum(f(a, b) * np.array([1.0, 2.0, 3.0])), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(g, [b + 2, a + 3 * np.cos(b)])
    # fnp.array of traced values goes through stack
    check_grads(lambda a, b: fnp.array([[a, b], [b * b, 1.0]]), (a, b), order=2)


@pytest.mark.parametrize("n", [9, 40, 300])
def test_stack_many_traced(n):
    # many traced arguments in one call (the rules see them all at once)
    x = rand((n,))

    def f(x):
        parts = [fnp.sum(x * w) for w in np.eye(n)]
        return fnp.stack(parts)

    np.testing.assert_allclose(f(x), x)
    ct = rand((n,), seed=2)
    np.testing.assert_allclose(fg.vjp(f, x)[1](ct)[0], ct)
    np.testing.assert_allclose(fg.jvp(f, (x,), (ct,))[1], ct)


def test_concatenate_many_mostly_untraced():
    # 300 untraced pieces and one traced piece at the end
    x = rand((2,))
    consts = [np.full(1, float(i)) for i in range(300)]
    f = lambda x: fnp.concatenate(consts + [x])  # noqa: E731
    np.testing.assert_array_equal(f(x), np.concatenate(consts + [x]))
    ct = rand((302,), seed=4)
    np.testing.assert_allclose(fg.vjp(f, x)[1](ct)[0], ct[-2:])
    check_grads(f, (x,), order=2)


def test_hessian_and_jacobians():
    x = np.linspace(-1, 1, 20)
    H = fg.hessian(lambda x: fnp.sum(fnp.sin(x) * x))(x)
    np.testing.assert_allclose(H, np.diag(2 * np.cos(x) - x * np.sin(x)), atol=1e-12)
    J = fg.jacfwd(fg.jacrev(lambda x: fnp.sin(x)))(x[:5])
    want = np.zeros((5, 5, 5))
    want[np.arange(5), np.arange(5), np.arange(5)] = -np.sin(x[:5])
    np.testing.assert_allclose(J, want, atol=1e-12)


def test_pad_traced_constant_values():
    x = rand((2, 3))
    widths = ((1, 2), (3, 0))
    # scalar: d/dc sum(pad) = number of padded cells
    g = fg.grad(lambda c: fnp.sum(fnp.pad(x, widths, constant_values=c)))(1.5)
    assert g == (5 * 6 - 6)
    # per axis (before, after): later axes own the corners, as NumPy fills them
    cv = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = fnp.pad(x, widths, constant_values=cv)
    np.testing.assert_array_equal(out, np.pad(x, widths, constant_values=cv))
    traced_out, _ = fg.jvp(lambda c: fnp.pad(x, widths, constant_values=c), (cv,), (cv,))
    np.testing.assert_array_equal(traced_out, np.pad(x, widths, constant_values=cv))
    g = fg.grad(lambda c: fnp.sum(fnp.pad(x, widths, constant_values=c)))(cv)
    np.testing.assert_array_equal(g, [[1 * 3, 2 * 3], [3 * 5, 0]])
    check_grads(lambda x, c: fnp.pad(x, widths, constant_values=c), (x, cv), order=2)
    check_grads(lambda x, c: fnp.pad(x, 1, constant_values=c), (x, np.array(0.3)), order=2)
    # float32 array with a float64 traced constant stays float32
    x32 = x.astype(np.float32)
    out, f_vjp = fg.vjp(lambda c: fnp.pad(x32, 1, constant_values=c), np.array(2.0))
    assert out.dtype == np.float32
    assert f_vjp(np.ones(out.shape, np.float32))[0] == 4 * 5 - 2 * 3


def test_pad_closed_forms():
    x = rand((3,))
    g = fg.grad(lambda x: fnp.sum(fnp.pad(x, (2, 1), mode="edge")))(x)
    np.testing.assert_array_equal(g, [3, 1, 2])
    g = fg.grad(lambda x: fnp.sum(fnp.pad(x, (2, 2), mode="wrap")))(x)  # [b c | a b c | a b]
    np.testing.assert_array_equal(g, [2, 3, 2])
    g = fg.grad(lambda x: fnp.sum(fnp.pad(x, 2, mode="reflect")))(x)
    np.testing.assert_array_equal(g, [2, 3, 2])
    g = fg.grad(lambda x: fnp.sum(fnp.pad(x, 2, mode="constant", constant_values=7.0)))(x)
    np.testing.assert_array_equal(g, [1, 1, 1])


def test_pad_errors():
    x = rand((3,))
    with pytest.raises(NotImplementedError, match="mode='maximum'"):
        fg.grad(lambda x: fnp.sum(fnp.pad(x, 1, mode="maximum")))(x)
    with pytest.raises(NotImplementedError, match="reflect_type"):
        fg.grad(lambda x: fnp.sum(fnp.pad(x, 1, mode="reflect", reflect_type="odd")))(x)
    with pytest.raises(ValueError, match="not supported"):
        fg.grad(lambda x: fnp.sum(fnp.pad(x, 1, mode="bogus")))(x)
    with pytest.raises(TypeError, match="integral"):
        fg.grad(lambda x: fnp.sum(fnp.pad(x, 1.5)))(x)
    with pytest.raises(ValueError, match="unsupported keyword"):
        fg.grad(lambda x: fnp.sum(fnp.pad(x, 1, mode="edge", constant_values=1.0)))(x)
    # untraced arrays: every NumPy mode
    np.testing.assert_array_equal(fnp.pad(x, 1, mode="maximum"), np.pad(x, 1, mode="maximum"))


def test_repeat_closed_form():
    x = rand((3,))
    g = fg.grad(lambda x: fnp.sum(fnp.repeat(x, [2, 0, 3]) * np.arange(5.0)))(x)
    np.testing.assert_allclose(g, [0 + 1, 0, 2 + 3 + 4])
    g = fg.grad(lambda x: fnp.sum(fnp.repeat(x, 4)))(x)
    np.testing.assert_array_equal(g, [4, 4, 4])


def test_tile_closed_form():
    x = rand((2,))
    g = fg.grad(lambda x: fnp.sum(fnp.tile(x, (3, 2)) * np.arange(12.0).reshape(3, 4)))(x)
    # tiles at columns 0,2 (x[0]) and 1,3 (x[1]) of each row
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(g, [m[:, 0::2].sum(), m[:, 1::2].sum()])


def test_diag_trace_closed_form():
    x = rand((3, 4))
    g = fg.grad(lambda x: fnp.trace(x, offset=1))(x)
    np.testing.assert_array_equal(g, np.eye(3, 4, k=1))
    v = rand((3,))
    _, f_vjp = fg.vjp(lambda v: fnp.diag(v, 1), v)
    ct = rand((4, 4), seed=1)
    np.testing.assert_array_equal(f_vjp(ct)[0], np.diag(ct, 1))
    with pytest.raises(ValueError, match="1- or 2-d"):
        fg.grad(lambda x: fnp.sum(fnp.diag(x)))(rand((2, 2, 2)))


def test_triu_tril_split_gradient():
    x = rand((4, 4))
    g1 = fg.grad(lambda x: fnp.sum(fnp.triu(x, 1) + fnp.tril(x)))(x)
    np.testing.assert_array_equal(g1, np.ones((4, 4)))


def test_reshape_order_A_fortran_input():
    x = np.asfortranarray(rand((2, 3)))
    out, f_vjp = fg.vjp(lambda x: fnp.reshape(x, (3, 2), order="A"), x)
    np.testing.assert_array_equal(out, np.reshape(x, (3, 2), order="A"))
    ct = rand((3, 2), seed=1)
    np.testing.assert_array_equal(f_vjp(ct)[0], np.reshape(ct, (2, 3), order="F"))
    _, t = fg.jvp(lambda x: fnp.reshape(x, (3, 2), order="A"), (x,), (np.ascontiguousarray(ct.reshape(2, 3)),))
    np.testing.assert_array_equal(t, np.reshape(ct.reshape(2, 3), (3, 2), order="F"))


def test_broadcast_to_same_shape_is_identity_for_boxes():
    seen = []

    def f(x):
        y = fnp.broadcast_to(x, (3,))
        seen.append(y is x)
        return fnp.sum(y)

    fg.grad(f)(rand((3,)))
    assert seen == [True]


def test_error_messages():
    x = rand((2, 3))
    with pytest.raises(ValueError, match="same shape"):
        fg.grad(lambda x: fnp.sum(fnp.stack([x, fnp.sum(x, axis=0)])))(x)
    with pytest.raises(ValueError, match="zero-dimensional"):
        fg.grad(lambda x: fnp.sum(fnp.concatenate([fnp.sum(x), fnp.sum(x)])))(x)
    with pytest.raises(np.exceptions.AxisError):
        fg.grad(lambda x: fnp.sum(fnp.stack([x, x], axis=3)))(x)
    with pytest.raises(TypeError, match="out="):
        fg.grad(lambda x: fnp.sum(fnp.concatenate([x, x], out=np.empty((4, 3)))))(x)
    with pytest.raises(ValueError, match="indexing"):
        fnp.meshgrid(x, indexing="yx")
    with pytest.raises(ValueError, match=">= 2-d"):
        fnp.fliplr(rand((3,)))


def test_untraced_out_and_box_iteration():
    x = rand((2, 3))
    buf = np.empty((4, 3))
    fnp.concatenate([x, x], out=buf)
    np.testing.assert_array_equal(buf, np.concatenate([x, x]))
    # a traced array passed as the sequence iterates over its first axis, as in NumPy
    check_grads(lambda x: fnp.concatenate(x), (x,), order=1)
    check_grads(lambda x: fnp.stack(x, axis=1), (x,), order=1)
    np.testing.assert_array_equal(fg.jvp(lambda x: fnp.stack(x, axis=1), (x,), (x,))[0], np.stack(x, axis=1))


# --------------------------------------------------------------------------
# property tests over shapes and axes

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


def _grad_check(f, args):
    check_grads(f, args, order=1, modes=("fwd", "rev"))


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_transpose_moveaxis(shape, data):
    nd = len(shape)
    perm = data.draw(st.permutations(range(nd)))
    perm = [p - nd if data.draw(st.booleans()) else p for p in perm]
    x = rand(shape)
    np.testing.assert_array_equal(fnp.transpose(x, perm), np.transpose(x, perm))
    _grad_check(lambda x: fnp.transpose(x, perm), (x,))
    src = data.draw(st.integers(-nd, nd - 1))
    dst = data.draw(st.integers(-nd, nd - 1))
    _grad_check(lambda x: fnp.moveaxis(x, src, dst), (x,))
    np.testing.assert_array_equal(fg.jvp(lambda x: fnp.swapaxes(x, src, dst), (x,), (x,))[0], np.swapaxes(x, src, dst))


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_reshape(shape, data):
    x = rand(shape)
    new = list(data.draw(st.permutations(shape)))
    if data.draw(st.booleans()):
        new[data.draw(st.integers(0, len(new) - 1))] = -1
    order = data.draw(st.sampled_from(["C", "F"]))
    np.testing.assert_array_equal(fnp.reshape(x, new, order=order), np.reshape(x, new, order=order))
    _grad_check(lambda x: fnp.reshape(x, new, order=order), (x,))


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_concatenate_stack(shape, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    n = data.draw(st.integers(1, 4))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    traced = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    arrays = []
    for i, s in enumerate(sizes):
        sh = list(shape)
        sh[axis] = s
        arrays.append(rand(tuple(sh), seed=i))
    if not any(traced):
        traced[0] = True
    idx = [i for i, t in enumerate(traced) if t]

    def f(*xs):
        full = list(arrays)
        for i, x in zip(idx, xs):
            full[i] = x
        return fnp.concatenate(full, axis=axis)

    args = tuple(arrays[i] for i in idx)
    np.testing.assert_array_equal(fg.jvp(f, args, args)[0], np.concatenate(arrays, axis=axis))
    _grad_check(f, args)

    same = [rand(shape, seed=i) for i in range(n)]
    sax = data.draw(st.integers(-nd - 1, nd))

    def g(*xs):
        full = list(same)
        for i, x in zip(idx, xs):
            full[i] = x
        return fnp.stack(full, axis=sax)

    sargs = tuple(same[i] for i in idx)
    np.testing.assert_array_equal(fg.jvp(g, sargs, sargs)[0], np.stack(same, axis=sax))
    _grad_check(g, sargs)


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_split(shape, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    n = shape[axis]
    points = sorted(data.draw(st.lists(st.integers(-n - 1, n + 1), max_size=3)))
    use = data.draw(st.integers(0, len(points)))
    x = rand(shape)
    want = np.array_split(x, points, axis=axis)
    got = fg.jvp(lambda x: fnp.array_split(x, points, axis=axis), (x,), (x,))[0]
    assert_tree_equal(got, want)
    _grad_check(lambda x: fnp.array_split(x, points, axis=axis)[use], (x,))
    sections = data.draw(st.integers(1, 3))
    _grad_check(lambda x: fnp.array_split(x, sections, axis=axis), (x,))


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_squeeze_expand_flip_roll(shape, data):
    nd = len(shape)
    x = rand(shape)
    ax = data.draw(st.integers(-nd - 1, nd))
    _grad_check(lambda x: fnp.expand_dims(x, ax), (x,))
    axes = tuple(data.draw(st.sets(st.integers(0, nd - 1), min_size=1)))
    _grad_check(lambda x: fnp.flip(x, axes), (x,))
    shift = tuple(data.draw(st.integers(-5, 5)) for _ in axes)
    np.testing.assert_array_equal(fg.jvp(lambda x: fnp.roll(x, shift, axes), (x,), (x,))[0], np.roll(x, shift, axes))
    _grad_check(lambda x: fnp.roll(x, shift, axes), (x,))
    y = rand(tuple(1 if i in axes else s for i, s in enumerate(shape)))
    np.testing.assert_array_equal(fg.jvp(lambda y: fnp.squeeze(y, axes), (y,), (y,))[0], np.squeeze(y, axes))
    _grad_check(lambda y: fnp.squeeze(y, axes), (y,))


@HYP
@given(shape=shapes, data=st.data())
def test_hyp_pad_tile_repeat(shape, data):
    nd = len(shape)
    x = rand(shape)
    widths = tuple((data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4))) for _ in range(nd))
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    got = fg.jvp(lambda x: fnp.pad(x, widths, mode=mode), (x,), (x,))[0]
    np.testing.assert_array_equal(got, np.pad(x, widths, mode=mode))
    _grad_check(lambda x: fnp.pad(x, widths, mode=mode), (x,))
    reps = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=nd + 1)))
    _grad_check(lambda x: fnp.tile(x, reps), (x,))
    axis = data.draw(st.sampled_from([None] + list(range(-nd, nd))))
    n = x.size if axis is None else shape[axis]
    counts = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    got = fg.jvp(lambda x: fnp.repeat(x, counts, axis), (x,), (x,))[0]
    np.testing.assert_array_equal(got, np.repeat(x, counts, axis))
    _grad_check(lambda x: fnp.repeat(x, counts, axis), (x,))


@HYP
@given(data=st.data())
def test_hyp_diagonal(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2, max_size=4)))
    nd = len(shape)
    a1, a2 = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2, unique_by=lambda a: a % nd))
    offset = data.draw(st.integers(-3, 3))
    x = rand(shape)
    np.testing.assert_array_equal(
        fg.jvp(lambda x: fnp.diagonal(x, offset, a1, a2), (x,), (x,))[0], np.diagonal(x, offset, a1, a2)
    )
    _grad_check(lambda x: fnp.diagonal(x, offset, a1, a2), (x,))
    _grad_check(lambda x: fnp.trace(x, offset, a1, a2), (x,))


# --------------------------------------------------------------------------
# the private linear pairs used inside rules (their own rules are reached only
# at third order through the public functions)

from funcgrad.numpy import shape_ops as _so  # noqa: E402

PRIVATE = [
    ("take_slice", lambda x: _so._take_slice(x, (slice(1, 3), 0)), (4, 2)),
    ("embed_slice", lambda x: _so._embed_slice(x, (slice(None), slice(1, None, 2)), (2, 5)), (2, 2)),
    ("take_axis", lambda x: _so._take_axis(x, np.array([2, 0, 0, 1]), 1), (2, 3)),
    ("scatter_axis", lambda x: _so._scatter_axis(x, np.array([2, 0, 0, 1]), 3, 1), (2, 4)),
    ("diag_embed", lambda x: _so._diag_embed(x, -1, 2, 0, (3, 2, 4)), (2, 3)),
    ("split", lambda x: _so._split(x, (1, 1, 3), 0), (4, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32"])
@pytest.mark.parametrize("name,f,shape", PRIVATE, ids=[p[0] for p in PRIVATE])
def test_private_pairs(name, f, shape, dtype):
    x = rand(shape, dtype)
    check_grads(f, (x,), order=2)
    _, f_vjp = fg.vjp(f, x)
    out = f(x)
    ct = fg.tree_util.tree_map(lambda y: rand(np.shape(y), dtype, seed=3), out)
    # the VJP is the transpose of the (linear) function: <f(x), ct> == <x, vjp(ct)>
    pairs = zip(fg.tree_util.tree_leaves(out), fg.tree_util.tree_leaves(ct))
    lhs = sum(float(np.sum(np.asarray(a, np.float64) * b)) for a, b in pairs)
    rhs = float(np.sum(x.astype(np.float64) * f_vjp(ct)[0]))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5)


# --------------------------------------------------------------------------
# batching (vmap): every primitive has a rule; vmap equals a loop over the batch

import contextlib  # noqa: E402

from funcgrad.core import Primitive  # noqa: E402
from funcgrad.core.hooks import watch_batching_fallback  # noqa: E402

SHAPE_PRIMS = {
    getattr(_so, n).primitive.name
    for n in dir(_so)
    if isinstance(getattr(getattr(_so, n), "primitive", None), Primitive)
}


def test_every_shape_primitive_has_a_batching_rule():
    prims = [getattr(_so, n).primitive for n in dir(_so)
             if isinstance(getattr(getattr(_so, n), "primitive", None), Primitive)]
    assert len(SHAPE_PRIMS) >= 24
    assert [p.name for p in prims if p.batch_rule is None] == []


@contextlib.contextmanager
def no_shape_fallback():
    """Fail if a primitive of this family takes vmap's loop fallback (no batching rule)
    inside the block; yields the names of every primitive that did."""
    with watch_batching_fallback() as seen:
        yield seen
    assert not set(seen) & SHAPE_PRIMS, f"loop fallback for {sorted(set(seen) & SHAPE_PRIMS)}"


def batched(per_shape, size, axis, dtype=np.float64, seed=0):
    """A batch of ``size`` examples of ``per_shape`` stacked along ``axis`` (None: one example)."""
    if axis is None:
        return rand(per_shape, dtype, seed)
    return np.moveaxis(rand((size,) + tuple(per_shape), dtype, seed), 0, axis)


def example(a, axis, b):
    return a if axis is None else a[(slice(None),) * (axis % a.ndim) + (b,)]


def loop(f, axes, args, size):
    """Reference: f on each example (a basic-index view), stacked along axis 0."""
    outs = [f(*[example(a, ax, b) for a, ax in zip(args, axes)]) for b in range(size)]
    if isinstance(outs[0], (list, tuple)):
        return type(outs[0])(np.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return np.stack(outs)


def _axes_strategy(shapes):
    return st.tuples(*[st.one_of(st.none(), st.integers(-len(s) - 1, len(s))) for s in shapes])


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_vmap_matches_loop(name, f, shapes, data):
    size = data.draw(st.integers(1, 3), label="size")
    axes = list(data.draw(_axes_strategy(shapes), label="in_axes"))
    if all(a is None for a in axes):
        axes[data.draw(st.integers(0, len(shapes) - 1))] = 0
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    args = [batched(s, size, ax, dtype, seed=i) for i, (s, ax) in enumerate(zip(shapes, axes))]
    with no_shape_fallback():
        out = fg.vmap(lambda *a: f(fnp, *a), in_axes=tuple(axes))(*args)
    assert_tree_equal(out, loop(lambda *a: f(np, *a), axes, args, size))


@pytest.mark.parametrize("name,f,shapes", CASES, ids=IDS)
def test_vmap_composes_with_differentiation(name, f, shapes):
    """jacrev/jacfwd (vmap over the VJP/JVP rules), hessian, vmap(grad) and grad(vmap)."""

    def g(*a):
        return _first(f(fnp, *a))

    def s(*a):
        y = g(*a)
        return fnp.sum(fnp.sin(y) * y)

    args = _args(shapes, np.float64)
    argnums = tuple(range(len(args)))
    rest = (None,) * (len(args) - 1)
    xs = np.stack([args[0] * (1.0 + 0.25 * k) for k in range(3)], axis=-1)
    with no_shape_fallback():
        jr = fg.jacrev(g, argnums=argnums)(*args)
        jf = fg.jacfwd(g, argnums=argnums)(*args)
        hess = fg.hessian(s)(*args)
        per_ex = fg.vmap(fg.grad(s), in_axes=(-1,) + rest)(xs, *args[1:])
        total = fg.grad(lambda x: fnp.sum(fnp.sin(fg.vmap(g, in_axes=(-1,) + rest)(x, *args[1:]))))(xs)
        t = rand(xs.shape, seed=5)
        _, fwd = fg.jvp(lambda x: fg.vmap(g, in_axes=(-1,) + rest)(x, *args[1:]), (xs,), (t,))
    want_fwd = np.stack([fg.jvp(lambda x: g(x, *args[1:]), (xs[..., k],), (t[..., k],))[1] for k in range(3)])
    np.testing.assert_allclose(fwd, want_fwd, atol=1e-12)
    for a, b in zip(jr, jf):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # references without vmap: one jvp per basis direction, one grad per example
    x0 = args[0]
    cols = []
    for i in range(x0.size):
        e = np.zeros(x0.size)
        e[i] = 1.0
        _, t = fg.jvp(lambda x: g(x, *args[1:]), (x0,), (e.reshape(x0.shape),))
        cols.append(np.asarray(t))
    want_j = np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + x0.shape) if cols else np.zeros(jr[0].shape)
    np.testing.assert_allclose(jr[0], want_j, atol=1e-12)
    rows = []
    for i in range(x0.size):
        e = np.zeros(x0.size)
        e[i] = 1.0
        _, t = fg.jvp(lambda x: fg.grad(s)(x, *args[1:]), (x0,), (e.reshape(x0.shape),))
        rows.append(np.asarray(t))
    np.testing.assert_allclose(np.reshape(hess, (x0.size, x0.size)), np.reshape(rows, (x0.size, x0.size)).T,
                               atol=1e-10)
    want = np.stack([fg.grad(s)(xs[..., k], *args[1:]) for k in range(3)])
    np.testing.assert_allclose(per_ex, want, atol=1e-12)
    want_total = np.stack(
        [fg.grad(lambda x: fnp.sum(fnp.sin(g(x, *args[1:]))))(xs[..., k]) for k in range(3)], axis=-1)
    np.testing.assert_allclose(total, want_total, atol=1e-12)


def test_no_fallback_warning_for_jacobians_of_shape_functions(no_batching_fallback):

    def f(x, y):
        z = fnp.concatenate([fnp.reshape(fnp.transpose(x), (-1,), order="F"), fnp.ravel(fnp.flip(y, 0))])
        parts = fnp.split(fnp.pad(z, (2, 1), mode="reflect"), [3, 11])
        w = fnp.stack([parts[1], fnp.roll(parts[1], 1)], axis=-1)
        t = fnp.tile(w, (1, 2))
        return fnp.concatenate([fnp.ravel(fnp.tril(t)), fnp.diagonal(t, -1)])

    x, y = rand((2, 3)), rand((2, 2), seed=1)
    with no_batching_fallback():
        jr = fg.jacrev(f, argnums=(0, 1))(x, y)
        jf = fg.jacfwd(f, argnums=(0, 1))(x, y)
        fg.vmap(f, in_axes=(1, None))(np.stack([x, x], 1), y)
        fg.jacfwd(fg.jacrev(f))(x, y)
    for a, b in zip(jr, jf):
        np.testing.assert_allclose(a, b)
        assert np.count_nonzero(a) > 0


# the private primitives, called directly: (id, f(x), per-example shape)
PRIVATE_BATCH = PRIVATE + [
    ("take_slice_int", lambda x: _so._take_slice(x, (1,)), (3, 2)),
    ("take_slice_none", lambda x: _so._take_slice(x, (None, slice(0, 2))), (3, 2)),
    ("embed_slice_bcast", lambda x: _so._embed_slice(x, (slice(None), 1), (2, 5)), ()),
    ("embed_slice_int", lambda x: _so._embed_slice(x, (1, slice(0, 2)), (3, 4)), (2,)),
    ("take_axis_neg", lambda x: _so._take_axis(x, np.array([1, 1, 0]), -1), (2, 2)),
    ("scatter_axis_0", lambda x: _so._scatter_axis(x, np.array([0, 2, 2]), 4, 0), (3,)),
    ("diag_embed_plain", lambda x: _so._diag_embed(x, 1, 0, 1, (3, 3)), (2,)),
    ("diag_embed_neg", lambda x: _so._diag_embed(x, 0, -1, -3, (2, 3, 2)), (3, 2)),
    ("split_neg", lambda x: _so._split(x, (2,), -1), (2, 3)),
    ("repeat_none", lambda x: _so._repeat(x, (1, 0, 2, 1), None), (2, 2)),
    ("pad_kw", lambda x: _so._pad(x, ((1, 0), (0, 2)), "constant", (("constant_values", ((1.0, 2.0), (3.0, 4.0))),)),
     (2, 2)),
    ("pad_kw_pair", lambda x: _so._pad(x, ((1, 1),), "constant", (("constant_values", (5.0, 6.0)),)), (2,)),
    ("pad_symmetric", lambda x: _so._pad(x, ((2, 1),), "symmetric", ()), (3,)),
]


@pytest.mark.parametrize("name,f,shape", PRIVATE_BATCH, ids=[p[0] for p in PRIVATE_BATCH])
@pytest.mark.parametrize("axis", [0, -1, 1])
def test_vmap_private_primitives(name, f, shape, axis):
    if axis == 1 and len(shape) == 0:
        axis = 0
    x = batched(shape, 3, axis, seed=2)
    with no_shape_fallback():
        out = fg.vmap(f, in_axes=axis)(x)
        if not name.endswith("bcast"):  # (embed_slice's VJP expects g shaped like its slot)
            jf = fg.jacfwd(f)(rand(shape))  # the rules' own primitives, batched
            jr = fg.jacrev(f)(rand(shape))
            for a, b in zip(fg.tree_util.tree_leaves(jf), fg.tree_util.tree_leaves(jr)):
                np.testing.assert_array_equal(a, b)
    assert_tree_equal(out, loop(f, (axis,), (x,), 3))


@pytest.mark.parametrize("order", ["C", "F", "A"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("fortran", [False, True])
def test_vmap_reshape_orders(order, axis, fortran):
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    if fortran:
        x = np.asfortranarray(x)
    f = lambda a: fnp.reshape(a, (-1, 2), order=order)
    out = fg.vmap(f, in_axes=axis)(x)
    want = loop(lambda a: np.reshape(a, (-1, 2), order=order), (axis,), (x,), x.shape[axis])
    np.testing.assert_array_equal(out, want)
    # ravel/flatten and the view wrapper go through the same rule
    out = fg.vmap(lambda a: fnp.ravel(a, order="F"), in_axes=axis)(x)
    np.testing.assert_array_equal(out, loop(lambda a: np.ravel(a, order="F"), (axis,), (x,), x.shape[axis]))


def test_vmap_semantics_that_the_batch_axis_must_not_change():
    one = rand((1, 3, 1))
    # the batch (size 1) is never squeezed; only the example's unit axes are
    np.testing.assert_array_equal(fg.vmap(fnp.squeeze)(one), one.reshape(1, 3))
    np.testing.assert_array_equal(fg.vmap(fnp.squeeze, in_axes=1)(one), one.reshape(3))
    # broadcast_to adds axes in front of the example, not in front of the batch
    x = rand((4, 3))
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.broadcast_to(a, (2, 3)))(x),
                                  np.broadcast_to(x[:, None], (4, 2, 3)))
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.broadcast_to(a, (2, 1, 3)), in_axes=1)(x.T),
                                  np.broadcast_to(x[:, None, None], (4, 2, 1, 3)))
    # axis=None means "flatten the example" for roll and repeat
    y = rand((3, 2, 2))
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.roll(a, (1, 2)))(y),
                                  loop(lambda a: np.roll(a, (1, 2)), (0,), (y,), 3))
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.repeat(a, 2))(y), np.repeat(y.reshape(3, 4), 2, axis=1))
    # tile and transpose with defaults
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.tile(a, 2), in_axes=2)(y),
                                  loop(lambda a: np.tile(a, 2), (2,), (y,), 2))
    np.testing.assert_array_equal(fg.vmap(fnp.transpose, in_axes=1)(rand((2, 3, 4))),
                                  np.transpose(rand((2, 3, 4)), (1, 2, 0)))
    # triu of a 1-D example is a square, as in numpy
    v = rand((2, 3))
    np.testing.assert_array_equal(fg.vmap(lambda a: fnp.triu(a, 1))(v), np.stack([np.triu(r, 1) for r in v]))


def test_vmap_join_mixes_batched_unbatched_and_outer_traced():
    xs = rand((4, 2))
    c = rand((3,), seed=1)

    def f(x, w):
        return fnp.concatenate([x, w * c, c]), fnp.stack([x[:1], w[:1] * 2.0, c[:1]], axis=-1)

    w = rand((3,), seed=2)
    cat, st_ = fg.vmap(f, in_axes=(0, None))(xs, w)
    np.testing.assert_array_equal(cat, np.stack([np.concatenate([x, w * c, c]) for x in xs]))
    np.testing.assert_array_equal(st_, np.stack([np.stack([x[:1], w[:1] * 2.0, c[:1]], axis=-1) for x in xs]))
    # the unbatched member is traced by an outer grad: its cotangent sums over the batch
    g = fg.grad(lambda w: fnp.sum(fg.vmap(f, in_axes=(0, None))(xs, w)[0] ** 2))(w)
    np.testing.assert_allclose(g, 4 * 2 * w * c * c)
    # nested vmap over both
    out = fg.vmap(fg.vmap(lambda x, w: fnp.concatenate([x, w]), in_axes=(0, None)), in_axes=(None, 0))(xs, rand((5, 3)))
    assert out.shape == (5, 4, 5)


def test_vmap_error_messages():
    x = rand((2, 6))
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4,\)"):
        fg.vmap(lambda a: fnp.reshape(a, (4,)))(x)
    with pytest.raises(ValueError, match="one unknown dimension"):
        fg.vmap(lambda a: fnp.reshape(a, (-1, -1)))(x)
    with pytest.raises(np.exceptions.AxisError):
        fg.vmap(lambda a: fnp.swapaxes(a, 0, 1))(x)
    with pytest.raises(ValueError, match="axes don't match"):
        fg.vmap(lambda a: fnp.transpose(a, (0, 1)))(x)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_stack_of_one_array_is_a_fresh_copy_with_a_new_axis(axis):
    """(``stack``'s raw function takes one array by ``reshape(...).copy()``, not NumPy's ``stack``: the same
    values and layout)"""
    a = np.arange(6.0).reshape(2, 3).T  # (not C-contiguous)
    got = _so._stack_raw(axis % 3, a)
    want = np.stack([a], axis=axis)
    assert got.shape == want.shape and got.dtype == want.dtype and (got.flags.c_contiguous, got.flags.f_contiguous) == (
        want.flags.c_contiguous, want.flags.f_contiguous)
    np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(got, a)
    check_grads(lambda x: fnp.stack([x], axis=axis) ** 2, (a,), order=2, modes=("fwd", "rev"))
