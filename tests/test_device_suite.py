"""The primitive and transform suite on the fake device backend (tests/fake_backend.py).

Every primitive family runs forward, vjp, jvp, a Hessian-vector product (second order,
forward over reverse) and vmap on fake-device inputs; results must stay on the device,
equal NumPy's, and no device-to-host transfer may happen (the fake raises on one).
The case tables are the family tests' own where they have one.
"""

from __future__ import annotations

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.backend import device_of, device_put
import contextlib

from device_suite import Host, check_case

fb.install()
fake = fb.fake


class Target:
    """Where check() runs the cases: the fake backend here; tests/test_cupy.py swaps in CuPy."""

    def __init__(self, name, put, xp, no_sync, uploads=None, rtol=None, atol=None, f32_tol=None):
        self.name, self.put, self.xp, self.no_sync, self.uploads = name, put, xp, no_sync, uploads
        self.rtol, self.atol, self.f32_tol = rtol, atol, f32_tol


FAKE = Target("fake", fb.to_fake, fake, fb.no_host_sync, uploads=lambda: fb.STATS["h2d"])
TARGET = [FAKE]

# Outputs whose sign/phase is a convention of the LAPACK routine (eigenvectors, singular
# vectors, Q): another library (cuSOLVER) may pick another, so only the fake backend,
# which runs NumPy's own routines, compares them directly.
GAUGE = {"eigh", "eigh_upper", "svd_tall", "svd_wide", "svd_square_full", "svd_hermitian_uv", "qr_tall",
         "qr_square", "qr_wide", "qr_r", "qr complete (tall)", "qr_complete_wide", "eigvals"}


def check(fn, args, consts=(), sync_ok=False, **kw):
    """``sync_ok``: the case needs a device-to-host sync by its nature (a result whose size
    depends on device values: a device boolean mask, unique, nonzero ...), as in CuPy."""
    t = TARGET[0]
    kw.setdefault("what", getattr(fn, "__name__", "case"))
    if t is not FAKE:
        if kw["what"].split("[")[0] in GAUGE:
            pytest.skip(f"{kw['what']}: sign/phase conventions differ between LAPACK and {t.name}")
        low = any(np.asarray(a).dtype in (np.float32, np.complex64) for a in args)
        if "rtol" not in kw and t.rtol is not None:
            kw["rtol"] = t.f32_tol if low else t.rtol
        if "atol" not in kw and t.atol is not None:
            kw["atol"] = t.f32_tol if low else t.atol
    try:
        return check_case(fn, args, consts, put=t.put, xp=t.xp,
                          no_sync=contextlib.nullcontext if sync_ok else t.no_sync, uploads=t.uploads, **kw)
    except NotImplementedError as e:
        if t is not FAKE and "has no function" in str(e):
            pytest.skip(f"{t.name} lacks a function: {e}")
        raise


# --------------------------------------------------------------------------
# elementwise (tables from tests/test_elementwise.py)

import test_elementwise as _te  # noqa: E402


@pytest.mark.parametrize("name", sorted(_te.UNARY))
def test_unary(name):
    real_dom, cplx_dom = _te.UNARY[name]
    fn = getattr(fnp, name)
    check(fn, [_te.sample(real_dom, (2, 3), np.float64)], what=name)
    if cplx_dom is not None:
        check(fn, [_te.sample(cplx_dom, (3,), np.complex128)], what=name + "[complex]")


@pytest.mark.parametrize("name", sorted(_te.UNARY)[::4])
def test_unary_float32(name):
    real_dom, _ = _te.UNARY[name]
    check(getattr(fnp, name), [_te.sample(real_dom, (3,), np.float32)], what=name)


@pytest.mark.parametrize("name", sorted(_te.BINARY))
def test_binary(name):
    dx, dy, cplx = _te.BINARY[name]
    fn = getattr(fnp, name)
    x = _te.sample(dx, (2, 3), np.float64, seed=1)
    y = _te.sample(dy, (1, 3), np.float64, seed=2)
    check(fn, [x, y], what=name)
    check(lambda x: fn(x, 1.5 if name not in ("mod", "remainder", "fmod") else 1.01), [x], what=name + "[scalar]")
    if cplx is not None:
        check(fn, [_te.sample(cplx, (3,), np.complex128, seed=1), _te.sample(cplx, (3,), np.complex128, seed=2)],
              what=name + "[complex]")


# --------------------------------------------------------------------------
# shape operations (table from tests/test_shape_ops.py)

import test_shape_ops as _ts  # noqa: E402


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,f,shapes", _ts.CASES, ids=_ts.IDS)
def test_shape_ops(name, f, shapes):
    args = [_ts.rand(s, np.float64, seed=i) for i, s in enumerate(shapes)]
    check(lambda *a: f(fnp, *a), args, what=name)


# --------------------------------------------------------------------------
# reductions

REDUCTIONS = [
    ("sum", lambda x: fnp.sum(x)), ("sum_axis", lambda x: fnp.sum(x, axis=1, keepdims=True)),
    ("sum_axes", lambda x: fnp.sum(x, axis=(0, 2))), ("mean", lambda x: fnp.mean(x, axis=-1)),
    ("prod", lambda x: fnp.prod(x, axis=0)), ("prod_all", lambda x: fnp.prod(x)),
    ("max", lambda x: fnp.max(x, axis=1)), ("min", lambda x: fnp.min(x)), ("amax", lambda x: fnp.amax(x, axis=(0, 1))),
    ("ptp", lambda x: fnp.ptp(x, axis=2)), ("var", lambda x: fnp.var(x, axis=1, ddof=1)),
    ("std", lambda x: fnp.std(x)), ("std_axis", lambda x: fnp.std(x, axis=(1, 2), keepdims=True)),
    ("cumsum", lambda x: fnp.cumsum(x, axis=1)), ("cumsum_flat", lambda x: fnp.cumsum(x)),
    ("cumprod", lambda x: fnp.cumprod(x, axis=-1)), ("sort", lambda x: fnp.sort(x, axis=1)),
    ("sort_none", lambda x: fnp.sort(x, axis=None)), ("nansum", lambda x: fnp.nansum(x, axis=0)),
    ("nanmean", lambda x: fnp.nanmean(x, axis=1)), ("average", lambda x: fnp.average(x, axis=1)),
    ("average_w", lambda x, w: fnp.average(x, axis=(1, 2), weights=w)),
    ("average_w_all", lambda x, w: fnp.average(x[0], weights=w)),
    ("mean_where", lambda x: fnp.mean(x, axis=1, where=fnp.abs(x) < 6)),
    ("sum_initial", lambda x: fnp.sum(x, axis=0, initial=1.5)),
    ("max_initial", lambda x: fnp.max(x, axis=0, initial=0.5)),
    ("linrec", lambda x: fnp.cumsum(x * 0.5, axis=0)),
    ("var_complex", lambda x: fnp.var(x * (1 + 0.5j), axis=0)),
    ("cumprod_complex", lambda x: fnp.cumprod(x * (1 - 0.25j), axis=2)),
]


