"""while_loop, cond and switch: values, derivatives in both modes to second order (reverse mode
through while_loop included), vmap against a Python loop, pytrees, and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import check_grads

XS = np.array([0.3, -1.2, 2.5, 0.9])


def newton_sqrt(a):
    """sqrt(a) by Newton's method: a value-dependent number of iterations."""
    def body(c):
        x, i = c
        return 0.5 * (x + a / x), i + 1
    x, _ = fg.while_loop(lambda c: (fnp.abs(c[0] * c[0] - a) > 1e-10) & (c[1] < 50), body, (a + 1.0, 0))
    return x


def grow(x):
    return fg.while_loop(lambda c: fnp.abs(c) < 4.0, lambda c: c * 1.5 + fnp.sin(c), x)


def piecewise_cond(x):
    return fg.cond(x > 0.5, lambda v: v ** 3, lambda v: fnp.sin(v) * v, x)


def pytree_cond(x):
    out = fg.cond(x < 0, lambda d: {"a": d["x"] * 2.0, "b": (d["x"] ** 2,)},
                  lambda d: {"a": fnp.exp(d["x"]), "b": (d["x"],)}, {"x": x})
    return out["a"] + out["b"][0]


def three_way(x):
    i = fnp.astype(fnp.floor(x + 1.0), np.int64)  # x in [-1, 0) -> 0, [0, 1) -> 1, ...
    return fg.switch(i, [lambda v: v * v, fnp.sin, lambda v: fnp.exp(-v)], x)


FUNCS = [("newton_sqrt", newton_sqrt, np.array([0.5, 2.0, 7.0, 3.3])),
         ("while_grow", grow, XS),
         ("cond", piecewise_cond, XS),
         ("cond_pytree", pytree_cond, XS),
         ("switch", three_way, XS)]
IDS = [f[0] for f in FUNCS]


def test_values():
    assert fg.while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0) == 16.0
    np.testing.assert_allclose(newton_sqrt(2.0), np.sqrt(2.0))
    assert piecewise_cond(2.0) == 8.0 and piecewise_cond(0.0) == 0.0
    assert fg.cond(True, lambda a, b: a + b, lambda a, b: a - b, 1.0, 2.0) == 3.0
    assert fg.cond(0, lambda: 1, lambda: 2) == 2
    assert fg.switch(7, [lambda: 0, lambda: 1], ) == 1  # clamped, as in JAX
    assert fg.switch(-3, [lambda: 0, lambda: 1]) == 0


@pytest.mark.parametrize("name,f,xs", FUNCS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_check_grads(name, f, xs, dtype):
    for x in xs.astype(dtype):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_reverse_mode_through_while_loop_closed_form():
    # x -> x * 2^k where k is the number of doublings needed to pass 10
    f = lambda x: fg.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)  # noqa: E731
    assert fg.grad(f)(1.5) == 8.0  # 1.5 -> 12 after 3 doublings
    np.testing.assert_allclose(fg.grad(newton_sqrt)(4.0), 0.25)
    np.testing.assert_allclose(fg.hessian(newton_sqrt)(4.0), -1 / 32)


@pytest.mark.parametrize("name,f,xs", FUNCS, ids=IDS)
def test_vmap_matches_loop(name, f, xs):
    np.testing.assert_allclose(fg.vmap(f)(xs), [f(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(fg.vmap(fg.grad(f))(xs), [fg.grad(f)(x) for x in xs], rtol=1e-12)
    np.testing.assert_allclose(fg.jacrev(fg.vmap(f))(xs), np.diag([fg.grad(f)(x) for x in xs]), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(fg.jacfwd(fg.vmap(f))(xs), np.diag([fg.grad(f)(x) for x in xs]), rtol=1e-12,
                               atol=1e-14)


def test_batched_while_loop_freezes_finished_examples():
    count = lambda x: fg.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2.0, c[1] + 1), (x, 0))  # noqa: E731
    xs = np.array([1.0, 6.0, 20.0])
    out, n = fg.vmap(count)(xs)
    np.testing.assert_array_equal(out, [16.0, 12.0, 20.0])
    np.testing.assert_array_equal(n, [4, 1, 0])


def test_nested_vmap_and_batched_operand_only():
    # predicate unbatched, operand batched: only the chosen branch runs
    f = lambda x: fg.cond(True, fnp.sin, fnp.cos, x)  # noqa: E731
    np.testing.assert_allclose(fg.vmap(f)(XS), np.sin(XS))
    m = np.stack([XS, XS[::-1]])
    np.testing.assert_allclose(fg.vmap(fg.vmap(piecewise_cond))(m), [[piecewise_cond(x) for x in r] for r in m])
    np.testing.assert_allclose(fg.vmap(fg.vmap(grow))(m), [[grow(x) for x in r] for r in m])


def test_errors():
    with pytest.raises(TypeError, match="same pytree structure"):
        fg.vmap(lambda x: fg.cond(x > 0, lambda v: (v, v), lambda v: v, x))(XS)
    with pytest.raises(TypeError, match=r"shapes and dtypes.*float64\[\].*float64\[2\]"):
        fg.vmap(lambda x: fg.cond(x > 0, lambda v: v, lambda v: fnp.stack([v, v]), x))(XS)
    with pytest.raises(TypeError, match=r"branch 0's output and branch 1's output.*\['b'\]"):
        fg.vmap(lambda i, x: fg.switch(i, [lambda v: {"b": v}, lambda v: {"b": fnp.astype(v, np.float32)}], x))(
            np.array([0, 1, 0, 1]), XS)
    with pytest.raises(TypeError, match="while_loop: body_fun's result and the carry"):
        fg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1,), (0, 1))
    with pytest.raises(TypeError, match="pred must be a scalar"):
        fg.cond(np.array([True, False]), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="index must be an integer"):
        fg.switch(0.5, [lambda: 1])
    with pytest.raises(ValueError, match="non-empty"):
        fg.switch(0, [])


