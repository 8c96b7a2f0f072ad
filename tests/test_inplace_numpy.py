"""NumPy code that assigns in place works under the transforms (issue 9)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)
from funcgrad.testing import check_grads

rng = np.random.default_rng(3)
X = rng.uniform(0.2, 1.0, 4)


@pytest.fixture(autouse=True)
def _quiet_fallbacks():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="vmap: primitive")
        yield


# --- the typical patterns, each against its .at[...] formulation --------------

def rows_inplace(x):
    n = x.shape[0]
    J = fnp.zeros((n, n))
    for i in range(n):
        J[i] = fnp.sin(x[i]) * x
    return J


def rows_at(x):
    n = x.shape[0]
    J = fnp.zeros((n, n))
    for i in range(n):
        J = fnp.at(J)[i].set(fnp.sin(x[i]) * x)
    return J


def stencil_inplace(u):
    d2 = fnp.zeros_like(u)
    d2[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
    d2[0] = u[1] - u[0]
    d2[-1] = u[-2] - u[-1]
    return d2


def stencil_at(u):
    d2 = fnp.zeros_like(u)
    d2 = fnp.at(d2)[1:-1].set(u[2:] - 2.0 * u[1:-1] + u[:-2])
    d2 = fnp.at(d2)[0].set(u[1] - u[0])
    return fnp.at(d2)[-1].set(u[-2] - u[-1])


def heat_inplace(u0, steps=5, dt=0.1):
    u = u0 * 1.0
    for _ in range(steps):
        lap = fnp.zeros_like(u)
        lap[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u += dt * lap
        u[0] = u0[0]  # fixed boundary
    return u


def heat_at(u0, steps=5, dt=0.1):
    u = u0 * 1.0
    for _ in range(steps):
        lap = fnp.at(fnp.zeros_like(u))[1:-1].set(u[2:] - 2.0 * u[1:-1] + u[:-2])
        u = u + dt * lap
        u = fnp.at(u)[0].set(u0[0])
    return u


W = rng.standard_normal((3, 3)) * 0.5


def rnn_inplace(xs):
    hs = fnp.zeros((xs.shape[0] + 1, 3))
    for t in range(xs.shape[0]):
        hs[t + 1] = fnp.tanh(hs[t] @ W + xs[t])
    return hs


def rnn_at(xs):
    hs = fnp.zeros((xs.shape[0] + 1, 3))
    for t in range(xs.shape[0]):
        hs = fnp.at(hs)[t + 1].set(fnp.tanh(hs[t] @ W + xs[t]))
    return hs


PATTERNS = [
    ("rows", rows_inplace, rows_at, X),
    ("stencil", stencil_inplace, stencil_at, X),
    ("time-stepping", heat_inplace, heat_at, X),
    ("rnn buffer", rnn_inplace, rnn_at, rng.standard_normal((4, 3))),
]


@pytest.mark.parametrize("name,inplace,functional,x", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_pattern_matches_functional_form_and_check_grads(name, inplace, functional, x):
    np.testing.assert_allclose(inplace(x), functional(x), atol=1e-14)
    np.testing.assert_allclose(fg.jacrev(inplace)(x), fg.jacrev(functional)(x), atol=1e-12)
    np.testing.assert_allclose(fg.jacfwd(inplace)(x), fg.jacfwd(functional)(x), atol=1e-12)
    check_grads(inplace, (x,), order=2, modes=("fwd", "rev"))
    check_grads(inplace, (x.astype(np.float32),), order=1)


def test_hessian_and_vmap_of_inplace_code():
    f = lambda x: fnp.sum(rows_inplace(x) ** 2)
    np.testing.assert_allclose(fg.hessian(f)(X), fg.hessian(lambda x: fnp.sum(rows_at(x) ** 2))(X), atol=1e-12)
    xs = rng.uniform(0.2, 1.0, (3, 4))
    np.testing.assert_allclose(fg.vmap(stencil_inplace)(xs), np.stack([stencil_at(x) for x in xs]), atol=1e-14)
    np.testing.assert_allclose(fg.vmap(fg.grad(lambda x: fnp.sum(heat_inplace(x) ** 2)))(xs),
                               np.stack([fg.grad(lambda x: fnp.sum(heat_at(x) ** 2))(x) for x in xs]), atol=1e-12)


# --- every kind of index and operator -----------------------------------------

@pytest.mark.parametrize("idx", [1, slice(1, 3), (Ellipsis,), [0, 2], np.array([True, False, True, False])],
                         ids=["int", "slice", "ellipsis", "advanced", "mask"])
@pytest.mark.parametrize("traced_value", [True, False])
def test_setitem_index_kinds(idx, traced_value):
    def f(x):
        a = x * 2.0
        v = fnp.exp(x[0]) if traced_value else 5.0
        a[idx] = v
        return a

    def g(x):
        return fnp.at(x * 2.0)[idx].set(fnp.exp(x[0]) if traced_value else 5.0)

    np.testing.assert_allclose(f(X), g(X))
    np.testing.assert_allclose(fg.jacrev(f)(X), fg.jacrev(g)(X))
    check_grads(f, (X,), order=2)


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_augmented_operators(op):
    def f(x, y):
        a = fnp.array(x)
        ns = {"a": a, "y": y}
        exec(f"a {op} y", {}, ns)
        assert ns["a"] is a  # the same box, updated in place
        return a

    def g(x, y):
        return {"+=": x + y, "-=": x - y, "*=": x * y, "/=": x / y, "**=": x**y}[op]

    y = X[::-1] + 0.5
    np.testing.assert_allclose(f(X, y), g(X, y))
    for argnums in (0, 1):
        np.testing.assert_allclose(fg.jacrev(f, argnums)(X, y), fg.jacrev(g, argnums)(X, y), atol=1e-12)
    check_grads(f, (X, y), order=2)


def test_matmul_and_indexed_augmented():
    A = rng.standard_normal((3, 3))

    def f(M):
        B = M * 1.0
        B @= A
        B[0] += M[1]
        B[[0, 0]] -= 1.0
        return B

    g = lambda M: fnp.at(fnp.at(M @ A)[0].add(M[1]))[[0]].add(-1.0)
    M = rng.standard_normal((3, 3))
    np.testing.assert_allclose(f(M), g(M))
    check_grads(f, (M,), order=2)


def test_out_argument():
    def f(x):
        out = fnp.empty_like(x)
        fnp.multiply(x, x, out=out)
        np.sin(out, out=out)  # NumPy's own ufunc dispatches here
        return out

    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(f(x)))(X), np.cos(X**2) * 2 * X)
    plain = np.zeros(4)
    assert fnp.add(X, 1.0, out=plain) is plain and np.allclose(plain, X + 1)


# --- aliasing ------------------------------------------------------------------------

@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_view_sees_later_write_to_base():
    def f(x):
        a = x * 1.0
        row = a[0:2]
        t = a.reshape(2, 2)
        a[0] = 10.0 * x[3]
        return fnp.sum(row * row) + t[0, 0]

    expected = lambda x: (10 * x[3]) ** 2 + x[1] ** 2 + 10 * x[3]
    np.testing.assert_allclose(f(X), expected(X))
    np.testing.assert_allclose(fg.grad(f)(X), fg.grad(expected)(X))


def test_write_through_views():
    def f(x):
        A = fnp.zeros((2, 3))
        A[0][1] = x[0]           # chained indexing writes into A, as in NumPy
        At = A.T
        At[2, 1] = 3.0 * x[1]    # writes A[1, 2]
        flat = A.reshape(-1)
        flat[0] = x[2] * x[3]    # writes A[0, 0]
        return A

    expected = np.array([[X[2] * X[3], X[0], 0], [0, 0, 3 * X[1]]])
    np.testing.assert_allclose(f(X), expected)
    check_grads(f, (X,), order=2)


def test_alias_by_assignment_sees_augmented_update():
    def f(x):
        a = x * 1.0
        b = a
        a += 1.0
        return b  # b is a: NumPy semantics

    np.testing.assert_allclose(f(X), X + 1)


def test_user_arrays_never_mutated():
    x = X.copy()

    def f(x):
        x[0] = 100.0
        x += 1.0
        x[1:3] *= x[0]
        return fnp.sum(x)

    fg.grad(f)(x)
    fg.jvp(f, (x,), (np.ones(4),))
    fg.hessian(f)(x)
    np.testing.assert_array_equal(x, X)


def test_plain_numpy_arrays_keep_numpy_semantics():
    def f(x):
        c = np.zeros(3)
        c[0] = 2.0          # untraced: ordinary NumPy write
        view = c[:2]
        c[1] = 3.0
        return fnp.sum(x[:2] * view)  # the view saw both writes

    np.testing.assert_allclose(fg.grad(f)(X), [2.0, 3.0, 0.0, 0.0])


@pytest.mark.eager_only()  # under fg.jit the conversion raises StagedValueError (tests/test_jit.py)
def test_error_traced_value_into_plain_numpy_array():
    def f(x):
        c = np.zeros(3)
        c[0] = x[0]
        return fnp.sum(c)

    def g(x):
        c = np.zeros(3)
        c[0:2] = x[:2]
        return fnp.sum(c)

    def h(x):
        c = np.zeros(4)
        alias = c
        c += x  # NumPy would update alias too: a plain array cannot hold x
        return fnp.sum(alias)

    for fn in (g, h):
        with pytest.raises(TypeError, match="create that array with funcgrad.numpy"):
            fg.grad(fn)(X)
    # A single element of a plain array: NumPy itself raises before funcgrad can speak.
    with pytest.raises(ValueError):
        fg.grad(f)(X)


def test_augmented_assignment_on_a_plain_array_owned_by_one_variable():
    def f(x):
        total = np.zeros(4)  # plain NumPy, referenced by this variable only
        for k in range(3):
            total += x * k
        return fnp.sum(total * total)

    np.testing.assert_allclose(fg.grad(f)(X), 2 * 9 * X)


def test_inplace_dtype_and_shape_rules_follow_numpy():
    def f(x):
        a = x * 1.0
        a += fnp.ones((2, 4))
        return a

    with pytest.raises(ValueError, match="non-broadcastable"):
        fg.grad(lambda x: fnp.sum(f(x)))(X)

    def g(x):
        a = x.astype(np.float32)
        a += x  # float64 into float32: same_kind cast, stays float32
        return a

    assert fg.jacrev(g)(X).dtype == np.float64
    _, t = fg.jvp(g, (X,), (np.ones(4),))
    assert t.dtype == np.float32
