"""fg.jit of a function that reads an enclosing transform's traced value through its closure:
the value becomes an implicit input of the program (as in JAX), the call is staged, and the
derivatives equal eager mode's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.trace import Box
from funcgrad.testing import check_grads

jit_module = importlib.import_module("funcgrad.transforms.jit")  # the module (fg.transforms.jit is the function)
Y = np.array([0.4, -0.9, 1.3])


@pytest.fixture
def staged_calls(monkeypatch):
    """The implicit inputs of every call_staged made by fg.jit (white-box: the call was staged)."""
    calls = []
    original = jit_module.call_staged

    def spy(staged, leaves):
        calls.append(leaves)
        return original(staged, leaves)
    monkeypatch.setattr(jit_module, "call_staged", spy)
    return calls


def _staged_with_captures(calls):
    """The jitted calls (the first call_staged of each) that got implicit inputs after the explicit x."""
    return [c for c in calls if len(c) >= 2 and any(isinstance(v, Box) for v in c[1:])]


def outer_of(inner, x, jitted):
    """``y -> inner(x, y)`` where the inner function is jitted (or not) and reads ``y`` from its closure."""
    def f(y):
        g = (lambda x: inner(x, y))
        return (fg.jit(g) if jitted else g)(x)
    return f


INNERS = {
    "product": (lambda x, y: x * y, 2.0),
    "sin": (lambda x, y: fnp.sin(x) * y ** 2 + fnp.tanh(y), 0.7),
    "array": (lambda x, y: fnp.sum(fnp.exp(-x * y) * y), np.array([0.5, 1.5, -0.3])),
    "returns y": (lambda x, y: y, 2.0),
    "two uses": (lambda x, y: fnp.cos(y) * x + y * y * x, np.array([1.0, 2.0, 3.0])),
}


def _y_for(x):
    return Y if np.ndim(x) else 0.8


@pytest.mark.parametrize("name", list(INNERS))
@pytest.mark.parametrize("transform", ["grad", "jvp", "vmap", "hessian", "grad of grad"])
def test_closure_values_of_outer_transforms_are_staged_inputs(staged_calls, name, transform):
    inner, x = INNERS[name]
    if transform == "vmap":
        y = np.array([0.3, -0.5, 1.1, 2.0])
        eager = fg.vmap(outer_of(inner, x, False))(y)
        staged = fg.vmap(outer_of(inner, x, True))(y)
    else:
        y = 0.8 if transform != "vmap" else None
        scalar = (lambda f: (lambda y: fnp.sum(f(y))))
        if transform == "grad":
            t = lambda f: fg.grad(scalar(f))  # noqa: E731
        elif transform == "jvp":
            t = lambda f: (lambda y: fg.jvp(f, (y,), (1.0,)))  # noqa: E731
        elif transform == "hessian":
            t = lambda f: fg.hessian(scalar(f))  # noqa: E731
        else:
            t = lambda f: fg.grad(fg.grad(scalar(f)))  # noqa: E731
        eager = t(outer_of(inner, x, False))(y)
        staged = t(outer_of(inner, x, True))(y)
    for a, b in zip(fg.tree_util.tree_leaves(staged), fg.tree_util.tree_leaves(eager)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert _staged_with_captures(staged_calls), "the jitted call was not staged with y (or values of it) as inputs"


def test_check_grads_through_a_jitted_closure():
    x = np.array([0.5, 1.5, -0.3])

    def f(y):
        return fg.jit(lambda x: fnp.sum(fnp.sin(x * y) * y))(x)
    check_grads(f, (0.7,), order=2, modes=("fwd", "rev"))


def test_a_persistent_jitted_function_sees_each_calls_value(staged_calls):
    holder = {}
    jf = fg.jit(lambda x: x * holder["y"] ** 2)

    def f(y):
        holder["y"] = y
        return jf(2.0)
    assert fg.grad(f)(3.0) == pytest.approx(12.0)
    assert fg.grad(f)(5.0) == pytest.approx(20.0)  # not the first call's tracer
    assert len(_staged_with_captures(staged_calls)) == 2
    assert jf.cache_size() == 0, "a program with implicit inputs of one call was cached"


def test_python_decisions_on_a_captured_value_run_eagerly():
    """Under grad the captured value is concrete to Python; the jitted function runs eagerly
    there (as without jit), so each call takes its own branch."""
    def f(y):
        def inner(x):
            return x * y if y > 1 else x * y * y
        return fg.jit(inner)(2.0)
    assert fg.grad(f)(3.0) == pytest.approx(2.0)
    assert fg.grad(f)(0.5) == pytest.approx(2.0)  # 2 * 2 * 0.5


def test_explicit_traced_arguments_and_captures_together(staged_calls):
    w = np.array([[0.3, -0.2], [0.1, 0.5], [0.7, 0.2]])
    x = np.array([1.0, -1.0, 0.5])

    def loss(w, scale):
        return fg.jit(lambda w: fnp.sum(fnp.tanh(x @ w) * scale))(w)

    def eager(w, scale):
        return fnp.sum(fnp.tanh(x @ w) * scale)
    for argnums in (0, 1, (0, 1)):
        got = fg.grad(loss, argnums=argnums)(w, 1.7)
        want = fg.grad(eager, argnums=argnums)(w, 1.7)
        for a, b in zip(fg.tree_util.tree_leaves(got), fg.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_leaked_closure_value_still_raises_the_leak_error():
    leaked = []
    fg.grad(lambda y: (leaked.append(y), y * 2.0)[1])(3.0)
    with pytest.raises(fg.LeakedTraceError if hasattr(fg, "LeakedTraceError") else Exception, match="was used after grad returned"):
        fg.jit(lambda x: x * leaked[0])(2.0)


def test_retracing_a_closure_reader_is_explained(caplog):
    holder = {}
    jf = fg.jit(lambda x: x * holder["y"])

    def f(y):
        holder["y"] = y
        return jf(2.0)
    fg.config.jit_log_compiles = True
    try:
        with caplog.at_level("WARNING", logger="funcgrad.jit"):
            fg.grad(f)(3.0)
            fg.grad(f)(4.0)
    finally:
        fg.config.jit_log_compiles = False
    assert "read a value of an enclosing transform through its closure" in caplog.text


def test_inside_another_jit_a_closure_reader_is_inlined(staged_calls):
    """Under an enclosing fg.jit the inner function's operations go into that program (as for
    explicit arguments), rather than a nested staged call."""
    def outer(y):
        return fg.jit(lambda x: fnp.sin(x) * y * y)(2.0)
    prog = fg.make_program(fg.grad(outer))(3.0)
    assert "jit_call" not in repr(prog) and "multiply" in repr(prog)
    staged = fg.jit(fg.grad(outer))
    assert staged(3.0) == pytest.approx(np.sin(2.0) * 6.0)
    assert staged(4.0) == pytest.approx(np.sin(2.0) * 8.0)


_SCALE = 3.0  # a module-level value a jitted function reads (test below)


def _scaled(x):
    return fnp.sin(x) * _SCALE


def test_a_function_first_traced_with_a_plain_closure_value_sees_a_later_traced_one():
    """Traced (and cached) while its closure cell held a plain number, the jitted function must
    not replay that program when a later call's cell holds a value of an enclosing transform:
    that would give the old value and a zero derivative."""
    scale = 1.0

    def inner(x):
        return fnp.sin(x) * scale

    jf = fg.jit(inner)
    assert jf(2.0) == pytest.approx(np.sin(2.0))  # traced and cached with scale = 1.0

    def outer(v):
        nonlocal scale
        scale = v
        try:
            return jf(2.0)
        finally:
            scale = 1.0

    assert fg.grad(outer)(3.0) == pytest.approx(np.sin(2.0))
    np.testing.assert_allclose(fg.vmap(outer)(np.arange(3.0)), np.sin(2.0) * np.arange(3.0))
    assert fg.jvp(outer, (3.0,), (2.0,))[1] == pytest.approx(2.0 * np.sin(2.0))
    assert fg.jit(fg.grad(outer))(5.0) == pytest.approx(np.sin(2.0))
    assert jf(2.0) == pytest.approx(np.sin(2.0))  # and plain calls still use the cached program
    assert jf.cache_size() == 1


def test_a_module_level_value_read_by_a_jitted_function_is_seen_when_traced():
    global _SCALE
    jf = fg.jit(_scaled)
    assert jf(2.0) == pytest.approx(3.0 * np.sin(2.0))

    def outer(v):
        global _SCALE
        _SCALE = v
        try:
            return jf(2.0)
        finally:
            _SCALE = 3.0

    assert fg.grad(outer)(4.0) == pytest.approx(np.sin(2.0))
    assert _SCALE == 3.0
