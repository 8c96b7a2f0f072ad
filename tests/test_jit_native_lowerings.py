"""Each lowering of the native tier beyond elementwise loops (funcgrad/jit/native_ops.py):
the native result equals the NumPy replay within the bound docs/jit.md states, and the
program runs wholly native (a test fails if it silently falls back to the replay).

Bound: elementwise values within tests/test_jit_native.py's RTOL of the replay's; sums,
means, products and contractions over n terms within n * eps * (the same reduction of
the terms' magnitudes), as any order of summation is. Skips without numba (the
`native` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native

needs_numba = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")
pytestmark = needs_numba


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path / "cache"))


def run_both(f, *args):
    """(native result, replay result, Compiled) of fg.jit(f) on ``args``."""
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(*args).compile()
    want = fg.jit(f, backend="numpy")(*args)
    return nat(*args), want, compiled


def assert_within_bound(got, want, terms=1):
    """Equal up to ``terms`` roundings per value (relative to the values' magnitude)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    eps = np.finfo(want.dtype).eps if want.dtype.kind == "f" else 0
    scale = np.maximum(np.abs(want), 1.0)
    assert np.all(np.abs(got - want) <= 8 * terms * eps * scale), np.max(np.abs(got - want) / scale)


def grid(*shape, dtype="float64", lo=-1.0, hi=1.5):
    n = int(np.prod(shape))
    return np.linspace(lo, hi, n).reshape(shape).astype(dtype)


def spd(n):
    """A well-conditioned symmetric positive definite matrix (upper triangle perturbed: only the lower is read)."""
    g = grid(n, n)
    a = g @ g.T + n * np.eye(n)
    a[0, n - 1] += 0.25
    return a


def spd_stack(*batch, n=4):
    """A stack (*batch, n, n) of different well-conditioned symmetric positive definite matrices."""
    count = int(np.prod(batch))
    return np.stack([spd(n) * (1.0 + 0.5 * j) + j * np.eye(n) for j in range(count)]).reshape(batch + (n, n))


# name: (function, arguments, terms per value of the largest reduction in it)
LOWERINGS = {
    "sum axis": (lambda x: fnp.sin(fnp.sum(fnp.exp(x), axis=1)), (grid(3, 4),), 4),
    "sum axes keepdims": (lambda x: fnp.sum(fnp.tanh(x), axis=(0, 2), keepdims=True) * x, (grid(2, 3, 4),), 8),
    "sum negative axis": (lambda x: fnp.sum(x * x, axis=-1) + 1.0, (grid(5, 3),), 3),
    "mean": (lambda x: fnp.mean(fnp.sin(x), axis=0) * fnp.mean(x), (grid(4, 3),), 12),
    "prod": (lambda x: fnp.prod(x + 2.0, axis=1, keepdims=True) - x, (grid(3, 5),), 5),
    "max and min": (lambda x: fnp.max(fnp.sin(x), axis=0) - fnp.min(x, axis=1, keepdims=True), (grid(4, 4),), 1),
    "max whole": (lambda x: fnp.max(x * 3.0) + fnp.min(fnp.cos(x)), (grid(7),), 1),
    "transpose": (lambda x: fnp.sin(x).T * fnp.arange(3.0) + fnp.transpose(x, (1, 0)), (grid(3, 4),), 1),
    "swapaxes and moveaxis": (lambda x: fnp.swapaxes(fnp.exp(x), 0, 1) + fnp.moveaxis(x, 0, -1), (grid(2, 3, 2),), 1),
    "reshape": (lambda x: fnp.reshape(fnp.sin(x), (6, 2)) * fnp.reshape(x, (2, 6)).T, (grid(3, 4),), 1),
    "expand and squeeze": (lambda x: fnp.squeeze(fnp.expand_dims(fnp.cos(x), 0), 0) + x[:, None, :].sum(1),
                           (grid(3, 4),), 1),
    "broadcast_to": (lambda x: fnp.broadcast_to(fnp.sin(x), (2, 3, 4)) * 2.0, (grid(3, 4),), 1),
    "slicing": (lambda x: fnp.sin(x)[1:, ::2] * fnp.cos(x)[:-1, 1::2] + x[0, -1], (grid(3, 4),), 1),
    "negative step": (lambda x: fnp.exp(x)[::-1, 2] - x[..., 0], (grid(3, 4),), 1),
    "matmul small": (lambda x: fnp.tanh(fnp.sin(x) @ fnp.cos(x).T), (grid(3, 4),), 4),
    "matmul batched": (lambda a, b: fnp.matmul(fnp.exp(a), b), (grid(2, 3, 4), grid(4, 2)), 4),
    "matmul vector": (lambda a, v: (a @ v) * (v @ a.T), (grid(3, 4), grid(4)), 4),
    "matmul blas": (lambda a, b: fnp.sin(a) @ fnp.cos(b), (grid(40, 50), grid(50, 40)), 50),
    "dot": (lambda a, b: fnp.dot(fnp.sin(a), b) + fnp.dot(b[:, 0], b[:, 1]), (grid(3, 4), grid(4, 2)), 4),
    "tensordot": (lambda a, b: fnp.tensordot(a * 2.0, b, axes=((0, 2), (1, 0))), (grid(2, 3, 4), grid(4, 2, 5)), 8),
    "tensordot blas": (lambda a, b: fnp.tensordot(fnp.sin(a), b.T, axes=((0, 2), (1, 0))),
                       (grid(8, 10, 12), grid(40, 8, 12)), 96),
    "concatenate": (lambda a, b: fnp.concatenate([fnp.sin(a), b * 2.0, a], axis=1) + 1.0, (grid(3, 2), grid(3, 4)), 1),
    "at set and add": (lambda x: fnp.exp(x).at[0].set(1.0).at[:, 1:3].add(x[:, :2] * 2.0), (grid(3, 4),), 1),
    "maximum and minimum": (lambda x, y: fnp.maximum(fnp.sin(x), y) * fnp.minimum(x, 0.25), (grid(3, 4), grid(4)), 1),
    "astype": (lambda x: (x > 0.0).astype(x.dtype) * fnp.sin(x), (grid(3, 4),), 1),
    # x ** p for literal p in {±0.5, ±1, ±1.5, ±2, ±2.5, 3}: products and square roots, within the bound
    "power literal exponents": (lambda x: x ** 2 + x ** 3 - x ** 0.5 + x ** 1.5 * x ** -1.5 + x ** 2.5 - x ** -2.5
                                + x ** -0.5 + x ** -1 + x ** -2 + x ** 1.7, (grid(3, 4, lo=0.1, hi=3.0),), 8),
    # LAPACK through numba: within a few roundings of NumPy's LAPACK on well-conditioned matrices
    "linalg solve and inv": (lambda a, b: fnp.linalg.solve(a, b) + fnp.sum(fnp.linalg.inv(a), axis=0),
                             (spd(4), grid(4)), 16),
    "linalg solve matrix": (lambda a, b: fnp.linalg.solve(a * 2.0, b), (spd(4), grid(4, 2)), 16),
    "linalg cholesky det eigh": (lambda a: fnp.linalg.cholesky(a) * fnp.linalg.det(a) + fnp.linalg.eigh(a)[0]
                                 + fnp.linalg.eigh(a)[1] ** 2, (spd(4),), 16),
    # stacks (..., n, n): a loop over the matrices, one LAPACK call each
    "linalg stacks solve and inv": (lambda a, b: fnp.linalg.solve(a, b) + fnp.linalg.inv(a) @ b,
                                    (spd_stack(2, 3), grid(2, 3, 4, 2)), 16),
    "linalg stack solve vector": (lambda a, v: fnp.linalg.solve(a * 2.0, fnp.sin(v)), (spd_stack(3), grid(4)), 16),
    "linalg stack solve vectors": (lambda a, v: fnp.linalg.solve(a, v[..., None])[..., 0], (spd_stack(3), grid(3, 4)),
                                   16),
    "linalg stack cholesky det eigh": (lambda a: fnp.linalg.cholesky(a) * fnp.linalg.det(a)[..., None, None]
                                       + fnp.linalg.eigh(a)[0][..., None] + fnp.linalg.eigh(a)[1] ** 2,
                                       (spd_stack(2, 2),), 16),
}


def _groups(names, size):
    return [names[i:i + size] for i in range(0, len(names), size)]


# A few lowerings per compiled program (each compile costs about half a second before its first
# equation): every case reads its own arguments, so no two cases share an equation, and each is
# checked against the replay with its own bound. The linalg cases compile one to a program.
CASE_GROUPS = (_groups(sorted(n for n in LOWERINGS if not n.startswith("linalg")), 6)
               + [[n] for n in sorted(LOWERINGS) if n.startswith("linalg")])


@pytest.mark.parametrize("names", CASE_GROUPS, ids=" + ".join)
def test_lowering_runs_native_and_equals_the_replay(names):
    cases = [LOWERINGS[name] for name in names]

    def together(*args):
        outs, start = [], 0
        for f, case_args, _ in cases:
            outs.append(f(*args[start:start + len(case_args)]))
            start += len(case_args)
        return tuple(outs)

    got, want, compiled = run_both(together, *[a for _, case_args, _ in cases for a in case_args])
    # fails if any equation silently stays on the replay where a lowering exists
    assert compiled.backend == "native", compiled.why
    assert compiled.left == 0, [e for e in compiled.program.eqns if not native.lowerable(e)]
    for name, (_, _, terms), g, w in zip(names, cases, got, want, strict=True):
        try:
            assert_within_bound(g, w, terms)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from err


def test_every_lowering_case_is_in_one_group():
    assert sorted(n for group in CASE_GROUPS for n in group) == sorted(LOWERINGS)


GRADIENTS = {  # gradients go through the transposes of these lowerings (scatters, views, contractions)
    "indexing": (lambda x: fnp.sum(fnp.sin(x)[1:, ::2] * fnp.cos(x)[0, ::2]), grid(3, 4)),
    "reductions": (lambda x: fnp.sum(fnp.mean(fnp.exp(x), axis=0) * fnp.sum(x, axis=1).sum()), grid(3, 4)),
    "matmul": (lambda x: fnp.sum(fnp.tanh(x @ x.T) * 2.0), grid(3, 4)),
    "concatenate and reshape": (lambda x: fnp.sum(fnp.reshape(fnp.concatenate([x, fnp.sin(x)]), (4, 6)) ** 2),
                                grid(2, 6)),
    "linalg": (lambda a: fnp.sum(fnp.linalg.solve(a, grid(4))) + fnp.linalg.det(a) + fnp.sum(fnp.linalg.inv(a))
               + fnp.sum(fnp.linalg.cholesky(a) ** 2) + fnp.sum(fnp.linalg.eigh(a)[0] ** 2), spd(4)),
    "linalg stack": (lambda a: fnp.sum(fnp.linalg.solve(a, grid(3, 4, 2))) + fnp.sum(fnp.linalg.det(a))
                     + fnp.sum(fnp.linalg.inv(a)) + fnp.sum(fnp.linalg.cholesky(a) ** 2)
                     + fnp.sum(fnp.linalg.eigh(a)[0] ** 2), spd_stack(3)),
}


# the small gradients in one program (the sum of their losses, differentiated in each case's argument)
GRADIENT_GROUPS = ([sorted(n for n in GRADIENTS if not n.startswith("linalg"))]
                   + [[n] for n in sorted(GRADIENTS) if n.startswith("linalg")])


@pytest.mark.parametrize("names", GRADIENT_GROUPS, ids=" + ".join)
def test_gradients_through_lowerings_run_native(names):
    losses = [GRADIENTS[name][0] for name in names]

    def total(*xs):
        return sum(loss(x) for loss, x in zip(losses, xs, strict=True))

    got, want, compiled = run_both(fg.grad(total, argnums=tuple(range(len(names)))),
                                   *[GRADIENTS[name][1] for name in names])
    assert compiled.backend == "native", compiled.why
    assert compiled.left == 0, [e for e in compiled.program.eqns if not native.lowerable(e)]
    for name, g, w in zip(names, got, want, strict=True):
        try:
            assert_within_bound(g, w, 12)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from err


def test_every_gradient_case_is_in_one_group():
    assert sorted(n for group in GRADIENT_GROUPS for n in group) == sorted(GRADIENTS)


def test_float32_reductions_and_contractions():
    x = grid(4, 6, dtype="float32")
    got, want, compiled = run_both(lambda x: (fnp.sum(x, axis=0), fnp.max(fnp.sin(x), axis=1), x @ x.T), x)
    assert compiled.backend == "native" and compiled.left == 0
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        assert_within_bound(g, w, 6)


def test_max_and_min_let_nan_win_as_numpy_does():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, 0.5]])
    got, want, compiled = run_both(lambda x: (fnp.max(x, axis=1), fnp.min(x, axis=0), fnp.maximum(x, 1.0)), x)
    assert compiled.backend == "native" and compiled.left == 0
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_views_alone_stay_on_the_replay():
    """A view alone is free in NumPy and a copy in native code: it is not lowered by itself."""
    f = fg.jit(lambda x: fnp.cumsum(x.T, axis=0), backend="native")
    c = f.lower(grid(3, 4)).compile()
    assert c.backend == "numpy" and "no equation lowers" in c.why


