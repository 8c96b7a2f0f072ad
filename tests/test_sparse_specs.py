"""funcgrad.scipy.sparse through the shared spec table (tests/factories.py): each line is a
function of a sparse array's values (and a dense operand) over a fixed pattern, checked
against SciPy's values, with check_grads in both modes to order 2, vmap against a loop (a
batch of values over one pattern), float32 and the fake device (its cupyx-like sparse
module)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.numpy as fnp
from factories import CHECKS, Spec, check_spec

ssp = pytest.importorskip("scipy.sparse")
ssl = pytest.importorskip("scipy.sparse.linalg")

from funcgrad.scipy import sparse as fs  # noqa: E402
from funcgrad.scipy.sparse import linalg as fsl  # noqa: E402

N = 5
# a fixed pattern with its diagonal stored (so that solves are well posed)
_P = (ssp.random(N, N, density=0.3, rng=3, format="coo") + ssp.eye(N)).tocsr()
_P.sort_indices()
ROWS, COLS = _P.tocoo().row, _P.tocoo().col
NNZ = _P.nnz
_Q = ssp.random(N, 4, density=0.4, rng=5, format="csr")
_Q.sort_indices()
QR, QC = _Q.tocoo().row, _Q.tocoo().col
DIAG = (ROWS == COLS).astype(float)
V, X, XM, Y4, QV = (NNZ,), (N,), (N, 2), (4,), (_Q.nnz,)


def A(v, fmt="csr"):
    """funcgrad sparse array of pattern _P with values v."""
    return getattr(fs, f"{fmt}_array")((v, (ROWS, COLS)), shape=(N, N))


def S(v, fmt="csr"):
    """The same in SciPy."""
    return getattr(ssp, f"{fmt}_array")((v, (ROWS, COLS)), shape=(N, N))


def Aq(w):
    return fs.csr_array((w, (QR, QC)), shape=(N, 4))


def Sq(w):
    return ssp.csr_array((w, (QR, QC)), shape=(N, 4))


def Aq2(w):
    """An N x 1 column from two of w's values (duplicated position: summed)."""
    return fs.coo_array((w[:3], ([0, 3, 3], [0, 0, 0])), shape=(N, 1))


def Sq2(w):
    return ssp.coo_array((w[:3], ([0, 3, 3], [0, 0, 0])), shape=(N, 1))


def well(v, fmt="csr"):
    """A diagonally dominant matrix of pattern _P: 0.3 v plus 4 on the diagonal (built from
    v itself, so that it lives on v's device in v's dtype)."""
    return (A(0.3 * v) + fs.diags([v[:N] * 0 + 4.0], [0])).asformat(fmt)


def S_well(v):
    return (S(0.3 * v) + 4.0 * ssp.eye(N)).tocsc()


def sym(a):
    return a + a.T


def setdiag(a, values, k):
    """``a`` after ``a.setdiag(values, k)`` (in place, as SciPy)."""
    a.setdiag(values, k)
    return a


R = "real"
S_ = "small"
TOL = {"rtol": 1e-8, "atol": 1e-10}

