"""Complex values in the native tier (funcgrad/jit/native_complex.py) against the NumPy replay.

Bound (docs/jit.md): every complex (or real-part) result within COMPLEX_ULP_BOUND units of
the result's magnitude, ``|native - replay| <= 4 eps |replay|``, in complex64 and complex128;
a call whose complex results are not all finite runs on the replay, so NaN and inf come out
exactly as NumPy's. Each test also checks that the program lowers whole (a complex program
that could lower but falls back to the replay fails here). Kernels go to the session's
cache (tests/conftest.py): the programs are few and group many primitives. Skips without
numba (the `native` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")

COMPLEX_ULP_BOUND = 4


def run_both(f, *args, fallbacks=0):
    """(native result, replay result) of fg.jit(f) on ``args``, after checking that the program
    lowers whole and that the call handed ``fallbacks`` calls to the replay."""
    with np.errstate(all="ignore"):
        nat = fg.jit(f, backend="native")
        lowered = nat.lower(*args)
        compiled = lowered.compile()
        assert compiled.backend == "native", compiled.why
        assert compiled.left == 0, [e for e in compiled.program.eqns if not native.lowerable(e)]
        tier = lowered._entry.staged.tier
        before = tier.fallbacks
        got = nat(*args)
        assert tier.fallbacks - before == fallbacks, "unexpected hand-over to the replay" if not fallbacks else \
            "the call should have run on the replay"
        return got, fg.jit(f, backend="numpy")(*args)


def ulps(got, want):
    """The largest ``|got - want| / (eps |want|)``, after checking dtypes, shapes and NaN places."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    eps = np.finfo(want.dtype).eps
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    scale = np.maximum(np.abs(w), np.finfo(want.dtype).tiny)
    return float(np.max(np.abs(g - w) / (eps * scale), initial=0.0))


def points(lo, hi, dtype, n=24):
    """Finite points over magnitudes ``lo..hi`` and all angles, the axes with both signs of zero
    (the branch cuts of log and sqrt), and points near the unit circle."""
    r = np.geomspace(lo, hi, n)
    angles = np.concatenate([np.linspace(-np.pi, np.pi, 41), [np.pi / 2, -np.pi / 2]])
    ring = (r[:, None] * np.exp(1j * angles[None, :])).ravel()
    axis = np.concatenate([r, -r])
    signed = [axis + 0j, 1j * axis]
    for part in (axis.astype(complex), (1j * axis).astype(complex)):
        part = part.copy()
        if part.real.any():
            part.imag = -0.0
        else:
            part.real = -0.0
        signed.append(part)
    rng = np.random.default_rng(0)
    near = np.exp(rng.uniform(-1e-3, 1e-3, 200) + 1j * rng.uniform(-1e-2, 1e-2, 200))
    return np.concatenate([ring, *signed, near]).astype(dtype)


UNARY = {  # function: magnitudes (complex128) whose results are finite
    fnp.exp: (1e-300, 700.0), fnp.log: (1e-300, 1e300), fnp.sqrt: (1e-300, 1e300), fnp.sin: (1e-300, 700.0),
    fnp.cos: (1e-300, 700.0), fnp.tan: (1e-300, 700.0), fnp.sinh: (1e-300, 700.0), fnp.cosh: (1e-300, 700.0),
    fnp.tanh: (1e-300, 700.0), fnp.arctan: (1e-300, 1e300), fnp.arctanh: (1e-300, 1e300),
    fnp.log1p: (1e-300, 1e300), fnp.square: (1e-150, 1e150), fnp.reciprocal: (1e-300, 1e300),
    fnp.absolute: (1e-300, 1e300), fnp.angle: (1e-300, 1e300), fnp.conj: (1e-300, 1e300),
    fnp.real: (1e-300, 1e300), fnp.imag: (1e-300, 1e300), fnp.negative: (1e-300, 1e300),
}


