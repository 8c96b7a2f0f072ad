"""Complex linalg in the native tier: ``solve``/``inv``/``det``/``cholesky``/``eigh`` of complex64
and complex128 matrices and stacks lower to numba's LAPACK bindings, their gradients too.

Bound (docs/jit.md, as for float linalg): on well-conditioned matrices each result is within
16 roundings of the replay's, ``|native - replay| <= 8 * 16 * eps * max(|replay|, 1)`` (eps of
the parts' dtype); eigenvectors are compared by magnitude (their phase is LAPACK's choice).
A singular matrix, or one with NaN or inf, hands the call to the replay (numba raises its own
LinAlgError where NumPy raises another or returns NaN), so what comes out is NumPy's. Each
program must lower whole. Few programs (every compile costs seconds); kernels go to the
session's cache (tests/conftest.py). Skips without numba (the `native` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")

ROUNDINGS = 16


def hermitian_pd(*batch, n=4, dtype="complex128", seed=0):
    """A stack (*batch, n, n) of well-conditioned Hermitian positive definite matrices, the upper
    triangle perturbed (only the lower one is read by cholesky and eigh)."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=batch + (n, n)) + 1j * rng.normal(size=batch + (n, n))
    a = g @ np.swapaxes(g, -1, -2).conj() + n * np.eye(n)
    a[..., 0, n - 1] += 0.25 + 0.5j
    return a.astype(dtype)


def vectors(*shape, dtype="complex128"):
    k = int(np.prod(shape))
    return (np.linspace(-1.0, 1.5, k) + 1j * np.linspace(0.5, -0.75, k)).reshape(shape).astype(dtype)


def compiled_native(f, *args):
    """fg.jit(f) forced native, compiled (blocking), after checking that it lowers whole; and its tier."""
    nat = fg.jit(f, backend="native")
    lowered = nat.lower(*args)
    compiled = lowered.compile()
    assert compiled.backend == "native", compiled.why
    assert compiled.left == 0, [e for e in compiled.program.eqns if not native.lowerable(e)]
    return nat, lowered._entry.staged.tier


def assert_within_bound(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    eps = np.finfo(want.dtype).eps
    err = np.abs(got.astype(np.complex128) - want) / np.maximum(np.abs(want), 1.0)
    assert np.all(err <= 8 * ROUNDINGS * eps), float(np.max(err / eps))


def single(a, b):
    """Every lowered function on one matrix."""
    w, v = fnp.linalg.eigh(a)
    return fnp.linalg.solve(a, b), fnp.linalg.inv(a), fnp.linalg.det(a), fnp.linalg.cholesky(a), w, fnp.abs(v)


def stacked(stack, b):
    """Every lowered function on a stack (solve's right-hand sides broadcast against it)."""
    w, v = fnp.linalg.eigh(stack)
    return (w, fnp.abs(v), fnp.linalg.solve(stack, b[..., None]), fnp.linalg.solve(stack[:1], b[0][:, None] * 2.0),
            fnp.linalg.inv(stack), fnp.linalg.det(stack), fnp.linalg.cholesky(stack))


def arguments(dtype):
    return hermitian_pd(dtype=dtype), hermitian_pd(3, dtype=dtype, seed=1), vectors(3, 4, dtype=dtype)


def test_complex64_stacks_lower_whole_and_equal_the_replay():
    """(complex128 single matrices: in the gradient's program below, one compile for both.)"""
    f, args = (lambda a, stack, b: stacked(stack, b)), arguments("complex64")
    nat, tier = compiled_native(f, *args)
    got, want = nat(*args), fg.jit(f, backend="numpy")(*args)
    assert tier.fallbacks == 0
    assert [str(np.asarray(x).dtype) for x in got] == ["float32"] * 2 + ["complex64"] * 5  # eigh's eigenvalues are real
    for g, w in zip(got, want, strict=True):
        assert_within_bound(g, w)


def loss(a, stack, b):
    """A real function of complex linalg results: its gradient takes conjugates and transposes."""
    return (fnp.sum(fnp.abs(fnp.linalg.solve(a, b[0])) ** 2) + fnp.real(fnp.linalg.det(a))
            + fnp.sum(fnp.imag(fnp.linalg.inv(stack))) + fnp.sum(fnp.abs(fnp.linalg.cholesky(stack)) ** 2)
            + fnp.sum(fnp.linalg.eigh(a)[0] ** 2) + fnp.sum(fnp.real(fnp.linalg.solve(stack, b[..., None]))))


def test_complex128_values_and_the_gradient_of_a_real_function_of_them_run_native():
    args = arguments("complex128")
    g = fg.grad(loss, argnums=(0, 1, 2))
    f = lambda a, stack, b: (single(a, b[0]), g(a, stack, b))  # noqa: E731  (one compile for both)
    nat, tier = compiled_native(f, *args)
    (values, grads), (want_values, want_grads) = nat(*args), fg.jit(f, backend="numpy")(*args)
    assert tier.fallbacks == 0
    assert [str(np.asarray(x).dtype) for x in values] == ["complex128"] * 4 + ["float64"] * 2  # eigh: real values
    for x, y in zip(values + grads, want_values + want_grads, strict=True):
        assert_within_bound(x, y)


def outcome(fn, *args):
    """``fn(*args)``'s values, or the type and words of what it raised."""
    try:
        with np.errstate(all="ignore"):
            return [np.asarray(x) for x in fn(*args)]
    except Exception as exc:  # noqa: BLE001 - compared, not swallowed
        return (type(exc), str(exc))


@pytest.mark.parametrize("dtype", ["complex128", "float64"])
def test_singular_and_non_finite_matrices_give_numpy_s_answer(dtype):
    """numba refuses them with its own LinAlgError ("Matrix is singular to machine precision.",
    "Array must not contain infs or NaNs."); the call runs on the replay instead."""
    f = lambda a, b: (fnp.linalg.solve(a, b), fnp.linalg.inv(a), fnp.linalg.det(a), fnp.linalg.eigh(a)[0])  # noqa: E731
    a, b = hermitian_pd(dtype="complex128"), vectors(4)
    if dtype == "float64":
        a, b = a.real.copy(), b.real.copy()
    nat, tier = compiled_native(f, a, b)
    replay = fg.jit(f, backend="numpy")
    nan = a.copy()
    nan[1, 2] = np.nan
    singular = np.ones_like(a)
    for bad in (nan, singular):
        before = tier.fallbacks
        got, want = outcome(nat, bad, b), outcome(replay, bad, b)
        assert tier.fallbacks == before + 1, "the call should have run on the replay"
        if isinstance(want, tuple):
            assert got == want and want[0] is np.linalg.LinAlgError  # NumPy's words ("Singular matrix")
        else:
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)  # NaN where NumPy puts it
    outcome(nat, a, b)
    assert tier.fallbacks == 2  # a good matrix stays native