OPS = [
    Spec("matvec", lambda v, x: A(v) @ x, lambda v, x: S(v) @ x, [R, R], shapes=(V, X)),
    Spec("matvec_csc", lambda v, x: A(v, "csc") @ x, lambda v, x: S(v, "csc") @ x, [R, R], shapes=(V, X)),
    Spec("matvec_coo", lambda v, x: A(v, "coo") @ x, lambda v, x: S(v, "coo") @ x, [R, R], shapes=(V, X)),
    Spec("matmat", lambda v, x: A(v) @ x, lambda v, x: S(v) @ x, [R, R], shapes=(V, XM)),
    Spec("rmatvec", lambda v, y: A(v).T @ y, lambda v, y: S(v).T @ y, [R, R], shapes=(V, X)),
    Spec("vec_matmul", lambda v, y: y @ A(v), lambda v, y: y @ S(v), [R, R], shapes=(V, X)),
    Spec("rect_matvec", lambda w, x: Aq(w) @ x, lambda w, x: Sq(w) @ x, [R, R], shapes=(QV, Y4)),
    Spec("sparse_matmul", lambda v, w: (A(v) @ Aq(w)).toarray(), lambda v, w: (S(v) @ Sq(w)).toarray(),
         [R, R], shapes=(V, QV)),
    Spec("sparse_matmul_self", lambda v: (A(v) @ A(v, "csc")).toarray(), lambda v: (S(v) @ S(v)).toarray(),
         [R], shapes=(V,)),
    Spec("add", lambda v, w: (A(v) + 2.0 * A(w, "coo")).toarray(), lambda v, w: (S(v) + 2.0 * S(w)).toarray(),
         [R, R], shapes=(V, V)),
    Spec("sub_pattern_union", lambda v, w: (A(v) - fs.hstack([Aq(w), Aq2(w)])).toarray(),
         lambda v, w: (S(v) - ssp.hstack([Sq(w), Sq2(w)])).toarray(), [R, R], shapes=(V, QV)),
    Spec("multiply_sparse", lambda v, w: A(v).multiply(A(w, "csc")).toarray(),
         lambda v, w: S(v).multiply(S(w)).toarray(), [R, R], shapes=(V, V)),
    Spec("multiply_dense", lambda v, x: A(v).multiply(x).toarray(), lambda v, x: S(v).multiply(x).toarray(),
         [R, R], shapes=(V, X)),
    Spec("toarray", lambda v: A(v, "coo").toarray(), lambda v: S(v, "coo").toarray(), [R], shapes=(V,)),
    Spec("tocsc_data", lambda v: A(v).tocsc().data, lambda v: S(v).tocsc().data, [R], shapes=(V,)),
    Spec("transpose", lambda v: A(v).T.tocsr().data, lambda v: S(v).T.tocsr().data, [R], shapes=(V,)),
    Spec("sum", lambda v: A(v).sum(), lambda v: S(v).sum(), [R], shapes=(V,)),
    Spec("sum_axis0", lambda v: A(v).sum(axis=0), lambda v: S(v).sum(axis=0), [R], shapes=(V,)),
    Spec("sum_axis1", lambda v: A(v, "csc").sum(axis=1), lambda v: S(v).sum(axis=1), [R], shapes=(V,)),
    Spec("diagonal", lambda v: A(v).diagonal(), lambda v: S(v).diagonal(), [R], shapes=(V,)),
    Spec("diagonal_k1", lambda v: A(v).diagonal(1), lambda v: S(v).diagonal(1), [R], shapes=(V,)),
    Spec("data_function", lambda v: A(v)._map(fnp.sin).sum(axis=1), lambda v: S(np.sin(v)).sum(axis=1),
         [R], shapes=(V,)),
    Spec("getitem_rows_cols", lambda v: A(v)[[3, 1, 3], 1:4].toarray(), lambda v: S(v)[[3, 1, 3], 1:4].toarray(),
         [R], shapes=(V,)),
    Spec("getitem_mask_csc", lambda v: A(v, "csc")[::2, np.array([1, 0, 1, 1, 0], bool)].toarray(),
         lambda v: S(v, "csc")[::2, np.array([1, 0, 1, 1, 0], bool)].toarray(), [R], shapes=(V,)),
    Spec("getitem_entry", lambda v: A(v)[2, 2] + A(v, "coo")[0, 1] * 2.0,
         lambda v: S(v)[2, 2] + S(v, "csr")[0, 1] * 2.0, [R], shapes=(V,)),
    Spec("setdiag", lambda v, d: setdiag(A(v, "csc"), d, 1).toarray(),
         lambda v, d: setdiag(S(v, "csc"), d, 1).toarray(), [R, R], shapes=(V, (3,))),
    Spec("tril_triu", lambda v, w: (fs.tril(A(v), -1) + fs.triu(A(w, "csc"), 1, format="csr")).toarray(),
         lambda v, w: (ssp.tril(S(v), -1) + ssp.triu(S(w), 1)).toarray(), [R, R], shapes=(V, V)),
    Spec("power", lambda v: A(v).power(3).toarray(), lambda v: S(v).power(3).toarray(), [R], shapes=(V,)),
    Spec("diags", lambda a, b: fs.diags([a, b], [0, 1], shape=(3, 3)).toarray(),
         lambda a, b: ssp.diags([a, b], [0, 1], shape=(3, 3)).toarray(), [R, R], shapes=((3,), (2,))),
    Spec("kron", lambda v, w: fs.kron(A(v), Aq(w)).toarray(), lambda v, w: ssp.kron(S(v), Sq(w)).toarray(),
         [R, R], shapes=(V, QV)),
    Spec("bmat", lambda v, w: fs.bmat([[A(v), Aq(w)], [Aq(w).T, None]]).toarray(),
         lambda v, w: ssp.bmat([[S(v), Sq(w)], [Sq(w).T, None]]).toarray(), [R, R], shapes=(V, QV)),
    Spec("block_diag", lambda v, w: fs.block_diag([A(v), Aq(w)]).toarray(),
         lambda v, w: ssp.block_diag([S(v), Sq(w)]).toarray(), [R, R], shapes=(V, QV)),
]

