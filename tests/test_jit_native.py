"""The native tier of fg.jit (funcgrad/jit/native.py, funcgrad/jit/tiered.py).

Native results are checked against the NumPy replay of the same program within the bound
docs/jit.md states: elementwise results within ULP_BOUND units in the last place of the
replay's (relative 1e-13 for float64 chains of up to a few hundred operations, 1e-5 for
float32), whole-array sums within (n - 1) * eps * sum(|x|). Tests that need numba skip
without it (the `native` extra); the tests at the end check the tier is off cleanly then.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native, tiered

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL = {np.dtype("float64"): 1e-13, np.dtype("float32"): 1e-5}

needs_numba = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path / "cache"))


def compiled_pair(f, *args):
    """(native result, replay result, Compiled) of fg.jit(f) on ``args``."""
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(*args).compile()
    rep = fg.jit(f, backend="numpy")
    rep(*args)
    return nat(*args), rep(*args), compiled


def assert_close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=RTOL[want.dtype], atol=0)


def chain(y, steps=12):  # (compile time grows with the chain: 12 links show what 50 would)
    for _ in range(steps):
        y = fnp.tanh(fnp.sin(y)) * 1.5 + 0.25
    return fnp.sum(y)


# The tests compiling grad(chain) share this argument, so its kernel is compiled once per session
# (kernels are specific to shapes).
X7 = np.linspace(-1.0, 1.0, 7)


@needs_numba
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elementwise_chain_and_its_gradient_run_native_whole(dtype):
    x = X7.astype(dtype)
    for f in (chain, fg.grad(chain)):
        got, want, compiled = compiled_pair(f, x)
        # fails if the program silently stays on the replay where every equation has a lowering
        assert compiled.backend == "native", compiled.why
        assert compiled.left == 0 and compiled.lowered == len(compiled.program.eqns)
        assert type(got) is type(want)
        assert_close(got, want)


ULP_BOUND = 4
UNARY = {  # function: inputs in its domain (and a few edges)
    fnp.sin: (-10.0, 10.0), fnp.cos: (-10.0, 10.0), fnp.tan: (-1.5, 1.5), fnp.tanh: (-5.0, 5.0),
    fnp.sinh: (-5.0, 5.0), fnp.cosh: (-5.0, 5.0), fnp.exp: (-20.0, 20.0), fnp.log: (1e-3, 1e3),
    fnp.sqrt: (0.0, 100.0), fnp.arctan: (-10.0, 10.0), fnp.arcsin: (-1.0, 1.0), fnp.arccos: (-1.0, 1.0),
    fnp.log1p: (-0.9, 10.0), fnp.expm1: (-5.0, 5.0), fnp.arctanh: (-0.99, 0.99), fnp.arcsinh: (-10.0, 10.0),
    fnp.log10: (1e-3, 1e3), fnp.log2: (1e-3, 1e3), fnp.exp2: (-20.0, 20.0), fnp.reciprocal: (0.1, 10.0),
    fnp.square: (-10.0, 10.0), fnp.absolute: (-10.0, 10.0), fnp.negative: (-10.0, 10.0), fnp.sign: (-1.0, 1.0),
}


@needs_numba
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_each_elementwise_function_is_within_the_ulp_bound_of_numpy(dtype):
    grids = [np.linspace(lo, hi, 1001).astype(dtype) for lo, hi in UNARY.values()]

    def f(*xs):
        return tuple(fn(x) for fn, x in zip(UNARY, xs))

    got, want, compiled = compiled_pair(f, *grids)
    assert compiled.backend == "native" and compiled.left == 0
    for fn, g, w in zip(UNARY, got, want):
        assert g.dtype == w.dtype == np.dtype(dtype)
        ulps = np.abs(g.astype(np.float64) - w) / np.spacing(np.abs(w).astype(dtype)).astype(np.float64)
        assert np.max(ulps) <= ULP_BOUND, (fn.__name__, float(np.max(ulps)))


@needs_numba
def test_broadcasting_where_comparisons_and_constants():
    a = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    b = np.array([[0.5], [1.0], [-1.5]])
    w = np.array([1.0, 2.0, 3.0, 4.0])  # captured: a constant of the program

    def f(a, b):
        c = fnp.where(a > b, fnp.exp(a) * w, fnp.cos(b) - a)
        return fnp.sum(c * c) + fnp.sum(fnp.log1p(c ** 2))

    for g in (f, fg.grad(f, argnums=(0, 1))):
        got, want, compiled = compiled_pair(g, a, b)
        assert compiled.backend == "native", compiled.why
        assert compiled.left == 0 or g is not f  # (b's gradient sums over an axis: that stays)
        for x, y in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                        np.atleast_1d(want) if not isinstance(want, tuple) else want):
            assert_close(x, y)


@needs_numba
def test_python_and_numpy_scalars_keep_their_types():
    x = np.linspace(0.1, 1.0, 5)

    def f(x, s):
        return fnp.sum(fnp.sin(x) * s), fnp.tanh(x) / s

    for s in (0.5, np.float64(0.5)):
        got, want, compiled = compiled_pair(f, x, s)
        assert compiled.backend == "native"
        assert [type(v) for v in got] == [type(v) for v in want]
        for g, w in zip(got, want):
            assert_close(g, w)


@needs_numba
def test_sum_is_within_the_recursive_summation_bound():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4099)
    got, want, compiled = compiled_pair(lambda x: fnp.sum(fnp.exp(x)), x)
    assert compiled.backend == "native"
    bound = (x.size - 1) * np.finfo(np.float64).eps * np.sum(np.abs(np.exp(x)))
    assert abs(got - want) <= bound


@needs_numba
def test_nan_and_inf_come_out_as_numpy_s():
    x = np.array([-1.0, 0.0, 1.0, np.inf, np.nan])

    def f(x):
        return fnp.log(x) + 1.0 / x + fnp.sqrt(x) * fnp.exp(x * 1000.0)

    with np.errstate(all="ignore"):
        got, want, compiled = compiled_pair(f, x)
    assert compiled.backend == "native"
    np.testing.assert_array_equal(got, want)  # inf, -inf and nan in the same places


@needs_numba
def test_debug_nans_still_names_the_primitive():
    f = fg.jit(lambda x: fnp.sum(fnp.log(x) * 2.0), backend="native")
    x = np.array([1.0, 2.0])
    assert f.lower(x).compile().backend == "native"
    with fg.debug_nans():
        with pytest.raises(FloatingPointError, match="log"):
            with np.errstate(all="ignore"):
                f(np.array([-1.0, 2.0]))


# -- partial lowering: one unsupported primitive amid supported ones ----------------------

UNSUPPORTED = {
    "cumsum": lambda x: fnp.sum(fnp.tanh(fnp.cumsum(fnp.sin(x), axis=1))),
    "sort": lambda x: fnp.sum(fnp.exp(fnp.sort(fnp.sin(x), axis=1)) * 2.0),
    # (the gather by its index values lowers: tests/test_jit_native_gather.py)
    "argmax as an index": lambda x: fnp.sum(fnp.sin(x)[fnp.argmax(x, axis=0) % 3, 1:] * 2.0),
    "arctan2": lambda x: fnp.sum(fnp.arctan2(fnp.sin(x), fnp.cos(x) + 2.0) * 3.0),
    "slogdet": lambda x: fnp.linalg.slogdet(fnp.sin(x) @ x.T + 3.0 * fnp.eye(3))[1] * 2.0,  # (inv lowers now)
}


@needs_numba
@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_partial_lowering_is_right(name):
    f = UNSUPPORTED[name]
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    for g in (f, fg.grad(f)):
        got, want, compiled = compiled_pair(g, x)
        assert compiled.backend == "native", compiled.why
        assert compiled.lowered > 0 and (compiled.left > 0 or g is not f)  # segments called from the replay
        assert_close(got, want)


@needs_numba
def test_a_program_with_nothing_to_lower_stays_on_the_replay_and_says_so():
    f = fg.jit(lambda x: fnp.cumsum(x), backend="native")
    c = f.lower(np.arange(3.0)).compile()
    assert c.backend == "numpy" and "no equation lowers" in c.why
    np.testing.assert_array_equal(c(np.arange(3.0)), [0.0, 1.0, 3.0])


# -- tiering ----------------------------------------------------------------------------------

@needs_numba
def test_auto_tier_swaps_native_code_in_after_enough_calls(monkeypatch):
    from funcgrad.jit import tiered

    monkeypatch.setattr(fg.config, "jit_native_after", 3)
    monkeypatch.setattr(tiered, "MARGIN", float("inf"))  # (the trial's timing decides nothing here)
    f = fg.jit(fg.grad(chain), backend="auto")
    x = X7
    want = f(x)
    entry = next(iter(f.cache.values()))
    assert entry.staged.tier.state == "replay"
    for _ in range(3):
        assert_close(f(x), want)
    assert entry.staged.tier.state in ("queued", "native")
    assert entry.staged.tier.done.wait(300) and entry.staged.tier.state == "native"
    for _ in range(2 * tiered.TRIALS):  # the timed trial of both versions
        assert_close(f(x), want)
    assert entry.run is entry.staged.tier.native  # swapped in where the fast path looks
    assert_close(f(x), want)


@needs_numba
@pytest.mark.parametrize("native_wins", [True, False])
def test_auto_tier_keeps_the_faster_version(monkeypatch, native_wins):
    from funcgrad.jit import tiered

    # MARGIN 0: native code "loses" whatever the timings; inf: it wins
    monkeypatch.setattr(tiered, "MARGIN", float("inf") if native_wins else 0.0)
    f = fg.jit(fg.grad(chain), backend="auto")
    x = X7
    want = f(x)
    tier = next(iter(f.cache.values())).staged.tier
    assert tier.wait()  # compiled: the trial begins
    for _ in range(2 * tiered.TRIALS):
        assert_close(f(x), want)
    entry = next(iter(f.cache.values()))
    if native_wins:
        assert tier.state == "native" and entry.run is tier.native
    else:
        assert tier.state.startswith("replay only: faster than the native code") and entry.run is tier.replay
    assert_close(f(x), want)


@needs_numba
def test_native_code_is_used_under_grad_of_jit():
    def short(y):  # (the forward and backward programs of grad-of-jit are compiled: keep them small)
        return chain(y, steps=5)

    f = fg.jit(short, backend="native")
    x = X7
    want = fg.grad(short)(x)
    fg.grad(f)(x)
    for staged in list(f.cache.values())[0].staged.splits.values():
        assert staged.tier.wait() and staged.bwd.tier.wait()
    assert_close(fg.grad(f)(x), want)


@needs_numba
def test_the_native_run_of_the_transform_suites_fails_where_the_replay_runs_instead(monkeypatch):
    # tests/jit_modes.py's "native" run must fail, not pass on the replay's values, when a program
    # that lowers is left to the replay, or when its native code hands calls to the replay
    from jit_modes import _native

    def f(x):
        return fnp.sum(fnp.sin(x) * 2.5 + 0.75)

    x = np.linspace(0.0, 1.0, 3)
    assert_close(_native(fg.jit(f, backend="native"))(x), f(x))

    def broken(seg, worker=None):
        raise RuntimeError("no code today")

    monkeypatch.setattr(native, "compile_segment", broken)
    with pytest.raises(AssertionError, match="lowerable equations to the replay: .*no code today"):
        _native(fg.jit(f, backend="native"))(x)

    def refusing(seg, worker=None):
        def run(*args):
            raise TypeError("not compiled for these types")
        return run

    monkeypatch.setattr(native, "compile_segment", refusing)
    with pytest.raises(AssertionError, match="handed the call to the replay"):
        _native(fg.jit(f, backend="native"))(x)


def test_backend_names_are_checked():
    with pytest.raises(ValueError, match="'auto', 'numpy', 'native'"):
        fg.jit(lambda x: x, backend="fast")
    with pytest.raises(ValueError, match="jit_backend"):
        fg.config.jit_backend = "llvm"
    with pytest.raises(ValueError, match="jit_native_after"):
        fg.config.jit_native_after = 0
    with pytest.raises(ValueError, match=r"jit_compiler must be \"process\" .* or \"thread\" .*got 'fork'"):
        fg.config.jit_compiler = "fork"


def test_the_compiler_choice_is_a_config_attribute(monkeypatch):
    assert fg.config.jit_compiler == tiered.settings.compiler  # (env FUNCGRAD_JIT_COMPILER, default "process")
    monkeypatch.setattr(fg.config, "jit_compiler", "thread")
    assert tiered.settings.compiler == "thread" and fg.config.jit_compiler == "thread"
    assert tiered._compiler_worker() is None  # compiles run on the thread itself
    fg.config.update("jit_compiler", "process")
    assert tiered.settings.compiler == "process"


def test_numpy_backend_compiles_nothing():
    f = fg.jit(chain, backend="numpy")
    c = f.lower(np.ones(3)).compile()
    assert c.backend == "numpy" and "backend 'numpy'" in c.why
    np.testing.assert_allclose(c(np.ones(3)), chain(np.ones(3)))


# -- the process: import, the cache, no numba ------------------------------------------------

def _python(code: str, env: dict[str, str] | None = None) -> str:
    full = dict(os.environ, **(env or {}))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_funcgrad_does_not_import_numba():
    assert _python("import sys, funcgrad; print('numba' in sys.modules)").strip() == "False"


def test_without_numba_everything_replays_and_says_why_once_asked():
    code = ("import sys; sys.modules['numba'] = None\n"
            "import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "from funcgrad.jit import native\n"
            "f = fg.jit(lambda x: fnp.sum(fnp.sin(x)), backend='native')\n"
            "c = f.lower(np.ones(3)).compile()\n"
            "print(c.backend, float(c(np.ones(3))) == float(np.sum(np.sin(np.ones(3)))))\n"
            "print(native.status())\n")
    result, status = _python(code).strip().split("\n")
    assert result == "numpy True"
    assert "off" in status and "funcgrad[native]" in status


@needs_numba
def test_exiting_while_compiling_stops_the_background_compiler_first(tmp_path):
    # The process returns while the background thread compiles one program and another waits:
    # the exit hook drops the waiting one, lets the current one end and joins the thread before
    # the interpreter (and numba, and LLVM) shut down. Before the hook such exits could segfault.
    code = ("import atexit, sys\n"
            "import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "from funcgrad.jit import tiered\n"
            "def make(k):\n"
            "    def f(y):\n"
            "        for _ in range(8 + k):\n"
            "            y = fnp.tanh(fnp.sin(y)) * 1.5\n"
            "        return fnp.sum(y)\n"
            "    return f\n"
            "tiers = []\n"
            "for k in range(2):\n"
            "    g = fg.jit(fg.grad(make(k)), backend='native')\n"
            "    g(np.ones(3))\n"
            "    tiers.append(next(iter(g.cache.values())).staged.tier)\n"
            "def report():\n"  # registered before the compiler's hook: runs after it
            "    print(tiers[0].state.split(' (')[0], '|', tiers[1].state, '|', tiered._worker.is_alive())\n"
            "atexit.register(report)\n"
            "atexit.unregister(tiered.stop_compiler)\n"
            "atexit.register(tiered.stop_compiler)\n")
    first, second, alive = _python(code, {"FUNCGRAD_CACHE_DIR": str(tmp_path / "kernels")}).strip().split(" | ")
    assert first in ("native", "replay only: native compilation failed", "replay only: the process is exiting")
    assert second in ("replay only: the process is exiting", "native")
    assert alive == "False"


# (a new process reusing the kernels a first one compiled on its thread and wrote to the disk:
# tests/test_jit_native_compiler.py::test_compiling_on_a_thread_writes_every_module_to_the_cache)


def _kernel_modules():
    return {n: m for n, m in sys.modules.items() if n.startswith("funcgrad_native_")}


@needs_numba
def test_the_cache_key_covers_the_njit_options_and_the_versions(monkeypatch):
    monkeypatch.setattr(tiered.settings, "compiler", "thread")  # numba in this process: its stats count here
    def f(y):  # (a program no other test compiles: its modules are this test's own)
        return fnp.sum(fnp.cos(fnp.tanh(y) * 0.123456789))

    x = np.linspace(-1.0, 1.0, 4)

    def compile_anew():
        before = set(_kernel_modules())
        assert fg.jit(f, backend="native").lower(x).compile().backend == "native"
        return {n: m for n, m in _kernel_modules().items() if n not in before}

    def forget(mods):  # what a new process would not have
        for n in mods:
            del sys.modules[n]

    first = compile_anew()
    assert first and all(m.segment.stats.cache_misses for m in first.values())  # compiled and written
    forget(first)
    again = compile_anew()
    assert set(again) == set(first)
    assert all(m.segment.stats.cache_hits and not m.segment.stats.cache_misses for m in again.values())
    forget(again)

    monkeypatch.setattr(native, "NJIT_OPTIONS", native.NJIT_OPTIONS + ", fastmath=True")
    fast = compile_anew()
    assert fast and not set(fast) & set(first)  # another module: the machine code of the others is not reused
    assert all(m.segment.stats.cache_misses and not m.segment.stats.cache_hits for m in fast.values())
    for m in fast.values():
        with open(m.__file__) as fh:
            assert "fastmath=True" in fh.read()
    forget(fast)

    text = native.kernel_module_text("def segment(x):\n    return (x,)\n")
    key = native.cache_key(text, ("float64",))
    assert native.cache_key(native.kernel_module_text("def segment(x):\n    return (x,)\n", "cache=True"),
                            ("float64",)) != key
    for name in ("numba", "llvmlite", "numpy", "funcgrad", "opt", "boundscheck"):
        assert name in native.versions()
    monkeypatch.setattr(native, "versions", lambda: "numba 0.0")
    assert native.cache_key(text, ("float64",)) != key
