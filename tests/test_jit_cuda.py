"""fg.jit's CUDA backend (funcgrad/jit/cuda.py) on the fake device, without a GPU.

The fake device gets CuPy's ``ElementwiseKernel`` from ``fake_backend.elementwise_kernels()``:
a stand-in that checks each kernel's parameter declarations and body the way CuPy's
compiler would reject them, then evaluates the body with the fake device's array
functions. So these tests check the structure (which equations fuse, one kernel per
region, parameters and their types, the cache) and that the emitted C computes the
program: values equal to the NumPy replay's within the bound docs/jit.md states,
gradients through jit, and no host copies. tests/test_jit_cuda_gpu.py runs the same
kernels on a real GPU where one is visible.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import cuda
from funcgrad.jit import tiered
from funcgrad.jit.cuda_ops import (COMPLEX_OK, CUDA_COMPARISONS, CUDA_EXPR, CUDA_SELECTIONS, C_TYPES, FUNCTIONS)
from funcgrad.jit.known import primitive_of
from funcgrad.jit.native_complex import COMPLEX_EXPR, COMPLEX_PARTS
from funcgrad.jit.native_ops import COMPARISONS, NATIVE_EXPR, SELECTIONS

# each result within this many ulp of the replay's (the stand-in evaluates the same operations in
# the same dtypes as the replay, so here they agree to the bit; docs/jit.md states the GPU's bound)
ULP = 4


@pytest.fixture(autouse=True)
def kernels(monkeypatch):
    """The fake device with ElementwiseKernel; native versions compiled at the first call."""
    fb.install()
    monkeypatch.setattr(tiered.settings, "native_wait", True)
    with fb.elementwise_kernels():
        yield


def _built() -> list:
    return list(fb.KERNELS)


def _new_kernels(before: list) -> list:
    return fb.KERNELS[len(before):]


def _assert_ulp(got, want, ulp=ULP):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    finfo = np.finfo(want.real.dtype if np.iscomplexobj(want) else want.dtype)
    tol = ulp * finfo.eps * np.maximum(np.abs(want), finfo.tiny)
    with np.errstate(invalid="ignore"):
        close = (got == want) | (np.abs(got - want) <= tol) | (np.isnan(got) & np.isnan(want))
    assert np.all(close), (got, want)


def _run(f, *args, backend="native"):
    """``fg.jit(f)`` on the fake device (inside no_host_sync) and its Compiled record."""
    jf = fg.jit(f, backend=backend)
    dev = [fb.to_fake(a) if isinstance(a, np.ndarray) else a for a in args]
    compiled = jf.lower(*dev).compile()
    with fb.no_host_sync():
        out = jf(*dev)
    return fg.tree_util.tree_map(fb.fake.asnumpy, out), compiled


# --- one source of truth: the device lowers what the host lowers ------------------------------

def test_every_host_lowering_has_a_cuda_spelling():
    assert set(CUDA_EXPR) == set(NATIVE_EXPR)
    assert set(CUDA_COMPARISONS) == set(COMPARISONS)
    assert set(CUDA_SELECTIONS) == set(SELECTIONS)
    assert COMPLEX_OK <= set(CUDA_EXPR)
    called = {m for expr in CUDA_EXPR.values() for m in re.findall(r"([a-z0-9_]+)\(", expr)}
    assert called <= set(FUNCTIONS) | {"{t}"}.union(C_TYPES.values()), called - set(FUNCTIONS)


def test_complex_lowerings_of_host_and_device_differ_as_documented():
    """Complex values (docs/jit.md): the device lowers complex arithmetic and the functions of
    COMPLEX_OK through thrust's complex overloads; the native tier lowers those of COMPLEX_EXPR
    and the real parts of COMPLEX_PARTS. Host-only: ``conj``, complex ``arctan``/``arctanh``/
    ``log1p`` and ``real``/``imag``/``abs``/``angle`` of complex values (their CUDA spellings
    need member calls or overloads no GPU has compiled here), and the hand-over of non-finite
    complex results to the replay (thrust follows C99's special values). Device-only: complex
    ``log10`` (numba's is outside the host's bound)."""
    host_only = {fnp.conj, fnp.arctan, fnp.arctanh, fnp.log1p}
    assert set(COMPLEX_EXPR) - COMPLEX_OK == {primitive_of(fn) for fn in host_only}
    assert COMPLEX_OK - set(COMPLEX_EXPR) == {primitive_of(fnp.log10)}
    assert not set(COMPLEX_PARTS) & COMPLEX_OK


def test_complex_parts_stay_on_the_device_replay_around_a_kernel():
    z = fb.to_fake(np.array([0.3 + 0.2j, -0.5 + 1.0j, 1.2 - 0.7j]))

    def f(v):
        w = fnp.exp(v) * v + fnp.conj(v) * 2.0
        return fnp.real(w) * fnp.abs(v) + fnp.angle(w) - fnp.imag(w * w)

    jf = fg.jit(f, backend="native")
    compiled = jf.lower(z).compile()
    assert compiled.backend == "native" and compiled.lowered >= 2 and compiled.left >= 4
    with fb.no_host_sync():
        out = jf(z)
    _assert_ulp(fb.fake.asnumpy(out), fg.jit(f, backend="numpy")(fb.fake.asnumpy(z)), ulp=8)


# --- structure: one kernel per region ---------------------------------------------------------

def test_a_chain_is_one_kernel_with_typed_parameters():
    def f(x, y):
        return fnp.tanh(fnp.sin(x) * y + 1.0) - x / 3.0

    x, y = np.linspace(0.1, 0.9, 6).reshape(2, 3), np.array([0.5, 1.5, 2.0])
    before = _built()
    out, compiled = _run(f, x, y)
    new = _new_kernels(before)
    assert compiled.backend == "native" and compiled.left == 0 and compiled.lowered == 6
    assert len(new) == 1
    k = new[0]
    assert re.fullmatch(r"funcgrad_region_[0-9a-f]{16}", k.name)
    assert k.in_params == "float64 v0, float64 v1" and k.out_params.startswith("float64 v")
    assert len(k.operation.splitlines()) == 6 and "--fmad=false" in k.options
    _assert_ulp(out, f(x, y))


def test_regions_split_by_shape_and_around_what_does_not_lower():
    def f(x):
        a = fnp.exp(x) * 2.0 + x            # a (4,) region
        s = fnp.sum(a)                       # a reduction: stays on the replay
        b = fnp.sin(s) * s - 1.0             # a () region
        return fnp.cos(a) * b + fnp.sqrt(x)  # (4,) again: reads b, so after it

    x = np.linspace(0.2, 1.0, 4)
    before = _built()
    out, compiled = _run(f, x)
    new = _new_kernels(before)
    assert len(new) == 3 and compiled.left == 1
    assert [k.out_params.count(",") + 1 for k in new] == [1, 1, 1]
    _assert_ulp(out, f(x))


def test_single_equations_stay_backend_calls():
    def f(x):
        return fnp.sum(fnp.sin(x))

    before = _built()
    out, compiled = _run(f, np.linspace(0, 1, 5))
    assert _new_kernels(before) == [] and compiled.backend == "numpy"
    assert "no elementwise region" in compiled.why
    _assert_ulp(out, f(np.linspace(0, 1, 5)))


def test_broadcasting_is_left_to_the_kernel():
    def f(x, y):
        return fnp.exp(x * y) + y

    x, y = np.linspace(0.1, 0.5, 3).reshape(3, 1), np.linspace(-1, 1, 4)
    out, compiled = _run(f, x, y)
    assert out.shape == (3, 4) and compiled.left == 0
    _assert_ulp(out, f(x, y))


# --- values: every lowered primitive, float32 and float64 -------------------------------------

_UNARY = [fn for fn in (fnp.sin, fnp.cos, fnp.tan, fnp.tanh, fnp.sinh, fnp.cosh, fnp.exp, fnp.log, fnp.sqrt,
                        fnp.arctan, fnp.arcsin, fnp.arccos, fnp.log1p, fnp.expm1, fnp.arctanh, fnp.arcsinh,
                        fnp.log10, fnp.log2, fnp.exp2, fnp.sign, fnp.negative, fnp.positive, fnp.square,
                        fnp.reciprocal, fnp.absolute, fnp.zeros_like, fnp.ones_like)]
_BINARY = [fnp.add, fnp.subtract, fnp.multiply, fnp.divide, fnp.power, fnp.maximum, fnp.minimum]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", _UNARY, ids=lambda f: f.__name__)
def test_unary_values(fn, dtype):
    x = np.array([[0.1, -0.4, 0.7], [0.0, 0.55, -0.9]], dtype=dtype)

    def f(v):
        return fn(v * 0.5) + v

    with np.errstate(all="ignore"):  # log, sqrt ... of negative values: NaN, as NumPy's
        out, compiled = _run(f, x)
        want = f(x)
    assert compiled.left == 0
    _assert_ulp(out, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", _BINARY, ids=lambda f: f.__name__)
def test_binary_values(fn, dtype):
    x = np.array([0.3, 1.7, 2.5, np.nan, 0.9], dtype=dtype)
    y = np.array([1.1, 0.4, 2.5, 0.5, np.nan], dtype=dtype)

    def f(a, b):
        return fn(a, b * 1.5) * 2.0

    out, compiled = _run(f, x, y)
    assert compiled.left == 0
    _assert_ulp(out, f(x, y))  # NaN where NumPy puts it (maximum/minimum: a NaN wins)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_comparisons_and_where(dtype):
    x = np.array([-1.0, 0.0, 0.5, 2.0, np.nan], dtype=dtype)

    def f(v):
        w = v * 2.0
        keep = (w > 0.5) | (w <= -1.0)
        same = fnp.equal(w, 1.0)
        return fnp.where(w >= 0.0, fnp.sqrt(fnp.abs(w)), -w) + fnp.where(w != 4.0, w, 0.0) * 0.5, keep, same

    out, _ = _run(f, x)
    want = f(x)
    _assert_ulp(out[0], want[0])
    np.testing.assert_array_equal(out[1], want[1])
    np.testing.assert_array_equal(out[2], want[2])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_values(dtype):
    z = np.array([0.3 + 0.2j, -0.5 + 1.0j, 1.2 - 0.7j], dtype=dtype)

    def f(v):
        return fnp.exp(v) * v - fnp.sqrt(v) / (v + 2.0) + fnp.square(fnp.sin(v))

    before = _built()
    out, compiled = _run(f, z)
    new = _new_kernels(before)
    assert compiled.left == 0 and len(new) == 1
    ctype = "complex<double>" if dtype == np.complex128 else "complex<float>"
    assert f"{np.dtype(dtype).name} v0" == new[0].in_params and ctype in new[0].operation
    _assert_ulp(out, f(z))


def test_scalars_bools_and_literals():
    def f(x, s, mask):
        return fnp.exp(x * s) + mask * x - 2

    x, mask = np.linspace(0, 1, 4).astype(np.float32), np.array([True, False, True, False])
    out, compiled = _run(f, x, 0.75, mask)
    assert compiled.left == 0
    _assert_ulp(out, f(x, 0.75, mask))
    k = fb.KERNELS[-1]
    assert "bool v2" in k.in_params and "float(v2)" in k.operation and "float(2)" in k.operation


def test_non_finite_literals_and_mixed_dtypes_stay_on_the_replay():
    def f(x, y):
        return fnp.minimum(x * np.inf, 3.0) + y * y   # inf literal; float32 y promoted: not fused

    x, y = np.array([1.0, -1.0, 0.0]), np.array([1.0, 2.0, 3.0], np.float32)
    with np.errstate(invalid="ignore"):
        out, compiled = _run(f, x, y)
        _assert_ulp(out, f(x, y))
    assert compiled.lowered <= 2


# --- gradients through jit, on the device --------------------------------------------------------

def loss(w, x):
    h = fnp.tanh(x * w[0] + w[1])
    return fnp.sum(fnp.where(h > 0.1, h * h, fnp.exp(h) - 1.0) * fnp.cos(x))


W, XS = np.array([0.7, -0.2]), np.linspace(-1.0, 1.5, 7)


def _jvp_of_loss(w, x):
    return fg.jvp(lambda v: loss(v, x), (w,), (fnp.ones_like(w),))[1]


@pytest.mark.parametrize("make,reference", [
    (lambda: fg.jit(fg.grad(loss), backend="native"), fg.grad(loss)),
    (lambda: fg.grad(fg.jit(loss, backend="native")), fg.grad(loss)),
    (lambda: fg.jit(fg.hessian(loss), backend="native"), fg.hessian(loss)),
    (lambda: fg.jit(fg.grad(loss, argnums=1), backend="native"), fg.grad(loss, argnums=1)),
    (lambda: fg.jit(_jvp_of_loss, backend="native"), _jvp_of_loss),
], ids=["jit(grad)", "grad(jit)", "jit(hessian)", "jit(grad x)", "jit(jvp)"])
def test_derivatives_through_jit_on_the_device(make, reference):
    g = make()
    fw, fx = fb.to_fake(W), fb.to_fake(XS)
    calls = fb.KERNEL_STATS["calls"]
    with fb.no_host_sync():
        for _ in range(2):  # the first call traces (and compiles: native_wait), the second runs kernels
            got = g(fw, fx)
    assert fb.KERNEL_STATS["calls"] > calls, "no kernel ran the derivative program"
    np.testing.assert_allclose(fb.fake.asnumpy(got), reference(W, XS), rtol=1e-12, atol=1e-14)


def test_derivative_program_is_fused():
    g = fg.jit(fg.grad(loss), backend="native")
    compiled = g.lower(fb.to_fake(W), fb.to_fake(XS)).compile()
    assert compiled.backend == "native" and compiled.lowered > compiled.left


# --- backend selection, the cache, no host copies ---------------------------------------------

def test_backend_numpy_forces_the_replay():
    before = _built()
    out, compiled = _run(fg.grad(loss), W, XS, backend="numpy")
    assert _new_kernels(before) == [] and compiled.backend == "numpy" and "'numpy'" in compiled.why
    np.testing.assert_allclose(out, fg.grad(loss)(W, XS), rtol=1e-13)


def test_without_elementwise_kernel_the_device_replays():
    with pytest.MonkeyPatch.context() as mp:
        mp.delattr(fb.fake, "ElementwiseKernel")
        out, compiled = _run(fg.grad(loss), W, XS)
    assert compiled.backend == "numpy" and "ElementwiseKernel" in compiled.why
    np.testing.assert_allclose(out, fg.grad(loss)(W, XS), rtol=1e-13)


def test_auto_switches_to_kernels_after_enough_calls(monkeypatch):
    monkeypatch.setattr(tiered.settings, "native_after", 3)
    monkeypatch.setattr(tiered.settings, "native_wait", False)
    g = fg.jit(fg.grad(loss), backend="auto")
    fw, fx = fb.to_fake(W), fb.to_fake(XS)
    with fb.no_host_sync():
        for _ in range(5):  # the first call traces; then 3 counted replays
            g(fw, fx)
    entry = next(iter(g.cache.values()))
    assert entry.staged.tier.done.wait(60) and entry.staged.tier.state == "native"
    calls = fb.KERNEL_STATS["calls"]
    with fb.no_host_sync():
        got = g(fw, fx)
    assert fb.KERNEL_STATS["calls"] > calls
    np.testing.assert_allclose(fb.fake.asnumpy(got), fg.grad(loss)(W, XS), rtol=1e-12)


def test_kernels_are_cached_per_source_and_dtypes():
    def f(x):
        return fnp.sin(x) * fnp.cos(x) + 0.25

    def f_again(x):  # another function, the same program
        return fnp.sin(x) * fnp.cos(x) + 0.25

    x = np.linspace(0, 1, 5)
    _run(f, x)
    info, built = cuda.cache_info(), len(fb.KERNELS)
    _run(f_again, x)
    assert len(fb.KERNELS) == built and cuda.cache_info()["hits"] == info["hits"] + 1
    _run(f_again, x.astype(np.float32))  # other dtypes: another kernel
    assert len(fb.KERNELS) == built + 1 and "float32 v0" == fb.KERNELS[-1].in_params


def test_no_host_transfer_at_all():
    g = fg.jit(fg.grad(loss), backend="native")
    fw, fx = fb.to_fake(W), fb.to_fake(XS)
    g.lower(fw, fx).compile()
    with fb.count_transfers() as c, fb.no_host_sync(), fb.no_uploads():
        g(fw, fx)
    assert c.d2h == 0 and c.h2d == 0


# --- the stand-in refuses what CuPy would -----------------------------------------------------

@pytest.mark.parametrize("ins,outs,op,words", [
    ("float64 x", "float64 y", "y = frob(x);", "unknown function 'frob'"),
    ("float64 x", "float64 y", "y = x * z;", "reads ['z']"),
    ("T x", "float64 y", "y = x;", "'<dtype> <name>'"),
    ("float64 x", "float64 y", "double t = x", "does not end with ';'"),
    ("float64 x", "float64 y", "x = 2.0;", "not an output"),
    ("float64 x", "float64 y, float64 z", "y = x;", "never assigned"),
    ("float64 x", "float64 y", "y = (x + 1;", "expected )"),
])
def test_stand_in_rejects_bad_kernels(ins, outs, op, words):
    with pytest.raises(fb.KernelSourceError, match=re.escape(words)):
        fb.FakeElementwiseKernel(ins, outs, op, "k")


def test_stand_in_checks_argument_types():
    k = fb.FakeElementwiseKernel("float32 x", "float32 y", "y = x * float(2);", "k")
    with pytest.raises(TypeError, match="declared float32"):
        k(fb.to_fake(np.ones(3)))
    np.testing.assert_array_equal(fb.fake.asnumpy(k(fb.to_fake(np.ones(3, np.float32)))), np.full(3, 2.0, np.float32))


def test_a_kernel_that_does_not_compile_leaves_the_replay(monkeypatch):
    from funcgrad.jit import cuda_ops
    from funcgrad.jit.known import primitive_of

    monkeypatch.setitem(cuda_ops.CUDA_EXPR, primitive_of(fnp.sinh), "frob({0})")  # CuPy's compiler would refuse

    def f(x):
        return fnp.sinh(x) * 2.0 + x

    x = np.linspace(0, 1, 3)
    out, compiled = _run(f, x)
    assert compiled.backend == "numpy" and "frob" in compiled.why
    _assert_ulp(out, f(x))


def test_host_programs_are_not_cuda_programs():
    prog = fg.make_program(lambda x: fnp.sin(x) * 2.0 + x)(np.ones(3))
    assert cuda.device_kind(prog) is None and cuda.kernel_namespace(prog) is None
    assert cuda.cuda_program(prog) is None
    dev = fg.make_program(lambda x: fnp.sin(x) * 2.0 + x)(fb.to_fake(np.ones(3)))
    assert cuda.device_kind(dev) is fb.FakeArray and cuda.kernel_namespace(dev) is fb.fake


def test_float32_gradient_keeps_float32():
    w, x = W.astype(np.float32), XS.astype(np.float32)
    g = fg.jit(fg.grad(loss), backend="native")
    fw, fx = fb.to_fake(w), fb.to_fake(x)
    assert g.lower(fw, fx).compile().backend == "native"
    with fb.no_host_sync():
        got = g(fw, fx)
    assert got.dtype == np.float32
    np.testing.assert_allclose(fb.fake.asnumpy(got), fg.grad(loss)(w, x), rtol=2e-6)
    assert any("float32 v" in k.in_params and "float(" in k.operation for k in fb.KERNELS)


# --- generated programs: random elementwise chains with broadcasting ---------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_SAFE_UNARY = [fnp.sin, fnp.cos, fnp.tanh, fnp.exp, fnp.arctan, fnp.negative, fnp.square, fnp.expm1, fnp.sign]
_SAFE_BINARY = [fnp.add, fnp.subtract, fnp.multiply, fnp.maximum, fnp.minimum]


@st.composite
def _programs(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    steps = draw(st.lists(st.tuples(st.sampled_from(_SAFE_UNARY + _SAFE_BINARY + [fnp.where]),
                                    st.integers(0, 10), st.integers(0, 10)), min_size=2, max_size=12))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    return shapes.input_shapes, steps, dtype


def _program_fn(steps):
    def f(x, y):
        vals = [x, y]
        for fn, i, j in steps:
            a, b = vals[i % len(vals)], vals[j % len(vals)]
            if fn is fnp.where:
                vals.append(fnp.where(a > 0.25, b, a * 0.5))
            elif fn in _SAFE_BINARY:
                vals.append(fn(a, b))
            else:
                vals.append(fn(a) * 0.75)
        return vals[-1] + x * y
    return f


@settings(max_examples=30, deadline=None, derandomize=True)
@given(_programs())
def test_generated_elementwise_programs(program):
    (sx, sy), steps, dtype = program
    rng = np.random.default_rng(len(steps))
    x, y = rng.uniform(-1.5, 1.5, sx).astype(dtype), rng.uniform(-1.5, 1.5, sy).astype(dtype)
    f = _program_fn(steps)
    with np.errstate(all="ignore"):
        want = f(x, y)
        out, compiled = _run(f, x, y)
        _assert_ulp(out, np.asarray(want))
        assert compiled.lowered >= 2  # at least the last two equations (x * y, +) are one kernel
        g = lambda a, b: fnp.sum(f(a, b))  # noqa: E731
        gout, _ = _run(fg.grad(g, argnums=(0, 1)), x, y)
        gwant = fg.grad(g, argnums=(0, 1))(x, y)
    for got_i, want_i in zip(gout, gwant):
        _assert_ulp(got_i, want_i, ulp=64)  # sums of products: the replay's own order, same dtype


def test_reductions_and_indexing_between_chains_do_not_split_the_region():
    g = fg.jit(fg.grad(loss), backend="native")
    g.lower(fb.to_fake(W), fb.to_fake(XS)).compile()
    program = next(iter(g.cache.values())).program
    made = cuda.cuda_program(program)
    assert made is not None
    fused = [e for e in made[0].eqns if e.prim.name == "cuda_region"]
    # the forward chain, the backward chain and the product feeding the second sum: one kernel,
    # with the indexing moved ahead of it and the sums after it
    assert len(fused) == 1 and len(fused[0].outs) == 2 and made[1] > 2 * made[2]


def test_reordering_keeps_dependencies_and_impure_equations_in_place():
    from funcgrad.core.trace import Primitive
    from funcgrad.jit.cuda import reordered
    from funcgrad.jit.ir import Program

    fuse, other, effect = Primitive(abs, "fuse"), Primitive(abs, "other"), Primitive(abs, "effect")
    effect.pure = False
    prog = Program()
    x = prog.new_var(np.ones(3))
    prog.invars = [x]

    def eqn(prim, *ins):
        out = prog.new_var(np.ones(3))
        prog.add_eqn(prim, list(ins), {}, [out], abs)
        return out

    a = eqn(fuse, x)        # run
    b = eqn(other, x)       # reads nothing of the run: moves ahead of it
    c = eqn(other, a)       # reads the run: after it
    d = eqn(fuse, a, b)     # joins the run
    e = eqn(effect, x)      # impure: ends the run, stays where it is
    f = eqn(fuse, c)        # reads a deferred value
    prog.outs = [d, e, f]
    new = reordered(prog, lambda q: q.prim is fuse)
    assert [q.outs[0] for q in new.eqns] == [b, a, d, c, e, f]


def test_astype_between_float_dtypes_and_from_bool():
    def f(x):
        lo = fnp.sin(x).astype(np.float32)
        mask = (x > 0.2).astype(np.float64)
        return (lo * 2.0).astype(np.float64) + mask * x

    x = np.linspace(-1, 1, 7)
    out, compiled = _run(f, x)
    assert compiled.left == 0
    _assert_ulp(out, f(x))
    assert "float(" in fb.KERNELS[-1].operation and "double(" in fb.KERNELS[-1].operation
