"""funcgrad.scipy.sparse semantics a spec table cannot see: constructors against SciPy,
pytrees, duplicates, SciPy sparse matrices in unchanged code, solver gradients against
the dense solve and finite differences, implicit iterative gradients at tolerance,
complex values, jit, LinearOperator, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

ssp = pytest.importorskip("scipy.sparse")
ssl = pytest.importorskip("scipy.sparse.linalg")
sla = pytest.importorskip("scipy.linalg")

from funcgrad.scipy import sparse as fs  # noqa: E402
from funcgrad.scipy.sparse import linalg as fsl  # noqa: E402


def poisson(n, k=None):
    """1-D Dirichlet Laplacian with cell conductivities k (n + 1 faces), as a csc array."""
    k = np.ones(n + 1) if k is None else k
    main = k[:-1] + k[1:]
    return fs.diags([-k[1:-1], main, -k[1:-1]], [-1, 0, 1], format="csc")


def test_constructors_agree_with_scipy():
    s = ssp.random(6, 5, density=0.4, rng=1, format="csr")
    dense = s.toarray()
    for a in (fs.csr_array(s), fs.csr_array((s.data, s.indices, s.indptr), shape=s.shape),
              fs.csc_array(dense), fs.coo_array(s.tocoo()), fs.csr_matrix(dense),
              fs.coo_array((s.tocoo().data, (s.tocoo().row, s.tocoo().col)), shape=s.shape)):
        np.testing.assert_allclose(a.toarray(), dense)
        assert a.shape == s.shape and a.nnz == s.nnz
    c = fs.csc_array(dense)
    np.testing.assert_array_equal(c.indptr, ssp.csc_array(dense).indptr)
    np.testing.assert_array_equal(c.indices, ssp.csc_array(dense).indices)
    assert fs.csr_array((3, 4)).nnz == 0 and fs.csr_array((3, 4)).shape == (3, 4)
    for mine, theirs in [(fs.eye(4, k=1), ssp.eye(4, k=1)), (fs.identity(3), ssp.identity(3)),
                         (fs.vstack([fs.eye(2), fs.eye(2)]), ssp.vstack([ssp.eye(2), ssp.eye(2)])),
                         (fs.hstack([fs.eye(2), fs.eye(2)]), ssp.hstack([ssp.eye(2), ssp.eye(2)]))]:
        np.testing.assert_allclose(mine.toarray(), theirs.toarray())
    r = fs.random(20, 10, density=0.3, rng=np.random.default_rng(0))
    assert r.nnz == 60 and r.format == "coo"


def test_duplicates_are_summed_with_their_gradient():
    a = fs.coo_array((np.array([1.0, 2.0, 3.0]), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    np.testing.assert_allclose(a.toarray(), [[0.0, 3.0], [3.0, 0.0]])
    assert a.tocsr().nnz == 2
    x = np.array([1.0, 10.0])
    g = fg.grad(lambda d: fnp.sum(fs.coo_array((d, ([0, 0, 1], [1, 1, 0])), shape=(2, 2)).tocsr() @ x))(
        np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [10.0, 10.0, 1.0])


def test_sparse_arrays_are_pytrees_and_gradients_keep_the_pattern():
    a = fs.csr_array(ssp.random(5, 5, density=0.5, rng=2, format="csr"))
    leaves, tree = fg.tree_util.tree_flatten(a)
    assert len(leaves) == 1 and leaves[0] is a.data
    x = np.arange(5.0)
    g = fg.grad(lambda A: fnp.sum((A @ x) ** 2))(a)
    assert isinstance(g, fs.csr_array) and g.pattern == a.pattern
    np.testing.assert_allclose(g.data, 2 * (a.to_scipy() @ x)[a.row] * x[a.col])
    out = fg.vmap(lambda A: A @ x)(fg.tree_util.tree_unflatten(tree, [np.stack([a.data, 3 * a.data])]))
    np.testing.assert_allclose(out, [a.to_scipy() @ x, 3 * (a.to_scipy() @ x)])


def test_scipy_sparse_matrix_in_unchanged_code():
    s = ssp.csr_array(ssp.random(4, 4, density=0.5, rng=0))
    m = ssp.csr_matrix(s)
    x = np.arange(1.0, 5.0)
    want = 2 * s.T @ (s @ x)
    for f in (lambda x: fnp.sum((s @ x) ** 2), lambda x: fnp.sum((x @ s.T) ** 2),
              lambda x: fnp.sum((m * x) ** 2), lambda x: fnp.sum(m.dot(x) ** 2)):
        np.testing.assert_allclose(fg.grad(f)(x), want)
        np.testing.assert_allclose(fg.jit(fg.grad(f))(x), want)
    np.testing.assert_allclose(fg.jvp(lambda x: s @ x, (x,), (np.ones(4),))[1], s @ np.ones(4))
    np.testing.assert_allclose(fg.vmap(lambda x: s @ x)(np.stack([x, -x])), [s @ x, -(s @ x)])


def test_scipy_paths_that_cannot_be_intercepted_name_funcgrad_sparse():
    s = ssp.csr_array(ssp.random(3, 3, density=0.6, rng=0))
    with pytest.raises(TypeError, match="funcgrad.scipy.sparse"):
        fg.grad(lambda x: fnp.sum(s.multiply(x[None, :]).toarray()))(np.ones(3))
    with pytest.raises(TypeError, match="funcgrad.scipy.sparse"):   # sparray * x: SciPy's elementwise path
        fg.grad(lambda x: fnp.sum((s * x).toarray()))(np.ones(3))


def test_spsolve_gradient_matches_the_dense_solve():
    n = 8
    k0 = np.linspace(1.0, 2.0, n + 1)
    b = np.sin(np.arange(1.0, n + 1))

    def loss(k, b):
        return fnp.sum(fsl.spsolve(poisson(n, k), b) ** 2)

    def dense_loss(k, b):
        return fnp.sum(fnp.linalg.solve(poisson(n, k).toarray(), b) ** 2)

    g = fg.grad(loss, argnums=(0, 1))(k0, b)
    gd = fg.grad(dense_loss, argnums=(0, 1))(k0, b)
    np.testing.assert_allclose(g[0], gd[0], rtol=1e-10)
    np.testing.assert_allclose(g[1], gd[1], rtol=1e-10)
    check_grads(loss, (k0, b), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(fg.hessian(loss)(k0, b), fg.hessian(dense_loss)(k0, b), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("method", ["cg", "minres", "gmres", "bicgstab"])
def test_iterative_gradient_at_tolerance_matches_the_direct_solver(method):
    n = 30
    k0 = 1.0 + np.cos(np.arange(n + 1.0)) ** 2
    b = np.cos(np.arange(n) * 0.3)
    solver = getattr(fsl, method)

    def it(k, b):
        x, info = solver(poisson(n, k), b, rtol=1e-10)
        return fnp.sum(x ** 3)

    def direct(k, b):
        return fnp.sum(fsl.spsolve(poisson(n, k), b) ** 3)

    g, gd = fg.grad(it, (0, 1))(k0, b), fg.grad(direct, (0, 1))(k0, b)
    scale = np.abs(gd[0]).max()
    np.testing.assert_allclose(g[0], gd[0], atol=1e-7 * scale)
    np.testing.assert_allclose(g[1], gd[1], atol=1e-7 * np.abs(gd[1]).max())
    x, info = solver(poisson(n, k0), b, rtol=1e-10)
    assert int(info) == 0
    _, bad = solver(poisson(n, k0), b, rtol=1e-14, maxiter=2)
    assert int(bad) > 0


def test_spsolve_and_cg_under_jit():
    n = 6
    k0 = np.linspace(1.0, 2.0, n + 1)
    b = np.ones(n)
    f = fg.jit(lambda k: fnp.sum(fsl.spsolve(poisson(n, k), b) ** 2))
    h = lambda k: fnp.sum(fsl.cg(poisson(n, k), b, rtol=1e-12)[0] ** 2)  # noqa: E731
    np.testing.assert_allclose(f(k0), h(k0), rtol=1e-10)
    np.testing.assert_allclose(fg.jit(fg.grad(f))(k0), fg.grad(h)(k0), rtol=1e-8)
    np.testing.assert_allclose(fg.jit(fg.grad(h))(k0), fg.grad(h)(k0), rtol=1e-8)
    np.testing.assert_allclose(f(2 * k0), h(2 * k0), rtol=1e-10)   # no stale factorization


def test_complex_values():
    n = 5
    rows, cols = np.nonzero(np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1))
    b = np.arange(1.0, n + 1) + 0.5j

    def f(re, im):
        a = fs.csr_array((re + 1j * im + 4.0 * (rows == cols), (rows, cols)), shape=(n, n))
        x = fsl.spsolve(a, b)
        return fnp.real(fnp.sum(x * fnp.conj(x)))

    re, im = np.cos(np.arange(rows.size)), np.sin(np.arange(rows.size))
    check_grads(f, (re, im), order=2, modes=("fwd", "rev"))
    a = fs.csr_array((re + 1j * im + 4.0 * (rows == cols), (rows, cols)), shape=(n, n))
    np.testing.assert_allclose(fsl.spsolve(a, b), np.linalg.solve(a.toarray(), b))
    np.testing.assert_allclose(fsl.splu(a).solve(b, "H"), np.linalg.solve(a.toarray().conj().T, b))
    check_grads(lambda re, im: fnp.real(fsl.splu(fs.csr_array(
        (re + 1j * im + 4.0 * (rows == cols), (rows, cols)), shape=(n, n))).solve(b, "T")), (re, im), order=1)


def test_linear_operator_with_cg():
    d = np.array([2.0, 3.0, 4.0])
    op = fsl.LinearOperator((3, 3), matvec=lambda v: d * v, rmatvec=lambda v: d * v)
    b = np.array([2.0, 3.0, 8.0])
    x, info = fsl.cg(op, b, rtol=1e-12)
    np.testing.assert_allclose(x, b / d) and int(info) == 0
    np.testing.assert_allclose(fg.grad(lambda b: fnp.sum(fsl.cg(op, b, rtol=1e-12)[0] ** 2))(b), 2 * b / d ** 2)
    np.testing.assert_allclose(fg.grad(lambda b: fnp.sum(fsl.gmres(op, b, rtol=1e-12)[0]))(b), 1 / d)


@pytest.mark.parametrize("method", ["cg", "gmres", "bicgstab", "minres"])
def test_linear_operator_parameters_are_differentiable(method):
    n = 5
    rng = np.random.default_rng(4)
    m0 = rng.normal(size=(n, n))
    m0 = m0 @ m0.T + n * np.eye(n)
    b0 = rng.normal(size=n)

    def solve_with(m, b, rmatvec):
        op = fsl.LinearOperator((n, n), matvec=lambda p, v: p["m"] @ v, params={"m": m},
                                rmatvec=(lambda p, v: p["m"].T @ v) if rmatvec else None)
        return getattr(fsl, method)(op, b, rtol=1e-13)[0]

    def dense(m, b):
        return fnp.linalg.solve(m, b)

    for rmatvec in (True, False):
        f = lambda m, b: solve_with(m, b, rmatvec)  # noqa: E731
        for jac in (fg.jacrev, fg.jacfwd):
            got, want = jac(f, argnums=(0, 1))(m0, b0), fg.jacrev(dense, argnums=(0, 1))(m0, b0)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)
    loss = lambda m: fnp.sum(solve_with(m, b0, False) ** 2)  # noqa: E731
    np.testing.assert_allclose(fg.hessian(loss)(m0), fg.hessian(lambda m: fnp.sum(dense(m, b0) ** 2))(m0),
                               rtol=1e-6, atol=1e-9)
    check_grads(lambda m, b: solve_with(m, b, True), (m0, b0), order=2, modes=("fwd", "rev"))
    batch = np.stack([m0, 2 * m0, m0 + np.eye(n)])
    np.testing.assert_allclose(fg.vmap(lambda m: solve_with(m, b0, True))(batch),
                               np.stack([np.linalg.solve(mi, b0) for mi in batch]), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fg.jit(lambda m: solve_with(m, b0, True))(m0), np.linalg.solve(m0, b0), rtol=1e-7)


def test_linear_operator_closing_over_a_traced_value_says_to_pass_params():
    m0 = np.diag([2.0, 3.0, 4.0])
    b = np.ones(3)

    def f(m):
        return fnp.sum(fsl.cg(fsl.LinearOperator((3, 3), matvec=lambda v: m @ v), b)[0])

    for transform in (fg.grad(f), lambda m: fg.jvp(f, (m,), (m,))):
        with pytest.raises(TypeError, match=r"closes over a value traced by .*params="):
            transform(m0)


def test_factorization_is_reused_by_the_gradient(monkeypatch):
    from funcgrad.scipy.sparse.linalg import _system

    calls = []
    real = _system.sparse_linalg_module

    class Counting:
        def __init__(self, mod):
            self.mod = mod

        def __getattr__(self, name):
            if name == "splu":
                def splu(*a, **k):
                    calls.append(1)
                    return self.mod.splu(*a, **k)
                return splu
            return getattr(self.mod, name)

    monkeypatch.setattr(_system, "sparse_linalg_module", lambda xp: Counting(real(xp)))
    n = 10
    fg.grad(lambda k: fnp.sum(fsl.spsolve(poisson(n, k), np.ones(n)) ** 2))(np.linspace(1, 2, n + 1))
    assert len(calls) == 1


def test_bad_input_errors():
    with pytest.raises(ValueError, match="row index 3 is out of range"):
        fs.coo_array(([1.0], ([3], [0])), shape=(2, 2))
    with pytest.raises(ValueError, match="column index -1"):
        fs.csr_array(([1.0], ([0], [-1])), shape=(2, 2))
    with pytest.raises(ValueError, match="indptr"):
        fs.csr_array(([1.0], [0], [0, 2]), shape=(1, 2))
    a = fs.eye(3, format="csc")
    with pytest.raises(ValueError, match="dimension mismatch"):
        a @ np.ones(4)
    with pytest.raises(ValueError, match="must be square"):
        fsl.spsolve(fs.csr_array(np.ones((2, 3))), np.ones(2))
    with pytest.raises(ValueError, match=r"b must have shape \(3,\)"):
        fsl.spsolve(a, np.ones(4))
    with pytest.raises(TypeError, match="dense vector or matrix"):
        fsl.spsolve(a, fs.eye(3))
    singular = fs.csc_array(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        fsl.spsolve(singular, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        fg.grad(lambda d: fnp.sum(fsl.spsolve(singular._like(d), np.ones(2))))(singular.data)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        fs.eye(2) + fs.eye(3)
    with pytest.raises(NotImplementedError, match="nonzero scalar"):
        fs.eye(2) + 1.0
    with pytest.raises(TypeError, match="concrete integers"):
        fg.grad(lambda r: fnp.sum(fs.coo_array(([1.0], ([r], [0])), shape=(2, 2)).toarray()))(1.0)
    with pytest.raises(ValueError, match="must be 'N', 'T' or 'H'"):
        fsl.splu(a).solve(np.ones(3), "X")


def test_float32_stays_float32():
    a = poisson(5).astype(np.float32)
    b = np.ones(5, np.float32)
    assert fsl.spsolve(a, b).dtype == np.float32
    assert fsl.cg(a, b)[0].dtype == np.float32
    assert fg.grad(lambda d: fnp.sum(fsl.spsolve(a._like(d), b)))(a.data).dtype == np.float32
    assert (a @ b).dtype == np.float32 and a.toarray().dtype == np.float32


def test_eigsh_values_and_their_gradient():
    n = 12
    s = ssp.random(n, n, density=0.3, rng=0)
    s = (s + s.T + ssp.diags(np.arange(n) * 1.0)).tocsr()
    a = fs.csr_array(s)

    def sym(d):
        return (a._like(d) + a._like(d).T) * 0.5

    w, v = fsl.eigsh(a, k=3, which="LA")
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s.toarray())[-3:], rtol=1e-10)
    np.testing.assert_allclose(np.abs(v.T @ s.toarray() @ v), np.diag(w), atol=1e-8)
    f = lambda d: fsl.eigsh(sym(d), k=3, which="LA", return_eigenvectors=False)  # noqa: E731
    dense = lambda d: fnp.linalg.eigvalsh(sym(d).toarray())[-3:]  # noqa: E731
    np.testing.assert_allclose(fg.jacrev(f)(a.data), fg.jacrev(dense)(a.data), atol=1e-10)
    np.testing.assert_allclose(fg.jacfwd(f)(a.data), fg.jacrev(dense)(a.data), atol=1e-10)
    check_grads(f, (a.data,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(fg.vmap(f)(np.stack([a.data, 2 * a.data]))[1], 2 * f(a.data), rtol=1e-10)


def _aligned(v, ref):
    """``v``'s columns with the signs of ``ref``'s (eigenvectors are unique up to sign)."""
    return v * fnp.sign(fnp.sum(v * fg.stop_gradient(ref), axis=0))


def test_eigsh_eigenvectors_are_differentiable_to_second_order():
    n = 10
    s = ssp.random(n, n, density=0.35, rng=1)
    s = (s + s.T + ssp.diags(np.arange(n) * 1.5)).tocsr()
    a = fs.csr_array(s)

    def sym(d):
        return (a._like(d) + a._like(d).T) * 0.5

    w, v = fsl.eigsh(a, k=2, which="LA")
    big = v[np.argmax(np.abs(v), axis=0), [0, 1]]
    assert np.all(big > 0)  # the sign convention
    weights = np.linspace(1.0, 2.0, n)[:, None] * np.array([1.0, -0.5])

    def f(d):
        return fnp.sum(weights * fsl.eigsh(sym(d), k=2, which="LA")[1] ** 3)

    def dense(d):
        vd = fnp.linalg.eigh(sym(d).toarray())[1][:, -2:]
        return fnp.sum(weights * _aligned(vd, fsl.eigsh(sym(d), k=2, which="LA")[1]) ** 3)

    np.testing.assert_allclose(fg.grad(f)(a.data), fg.grad(dense)(a.data), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fg.hessian(f)(a.data), fg.hessian(dense)(a.data), rtol=1e-6, atol=1e-7)
    vecs = lambda d: fsl.eigsh(sym(d), k=2, which="LA")[1]  # noqa: E731
    check_grads(vecs, (a.data,), order=2, modes=("fwd", "rev"))
    both = lambda d: fnp.sum(fsl.eigsh(sym(d), k=2, which="LA")[0] ** 2) + f(d)  # noqa: E731
    check_grads(both, (a.data,), order=2, modes=("fwd", "rev"))


def _hermitian_case(n=8):
    rng = np.random.default_rng(4)
    s = ssp.random(n, n, density=0.35, rng=5, format="csr")
    s.sort_indices()
    z = s.data * (rng.normal(size=s.nnz) + 1j * rng.normal(size=s.nnz))
    shifts = ssp.diags(np.arange(n) * 1.5 + 0j)

    def herm(z):
        a = fs.csr_array((z, s.indices, s.indptr), shape=(n, n))
        return a + a.conj().T + shifts
    return z, herm


def _gauge(v):
    """Dense eigenvectors in eigsh's gauge: each one's entry of largest magnitude real and positive."""
    big = v[np.argmax(np.abs(fg.stop_gradient(v)), axis=0), np.arange(v.shape[1])]
    return v * fnp.conj(big) / fnp.abs(big)


def test_eigsh_complex_hermitian_matches_dense_eigh():
    z, herm = _hermitian_case()
    h = herm(z)
    w, v = fsl.eigsh(h, k=2, which="LA")
    wd, vd = np.linalg.eigh(h.toarray())
    assert w.dtype == np.float64 and v.dtype == np.complex128
    np.testing.assert_allclose(w, wd[-2:], rtol=1e-12)
    np.testing.assert_allclose(v, _gauge(vd[:, -2:]), atol=1e-12)   # same gauge, same vectors
    big = v[np.argmax(np.abs(v), axis=0), [0, 1]]
    assert np.all(np.abs(big.imag) < 1e-15) and np.all(big.real > 0)

    # gauge-invariant losses (values, |v|^2, the projector v v^H): gradient and Hessian against dense eigh
    weights = np.linspace(1.0, 2.0, 8)[:, None] * np.array([1.0, -0.5])

    def loss(z, vectors):
        w, v = vectors(z)
        proj = v[:, 0:1] * fnp.conj(v[:, 0:1]).T
        return fnp.sum(w * np.array([0.3, 0.7])) + fnp.sum(weights * fnp.abs(v) ** 4) + fnp.sum(fnp.imag(proj) ** 2)

    sparse_pairs = lambda z: fsl.eigsh(herm(z), k=2, which="LA")  # noqa: E731

    def dense_pairs(z):
        wd, vd = fnp.linalg.eigh(herm(z).toarray())
        return wd[-2:], vd[:, -2:]

    np.testing.assert_allclose(loss(z, sparse_pairs), loss(z, dense_pairs), rtol=1e-12)
    np.testing.assert_allclose(fg.grad(loss)(z, sparse_pairs), fg.grad(loss)(z, dense_pairs), atol=1e-12)
    split = lambda re, im, pairs: loss(re + 1j * im, pairs)  # noqa: E731  (real Hessian over re, im)
    hs = fg.hessian(split, argnums=(0, 1))(z.real, z.imag, sparse_pairs)
    hd = fg.hessian(split, argnums=(0, 1))(z.real, z.imag, dense_pairs)
    for rs, rd in zip(hs, hd):
        for a_, b_ in zip(rs, rd):
            np.testing.assert_allclose(a_, b_, atol=1e-10)
    check_grads(lambda z: loss(z, sparse_pairs), (z,), order=2, modes=("fwd", "rev"))

    # the vectors themselves, in the gauge: Jacobians in both modes against dense eigh in the same gauge
    vecs = lambda re, im: fnp.real(sparse_pairs(re + 1j * im)[1] * np.exp(0.4j))  # noqa: E731
    dense_vecs = lambda re, im: fnp.real(_gauge(dense_pairs(re + 1j * im)[1]) * np.exp(0.4j))  # noqa: E731
    want = fg.jacrev(dense_vecs, argnums=(0, 1))(z.real, z.imag)
    for jac in (fg.jacrev, fg.jacfwd):
        for got, w_ in zip(jac(vecs, argnums=(0, 1))(z.real, z.imag), want):
            np.testing.assert_allclose(got, w_, atol=1e-11)
    check_grads(vecs, (z.real, z.imag), order=2, modes=("fwd", "rev"))


def test_eigsh_eigenvectors_of_a_repeated_eigenvalue_are_refused():
    a = fs.diags([np.array([1.0, 2.0, 3.0, 3.0, 0.5])], [0]).tocsr()
    with pytest.raises(fsl.SingularMatrixError, match="singular"):
        fg.grad(lambda d: fnp.sum(fsl.eigsh(a._like(d), k=2, which="LA")[1][2:4] ** 3))(a.data)
    _, (tw, tv) = fg.jvp(lambda d: fsl.eigsh(a._like(d), k=2, which="LA"), (a.data,), (np.ones(5),))
    np.testing.assert_allclose(tw, [1.0, 1.0])
    assert np.all(np.isnan(tv))


def test_eigsh_bad_k():
    a = fs.eye(4, format="csr")
    with pytest.raises(ValueError, match="0 < k < n"):
        fsl.eigsh(a, k=4)


def test_benchmark_script_runs_at_smoke_size(capsys):
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import sparse_poisson

    rows = sparse_poisson.main(["--sizes", "4", "--jax-sizes", "--repeat", "1"])
    assert rows[0]["unknowns"] == 16 and rows[0]["fd_rel_err"] < 1e-5
    assert "grad / spsolve" in capsys.readouterr().out
    from benchmarks import sparse_spectral

    rows = sparse_spectral.main(["--sizes", "4", "--repeat", "1"])
    assert len(rows) == 6 and all(err < 1e-4 for *_, err in rows), rows


def test_runs_without_torch_or_jax():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None; sys.modules['jax'] = None\n"
            "import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "from funcgrad.scipy import sparse; from funcgrad.scipy.sparse import linalg\n"
            "A = sparse.eye(3, format='csc') * 2.0\n"
            "print(fg.grad(lambda d: fnp.sum(linalg.spsolve(A._like(d), np.ones(3))))(A.data))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    assert out.returncode == 0, out.stderr
    assert "-0.25" in out.stdout


def test_values_changed_in_place_are_factorized_again():
    a = fs.csc_array(np.array([[2.0, 0.0], [0.0, 4.0]]))
    lu = fsl.splu(a)
    np.testing.assert_allclose(lu.solve(np.ones(2)), [0.5, 0.25])
    a.data[:] = [1.0, 1.0]          # SciPy users do this
    np.testing.assert_allclose(fsl.spsolve(a, np.ones(2)), [1.0, 1.0])


def test_matrix_forms_multiply_like_spmatrix():
    s = ssp.random(4, 3, density=0.5, rng=4, format="csr")
    m = fs.csr_matrix(s)
    x, y = np.arange(3.0), np.arange(4.0)
    np.testing.assert_allclose(m * x, s @ x)
    np.testing.assert_allclose(y * m, y @ s.toarray())
    np.testing.assert_allclose(np.ones((2, 4)) @ m, np.ones((2, 4)) @ s.toarray())
    np.testing.assert_allclose(m.sum(axis=0), s.sum(axis=0))
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum((m * x) ** 2))(x), 2 * s.T @ (s @ x))


def test_complex_products_and_reductions():
    rows, cols = np.array([0, 1, 2, 2, 0]), np.array([1, 0, 2, 1, 0])

    def f(re, im, xr):
        a = fs.csr_array((re + 1j * im, (rows, cols)), shape=(3, 3))
        y = a @ (xr + 0.5j * xr) + (a @ a.T).conj() @ xr + a.multiply(a).sum(axis=0)
        return fnp.real(fnp.sum(y * fnp.conj(y)))

    args = (np.cos(np.arange(5.0)), np.sin(np.arange(5.0)), np.arange(3.0) + 1)
    check_grads(f, args, order=2, modes=("fwd", "rev"))
    a = fs.csr_array((args[0] + 1j * args[1], (rows, cols)), shape=(3, 3))
    s = ssp.csr_array((args[0] + 1j * args[1], (rows, cols)), shape=(3, 3))
    np.testing.assert_allclose((a @ a.T).conj().toarray(), (s @ s.T).conj().toarray())


def test_expm_multiply_derivatives_match_the_dense_and_the_block_identity():
    import funcgrad.scipy.linalg as fsla

    n = 6
    s = (ssp.random(n, n, density=0.4, rng=2) + ssp.eye(n)).tocsr()
    a = fs.csr_array(s)
    b = np.random.default_rng(0).normal(size=(n, 2))
    np.testing.assert_allclose(fsl.expm_multiply(a, b), ssl.expm_multiply(s, b), rtol=1e-13, atol=1e-14)
    f = lambda d, b: fsl.expm_multiply(a._like(d), b)  # noqa: E731
    dense = lambda d, b: fsla.expm(a._like(d).toarray()) @ b  # noqa: E731
    want = fg.jacrev(dense, argnums=(0, 1))(a.data, b)
    for jac in (fg.jacrev, fg.jacfwd):
        for got, w in zip(jac(f, argnums=(0, 1))(a.data, b), want):
            np.testing.assert_allclose(got, w, rtol=1e-11, atol=1e-12)
    # the Fréchet derivative L(A, E) B is the top block of expm([[A, E], [0, A]]) [0; B]
    e = np.random.default_rng(1).normal(size=a.nnz)
    _, tangent = fg.jvp(lambda d: f(d, b), (a.data,), (e,))
    block = fs.bmat([[a, a._like(e)], [None, a]])
    np.testing.assert_allclose(tangent, fsl.expm_multiply(block, np.vstack([np.zeros_like(b), b]))[:n],
                               rtol=1e-12, atol=1e-13)
    # d/dt expm(t A) B = A expm(t A) B
    t = 0.7
    np.testing.assert_allclose(fg.grad(lambda t: fnp.sum(fsl.expm_multiply(t * a, b)))(t),
                               np.sum(s @ sla.expm(t * s.toarray()) @ b), rtol=1e-12)
    check_grads(lambda t, bb: fsl.expm_multiply(t * a, bb), (t, b), order=2, modes=("fwd", "rev"))


def test_expm_multiply_large_norm_complex_and_jit():
    # ||A||_1 = 28.8, ||A - mu I||_1 = 14.4 (the shift halves it), a traced budget of 2 * 28.8: a few
    # hundred products per program (a norm 10x larger kept every check below but cost 10x the products)
    n = 60
    lap = ssp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]).tocsr() * (n ** 2 / 500.0)
    b = np.sin(np.linspace(0, 3, n))
    a = fs.csr_array(lap)
    got = fsl.expm_multiply(a, b)
    np.testing.assert_allclose(got, ssl.expm_multiply(lap, b), rtol=1e-12, atol=1e-13 * np.abs(got).max())
    c = fs.csr_array(lap * (1 + 0.5j))
    np.testing.assert_allclose(fsl.expm_multiply(c, b), sla.expm(lap.toarray() * (1 + 0.5j)) @ b, rtol=1e-10,
                               atol=1e-12)


def test_expm_multiply_under_jit_matches_eager():
    # ||A||_1 = 28.8, ||A - mu I||_1 = 14.4 (the shift halves it), a traced budget of 2 * 28.8: a few
    # hundred products per program (a norm 10x larger kept every check below but cost 10x the products)
    n = 60
    lap = ssp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]).tocsr() * (n ** 2 / 500.0)
    b = np.sin(np.linspace(0, 3, n))
    a = fs.csr_array(lap)
    f = lambda d, b: fsl.expm_multiply(a._like(d), b)  # noqa: E731
    staged = fg.jit(f)
    for scale in (1.0, 1.5, 0.2):   # later calls with other values: the budget of the first still holds
        eager = f(a.data * scale, b)
        np.testing.assert_allclose(staged(a.data * scale, b), eager, rtol=0, atol=1e-13 * np.abs(eager).max())
    loss = lambda d: fnp.sum(f(d, b) ** 2)  # noqa: E731
    g = fg.grad(loss)(a.data)
    np.testing.assert_allclose(fg.jit(fg.grad(loss))(a.data), g, rtol=0, atol=1e-13 * np.abs(g).max())
    # values beyond the traced budget (2 ||A||_1 of the values traced): NaN, never a truncated series
    assert np.all(np.isnan(staged(a.data * 5.0, b)))
    # a static norm bound: the same result, eager or staged, and NaN in value and gradient beyond it
    bounded = lambda d: fsl.expm_multiply(a._like(d), b, norm_bound=30.0)  # noqa: E731
    np.testing.assert_allclose(fg.jit(bounded)(a.data), f(a.data, b), rtol=0, atol=1e-13 * np.abs(f(a.data, b)).max())
    np.testing.assert_allclose(fg.grad(lambda d: fnp.sum(bounded(d) ** 2))(a.data), g, rtol=0,
                               atol=1e-13 * np.abs(g).max())
    short = lambda d: fsl.expm_multiply(a._like(d), b, norm_bound=10.0)  # noqa: E731
    assert np.all(np.isnan(short(a.data)))
    assert np.all(np.isnan(fg.grad(lambda d: fnp.sum(short(d) ** 2))(a.data)))
    # only B staged: the degree comes from A's concrete values, without the early stop
    np.testing.assert_allclose(fg.jit(lambda b: fsl.expm_multiply(a, b))(2 * b), 2 * f(a.data, b), rtol=1e-13,
                               atol=1e-13 * np.abs(f(a.data, b)).max())
    # a budget covers ||A||_1 even where the shift by trace(A)/n would raise the norm
    d4 = fs.diags([np.array([1.0, 1.0, 1.0, -1.0])], [0])
    np.testing.assert_allclose(fsl.expm_multiply(d4, np.ones(4), norm_bound=1.0), np.exp([1.0, 1.0, 1.0, -1.0]),
                               rtol=1e-15)
    with pytest.raises(ValueError, match="norm_bound must be a finite number"):
        fsl.expm_multiply(d4, np.ones(4), norm_bound=-1.0)


def test_expm_multiply_on_a_device_reads_no_norm_back():
    import fake_backend as fb

    fb.install()
    s = (ssp.random(6, 6, density=0.4, rng=2) + ssp.eye(6)).tocsr()
    data, b = fb.to_fake(s.data), fb.to_fake(np.ones(6))
    a = fs.csr_array((data, s.indices, s.indptr), shape=(6, 6))
    with pytest.raises(ValueError, match="norm_bound="):
        fsl.expm_multiply(a, b)
    with fb.no_host_sync():
        out = fsl.expm_multiply(a, b, norm_bound=10.0)
        g = fg.grad(lambda d: fnp.sum(fsl.expm_multiply(a._like(d), b, norm_bound=10.0) ** 2))(data)
    np.testing.assert_allclose(fb.to_numpy(out) if hasattr(fb, "to_numpy") else fg.to_numpy(out),
                               ssl.expm_multiply(s, np.ones(6)), rtol=1e-13)
    assert type(g).__module__ == type(data).__module__


@pytest.mark.parametrize("with_rmatvec", [True, False])
def test_linear_operator_complex_parameters(with_rmatvec):
    n = 4
    rng = np.random.default_rng(0)
    re, im = rng.normal(size=(n, n)) + n * np.eye(n), rng.normal(size=(n, n))
    b = rng.normal(size=n) + 1j * rng.normal(size=n)
    rmatvec = (lambda m, v: fnp.conj(m).T @ v) if with_rmatvec else None

    def f(re, im):
        op = fsl.LinearOperator((n, n), matvec=lambda m, v: m @ v, rmatvec=rmatvec, params=re + 1j * im)
        x = fsl.gmres(op, b, rtol=1e-13)[0]
        return fnp.real(fnp.sum(x * fnp.conj(x)))

    def dense(re, im):
        x = fnp.linalg.solve(re + 1j * im, b)
        return fnp.real(fnp.sum(x * fnp.conj(x)))

    for got, want in zip(fg.grad(f, argnums=(0, 1))(re, im), fg.grad(dense, argnums=(0, 1))(re, im)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    check_grads(f, (re, im), order=2, modes=("fwd", "rev"))


def test_extrema_and_count_nonzero_agree_with_scipy():
    """Random small arrays with implicit zeros, stored zeros and a duplicate (coo): max, min,
    argmax, argmin and count_nonzero over all entries and along each axis, as SciPy."""
    rng = np.random.default_rng(0)
    for _ in range(60):
        m, n = rng.integers(1, 5, 2)
        dense = rng.integers(-2, 3, (m, n)).astype(float) * (rng.random((m, n)) < 0.6)
        s = ssp.csr_array(dense).tocoo()
        dup = ssp.coo_array((np.r_[s.data, 0.0], (np.r_[s.row, 0], np.r_[s.col, 0])), shape=(m, n))
        for ref, ours in ((s.tocsr(), fs.csr_array(s)), (dup, fs.coo_array(dup))):
            for axis in (None, 0, 1):
                for name in ("max", "min", "argmax", "argmin"):
                    want = getattr(ref, name)(axis=axis)
                    want = want.toarray() if hasattr(want, "toarray") else want
                    np.testing.assert_array_equal(getattr(ours, name)(axis=axis), want, err_msg=f"{name} {axis}")
                np.testing.assert_array_equal(ours.count_nonzero(axis=axis), ref.count_nonzero(axis=axis))
    # an arrow matrix (one full row and column): reduced without a dense segments x longest-row table
    n = 3000
    arrow = ssp.csr_array(ssp.eye(n) * 2 + ssp.coo_array((np.linspace(-1, 1, 2 * n), (
        np.r_[np.zeros(n, int), np.arange(n)], np.r_[np.arange(n), np.zeros(n, int)])), shape=(n, n)))
    big = fs.csr_array(arrow)
    for axis in (0, 1):
        np.testing.assert_array_equal(big.max(axis=axis), arrow.max(axis=axis).toarray())
        np.testing.assert_array_equal(big.argmin(axis=axis), arrow.argmin(axis=axis))
    g = fg.grad(lambda d: fnp.sum(big._like(d).max(axis=1)))(big.data)
    assert g.sum() == n and set(np.unique(g)) <= {0.0, 1.0}
    a = fs.csr_array(np.array([[-1.0, 0.0], [0.0, -2.0]]))
    g = fg.grad(lambda d: a._like(d).min())(a.data)
    np.testing.assert_array_equal(g, [0.0, 1.0])
    assert fs.csr_matrix(a).max(axis=0).shape == (1, 2)          # the matrix form keeps two axes
    assert a.sorted_indices() is a and a.has_sorted_indices


def test_extrema_errors():
    a = fs.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    with pytest.raises(TypeError, match="complex values have no ordering"):
        a.astype(complex).max()
    with pytest.raises(ValueError, match="axis must be None, 0 or 1"):
        a.argmax(axis=2)
    with pytest.raises(ValueError, match="empty"):
        fs.csr_array((0, 3)).max()
    with pytest.raises(NotImplementedError, match="explicit=True"):
        a.max(explicit=True)


def test_norms_onenormest_triangular_svds_errors_and_extras():
    s = ssp.random(6, 5, density=0.5, rng=1, format="csr")
    a = fs.csr_array(s)
    for ord_ in (None, "fro", 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(fsl.norm(a, ord_), ssl.norm(s, ord_), rtol=1e-14)
    for axis in (0, 1, (1,)):
        for ord_ in (None, 1, np.inf, -np.inf, 0, 0.5):
            np.testing.assert_allclose(fsl.norm(a, ord_, axis=axis), ssl.norm(s, ord_, axis=axis), rtol=1e-14)
    np.testing.assert_allclose(fsl.norm(a, 1, axis=(1, 0)), ssl.norm(s, 1, axis=(1, 0)))
    with pytest.raises(NotImplementedError, match="svds"):
        fsl.norm(a, 2)
    with pytest.raises(ValueError, match="invalid norm order"):
        fsl.norm(a, 3)
    with pytest.raises(TypeError, match="funcgrad.numpy.linalg.norm"):
        fsl.norm(np.eye(2))
    sq = (ssp.random(5, 5, density=0.5, rng=2) + ssp.eye(5)).tocsr()
    est, v, w = fsl.onenormest(fs.csr_array(sq), compute_v=True, compute_w=True)
    want = ssl.onenormest(sq, compute_v=True, compute_w=True)
    for got, ref in zip((est, v, w), want):
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    with pytest.raises(TypeError, match="LinearOperator has no stored entries"):
        fsl.onenormest(fsl.LinearOperator((2, 2), matvec=lambda x: x))
    with pytest.raises(np.linalg.LinAlgError, match="diagonal"):
        fsl.spsolve_triangular(fs.csr_array(np.array([[0.0, 0.0], [1.0, 3.0]])), np.ones(2))
    with pytest.raises(ValueError, match="0 < k < min"):
        fsl.svds(a, k=5)
    with pytest.raises(NotImplementedError, match="'LM'"):
        fsl.svds(a, k=2, which="SM")
    # complex values: the singular values and a phase-invariant function of the vectors, against dense SVD
    z = s.data * (1.0 + 0.5j * np.cos(np.arange(s.nnz)))
    c = fs.csr_array((z, s.indices, s.indptr), shape=s.shape)
    u, sv, vh = fsl.svds(c, k=2)
    dense = np.linalg.svd(c.toarray())
    np.testing.assert_allclose(sv, dense[1][1::-1], rtol=1e-12)
    np.testing.assert_allclose(u @ np.diag(sv) @ vh, (dense[0][:, :2] * dense[1][:2]) @ dense[2][:2],
                               atol=1e-12)

    def top(z, by_svds):
        m = fs.csr_array((z, s.indices, s.indptr), shape=s.shape)
        if by_svds:
            u, sv, vh = fsl.svds(m, k=1)
        else:
            uu, sd, vvh = fnp.linalg.svd(m.toarray(), full_matrices=False)
            u, sv, vh = uu[:, :1], sd[:1], vvh[:1]
        return sv[0] + fnp.sum(fnp.abs(u) ** 4) + fnp.sum(fnp.abs(vh) ** 3)

    np.testing.assert_allclose(fg.grad(top)(z, True), fg.grad(top)(z, False), atol=1e-11)
    check_grads(lambda z: top(z, True), (z,), order=2, modes=("fwd", "rev"))


def test_indexing_agrees_with_scipy_and_refuses_one_dimensional_results():
    rng = np.random.default_rng(0)
    dense = rng.integers(-2, 3, (5, 6)).astype(float) * (rng.random((5, 6)) < 0.5)
    keys = [(1, 2), (-1, -2), (slice(1, 4), slice(None)), ([3, 1, 3], slice(1, 5)), (slice(None, None, 2), [5, 0, 0]),
            (np.array([True, False, True, False, True]), slice(1, 3)), [4]]
    for fmt in ("csr", "csc", "coo"):
        ours = getattr(fs, f"{fmt}_array")(dense)
        for key in keys:
            want = ssp.csr_array(dense)[key]
            got = ours[key]
            np.testing.assert_array_equal(got.toarray() if hasattr(got, "toarray") else got,
                                          want.toarray() if hasattr(want, "toarray") else want, err_msg=str(key))
        matrix = getattr(fs, f"{fmt}_matrix")(dense)
        for key in [(2, slice(None)), (slice(None), 3), 2]:
            np.testing.assert_array_equal(matrix[key].toarray(), ssp.csr_matrix(dense)[key].toarray())
    a = fs.csr_array(dense)
    with pytest.raises(NotImplementedError, match=r"A\[\[2\]\]"):
        a[2]
    with pytest.raises(NotImplementedError, match=r"A\[:, \[3\]\]"):
        a[:, 3]
    with pytest.raises(IndexError, match="out of range"):
        a[5, 0]
    with pytest.raises(IndexError, match="two index arrays"):
        a[[0, 1], [1, 2]]
    with pytest.raises(IndexError, match="boolean row mask must have shape"):
        a[np.ones(3, bool)]
    with pytest.raises(TypeError, match="concrete"):
        fg.jit(lambda rows: a[rows, :].toarray())(np.array([0, 1]))
    assert a[0, 1] == 0.0 and a[[0, 0], :].nnz == 2 * a[[0], :].nnz


def test_setdiag_in_place_as_scipy():
    dense = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0], [4.0, 0.0, 0.0]])
    for fmt in ("csr", "csc", "coo"):
        for values, k in (([7.0, 8.0], 0), (0.0, 1), ([1.0, 2.0, 3.0, 4.0, 5.0], -1), ([9.0], -2), (5.0, 2)):
            want = getattr(ssp, f"{fmt}_array")(dense)
            want.setdiag(values, k=k)
            got = getattr(fs, f"{fmt}_array")(dense)
            assert got.setdiag(values, k=k) is None
            np.testing.assert_array_equal(got.toarray(), want.toarray())
            assert got.nnz == want.nnz and got.format == fmt
    with pytest.raises(ValueError, match="out of range"):
        fs.csr_array(dense).setdiag(1.0, k=3)


def test_splu_and_spsolve_pass_their_options_to_the_factorization():
    s = (ssp.random(8, 8, density=0.4, rng=3) + 4 * ssp.eye(8)).tocsc()
    a = fs.csc_array(s)
    np.testing.assert_array_equal(fsl.splu(a, permc_spec="NATURAL").perm_c, np.arange(8))
    assert not np.array_equal(fsl.splu(a, permc_spec="COLAMD").perm_c, np.arange(8))
    b = np.arange(8.0)
    for spec in ("NATURAL", "MMD_AT_PLUS_A"):
        np.testing.assert_allclose(fsl.spsolve(a, b, permc_spec=spec), ssl.spsolve(s, b), rtol=1e-12)
        g = fg.grad(lambda d: fnp.sum(fsl.spsolve(a._like(d), b, permc_spec=spec) ** 2))(a.data)
        np.testing.assert_allclose(g, fg.grad(lambda d: fnp.sum(fsl.spsolve(a._like(d), b) ** 2))(a.data),
                                   rtol=1e-10)


@pytest.mark.parametrize("method", ["lsqr", "lsmr"])
def test_least_squares_derivatives_match_the_normal_equations(method):
    s = (ssp.random(8, 5, density=0.5, rng=0, format="csr") + ssp.eye(8, 5)).tocsr()
    a = fs.csr_array(s)
    b = np.cos(np.arange(8.0))
    tight = {"atol": 1e-14, "btol": 1e-14}
    for damp in (0.0, 0.3):
        got, want = getattr(fsl, method)(a, b, damp=damp, **tight), getattr(ssl, method)(s, b, damp=damp, **tight)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert len(got) == len(want) and isinstance(got[1], int) and got[1:3] == want[1:3]
        f = lambda d, b: getattr(fsl, method)(a._like(d), b, damp=damp, **tight)[0]  # noqa: E731, B023

        def dense(d, b):
            m = a._like(d).toarray()
            return fnp.linalg.solve(m.T @ m + damp ** 2 * np.eye(5), m.T @ b)  # noqa: B023
        want_j = fg.jacrev(dense, argnums=(0, 1))(a.data, b)
        for jac in (fg.jacrev, fg.jacfwd):
            for g, w in zip(jac(f, argnums=(0, 1))(a.data, b), want_j):
                np.testing.assert_allclose(g, w, atol=1e-12)
        check_grads(f, (a.data, b), order=2, modes=("fwd", "rev"))
    # complex values, damped
    z = s.data * (1 + 0.3j * np.sin(np.arange(s.nnz)))
    bc = b * (1 - 0.5j)

    def loss(z, by):
        m = a._like(z)
        if by == "sparse":
            x = getattr(fsl, method)(m, bc, damp=0.2, **tight)[0]
        else:
            d = m.toarray()
            x = fnp.linalg.solve(fnp.conj(d).T @ d + 0.04 * np.eye(5), fnp.conj(d).T @ bc)
        return fnp.sum(fnp.abs(x) ** 2)
    np.testing.assert_allclose(fg.grad(loss)(z, "sparse"), fg.grad(loss)(z, "dense"), atol=1e-12)
    check_grads(lambda z: loss(z, "sparse"), (z,), order=2, modes=("fwd", "rev"))
    # a rank-deficient A without damping: no unique solution, so no derivative
    deficient = fs.csr_array(np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]]))
    with pytest.raises(fsl.SingularMatrixError):
        fg.grad(lambda d: fnp.sum(getattr(fsl, method)(deficient._like(d), np.ones(3))[0]))(deficient.data)
    with pytest.raises(NotImplementedError, match="x0"):
        getattr(fsl, method)(a, b, x0=np.zeros(5))
    with pytest.raises(ValueError, match="length 8"):
        getattr(fsl, method)(a, np.ones(5))


def test_argmax_and_count_nonzero_stay_on_the_device():
    import fake_backend as fb

    fb.install()
    s = ssp.random(5, 6, density=0.4, rng=4, format="csr")
    s.data -= 0.5
    a = fs.csr_array((fb.to_fake(s.data), s.indices, s.indptr), shape=s.shape)
    with fb.no_host_sync():
        outs = [a.argmax(), a.argmin(axis=0), a.argmax(axis=1), a.count_nonzero(), a.count_nonzero(axis=0),
                a.max(axis=1), fsl.norm(a, -np.inf)]
    wants = [s.argmax(), s.argmin(axis=0), s.argmax(axis=1), s.count_nonzero(), s.count_nonzero(axis=0),
             s.max(axis=1).toarray(), ssl.norm(s, -np.inf)]
    for got, want in zip(outs, wants):
        assert type(got).__module__ == type(a.data).__module__
        np.testing.assert_array_equal(np.ravel(fg.to_numpy(got)), np.ravel(want))


@pytest.mark.parametrize("method", ["cg", "gmres", "bicgstab", "minres"])
def test_preconditioner_without_rmatvec_in_the_gradient(method):
    """An ILU preconditioner as SciPy users write it (a LinearOperator with matvec only): the
    adjoint solve uses M^H when it exists, else M (Hermitian methods) or none."""
    n = 30
    s = ssp.diags([-np.ones(n - 1), 2.5 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1]).tocsc()
    a, b = fs.csc_array(s), np.cos(np.arange(n))
    ilu = fsl.spilu(a, drop_tol=1e-4)
    np.testing.assert_allclose(ilu.solve(b), ssl.spilu(s, drop_tol=1e-4).solve(b))
    for m in (ssl.LinearOperator(s.shape, ilu.solve), fsl.LinearOperator(s.shape, matvec=ilu.solve),
              ssl.LinearOperator(s.shape, ilu.solve, rmatvec=lambda v: ilu.solve(v, "T"))):
        loss = lambda d: fnp.sum(getattr(fsl, method)(a._like(d), b, rtol=1e-12, M=m)[0] ** 2)  # noqa: E731, B023
        want = fg.grad(lambda d: fnp.sum(fsl.spsolve(a._like(d), b) ** 2))(a.data)
        np.testing.assert_allclose(fg.grad(loss)(a.data), want, rtol=1e-8, atol=1e-10)
    # traced by grad: read as a constant; staged by jit: refused with the way out
    fg.grad(lambda d: fnp.sum(fsl.gmres(a._like(d), b, M=fsl.LinearOperator(
        s.shape, matvec=fsl.spilu(a._like(d)).solve))[0]))(a.data)
    with pytest.raises(TypeError, match="outside the transform"):
        fg.jit(lambda d: fsl.spilu(a._like(d)).solve(b))(a.data)
    import fake_backend as fb   # on a device: the device's incomplete LU, its solve on the device

    fb.install()
    on_device = fs.csc_array((fb.to_fake(s.data), s.indices, s.indptr), shape=s.shape)
    with fb.no_host_sync():
        y = fsl.spilu(on_device, drop_tol=1e-4).solve(fb.to_fake(b))
    np.testing.assert_allclose(fg.to_numpy(y), ilu.solve(b))


def test_eigsh_shift_invert_vectors_and_errors():
    n = 10
    s = ssp.random(n, n, density=0.35, rng=1)
    s = (s + s.T + ssp.diags(np.arange(n) * 1.5)).tocsr()
    a = fs.csr_array(s)

    def sym(d):
        return (a._like(d) + a._like(d).T) * 0.5

    w, v = fsl.eigsh(a, k=2, sigma=4.0)
    dense_w = np.linalg.eigvalsh(s.toarray())
    np.testing.assert_allclose(w, np.sort(dense_w[np.argsort(np.abs(dense_w - 4.0))[:2]]), rtol=1e-10)
    vecs = lambda d: fsl.eigsh(sym(d), k=2, sigma=4.0)[1]  # noqa: E731
    check_grads(vecs, (a.data,), order=2, modes=("fwd", "rev"))
    with pytest.raises(TypeError, match="sigma must be a concrete real number"):
        fsl.eigsh(a, k=2, sigma=1j)
    with pytest.raises(NotImplementedError, match="generalized"):
        fsl.eigsh(a, k=2, M=a)
    import fake_backend as fb

    fb.install()
    with pytest.raises(NotImplementedError, match="cupyx's eigsh has no sigma"):
        fsl.eigsh(fs.csr_array((fb.to_fake(s.data), s.indices, s.indptr), shape=s.shape), k=2, sigma=4.0)


def test_nonzero_find_and_eliminate_zeros_as_scipy():
    s = ssp.coo_array((np.array([2.0, 3.0, 1.0, 0.0, 5.0, -5.0]),
                       (np.array([0, 1, 1, 0, 1, 1]), np.array([1, 0, 2, 0, 1, 1]))), shape=(2, 3))
    for ref in (s, s.tocsr(), s.tocsc()):
        ours = getattr(fs, f"{ref.format}_array")(ref)
        for got, want in zip(ours.nonzero(), ref.nonzero()):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(fs.find(ours), ssp.find(ref)):
            np.testing.assert_array_equal(got, want)
    a, ref = fs.csr_array(s), s.tocsr()
    a.eliminate_zeros()
    ref.eliminate_zeros()
    assert a.nnz == ref.nnz and np.array_equal(a.toarray(), ref.toarray())
    c = fs.coo_array(s)
    np.testing.assert_array_equal(fg.grad(lambda v: fnp.sum(fs.find(c._like(v))[2] ** 2))(c.data),
                                  [4.0, 6.0, 2.0, 0.0, 0.0, 0.0])
    with pytest.raises(TypeError, match="outside the transform"):
        fg.jit(lambda v: fs.find(c._like(v))[2])(c.data)