SOLVES = [
    Spec("spsolve", lambda v, b: fsl.spsolve(well(v, "csc"), b), lambda v, b: ssl.spsolve(S_well(v), b),
         [R, R], shapes=(V, X), **TOL),
    Spec("spsolve_matrix_rhs", lambda v, b: fsl.spsolve(well(v), b),
         lambda v, b: ssl.spsolve(S_well(v), b), [R, R], shapes=(V, XM), **TOL),
    Spec("splu_solve_T", lambda v, b: fsl.splu(well(v)).solve(b, "T"),
         lambda v, b: ssl.splu(S_well(v)).solve(b, "T"), [R, R], shapes=(V, X), **TOL),
    Spec("factorized", lambda v, b: fsl.factorized(well(v))(b),
         lambda v, b: ssl.spsolve(S_well(v), b), [R, R], shapes=(V, X), **TOL),
] + [
    Spec(name, (lambda m, mk: lambda v, b: getattr(fsl, m)(mk(well(v)), b, rtol=1e-13)[0])(m, mk),
         (lambda mk: lambda v, b: ssl.spsolve(mk(S_well(v)).tocsc(), b))(mk), [R, R], shapes=(V, X),
         rtol=1e-7, atol=1e-9)
    for name, m, mk in [("cg", "cg", sym), ("minres", "minres", sym), ("gmres", "gmres", lambda a: a),
                        ("bicgstab", "bicgstab", lambda a: a)]
]

def operator_of(v):
    """The symmetrized well-conditioned matrix of v as a LinearOperator with parameters v (its
    transpose products by reverse mode through matvec)."""
    return fsl.LinearOperator((N, N), matvec=lambda p, x: sym(well(p)) @ x, params=v)


OPERATORS = [
    Spec(f"{m}_operator_params", (lambda m: lambda v, b: getattr(fsl, m)(operator_of(v), b, rtol=1e-13)[0])(m),
         lambda v, b: ssl.spsolve(sym(S_well(v)).tocsc(), b), [R, R], shapes=(V, X), rtol=1e-7, atol=1e-9)
    for m in ("cg", "gmres", "minres", "bicgstab")
]


EXPM = [
    Spec("expm_multiply", lambda v, b: fsl.expm_multiply(A(v), b), lambda v, b: ssl.expm_multiply(S(v), b),
         [R, R], shapes=(V, XM), rtol=1e-12, atol=1e-13,
         skip={"device": "on a device the step budget needs norm_bound= (expm_multiply_norm_bound)"}),
    Spec("expm_multiply_time_grid", lambda v, b: fsl.expm_multiply(A(v, "csc"), b, start=0.5, stop=1.5, num=3),
         lambda v, b: ssl.expm_multiply(S(v, "csc"), b, start=0.5, stop=1.5, num=3), [R, R], shapes=(V, X),
         rtol=1e-12, atol=1e-13, skip={"device": "as expm_multiply"}),
    # a static norm bound fixes the number of products (the device and fg.jit path: no host read)
    Spec("expm_multiply_norm_bound", lambda v, b: fsl.expm_multiply(A(v), b, norm_bound=8.0),
         lambda v, b: ssl.expm_multiply(S(v), b), [R, R], shapes=(V, XM), rtol=1e-12, atol=1e-13),
    Spec("expm_multiply_time_grid_norm_bound",
         lambda v, b: fsl.expm_multiply(A(v, "csc"), b, start=0.5, stop=1.5, num=3, norm_bound=8.0),
         lambda v, b: ssl.expm_multiply(S(v, "csc"), b, start=0.5, stop=1.5, num=3), [R, R], shapes=(V, X),
         rtol=1e-12, atol=1e-13),
]


