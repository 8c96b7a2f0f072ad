"""fg.jit's blocked (and threaded) elementwise regions: the same bits as the unblocked
program, the ``jit_threads`` / ``jit_parallel_min_size`` knobs, and what is never blocked."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import blocking


def same_bits(a, b):
    """Bit-identical, NaNs at the same places. The sign and payload of a NaN made by an invalid
    operation are the implementation's choice (IEEE 754): NumPy's vector and scalar loops give
    sqrt(-1) different sign bits, so a block boundary may flip them."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype.kind in "fc":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        assert (nan_a == nan_b).all(), "NaNs at different places"
        a, b = np.where(nan_a, 0, a), np.where(nan_b, 0, b)
    assert a.tobytes() == b.tobytes(), f"max |diff| {np.nanmax(np.abs(a - b))}"


@pytest.fixture
def knobs():
    """Restore fg.config's thread settings after the test."""
    saved = fg.config.jit_threads, fg.config.jit_parallel_min_size
    yield
    fg.config.jit_threads, fg.config.jit_parallel_min_size = saved


@pytest.fixture
def tiny_blocks(monkeypatch, knobs):
    """Block programs on small arrays too, so that hypothesis can explore them quickly."""
    monkeypatch.setattr(blocking, "REGION_MIN_SIZE", 1)
    monkeypatch.setattr(blocking, "BLOCK_MIN_BYTES", 0)
    fg.config.jit_parallel_min_size = 0

    def set_block(n):
        monkeypatch.setattr(blocking, "BLOCK", n)
    return set_block


def run_twice(f, *args):
    """The compiled program's result (the first call traces, the second runs the program)."""
    g = fg.jit(f)
    g(*args)
    return g(*args)


def unblocked(f, *args):
    saved = blocking.REGION_MIN_SIZE
    blocking.REGION_MIN_SIZE = 1 << 62
    try:
        return run_twice(f, *args)
    finally:
        blocking.REGION_MIN_SIZE = saved


# programs: a list of steps on a stack of values; elementwise calls, broadcasts against a row,
# a column and a scalar, and reductions whose results flow back into elementwise calls
UNARY = {"sin": fnp.sin, "tanh": fnp.tanh, "exp": lambda v: fnp.exp(-v * v), "neg": fnp.negative,
         "square": fnp.square, "abs": fnp.abs, "log1p": lambda v: fnp.log1p(v * v), "sqrt": lambda v: fnp.sqrt(fnp.abs(v))}
BINARY = {"add": fnp.add, "mul": fnp.multiply, "sub": fnp.subtract, "max": fnp.maximum,
          "div": lambda a, b: a / (1.5 + fnp.abs(b)), "where": lambda a, b: fnp.where(a > b, a, b * 0.5),
          "relu": lambda a, b: fnp.maximum(a, 0.0) * fnp.abs(b)}
STEPS = ([("u", k) for k in UNARY] + [("b", k) for k in BINARY]
         + [("row", "mul"), ("col", "add"), ("scalar", "mul"), ("sum1", ""), ("mean", ""), ("sum0", "")])


