"""funcgrad.scipy.linalg: values vs SciPy, derivatives to order 2, vmap, float32, fake device."""

from __future__ import annotations

import sys

import background_checks
import numpy as np
import pytest
import scipy.linalg as sl

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import linalg as L

from scipy_harness import Case, check_fake_device, check_vmap, table_tests

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 3))
S = A @ A.T + 3 * np.eye(3)          # symmetric positive definite, well conditioned
B = rng.standard_normal((3, 2))
C2 = rng.standard_normal((2, 2)) + 3 * np.eye(2)
Q = rng.standard_normal((3, 2))


def _tri(trans, lower, unit):
    def f(a, b):
        return L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

    def ref(a, b):
        return sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

    f.__name__ = f"solve_triangular_{trans}{int(lower)}{int(unit)}"
    return Case(f, (S, B), ref)


def _cho(lower):
    def f(a, b):
        return L.cho_solve(L.cho_factor(a, lower=lower), b)

    f.__name__ = f"cho_solve_{int(lower)}"
    return Case(f, (S, B), lambda a, b: sl.cho_solve(sl.cho_factor(a, lower=lower), b))


def _lu_solve(trans):
    def f(a, b):
        return L.lu_solve(L.lu_factor(a), b, trans=trans)

    f.__name__ = f"lu_solve_{trans}"
    return Case(f, (A, B), lambda a, b: sl.lu_solve(sl.lu_factor(a), b, trans=trans))


def lu_factor_lu(a):
    return L.lu_factor(a)[0]


def sqrtm_spd(a):
    return L.sqrtm(a)


def eigvals_gen(a, b):
    return L.eigh(a, b, eigvals_only=True)


def block2(a, b):
    return L.block_diag(a, b, fnp.ones_like(b[0]))


AB = rng.standard_normal((4, 3)) + np.array([[0.0], [0.0], [4.0], [0.0]])   # (l, u) = (1, 2), strong diagonal


def solve_banded_12(ab, b):
    return L.solve_banded((1, 2), ab, b)


def expm_frechet_L(a, e):
    return L.expm_frechet(a, e, compute_expm=False)


CASES = {c.fn.__name__: c for c in (
    [_tri(t, lo, u) for t in (0, 1, 2) for lo in (False, True) for u in (False, True)]
    + [_cho(False), _cho(True), _lu_solve(0), _lu_solve(1)]
    + [
        Case(lu_factor_lu, (A,), lambda a: sl.lu_factor(a)[0]),
        Case(L.expm, (A * 0.5,), sl.expm),
        Case(expm_frechet_L, (A * 0.5, S * 0.3), lambda a, e: sl.expm_frechet(a, e)[1]),
        Case(sqrtm_spd, (S,), sl.sqrtm, rtol=1e-6),
        Case(L.logm, (S,), sl.logm, rtol=1e-6),
        Case(L.solve_sylvester, (S, C2, Q), sl.solve_sylvester),
        Case(solve_banded_12, (AB, B), lambda ab, b: sl.solve_banded((1, 2), ab, b)),
        Case(block2, (A, B), lambda a, b: sl.block_diag(a, b, np.ones(2))),
        Case(eigvals_gen, (S, S + np.eye(3)), lambda a, b: sl.eigh(a, b, eigvals_only=True)),
    ])}
# cases whose derivatives are checked on the fake device (sqrtm/logm/sylvester of a
# random direction are fine too, but the list keeps the suite fast)
DEVICE = sorted(CASES)


test_values_match_scipy, test_check_grads_order2, test_float32, test_vmap_matches_loop = table_tests(CASES)


@pytest.mark.parametrize("name", ["solve_triangular_010", "cho_solve_0", "lu_solve_0", "expm", "logm",
                                  "solve_sylvester", "block2", "eigvals_gen", "lu_factor_lu"])
def test_vmap_one_argument_batched(name):
    check_vmap(CASES[name], argnums=(0,))


