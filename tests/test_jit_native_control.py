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
    # the step reads the loop index in float arithmetic (integers do not lower): the scan
    # runs on the replay, the rest natively, and the answer is the replay's
    f = lambda x: fnp.sum(fnp.exp(fg.fori_loop(0, 4, lambda i, c: c * 0.5 + i, x)))  # noqa: E731
    x = np.linspace(0.0, 1.0, 3)
    nat = fg.jit(f, backend="native")
    compiled = nat.lower(x).compile()
    assert compiled.backend == "native" and compiled.left >= 1
    assert loops_left(f, x) == ["scan"]
    assert_within_bound(nat(x), f(x))
