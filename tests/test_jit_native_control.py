"""Control flow in the native tier: ``fg.scan``/``fori_loop`` (and the reverse scan of their
gradient, the scans of their JVP and vmap), ``cond``/``switch`` and ``while_loop`` compile to
real loops and branches calling compiled bodies. Each result equals the NumPy replay within
the bound docs/jit.md states (per step the elementwise bound; over a loop, that bound times
the number of steps), and a test fails if a loop whose body lowers is left to the replay.
Skips without numba (the `native` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native
from funcgrad.jit.loops import loop_of
from funcgrad.jit.native_source import SCRATCH_MAX_SIZE
from test_jit_native_lowerings import assert_within_bound

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path / "cache"))


def loops_left(f, *args):
    """The loop and branch equations of fg.jit(f)'s program that the native tier leaves to the replay."""
    made = native.native_program(fg.jit(f).program(*args))
    assert made is not None
    return [e.prim.name for e in made[0].eqns if loop_of(e) is not None]


def check(f, args_list, steps=1):
    """fg.jit(f) native == replay within the bound on each argument tuple, every loop compiled."""
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(*args_list[0]).compile()
    assert compiled.backend == "native", compiled.why
    assert loops_left(f, *args_list[0]) == []
    replay = fg.jit(f, backend="numpy")
    for args in args_list:
        got, want = nat(*args), replay(*args)
        for g, w in zip(fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)):
            assert_within_bound(g, w, terms=4 * steps)
    return compiled


def rk4(x0, n=20, dt=0.05):
    """A damped pendulum pair, integrated by fori_loop of RK4 steps."""
    def rhs(s):
        return fnp.stack([s[1], -fnp.sin(s[0]) - 0.1 * s[1]])

    def step(i, s):
        k1 = rhs(s)
        k2 = rhs(s + 0.5 * dt * k1)
        k3 = rhs(s + 0.5 * dt * k2)
        k4 = rhs(s + dt * k3)
        return s + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return fg.fori_loop(0, n, step, x0)


def recurrence(x):
    c, ys = fg.scan(lambda c, t: (fnp.tanh(c * 1.3 + t), fnp.sum(c * c)), x, fnp.linspace(-1.0, 1.0, 6))
    return fnp.sum(c) + fnp.sum(ys)


def test_scan_forward_and_gradient_compile_to_loops():
    x = np.linspace(0.1, 0.9, 3)
    check(recurrence, [(x,), (-x,)], steps=6)
    compiled = check(fg.grad(recurrence), [(x,), (x * 2.0,)], steps=6)
    assert compiled.left == 0  # the reverse scan too: nothing on the replay


def test_fori_loop_rk4_value_and_gradient():
    x0 = np.array([1.0, 0.0])
    check(rk4, [(x0,), (x0 * 0.5,)], steps=20)
    check(fg.grad(lambda x: fnp.sum(rk4(x) ** 2)), [(x0,)], steps=20)


def test_hessian_of_a_scan_keeps_its_loops():
    x = np.linspace(0.1, 0.9, 3)
    check(fg.hessian(recurrence), [(x,)], steps=12)


def test_cond_and_switch_are_compiled_branches():
    f = lambda x: fnp.sum(fg.cond(fnp.sum(x) > 0, lambda v: fnp.sin(v) * 2.0, lambda v: v * v * v, x))  # noqa: E731
    x = np.array([0.3, -0.1, 0.5])
    check(f, [(x,), (-x,)])
    check(fg.grad(f), [(x,), (-x,)])
    g = lambda i, x: fg.switch(i, [fnp.sin, fnp.cos, lambda v: v * 3.0], x)  # noqa: E731
    check(g, [(np.int64(k), x) for k in (-1, 0, 1, 2, 5)])


def test_while_loop_is_a_compiled_loop():
    grow = lambda x: fg.while_loop(lambda c: fnp.sum(c * c) < 50.0, lambda c: c * 1.5 + fnp.sin(c), x)  # noqa: E731
    x = np.array([0.3, 0.2])
    check(grow, [(x,), (x * 3.0,)], steps=12)
    check(fg.jacfwd(grow), [(x,)], steps=12)


def test_a_body_that_does_not_lower_stays_on_the_replay_and_is_right():
    # the step takes the loop index modulo 2 (integer division and remainders do not lower): the
    # scan runs on the replay, the rest natively, and the answer is the replay's
    f = lambda x: fnp.sum(fnp.exp(fg.fori_loop(0, 4, lambda i, c: c * 0.5 + i % 2, x)))  # noqa: E731
    x = np.linspace(0.0, 1.0, 3)
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(x).compile()
    assert compiled.backend == "native" and compiled.left >= 1
    assert loops_left(f, x) == ["scan"]
    assert_within_bound(nat(x), f(x))


def clock(x0, n=30, dt=0.05):
    """A forced oscillator whose step reads the loop index as a time: i * dt, astype, int + and *."""
    def step(i, s):
        t = i * dt
        half = fnp.astype(2 * i + 1, s.dtype) * (0.5 * dt)  # the middle of the step
        force = fnp.sin(t) + 0.1 * fnp.cos(half) + (i - 3) / 7
        return fnp.stack([s[0] + dt * s[1], s[1] - dt * s[0] + dt * force])
    return fg.fori_loop(0, n, step, x0)