def spread(v):
    """A symmetric matrix of pattern _P with well separated eigenvalues (2 i on the
    diagonal, plus 0.1 (v + v^T)), built on v's device in v's dtype."""
    a = A(0.1 * v)
    return a + a.T + fs.diags([fnp.cumsum(v[:N] * 0 + 2.0) - 2.0], [0])


def S_spread(v):
    s = S(0.1 * v)
    return (s + s.T + ssp.diags(2.0 * np.arange(N))).toarray()


def eigh_top2(v):
    """The two largest eigenpairs by dense eigh, signed as funcgrad signs them (the entry
    of largest magnitude positive)."""
    w, u = np.linalg.eigh(S_spread(v))
    u = u[:, -2:]
    return w[-2:], u * np.sign(u[np.argmax(np.abs(u), axis=0), [0, 1]])


EIGEN = [
    Spec("eigsh_values", lambda v: fsl.eigsh(spread(v), k=2, which="LA", return_eigenvectors=False),
         lambda v: eigh_top2(v)[0], [R], shapes=(V,), rtol=1e-9, atol=1e-10),
    Spec("eigsh_vectors", lambda v: fsl.eigsh(spread(v), k=2, which="LA")[1],
         lambda v: eigh_top2(v)[1], [R], shapes=(V,), rtol=1e-8, atol=1e-9),
]

def hermitian(re, im):
    """A complex Hermitian matrix of pattern _P with well separated eigenvalues: 0.1 (Z + Z^H)
    for Z = re + i im, plus 2 i on the diagonal (on re's device, in its precision)."""
    a = A((re + 1j * im) * 0.1)
    return a + a.conj().T + fs.diags([fnp.cumsum(re[:N] * 0 + 2.0) - 2.0], [0])


def S_hermitian(re, im):
    s = S((re + 1j * im) * 0.1)
    return (s + s.conj().T + ssp.diags(2.0 * np.arange(N))).toarray()


def projectors(v):
    """Gauge-invariant functions of eigenvectors v (columns): |v|^2 and the real and
    imaginary parts of each projector v v^H (unchanged by v -> e^{i phi} v)."""
    outer = v[:, None, :] * fnp.conj(v[None, :, :])
    return fnp.concatenate([fnp.ravel(fnp.abs(v) ** 2), fnp.ravel(fnp.real(outer)), fnp.ravel(fnp.imag(outer))])


EIGEN += [
    Spec("eigsh_hermitian_values",
         lambda re, im: fsl.eigsh(hermitian(re, im), k=2, which="LA", return_eigenvectors=False),
         lambda re, im: np.linalg.eigvalsh(S_hermitian(re, im))[-2:], [R, R], shapes=(V, V), rtol=1e-9, atol=1e-10),
    Spec("eigsh_hermitian_projectors",
         lambda re, im: projectors(fsl.eigsh(hermitian(re, im), k=2, which="SA")[1]),
         lambda re, im: projectors(np.linalg.eigh(S_hermitian(re, im))[1][:, :2]), [R, R], shapes=(V, V),
         rtol=1e-8, atol=1e-9),
]

def svd_top2(w):
    """The two largest singular values (ascending) of Sq(w), and sign-invariant functions of
    their vectors: u_i * u_i and the outer products u_i v_i^T."""
    u, s, vh = np.linalg.svd(Sq(w).toarray())
    u, s, vh = u[:, 1::-1], s[1::-1], vh[1::-1]
    return np.concatenate([s, (u * u).ravel(), np.einsum("ik,kj->kij", u, vh).ravel()])


def svds_top2(w):
    u, s, vh = fsl.svds(Aq(w), k=2)
    return fnp.concatenate([s, fnp.ravel(u * u), fnp.ravel(u.T[:, :, None] * vh[:, None, :])])


