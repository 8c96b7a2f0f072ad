"""vmap of the elementwise and nondiff families: every primitive (the private helpers
of the rules too) against a Python loop over the batch, over generated shapes,
batch positions (negative ones too) and unbatched arguments; the functions whose
output shape depends on the values; and vmap(grad) / jacfwd / hessian running
without the loop fallback."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.numpy import elementwise as E
from funcgrad.numpy import nondiff as N

from test_elementwise import BINARY, UNARY, sample

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


from factories import no_fallback  # noqa: E402


def take(a, b, ax):
    return a if ax is None else np.take(a, b, axis=ax)


def loop(f, in_axes, *args):
    """Reference: f on each example (plain arrays: NumPy itself), stacked along axis 0."""
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[take(a, b, ax) for a, ax in zip(args, in_axes)]) for b in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def check_same(got, want, exact=False):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check_same(g, w, exact)
        return
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-12 if want.dtype in (np.float64, np.complex128) else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def assert_batched(f, in_axes, *args, exact=False):
    with no_fallback():
        got = fg.vmap(f, in_axes=in_axes)(*args)
    check_same(got, loop(f, in_axes, *args), exact)


def stack_at(per_example, pos):
    """Stack a list of per-example arrays along axis ``pos`` (negative counts from the end)."""
    return np.moveaxis(np.stack(per_example), 0, pos)


@st.composite
def batch_spec(draw, per_ndim, may_be_none=True):
    """An in_axes entry for an argument with ``per_ndim`` example axes: None, or a
    position among ``per_ndim + 1``, written positive or negative."""
    if may_be_none and draw(st.booleans()):
        return None
    pos = draw(st.integers(0, per_ndim))
    return pos - (per_ndim + 1) if draw(st.booleans()) else pos


def make_arg(domain, per_shape, size, spec, dtype, seed):
    if spec is None:
        return sample(domain, per_shape, dtype, seed)
    return stack_at([sample(domain, per_shape, dtype, seed + 17 * b) for b in range(size)], spec)


# --- every primitive has a rule --------------------------------------------------

@pytest.mark.parametrize("module", [E, N], ids=["elementwise", "nondiff"])
def test_every_primitive_has_a_batching_rule(module):
    prims = {id(v.primitive): name for name, v in vars(module).items() if hasattr(getattr(v, "primitive", None), "batch_rule")}
    assert len(prims) > 30
    missing = [name for name, v in vars(module).items()
               if hasattr(getattr(v, "primitive", None), "batch_rule") and v.primitive.batch_rule is None]
    assert missing == []
    # the private helpers of the rules are there too
    if module is E:
        assert {"_sinc_derivative", "_where", "_clip", "_nan_to_num"} <= set(vars(module))


# --- differentiable elementwise functions ------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@given(per=st.lists(st.integers(1, 3), max_size=2), size=st.integers(1, 3), data=st.data())
@SETTINGS
def test_unary(name, per, size, data):
    real_dom, cplx_dom = UNARY[name]
    dtype = data.draw(st.sampled_from([np.float64, np.float32] + ([np.complex128] if cplx_dom else [])))
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    x = make_arg(cplx_dom if dtype is np.complex128 else real_dom, tuple(per), size, spec, dtype, 1)
    assert_batched(getattr(fnp, name), (spec,), x)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@SETTINGS
def test_binary(name, shapes, size, data):
    dom_x, dom_y, cplx = BINARY[name]
    dtype = data.draw(st.sampled_from([np.float64, np.float32] + ([np.complex128] if cplx else [])))
    sx, sy = shapes.input_shapes
    specs = (data.draw(batch_spec(len(sx))), data.draw(batch_spec(len(sy))))
    if specs == (None, None):
        specs = (0, specs[1])
    doms = (cplx, cplx) if dtype is np.complex128 else (dom_x, dom_y)
    x = make_arg(doms[0], sx, size, specs[0], dtype, 1)
    y = make_arg(doms[1], sy, size, specs[1], dtype, 2)
    assert_batched(getattr(fnp, name), specs, x, y)


@pytest.mark.parametrize("name", ["add", "multiply", "power", "maximum", "arctan2"])
def test_binary_with_python_scalars_and_0d_examples(name):
    x = np.array([0.7, 1.3, 1.9])  # three 0-d examples
    assert_batched(lambda v: getattr(fnp, name)(v, 1.5), (0,), x)
    assert_batched(lambda v: getattr(fnp, name)(2.0, v), (0,), x)
    assert_batched(getattr(fnp, name), (0, None), x, np.array([[1.1], [0.6]]))


def test_sinc_derivative_helper_batches():
    x = np.array([[-1.3, 0.0, 0.4], [2e-9, 0.9, -0.2]])
    for n in (1, 2, 3):
        assert_batched(lambda v: E._sinc_derivative(v, n), (1,), x)
    assert_batched(fnp.sinc, (-1,), x)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@SETTINGS
def test_where(shapes, size, data):
    sc, sx, sy = shapes.input_shapes
    specs = tuple(data.draw(batch_spec(len(s))) for s in (sc, sx, sy))
    if specs == (None, None, None):
        specs = (None, 0, None)
    c = make_arg(lambda r, s: r.uniform(-1, 1, s) > 0, sc, size, specs[0], bool, 3)
    x = make_arg(lambda r, s: r.standard_normal(s), sx, size, specs[1], np.float64, 4)
    y = make_arg(lambda r, s: r.standard_normal(s), sy, size, specs[2], np.float64, 5)
    assert_batched(fnp.where, specs, c, x, y, exact=True)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=3), size=st.integers(1, 3),
       bounds=st.sampled_from(["both", "lo", "hi"]), data=st.data())
@SETTINGS
def test_clip(shapes, size, bounds, data):
    sa, slo, shi = shapes.input_shapes
    specs = [data.draw(batch_spec(len(s))) for s in (sa, slo, shi)]
    if bounds == "lo":
        specs[2] = None
    if bounds == "hi":
        specs[1] = None
    if specs == [None, None, None]:
        specs[0] = 0
    a = make_arg(lambda r, s: r.uniform(-2, 2, s), sa, size, specs[0], np.float64, 6)
    lo = make_arg(lambda r, s: r.uniform(-1, -0.2, s), slo, size, specs[1], np.float64, 7)
    hi = make_arg(lambda r, s: r.uniform(0.2, 1, s), shi, size, specs[2], np.float64, 8)
    lo = None if bounds == "hi" else lo
    hi = None if bounds == "lo" else hi
    assert_batched(lambda a, lo, hi: fnp.clip(a, lo, hi), tuple(specs), a, lo, hi, exact=True)


def test_nan_to_num_angle_and_kwargs_pass_through():
    x = np.array([[1.0, np.nan, -np.inf], [np.inf, 2.0, 0.5]])
    assert_batched(lambda v: fnp.nan_to_num(v, nan=-1.0, posinf=7.0, neginf=-7.0), (1,), x, exact=True)
    z = np.array([[1 + 1j, -1 + 0.5j], [0.3 - 2j, -1 - 1j]])
    assert_batched(lambda v: fnp.angle(v, deg=True), (0,), z)
    assert_batched(lambda v: fnp.angle(v), (-1,), z)


def test_vmap_of_traced_kwargs_free_calls_in_both_nesting_orders():
    xs = np.array([[0.2, -0.7, 1.1], [1.5, 0.3, -0.4]])
    f = lambda v: fnp.sum(fnp.where(v > 0, fnp.sin(v) * v, fnp.clip(v, -0.5, None) ** 2))
    with no_fallback():
        per_example = fg.vmap(fg.grad(f))(xs)
        through = fg.grad(lambda w: fnp.sum(fg.vmap(f)(w)))(xs)
    want = np.stack([fg.grad(f)(x) for x in xs])
    np.testing.assert_allclose(per_example, want, rtol=1e-12)
    np.testing.assert_allclose(through, want, rtol=1e-12)


# --- Jacobians: the transforms batch the VJP/JVP rules --------------------------------

JAC_CASES = {
    # unary functions whose rules use only this family (same shapes: no unbroadcast)
    **{name: (lambda n: lambda v: getattr(fnp, n)(v))(name) for name in
       ("exp", "log", "sqrt", "sin", "tanh", "arctan", "sinc", "abs", "cbrt", "reciprocal")},
    "arccosh": lambda v: fnp.arccosh(v + 1.0),
    "power": lambda v: fnp.power(v, v[::-1]),
    "power-scalar": lambda v: fnp.power(v, 3.0),
    "divide": lambda v: fnp.divide(v, v * v + 1.0),
    "maximum": lambda v: fnp.maximum(v, 1.6 - v),
    "arctan2": lambda v: fnp.arctan2(v, v + 3.0),
    "hypot": lambda v: fnp.hypot(v, 1.0 + v * 0.5),
    "logaddexp": lambda v: fnp.logaddexp(v, v * v),
    "mod": lambda v: fnp.mod(3.3 * v, 0.9 + 0 * v),
    "fmod": lambda v: fnp.fmod(3.3 * v, 0.9 + 0 * v),
    "copysign": lambda v: fnp.copysign(v, v - 1.5),
    "where": lambda v: fnp.where(v > 1.3, v * v, fnp.exp(v)),
    "clip": lambda v: fnp.clip(v * v, 0.3, 3.0 * v),
    "nan_to_num": lambda v: fnp.nan_to_num(fnp.where(v > 1.5, np.inf, v * v), posinf=2.0),
}


@pytest.mark.parametrize("name", sorted(JAC_CASES))
def test_jacfwd_jacrev_hessian_without_fallback(name):
    f = JAC_CASES[name]
    x = np.array([0.6, 1.35, 1.9])
    w = np.array([0.5, -1.0, 2.0])
    scalar = lambda v: fnp.dot(f(v), w)  # dot has its own batching rule
    with no_fallback():
        jf = fg.jacfwd(f)(x)
        jr = fg.jacrev(f)(x)
        h = fg.hessian(scalar)(x)
        per_example = fg.vmap(fg.grad(scalar))(np.stack([x, x * 0.9 + 0.1]))
    np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12)
    # against the unbatched derivatives: one gradient per row / column
    rows = np.stack([fg.grad(lambda v: f(v)[i])(x) for i in range(3)])
    np.testing.assert_allclose(jr, rows, rtol=1e-10, atol=1e-12)
    cols = np.stack([fg.jvp(fg.grad(scalar), (x,), (e,))[1] for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(h, cols, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(per_example[0], fg.grad(scalar)(x), rtol=1e-12)
    np.testing.assert_allclose(per_example[1], fg.grad(scalar)(x * 0.9 + 0.1), rtol=1e-12)


def test_jacobians_of_complex_functions_without_fallback():
    z = np.array([0.6 + 0.3j, -0.4 + 1.1j])
    f = lambda v: fnp.real(fnp.exp(v) * fnp.conj(v)) + fnp.angle(v) + fnp.imag(fnp.sqrt(v))
    h = lambda v: fnp.exp(v) * fnp.sin(v) / (v + 2.0) + fnp.log1p(v) ** 2  # holomorphic
    loss = lambda v: fnp.sum(f(v))
    with no_fallback():
        jr = fg.jacrev(h, holomorphic=True)(z)
        jh = fg.jacfwd(h, holomorphic=True)(z)
        per_example = fg.vmap(fg.grad(loss))(np.stack([z, z[::-1]]))
    np.testing.assert_allclose(per_example[0], fg.grad(loss)(z), rtol=1e-12)
    np.testing.assert_allclose(per_example[1], fg.grad(loss)(z[::-1]), rtol=1e-12)
    np.testing.assert_allclose(jr, jh, rtol=1e-12)
    dh = lambda v: np.exp(v) * (np.sin(v) + np.cos(v)) / (v + 2) - np.exp(v) * np.sin(v) / (v + 2) ** 2 \
        + 2 * np.log1p(v) / (1 + v)
    np.testing.assert_allclose(jh, np.diag(dh(z)), rtol=1e-12)


# --- nondiff: elementwise -------------------------------------------------------------

NONDIFF_UNARY = ["isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit", "logical_not", "floor",
                 "ceil", "rint", "trunc", "fix", "sign", "iscomplex", "isreal", "round", "around"]
NONDIFF_BINARY = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
                  "logical_or", "logical_xor", "isclose", "floor_divide", "heaviside"]
INT_UNARY = ["invert", "bitwise_not"]
INT_BINARY = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm"]


def special_values(r, s):
    """Normal numbers, halves (rounding ties), zeros of both signs, infinities and nan."""
    pool = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 0.7, -1.3, np.inf, -np.inf, np.nan])
    return r.choice(pool, s)


def small_ints(r, s):
    return r.integers(1, 9, s)


@pytest.mark.parametrize("name", NONDIFF_UNARY + INT_UNARY)
@given(per=st.lists(st.integers(1, 3), max_size=2), size=st.integers(1, 3), data=st.data())
@SETTINGS
def test_nondiff_unary(name, per, size, data):
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    if name in INT_UNARY:
        x = make_arg(small_ints, tuple(per), size, spec, np.int64, 1)
    else:
        x = make_arg(special_values, tuple(per), size, spec, np.float64, 1)
    assert_batched(getattr(fnp, name), (spec,), x, exact=True)
    if name in ("round", "around"):
        assert_batched(lambda v: getattr(fnp, name)(v * 3.14159, 2), (spec,), x, exact=True)


@pytest.mark.parametrize("name", NONDIFF_BINARY + INT_BINARY)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3), size=st.integers(1, 3),
       data=st.data())
@SETTINGS
def test_nondiff_binary(name, shapes, size, data):
    sx, sy = shapes.input_shapes
    specs = (data.draw(batch_spec(len(sx))), data.draw(batch_spec(len(sy))))
    if specs == (None, None):
        specs = (None, 0)
    dom, dt = (small_ints, np.int64) if name in INT_BINARY else (special_values, np.float64)
    x = make_arg(dom, sx, size, specs[0], dt, 1)
    y = make_arg(dom, sy, size, specs[1], dt, 2)
    with np.errstate(all="ignore"):
        assert_batched(getattr(fnp, name), specs, x, y, exact=True)


def test_comparison_operators_and_where_of_a_mask_inside_vmap():
    xs = np.array([[0.5, -1.0, 2.0], [-0.5, 3.0, 0.0]])
    assert_batched(lambda v: fnp.logical_and(v > 0, v <= 2.0), (0,), xs, exact=True)
    assert_batched(lambda v, y: fnp.where(v == y, v, -y), (1, None), xs.T, xs[0], exact=True)
    assert_batched(lambda v: fnp.isclose(v, 0.5, atol=0.6), (0,), xs, exact=True)


# --- nondiff: reductions and axis functions -------------------------------------------

@st.composite
def axis_args(draw, nd, allow_tuple):
    kind = draw(st.sampled_from(["default", "none"] + (["int", "int-positional"] if nd else [])
                                + (["tuple"] if allow_tuple and nd else [])))
    if kind == "default":
        return (), {}
    if kind == "none":
        return (), {"axis": None}
    if kind == "tuple":
        axes = draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda a: a % nd))
        return (), {"axis": tuple(axes)}
    ax = draw(st.integers(-nd, nd - 1))
    return ((ax,), {}) if kind == "int-positional" else ((), {"axis": ax})


AXIS_FUNCTIONS = {  # name: (tuple axes allowed, keepdims allowed)
    "argmax": (False, True), "argmin": (False, True), "nanargmax": (False, True),
    "nanargmin": (False, True), "argsort": (False, False), "any": (True, True), "all": (True, True),
    "count_nonzero": (True, True),
}


@pytest.mark.parametrize("name", sorted(AXIS_FUNCTIONS))
@given(per=st.lists(st.integers(1, 3), max_size=3), size=st.integers(1, 3), data=st.data())
@SETTINGS
def test_axis_functions(name, per, size, data):
    allow_tuple, allow_keepdims = AXIS_FUNCTIONS[name]
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    args, kwargs = data.draw(axis_args(len(per), allow_tuple))
    if allow_keepdims and data.draw(st.booleans()):
        kwargs["keepdims"] = True
    if name in ("any", "all", "count_nonzero"):
        x = make_arg(lambda r, s: r.integers(0, 2, s), tuple(per), size, spec, np.int64, 1)
    else:  # distinct values: no ties for argsort / argmax
        x = make_arg(lambda r, s: r.permutation(np.prod(s, dtype=int)).reshape(s), tuple(per), size, spec,
                     np.float64, 1)
    fn = getattr(fnp, name)
    assert_batched(lambda v: fn(v, *args, **kwargs), (spec,), x, exact=True)


@given(per=st.lists(st.integers(2, 4), min_size=1, max_size=2), size=st.integers(1, 3), data=st.data())
@SETTINGS
def test_argpartition(per, size, data):
    spec = data.draw(batch_spec(len(per), may_be_none=False))
    axis = data.draw(st.sampled_from([None, -1, 0]))
    n = int(np.prod(per)) if axis is None else per[axis]
    kth = data.draw(st.integers(0, n - 1))
    x = make_arg(lambda r, s: r.permutation(np.prod(s, dtype=int)).reshape(s), tuple(per), size, spec,
                 np.float64, 2)
    kw = {} if axis == -1 else {"axis": axis}
    with no_fallback():
        got = fg.vmap(lambda v: fnp.argpartition(v, kth, **kw), in_axes=spec)(x)
    want = loop(lambda v: np.argpartition(v, kth, **kw), (spec,), x)
    assert got.shape == want.shape
    # the k-th element is in place (the rest of the order is unspecified)
    along = 1 if axis is None else 1 + axis % len(per)
    np.testing.assert_array_equal(np.take(got, kth, axis=along), np.take(want, kth, axis=along))


def test_argsort_keepdims_and_kwargs_positional_axis():
    x = np.random.default_rng(3).permutation(24).reshape(2, 3, 4).astype(float)
    assert_batched(lambda v: fnp.argsort(v, 0, kind="stable"), (2,), x, exact=True)
    assert_batched(lambda v: fnp.argmax(v, axis=None, keepdims=True), (1,), x, exact=True)
    assert_batched(lambda v: fnp.any(v > 5, 1, None, True), (0,), x, exact=True)
    mask = np.array([[True, False, True, False]] * 3)
    assert_batched(lambda v: fnp.all(v > 5, axis=0, where=mask), (0,), x, exact=True)  # plain where=
    with pytest.raises(TypeError, match="where= cannot be a traced value under vmap"):
        fg.vmap(lambda v: fnp.all(v > 5, where=v > 7))(x)


# --- nondiff: shaped like one argument ----------------------------------------------------

def test_searchsorted_digitize_isin():
    rng = np.random.default_rng(4)
    a = np.sort(rng.standard_normal((3, 5)), axis=1)
    v = rng.standard_normal((3, 4))
    for side in ("left", "right"):
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (None, 0), a[0], v, exact=True)
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (None, -1), a[0], v.T, exact=True)
        # a batched sorted array: one call per example (correct; no warning)
        assert_batched(lambda s, q: fnp.searchsorted(s, q, side=side), (0, 0), a, v, exact=True)
    assert_batched(lambda x, b: fnp.digitize(x, b), (1, None), v.T, a[1], exact=True)
    assert_batched(lambda x, b: fnp.digitize(x, b, right=True), (0, 0), v, a, exact=True)
    ints = rng.integers(0, 6, (3, 4))
    assert_batched(lambda e, t: fnp.isin(e, t), (0, None), ints, np.array([1, 3, 5]), exact=True)
    assert_batched(lambda e, t: fnp.isin(e, t, invert=True), (0, 1), ints, ints.T[::-1], exact=True)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_functions_are_batched_like_their_argument(name):
    x = np.arange(24.0).reshape(2, 3, 4)
    fn = getattr(fnp, name)
    for spec in (0, 1, -1):
        with no_fallback():
            out = fg.vmap(fn, in_axes=spec)(x)
        want_shape = np.moveaxis(x, spec, 0).shape
        assert out.shape == want_shape and out.dtype == x.dtype
        if name != "empty_like":
            np.testing.assert_array_equal(out, getattr(np, name)(np.moveaxis(x, spec, 0)))
    with no_fallback():
        out = fg.vmap(lambda v: fn(v, dtype=np.int32))(x)
        same = fg.vmap(lambda v: fn(v, np.float32, shape=(5,)))(x)
    assert out.shape == (2, 3, 4) and out.dtype == np.int32
    assert same.shape == (2, 5) and same.dtype == np.float32  # not batched, repeated by vmap
    if name != "empty_like":
        assert_batched(lambda v: v * 2.0 + fn(v), (1,), x)


# --- nondiff: whole-array predicates ----------------------------------------------------

def test_allclose_array_equal_array_equiv():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3))
    y = x.copy()
    y[1, 2] += 1e-3
    y[3, 0] = np.nan
    x[3, 0] = np.nan
    for f in (fnp.allclose, lambda a, b: fnp.allclose(a, b, 1e-2), lambda a, b: fnp.allclose(a, b, equal_nan=True),
              fnp.array_equal, lambda a, b: fnp.array_equal(a, b, True), fnp.array_equiv):
        assert_batched(f, (0, 0), x, y, exact=True)
        assert_batched(f, (1, None), x.T, y[2], exact=True)
    assert_batched(fnp.allclose, (0, None), x[:, :1], y[0], exact=True)  # broadcasting examples
    assert_batched(fnp.array_equiv, (0, None), x[:, :1], np.ones(3), exact=True)
    assert_batched(fnp.array_equiv, (0, None), np.ones((4, 1)), np.ones(3), exact=True)
    # different example shapes: False for every example, as in NumPy
    with no_fallback():
        assert not np.any(fg.vmap(fnp.array_equal, in_axes=(0, None))(x, np.ones(2)))
        assert not np.any(fg.vmap(fnp.array_equiv, in_axes=(0, None))(x, np.ones(2)))
        out = fg.vmap(fnp.array_equal, in_axes=(0, None))(x, np.ones(2))
    assert out.shape == (4,)


# --- nondiff: tuples of index arrays ---------------------------------------------------

def test_unravel_index_and_index_builders():
    idx = np.array([[0, 5, 11], [7, 3, 2]])
    assert_batched(lambda i: fnp.unravel_index(i, (3, 4)), (1,), idx, exact=True)
    assert_batched(lambda i: fnp.unravel_index(i, (4, 3), order="F"), (0,), idx, exact=True)
    A = np.zeros((2, 3, 3))
    for f in (fnp.tril_indices_from, lambda a: fnp.triu_indices_from(a, 1), fnp.diag_indices_from):
        assert_batched(f, (0,), A, exact=True)
        assert_batched(f, (-1,), np.moveaxis(A, 0, -1), exact=True)
    with pytest.raises(ValueError):
        fg.vmap(fnp.tril_indices_from)(np.zeros((2, 3)))  # examples are 1-d: NumPy's own error


# --- nondiff: output shape depends on the values ------------------------------------------

def test_data_dependent_functions_batch_when_the_shapes_agree():
    x = np.array([[0.0, 1.0, 2.0, 0.0], [3.0, 0.0, 0.0, 4.0]])  # two nonzeros per example
    assert_batched(fnp.nonzero, (0,), x, exact=True)
    assert_batched(fnp.argwhere, (1,), x.T, exact=True)
    assert_batched(fnp.flatnonzero, (0,), x, exact=True)
    assert_batched(lambda v: fnp.where(v > 0.5), (0,), x, exact=True)
    X = np.stack([x, x[::-1]], axis=-1)  # examples of shape (2, 4)
    assert_batched(fnp.nonzero, (-1,), X, exact=True)


@pytest.mark.parametrize("name", ["nonzero", "argwhere", "flatnonzero"])
def test_data_dependent_functions_refuse_disagreeing_shapes(name):
    x = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=rf"vmap cannot batch {name}: its output shape depends on the values.*"
                                         r"example 0 gives shape \(2"):
        fg.vmap(getattr(fnp, name))(x)
    with pytest.raises(ValueError, match="empty batch"):
        fg.vmap(getattr(fnp, name))(np.zeros((0, 3)))


def test_nondiff_functions_inside_grad_inside_vmap_and_around():
    xs = np.array([[0.5, -1.2, 2.0], [-0.3, 0.8, 1.5]])

    def f(v):
        k = fnp.argmax(v)
        mask = fnp.logical_and(v > -1.0, fnp.isfinite(v))
        return fnp.sum(fnp.where(mask, v * v, 0.0)) + fnp.take(v, k) * fnp.count_nonzero(mask)

    want = np.stack([fg.grad(f)(x) for x in xs])
    with no_fallback():
        np.testing.assert_allclose(fg.vmap(fg.grad(f))(xs), want, rtol=1e-12)
        np.testing.assert_allclose(fg.grad(lambda w: fnp.sum(fg.vmap(f)(w)))(xs), want, rtol=1e-12)
        nested = fg.vmap(fg.vmap(lambda v: fnp.argsort(v)))(np.stack([xs, -xs]))
    np.testing.assert_array_equal(nested, np.argsort(np.stack([xs, -xs]), axis=-1))