def _range(lo, hi, dtype):
    if dtype == "complex64":  # (within float32's range, and exp(80) for the exponentials)
        return max(lo, 1e-35), (80.0 if hi == 700.0 else 1e35 if hi > 1e150 else 1e18)
    return lo, hi


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_each_complex_function_is_within_the_ulp_bound_of_numpy(dtype):
    grids = [points(*_range(lo, hi, dtype), dtype) for lo, hi in UNARY.values()]

    def f(*zs):
        return tuple(fn(z) for fn, z in zip(UNARY, zs))

    got, want = run_both(f, *grids)
    for fn, g, w in zip(UNARY, got, want):
        assert ulps(g, w) <= COMPLEX_ULP_BOUND, (fn.__name__, ulps(g, w))
        if dtype == "complex128" and fn not in (fnp.reciprocal, fnp.square):  # signs of zero parts as NumPy's
            # (NumPy's SIMD loops for square and reciprocal use fused multiply-adds: a part that is zero
            # here can be -0.0 or a rounding error's size there, far below the bound)
            np.testing.assert_array_equal(np.signbit(np.real(g)), np.signbit(np.real(w)), err_msg=fn.__name__)
            np.testing.assert_array_equal(np.signbit(np.imag(g)), np.signbit(np.imag(w)), err_msg=fn.__name__)


def test_branch_cuts_keep_the_sign_of_zero():
    x = np.array([-4.0, -1.0, -1e-300, -1e300])
    z = np.concatenate([x + 0j, x.astype(complex)])
    z.imag[4:] = -0.0  # the cut approached from below

    got, want = run_both(lambda z: (fnp.log(z), fnp.sqrt(z), fnp.angle(z)), z)
    for g, w in zip(got, want):
        assert ulps(g, w) <= COMPLEX_ULP_BOUND
        np.testing.assert_array_equal(np.signbit(np.imag(g)), np.signbit(np.imag(w)))
    assert np.all(got[0].imag[:4] > 0) and np.all(got[0].imag[4:] < 0)  # log: +pi above, -pi below


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_arithmetic_power_and_mixed_operands_follow_numpy_s_promotion(dtype):
    real = "float64" if dtype == "complex128" else "float32"
    rng = np.random.default_rng(3)
    a = (rng.uniform(-3, 3, 400) + 1j * rng.uniform(-3, 3, 400)).astype(dtype)
    b = (rng.uniform(-3, 3, 400) + 1j * rng.uniform(-3, 3, 400)).astype(dtype)
    x = rng.uniform(0.5, 2.0, 400).astype(real)

    def f(a, b, x):
        return (a * b, a / b, a + b - x, a ** b, a ** 2, a ** 3, a ** x, x * a, x / a, 2.0 * a + 1j,
                a * 1j - 0.5j, fnp.where(x > 1.0, a, x), (x > 1.0).astype(dtype) * a)

    got, want = run_both(f, a, b, x)
    for k, (g, w) in enumerate(zip(got, want)):
        if k in (3, 6):  # a ** b = exp(b log a): rounding of b log a is amplified by |b log a| in any implementation
            cond = 1.0 + np.abs((b if k == 3 else x).astype(complex) * np.log(a.astype(complex)))
            err = np.abs(g.astype(complex) - w) / (np.finfo(dtype).eps * np.abs(w) * cond)
            assert np.max(err) <= COMPLEX_ULP_BOUND, np.max(err)
            continue
        assert ulps(g, w) <= COMPLEX_ULP_BOUND, (k, ulps(g, w))


def test_float64_operands_promote_complex64_to_complex128():
    z = np.linspace(-1, 1, 6).astype(np.complex64) * (1 + 1j)
    x = np.linspace(0.5, 1.0, 6)

    got, want = run_both(lambda z, x: fnp.exp(z) * x + z, z, x)
    assert got.dtype == np.complex128  # (exp(z) is complex64: the bound in its precision)
    assert ulps(got.astype(np.complex64), want.astype(np.complex64)) <= COMPLEX_ULP_BOUND


def test_abs_of_huge_and_tiny_magnitudes_does_not_overflow_or_underflow():
    z = np.array([1e300 + 1e300j, 3e-320 + 4e-320j, 1e-170 + 1e-170j, -1e308 + 0j, 5e-324j])
    got, want = run_both(lambda z: (fnp.abs(z), fnp.angle(z)), z)
    for g, w in zip(got, want):
        assert np.all(np.isfinite(g)) and ulps(g, w) <= COMPLEX_ULP_BOUND
    assert got[0][0] == pytest.approx(np.sqrt(2) * 1e300, rel=1e-15) and got[0][1] > 0


