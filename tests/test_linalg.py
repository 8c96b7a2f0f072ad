"""Tests for funcgrad.numpy.linalg: products, numpy.linalg, their derivatives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

la = fnp.linalg

F64, F32, C128 = np.float64, np.float32, np.complex128
REAL = [F64, F32]


# --------------------------------------------------------------------------
# inputs: well-conditioned, with distinct eigen/singular values

def _rng(seed=0):
    return np.random.default_rng(seed)


def _orth(rng, n, batch=()):
    q, _ = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q


def well_conditioned(n, batch=(), dt=F64, seed=0):
    """Q diag(1.5 .. n+0.5) Q^T plus a small non-symmetric part: invertible, cond ~ n."""
    rng = _rng(seed)
    q = _orth(rng, n, batch)
    a = (q * (np.arange(n) + 1.5)) @ np.swapaxes(q, -1, -2) + 0.2 * rng.standard_normal(batch + (n, n))
    if np.dtype(dt).kind == "c":
        a = a + 0.2j * rng.standard_normal(batch + (n, n))
    return a.astype(dt)


def spd(n, batch=(), dt=F64, seed=0):
    """Symmetric (Hermitian) positive definite with eigenvalues 1.5, 2.5, ..."""
    rng = _rng(seed)
    q = _orth(rng, n, batch)
    if np.dtype(dt).kind == "c":
        q = q @ np.linalg.qr(rng.standard_normal(batch + (n, n)) + 1j * rng.standard_normal(batch + (n, n)))[0]
    a = (q * (np.arange(n) + 1.5)) @ np.conj(np.swapaxes(q, -1, -2))
    a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    return a.astype(dt)


def distinct_sv(m, n, batch=(), dt=F64, seed=0):
    """An m x n matrix with singular values 1.5, 2.5, ... (distinct, far from 0)."""
    rng = _rng(seed)
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal(batch + (m, k)))[0]
    v = np.linalg.qr(rng.standard_normal(batch + (n, k)))[0]
    a = (u * (np.arange(k) + 1.5)) @ np.swapaxes(v, -1, -2)
    if np.dtype(dt).kind == "c":
        a = a * np.exp(0.3j) + 0.1j * rng.standard_normal(batch + (m, n))
    return a.astype(dt)


def randn(*shape, dt=F64, seed=0):
    rng = _rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dt)


def check(f, args, dt, order=2, **kw):
    check_grads(f, tuple(args), order=order, modes=("fwd", "rev"), **kw)


# --------------------------------------------------------------------------
# products: forward values

def test_product_values_match_numpy():
    a, b = randn(2, 3, 4), randn(5, 4, 2, seed=1)
    np.testing.assert_allclose(fnp.dot(a, b), np.dot(a, b))
    np.testing.assert_allclose(fnp.matmul(a, randn(4, 2)), np.matmul(a, randn(4, 2)))
    np.testing.assert_allclose(fnp.tensordot(a, b, axes=([2], [1])), np.tensordot(a, b, axes=([2], [1])))
    np.testing.assert_allclose(fnp.inner(a, randn(6, 4)), np.inner(a, randn(6, 4)))
    z = randn(6, dt=C128)
    np.testing.assert_allclose(fnp.vdot(z, z[::-1]), np.vdot(z, z[::-1]))
    np.testing.assert_allclose(fnp.outer(a, b[0]), np.outer(a, b[0]))
    np.testing.assert_allclose(fnp.kron(randn(2, 3), randn(4)), np.kron(randn(2, 3), randn(4)))
    np.testing.assert_allclose(fnp.kron(randn(2, 1, 3), randn(3, 2)), np.kron(randn(2, 1, 3), randn(3, 2)))
    x, y = randn(4, 3), randn(4, 3, seed=2)
    np.testing.assert_allclose(fnp.cross(x, y), np.cross(x, y))
    np.testing.assert_allclose(fnp.cross(x.T, y.T, axis=0), np.cross(x.T, y.T, axis=0))
    np.testing.assert_allclose(fnp.vecdot(x, y), np.vecdot(x, y))
    np.testing.assert_allclose(fnp.matvec(a, randn(4)), np.matvec(a, randn(4)))
    np.testing.assert_allclose(fnp.vecmat(randn(3, dt=C128), a[0]), np.vecmat(randn(3, dt=C128), a[0]))
    assert fnp.dot(2.0, 3.0) == 6.0
    mats = [randn(3, 4), randn(4, 5), randn(5, 2), randn(2, 6)]
    np.testing.assert_allclose(la.multi_dot(mats), np.linalg.multi_dot(mats))
    np.testing.assert_allclose(la.multi_dot([randn(4), mats[1], randn(5)]), np.linalg.multi_dot([randn(4), mats[1], randn(5)]))


def test_products_exported_at_top_level_only():
    for name in ["dot", "matmul", "tensordot", "einsum", "inner", "vdot", "outer", "kron", "cross"]:
        assert getattr(fnp, name) is getattr(la, name)
    assert not hasattr(fnp, "inv") and not hasattr(fnp, "svd")
    assert "inv" not in la.__all__


def test_every_numpy_linalg_name_exists():
    names = [n for n in dir(np.linalg) if not n.startswith("_") and n != "test"]
    assert [n for n in names if not hasattr(la, n)] == []
    x = randn(2, 3, 3)
    np.testing.assert_allclose(la.trace(x), np.linalg.trace(x))
    np.testing.assert_allclose(la.diagonal(x), np.linalg.diagonal(x))


def test_dtypes_kept_forward():
    a = well_conditioned(3, dt=F32)
    for out in [fnp.matmul(a, a), la.inv(a), la.det(a), la.solve(a, a[0]), la.eigvalsh(a), la.norm(a),
                la.svd(a, compute_uv=False), la.pinv(a), fnp.einsum("ij,jk", a, a)]:
        assert out.dtype == np.float32


# --------------------------------------------------------------------------
# products: derivatives

PRODUCT_CASES = {
    "matmul": (fnp.matmul, lambda dt: (randn(3, 4, dt=dt), randn(4, 2, dt=dt, seed=1))),
    "matmul_batched": (fnp.matmul, lambda dt: (randn(2, 1, 3, 4, dt=dt), randn(3, 4, 2, dt=dt, seed=1))),
    "matmul_vec_mat": (fnp.matmul, lambda dt: (randn(4, dt=dt), randn(2, 4, 3, dt=dt, seed=1))),
    "matmul_mat_vec": (fnp.matmul, lambda dt: (randn(2, 3, 4, dt=dt), randn(4, dt=dt, seed=1))),
    "matmul_vec_vec": (fnp.matmul, lambda dt: (randn(4, dt=dt), randn(4, dt=dt, seed=1))),
    "dot_nd_md": (fnp.dot, lambda dt: (randn(2, 3, 4, dt=dt), randn(2, 4, 3, dt=dt, seed=1))),
    "dot_vec_md": (fnp.dot, lambda dt: (randn(4, dt=dt), randn(2, 4, 3, dt=dt, seed=1))),
    "dot_nd_vec": (fnp.dot, lambda dt: (randn(2, 3, 4, dt=dt), randn(4, dt=dt, seed=1))),
    "dot_vec_vec": (fnp.dot, lambda dt: (randn(4, dt=dt), randn(4, dt=dt, seed=1))),
    "dot_mat_mat": (fnp.dot, lambda dt: (randn(3, 4, dt=dt), randn(4, 2, dt=dt, seed=1))),
    "dot_scalar": (fnp.dot, lambda dt: (randn(dt=dt), randn(3, 2, dt=dt, seed=1))),
    "tensordot_int": (lambda a, b: fnp.tensordot(a, b, 2), lambda dt: (randn(2, 3, 4, dt=dt), randn(3, 4, 2, dt=dt, seed=1))),
    "tensordot_pairs": (lambda a, b: fnp.tensordot(a, b, axes=([2, 0], [0, 1])),
                        lambda dt: (randn(2, 3, 4, dt=dt), randn(4, 2, 5, dt=dt, seed=1))),
    "inner": (fnp.inner, lambda dt: (randn(2, 3, 4, dt=dt), randn(5, 4, dt=dt, seed=1))),
    "vdot": (fnp.vdot, lambda dt: (randn(2, 3, dt=dt), randn(6, dt=dt, seed=1))),
    "outer": (fnp.outer, lambda dt: (randn(2, 3, dt=dt), randn(4, dt=dt, seed=1))),
    "kron": (fnp.kron, lambda dt: (randn(2, 3, dt=dt), randn(3, 2, dt=dt, seed=1))),
    "cross": (fnp.cross, lambda dt: (randn(4, 3, dt=dt), randn(3, dt=dt, seed=1))),
    "cross_2d": (fnp.cross, lambda dt: (randn(4, 3, dt=dt), randn(4, 2, dt=dt, seed=1))),
    "vecdot": (fnp.vecdot, lambda dt: (randn(4, 3, dt=dt), randn(3, dt=dt, seed=1))),
    "matvec": (fnp.matvec, lambda dt: (randn(2, 3, 4, dt=dt), randn(4, dt=dt, seed=1))),
    "vecmat": (fnp.vecmat, lambda dt: (randn(3, dt=dt), randn(2, 3, 4, dt=dt, seed=1))),
    "multi_dot": (lambda a, b, c: la.multi_dot([a, b, c]),
                  lambda dt: (randn(3, 4, dt=dt), randn(4, 2, dt=dt, seed=1), randn(2, dt=dt, seed=2))),
}


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors are deprecated")  # numpy.cross, 2-D case
@pytest.mark.parametrize("dt", [F64, F32, C128], ids=str)
@pytest.mark.parametrize("name", sorted(PRODUCT_CASES))
def test_product_grads(name, dt):
    f, make = PRODUCT_CASES[name]
    check(f, make(dt), dt)


def test_matmul_mixed_real_complex_and_operator():
    a, z = randn(3, 3), randn(3, 2, dt=C128)
    check(fnp.matmul, (a, z), C128)
    g = fg.grad(lambda a: fnp.sum(a @ a))(a)
    np.testing.assert_allclose(g, np.ones((3, 3)) @ a.T + a.T @ np.ones((3, 3)))


def test_vdot_conjugates_first_argument():
    a, b = randn(3, dt=C128), randn(3, dt=C128, seed=1)
    assert np.allclose(fnp.vdot(a, b), np.sum(np.conj(a) * b))
    # out is anti-linear in a: jvp along v is vdot(v, b)
    v = randn(3, dt=C128, seed=2)
    _, t = fg.jvp(fnp.vdot, (a, b), (v, np.zeros(3, C128)))
    assert np.allclose(t, np.vdot(v, b))


def test_dot_and_inner_with_list_operands():
    x = randn(3)
    g = fg.grad(lambda x: fnp.dot([1.0, 2.0, 3.0], x))(x)
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])
    g = fg.grad(lambda x: fnp.sum(fnp.matmul([[1.0, 2.0, 3.0]], x)))(x)
    np.testing.assert_allclose(g, [1.0, 2.0, 3.0])


# --- matmul broadcasting, generated -------------------------------------------------------

@st.composite
def matmul_shapes(draw):
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    n, k, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))

    def operand_batch():
        drop = draw(st.integers(0, len(batch)))
        return tuple(1 if draw(st.booleans()) else d for d in batch[drop:])

    a = (k,) if draw(st.integers(0, 5)) == 0 else operand_batch() + (n, k)
    b = (k,) if draw(st.integers(0, 5)) == 0 else operand_batch() + (k, m)
    return a, b


@settings(max_examples=30, deadline=None)
@given(matmul_shapes(), st.sampled_from([F64, F32]))
def test_matmul_broadcasting_generated(shapes, dt):
    sa, sb = shapes
    a, b = randn(*sa, dt=dt), randn(*sb, dt=dt, seed=1)
    out = fnp.matmul(a, b)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-5)
    assert out.dtype == dt
    check(fnp.matmul, (a, b), dt, order=1)
    if len(sa) <= 2 and len(sb) <= 2:
        np.testing.assert_allclose(fnp.dot(a, b), np.dot(a, b), rtol=1e-5)
        check(fnp.dot, (a, b), dt, order=1)


# --------------------------------------------------------------------------
# einsum

EINSUM_EXPLICIT = [
    ("ij,jk->ik", lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("ij,jk", lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("ii->i", np.diagonal, [(3, 3)]),
    ("ii", np.trace, [(3, 3)]),
    ("ij->ji", np.transpose, [(3, 4)]),
    ("ij->", np.sum, [(3, 4)]),
    ("i,j->ij", np.outer, [(3,), (4,)]),
    ("i,i", np.dot, [(3,), (3,)]),
    ("...ij,...jk->...ik", np.matmul, [(2, 1, 3, 4), (5, 4, 2)]),
    ("bij,bjk->bik", np.matmul, [(2, 3, 4), (2, 4, 2)]),
    ("...ii->...i", lambda a: np.diagonal(a, 0, -2, -1), [(2, 3, 3)]),
    ("ij,ij->i", lambda a, b: np.sum(a * b, 1), [(3, 4), (3, 4)]),
    ("i...->...", lambda a: np.sum(a, 0), [(3, 2, 4)]),
    ("ij,jk,kl->il", lambda a, b, c: a @ b @ c, [(2, 3), (3, 4), (4, 2)]),
    ("iij->ij", lambda a: np.einsum("iij->ij", a), [(3, 3, 2)]),
    ("ij,j->i", lambda a, b: a @ b, [(3, 1), (4,)]),  # size-1 broadcast of j
    ("Ba,aC", lambda a, b: a @ b, [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("subs,ref,shapes", EINSUM_EXPLICIT, ids=[c[0] for c in EINSUM_EXPLICIT])
def test_einsum_against_explicit_products(subs, ref, shapes):
    ops = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    if subs == "ij,j->i":
        expected = np.broadcast_to(ops[0], (3, 4)) @ ops[1]
    else:
        expected = ref(*ops)
    np.testing.assert_allclose(fnp.einsum(subs, *ops), expected, atol=1e-12)
    np.testing.assert_allclose(fnp.einsum(subs, *ops), np.einsum(subs, *ops), atol=1e-12)
    check(lambda *xs: fnp.einsum(subs, *xs), ops, F64)


@pytest.mark.parametrize("dt", [F32, C128], ids=str)
def test_einsum_dtypes(dt):
    a, b = randn(2, 3, 3, dt=dt), randn(3, 4, dt=dt, seed=1)
    check(lambda a, b: fnp.einsum("bii,ij->bj", a, b), (a, b), dt)


def test_einsum_interleaved_and_errors():
    a, b = randn(2, 3), randn(3, 4)
    np.testing.assert_allclose(fnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    np.testing.assert_allclose(fnp.einsum(a, [Ellipsis, 1], b, [1, 2]), a @ b)
    # untraced calls go straight to NumPy (its own errors); traced calls are checked here
    with pytest.raises(ValueError):
        fnp.einsum("ijk->i", a)

    def traced(subs, *ops, **kw):
        return fg.jvp(lambda x: fnp.einsum(subs, x, *ops[1:], **kw), (ops[0],), (ops[0],))

    with pytest.raises(ValueError, match="operand"):
        traced("ij,jk->ik", a)
    with pytest.raises(ValueError, match="dimension"):
        traced("ijk->i", a)
    with pytest.raises(ValueError, match="invalid character"):
        traced("i$,jk", a, b)
    with pytest.raises(ValueError, match="names no input"):
        traced("ij->iz", a)
    with pytest.raises(ValueError, match="repeats a label"):
        traced("ij->ii", a)
    with pytest.raises(ValueError, match=r"no '\.\.\.'"):
        traced("...j->j", a)
    with pytest.raises(TypeError, match="optimize"):
        traced("ij", a, dtype=np.float32)


@st.composite
def einsum_specs(draw):
    letters = "abcd"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    n_ops = draw(st.integers(1, 3))
    terms = [draw(st.lists(st.sampled_from(letters), max_size=3)) for _ in range(n_ops)]
    ell = draw(st.booleans())
    batch = [draw(st.integers(1, 2)) for _ in range(draw(st.integers(0, 2)))] if ell else []
    shapes = []
    for t in terms:
        drop = draw(st.integers(0, len(batch)))
        shapes.append(tuple(batch[drop:]) + tuple(sizes[c] for c in t))
    used = sorted(set("".join("".join(t) for t in terms)))
    if draw(st.booleans()):
        out = draw(st.permutations(used))
        out = out[: draw(st.integers(0, len(out)))]
        arrow = "->" + ("..." if ell else "") + "".join(out)
    else:
        arrow = ""
    subs = ",".join(("..." if ell else "") + "".join(t) for t in terms) + arrow
    return subs, shapes


@settings(max_examples=35, deadline=None)
@given(einsum_specs())
def test_einsum_generated(spec):
    subs, shapes = spec
    ops = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    np.testing.assert_allclose(fnp.einsum(subs, *ops), np.einsum(subs, *ops), atol=1e-12)
    check(lambda *xs: fnp.einsum(subs, *xs), ops, F64, order=1)


def test_einsum_second_order_generated_sample():
    a, b = randn(2, 3, 3), randn(3, 2, seed=1)
    check(lambda a, b: fnp.einsum("...ii,ij->...j", a, b) ** 2, (a, b), F64)


# --------------------------------------------------------------------------
# numpy.linalg: forward values

def test_linalg_values_match_numpy():
    a = well_conditioned(4, (2,))
    s = spd(4, (2,))
    m = distinct_sv(5, 3)
    b = randn(4, seed=3)
    np.testing.assert_allclose(la.inv(a), np.linalg.inv(a))
    np.testing.assert_allclose(la.solve(a, b), np.linalg.solve(a, b))
    np.testing.assert_allclose(la.solve(a, randn(4, 2)), np.linalg.solve(a, randn(4, 2)))
    np.testing.assert_allclose(la.det(a), np.linalg.det(a))
    sign, logdet = la.slogdet(a)
    np.testing.assert_allclose(sign, np.linalg.slogdet(a).sign)
    np.testing.assert_allclose(logdet, np.linalg.slogdet(a).logabsdet)
    np.testing.assert_allclose(la.cholesky(s), np.linalg.cholesky(s))
    np.testing.assert_allclose(la.cholesky(s, upper=True), np.linalg.cholesky(s, upper=True), atol=1e-12)
    w, v = la.eigh(s)
    np.testing.assert_allclose(w, np.linalg.eigh(s).eigenvalues)
    np.testing.assert_allclose(np.abs(v), np.abs(np.linalg.eigh(s).eigenvectors), atol=1e-12)
    assert isinstance(la.eigh(s), tuple) and la.eigh(s)._fields == ("eigenvalues", "eigenvectors")
    np.testing.assert_allclose(la.eigvalsh(s, UPLO="U"), np.linalg.eigvalsh(s, UPLO="U"))
    u, sv, vh = la.svd(m, full_matrices=False)
    ref = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(sv, ref.S)
    np.testing.assert_allclose(u, ref.U)
    np.testing.assert_allclose(vh, ref.Vh)
    assert la.svd(m).U.shape == (5, 5)
    np.testing.assert_allclose(la.svd(m, compute_uv=False), np.linalg.svd(m, compute_uv=False))
    np.testing.assert_allclose(la.svdvals(m), np.linalg.svdvals(m))
    for mode in ["reduced", "complete"]:
        q, r = la.qr(m, mode=mode)
        rq, rr = np.linalg.qr(m, mode=mode)
        np.testing.assert_allclose(q, rq)
        np.testing.assert_allclose(r, rr)
    np.testing.assert_allclose(la.qr(m, mode="r"), np.linalg.qr(m, mode="r"))
    np.testing.assert_allclose(la.qr(m, mode="raw")[0], np.linalg.qr(m, mode="raw")[0])
    np.testing.assert_allclose(la.pinv(m), np.linalg.pinv(m))
    np.testing.assert_allclose(la.pinv(m, rtol=1e-3), np.linalg.pinv(m, rtol=1e-3))
    np.testing.assert_allclose(la.pinv(s, hermitian=True), np.linalg.pinv(s, hermitian=True))
    for n in range(-3, 7):
        np.testing.assert_allclose(la.matrix_power(a, n), np.linalg.matrix_power(a, n), rtol=1e-10)
    assert la.matrix_rank(m) == 3
    np.testing.assert_allclose(la.cond(a), np.linalg.cond(a))
    for p in [None, 2, -2, 1, -1, np.inf, "fro", "nuc"]:
        np.testing.assert_allclose(la.cond(a, p), np.linalg.cond(a, p))
    t = well_conditioned(6).reshape(6, 2, 3)
    np.testing.assert_allclose(la.tensorinv(t, ind=1), np.linalg.tensorinv(t, ind=1))
    t = well_conditioned(6).reshape(2, 3, 6)
    np.testing.assert_allclose(la.tensorsolve(t, randn(2, 3)), np.linalg.tensorsolve(t, randn(2, 3)))
    np.testing.assert_allclose(la.matrix_transpose(a), np.linalg.matrix_transpose(a))
    w2, _ = la.eig(a[0])
    np.testing.assert_allclose(np.sort_complex(w2), np.sort_complex(np.linalg.eigvals(a[0])))
    np.testing.assert_allclose(la.lstsq(m, randn(5))[0], np.linalg.lstsq(m, randn(5))[0])


NORM_MATRIX_ORDS = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]
NORM_VECTOR_ORDS = [None, np.inf, -np.inf, 0, 1, -1, 2, -2, 3, 0.5]


@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_matches_numpy(keepdims):
    x = randn(3, 4, 5)
    z = randn(4, 5, dt=C128)
    for ord in NORM_MATRIX_ORDS:
        for axis in [(1, 2), (2, 0), (-1, -2)]:
            np.testing.assert_allclose(la.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))
        np.testing.assert_allclose(la.norm(x[0], ord, keepdims=keepdims), np.linalg.norm(x[0], ord, keepdims=keepdims))
        np.testing.assert_allclose(la.norm(z, ord), np.linalg.norm(z, ord))
    for ord in NORM_VECTOR_ORDS:
        for axis in [0, 1, -1]:
            np.testing.assert_allclose(la.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))
        np.testing.assert_allclose(la.norm(x[0, 0], ord, keepdims=keepdims), np.linalg.norm(x[0, 0], ord, keepdims=keepdims))
        np.testing.assert_allclose(la.norm(z[0], ord), np.linalg.norm(z[0], ord))
    np.testing.assert_allclose(la.norm(x, keepdims=keepdims), np.linalg.norm(x, keepdims=keepdims))
    np.testing.assert_allclose(la.norm(np.arange(5)), np.linalg.norm(np.arange(5)))
    np.testing.assert_allclose(la.vector_norm(x, axis=(0, 2), ord=3, keepdims=keepdims),
                               np.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=keepdims))
    np.testing.assert_allclose(la.vector_norm(x, keepdims=keepdims), np.linalg.vector_norm(x, keepdims=keepdims))
    np.testing.assert_allclose(la.matrix_norm(x, ord="nuc", keepdims=keepdims),
                               np.linalg.matrix_norm(x, ord="nuc", keepdims=keepdims))


@pytest.mark.parametrize("traced", [False, True])
def test_norm_errors(traced):
    def norm(x, *args, **kwargs):
        if traced:
            return fg.jvp(lambda x: la.norm(x, *args, **kwargs), (x,), (x,))
        return la.norm(x, *args, **kwargs)

    x = randn(3, 4)
    with pytest.raises(ValueError, match="Invalid norm order.*for matrices"):
        norm(x, "bad")
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        norm(x[0], "fro")
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        norm(randn(2, 2, 2), 2)
    with pytest.raises(ValueError, match="Duplicate axes"):
        norm(x, axis=(1, 1))


# --------------------------------------------------------------------------
# numpy.linalg: derivatives, every function, both modes, order 2

def _eigh_pair(a):
    return tuple(la.eigh(a))


def _svd_reduced(a):
    return tuple(la.svd(a, full_matrices=False))


def _qr_pair(a):
    return tuple(la.qr(a))


LINALG_CASES = {
    "inv": (la.inv, lambda dt: (well_conditioned(3, dt=dt),)),
    "inv_batched": (la.inv, lambda dt: (well_conditioned(3, (2,), dt=dt),)),
    "solve_vec": (la.solve, lambda dt: (well_conditioned(3, dt=dt), randn(3, dt=dt, seed=1))),
    "solve_mat": (la.solve, lambda dt: (well_conditioned(3, dt=dt), randn(3, 2, dt=dt, seed=1))),
    "solve_batched_vec": (la.solve, lambda dt: (well_conditioned(3, (2,), dt=dt), randn(3, dt=dt, seed=1))),
    "solve_broadcast": (la.solve, lambda dt: (well_conditioned(3, (2, 1), dt=dt), randn(3, 3, 2, dt=dt, seed=1))),
    "det": (la.det, lambda dt: (well_conditioned(3, (2,), dt=dt),)),
    "slogdet": (lambda a: tuple(la.slogdet(a)), lambda dt: (well_conditioned(3, (2,), dt=dt),)),
    "cholesky": (la.cholesky, lambda dt: (spd(3, (2,), dt=dt),)),
    "cholesky_upper": (lambda a: la.cholesky(a, upper=True), lambda dt: (spd(3, dt=dt),)),
    "eigh": (_eigh_pair, lambda dt: (spd(4, (2,), dt=dt),)),
    "eigh_upper": (lambda a: tuple(la.eigh(a, UPLO="U")), lambda dt: (spd(3, dt=dt),)),
    "eigvalsh": (la.eigvalsh, lambda dt: (spd(4, (2,), dt=dt),)),
    "svd_tall": (_svd_reduced, lambda dt: (distinct_sv(4, 3, dt=dt),)),
    "svd_wide": (_svd_reduced, lambda dt: (distinct_sv(2, 4, (2,), dt=dt),)),
    "svd_square_full": (lambda a: tuple(la.svd(a)), lambda dt: (distinct_sv(3, 3, dt=dt),)),
    "svdvals": (lambda a: la.svd(a, compute_uv=False), lambda dt: (distinct_sv(4, 3, (2,), dt=dt),)),
    "svd_hermitian_uv": (lambda a: tuple(la.svd(a, hermitian=True)), lambda dt: (spd(3, dt=dt),)),
    "svd_hermitian": (lambda a: la.svd(a, hermitian=True, compute_uv=False), lambda dt: (spd(3, dt=dt),)),
    "qr_tall": (_qr_pair, lambda dt: (distinct_sv(4, 3, (2,), dt=dt),)),
    "qr_square": (_qr_pair, lambda dt: (well_conditioned(3, dt=dt),)),
    "qr_wide": (_qr_pair, lambda dt: (distinct_sv(2, 4, dt=dt),)),
    "qr_r": (lambda a: la.qr(a, mode="r"), lambda dt: (distinct_sv(4, 3, dt=dt),)),
    "pinv_tall": (la.pinv, lambda dt: (distinct_sv(4, 3, dt=dt),)),
    "pinv_wide": (la.pinv, lambda dt: (distinct_sv(2, 3, (2,), dt=dt),)),
    "pinv_hermitian": (lambda a: la.pinv(a, hermitian=True), lambda dt: (spd(3, dt=dt),)),
    "matrix_power_5": (lambda a: la.matrix_power(a, 5), lambda dt: (well_conditioned(3, dt=dt) / 3,)),
    "matrix_power_-2": (lambda a: la.matrix_power(a, -2), lambda dt: (well_conditioned(3, (2,), dt=dt),)),
    "matrix_power_0": (lambda a: la.matrix_power(a, 0) * a, lambda dt: (well_conditioned(3, dt=dt),)),
    "cond": (la.cond, lambda dt: (distinct_sv(3, 3, dt=dt),)),
    "cond_1": (lambda a: la.cond(a, 1), lambda dt: (well_conditioned(3, dt=dt),)),
    "tensorinv": (lambda a: la.tensorinv(a, ind=1), lambda dt: (well_conditioned(6, dt=dt).reshape(6, 2, 3),)),
    "tensorsolve": (la.tensorsolve, lambda dt: (well_conditioned(6, dt=dt).reshape(2, 3, 6), randn(2, 3, dt=dt))),
    "matrix_transpose": (la.matrix_transpose, lambda dt: (randn(2, 3, 4, dt=dt),)),
}

# Complex inputs: eigenvectors and singular vectors have an arbitrary phase, so
# only phase-invariant functions of them can be checked against finite differences.


def _eigh_invariant(a):
    w, v = la.eigh(a)
    return w, fnp.abs(v), (v * w[..., None, :]) @ fnp.conj(fnp.swapaxes(v, -1, -2))


def _svd_invariant(a):
    u, s, vh = la.svd(a, full_matrices=False)
    return s, fnp.abs(u), fnp.abs(vh), (u * fnp.sqrt(s)[..., None, :]) @ vh


def _qr_invariant(a):
    q, r = la.qr(a)
    return fnp.abs(q), fnp.abs(r), q @ r


COMPLEX_CASES = {
    "inv": LINALG_CASES["inv_batched"],
    "solve_vec": LINALG_CASES["solve_vec"],
    "solve_mat": LINALG_CASES["solve_broadcast"],
    "det": LINALG_CASES["det"],
    "slogdet": LINALG_CASES["slogdet"],
    "cholesky": LINALG_CASES["cholesky"],
    "cholesky_upper": LINALG_CASES["cholesky_upper"],
    "eigh": (_eigh_invariant, lambda dt: (spd(3, (2,), dt=dt),)),
    "eigvalsh": LINALG_CASES["eigvalsh"],
    "svd_tall": (_svd_invariant, lambda dt: (distinct_sv(4, 3, dt=dt),)),
    "svd_wide": (_svd_invariant, lambda dt: (distinct_sv(2, 4, dt=dt),)),
    "svdvals": LINALG_CASES["svdvals"],
    # LAPACK's QR keeps diag(R) real, the gauge the rules use: Q and R are checked directly
    "qr_tall": (_qr_pair, lambda dt: (distinct_sv(4, 3, (2,), dt=dt),)),
    "qr_square": (_qr_pair, lambda dt: (well_conditioned(3, dt=dt),)),
    "qr_wide": (_qr_pair, lambda dt: (distinct_sv(2, 3, dt=dt),)),
    "qr_invariant": (_qr_invariant, lambda dt: (distinct_sv(4, 3, dt=dt),)),
    "pinv": LINALG_CASES["pinv_tall"],
    "pinv_hermitian": LINALG_CASES["pinv_hermitian"],
    "matrix_power": LINALG_CASES["matrix_power_-2"],
}


@pytest.mark.parametrize("dt", REAL, ids=str)
@pytest.mark.parametrize("name", sorted(LINALG_CASES))
def test_linalg_grads(name, dt):
    f, make = LINALG_CASES[name]
    check(f, make(dt), dt)


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_linalg_grads_complex(name):
    f, make = COMPLEX_CASES[name]
    check(f, make(C128), C128)


NORM_GRAD_CASES = [(o, None) for o in NORM_MATRIX_ORDS] + [(o, (0, 2)) for o in NORM_MATRIX_ORDS] + [
    (o, 1) for o in NORM_VECTOR_ORDS if o != 0
]


@pytest.mark.parametrize("dt", REAL, ids=str)
@pytest.mark.parametrize("ord,axis", NORM_GRAD_CASES, ids=[f"{o}-{a}" for o, a in NORM_GRAD_CASES])
def test_norm_grads(ord, axis, dt):
    x = distinct_sv(3, 4, dt=dt) if axis is None else randn(3, 4, 2, dt=dt)
    check(lambda x: la.norm(x, ord, axis), (x,), dt)
    check(lambda x: la.norm(x, ord, axis, keepdims=True), (x,), dt, order=1)


@pytest.mark.parametrize("ord", [None, 2, 1, np.inf, 3, "fro", "nuc"])
def test_norm_grads_complex(ord):
    x = randn(3, dt=C128) if ord not in ("fro", "nuc") else distinct_sv(3, 2, dt=C128)
    check(lambda x: la.norm(x, ord), (x,), C128)


# --------------------------------------------------------------------------
# closed forms

def test_det_gradient_closed_form():
    a = well_conditioned(3, (2,))
    g = fg.grad(lambda a: fnp.sum(la.det(a)))(a)
    expected = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(g, expected, rtol=1e-10)


def test_logdet_gradient_and_hessian_closed_form():
    a = well_conditioned(3)
    f = lambda a: la.slogdet(a)[1]  # noqa: E731
    np.testing.assert_allclose(fg.grad(f)(a), np.linalg.inv(a).T, rtol=1e-10)
    # d^2 log|det|[V, V] = -tr(A^-1 V A^-1 V)
    v = randn(3, 3, seed=5)
    _, hv = fg.jvp(fg.grad(f), (a,), (v,))
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(np.sum(hv * v), -np.trace(ainv @ v @ ainv @ v), rtol=1e-8)
    # complex (JAX's convention: grad is c with df = real(sum(c * dz))): d log|det| =
    # real(tr(inv(Z) dZ)), so the gradient is inv(Z)^T, not conjugated
    z = well_conditioned(3, dt=C128)
    np.testing.assert_allclose(fg.grad(f)(z), np.linalg.inv(z).T, rtol=1e-10)


def test_trace_inverse_gradient_closed_form():
    a = well_conditioned(3)
    g = fg.grad(lambda a: fnp.einsum("ii", la.inv(a)))(a)
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(g, -(ainv @ ainv).T, rtol=1e-10)


def test_solve_gradient_closed_form():
    a, b = well_conditioned(3), randn(3, seed=2)
    ga, gb = fg.grad(lambda a, b: fnp.sum(la.solve(a, b)), argnums=(0, 1))(a, b)
    lam = np.linalg.solve(a.T, np.ones(3))
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(gb, lam, rtol=1e-10)
    np.testing.assert_allclose(ga, -np.outer(lam, x), rtol=1e-10)


def test_eigh_gradient_conventions():
    s = spd(3)
    # sum of eigenvalues is the trace: gradient is the identity
    np.testing.assert_allclose(fg.grad(lambda a: fnp.sum(la.eigvalsh(a)))(s), np.eye(3), atol=1e-10)
    # sum of squared eigenvalues = ||A||_F^2 of the matrix NumPy reads (lower triangle):
    # the off-diagonal lower entries count twice, the upper ones not at all
    g = fg.grad(lambda a: fnp.sum(la.eigvalsh(a) ** 2))(s)
    expected = 2 * np.diag(np.diag(s)) + 4 * np.tril(s, -1)
    np.testing.assert_allclose(g, expected, atol=1e-10)
    gu = fg.grad(lambda a: fnp.sum(la.eigh(a, UPLO="U")[0] ** 2))(s)
    np.testing.assert_allclose(gu, expected.T, atol=1e-10)
    # symmetrizing the input gives the symmetric gradient (JAX / PyTorch convention)
    gs = fg.grad(lambda a: fnp.sum(la.eigvalsh((a + a.T) / 2) ** 2))(s)
    np.testing.assert_allclose(gs, 2 * s, atol=1e-10)
    # the eigenvalue gradient is v v^T of its eigenvector, folded onto the lower triangle
    w, v = np.linalg.eigh(s)
    g0 = fg.grad(lambda a: fnp.sum(la.eigvalsh(a) * np.array([1.0, 0, 0])))(s)
    vv = np.outer(v[:, 0], v[:, 0])
    np.testing.assert_allclose(g0, np.diag(np.diag(vv)) + 2 * np.tril(vv, -1), atol=1e-10)


def test_eigh_repeated_eigenvalues_stay_finite():
    eye = np.eye(3)
    g = fg.grad(lambda a: fnp.sum(la.eigh(a)[0] ** 2))(eye)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, 2 * eye, atol=1e-12)
    # a basis-invariant function of the eigenvectors: V diag(w) V^T = A
    g = fg.grad(lambda a: fnp.sum((lambda w, v: (v * w) @ v.T)(*la.eigh(a))))(2 * eye)
    assert np.all(np.isfinite(g))
    g = fg.grad(lambda a: fnp.sum(la.svd(a, compute_uv=False)))(eye)
    np.testing.assert_allclose(g, eye, atol=1e-12)


def test_svd_norm_gradients_closed_form():
    m = distinct_sv(4, 3)
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(fg.grad(lambda a: la.norm(a, "nuc"))(m), u @ vh, atol=1e-10)
    np.testing.assert_allclose(fg.grad(lambda a: la.norm(a, 2))(m), np.outer(u[:, 0], vh[0]), atol=1e-10)
    np.testing.assert_allclose(fg.grad(lambda a: la.norm(a))(m), m / np.linalg.norm(m), atol=1e-12)


def test_norm_gradient_at_zero_is_not_nan():
    for shape in [(3,), (2, 3)]:
        g = fg.grad(la.norm)(np.zeros(shape))
        np.testing.assert_array_equal(g, np.zeros(shape))
    g = fg.grad(lambda x: fnp.sum(la.norm(x, axis=1)))(np.array([[0.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(g, [[0, 0], [0.6, 0.8]])
    _, t = fg.jvp(la.norm, (np.zeros(3),), (np.ones(3),))
    assert t == 0
    gz = fg.grad(la.norm)(np.zeros(2, C128))
    np.testing.assert_array_equal(gz, np.zeros(2))
    # complex: grad |z| = conj(z) / |z| (JAX convention)
    np.testing.assert_allclose(fg.grad(la.norm)(np.array([3 + 4j])), [0.6 - 0.8j])


def test_pinv_gradient_matches_inv_for_square():
    a = well_conditioned(3)
    g1 = fg.grad(lambda a: fnp.sum(la.pinv(a) ** 2))(a)
    g2 = fg.grad(lambda a: fnp.sum(la.inv(a) ** 2))(a)
    np.testing.assert_allclose(g1, g2, rtol=1e-8)


def test_matrix_power_zero_has_zero_gradient_and_numpy_dispatch():
    a = well_conditioned(3)
    np.testing.assert_array_equal(fg.grad(lambda a: fnp.sum(la.matrix_power(a, 0)))(a), np.zeros((3, 3)))
    # numpy.linalg functions called on traced values dispatch here
    g = fg.grad(lambda a: np.linalg.det(a))(a)
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)


def test_cholesky_reads_lower_triangle():
    s = spd(3)
    junk = s + np.triu(np.full((3, 3), 7.0), 1)
    np.testing.assert_allclose(la.cholesky(junk), np.linalg.cholesky(s))
    g = fg.grad(lambda a: fnp.sum(la.cholesky(a)))(s)
    np.testing.assert_array_equal(np.triu(g, 1), 0)


def test_hessian_of_logdet_via_hessian_transform():
    a = well_conditioned(2)
    h = fg.hessian(lambda a: la.slogdet(a)[1])(a)
    ainv = np.linalg.inv(a)
    expected = -np.einsum("li,jk->ijkl", ainv, ainv)  # d/dA_kl of inv(A)^T_ij
    np.testing.assert_allclose(h, expected, rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------
# errors

def test_derivative_errors_name_the_way_out():
    m = distinct_sv(4, 3)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        fg.grad(lambda a: fnp.sum(la.svd(a)[0]))(m)
    with pytest.raises(NotImplementedError, match="mode='reduced'"):
        fg.grad(lambda a: fnp.sum(la.qr(a, mode="complete")[0]))(m)
    with pytest.raises(NotImplementedError, match="eigh"):
        fg.grad(lambda a: fnp.sum(fnp.real(la.eig(a)[0])))(well_conditioned(3))
    with pytest.raises(NotImplementedError, match="eigvalsh"):
        fg.grad(lambda a: fnp.sum(fnp.real(la.eigvals(a))))(well_conditioned(3))
    with pytest.raises(NotImplementedError, match="pinv"):
        fg.grad(lambda a: fnp.sum(la.lstsq(a, np.ones(4))[0]))(m)


def test_input_errors():
    a = well_conditioned(3)
    with pytest.raises(TypeError, match="integer"):
        la.matrix_power(a, 1.5)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        la.matrix_power(randn(2, 3), 2)
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        la.eigh(randn(2, 3))
    with pytest.raises(ValueError, match="UPLO"):
        la.eigh(a, UPLO="X")
    with pytest.raises(ValueError, match="axes"):
        fg.grad(lambda a: fnp.sum(fnp.tensordot(a, a, axes=([0, 1], [0]))))(a)
    with pytest.raises(TypeError, match="axes"):
        fg.grad(lambda a: fnp.sum(fnp.tensordot(a, a, axes=None)))(a)
    with pytest.raises(ValueError, match="out of bounds"):
        fg.grad(lambda a: fnp.sum(fnp.tensordot(a, a, axes=([5], [0]))))(a)
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        fnp.cross(randn(4), randn(4))
    with pytest.raises(ValueError, match="mode"):
        la.qr(a, mode="bad")



# --------------------------------------------------------------------------
# batching: every primitive here has a vmap rule (no per-example Python loop)

_MY_PRIMITIVES = {
    "matmul", "dot", "tensordot", "inner", "vdot", "einsum", "inv", "solve", "det", "slogdet", "cholesky",
    "eigh", "eigvalsh", "svd", "svdvals", "qr", "qr_other", "pinv", "norm2", "eig", "eigvals", "matrix_rank",
}


def _loop(f, in_axes, args):
    size = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]) for i in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return np.stack(outs)


_A = well_conditioned(3, (4,))
_S = spd(3, (4,))
VMAP_CASES = {
    "matmul": (fnp.matmul, (0, 0), (_A, _A)),
    "matmul_shared_stack": (fnp.matmul, (None, 0), (randn(2, 3, 3), randn(4, 3))),
    "matmul_axis1_vec": (fnp.matmul, (1, None), (randn(3, 4, 3), randn(2, 3, 5))),
    "dot": (fnp.dot, (0, 1), (randn(4, 2, 3), randn(5, 4, 3, 2))),
    "dot_scalar": (fnp.dot, (0, None), (randn(4), randn(3, 2))),
    "tensordot": (lambda a, b: fnp.tensordot(a, b, ([0, 2], [1, 0])), (2, 0), (randn(2, 3, 4, 5), randn(4, 5, 2, 3))),
    "tensordot_b": (lambda a, b: fnp.tensordot(a, b, 1), (None, 1), (randn(2, 3), randn(3, 4, 2))),
    "inner": (fnp.inner, (0, 0), (randn(4, 2, 3), randn(4, 3))),
    "vdot": (fnp.vdot, (0, None), (randn(4, 2, 3, dt=C128), randn(6, dt=C128))),
    "einsum": (lambda a, b: fnp.einsum("ii,ij->j", a, b), (0, None), (_A, _A[0])),
    "inv": (la.inv, (0,), (_A,)),
    "solve": (la.solve, (0, 0), (_A, randn(4, 3))),
    "solve_shared_b": (la.solve, (0, None), (_A, randn(3))),
    "solve_shared_a": (la.solve, (None, 0), (_A, randn(2, 3, 2))),
    "det": (la.det, (0,), (_A,)),
    "slogdet": (lambda a: tuple(la.slogdet(a)), (0,), (_A,)),
    "cholesky": (la.cholesky, (1,), (np.moveaxis(_S, 0, 1),)),
    "eigvalsh": (la.eigvalsh, (0,), (_S,)),
    "eigh": (lambda a: la.eigh(a)[0], (0,), (_S,)),
    "svd": (lambda a: la.svd(a)[1], (0,), (_A,)),
    "svdvals": (lambda a: la.svd(a, compute_uv=False), (0,), (_A,)),
    "qr": (lambda a: la.qr(a)[1], (0,), (_A,)),
    "pinv": (la.pinv, (0,), (_A,)),
    "norm": (la.norm, (0,), (_A,)),
    "norm_axis": (lambda x: la.norm(x, axis=0, keepdims=True), (1,), (_A,)),
    "norm_fro": (lambda x: la.norm(x, "fro", axis=(0, 1)), (2,), (_A,)),
    "matrix_rank": (la.matrix_rank, (0,), (_A,)),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_loop_without_fallback(name):
    import warnings

    f, in_axes, args = VMAP_CASES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fg.vmap(f, in_axes=in_axes)(*args)
    expected = _loop(f, in_axes, args)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-10, atol=1e-12)
    fallbacks = [str(w.message) for w in caught if "no batching rule" in str(w.message)]
    mine = [m for m in fallbacks if m.split("'")[1] in _MY_PRIMITIVES]
    assert not mine, mine


def test_hessians_agree_across_modes():
    def f(a):
        return (fnp.sum(la.eigvalsh(a @ a.T) ** 2) + la.slogdet(a)[1] + fnp.sum(la.svd(a, compute_uv=False))
                + fnp.sum(la.qr(a)[0] ** 3) + fnp.einsum("ij,ji", a, la.inv(a @ a)))

    a = well_conditioned(3)
    h = fg.hessian(f)(a)
    np.testing.assert_allclose(fg.jacrev(fg.jacrev(f))(a), h, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fg.jacfwd(fg.jacfwd(f))(a), h, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(h.reshape(9, 9), h.reshape(9, 9).T, rtol=1e-7, atol=1e-9)