def test_a_body_reading_the_loop_index_as_a_float_lowers():
    x0 = np.array([1.0, 0.0])
    compiled = check(clock, [(x0,), (x0 * 3.0,)], steps=30)
    assert compiled.left == 0
    compiled = check(fg.grad(lambda x: fnp.sum(clock(x) ** 2)), [(x0,)], steps=30)
    assert compiled.left == 0  # the reverse scan's body reads the index too
    # float32 state: the index converted to float32 (astype) keeps the carry float32
    f32 = lambda x: fg.fori_loop(0, 5, lambda i, s: s * 0.5 + fnp.astype(i + 1, s.dtype) * fnp.sin(s), x)  # noqa: E731
    compiled = check(f32, [(np.array([1.0, 0.25], np.float32),)], steps=5)
    assert compiled.left == 0


def test_integer_arithmetic_wraps_as_numpy_does():
    big = np.int64(2**62)
    f = lambda i, x: x * fnp.astype(i * 2 + i, fnp.float64)  # noqa: E731  (i * 2 overflows int64)
    compiled = check(f, [(big, np.array([1.0, 2.0])), (np.int64(5), np.array([1.0, 2.0]))])
    assert compiled.left == 0


def body_source(f, *args):
    """The source of the compiled segment of fg.jit(f) at ``args`` that runs the loop."""
    made = native.native_program(fg.jit(f).program(*args))
    assert made is not None
    return "\n".join(e.fn.source for e in made[0].eqns if hasattr(e.fn, "source"))


def test_loop_bodies_write_small_arrays_into_buffers_made_once():
    src = body_source(rk4, np.array([1.0, 0.0]))
    body = src[src.index("def body_"):src.index("def segment")]
    assert "np.empty" not in body and "np.copy" not in body  # no allocation per step
    loop = src[src.index("def segment"):]
    assert loop.count("np.empty((2,), np.float64)") >= 2  # made before the loop: two sets, alternated
    big = lambda x: fg.fori_loop(0, 2, lambda i, c: fnp.sin(c[::-1]) * 2.0 + c, x)  # noqa: E731
    src = body_source(big, np.ones(SCRATCH_MAX_SIZE + 1))
    assert "np.empty" in src[src.index("def body_"):src.index("def segment")]  # a large one: per step


def test_buffers_never_alias_the_carry_a_step_reads():
    # each step reads its carry in another order than it writes it, passes a carry through
    # unchanged, and runs a nested loop, a while loop and a branch on small arrays: with one set
    # of buffers the step would overwrite the carry it reads
    def step(i, state):
        a, b = state
        inner = fg.fori_loop(0, 3, lambda j, c: c[::-1] * 0.9 + fnp.sum(c) * 0.01, a)
        grown = fg.while_loop(lambda c: fnp.sum(c * c) < 4.0, lambda c: c * 1.5 + 0.1, b[::-1] * 0.5)
        picked = fg.cond(fnp.sum(a) > 0, lambda v: v[::-1], lambda v: -v, grown)
        return (picked + inner[::-1], a)

    f = lambda a, b: fg.fori_loop(0, 7, step, (a, b))  # noqa: E731
    a, b = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    compiled = check(f, [(a, b), (-a, b * 2.0)], steps=30)
    assert compiled.left == 0


def segment_sources(f, *args):
    """The sources native.plan's segments of fg.jit(f) at ``args`` would compile (nothing compiled)."""
    return [native.segment_source(s.eqns, s.ins, s.outs) for s in native.plan(fg.jit(f).program(*args))
            if isinstance(s, native.Segment)]


def partial_stores(src):
    """The stores ``a[i] = row`` in ``src`` that index an array made there with fewer indices than
    it has axes (numba compiles each such store with a slow error path, benchmarks/RESULTS.md)."""
    import ast

    found = []
    for function in ast.parse(src).body:  # (each function's names on their own)
        ranks = {}
        for node in ast.walk(function):
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func) in ("np.empty", "np.full", "np.zeros")):
                shape = node.value.args[0]
                ranks[node.targets[0].id] = len(shape.elts) if isinstance(shape, ast.Tuple) else 1
        for node in ast.walk(function):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AugAssign) else []
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and target.value.id in ranks:
                    index = target.slice
                    n = len(index.elts) if isinstance(index, ast.Tuple) else 1
                    if n < ranks[target.value.id] or any(isinstance(i, ast.Slice) for i in ast.walk(index)):
                        found.append(ast.unparse(node))
    return found


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_stacked_loop_rows_and_linalg_stacks_are_stored_element_by_element(dtype):
    x = (np.arange(6.0).reshape(2, 3) * 0.1 + 0.2).astype(dtype)
    ts = np.linspace(-1.0, 1.0, 4).astype(dtype)

    def scans(x):  # rank-2 and rank-1 carries, their stacked outputs
        c, ys = fg.scan(lambda c, t: (c * 0.7 + t, c * 2.0), x, ts)
        d, zs = fg.scan(lambda d, t: (d * t + 1.0, d[::-1]), x[0], ts, reverse=True)
        return fnp.sum(ys) + fnp.sum(zs) + fnp.sum(c) + fnp.sum(d)

    programs = [(scans, x)]
    if dtype != "complex128":  # (the gradient's reverse scan stacks its carries)
        programs.append((fg.grad(lambda x: fnp.sum(fg.scan(lambda c, t: (fnp.tanh(c * t), c), x, ts)[1])), x))
    programs.append((lambda m: fnp.linalg.inv(m) * 2.0, np.eye(2, dtype=dtype) + x[:, :2, None] * 0.1))
    for f, arg in programs:
        sources = segment_sources(f, arg)
        assert sources, "nothing lowered"
        for src in sources:
            assert partial_stores(src) == [], src
    src = "\n".join(segment_sources(scans, x))
    assert "for t0 in range(4):" in src and "a_" in src  # (the loop is there: the check saw its stores)