@pytest.mark.parametrize("name", DEVICE)
def test_fake_device(name):
    check_fake_device(CASES[name], rtol=1e-7, atol=1e-9)


def test_vector_rhs_and_eigh_standard():
    b = B[:, 0]
    np.testing.assert_allclose(L.solve_triangular(S, b, lower=True), sl.solve_triangular(S, b, lower=True))
    np.testing.assert_allclose(L.lu_solve(L.lu_factor(A), b), np.linalg.solve(A, b))
    w, v = L.eigh(S)
    np.testing.assert_allclose(w, sl.eigh(S)[0])
    np.testing.assert_allclose(np.abs(v), np.abs(sl.eigh(S)[1]), atol=1e-10)
    np.testing.assert_allclose(L.cholesky(S), sl.cholesky(S))
    np.testing.assert_allclose(L.cholesky(S, lower=True), sl.cholesky(S, lower=True))
    np.testing.assert_allclose(L.solve(A, b), sl.solve(A, b))
    np.testing.assert_allclose(L.inv(A), sl.inv(A))
    np.testing.assert_allclose(L.det(A), sl.det(A))
    e, Lf = L.expm_frechet(A, S)
    we, wL = sl.expm_frechet(A, S)
    np.testing.assert_allclose(e, we, rtol=1e-10)
    np.testing.assert_allclose(Lf, wL, rtol=1e-8)


def test_triangle_only_gets_gradient():
    g = fg.grad(lambda a: fnp.sum(L.solve_triangular(a, B, lower=True, unit_diagonal=True)))(S)
    assert np.all(np.triu(g) == 0)


def test_gaussian_log_likelihood_gradient_closed_form():
    # d/dK [-1/2 y^T K^-1 y - 1/2 log det K] = 1/2 (K^-1 y y^T K^-1 - K^-1)
    y = B[:, 0]

    def ll(K):
        c = L.cho_factor(K, lower=True)
        return -0.5 * y @ L.cho_solve(c, y) - fnp.sum(fnp.log(fnp.diagonal(c[0])))

    Ki = np.linalg.inv(S)
    want = 0.5 * (Ki @ np.outer(y, y) @ Ki - Ki)
    g = fg.grad(ll)(S)   # cholesky reads the lower triangle: the symmetric part is the gradient
    np.testing.assert_allclose((g + g.T) / 2, want, rtol=1e-9, atol=1e-12)


def test_expm_derivative_closed_form_diagonal():
    d = np.array([0.3, -0.2, 1.1])
    g = fg.grad(lambda a: fnp.trace(L.expm(a)))(np.diag(d))
    np.testing.assert_allclose(g, np.diag(np.exp(d)), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="square"):
        L.expm(np.ones((2, 3)))
    with pytest.raises(ValueError, match="trans"):
        L.solve_triangular(S, B, trans="X")
    with pytest.raises(ValueError, match="b must have shape"):
        L.solve_triangular(S, np.ones((4, 1)))
    with pytest.raises(ValueError, match="q must have shape"):
        L.solve_sylvester(S, C2, np.ones((2, 2)))
    with pytest.raises(NotImplementedError, match="subset_by_index"):
        L.eigh(S, subset_by_index=[0, 1])


def test_missing_counterpart_on_device_is_named():
    import fake_backend as fb
    from funcgrad.scipy._scipy import scipy_function

    class NoSylvester:
        __name__ = "cupy"
        scipy_linalg = type("M", (), {"__name__": "cupyx.scipy.linalg"})()

    with pytest.raises(NotImplementedError, match="has no function 'solve_sylvester'.*no counterpart"):
        scipy_function(NoSylvester(), "linalg", "solve_sylvester")
    assert scipy_function(fb.fake, "linalg", "expm") is fb.fake.scipy_linalg.expm