# complex programs: tests/test_jit_native_complex.py


def test_products_of_one_matrix_with_two_ready_vectors_read_it_once():
    # A x and A v (a Hessian-vector product's forward and tangent): one BLAS product [x, v] A^T
    a, x, v = grid(200, 200), grid(200, lo=-2.0), grid(200, lo=0.5, hi=-1.0)

    def f(x, v):
        return fnp.tanh(a @ x) * (a @ v) + (a @ fnp.sin(x + v)) * 0.5

    def hvp(x, v):
        return fg.hvp(lambda y: fnp.sum(fnp.tanh(a @ y) ** 2), (x,), (v,))[1]

    for fn, terms in ((f, 200), (hvp, 400)):
        got, want, compiled = run_both(fn, x, v)
        assert compiled.backend == "native" and compiled.left == 0, compiled.why
        assert_within_bound(got, want, terms)
        made = native.native_program(fg.jit(fn).program(x, v))
        src = "\n".join(e.fn.source for e in made[0].eqns if hasattr(e.fn, "source"))
        assert src.count("np.dot(") == 1 and "matvec_pair(" in src, src  # the pair; then sin(x + v) or the cotangent alone


def test_strided_arguments_are_read_right():
    # a segment reads its array arguments as C-contiguous arrays: views are copied, not misread
    base = grid(6, 8)
    f = lambda a, v: fnp.tanh(a) * 2.0 + fnp.exp(v)[:, None] + fnp.sum(a * a, axis=0)  # noqa: E731
    for a, v in ((base.T, grid(16)[::2]), (base[::2, ::3].T, base[::2, 1])):
        assert not a.flags.c_contiguous and not v.flags.c_contiguous
        got, want, compiled = run_both(f, a, v)
        assert compiled.backend == "native" and compiled.left == 0, compiled.why
        assert_within_bound(got, want, 8)