def build(steps, row, col):
    def f(x):
        vals = [x]
        for kind, name in steps:
            a = vals[-1]
            if kind == "u":
                vals.append(UNARY[name](a))
            elif kind == "b":
                vals.append(BINARY[name](a, vals[len(vals) // 2]))
            elif kind == "row":
                vals.append(a * row)
            elif kind == "col":
                vals.append(a + col)
            elif kind == "scalar":
                vals.append(a * 0.75)
            elif kind == "sum1":  # a reduction along rows, broadcast back
                vals.append(a * fnp.sum(a, axis=1, keepdims=True))
            elif kind == "sum0":  # a reduction along axis 0 (the blocked axis), broadcast back
                vals.append(a - fnp.sum(a, axis=0) * 0.1)
            else:
                vals.append(a + fnp.mean(a))
        return vals[-1] + vals[0]
    return f


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=8),
       rows=st.integers(2, 37), cols=st.integers(1, 6), block=st.integers(1, 40),
       threads=st.sampled_from([1, 3]), grad=st.booleans(), seed=st.integers(0, 3))
def test_blocked_program_is_bit_identical(tiny_blocks, steps, rows, cols, block, threads, grad, seed):
    tiny_blocks(block)
    fg.config.jit_threads = threads
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, (rows, cols))
    row, col = rng.uniform(0.5, 1.5, cols), rng.uniform(-1.0, 1.0, (rows, 1))
    f = build(steps, row, col)
    if grad:
        f = fg.grad(lambda x, f=f: fnp.sum(f(x) ** 2))
    x0 = x.copy()
    blocked = run_twice(f, x)
    same_bits(blocked, unblocked(f, x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_bits(blocked, f(x))  # and eager
    same_bits(x, x0)  # the caller's array is never written


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_real_blocks_on_a_misaligned_ragged_array_are_bit_identical(knobs, threads, dtype):
    """Real block sizes; an input that starts one element into its buffer and a ragged last block."""
    fg.config.jit_threads = threads
    n = (1 << 18) + 123
    x = np.linspace(-3.0, 3.0, n + 1).astype(dtype)[1:]
    f = fg.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.tanh(x) + fnp.exp(-x * x) / (1.0 + x * x)))
    same_bits(run_twice(f, x), unblocked(f, x))
    same_bits(run_twice(f, x), f(x))
    m = x[: 400 * 600].reshape(400, 600)  # 2-D: blocks of rows, a row vector broadcast whole
    w = np.linspace(0.5, 1.5, 600).astype(dtype)
    h = lambda m: fnp.cos(m) * w + fnp.sum(fnp.sin(m), axis=1, keepdims=True)  # noqa: E731
    same_bits(run_twice(h, m), unblocked(h, m))
    same_bits(run_twice(h, m), h(m))


def test_outputs_are_fresh_and_inputs_untouched(knobs):
    fg.config.jit_threads = 2
    x = np.linspace(-1.0, 1.0, 1 << 18)
    x0 = x.copy()
    g = fg.jit(lambda x: (fnp.sin(x) * 2.0, fnp.tanh(x) + 1.0))
    g(x)
    a, b = g(x)
    c, d = g(x)
    same_bits(x, x0)
    assert not np.shares_memory(a, c) and not np.shares_memory(a, x) and not np.shares_memory(a, b)
    same_bits(a, np.sin(x) * 2.0)
    same_bits(d, np.tanh(x) + 1.0)


def _spy(monkeypatch, name):
    calls = []
    original = getattr(blocking, name)

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(blocking, name, spy)
    return calls


def test_threads_knob_and_threshold(monkeypatch, knobs):
    pools = _spy(monkeypatch, "_executor")
    x = np.linspace(-1.0, 1.0, 1 << 17)
    g = fg.jit(lambda x: fnp.sin(x) * fnp.cos(x))
    g(x)
    fg.config.jit_threads, fg.config.jit_parallel_min_size = 1, 0
    same_bits(g(x), np.sin(x) * np.cos(x))
    assert not pools, "jit_threads = 1 used the pool"
    fg.config.jit_threads, fg.config.jit_parallel_min_size = 3, x.size + 1
    same_bits(g(x), np.sin(x) * np.cos(x))
    assert not pools, "a region below jit_parallel_min_size used the pool"
    fg.config.jit_parallel_min_size = x.size
    same_bits(g(x), np.sin(x) * np.cos(x))
    assert pools == [(2,)], "the caller's thread runs one part, the pool the others"


def test_small_arrays_are_never_blocked(monkeypatch, knobs):
    runners = _spy(monkeypatch, "_runner")
    fg.config.jit_threads, fg.config.jit_parallel_min_size = 4, 0
    x = np.linspace(-1.0, 1.0, blocking.REGION_MIN_SIZE - 1)
    g = fg.jit(lambda x: fnp.sin(x) * fnp.cos(x))
    g(x)
    same_bits(g(x), np.sin(x) * np.cos(x))
    assert not runners


