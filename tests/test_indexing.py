"""Indexing (getitem, take, take_along_axis, ...), functional updates (``.at``),
creation helpers and the non-differentiable functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)
from funcgrad.core.constant import ConstBox
from funcgrad.testing import check_grads

SETTINGS = settings(max_examples=30, deadline=None)
FLOATS = [np.float64, np.float32]


def _rand(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# --------------------------------------------------------------------------
# index generation (hypothesis)

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def basic_index(draw, shape):
    """Ints, slices with any step, Ellipsis and None, valid for ``shape``."""
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-n, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
            step = draw(st.sampled_from([None, 1, 2, -1, -2]))
            items.append(slice(start, stop, step))
        else:
            items.append(slice(None))
    # Trailing dims may be left out; an Ellipsis or a newaxis may be inserted.
    keep = draw(st.integers(0, len(items)))
    items = items[:keep]
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if draw(st.booleans()) and keep < len(shape):
        items.append(Ellipsis)
    return tuple(items)


@st.composite
def advanced_index(draw, shape):
    """Integer arrays (with repeats, negative entries) mixed with slices and ints."""
    items = []
    ishape = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple))
    n_arrays = 0
    for n in shape:
        kind = draw(st.sampled_from(["array", "array", "slice", "int"]))
        if kind == "array":
            vals = draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(ishape)), max_size=int(np.prod(ishape))))
            items.append(np.array(vals, dtype=np.intp).reshape(ishape))
            n_arrays += 1
        elif kind == "slice":
            items.append(slice(None, None, draw(st.sampled_from([1, -1, 2]))))
        else:
            items.append(draw(st.integers(-n, n - 1)))
    if n_arrays == 0:
        items[0] = np.array(draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4)), dtype=np.intp)
    return tuple(items)


def _square_of_index(idx):
    def f(x):
        y = x[idx]
        return y * y + fnp.sin(x)[idx]

    return f


# --------------------------------------------------------------------------
# getitem

@pytest.mark.native  # also run on native code (tests/jit_modes.py)
@SETTINGS
@given(st.data())
def test_getitem_basic_matches_numpy_and_grads(data):
    shape = data.draw(shapes)
    idx = data.draw(basic_index(shape))
    x = _rand(np.random.default_rng(0), shape)
    assert np.array_equal(np.asarray(fnp.indexing.getitem(x, idx)), x[idx])
    # traced forward value equals numpy's
    out, _ = fg.vjp(lambda a: a[idx], x)
    assert np.array_equal(np.asarray(out), x[idx])
    for dt in FLOATS:
        check_grads(_square_of_index(idx), (x.astype(dt),), order=2, modes=("fwd", "rev"))


@SETTINGS
@given(st.data())
def test_getitem_advanced_matches_numpy_and_grads(data):
    shape = data.draw(shapes)
    idx = data.draw(advanced_index(shape))
    x = _rand(np.random.default_rng(1), shape)
    out, _ = fg.vjp(lambda a: a[idx], x)
    assert np.array_equal(np.asarray(out), x[idx])
    for dt in FLOATS:
        check_grads(_square_of_index(idx), (x.astype(dt),), order=2, modes=("fwd", "rev"))


@SETTINGS
@given(st.data())
def test_getitem_boolean_mask(data):
    shape = data.draw(shapes)
    rng = np.random.default_rng(2)
    whole = data.draw(st.booleans())
    mshape = shape if whole else shape[:1]
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))).reshape(mshape)
    x = _rand(rng, shape)
    out, _ = fg.vjp(lambda a: a[mask], x)
    assert np.array_equal(np.asarray(out), x[mask])
    g = fg.grad(lambda a: fnp.sum(a[mask]))(x)
    expected = np.broadcast_to(mask.reshape(mshape + (1,) * (len(shape) - len(mshape))), shape).astype(float)
    np.testing.assert_array_equal(g, expected)
    for dt in FLOATS:
        check_grads(_square_of_index(mask), (x.astype(dt),), order=2)


def test_other_updates_at_traced_integer_array_indices_say_what_to_do():
    f = fg.jit(lambda x, i: x.at[i].max(0.5))
    with pytest.raises(NotImplementedError, match=r"at\[idx\]\.maximum.*traced by fg.jit.*static"):
        f(np.zeros(3), np.array([0, 0, 2]))
    np.testing.assert_array_equal(fg.jit(lambda x: x.at[np.array([0, 0, 2])].max(0.5))(np.zeros(3)), [0.5, 0, 0.5])


@pytest.mark.native  # also run on native code (tests/jit_modes.py): gathers and scatter-adds lower there
def test_repeated_indices_accumulate_closed_form():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([0, 0, 2, 0, 3])
    # d/dx sum(x[idx]^2) = 2 x * count
    g = fg.grad(lambda a: fnp.sum(a[idx] * a[idx]))(x)
    np.testing.assert_allclose(g, 2 * x * np.array([3, 0, 1, 1]))
    # Jacobian of x[idx] is the selection matrix, repeats included
    J = fg.jacfwd(lambda a: a[idx])(x)
    np.testing.assert_array_equal(J, np.eye(4)[idx])
    np.testing.assert_array_equal(fg.jacrev(lambda a: a[idx])(x), np.eye(4)[idx])
    # Hessian of sum(x[idx]^3): diag(6 x * count)
    H = fg.hessian(lambda a: fnp.sum(a[idx] * a[idx] * a[idx]))(x)
    np.testing.assert_allclose(H, np.diag(6 * x * np.array([3, 0, 1, 1])))


def test_repeated_indices_2d_mixed():
    x = np.arange(12.0).reshape(3, 4)
    idx = (np.array([[0, 0], [2, 0]]), slice(None), )
    g = fg.grad(lambda a: fnp.sum(a[idx]))(x)
    np.testing.assert_array_equal(g, np.array([3.0, 0.0, 1.0])[:, None] * np.ones((1, 4)))
    # Non-adjacent advanced indices: NumPy moves their dimensions first.
    x3 = np.arange(24.0).reshape(2, 3, 4)
    idx3 = (0, slice(None), [0, 1, 1])
    assert fg.vjp(lambda a: a[idx3], x3)[0].shape == x3[idx3].shape == (3, 3)
    g3 = fg.grad(lambda a: fnp.sum(a[idx3]))(x3)
    ref = np.zeros_like(x3)
    np.add.at(ref, idx3, 1.0)
    np.testing.assert_array_equal(g3, ref)
    check_grads(_square_of_index(idx3), (x3,), order=2)


def test_mixed_bool_and_int_arrays():
    x = np.random.default_rng(3).standard_normal((3, 4))
    idx = (np.array([True, False, True]), np.array([1, 1]))
    assert np.array_equal(fg.vjp(lambda a: a[idx], x)[0], x[idx])
    check_grads(_square_of_index(idx), (x,), order=2)


def test_getitem_ellipsis_newaxis_negative_steps():
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    for idx in [(Ellipsis, slice(None, None, -1)), (None, 1, Ellipsis, None),
                (slice(None, None, -2), None, slice(1, None), -1), (), Ellipsis]:
        assert np.array_equal(fg.vjp(lambda a: a[idx], x)[0], x[idx])
        check_grads(_square_of_index(idx), (x,), order=2)


def test_getitem_complex():
    rng = np.random.default_rng(5)
    x = _rand(rng, (3, 4), np.complex128)
    for idx in [(1, slice(None, None, -1)), (np.array([0, 0, 2]),), (x.real > 0,)]:
        check_grads(lambda a, i=idx: a[i] * a[i], (x,), order=2)


def test_traced_index_values_are_used_and_not_differentiated():
    x = np.array([1.0, 2.0, 3.0])

    def f(a):
        i = fnp.argmax(a)  # plain value
        j = fnp.astype(a[0], np.int64)  # a traced integer (no derivative)
        return a[i] * a[j] + a[[j, i]].sum()

    g = fg.grad(f)(x)  # i = 2, j = 1: f = a2 * a1 + a1 + a2
    np.testing.assert_allclose(g, [0.0, 3.0 + 1.0, 2.0 + 1.0])
    # a traced integer box used directly as an index
    out = fg.grad(lambda a: a[fnp.array(np.int64(2))] * 2.0)(x)
    np.testing.assert_allclose(out, [0, 0, 2.0])


@pytest.mark.eager_only("of_jit")  # inspects grad's tape, which holds one jit_call node
def test_index_stored_without_boxes():
    x = np.array([1.0, 2.0, 3.0])
    seen = []

    def f(a):
        k = a * 0 + 1  # traced float
        i = fnp.astype(k, np.int64)
        y = a[[i[0], 2]]
        seen.append(y._node.args[1])
        return y.sum()

    fg.grad(f)(x)
    (idx,) = seen
    assert isinstance(idx, tuple)
    assert not any(isinstance(i, fg.core.Box) for i in idx)


@pytest.mark.parametrize("bad", [(5,), (0, 0), (np.array([0, 3]),), (1.5,), (np.array([0.0]),), ([True, False],)])
def test_bad_indices_raise_numpy_indexerror(bad):
    x = np.arange(3.0)
    with pytest.raises(IndexError):
        x[bad]
    with pytest.raises(IndexError):
        fg.grad(lambda a: fnp.sum(a[bad]))(x)
    with pytest.raises(IndexError):
        fg.jvp(lambda a: a[bad], (x,), (x,))
    with pytest.raises(IndexError):
        fnp.at(x)[bad].set(1.0)


def test_getitem_keeps_float32():
    x = np.arange(4.0, dtype=np.float32)
    g = fg.grad(lambda a: fnp.sum(a[[0, 0, 1]] * 2.0))(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [4, 2, 0, 0])


# --------------------------------------------------------------------------
# take, take_along_axis, put_along_axis, compress, extract, choose

@SETTINGS
@given(st.data())
def test_take(data):
    shape = data.draw(shapes)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    lo, hi = (-n, n - 1) if mode == "raise" else (-2 * n, 2 * n)
    ind = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=5)))
    x = _rand(np.random.default_rng(6), shape)
    np.testing.assert_array_equal(fnp.take(x, ind, axis=axis, mode=mode), np.take(x, ind, axis=axis, mode=mode))
    for dt in FLOATS:
        check_grads(lambda a: fnp.take(a, ind, axis=axis, mode=mode) ** 2, (x.astype(dt),), order=2)


def test_take_repeated_closed_form():
    x = np.arange(6.0).reshape(2, 3)
    g = fg.grad(lambda a: fnp.sum(fnp.take(a, [2, 2, 0], axis=1)))(x)
    np.testing.assert_array_equal(g, [[1, 0, 2], [1, 0, 2]])
    assert fnp.take(x, 4) == 4.0


@SETTINGS
@given(st.data())
def test_take_along_axis(data):
    shape = data.draw(shapes)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ax = axis % len(shape)
    m = data.draw(st.integers(1, 4))
    ishape = tuple(m if k == ax else data.draw(st.sampled_from([1, n])) for k, n in enumerate(shape))
    ind = np.random.default_rng(7).integers(-shape[ax], shape[ax], size=ishape)
    x = _rand(np.random.default_rng(8), shape)
    np.testing.assert_array_equal(fnp.take_along_axis(x, ind, axis=axis), np.take_along_axis(x, ind, axis=axis))
    for dt in FLOATS:
        check_grads(lambda a: fnp.take_along_axis(a, ind, axis=axis) ** 2, (x.astype(dt),), order=2)


def test_take_along_axis_sort_and_none():
    x = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]])
    order = np.argsort(x, axis=1)
    g = fg.grad(lambda a: fnp.sum(fnp.take_along_axis(a, fnp.argsort(a, axis=1), axis=1) * np.array([1.0, 2.0, 3.0])))(x)
    expected = np.empty_like(x)
    np.put_along_axis(expected, order, np.array([[1.0, 2.0, 3.0]]), axis=1)
    np.testing.assert_array_equal(g, expected)
    flat_ind = np.array([5, 0, 0])
    np.testing.assert_array_equal(fnp.take_along_axis(x, flat_ind, axis=None), np.take_along_axis(x, flat_ind, axis=None))
    check_grads(lambda a: fnp.take_along_axis(a, flat_ind, axis=None) ** 2, (x,), order=2)
    with pytest.raises(ValueError, match="same number of dimensions"):
        fnp.take_along_axis(x, np.array([0]), axis=1)


def test_put_along_axis():
    x = np.arange(6.0).reshape(2, 3)
    ind = np.array([[2], [0]])
    v = np.array([[10.0], [20.0]])
    ref = x.copy()
    np.put_along_axis(ref, ind, v, axis=1)
    out = fnp.put_along_axis(x, ind, v, axis=1, inplace=False)
    np.testing.assert_array_equal(out, ref)
    assert x[0, 2] == 2.0  # not written
    check_grads(lambda a, b: fnp.put_along_axis(a, ind, b, axis=1, inplace=False) * a, (x, v), order=2)
    y = x.copy()
    assert fnp.put_along_axis(y, ind, v, axis=1) is None  # NumPy's in-place form on plain arrays
    np.testing.assert_array_equal(y, ref)

    def bad(b):  # a plain array cannot hold traced values
        fnp.put_along_axis(x.copy(), ind, b, axis=1)
        return fnp.sum(b)

    with pytest.raises(ValueError, match="inplace=False"):
        fg.grad(bad)(v)

    def g(a, b):  # in-place on a traced array rebinds it, as a[...] = b would
        a = a * 1.0
        assert fnp.put_along_axis(a, ind, b, axis=1) is None
        return a * a

    np.testing.assert_array_equal(fg.vjp(g, x, v)[0], ref * ref)
    check_grads(g, (x, v), order=2)


def test_compress_extract_choose():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4))
    cond = np.array([True, False, True])
    np.testing.assert_array_equal(fnp.compress(cond, x, axis=0), np.compress(cond, x, axis=0))
    np.testing.assert_array_equal(fnp.compress([0, 1], x), np.compress([0, 1], x))
    check_grads(lambda a: fnp.compress(cond, a, axis=0) ** 2, (x,), order=2)
    c2 = x > 0
    np.testing.assert_array_equal(fnp.extract(c2, x), np.extract(c2, x))
    check_grads(lambda a: fnp.extract(c2, a) ** 2, (x,), order=2)
    y = rng.standard_normal((3, 4))
    a = np.array([[0, 1, 1, 0]])
    np.testing.assert_array_equal(fnp.choose(a, [x, y]), np.choose(a, [x, y]))
    check_grads(lambda p, q: fnp.choose(a, [p, q]) * p, (x, y), order=2)
    np.testing.assert_array_equal(fnp.choose([3, -1], [x[0, :2], y[0, :2]], mode="wrap"),
                                  np.choose([3, -1], [x[0, :2], y[0, :2]], mode="wrap"))
    with pytest.raises(ValueError, match="invalid entry"):
        fnp.choose([2], [x, y])


# --------------------------------------------------------------------------
# functional updates: .at[idx]

_UFUNCS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "mul": np.multiply,
    "divide": np.divide, "power": np.power, "min": np.minimum, "max": np.maximum,
}


def _numpy_update(x, idx, op, v):
    out = x.copy()
    if op == "set":
        out[idx] = v
    else:
        # NumPy 2.4's ufunc.at misreads broadcast (stride-0) values: give it full ones
        _UFUNCS[op].at(out, idx, np.broadcast_to(v, out[idx].shape).copy())
    return out


@st.composite
def update_case(draw):
    shape = draw(shapes)
    kind = draw(st.sampled_from(["basic", "advanced", "mask"]))
    if kind == "basic":
        idx = draw(basic_index(shape))
    elif kind == "advanced":
        idx = draw(advanced_index(shape))
    else:
        idx = (np.array(draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0]))),)
    ishape = np.empty(shape)[idx].shape
    # v broadcasts to the indexed shape: maybe a trailing part of it, maybe a scalar
    k = draw(st.integers(0, len(ishape)))
    vshape = tuple(1 if draw(st.booleans()) else n for n in ishape[len(ishape) - k:])
    return shape, idx, vshape


@SETTINGS
@given(update_case(), st.sampled_from(sorted(_UFUNCS) + ["set"]))
def test_at_ops_match_numpy_and_grads(case, op):
    shape, idx, vshape = case
    rng = np.random.default_rng(10)
    x = _rand(rng, shape)
    v = _rand(rng, vshape)
    if op in ("power", "divide"):
        x = np.abs(x) + 0.5
        v = np.abs(v) + 0.5
    if op in ("min", "max"):  # keep away from ties (numerical derivatives cross no kink):
        x = np.round(x, 1) + 0.05  # every x is 0.05 away from every v
        # v's entries distinct too (a repeated index makes them meet): their ranks, 0.1 apart
        v = np.argsort(np.argsort(v.ravel())).reshape(v.shape) * 0.1 - 0.5
    x0, v0 = x.copy(), v.copy()
    ref = _numpy_update(x, idx, op, v)
    got = getattr(fnp.at(x)[idx], op)(v)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)
    # traced forward: same value
    traced, _ = fg.vjp(lambda a, b: getattr(a.at[idx], op)(b), x, v)
    np.testing.assert_allclose(traced, ref, rtol=1e-12, atol=0)
    # never mutated
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)
    for dt in FLOATS:
        check_grads(lambda a, b: getattr(fnp.at(a)[idx], op)(b) * a, (x.astype(dt), v.astype(dt)), order=2)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)


def test_at_set_last_write_wins_and_grads():
    x = np.arange(5.0)
    idx = np.array([1, 3, 1, 1])
    v = np.array([10.0, 20.0, 30.0, 40.0])
    out = fnp.at(x)[idx].set(v)
    np.testing.assert_array_equal(out, [0, 40, 2, 20, 4])
    # gradient w.r.t. v: only the last write to each position counts
    gv = fg.grad(lambda b: fnp.sum(fnp.at(x)[idx].set(b) * np.arange(1.0, 6.0)))(v)
    np.testing.assert_array_equal(gv, [0, 4, 0, 2])
    # gradient w.r.t. x: zero where overwritten
    gx = fg.grad(lambda a: fnp.sum(fnp.at(a)[idx].set(v) * np.arange(1.0, 6.0)))(x)
    np.testing.assert_array_equal(gx, [1, 0, 3, 0, 5])
    # broadcast scalar value: its cotangent sums over the positions written
    gs = fg.grad(lambda s: fnp.sum(fnp.at(x)[1:4].set(s) * np.arange(1.0, 6.0)))(2.0)
    assert gs == 2 + 3 + 4
    check_grads(lambda a, b: fnp.at(a)[idx].set(b) * fnp.sin(a), (x, v), order=2)


def test_at_add_repeated_accumulates_closed_form():
    x = np.zeros(4)
    idx = np.array([0, 2, 0, 0])
    v = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(fnp.at(x)[idx].add(v), [8, 0, 2, 0])
    J = fg.jacfwd(lambda b: fnp.at(x)[idx].add(b))(v)
    np.testing.assert_array_equal(J, np.eye(4)[:, idx])
    np.testing.assert_array_equal(fg.jacrev(lambda b: fnp.at(x)[idx].add(b))(v), np.eye(4)[:, idx])


def test_at_multiply_repeated_with_zero_exact():
    x = np.array([2.0, 3.0])
    idx = np.array([0, 0, 1])
    v = np.array([0.0, 5.0, 7.0])
    # d/dv0 of x0 * v0 * v1 = x0 * v1, even though v0 == 0 (no division)
    g = fg.grad(lambda b: fnp.sum(fnp.at(x)[idx].multiply(b)))(v)
    np.testing.assert_array_equal(g, [10.0, 0.0, 3.0])
    check_grads(lambda a, b: fnp.at(a)[idx].multiply(b), (x, v), order=2)


def test_at_on_traced_values_and_complex():
    rng = np.random.default_rng(11)
    x = _rand(rng, (3, 2), np.complex128)
    v = _rand(rng, (2,), np.complex128)
    def at(a):  # the attribute on traced values; the function on plain ones
        return a.at if fg.core.is_traced(a) else fnp.at(a)

    for op in ["set", "add", "multiply"]:
        check_grads(lambda a, b, op=op: getattr(at(a)[np.array([0, 0])], op)(b) * a, (x, v), order=2)
    # real values into a complex array: the cotangent of v is real
    vr = rng.standard_normal(2)
    _, f_vjp = fg.vjp(lambda b: x.copy() + fnp.at(x)[1].set(b), vr)
    assert f_vjp(np.ones((3, 2), complex))[0].dtype == np.float64


def test_at_get_apply_and_errors():
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(fnp.at(x)[[2, 0]].get(), x[[2, 0]])
    out = fnp.at(x)[[0, 0, 2]].apply(np.sin)
    ref = x.copy()
    np.sin.at(ref, [0, 0, 2])
    np.testing.assert_allclose(out, ref)
    check_grads(lambda a: fnp.at(a)[[0, 0, 2]].apply(fnp.sin), (x,), order=2)
    with pytest.raises(NotImplementedError, match="mode"):
        fnp.at(x)[5].get(mode="fill")


def test_at_dtype_of_values_cotangent():
    x = np.zeros(3, dtype=np.float32)
    v = np.array([1.0, 2.0])  # float64 into float32
    out, f_vjp = fg.vjp(lambda b: fnp.at(x)[[0, 2]].add(b), v)
    assert out.dtype == np.float32
    assert f_vjp(np.ones(3, np.float32))[0].dtype == np.float64


# --------------------------------------------------------------------------
# creation

def test_array_of_traced_scalars():
    def f(x):
        m = fnp.array([[x[0] * x[1], 1.0], [x[1], fnp.sin(x[0])]])
        assert fnp.shape(m) == (2, 2)
        return fnp.sum(m * np.array([[1.0, 2.0], [3.0, 4.0]]))

    x = np.array([0.5, 2.0])
    g = fg.grad(f)(x)
    np.testing.assert_allclose(g, [x[1] + 4 * np.cos(x[0]), x[0] + 3])
    check_grads(lambda x: fnp.array([x[0] * x[1], x[1], 2.0]), (x,), order=2)
    check_grads(lambda x: fnp.asarray([x[1], x[0]]), (x,), order=2)
    assert fnp.ndim(fg.vjp(lambda x: fnp.array(x[0], ndmin=2), x)[0]) == 2
    np.testing.assert_array_equal(fnp.array([[1, 2]], dtype=float), np.array([[1.0, 2.0]]))


def test_full_linspace_logspace_traced():
    assert fg.grad(lambda v: fnp.sum(fnp.full((2, 3), v)))(1.5) == 6.0
    x = np.ones((2, 2))
    assert fg.grad(lambda v: fnp.sum(fnp.full_like(x, v)))(1.5) == 4.0
    np.testing.assert_array_equal(fnp.full_like(x, 3.0), np.full_like(x, 3.0))
    a, b = np.float64(0.3), np.array([1.0, 2.0])
    for kw in [{}, {"endpoint": False}, {"axis": 1}, {"axis": -1, "num": 1}]:
        traced = fg.vjp(lambda s, t: fnp.linspace(s, t, **{"num": 5, **kw}), a, b)[0]
        np.testing.assert_allclose(traced, np.linspace(a, b, **{"num": 5, **kw}), rtol=1e-15)
        check_grads(lambda s, t: fnp.linspace(s, t, **{"num": 5, **kw}), (a, b), order=2)
    J = fg.jacfwd(lambda ab: fnp.linspace(ab[0], ab[1], 5))(np.array([0.0, 1.0]))
    t = np.linspace(0, 1, 5)
    np.testing.assert_allclose(J, np.stack([1 - t, t], axis=1))
    check_grads(lambda s, base: fnp.logspace(s, 1.0, 4, base=base), (a, np.float64(2.0)), order=2)
    np.testing.assert_allclose(fg.vjp(lambda s: fnp.logspace(s, 1.0, 4), a)[0], np.logspace(a, 1.0, 4))


def test_astype_and_copy():
    x = np.array([0.5, 1.5], dtype=np.float64)
    g = fg.grad(lambda a: fnp.sum(fnp.astype(a, np.float32) * 2.0))(x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0])
    # casts to integers carry no derivative
    g = fg.grad(lambda a: fnp.sum(fnp.astype(a, np.int64) * a))(x)
    np.testing.assert_array_equal(g, [0.0, 1.0])
    check_grads(lambda a: fnp.astype(a, np.complex128) * a, (x,), order=2)
    x32 = x.astype(np.float32)
    check_grads(lambda a: fnp.astype(a, np.float64) * a.astype(np.complex64), (x32,), order=2)
    _, f_vjp = fg.vjp(lambda a: fnp.astype(a, np.float64), x32)
    assert f_vjp(np.ones(2))[0].dtype == np.float32
    check_grads(lambda a: fnp.copy(a) * a, (x,), order=2)


# --------------------------------------------------------------------------
# non-differentiable functions on traced values

_ND = [
    ("argmax", lambda m, a: m.argmax(a)), ("argmin", lambda m, a: m.argmin(a, axis=0)),
    ("argsort", lambda m, a: m.argsort(a, axis=-1)), ("less", lambda m, a: m.less(a, 0.1)),
    ("isnan", lambda m, a: m.isnan(a)), ("isfinite", lambda m, a: m.isfinite(a)),
    ("floor", lambda m, a: m.floor(a)), ("ceil", lambda m, a: m.ceil(a)), ("round", lambda m, a: m.round(a, 1)),
    ("sign", lambda m, a: m.sign(a)), ("nonzero", lambda m, a: m.nonzero(a > 0)[1]),
    ("unique", lambda m, a: m.unique(m.floor(a))), ("searchsorted", lambda m, a: m.searchsorted(np.array([-1.0, 0.0, 1.0]), a)),
    ("all", lambda m, a: m.all(a > -5)), ("any", lambda m, a: m.any(a > 0, axis=1)),
    ("zeros_like", lambda m, a: m.zeros_like(a)), ("ones_like", lambda m, a: m.ones_like(a, dtype=np.float32)),
    ("isin", lambda m, a: m.isin(m.floor(a), [0.0, 1.0])), ("argpartition", lambda m, a: m.argpartition(a, 1, axis=1)),
    ("lexsort", lambda m, a: m.lexsort([a[0], a[1]])), ("count_nonzero", lambda m, a: m.count_nonzero(a > 0)),
    ("full_like", lambda m, a: m.full_like(a, 2.5)), ("where1", lambda m, a: m.where(a > 0)[1]),
    ("empty_like", lambda m, a: m.empty_like(a).shape), ("digitize", lambda m, a: m.digitize(a, [-1.0, 0.0, 1.0])),
    ("isclose", lambda m, a: m.isclose(a, a[0])), ("floor_divide", lambda m, a: m.floor_divide(a, 0.3)),
]


@pytest.mark.eager_only()  # checks the results are not boxes; under fg.jit they are staged values
@pytest.mark.parametrize("name,fn", _ND, ids=[n for n, _ in _ND])
def test_nondiff_on_traced(name, fn):
    x = np.random.default_rng(12).standard_normal((2, 4))
    expected = fn(np, x)
    seen = []

    def f(a):
        r = fn(fnp, a)
        seen.append(r)
        return fnp.sum(a)

    fg.grad(f)(x)
    (r,) = seen
    if type(r) is ConstBox:  # creation functions give a writable constant inside transforms
        r = r._value
    assert not isinstance(r, fg.core.Box)
    np.testing.assert_array_equal(r, expected)
    # and in forward mode
    out, t = fg.jvp(lambda a: fn(fnp, a), (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(out, expected)


def test_queries_on_traced():
    x = np.ones((2, 3))

    def f(a):
        assert fnp.shape(a) == (2, 3) and fnp.ndim(a) == 2 and fnp.size(a) == 6 and fnp.size(a, 1) == 3
        assert fnp.result_type(a) == np.float64 and fnp.isrealobj(a) and not fnp.iscomplexobj(a)
        assert fnp.can_cast(a, np.complex128)
        return fnp.sum(a)

    fg.grad(f)(x)
    assert fnp.shape([[1, 2, 3]]) == (1, 3) and fnp.shape(2.0) == ()


@pytest.mark.eager_only()  # unique's result shape depends on values: fg.jit raises (tests/test_jit.py)
def test_unique_and_bincount_are_differentiable_in_values():
    x = np.array([2.0, 1.0, 2.0, 3.0])
    g = fg.grad(lambda a: fnp.sum(fnp.unique(a) * np.array([1.0, 2.0, 3.0])))(x)
    np.testing.assert_array_equal(g, [2.0, 1.0, 0.0, 3.0])
    vals, counts = fnp.unique(x, return_counts=True)
    np.testing.assert_array_equal(counts, [1, 2, 1])
    i = np.array([0, 2, 0])
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fnp.bincount(i, w), np.bincount(i, w))
    np.testing.assert_array_equal(fnp.bincount(i), np.bincount(i))
    np.testing.assert_array_equal(fg.jacfwd(lambda b: fnp.bincount(i, b, minlength=4))(w), np.eye(4)[:, i])
    check_grads(lambda b: fnp.bincount(i, b) ** 2, (w,), order=2)


# --------------------------------------------------------------------------
# vmap: batching rules of the indexing primitives (against a Python loop)

@st.composite
def vmap_case(draw):
    shape, idx, vshape = draw(update_case())
    in_axis = draw(st.integers(0, len(shape)))
    return shape, idx, vshape, in_axis


@pytest.mark.filterwarnings("ignore::UserWarning")
@SETTINGS
@given(vmap_case(), st.sampled_from(["set", "add", "multiply", "max"]))
def test_vmap_getitem_and_updates_match_loop(case, op):
    shape, idx, vshape, in_axis = case
    rng = np.random.default_rng(13)
    B = 3
    xb = _rand(rng, (B,) + shape)
    vb = _rand(rng, (B,) + vshape)
    moved = np.moveaxis(xb, 0, in_axis)
    out = fg.vmap(lambda a: a[idx], in_axes=in_axis)(moved)
    np.testing.assert_array_equal(out, np.stack([a[idx] for a in xb]))
    upd = lambda a, b: getattr(fnp.at(a)[idx], op)(b)  # noqa: E731
    both = fg.vmap(upd)(xb, vb)
    np.testing.assert_allclose(both, np.stack([_numpy_update(a, idx, op, b) for a, b in zip(xb, vb)]), rtol=1e-12)
    only_v = fg.vmap(upd, in_axes=(None, 0))(xb[0], vb)
    np.testing.assert_allclose(only_v, np.stack([_numpy_update(xb[0], idx, op, b) for b in vb]), rtol=1e-12)
    only_x = fg.vmap(upd, in_axes=(in_axis, None))(moved, vb[0])
    np.testing.assert_allclose(only_x, np.stack([_numpy_update(a, idx, op, vb[0]) for a in xb]), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_jacobians_of_indexing_agree():
    x = np.random.default_rng(14).standard_normal((3, 4))
    idx = (np.array([0, 2, 0]), slice(None, None, -1))
    f = lambda a: a[idx] * a[idx]  # noqa: E731
    np.testing.assert_allclose(fg.jacrev(f)(x), fg.jacfwd(f)(x))
    g = lambda a: fnp.at(a)[[1, 1], [0, 2]].set(a[0, :2] ** 2)  # noqa: E731
    np.testing.assert_allclose(fg.jacrev(g)(x), fg.jacfwd(g)(x))
    H = fg.hessian(lambda a: fnp.sum(a[idx] ** 3))(x)
    counts = np.zeros(3)
    np.add.at(counts, idx[0], 1)
    np.testing.assert_allclose(H.reshape(12, 12), np.diag((6 * x * counts[:, None]).ravel()))


@st.composite
def batched_index_case(draw):
    """A per-example index whose integer entries differ between the B examples."""
    shape = draw(shapes)
    idx = draw(advanced_index(shape))
    B = 3
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    per_example = []  # (position, stacked values) for the entries that vary
    dim = 0
    for p, item in enumerate(idx):
        n = shape[dim]
        dim += 1
        if isinstance(item, slice):
            continue
        if draw(st.booleans()):
            ishape = np.shape(item)
            per_example.append((p, rng.integers(-n, n, size=(B,) + ishape)))
    if not per_example:  # at least one entry varies
        p = next(k for k, it in enumerate(idx) if not isinstance(it, slice))
        n = shape[p]
        per_example.append((p, rng.integers(-n, n, size=(B,) + np.shape(idx[p]))))
    return shape, idx, per_example, B


def _rebuild(idx, per_example, values):
    out = list(idx)
    for (p, _), v in zip(per_example, values):
        out[p] = v
    return tuple(out)


@pytest.mark.filterwarnings("ignore::UserWarning")
@SETTINGS
@given(batched_index_case(), st.integers(0, 3))
def test_vmap_over_per_example_indices(case, x_axis):
    shape, idx, per_example, B = case
    rng = np.random.default_rng(15)
    x = _rand(rng, shape)
    stacked = [v for _, v in per_example]
    # (a plain NumPy array indexed by traced values: NumPy's x[...] cannot see them)
    out = fg.vmap(lambda *vals: fnp.indexing.getitem(x, _rebuild(idx, per_example, vals)))(*stacked)
    loop = [x[_rebuild(idx, per_example, [v[b] for v in stacked])] for b in range(B)]
    np.testing.assert_array_equal(out, np.stack(loop))
    # both the array and the index batched, the array's batch axis anywhere
    xb = _rand(rng, (B,) + shape)
    ax = x_axis % (len(shape) + 1)
    out = fg.vmap(lambda a, *vals: a[_rebuild(idx, per_example, vals)], in_axes=(ax,) + (0,) * len(stacked))(
        np.moveaxis(xb, 0, ax), *stacked)
    loop = [xb[b][_rebuild(idx, per_example, [v[b] for v in stacked])] for b in range(B)]
    np.testing.assert_array_equal(out, np.stack(loop))
    # functional updates with per-example indices, and their gradients
    vshape = loop[0].shape
    vb = _rand(rng, (B,) + vshape)
    for op in ("set", "add"):
        upd = lambda a, b, *vals: getattr(fnp.at(a)[_rebuild(idx, per_example, vals)], op)(b)  # noqa: E731
        out = fg.vmap(upd)(xb, vb, *stacked)
        loop = [_numpy_update(xb[b], _rebuild(idx, per_example, [v[b] for v in stacked]), op, vb[b]) for b in range(B)]
        np.testing.assert_allclose(out, np.stack(loop), rtol=1e-12)
        # per-example gradients: vmap of grad
        loss = lambda a, b, *vals: fnp.sum(upd(a, b, *vals) ** 2)  # noqa: E731
        ga, gb = fg.vmap(fg.grad(loss, argnums=(0, 1)))(xb, vb, *stacked)
        for b in range(B):
            ea, eb = fg.grad(loss, argnums=(0, 1))(xb[b], vb[b], *[v[b] for v in stacked])
            np.testing.assert_allclose(ga[b], ea, rtol=1e-12)
            np.testing.assert_allclose(gb[b], eb, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_per_example_gradients_with_labels():
    rng = np.random.default_rng(16)
    W = rng.standard_normal((4, 3))
    X = rng.standard_normal((5, 3))
    y = np.array([0, 3, 1, 1, 2])

    def loss(w, x, label):
        z = w @ x
        return -(z[label] - fnp.log(fnp.sum(fnp.exp(z))))

    per_ex = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(W, X, y)
    expected = np.stack([fg.grad(loss)(W, X[b], y[b]) for b in range(5)])
    np.testing.assert_allclose(per_ex, expected, rtol=1e-12)
    # take_along_axis with per-example indices
    out = fg.vmap(lambda row, i: fnp.take_along_axis(row, i, axis=0))(X, np.array([[0, 2]] * 5))
    np.testing.assert_array_equal(out, X[:, [0, 2]])


def test_at_add_with_broadcast_values_and_repeats_is_exact():
    # NumPy 2.4's ufunc.at misreads broadcast values (it returns 1.0, or garbage, here);
    # funcgrad materializes them first.
    idx = np.array([[0, -1], [0, 0]])
    out = fnp.at(np.array([0.7]))[idx].add(np.array([0.1, 0.2]))
    np.testing.assert_allclose(out, [1.3])
    out2 = fnp.at(np.array([0.7, 0.0]))[np.array([[0, -2], [0, 0]])].add(np.array([0.1, 0.2]))
    np.testing.assert_allclose(out2, [1.3, 0.0])


@pytest.mark.parametrize("index", [(slice(None), (0,)), ((0, 2), (1,)), ((1, 0),), (Ellipsis, (1, 1))])
def test_tuple_inside_the_index_tuple_is_an_index_array(index):
    """Issue 31: ``M[:, (0,)]`` under vmap raised ``Tuple must have size 2``; NumPy reads an
    inner tuple as an index array, as it does a list."""
    x = np.arange(24.0).reshape(4, 3, 2)
    got = fg.vmap(lambda m: m[index])(x)
    np.testing.assert_array_equal(got, np.stack([m[index] for m in x]))
    h = fg.hessian(lambda m: fnp.sum(m[index] ** 3))(x[0])
    want = fg.hessian(lambda m: fnp.sum(m[tuple(list(i) if isinstance(i, tuple) else i for i in index)] ** 3))(x[0])
    np.testing.assert_allclose(h, want)


@pytest.mark.eager_only  # the result's width depends on the values: no staged bincount
def test_bincount_batches_as_one_call_padded_to_the_longest_row():
    import warnings

    rows = np.array([[0, 1, 1, 3], [2, 2, 0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a batching rule, not the Python-loop fallback
        counts = fg.vmap(fnp.bincount)(rows)
        wide = fg.vmap(lambda r: fnp.bincount(r, minlength=6), in_axes=1)(rows.T)
    np.testing.assert_array_equal(counts, [[1, 2, 0, 1], [2, 0, 2, 0]])
    np.testing.assert_array_equal(wide, [np.bincount(r, minlength=6) for r in rows])