NON_FINITE = {  # inputs whose complex results are not all finite: the call runs on the replay
    "inf operand": (lambda z: fnp.exp(z) * 2.0, np.array([np.inf + 0j, 1 + 1j])),
    "nan operand": (lambda z: fnp.sin(z) + z * z, np.array([complex(np.nan, 0.0), 1 + 1j])),
    "overflow": (lambda z: fnp.exp(z) * z, np.array([710.0 + 0j, 1 + 1j])),
    "division by zero": (lambda z: 1.0 / z + fnp.log(z), np.array([0j, 1 + 1j])),
    "product along an axis": (lambda z: fnp.prod(z * 1e200, axis=1) * 1e-300, np.array([[1 + 1j, 2j], [1.0 + 0j, 1j]])),
    "tanh of huge": (lambda z: fnp.tanh(z) * fnp.cosh(z), np.array([800.0 + 1j, 1 + 1j])),
}


FINITE = {  # finite values of each NON_FINITE case's shape: there the same program runs native
    name: (np.array([[1 + 1j, 0.5 - 2j], [1j, 2.0]]) * 1e-200 if z.ndim == 2 else np.array([1 + 1j, 0.5 - 2j]))
    for name, (_, z) in NON_FINITE.items()}


def together(cases):
    """One program of several cases (each compile costs about half a second before its first
    equation): case k reads its own arguments, so no two cases share an equation; the result is
    the tuple of the cases' results."""
    def run(*args):
        outs, start = [], 0
        for f, count in cases:
            outs.append(f(*args[start:start + count]))
            start += count
        return tuple(outs)
    return run


def test_non_finite_results_are_numpy_s_exactly():
    # the six cases compile as one program; call k gives case k its non-finite input and the others
    # finite ones, so the hand-over to the replay is case k's alone
    names = sorted(NON_FINITE)
    f = together([(NON_FINITE[name][0], 1) for name in names])
    nat, replay = fg.jit(f, backend="native"), fg.jit(f, backend="numpy")
    finite = [FINITE[name] for name in names]
    compiled = nat.lower(*finite).compile()
    assert compiled.backend == "native" and compiled.left == 0, compiled.why
    tier = nat.lower(*finite)._entry.staged.tier
    for name in names:
        args = [NON_FINITE[n][1] if n == name else FINITE[n] for n in names]
        before = tier.fallbacks
        with np.errstate(all="ignore"):
            got, want = nat(*args), replay(*args)
        assert tier.fallbacks - before == 1, f"{name}: the call should have run on the replay"
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=name)
            np.testing.assert_array_equal(np.signbit(g.imag), np.signbit(w.imag), err_msg=name)
    # the same program on finite values only: native code again, no hand-over
    before = tier.fallbacks
    got, want = nat(*finite), replay(*finite)
    assert tier.fallbacks == before
    for name, g, w in zip(names, got, want, strict=True):
        assert ulps(g, w) <= 8 * COMPLEX_ULP_BOUND, name


def test_debug_nans_names_the_primitive_of_a_complex_program():
    f = fg.jit(lambda z: fnp.sum(fnp.abs(fnp.log(z) * z)), backend="native")
    z = np.array([1 + 1j, 2 - 1j])
    assert f.lower(z).compile().backend == "native"
    with np.errstate(all="ignore"), fg.debug_nans(), pytest.raises(FloatingPointError, match="primitive 'multiply'"):
        f(np.array([0j, 2 - 1j]))  # log(0) * 0 = (-inf + 0j) * 0 = nan


def grid(*shape, dtype="complex128"):
    n = int(np.prod(shape))
    return (np.linspace(-1.0, 1.5, n) + 1j * np.linspace(0.7, -1.2, n)).reshape(shape).astype(dtype)


# name: (function, arguments, terms per value of its largest reduction)
PROGRAMS = {
    "reductions and views": (lambda z: (fnp.sum(z * z, axis=0), fnp.mean(fnp.exp(z.T), axis=1, keepdims=True),
                                        fnp.prod(z[:, 1:] + 1.0), fnp.sum(z), z[::-1, 0] * 2.0), (grid(3, 4),), 4),
    "contractions": (lambda a, b: (a @ b, fnp.dot(a, b[:, 0]), fnp.tensordot(a, b, axes=1) * 1j),
                     (grid(3, 4), grid(4, 2)), 4),
    "blas": (lambda a, b: fnp.sin(a) @ b, (grid(40, 50), grid(50, 40) * 0.5), 50),
    "blocks": (lambda z: (fnp.concatenate([z, fnp.conj(z)], axis=1), fnp.stack([z, z * 1j]),
                          z.at[0].set(1j).at[:, 1:3].add(z[:, :2] * 2.0)), (grid(3, 4),), 1),
    "loop": (lambda z, w: fg.fori_loop(0, 20, lambda i, c: (c[0] * c[2] + 0.1j * fnp.sin(c[0]),
                                                             c[1] + fnp.sum(fnp.abs(c[0]) ** 2), c[2]),
                                       (z, fnp.real(z[0]) * 0.0, w))[:2],
             (grid(2) * 0.3, np.array([0.9 + 0.1j, 0.8 - 0.2j])), 40),
}