def test_config_knob_errors_and_spellings(knobs):
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="jit_threads must be an integer >= 1"):
            fg.config.jit_threads = bad
    with pytest.raises(ValueError, match="jit_parallel_min_size must be an integer >= 0"):
        fg.config.jit_parallel_min_size = -1
    fg.config.update("jit_threads", 3)
    assert fg.config.jit_threads == 3 and blocking.settings.threads == 3
    fg.config.update("jit_parallel_min_size", 10)
    assert "jit_threads=3" in repr(fg.config) and "jit_parallel_min_size=10" in repr(fg.config)


def test_env_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("FUNCGRAD_JIT_THREADS", "1")
    assert blocking.Settings().threads == 1
    for bad in ("0", "two", "-3"):
        monkeypatch.setenv("FUNCGRAD_JIT_THREADS", bad)
        with pytest.raises(ValueError, match="FUNCGRAD_JIT_THREADS must be an integer >= 1"):
            blocking.Settings()
    monkeypatch.delenv("FUNCGRAD_JIT_THREADS")
    assert blocking.Settings().threads == blocking.default_jit_threads() >= 1


def test_errstate_reaches_the_worker_threads(tiny_blocks):
    tiny_blocks(4)
    fg.config.jit_threads = 3
    x = np.linspace(-1.0, 1.0, 64)
    g = fg.jit(lambda x: fnp.log(x) * 2.0)
    with np.errstate(all="ignore"):
        g(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = g(x)  # no RuntimeWarning from any thread
        same_bits(r, np.log(x) * 2.0)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        g(x)


def test_fake_device_programs_are_not_blocked(monkeypatch, tiny_blocks):
    runners = _spy(monkeypatch, "_runner")
    tiny_blocks(3)
    fg.config.jit_threads = 3
    fb.install()
    x = np.linspace(-1.0, 1.0, 40).reshape(8, 5)
    fx = fb.to_fake(x)
    f = fg.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.tanh(x)))
    g = fg.jit(f)
    with fb.no_host_sync():
        g(fx)
        r = g(fx)
    assert isinstance(r, fb.FakeArray) and not runners
    same_bits(fb.fake.asnumpy(r), f(x))


def test_where_joins_a_region(monkeypatch, tiny_blocks):
    runners = _spy(monkeypatch, "_runner")
    tiny_blocks(5)
    x = np.linspace(-2.0, 2.0, 60).reshape(20, 3)
    f = fg.grad(lambda x: fnp.sum(fnp.where(x > 0, fnp.sin(x), 2.0 * x) * fnp.maximum(x, 0.0)))
    same_bits(run_twice(f, x), unblocked(f, x))
    same_bits(run_twice(f, x), f(x))
    assert len(runners) == 2, "the program should be one region per compile (where included)"


def test_regions_of_only_arithmetic_stay_on_one_thread(monkeypatch, knobs):
    pools = _spy(monkeypatch, "_executor")
    fg.config.jit_threads, fg.config.jit_parallel_min_size = 3, 0
    x = np.linspace(-1.0, 1.0, 1 << 17)
    g = fg.jit(lambda x: fnp.where(x > 0, x * 3.0, -x) + x * x)
    g(x)
    same_bits(g(x), np.where(x > 0, x * 3.0, -x) + x * x)
    assert not pools
    h = fg.jit(lambda x: fnp.exp(x) + x * x)
    h(x)
    same_bits(h(x), np.exp(x) + x * x)
    assert pools


def test_a_failing_block_on_a_worker_is_raised_by_the_caller(tiny_blocks):
    tiny_blocks(2)
    fg.config.jit_threads = 4
    x = np.linspace(1.0, 2.0, 40)
    x[-1] = -1.0  # the last block: taken by whichever thread comes last
    g = fg.jit(lambda x: fnp.sqrt(x) * 2.0)
    g(np.abs(x))
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        g(x)
    same_bits(g(np.abs(x)), np.sqrt(np.abs(x)) * 2.0)  # and the next call is fine