# -- inside fg.jit: the predicate is a staged value, so the choice is one recorded equation ----------

def _prims(f, *args):
    return [e.prim.name for e in fg.make_program(f)(*args).eqns]


@pytest.mark.parametrize("name,f,xs", FUNCS, ids=IDS)
def test_jit_follows_the_predicate_of_each_call(name, f, xs):
    # before: the branch (or trip count) seen while tracing was frozen into every later call
    jitted = fg.jit(f)
    for x in xs:
        np.testing.assert_allclose(jitted(x), f(x), rtol=1e-13)
    np.testing.assert_allclose(fg.jit(fg.vmap(f))(xs), fg.vmap(f)(xs), rtol=1e-13)


def test_jit_records_one_equation():
    assert _prims(piecewise_cond, 0.3).count("switch") == 1
    assert _prims(three_way, 0.3).count("switch") == 1
    prims = _prims(grow, 0.3)
    assert prims.count("while") == 1 and "sin" not in prims  # the body is in the loop, not unrolled
    s = fg.jit(lambda i, x: fg.switch(i, [lambda v: v, lambda v: v * 2.0, lambda v: v * 3.0], x))
    assert [float(s(i, 1.0)) for i in (-4, 0, 1, 2, 9)] == [1.0, 1.0, 2.0, 3.0, 3.0]  # clamped


@pytest.mark.parametrize("name,f,xs", FUNCS, ids=IDS)
def test_jit_derivatives(name, f, xs):
    for x in xs:
        np.testing.assert_allclose(fg.jit(fg.jacfwd(f))(x), fg.jacfwd(f)(x), rtol=1e-10)
        if name not in ("newton_sqrt", "while_grow"):
            np.testing.assert_allclose(fg.jit(fg.grad(f))(x), fg.grad(f)(x), rtol=1e-10)
            np.testing.assert_allclose(fg.jit(fg.hessian(f))(x), fg.hessian(f)(x), rtol=1e-10, atol=1e-14)


def test_jit_reverse_mode_through_while_loop_is_refused_clearly():
    with pytest.raises(TypeError, match=r"reverse-mode.*while_loop.*fg\.jit.*fori_loop"):
        fg.jit(fg.grad(grow))(0.3)
    assert fg.grad(grow)(0.3) == fg.grad(grow)(0.3)  # eagerly it works (the steps are recorded)


def test_jit_closures_become_operands():
    y = np.array([1.0, -2.0])

    def f(x, w):
        return fnp.sum(fg.cond(fnp.sum(x) > 0, lambda: fnp.sin(x) * w, lambda: x * w ** 2))

    for x in (y, -y * 3.0):
        want = fg.grad(f, argnums=(0, 1))(x, 3.0)
        got = fg.jit(fg.grad(f, argnums=(0, 1)))(x, 3.0)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13)


def test_jit_errors():
    with pytest.raises(TypeError, match=r"same shapes and dtypes inside fg\.jit"):
        fg.jit(lambda x: fg.cond(x > 0, lambda v: v, lambda v: fnp.stack([v, v]), x))(1.0)
    with pytest.raises(TypeError, match=r"same pytree structure"):
        fg.jit(lambda x: fg.cond(x > 0, lambda v: (v, v), lambda v: v, x))(1.0)
    with pytest.raises(TypeError, match=r"body_fun must return a carry with the shapes and dtypes of init_val"):
        fg.jit(lambda x: fg.while_loop(lambda c: c[0] < 3.0, lambda c: fnp.stack([c, c]), x))(np.ones(2))


@pytest.mark.parametrize("name,f,xs", [c for c in FUNCS if c[0] in ("cond", "switch")], ids=["cond", "switch"])
def test_derivatives_of_a_jitted_call(name, f, xs):
    # the jitted call is one primitive whose rules are staged programs; its backward program
    # reads the predicate (a bool), which has no tangent under hessian
    for x in xs:
        np.testing.assert_allclose(fg.grad(fg.jit(f))(x), fg.grad(f)(x), rtol=1e-12)
        np.testing.assert_allclose(fg.hessian(fg.jit(f))(x), fg.hessian(f)(x), rtol=1e-12, atol=1e-15)
    w = lambda x: fnp.where(x > 0, x ** 3, fnp.sin(x))  # noqa: E731  (a bool residual too: broke before)
    np.testing.assert_allclose(fg.hessian(fg.jit(w))(0.3), fg.hessian(w)(0.3), rtol=1e-12)
    check_grads(fg.jit(w), (0.3,), order=2, modes=("fwd", "rev"))


def test_debug_nans_names_the_primitive_inside_a_staged_branch():
    with fg.debug_nans(), np.errstate(invalid="ignore"):
        with pytest.raises(FloatingPointError, match="'log'"):
            fg.jit(lambda x: fg.cond(x > 0, lambda v: fnp.log(v - 1.0), lambda v: v, x))(0.5)


@pytest.mark.parametrize("name,f,xs", FUNCS, ids=IDS)
def test_check_grads_through_the_staged_primitives(name, f, xs):
    # the switch / while equations' own rules, to second order (reverse mode through a staged
    # while_loop is refused: forward mode only there)
    modes = ("fwd",) if name in ("newton_sqrt", "while_grow") else ("fwd", "rev")
    for x in xs[:2]:
        check_grads(fg.jit(f), (x,), order=2, modes=modes)
        check_grads(fg.jit(fg.jacfwd(f)), (x,), order=1, modes=("fwd",))
