"""scan / fori_loop: equal to the Python loop, differentiable, small tape."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)
from funcgrad.core.reverse import tape_order

rng = np.random.default_rng(1)
XS = rng.standard_normal((6, 3))


def step(carry, x):
    h, w = carry
    h = fnp.tanh(w * h + x)
    return (h, w), h * h


def loss_scan(w, h0, reverse=False):
    (h, _), ys = fg.scan(step, (h0, w), XS, reverse=reverse)
    return fnp.sum(ys * np.arange(1.0, 7.0)[:, None]) + fnp.sum(h)


def loss_loop(w, h0, reverse=False):
    carry, ys = (h0, w), [None] * len(XS)
    order = range(len(XS) - 1, -1, -1) if reverse else range(len(XS))
    for t in order:
        carry, ys[t] = step(carry, XS[t])
    return fnp.sum(fnp.stack(ys) * np.arange(1.0, 7.0)[:, None]) + fnp.sum(carry[0])


H0 = np.array([0.1, -0.2, 0.3])


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_equals_loop_values_and_derivatives(reverse):
    np.testing.assert_allclose(loss_scan(0.7, H0, reverse), loss_loop(0.7, H0, reverse))
    g_scan = fg.grad(loss_scan, argnums=(0, 1))(0.7, H0, reverse)
    g_loop = fg.grad(loss_loop, argnums=(0, 1))(0.7, H0, reverse)
    for a, b in zip(g_scan, g_loop):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(fg.grad(fg.grad(loss_scan))(0.7, H0, reverse),
                               fg.grad(fg.grad(loss_loop))(0.7, H0, reverse), rtol=1e-10)
    np.testing.assert_allclose(fg.jvp(lambda w: loss_scan(w, H0, reverse), (0.7,), (1.0,))[1], g_loop[0], rtol=1e-12)


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_scan_check_grads_both_modes_second_order():
    fg.testing.check_grads(lambda w, h0: loss_scan(w, h0), (np.array(0.7), H0), order=2)


def test_scan_gradient_wrt_xs():
    f = lambda xs: fnp.sum(fg.scan(lambda c, x: (c * 0.5 + x, c * x), 1.0, xs)[1])
    g = fg.grad(f)(XS[:, 0])
    fg.testing.check_grads(f, (XS[:, 0],), order=1)
    assert g.shape == (6,)


@pytest.mark.eager_only("of_jit")  # inspects grad's tape, which holds one jit_call node
def test_scan_tape_is_small_for_long_loops():
    xs = rng.standard_normal((10_000, 2))

    def f(w):
        c, ys = fg.scan(lambda c, x: (fnp.tanh(c * 0.9 + x * c), c), w, xs)
        return fnp.sum(c)

    trace_nodes = []

    def count(w):
        out = f(w)
        trace_nodes.append(len(tape_order([out._node])))
        return out

    fg.grad(count)(np.array([0.1, 0.2]))
    assert trace_nodes[0] < 10  # one scan node (plus its outputs), not 10^4 * ops


def test_fori_loop():
    np.testing.assert_allclose(fg.fori_loop(0, 10, lambda i, x: x * 0.5, 1.0), 0.5**10)
    np.testing.assert_allclose(fg.grad(lambda x: fg.fori_loop(0, 3, lambda i, x: x * x, x))(1.1), 8 * 1.1**7)


def test_scan_errors():
    with pytest.raises(TypeError, match="pair"):
        fg.grad(lambda c: fnp.sum(fg.scan(lambda c, x: c + x, c, XS)[0]))(H0)
    with pytest.raises(TypeError, match="structure of init"):
        fg.grad(lambda c: fnp.sum(fg.scan(lambda c, x: ((c, c), x), c, XS)[0][0]))(H0)
    with pytest.raises(TypeError, match="closes over.*as arguments"):
        fg.grad(lambda w: fnp.sum(fg.scan(lambda c, x: (c * w + x, c), H0 * w, XS)[0]))(0.5)
    # untraced init and xs: the loop is simply recorded, closures included
    g = fg.grad(lambda w: fnp.sum(fg.scan(lambda c, x: (c * w + x, c), H0, XS)[0]))(0.5)
    assert np.isfinite(g)


@pytest.mark.eager_only
def test_staged_derivatives_of_a_scan_are_loops():
    # grad of a scan is a reverse scan, its JVP a scan of f and its JVP, its vmap one scan of
    # the vmapped step: the program does not grow with the number of steps
    def f(x, n):
        c, ys = fg.scan(lambda c, t: (fnp.sin(c) * 1.1 + t, c * c), x, fnp.linspace(0.0, 1.0, n))
        return fnp.sum(c) + fnp.sum(ys)

    x = np.linspace(0.1, 0.5, 3)
    for transform in (fg.grad, fg.hessian, lambda g: fg.vmap(fg.grad(g))):
        sizes = []
        for n in (4, 40):
            arg = np.stack([x, x]) if transform not in (fg.grad, fg.hessian) else x
            prog = fg.make_program(transform(lambda v: f(v, n)))(arg)
            names = [e.prim.name for e in prog.eqns]
            assert "scan" in names and "sin" not in names and "cos" not in names  # no step unrolled
            sizes.append(len(prog.eqns))
        assert sizes[0] == sizes[1]
    for n in (1, 5):
        np.testing.assert_allclose(fg.jit(fg.hessian(lambda v: f(v, n)))(x), fg.hessian(lambda v: f(v, n))(x),
                                   rtol=1e-12, atol=1e-15)