def _import_without_scipy(module: str) -> list[str]:
    code = (
        "import sys\n"
        "for m in ['scipy', 'scipy.linalg', 'scipy.special', 'scipy.signal', 'scipy.stats',\n"
        "          'scipy.optimize', 'scipy.integrate']:\n"
        "    sys.modules[m] = None\n"
        "import funcgrad, funcgrad.scipy\n"
        "try:\n"
        f"    import funcgrad.scipy.{module}\n"
        "except ImportError as e:\n"
        "    print('IMPORTERROR', e)\n"
    )
    return [sys.executable, "-c", code]


WITHOUT_SCIPY = ["linalg", "stats", "signal", "integrate", "optimize"]
# One process each, started with the session and run beside the other tests (tests/background_checks.py).
IMPORTS = {module: background_checks.register(
    f"import funcgrad.scipy.{module} without scipy", lambda folder, module=module: _import_without_scipy(module),
    timeout=60, wanted_by=[(__file__, f"test_import_without_scipy_says_how_to_install[{module}]")])
    for module in WITHOUT_SCIPY}


@pytest.mark.parametrize("module", WITHOUT_SCIPY)
def test_import_without_scipy_says_how_to_install(module, background):
    res = background.result(IMPORTS[module]).process
    assert res.returncode == 0, res.stderr
    assert "IMPORTERROR" in res.stdout and "pip install funcgrad[scipy]" in res.stdout
    assert f"funcgrad.scipy.{module}" in res.stdout


def test_sqrtm_second_reverse_derivative_at_a_complex_root():
    """Issue 31: vjp of jvp of sqrtm at a real symmetric matrix with a negative eigenvalue was
    4.9e12 (the block matrix's repeated eigenvalue split across the branch cut)."""
    b = np.array([[1.0, 0.3], [0.3, -1.0]])
    v = w = np.ones((2, 2))
    e = np.zeros((2, 2), complex)
    e[0, 0] = 1

    def g(x):
        return fg.jvp(L.sqrtm, (x,), (v,))[1]

    got = np.sum(fg.vjp(g, b)[1](e)[0] * w)
    h = 1e-6
    numeric = np.sum(np.real(np.conj(e) * (g(b + h * w) - g(b - h * w)) / (2 * h)))
    assert abs(got - numeric) < 1e-6 and abs(got + 0.463063) < 1e-5
    fg.testing.check_grads(L.sqrtm, (b,), order=2, modes=("fwd", "rev"))
    fg.testing.check_grads(L.logm, (b,), order=2, modes=("fwd", "rev"))


def test_fractional_matrix_power():
    np.testing.assert_allclose(L.fractional_matrix_power(S, 0.5), sl.sqrtm(S), rtol=1e-10)
    np.testing.assert_allclose(L.fractional_matrix_power(S, 3), np.linalg.matrix_power(S, 3))
    np.testing.assert_allclose(L.fractional_matrix_power(A, -0.25), sl.fractional_matrix_power(A, -0.25), rtol=1e-8)
    # in t too: d/dt A^t = logm(A) A^t
    got = fg.jacfwd(lambda t: L.fractional_matrix_power(S, t))(0.4)
    np.testing.assert_allclose(got, sl.logm(S) @ sl.fractional_matrix_power(S, 0.4), rtol=1e-8)


def test_solve_banded_vector_and_errors():
    np.testing.assert_allclose(L.solve_banded((1, 2), AB, B[:, 0]), sl.solve_banded((1, 2), AB, B[:, 0]))
    # entries of ab outside the matrix are ignored, as in SciPy: their gradient is zero
    g = fg.grad(lambda ab: fnp.sum(L.solve_banded((1, 2), ab, B[:, 0])))(AB)
    assert g[0, 0] == g[0, 1] == g[1, 0] == g[3, 2] == 0
    with pytest.raises(ValueError, match=r"\(l \+ u \+ 1, n\)"):
        L.solve_banded((1, 1), AB, B)
    with pytest.raises(TypeError, match="two integers"):
        L.solve_banded(1, AB, B)