NORMS = [
    Spec("max", lambda v: A(v).max(), lambda v: S(v).max(), [R], shapes=(V,)),
    Spec("min_axis0", lambda v: A(v).min(axis=0), lambda v: S(v).min(axis=0).toarray(), [R], shapes=(V,)),
    Spec("max_axis1_coo", lambda v: A(v, "coo").max(axis=1), lambda v: S(v).max(axis=1).toarray(), [R],
         shapes=(V,)),
    Spec("norm_fro", lambda v: fsl.norm(A(v)), lambda v: ssl.norm(S(v)), [R], shapes=(V,)),
    Spec("norm_1", lambda v: fsl.norm(A(v, "csc"), 1), lambda v: ssl.norm(S(v), 1), [R], shapes=(V,)),
    Spec("norm_inf", lambda v: fsl.norm(A(v), np.inf), lambda v: ssl.norm(S(v), np.inf), [R], shapes=(V,)),
    Spec("norm_rows", lambda v: fsl.norm(well(v), axis=1), lambda v: ssl.norm(S_well(v), axis=1), [R],
         shapes=(V,)),
    Spec("norm_columns_p3", lambda v: fsl.norm(well(v), 3, axis=0), lambda v: ssl.norm(S_well(v), 3, axis=0),
         [R], shapes=(V,)),
    Spec("onenormest", lambda v: fsl.onenormest(A(v)), lambda v: ssl.onenormest(S(v)), [R], shapes=(V,)),
]

def tall(v):
    """A (2N, N) matrix of full column rank: the well-conditioned matrix over 0.2 A(v)."""
    return fs.vstack([well(v), A(0.2 * v)])


def S_tall(v):
    return ssp.vstack([S_well(v), S(0.2 * v)]).tocsr()


LSQ = {"atol": 1e-14, "btol": 1e-14}

SOLVES += [
    Spec("lsqr", lambda v, b: fsl.lsqr(tall(v), b, **LSQ)[0], lambda v, b: ssl.lsqr(S_tall(v), b, **LSQ)[0],
         [R, R], shapes=(V, (2 * N,)), rtol=1e-9, atol=1e-11),
    Spec("lsmr_damped", lambda v, b: fsl.lsmr(tall(v), b, damp=0.5, **LSQ)[0],
         lambda v, b: ssl.lsmr(S_tall(v), b, damp=0.5, **LSQ)[0], [R, R], shapes=(V, (2 * N,)), rtol=1e-9,
         atol=1e-11),

    Spec("spsolve_triangular_lower", lambda v, b: fsl.spsolve_triangular(well(v), b),
         lambda v, b: ssl.spsolve_triangular(ssp.tril(S_well(v)).tocsr(), b), [R, R], shapes=(V, X), **TOL),
    Spec("spsolve_triangular_upper_unit",
         lambda v, b: fsl.spsolve_triangular(A(v), b, lower=False, unit_diagonal=True),
         lambda v, b: ssl.spsolve_triangular(ssp.triu(S(v)).tocsr(), b, lower=False, unit_diagonal=True),
         [R, R], shapes=(V, XM), **TOL),
]

def eigh_nearest(v, sigma, k):
    w = np.linalg.eigvalsh(S_spread(v))
    return np.sort(w[np.argsort(np.abs(w - sigma))[:k]])


EIGEN += [
    Spec("eigsh_shift_invert", lambda v: fsl.eigsh(spread(v), k=2, sigma=2.9, return_eigenvectors=False),
         lambda v: eigh_nearest(v, 2.9, 2), [R], shapes=(V,), rtol=1e-9, atol=1e-10,
         skip={"device": "shift-invert runs on the host (cupyx's eigsh has no sigma): tested to raise"}),
    Spec("svds", svds_top2, svd_top2, [R], shapes=(QV,), rtol=1e-8, atol=1e-9),
    Spec("svds_values", lambda w: fsl.svds(Aq(w), k=2, return_singular_vectors=False),
         lambda w: np.linalg.svd(Sq(w).toarray(), compute_uv=False)[1::-1], [R], shapes=(QV,), rtol=1e-9,
         atol=1e-10),
]

SPECS = NORMS + OPS + SOLVES + OPERATORS + EIGEN + EXPM


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_sparse_spec(spec, check):
    check_spec(spec, check)