def test_complex_programs_lower_whole_and_equal_the_replay():
    # the five programs compile as one, each compared with its own bound
    names = sorted(PROGRAMS)
    f = together([(PROGRAMS[name][0], len(PROGRAMS[name][1])) for name in names])
    got, want = run_both(f, *[a for name in names for a in PROGRAMS[name][1]])
    for name, g_case, w_case in zip(names, got, want, strict=True):
        terms = PROGRAMS[name][2]
        for g, w in zip(g_case if isinstance(g_case, tuple) else (g_case,),
                        w_case if isinstance(w_case, tuple) else (w_case,), strict=True):
            assert ulps(g, w) <= COMPLEX_ULP_BOUND * terms, name


def loss(z, x):
    """A real function of complex and real inputs, as a scientist writes one."""
    w = fnp.exp(1j * x) * z
    return fnp.sum(fnp.abs(fnp.sin(w) + fnp.conj(z) * 2.0) ** 2) + fnp.sum(fnp.real(w * w)) \
        + fnp.sum(fnp.angle(z) * x) + fnp.sum(fnp.imag(fnp.log(z)) * fnp.tanh(z).real)


def test_gradient_of_a_real_function_of_complex_inputs_runs_native():
    z, x = grid(5), np.linspace(-1.0, 1.0, 5)
    got, want = run_both(fg.grad(loss, argnums=(0, 1)), z, x)
    assert got[0].dtype == np.complex128 and got[1].dtype == np.float64
    for g, w in zip(got, want):
        scale = np.max(np.abs(w))
        assert np.max(np.abs(g - w)) <= 64 * np.finfo(float).eps * scale


def test_gradient_follows_jax_s_conjugate_convention():
    # JAX: grad(f)(z) = conj(df/dz) * 2 for |z|^2 style functions: grad(|z|^2) = 2 conj(z)... as
    # recorded: jax.grad(lambda z: jnp.abs(z) ** 2)(1 + 2j) = 2 - 4j,
    # jax.grad(lambda z: jnp.real(z * z))(1 + 2j) = 2 + 4j, jax.grad(lambda z: jnp.imag(jnp.exp(z)))(1 + 2j)
    # = -1j * conj(exp(1 + 2j)) conjugated = 2.4717266720048188 + 1.1312043837568135j (jax 0.10.2, x64)
    z = np.array([1 + 2j])
    f = fg.jit(fg.grad(lambda z: fnp.sum(fnp.abs(z) ** 2 + fnp.real(z * z) + fnp.imag(fnp.exp(z)))),
               backend="native")
    assert f.lower(z).compile().backend == "native"
    np.testing.assert_allclose(f(z), [(2 - 4j) + (2 + 4j) + (2.471726672004819 + 1.1312043837568138j)],
                               rtol=1e-14)


def test_kept_on_the_replay_expm1_sign_and_complex_comparisons():
    """Where numba's complex function differs from NumPy's beyond the bound (expm1 of tiny
    arguments, sign's NumPy 2 definition z/|z|), the equation stays on the replay, and the rest
    of the program lowers around it."""
    z = grid(4)
    for fn in (fnp.expm1, fnp.sign, fnp.exp2, fnp.log10):
        nat = fg.jit(lambda z: fn(fnp.sin(z)) * 2.0, backend="native")
        c = nat.lower(z).compile()
        assert c.backend == "native" and c.left == 1 and c.lowered == 2, (fn.__name__, c.why)
        assert ulps(nat(z), fg.jit(lambda z: fn(fnp.sin(z)) * 2.0, backend="numpy")(z)) <= 2 * COMPLEX_ULP_BOUND
