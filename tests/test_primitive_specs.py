"""Primitives tested through one spec each (tests/factories.py): forward values against
NumPy/SciPy, check_grads in both modes to order 2, vmap against a Python loop (and no loop
fallback), float32 in and out, and the fake device.

The table holds, grouped by family: every elementwise primitive of ``funcgrad.numpy``
(unary and binary) and the elementwise functions of ``funcgrad.scipy.special``; the
reductions (sum, mean, prod, max/min, var/std, cumsum/cumprod, the nan-reductions,
logsumexp/softmax/log_softmax); the shape ops (reshape, transpose, concatenate, stack, split
pieces, pad, flip, roll, tile, repeat, ...); linear algebra (dot, matmul, tensordot, einsum,
inv, det, slogdet, solve, cholesky, eigh values, norm, trace, ...); and indexing (getitem
patterns, take, take_along_axis, ...).

To test a new primitive, add one Spec line to its family: ``Spec(name, funcgrad_fn,
reference_fn, [domain of each argument], shapes=..., rtol=..., atol=...)``; domains are named
in tests/strategies.py (add one there if none fits: ``spd`` gives symmetric positive definite
matrices, ``square`` well-conditioned ones). Keyword arguments (axis, keepdims, ddof, a shape,
an index) and arguments that are not differentiable (a Bessel order, polygamma's n) are fixed
with a lambda, one line per case: ``Spec("sum_axis1", lambda x: fnp.sum(x, axis=1), lambda x:
np.sum(x, axis=1), ["real"], shapes=((2, 3),))``. The helpers ``_kw`` (keyword arguments),
``_both`` (one body run on funcgrad.numpy and NumPy) and ``_la`` (also given the linalg
module) write such pairs once. A function with several results is tested one result per line
(``slogdet(a)[1]``, ``eigh(a)[0]``, ``split(x, 3)[1]``); matrix inputs of cholesky/eigh are
symmetrized inside the line so that the derivative checks may perturb them in any direction.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.numpy as fnp
import funcgrad.scipy.special as fsp
from factories import CHECKS, Spec, check_spec

sp = pytest.importorskip("scipy.special")

R, P, N, U1, A1, S, PR = "real", "positive", "nonzero", "unit", "above_one", "small", "prob"
B = ((2, 3), (3,))  # broadcasting shapes for binary ops
# derivatives in a shape parameter run on a device but sync (test_special_more.py tests them there)
SYNCS = {"device": "the shape derivative is not sync-free (tested in test_special_more.py)"}

NUMPY_UNARY = [Spec(n, getattr(fnp, n), getattr(np, n), [d]) for n, d in [
    ("negative", R), ("positive", R), ("reciprocal", N),
    ("exp", R), ("expm1", R), ("exp2", R), ("log", P), ("log1p", P), ("log2", P), ("log10", P),
    ("sqrt", P), ("cbrt", P), ("square", R),
    ("sin", R), ("cos", R), ("tan", U1), ("arcsin", U1), ("arccos", U1), ("arctan", R),
    ("sinh", R), ("cosh", R), ("tanh", R), ("arcsinh", R), ("arccosh", A1), ("arctanh", U1),
    ("sinc", R), ("deg2rad", R), ("rad2deg", R), ("radians", R), ("degrees", R),
    ("abs", N), ("absolute", N), ("fabs", N),
    ("real", R), ("imag", R), ("conj", R), ("conjugate", R), ("angle", N), ("nan_to_num", R),
]]

NUMPY_BINARY = [Spec(n, getattr(fnp, n), getattr(np, n), ds, shapes=B) for n, ds in [
    ("add", [R, R]), ("subtract", [R, R]), ("multiply", [R, R]), ("divide", [R, N]),
    ("true_divide", [R, N]), ("power", [P, R]),
    ("mod", ["mod_x", "near_one"]), ("remainder", ["mod_x", "near_one"]), ("fmod", ["mod_x", "near_one"]),
    ("logaddexp", [R, R]), ("logaddexp2", [R, R]), ("arctan2", [N, N]), ("hypot", [N, N]),
    ("copysign", [N, N]),
    ("maximum", [N, S]), ("minimum", [N, S]), ("fmax", [N, S]), ("fmin", [N, S]),
]]

NUMPY_OTHER = [
    Spec("float_power", fnp.float_power, np.float_power, [P, R], shapes=B, out32=np.float64),
    Spec("where", lambda x, y: fnp.where(x > 0, x, y), lambda x, y: np.where(x > 0, x, y), [R, R], shapes=B),
    Spec("clip", lambda x: fnp.clip(x, -1.0, 1.0), lambda x: np.clip(x, -1.0, 1.0), [R]),
]

SPECIAL = [Spec(n, getattr(fsp, n), getattr(sp, n), ds, **kw) for n, ds, kw in [
    ("erf", [R], {}), ("erfc", [R], {}), ("erfcx", [R], {}), ("erfinv", [U1], {}), ("erfcinv", [PR], {}),
    ("expit", [R], {}), ("logit", [PR], {}), ("log_expit", [R], {}),
    ("gammaln", [P], {}), ("gamma", [P], {}), ("digamma", [P], {"rtol": 1e-9}),
    ("psi", [P], {"rtol": 1e-9}),
    ("xlogy", [R, P], {}), ("xlog1py", [R, P], {}), ("i0", [R], {}), ("i1", [R], {}),
    ("betaln", [P, P], {}), ("beta", [P, P], {"rtol": 1e-9}), ("rgamma", [P], {"rtol": 1e-9}),
    ("gammasgn", [N], {}),
    ("gammainc", [P, P], {"rtol": 1e-8, "skip": SYNCS}),
    ("gammaincc", [P, P], {"rtol": 1e-8, "skip": SYNCS}),
    ("ndtr", [R], {}), ("ndtri", [PR], {}), ("log_ndtr", [R], {}),
    ("entr", [P], {}), ("rel_entr", [P, P], {}), ("kl_div", [P, P], {}),
    ("j0", [P], {}), ("j1", [P], {}), ("y0", [P], {}), ("y1", [P], {}),
    ("betainc", [P, P, PR], {"rtol": 1e-8, "skip": SYNCS}),
    ("stdtr", [A1, R], {"rtol": 1e-8, "skip": SYNCS}),
]] + [
    Spec("polygamma", lambda x: fsp.polygamma(1, x), lambda x: sp.polygamma(1, x), [P], rtol=1e-9),
    Spec("multigammaln", lambda a: fsp.multigammaln(a, 2), lambda a: sp.multigammaln(a, 2), [A1]),
    Spec("zeta", lambda q: fsp.zeta(3.0, q), lambda q: sp.zeta(3.0, q), [P], rtol=1e-9),
    Spec("jv", lambda x: fsp.jv(1.5, x), lambda x: sp.jv(1.5, x), [P]),
    Spec("yv", lambda x: fsp.yv(1.5, x), lambda x: sp.yv(1.5, x), [P]),
    Spec("iv", lambda x: fsp.iv(1.5, x), lambda x: sp.iv(1.5, x), [P]),
    Spec("kv", lambda x: fsp.kv(1.5, x), lambda x: sp.kv(1.5, x), [P]),
    Spec("ive", lambda x: fsp.ive(1.5, x), lambda x: sp.ive(1.5, x), [N]),
]



def _kw(mod_f, mod_r, name, domain, shape, **kw):
    """A Spec for ``name`` of ``mod_f`` vs ``mod_r`` with keyword arguments fixed."""
    tag = "_".join(f"{k}{v}" for k, v in kw.items()).replace(" ", "").replace("(", "").replace(")", "").replace(",", "-")
    return Spec(f"{name}_{tag}" if tag else name, lambda x: getattr(mod_f, name)(x, **kw),
                lambda x: getattr(mod_r, name)(x, **kw), [domain], shapes=(shape,))


M = (2, 3)  # a small matrix shape for reductions and shape ops

# reductions: keyword arguments (axis, keepdims, ddof) fixed per line
REDUCTIONS = [_kw(fnp, np, n, d, shape, **kw) for n, d, shape, kw in [
    ("sum", R, M, {}), ("sum", R, M, {"axis": 1}), ("sum", R, (2, 3, 2), {"axis": (0, 2), "keepdims": True}),
    ("mean", R, M, {}), ("mean", R, M, {"axis": 0}), ("mean", R, M, {"axis": -1, "keepdims": True}),
    ("prod", N, M, {}), ("prod", N, M, {"axis": 1}),
    ("max", R, M, {}), ("max", R, M, {"axis": 1}), ("min", R, M, {}), ("min", R, M, {"axis": 0}),
    ("amax", R, M, {"axis": 0}), ("amin", R, M, {"axis": 1}),
    ("var", R, M, {}), ("var", R, M, {"axis": 1, "ddof": 1}), ("std", R, M, {}), ("std", R, M, {"axis": 0, "ddof": 1}),
    ("cumsum", R, M, {"axis": 1}), ("cumsum", R, M, {}), ("cumprod", N, M, {"axis": 0}), ("cumprod", N, (4,), {}),
    ("nansum", R, M, {"axis": 1}), ("nanmean", R, M, {"axis": 0}), ("nanprod", N, M, {"axis": 1}),
    ("nanmax", R, M, {"axis": 1}), ("nanmin", R, M, {}), ("nanvar", R, M, {"axis": 0}), ("nanstd", R, M, {"axis": 1}),
    ("average", R, M, {"axis": 1}), ("ptp", R, M, {"axis": 1}),
    ("median", R, (3, 3), {"axis": 1}), ("trapezoid", R, M, {"axis": 1}), ("diff", R, M, {"axis": 1}),
]] + [_kw(fsp, sp, n, R, shape, **kw) for n, shape, kw in [
    ("logsumexp", M, {}), ("logsumexp", M, {"axis": 1}), ("logsumexp", M, {"axis": 0, "keepdims": True}),
    ("softmax", M, {"axis": 1}), ("softmax", M, {"axis": 0}), ("log_softmax", M, {"axis": 1}),
    ("log_softmax", M, {"axis": 0}),
]] + [
    Spec("logcumsumexp_axis1", lambda x: fsp.logcumsumexp(x, 1),
         lambda x: np.logaddexp.accumulate(x, axis=1), [R], shapes=((3, 5),)),
    Spec("logcumsumexp_axis0", lambda x: fsp.logcumsumexp(x, 0),
         lambda x: np.logaddexp.accumulate(x, axis=0), [R], shapes=((4, 2),)),
]


def _both(name, fn, domains, shapes):
    """A Spec whose body ``fn(module, *args)`` runs on funcgrad.numpy and, as reference, NumPy."""
    return Spec(name, lambda *a: fn(fnp, *a), lambda *a: fn(np, *a), domains, shapes=shapes)


# shape ops: one line per case (keyword arguments fixed in the body)
SHAPE_OPS = [_both(n, f, ds, sh) for n, f, ds, sh in [
    ("reshape", lambda m, x: m.reshape(x, (3, 2)), [R], [M]),
    ("reshape_minus1", lambda m, x: m.reshape(x, (-1,)), [R], [(2, 3, 2)]),
    ("ravel", lambda m, x: m.ravel(x), [R], [M]),
    ("transpose", lambda m, x: m.transpose(x), [R], [M]),
    ("transpose_axes", lambda m, x: m.transpose(x, (2, 0, 1)), [R], [(2, 3, 2)]),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), [R], [(2, 3, 2)]),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1), [R], [(2, 3, 2)]),
    ("expand_dims", lambda m, x: m.expand_dims(x, 1), [R], [M]),
    ("squeeze", lambda m, x: m.squeeze(x, axis=1), [R], [(2, 1, 3)]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 2, 3)), [R], [M]),
    ("concatenate", lambda m, x, y: m.concatenate([x, y]), [R, R], [M, (1, 3)]),
    ("concatenate_axis1", lambda m, x, y: m.concatenate([x, y], axis=1), [R, R], [M, (2, 2)]),
    ("stack", lambda m, x, y: m.stack([x, y]), [R, R], [M, M]),
    ("stack_axis_last", lambda m, x, y: m.stack([x, y], axis=-1), [R, R], [M, M]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [R, R], [M, M]),
    ("vstack", lambda m, x, y: m.vstack([x, y]), [R, R], [M, M]),
    ("split_piece", lambda m, x: m.split(x, 3, axis=1)[1], [R], [M]),
    ("split_sections", lambda m, x: m.split(x, [1, 3])[2], [R], [(4, 2)]),
    ("array_split_piece", lambda m, x: m.array_split(x, 2)[0], [R], [(5,)]),
    ("pad", lambda m, x: m.pad(x, ((1, 0), (0, 2))), [R], [M]),
    ("pad_edge", lambda m, x: m.pad(x, 1, mode="edge"), [R], [M]),
    ("flip", lambda m, x: m.flip(x), [R], [M]),
    ("flip_axis", lambda m, x: m.flip(x, axis=1), [R], [M]),
    ("roll", lambda m, x: m.roll(x, 1), [R], [M]),
    ("roll_axis", lambda m, x: m.roll(x, -1, axis=0), [R], [M]),
    ("rot90", lambda m, x: m.rot90(x), [R], [M]),
    ("tile", lambda m, x: m.tile(x, (2, 1)), [R], [M]),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1), [R], [M]),
    ("repeat_flat", lambda m, x: m.repeat(x, 2), [R], [M]),
    ("tril", lambda m, x: m.tril(x), [R], [(3, 3)]),
    ("triu", lambda m, x: m.triu(x, 1), [R], [(3, 3)]),
    ("diag", lambda m, x: m.diag(x), [R], [(3,)]),
    ("diagonal", lambda m, x: m.diagonal(x), [R], [(3, 3)]),
    ("atleast_2d", lambda m, x: m.atleast_2d(x), [R], [(3,)]),
]]


def _la(name, fn, domains, shapes, **kw):
    """Like _both, with ``fn(module, linalg, *args)``."""
    return Spec(name, lambda *a: fn(fnp, fnp.linalg, *a), lambda *a: fn(np, np.linalg, *a), domains,
                shapes=shapes, **kw)


def _sym(x):  # symmetric part: derivative checks perturb an SPD input in any direction
    return (x + x.swapaxes(-1, -2)) / 2


SQ, PD, V3 = "square", "spd", (3,)
# linear algebra: multiple results reduced to one array per line
LINALG = [_la(n, f, ds, sh, **kw) for n, f, ds, sh, kw in [
    ("dot", lambda m, la, a, b: m.dot(a, b), [R, R], [M, (3, 2)], {}),
    ("dot_vec", lambda m, la, a, b: m.dot(a, b), [R, R], [V3, V3], {}),
    ("matmul", lambda m, la, a, b: m.matmul(a, b), [R, R], [(2, 2, 3), (3, 2)], {}),
    ("matmul_vec", lambda m, la, a, b: m.matmul(a, b), [R, R], [M, V3], {}),
    ("inner", lambda m, la, a, b: m.inner(a, b), [R, R], [M, V3], {}),
    ("outer", lambda m, la, a, b: m.outer(a, b), [R, R], [V3, (2,)], {}),
    ("vdot", lambda m, la, a, b: m.vdot(a, b), [R, R], [M, M], {}),
    ("kron", lambda m, la, a, b: m.kron(a, b), [R, R], [(2, 2), (2,)], {}),
    ("cross", lambda m, la, a, b: m.cross(a, b), [R, R], [V3, V3], {}),
    ("tensordot", lambda m, la, a, b: m.tensordot(a, b, axes=1), [R, R], [M, (3, 2)], {}),
    ("tensordot_axes", lambda m, la, a, b: m.tensordot(a, b, axes=([0, 1], [1, 0])), [R, R], [M, (3, 2)], {}),
    ("einsum_matmul", lambda m, la, a, b: m.einsum("ij,jk->ik", a, b), [R, R], [M, (3, 2)], {}),
    ("einsum_trace", lambda m, la, a: m.einsum("ii", a), [R], [(3, 3)], {}),
    ("einsum_batch", lambda m, la, a, b: m.einsum("bij,bj->bi", a, b), [R, R], [(2, 2, 3), M], {}),
    ("trace", lambda m, la, a: m.trace(a), [R], [(3, 3)], {}),
    ("inv", lambda m, la, a: la.inv(a), [SQ], [(3, 3)], {"rtol": 1e-9}),
    ("det", lambda m, la, a: la.det(a), [SQ], [(3, 3)], {"rtol": 1e-9}),
    ("slogdet_logabsdet", lambda m, la, a: la.slogdet(a)[1], [SQ], [(3, 3)], {"rtol": 1e-9}),
    ("solve", lambda m, la, a, b: la.solve(a, b), [SQ, R], [(3, 3), (3, 2)], {"rtol": 1e-9}),
    ("solve_vec", lambda m, la, a, b: la.solve(a, b), [SQ, R], [(3, 3), V3], {"rtol": 1e-9}),
    ("cholesky", lambda m, la, a: la.cholesky(_sym(a)), [PD], [(3, 3)], {"rtol": 1e-9}),
    ("eigvalsh", lambda m, la, a: la.eigvalsh(_sym(a)), [PD], [(3, 3)], {"rtol": 1e-9}),
    ("eigh_values", lambda m, la, a: la.eigh(_sym(a))[0], [PD], [(3, 3)], {"rtol": 1e-9}),
    ("norm", lambda m, la, a: la.norm(a), [R], [M], {}),
    ("norm_vec_axis", lambda m, la, a: la.norm(a, axis=1), [R], [M], {}),
    ("norm_ord1", lambda m, la, a: la.norm(a, ord=1), [N], [V3], {}),
    ("matrix_power", lambda m, la, a: la.matrix_power(a, 3), [R], [(2, 2)], {}),
    ("pinv", lambda m, la, a: la.pinv(a), [R], [(3, 2)], {"rtol": 1e-8, "atol": 1e-10}),
    ("multi_dot", lambda m, la, a, b: la.multi_dot([a, b, a]), [R, R], [M, (3, 2)], {}),
]]

IDX = np.array([2, 0, 2])  # repeated index: its gradient adds up
ORDER = np.array([[1, 0, 2], [2, 2, 0]])
# indexing: getitem patterns, take, take_along_axis, ... (the index is a constant of the line)
INDEXING = [_both(n, f, [R], [sh]) for n, f, sh in [
    ("getitem_int", lambda m, x: x[1], M),
    ("getitem_slice", lambda m, x: x[:, 1:], M),
    ("getitem_step", lambda m, x: x[::-2], (5,)),
    ("getitem_ellipsis_newaxis", lambda m, x: x[..., None, 0], (2, 3, 2)),
    ("getitem_int_array", lambda m, x: x[IDX], (3, 2)),
    ("getitem_two_arrays", lambda m, x: x[IDX, np.array([0, 1, 1])], (3, 2)),
    ("getitem_bool_mask", lambda m, x: x[np.array([True, False, True])], (3, 2)),
    ("getitem_mixed", lambda m, x: x[1:, IDX], (2, 3)),
    ("take", lambda m, x: m.take(x, IDX), M),
    ("take_axis", lambda m, x: m.take(x, IDX, axis=1), M),
    ("take_along_axis", lambda m, x: m.take_along_axis(x, ORDER, axis=1), M),
    ("compress", lambda m, x: m.compress([True, False, True], x, axis=1), M),
    ("sort", lambda m, x: m.sort(x, axis=1), M),
]]

def _sl(name, fn, domain, **kw):
    """A funcgrad.scipy.linalg line ``fn(linalg_module, a)`` on one 2 x 2 matrix."""
    import scipy.linalg

    import funcgrad.scipy.linalg as fsl

    return Spec(name, lambda a: fn(fsl, a), lambda a: fn(scipy.linalg, a), [domain], shapes=((2, 2),), **kw)


NEG = "negative_eigenvalue"
COMPLEX_OUT = {"out32": "complex64", "skip": {"float32": "complex result; float32 tested in test_scipy_linalg.py"}}
# matrix functions, also where the root is complex (issue 31: sqrtm's second reverse derivative)
MATRIX_FUNCTIONS = [_sl(n, f, d, **kw) for n, f, d, kw in [
    ("expm", lambda la, a: la.expm(a), NEG, {}),
    ("sqrtm", lambda la, a: la.sqrtm(a), PD, {"rtol": 1e-8}),
    ("logm", lambda la, a: la.logm(a), PD, {"rtol": 1e-8}),
    ("fractional_matrix_power", lambda la, a: la.fractional_matrix_power(a, 0.3), PD, {"rtol": 1e-8}),
    ("sqrtm_complex_root", lambda la, a: la.sqrtm(a), NEG, {"rtol": 1e-8, **COMPLEX_OUT}),
    ("logm_complex_root", lambda la, a: la.logm(a), NEG, {"rtol": 1e-8, **COMPLEX_OUT}),
    ("fractional_matrix_power_complex_root", lambda la, a: la.fractional_matrix_power(a, -0.7), NEG,
     {"rtol": 1e-8, **COMPLEX_OUT}),
]]

SPECS = (NUMPY_UNARY + NUMPY_BINARY + NUMPY_OTHER + SPECIAL + REDUCTIONS + SHAPE_OPS + LINALG + INDEXING
         + MATRIX_FUNCTIONS)


def test_table_covers_the_elementwise_namespace():
    """Every elementwise primitive of funcgrad.numpy has a spec (adding one without a spec fails)."""
    from funcgrad.numpy import elementwise

    missing = sorted(set(elementwise.__all__) - {s.name for s in SPECS})
    assert missing == [], f"elementwise primitives without a Spec: {missing}"


def test_table_covers_the_special_functions():
    """Every function of funcgrad.scipy.special except the reductions has a spec."""
    missing = sorted(set(fsp.__all__) - {s.name.split("_axis")[0].split("_keepdims")[0] for s in SPECS})
    assert missing == [], f"special functions without a Spec: {missing}"


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_spec(spec, check):
    check_spec(spec, check)