def _separated(shape, seed=0):
    """Distinct values (no ties), away from zero."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) * 0.37 + 0.5) * rng.choice([-1.0, 1.0], shape)


@pytest.mark.parametrize("name,f", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions(name, f):
    x = _separated((2, 3, 4))
    args = [x] if f.__code__.co_argcount == 1 else [x, np.abs(_separated((3, 4), 1))]
    check(f, args, what=name)
    check(f, [a.astype(np.float32) for a in args], what=name + "[f32]")


# --------------------------------------------------------------------------
# linear algebra (tables from tests/test_linalg.py)

import test_linalg as _tl  # noqa: E402


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")
@pytest.mark.parametrize("name", sorted(_tl.PRODUCT_CASES))
def test_products(name):
    f, make = _tl.PRODUCT_CASES[name]
    check(f, make(np.float64), what=name)


@pytest.mark.parametrize("name", sorted(_tl.PRODUCT_CASES)[::5])
def test_products_complex_f32(name):
    f, make = _tl.PRODUCT_CASES[name]
    check(f, make(np.complex128), what=name + "[complex]")
    check(f, make(np.float32), what=name + "[f32]")


@pytest.mark.parametrize("name", sorted(_tl.LINALG_CASES))
def test_linalg(name):
    f, make = _tl.LINALG_CASES[name]
    check(f, make(np.float64), what=name, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("name", sorted(_tl.COMPLEX_CASES)[::3])
def test_linalg_complex(name):
    f, make = _tl.COMPLEX_CASES[name]
    check(f, make(np.complex128), what=name, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("name", ["einsum_" + s for s, _, _ in _tl.EINSUM_EXPLICIT])
def test_einsum(name):
    subs, _, shapes = next(c for c in _tl.EINSUM_EXPLICIT if "einsum_" + c[0] == name)
    args = [_tl.randn(*s, seed=i) for i, s in enumerate(shapes)]
    check(lambda *a: fnp.einsum(subs, *a), args, what=name)


NORMS = [(o, None) for o in _tl.NORM_MATRIX_ORDS] + [(o, 1) for o in (None, 1, 2, 3, 0.5, np.inf)]


@pytest.mark.parametrize("ord_,axis", NORMS, ids=[f"{o}-{a}" for o, a in NORMS])
def test_norm(ord_, axis):
    a = _tl.distinct_sv(3, 4)
    check(lambda x: fnp.linalg.norm(x, ord_, axis), [a], what=f"norm({ord_}, {axis})", rtol=1e-7, atol=1e-7)


def test_eig_general():
    a = _tl.well_conditioned(3) + np.diag([0.0, 1.0, 2.5])
    # the derivative of the general eigenproblem is not implemented: forward and vmap only
    check(lambda x: fnp.abs(fnp.linalg.eigvals(x)), [a], what="eigvals", rtol=1e-7, atol=1e-7, modes=("fwd", "vmap"))


# --------------------------------------------------------------------------
# scipy.special (table from tests/test_special.py)

import test_special as _tsp  # noqa: E402


@pytest.mark.parametrize("name", [n for n in _tsp.PARAMS if n != "polygamma_n_array"])
def test_special(name):
    f, inputs, _ = _tsp.CASES[name]
    check(f, [np.asarray(a, dtype=np.float64) for a in inputs], what=name, rtol=1e-7, atol=1e-7)


def test_special_polygamma_n_on_device():
    from funcgrad.scipy.special import polygamma

    n = np.array([0, 1, 2])
    check(lambda x, n: polygamma(n, x), [_tsp.POS], consts=[n], what="polygamma(n array)")


def test_erfcx_and_logcumsumexp_on_device():
    from funcgrad.scipy.prefix_scans import logcumsumexp
    from funcgrad.scipy.special import erfcx

    x = np.array([[-1.5, 0.2, 3.0], [0.7, -0.3, 12.0]])
    check(erfcx, [x], what="erfcx")
    check(lambda a: logcumsumexp(a, 1), [x], what="logcumsumexp")


@pytest.mark.parametrize("name", ["logsumexp_b", "softmax", "expit", "erf", "gammaln"])
def test_special_float32(name):
    f, inputs, _ = _tsp.CASES[name]
    check(f, [np.asarray(a, dtype=np.float32) for a in inputs], what=name)


# --------------------------------------------------------------------------
# indexing: getitem (basic, advanced, boolean), at[] updates, take, gathers and scatters

_IDX = np.array([2, 0, 2, 1])
_IDX2 = np.array([[0, 1], [1, 1]])
_MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, False]])

INDEXING = [
    ("basic", lambda x: x[1:, ::-2], ()),
    ("int_neg", lambda x: x[-1, 2], ()),
    ("ellipsis_newaxis", lambda x: x[..., None, 1], ()),
    ("list", lambda x: x[[0, 2, 2]], ()),
    ("host_index_array", lambda x: x[:, _IDX], ()),
    ("device_index_array", lambda x, i: x[i], (_IDX[:3],)),
    ("two_arrays", lambda x, i, j: x[i, j], (_IDX[:3], _IDX[1:])),
    ("mixed_slice_array", lambda x, i: x[1:, i], (_IDX2,)),
    ("host_bool_mask", lambda x, m: x[m], (Host(_MASK),)),
    ("bool_row_mask", lambda x: x[np.array([True, False, True])], ()),
    ("take", lambda x, i: fnp.take(x, i, axis=1), (_IDX,)),
    ("take_flat", lambda x, i: fnp.take(x, i), (_IDX2,)),
    ("take_clip", lambda x, i: fnp.take(x, i, axis=0, mode="clip"), (np.array([-1, 5, 1]),)),
    ("take_along_axis", lambda x, i: fnp.take_along_axis(x, i, axis=1), (np.array([[0, 3, 3], [1, 0, 2], [2, 2, 2]]),)),
    ("put_along_axis", lambda x, i: fnp.put_along_axis(x * 1.0, i, x[:, :1] * 2.0, axis=1, inplace=False),
     (np.array([[1], [3], [0]]),)),
    ("at_set", lambda x, v: fnp.at(x)[[0, 2]].set(v), None),
    ("at_set_repeated", lambda x, v: fnp.at(x)[[2, 0, 2]].set(fnp.concatenate([v, v[:1]])), None),
    ("at_set_device_index", lambda x, v, i: fnp.at(x)[i].set(fnp.concatenate([v, v[:1]])), (np.array([1, 0, 1]),)),
    ("at_add_repeated", lambda x, v: fnp.at(x)[[0, 0, 2]].add(v[:1]), None),
    ("at_mul_repeated", lambda x, v: fnp.at(x)[[1, 1]].multiply(v[:1] + 2.0), None),
    ("at_max", lambda x, v: fnp.at(x)[[2, 0, 2]].max(v[:1]), None),
    ("at_min", lambda x, v: fnp.at(x)[[1, 1]].min(v[:1] - 3.0), None),
    ("at_add_device_index", lambda x, v, i: fnp.at(x)[i].add(v[:1]), (np.array([0, 1, 1]),)),
    ("compress", lambda x, c: fnp.compress(c, x, axis=1), (Host(np.array([True, False, True, True])),)),
    ("extract", lambda x, c: fnp.extract(c, x), (Host(_MASK),)),
    ("choose", lambda x, c: fnp.choose(c, [x[0], x[1], x[2]]), (Host(np.array([0, 2, 1, 1])),)),
    ("choose_device_clip", lambda x, c: fnp.choose(c, [x[0], x[1], x[2]], mode="clip"), (np.array([0, 5, 1, -1]),)),
    ("diag_embed", lambda x: fnp.diagonal(x[:, :3] @ x[:, :3].T), ()),
]

# Results whose size depends on device values: CuPy synchronizes for these too.
INDEXING_SYNC = [
    ("device_bool_mask", lambda x, m: x[m], (_MASK,)),
    ("device_compress", lambda x, c: fnp.compress(c, x, axis=1), (np.array([True, False, True, True]),)),
    ("device_extract", lambda x: fnp.extract(x > 0, x), ()),
    ("device_choose_raise", lambda x, c: fnp.choose(c, [x[0], x[1], x[2]]), (np.array([0, 2, 1, 1]),)),
    ("unique_values", lambda x: fnp.unique(fnp.round(x)), ()),
    ("bincount_weights", lambda x, i: fnp.bincount(i, weights=x[0], minlength=4), (np.array([0, 3, 3, 1]),)),
    ("where_1arg", lambda x: x[fnp.where(x > 0)], ()),
    ("nonzero_index", lambda x: x[fnp.nonzero(x > 0.2)], ()),
    ("at_mul_device_index", lambda x, v, i: fnp.at(x)[i].multiply(v[:1] + 2.0), (np.array([0, 1, 1]),)),
]


def _indexing_args(name, f, consts):
    """x (3, 4); an update value v (2, 4) when f takes one more argument than the constants fill."""
    x = _separated((3, 4), seed=3)
    consts = () if consts is None else consts
    if f.__code__.co_argcount - len(consts) == 2:
        return [x, _separated((2, 4), seed=4)], consts
    return [x], consts


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,f,consts", INDEXING, ids=[c[0] for c in INDEXING])
def test_indexing(name, f, consts):
    args, consts = _indexing_args(name, f, consts)
    check(f, args, consts, what=name)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,f,consts", INDEXING_SYNC, ids=[c[0] for c in INDEXING_SYNC])
def test_indexing_data_dependent(name, f, consts):
    args, consts = _indexing_args(name, f, consts)
    vmap_ok = name in ("bincount_weights", "device_choose_raise", "at_mul_device_index")
    check(f, args, consts, what=name, sync_ok=True,
          modes=("fwd", "vjp", "jvp", "hvp") + (("vmap",) if vmap_ok else ()))


# --------------------------------------------------------------------------
# functions without a derivative: forward, under a trace, and batched

import test_indexing as _ti  # noqa: E402

_ND_SKIP = {"searchsorted", "isin", "digitize"}  # their host list/array arguments are CuPy errors: see below


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,fn", [c for c in _ti._ND if c[0] not in _ND_SKIP], ids=[n for n, _ in _ti._ND if n not in _ND_SKIP])
def test_nondiff(name, fn):
    x = np.random.default_rng(12).standard_normal((2, 4))
    data_dependent = name in ("nonzero", "unique", "where1")
    modes = ("fwd", "traced") if data_dependent or name in ("empty_like", "lexsort") else ("fwd", "traced", "vmap")
    check(lambda a: fn(fnp, a), [x], what=name, modes=modes, sync_ok=data_dependent)


@pytest.mark.parametrize("name,fn", [
    ("searchsorted", lambda a, s: fnp.searchsorted(s, a)),
    ("isin", lambda a, s: fnp.isin(fnp.floor(a), s)),
    ("digitize", lambda a, s: fnp.digitize(a, s)),
])
def test_nondiff_with_device_arguments(name, fn):
    x = np.random.default_rng(12).standard_normal((2, 4))
    check(fn, [x], [np.array([-1.0, 0.0, 1.0])], what=name, modes=("fwd", "traced", "vmap"))


# --------------------------------------------------------------------------
# creation with traced values, casts, in-place writes

CREATION = [
    ("full_traced", lambda v: fnp.full((2, 3), v[0])),
    ("full_like_traced", lambda v: fnp.full_like(fnp.zeros((2, 2), device=device_of(v)), v[1])),
    ("linspace_traced", lambda v: fnp.linspace(v[0], v[1], 5)),
    ("linspace_axis", lambda v: fnp.linspace(v[:2], v[1:], 4, axis=1)),
    ("logspace_traced", lambda v: fnp.logspace(v[0], v[1], 4)),
    ("array_of_traced", lambda v: fnp.array([v[0] * 2.0, v[1], 3.0])),
    ("asarray_list", lambda v: fnp.asarray([v, 2.0 * v])),
    ("astype_f32", lambda v: fnp.astype(v, np.float32) * 2.0),
    ("astype_complex", lambda v: fnp.real(fnp.astype(v, np.complex128) * (1 + 1j))),
    ("copy", lambda v: fnp.copy(v) * v),
    ("inplace_setitem", lambda v: _setitem(v)),
    ("inplace_iadd", lambda v: _iadd(v)),
    ("zeros_then_write", lambda v: _fill(v)),
]


def _setitem(v):
    y = v * 1.0
    y[1] = v[0] * 3.0
    return y


def _iadd(v):
    y = v * 2.0
    y += v ** 2
    y[:2] *= v[1:]
    return y


def _fill(v):
    out = fnp.zeros((2, 3), device=device_of(v))
    out[0] = v
    out[1, ::2] = v[:2] ** 2
    return out


@pytest.mark.parametrize("name,f", CREATION, ids=[c[0] for c in CREATION])
def test_creation_and_inplace(name, f):
    check(f, [np.array([0.5, 1.5, -0.7])], what=name)


# --------------------------------------------------------------------------
# transforms: control flow, custom rules, checkpoint, stop_gradient, Jacobians

@fg.custom_vjp
def _clip_grad(x):
    return fnp.sin(x)


_clip_grad.defvjp(lambda x: (fnp.sin(x), (x,)), lambda res, g: (fnp.clip(g * fnp.cos(res[0]), -0.5, 0.5),))


@fg.custom_jvp
def _softplus(x):
    return fnp.log1p(fnp.exp(x))


_softplus.defjvp(lambda primals, tangents: (_softplus(primals[0]), tangents[0] / (1 + fnp.exp(-primals[0]))))


def _scan_rnn(h0, xs):
    def step(h, x):
        h = fnp.tanh(0.5 * h + x)
        return h, h * h

    h, ys = fg.scan(step, h0, xs)
    return h, ys


TRANSFORMS = [
    ("scan", _scan_rnn, [np.array([0.1, -0.2, 0.3]), _separated((4, 3), 5) * 0.3]),
    ("fori_loop", lambda x: fg.fori_loop(0, 3, lambda i, c: fnp.sin(c) * 1.1 + 0.1 * i, x), [np.array([0.3, -0.4])]),
    ("checkpoint", lambda w, x: fnp.sum(fg.checkpoint(lambda w, x: fnp.tanh(x @ w))(w, x) ** 2),
     [_separated((3, 2), 1) * 0.2, _separated((4, 3), 2) * 0.2]),
    ("custom_vjp", lambda x: _clip_grad(x) * x, [np.array([0.3, -1.4, 2.0])]),
    ("custom_jvp", lambda x: _softplus(x) * x, [np.array([0.3, -1.4, 2.0])]),
    ("stop_gradient", lambda x: x * fg.stop_gradient(x ** 2), [np.array([0.3, -1.4, 2.0])]),
    ("grad_inside", lambda x: fg.grad(lambda y: fnp.sum(fnp.sin(y) * y))(x) * x, [np.array([0.3, -1.4, 2.0])]),
    ("jacrev_inside", lambda x: fg.jacrev(lambda y: fnp.tanh(y) * y[::-1])(x), [np.array([0.3, -1.4, 2.0])]),
    ("jacfwd_inside", lambda x: fg.jacfwd(lambda y: fnp.exp(y) * fnp.sum(y))(x), [np.array([0.3, -1.4, 0.2])]),
    ("hessian_inside", lambda x: fg.hessian(lambda y: fnp.sum(fnp.tanh(y) ** 3))(x), [np.array([0.3, -1.4, 0.2])]),
    ("vmap_inside", lambda w, x: fg.vmap(lambda r: fnp.dot(w, r))(x), [np.array([0.5, -1.0, 2.0]), _separated((4, 3))]),
    ("linearize", lambda x: fg.linearize(fnp.sin, x)[1](x * 2.0), [np.array([0.3, -1.4, 2.0])]),
    ("device_put_same_device", lambda x: fnp.sin(device_put(x * 2.0, device_of(x))) * x, [np.array([0.3, -1.4, 2.0])]),
    ("hvp", lambda x, v: fg.hvp(lambda y: fnp.sum(fnp.exp(y) * y), (x,), (v,))[1], [np.array([0.3, -1.4]), np.array([1.0, 0.5])]),
]


@pytest.mark.parametrize("name,f,args", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transforms(name, f, args):
    check(f, args, what=name)


# --------------------------------------------------------------------------
# nn: layers and losses as pytrees moved to the device with device_put

import funcgrad.nn as nn  # noqa: E402
from funcgrad.nn.kernels import recurrent as krnn  # noqa: E402
from funcgrad.nn.kernels.dense import dense  # noqa: E402


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


NN = [
    ("relu_gelu_silu", lambda x: nn.relu(x) + nn.gelu(x) + nn.silu(x) + nn.elu(x) + nn.softplus(x), [_x((3, 4))]),
    ("sigmoid_logsig", lambda x: nn.sigmoid(x) * nn.log_sigmoid(x) + nn.leaky_relu(x), [_x((3, 4))]),
    ("softmax", lambda x: nn.softmax(x) + nn.log_softmax(x, axis=0), [_x((3, 4))]),
    ("cross_entropy_labels", lambda x, y: nn.cross_entropy(x, y), [_x((4, 5))], (np.array([0, 4, 2, 2]),)),
    ("cross_entropy_smooth", lambda x, y: nn.cross_entropy(x, y, label_smoothing=0.1), [_x((4, 5))],
     (np.array([0, 4, 2, 2]),)),
    ("nll_one_hot", lambda x, y: nn.nll_loss(nn.log_softmax(x), y) + fnp.sum(nn.one_hot(y, 5)), [_x((4, 5))],
     (np.array([1, 3, 0, 2]),)),
    ("bce_mse_l1_huber", lambda x, t: nn.binary_cross_entropy_with_logits(x, t) + nn.mse_loss(x, t)
     + nn.l1_loss(x, t) + nn.huber_loss(x, t), [_x((3, 4)), _x((3, 4), 1) * 0.5]),
    ("layer_norm", lambda x: nn.layer_norm(x, 1, eps=1e-5), [_x((3, 4))]),
    ("layer_norm_affine", lambda x, w, b: nn.layer_norm(x, 1, w, b, eps=1e-5), [_x((3, 4)), _x((4,), 1), _x((4,), 2)]),
    ("conv2d", lambda x, w: nn.conv2d(x, w, stride=1, padding=1), [_x((2, 2, 5, 5)), _x((3, 2, 3, 3), 1)]),
    ("conv1d_strided", lambda x, w: nn.conv1d(x, w, stride=2, dilation=1), [_x((2, 3, 7)), _x((2, 3, 3), 1)]),
    ("pools", lambda x: nn.max_pool2d(x, 2) + nn.avg_pool2d(x, 2), [_x((1, 2, 4, 4))]),
    ("batch_norm_affine", lambda x, w, b: nn.batch_norm(x, None, None, w, b, training=True)[0],
     [_x((3, 2, 2, 2)), _x((2,), 1), _x((2,), 2)]),
    ("batch_norm_running", lambda x, w, b, r: sum(fnp.sum(v ** 2) for v in nn.batch_norm(x, r, r + 1.0, w, b,
                                                                                          training=True)),
     [_x((3, 2, 2, 2)), _x((2,), 1), _x((2,), 2)], (np.zeros(2),)),
    ("dense", lambda x, w, b: dense(x, w, b), [_x((3, 4)), _x((2, 4), 1), _x((2,), 2)]),
    ("attention", lambda q, k, v, m: nn.dot_product_attention(q, k, v, mask=m),
     [_x((2, 3, 4)), _x((2, 3, 4), 1), _x((2, 3, 4), 2)], (nn.causal_mask(3),)),
    ("overlapping_avg_pool_im2col", lambda x: nn.avg_pool2d(x, 3, 1, 1) + nn.col2im(
        nn.im2col(x, (2, 2), stride=2), (1, 2, 4, 4), (2, 2), stride=2), [_x((1, 2, 4, 4))]),
    ("lstm_gru_cells", lambda x, h, wi, wh, wi3, wh3: fnp.sum(nn.lstm_cell(x, h, h, wi, wh)[0])
     + fnp.sum(nn.gru_cell(x, h, wi3, wh3)), [_x((2, 3)), _x((2, 2), 1), _x((8, 3), 2), _x((8, 2), 3),
                                               _x((6, 3), 4), _x((6, 2), 5)]),
    ("lstm_sequence", lambda xs, h, wi, wh, b: fnp.sum(nn.lstm(xs, h, h, wi, wh, b, b)[0] ** 2),
     [_x((3, 2, 3)), _x((2, 2), 1), _x((8, 3), 2), _x((8, 2), 3), _x((8,), 4)]),
    ("lstm_layer", lambda xs, h, wi, wh, b: sum(fnp.sum(o ** 2) for o in krnn.lstm_layer(
        xs, wi, wh, b, b, h, h, batch_first=True, reverse=True)),
     [_x((2, 3, 3)), _x((2, 2), 1), _x((8, 3), 2), _x((8, 2), 3), _x((8,), 4)]),
    ("masked_lstm_sequence", lambda xs, h, wi, wh, b, m: fnp.sum(nn.lstm(xs, h, h, wi, wh, b, b, mask=m)[0] ** 2),
     [_x((3, 2, 3)), _x((2, 2), 1), _x((8, 3), 2), _x((8, 2), 3), _x((8,), 4)], (np.array([[1.0, 1.0], [1.0, 0.0],
                                                                                         [0.0, 0.0]]),)),
]


@pytest.mark.parametrize("case", NN, ids=[c[0] for c in NN])
def test_nn_functional(case):
    name, f, args, *consts = case
    check(f, args, consts[0] if consts else (), what=name)


# --------------------------------------------------------------------------
# models and optimizers on the device: a training step, state moved with device_put

def _train_step(model, opt, state, x, y):
    def loss(m):
        return nn.cross_entropy(m(x), y)

    value, grads = fg.value_and_grad(loss)(model)
    updates, state = opt.update(grads, state, model)
    return value, fg.optim.apply_updates(model, updates), state


@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw", "rmsprop", "adagrad"])
def test_mlp_training_step_on_device(opt_name):
    from funcgrad.backend import device_put, to_numpy
    from funcgrad import tree_util

    model = nn.MLP(4, 3, hidden_sizes=(8,), key=0)
    opt = getattr(fg.optim, opt_name)(1e-2) if opt_name != "sgd" else fg.optim.sgd(1e-2, momentum=0.9)
    x = _x((5, 4)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0])
    state = opt.init(model)
    host = [_train_step(model, opt, state, x, y)]
    host.append(_train_step(host[0][1], opt, host[0][2], x, y))

    dmodel = device_put(model, "fake")
    dstate = device_put(state, "fake")  # moments and the step count move too
    dx, dy = device_put((x, y), "fake")
    for leaf in tree_util.tree_leaves((dmodel, dstate)):
        assert isinstance(leaf, fb.FakeArray)
    with fb.no_host_sync() if opt_name in ("sgd", "rmsprop", "adagrad") else contextlib.nullcontext():
        dev = [_train_step(dmodel, opt, dstate, dx, dy)]
    # after a step the optimizer keeps its step count on the host: the next step has no sync
    with fb.no_host_sync():
        dev.append(_train_step(dev[0][1], opt, dev[0][2], dx, dy))
    for (hv, hm, hs), (dv, dm, ds) in zip(host, dev):
        np.testing.assert_allclose(to_numpy(dv), hv, rtol=1e-5)
        for a, b in zip(tree_util.tree_leaves(dm), tree_util.tree_leaves(hm)):
            assert isinstance(a, fb.FakeArray)
            np.testing.assert_allclose(to_numpy(a), b, rtol=1e-5, atol=1e-6)


def test_device_put_modules_states_and_back():
    from funcgrad.backend import device_of, device_put, to_numpy
    from funcgrad import tree_util

    model = nn.Sequential(nn.Conv2d(2, 3, 3, key=0), nn.Flatten(), nn.Linear(3 * 3 * 3, 2, key=1))
    state = fg.optim.adam(1e-3).init(model)
    tree = {"model": model, "opt": state, "step": 3, "lr": np.float32(0.1)}
    moved = device_put(tree, "fake:1")
    assert type(moved["model"]) is type(model)
    assert moved["step"] == 3 and moved["lr"] == np.float32(0.1)  # scalars stay as they are
    for leaf in tree_util.tree_leaves((moved["model"], moved["opt"])):
        assert device_of(leaf) == "fake:1"
    assert device_put(moved, "fake:1")["model"].layers[0].weight is moved["model"].layers[0].weight  # no copy
    back = device_put(moved, "cpu")
    for a, b in zip(tree_util.tree_leaves(back), tree_util.tree_leaves(tree)):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(to_numpy(moved)["model"].layers[2].bias, model.layers[2].bias)


# --------------------------------------------------------------------------
# every function without a derivative, under a trace

def _ints(seed=0):
    return np.random.default_rng(seed).integers(1, 9, (2, 4))


NONDIFF_ALL = [
    ("around", lambda a: fnp.around(a, 1)), ("fix", fnp.fix), ("trunc", fnp.trunc), ("rint", fnp.rint),
    ("iscomplex", fnp.iscomplex), ("isreal", fnp.isreal), ("isinf", fnp.isinf), ("isneginf", fnp.isneginf),
    ("isposinf", fnp.isposinf), ("signbit", fnp.signbit), ("logical_not", lambda a: fnp.logical_not(a > 0)),
    ("logical_and", lambda a: fnp.logical_and(a > 0, a < 1)), ("logical_or", lambda a: fnp.logical_or(a > 0, a < -1)),
    ("logical_xor", lambda a: fnp.logical_xor(a > 0, a < 1)), ("not_equal", lambda a: fnp.not_equal(a, a[0])),
    ("greater_equal", lambda a: fnp.greater_equal(a, 0.1)), ("less_equal", lambda a: fnp.less_equal(a, 0.1)),
    ("greater", lambda a: a > 0.2), ("equal", lambda a: fnp.equal(a, a)),
    ("nanargmax", lambda a: fnp.nanargmax(a, axis=1)), ("nanargmin", lambda a: fnp.nanargmin(a)),
    ("heaviside", lambda a: fnp.heaviside(a, 0.5)), ("allclose", lambda a: fnp.allclose(a, a + 1e-12)),
    ("array_equal", lambda a: fnp.array_equal(a, a)), ("array_equiv", lambda a: fnp.array_equiv(a, a[0])),
    ("astype_int", lambda a: fnp.astype(a * 3, np.int32)), ("matrix_rank", lambda a: fnp.linalg.matrix_rank(a[:, :2])),
    ("tril_indices_from", lambda a: fnp.tril_indices_from(a[:, :2])[1]),
    ("triu_indices_from", lambda a: fnp.triu_indices_from(a[:, :2])[0]),
    ("diag_indices_from", lambda a: fnp.diag_indices_from(a[:, :2])[0]),
    ("unravel_index", lambda a: fnp.unravel_index(fnp.argmax(a, axis=1), (2, 2))[1]),
    ("ravel_multi_index", lambda a: fnp.ravel_multi_index((fnp.argmax(a, axis=1), fnp.argmin(a, axis=1)), (4, 4))),
]

NONDIFF_INT = [
    ("bitwise_and", lambda i: fnp.bitwise_and(i, 6)), ("bitwise_or", lambda i: fnp.bitwise_or(i, i[0])),
    ("bitwise_xor", lambda i: fnp.bitwise_xor(i, 3)), ("bitwise_not", fnp.bitwise_not), ("invert", fnp.invert),
    ("left_shift", lambda i: fnp.left_shift(i, 2)), ("right_shift", lambda i: fnp.right_shift(i, 1)),
    ("gcd", lambda i: fnp.gcd(i, 6)), ("lcm", lambda i: fnp.lcm(i, i[::-1])),
    ("floor_divide_int", lambda i: fnp.floor_divide(i, 3)), ("bincount", lambda i: fnp.bincount(i[0], minlength=9)),
]


@pytest.mark.parametrize("name,fn", NONDIFF_ALL, ids=[n for n, _ in NONDIFF_ALL])
def test_nondiff_all(name, fn):
    x = np.random.default_rng(12).standard_normal((2, 4))
    check(fn, [x], what=name, modes=("fwd", "traced", "vmap") if name not in ("ravel_multi_index",) else ("fwd", "traced"))


@pytest.mark.parametrize("name,fn", NONDIFF_INT, ids=[n for n, _ in NONDIFF_INT])
def test_nondiff_integers(name, fn):
    check(fn, [_ints()], what=name, modes=("fwd", "traced", "vmap"), sync_ok=name == "bincount")


@pytest.mark.parametrize("name,fn", [("nonzero", lambda a: fnp.nonzero(a)[1]),
                                     ("argwhere", lambda a: fnp.argwhere(a)),
                                     ("flatnonzero", lambda a: fnp.flatnonzero(a))])
def test_nondiff_data_dependent(name, fn):
    x = np.random.default_rng(12).standard_normal((2, 4))
    check(fn, [x], what=name, modes=("fwd", "traced"), sync_ok=True)


# Rules reached only when the cotangent (or tangent) is itself traced: second order through them.
SECOND_ORDER = [
    ("sort_sq", lambda x: fnp.sort(x, axis=1) ** 2, (2, 3)),
    ("cumsum_sq", lambda x: fnp.cumsum(x, axis=1) ** 2, (2, 3)),
    ("repeat_sq", lambda x: fnp.repeat(x, [1, 0, 3], axis=-1) ** 2, (2, 3)),
    ("take_sq", lambda x: fnp.take(x, [2, 0, 2], axis=1) ** 2, (2, 3)),
    ("slice_vmap_grad", lambda x: fg.vmap(fg.grad(lambda r: fnp.sum(r[1:] ** 3)))(x), (2, 3)),
    ("qr_complete_wide", lambda x: fnp.linalg.qr(x @ x.T + 3 * fnp.eye(2, device=device_of(x)), mode="complete")[1] ** 2,
     (2, 3)),
    ("split_vmap_grad", lambda x: fg.vmap(fg.grad(lambda r: fnp.sum(fnp.split(r, 3)[1] ** 3)))(x), (2, 3)),
    ("nan_to_num", lambda x: fnp.nan_to_num(x * x), (2, 3)),
    ("clip_sq", lambda x: fnp.clip(x, -0.5, 0.5) ** 2, (2, 3)),
    # fg.jit: a staged program called under every transform is one jit_call primitive whose
    # rules are staged programs too; all of it stays on the device
    ("jit_elementwise", fg.jit(lambda x: fnp.tanh(x) * fnp.sin(x) + x ** 2), (2, 3)),
    ("jit_reduce", fg.jit(lambda x: fnp.sum(fnp.exp(x) * x, axis=1)), (2, 3)),
    ("jit_of_grad", fg.jit(fg.grad(lambda x: fnp.sum(fnp.tanh(x) ** 3))), (2, 3)),
]


@pytest.mark.parametrize("name,f,shape", SECOND_ORDER, ids=[c[0] for c in SECOND_ORDER])
def test_second_order_paths(name, f, shape):
    check(f, [_separated(shape, 7) * 0.3], what=name)


def test_qr_modes_without_derivative():
    a = _tl.distinct_sv(4, 3)
    check(lambda x: fnp.linalg.qr(x, mode="complete"), [a], what="qr complete (tall)", modes=("fwd", "vmap"),
          rtol=1e-7, atol=1e-7)


# --------------------------------------------------------------------------
# mixing devices, missing functions, and the harness itself

def test_mixing_host_and_device_arrays_names_both_devices():
    x = fb.to_fake(np.ones(3))
    for bad in (lambda: fnp.add(x, np.ones(3)), lambda: fnp.matmul(np.ones((3, 3)), x),
                lambda: fg.grad(lambda v: fnp.sum(v * np.ones(3)))(x),
                lambda: fnp.concatenate([x, np.ones(2)]), lambda: fnp.where(x > 0, x, np.zeros(3))):
        with pytest.raises(ValueError, match=r"different devices.*(cpu.*fake:0|fake:0.*cpu)"):
            bad()
    # scalars combine with device arrays as in CuPy
    assert isinstance(fnp.add(x, 2.0) * np.float32(3) + 1, fb.FakeArray)


def test_mixing_two_device_backends_names_both():
    import types

    from funcgrad import backend

    other = types.ModuleType("othercupy")

    class OtherArray(fb.FakeArray):
        pass

    backend.register_namespace(OtherArray, other)
    x = fb.to_fake(np.ones(3))
    y = OtherArray(np.ones(3))
    with pytest.raises(ValueError, match="different devices.*fake:0.*othercupy"):
        backend.namespace_of(x, y)


def test_missing_backend_function_is_named(monkeypatch):
    monkeypatch.delattr(fake.linalg, "slogdet")
    monkeypatch.delattr(fake, "cbrt")
    a = fb.to_fake(np.eye(2) * 2.0)
    with pytest.raises(NotImplementedError, match=r"fakecupy has no function 'linalg.slogdet'.*funcgrad.numpy.linalg.slogdet"):
        fnp.linalg.slogdet(a)
    with pytest.raises(NotImplementedError, match="fakecupy has no function 'cbrt'"):
        fg.grad(lambda x: fnp.sum(fnp.cbrt(x)))(a)


def test_harness_catches_host_round_trips():
    x = np.array([0.5, 1.0])

    @fg.primitive
    def float_round_trip(v):  # a raw function reading a value back: float() of a device array
        return v * float(v.sum())

    fg.defvjp(float_round_trip, lambda g, ans, v: g * fnp.sum(v))
    with pytest.raises(fb.HostSyncError):
        check(float_round_trip, [x], modes=("fwd",))
    @fg.primitive
    def numpy_call(v):  # a raw function calling NumPy on a device array
        return v * np.sum(v)

    with pytest.raises(TypeError, match="numpy.sum was called on a fake device array"):
        check(numpy_call, [x], modes=("fwd",))
    with pytest.raises(TypeError, match="Implicit conversion"):
        check(lambda v: np.asarray(v), [x], modes=("fwd",))
    with pytest.raises(AssertionError, match="uploads"):
        check(lambda v: v * fnp.asarray(np.array([1.0, 2.0]), device=device_of(v)), [x])
    with pytest.raises(AssertionError, match="not an array of the device namespace"):
        check(lambda v: (v, np.ones(2)), [x], modes=("fwd",))


# --------------------------------------------------------------------------
# funcgrad.scipy.{linalg, signal, integrate} and the added special functions (tables from
# tests/test_scipy_*.py and tests/test_special_more.py)

import test_scipy_integrate as _tsi  # noqa: E402
import test_scipy_linalg as _tsl  # noqa: E402
import test_scipy_signal as _tss  # noqa: E402
import test_special_more as _tsm  # noqa: E402

_SCIPY_CASES = {
    **{f"linalg.{n}": _tsl.CASES[n] for n in ("solve_triangular_010", "lu_solve_0", "expm", "sqrtm_spd", "logm",
                                             "solve_sylvester")},
    # (the shape-derivative cases, names ending "_x", read series convergence back to the host:
    # tests/test_special_more.py runs them on the fake device outside no_host_sync)
    **{f"special.{n}": c for n, c in _tsm.CASES.items() if not n.endswith("_x")},
    "signal.convolve": _tss.CASES["convolve-same-(7,)-(3,)"],
    "integrate.odeint": _tsi.Case(_tsi.ode_case, _tsi.ODE_ARGS, consts=(_tsi.T,)),
}
_SCIPY_CASES["special.betainc"] = _tsm.Case(lambda x, a, b: _tsm.S.betainc(a, b, x), (_tsm.X / 3,),
                                            consts=(_tsm.X + 1, _tsm.X))
_SCIPY_CASES["special.stdtr"] = _tsm.Case(lambda x, df: _tsm.S.stdtr(df, x), (_tsm.X,), consts=(_tsm.X + 2,))


@pytest.mark.parametrize("name", sorted(_SCIPY_CASES))
def test_scipy_modules(name):
    c = _SCIPY_CASES[name]
    check(c.fn, list(c.args), list(c.consts), what=name.split(".")[-1], rtol=1e-8, atol=1e-11)


# --------------------------------------------------------------------------
# every primitive ran on the device (keep this test last in the module)

# --------------------------------------------------------------------------
# fft (table from tests/test_fft.py)

import test_fft as _tf  # noqa: E402


@pytest.mark.parametrize("name,f,kind,shape", [c for c in _tf.CASES if not c[0].endswith("freq_d")],
                         ids=[c[0] for c in _tf.CASES if not c[0].endswith("freq_d")])
def test_fft(name, f, kind, shape):
    check(lambda x: f(fnp.fft, x), [_tf.make(kind, shape)], what=name)


# --------------------------------------------------------------------------
# the rest of NumPy's namespace (table from tests/test_numpy_coverage.py)

import test_numpy_coverage as _tc  # noqa: E402

# Cases that read values on the host by their nature (where to cut, which roots, masks).
_HOST_DECISIONS = {"trim_zeros", "roots_real", "roots_complex", "real_if_close", "unique_values", "unique_counts",
                   "polydiv_q", "polydiv_r", "geomspace", "place", "putmask", "poly_roots", "piecewise"}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name,f,args", _tc.CASES, ids=_tc.IDS)
def test_numpy_namespace(name, f, args):
    modes = ("fwd", "vjp", "jvp", "hvp", "vjp2") if name in _tc.LOOP_ONLY else None
    kw = {"modes": modes} if modes else {}
    check(lambda *a: f(fnp, *a), list(args), what=name, sync_ok=name in _HOST_DECISIONS, **kw)


PASSING = [
    ("histogram", lambda x: fnp.histogram(x, bins=3), [np.linspace(-1.0, 2.0, 7)]),
    ("histogram_bin_edges", lambda x: fnp.histogram_bin_edges(x, bins=3), [np.linspace(-1.0, 2.0, 7)]),
    ("histogram2d", lambda x, y: fnp.histogram2d(x, y, bins=2), [np.linspace(0.0, 1.0, 6), np.linspace(1.0, 3.0, 6)]),
    ("intersect1d", lambda x: fnp.intersect1d(x, x[1:3]), [np.array([3.0, 1.0, 2.0, 5.0])]),
    ("union1d", lambda x: fnp.union1d(x[:2], x[1:]), [np.array([3.0, 1.0, 2.0, 5.0])]),
    ("setdiff1d", lambda x: fnp.setdiff1d(x, x[1:3]), [np.array([3.0, 1.0, 2.0, 5.0])]),
    ("setxor1d", lambda x: fnp.setxor1d(x[:3], x[1:]), [np.array([3.0, 1.0, 2.0, 5.0])]),
    ("spacing", lambda x: fnp.spacing(x) + x, [np.array([1.0, 1e5, -3.0])]),
    ("nextafter", lambda x: fnp.nextafter(x, 2.0) + x, [np.array([1.0, 1e5, -3.0])]),
    ("bitwise_count", fnp.bitwise_count, [np.array([3, 7, 255])]),
    ("packbits", fnp.packbits, [np.array([1, 0, 1, 1, 0, 0, 0, 1], dtype=np.uint8)]),
    ("unpackbits", fnp.unpackbits, [np.array([5, 255], dtype=np.uint8)]),
]


@pytest.mark.parametrize("name,f,args", PASSING, ids=[c[0] for c in PASSING])
def test_passing_primitives(name, f, args):
    check(f, args, what=name, sync_ok=True)


_SEEN: set = set()
_CALLS = [0]


@pytest.fixture(autouse=True, scope="module")
def _record_primitives():
    from funcgrad.core.batching import BatchTrace
    from funcgrad.core.forward import ForwardTrace
    from funcgrad.core.reverse import ReverseTrace

    originals = {cls: cls.process for cls in (ReverseTrace, ForwardTrace, BatchTrace)}
    # Untraced calls reach a primitive's raw function directly (a closure of its traced
    # entry point): swap that closure cell for a recording wrapper, for this module only.
    swapped = []
    for fn in _primitive_functions():
        code = getattr(fn, "__code__", None)
        if code is None or "raw" not in code.co_freevars or fn.__closure__ is None:
            continue
        cell = fn.__closure__[code.co_freevars.index("raw")]
        raw, name = cell.cell_contents, fn.primitive.name

        def recording_raw(*args, _raw=raw, _name=name, **kwargs):
            if any(type(a) is fb.FakeArray for a in args):
                _SEEN.add(_name)
            return _raw(*args, **kwargs)

        cell.cell_contents = recording_raw
        swapped.append((cell, raw))

    def recording(orig):
        def process(self, prim, args, kwargs, argnums):
            if any(type(fnp_unbox(a)) is fb.FakeArray for a in args):
                _SEEN.add(prim.name)
            return orig(self, prim, args, kwargs, argnums)

        return process

    for cls, orig in originals.items():
        cls.process = recording(orig)
    yield
    for cls, orig in originals.items():
        cls.process = orig
    for cell, raw in swapped:
        cell.cell_contents = raw


def fnp_unbox(a):
    from funcgrad.core import unbox_all

    return unbox_all(a)


def _primitive_functions():
    import importlib
    import pkgutil

    from funcgrad.core.trace import Primitive

    seen = {}
    for pkg in ("funcgrad.numpy", "funcgrad.scipy", "funcgrad.nn", "funcgrad.transforms"):
        p = importlib.import_module(pkg)
        mods = [p] + [importlib.import_module(f"{pkg}.{m.name}") for m in pkgutil.iter_modules(p.__path__)]
        for m in mods:
            for v in vars(m).values():
                if isinstance(getattr(v, "primitive", None), Primitive):
                    seen[id(v)] = v
    return list(seen.values())


def _all_primitives():
    return {fn.primitive.name for fn in _primitive_functions()}


# Primitives the suite does not reach on a device, and why.
NOT_COVERED = {
    "eig": "general eigendecomposition: no derivative rule (eigvals is covered forward/batched)",
    "minimize": "host only: cupyx.scipy has no optimize.minimize (tests/test_scipy_optimize.py checks the error)",
    "root": "host only: cupyx.scipy has no optimize.root (tests/test_scipy_optimize.py checks the error)",
    **{name: "shape-derivative series: one explicit device-to-host read per 16 terms (convergence), so not "
             "sync-free; tests/test_special_more.py::test_*_shape_derivative_on_the_fake_device"
       for name in ("gammainc_da", "gammainc_da2", "betainc_shape_derivative")},
    **{name: "fg.jit's staged cond/switch/while_loop (funcgrad/transforms/staged_control.py): choosing a "
             "branch or another iteration reads the predicate on the host, one device-to-host read per "
             "choice, as the eager cond/while_loop do (tests/test_control_flow.py checks them on the host)"
       for name in ("switch", "while")},
}


def test_every_primitive_ran_on_the_device(request):
    n_tests = sum(1 for item in request.session.items if item.module is request.module)
    if n_tests < 400 or len(_SEEN) < 100:
        pytest.skip("run the whole module to check primitive coverage")
    missing = sorted(_all_primitives() - _SEEN - set(NOT_COVERED))
    assert not missing, f"primitives never run on the fake device: {missing}"
