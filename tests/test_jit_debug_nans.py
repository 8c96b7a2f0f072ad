"""fg.debug_nans inside compiled fg.jit programs: the first equation whose result holds a NaN
raises, naming its primitive and the equation; results are unchanged while nothing is NaN."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

GOOD = np.array([1.0, 2.0, 3.0])
BAD = np.array([1.0, -2.0, 3.0])


def traced(f, *args):
    """``fg.jit(f)``, traced on clean arguments (so later calls run the compiled program)."""
    g = fg.jit(f)
    g(*args)
    return g


def raises_nan(g, *args, primitive):
    with np.errstate(all="ignore"), fg.debug_nans(), pytest.raises(FloatingPointError) as info:
        g(*args)
    text = str(info.value)
    assert f"primitive '{primitive}' produced a NaN in the compiled program of fg.jit(" in text
    assert "equation" in text and f"= {primitive} " in text and "debug_nans" in text
    return text


def test_forward_nan_names_the_primitive():
    g = traced(lambda x: fnp.sum(fnp.log(x) * x), GOOD)
    raises_nan(g, BAD, primitive="log")


def test_nan_only_in_the_derivative_part_of_a_jitted_grad():
    # forward sqrt(0) * 0 = 0 is fine; the VJP is 0 * (0.5 / sqrt(0)) = 0 * inf = nan
    g = traced(fg.grad(lambda x: fnp.sum(fnp.sqrt(x) * 0.0)), GOOD)
    text = raises_nan(g, np.zeros(3), primitive="multiply")
    assert "fg.make_program" in text


def test_nan_in_the_backward_program_of_grad_of_jit():
    f = fg.jit(lambda x: fnp.sum(fnp.sqrt(x) * 0.0))
    fg.grad(f)(GOOD)
    with np.errstate(all="ignore"), fg.debug_nans(), pytest.raises(FloatingPointError, match="produced a NaN"):
        fg.grad(f)(np.zeros(3))


def test_python_float_programs_are_checked_too():
    g = traced(lambda x: x - x * 1.0, 2.0)
    assert g(2.0) == 0.0
    raises_nan(g, float("inf"), primitive="subtract")


def test_the_config_flag_switches_it(monkeypatch):
    g = traced(lambda x: fnp.log(x), GOOD)
    with np.errstate(all="ignore"):
        assert np.isnan(g(BAD)[1])  # off: NaN comes back as NumPy makes it
        fg.config.update("debug_nans", True)
        try:
            with pytest.raises(FloatingPointError, match="primitive 'log'"):
                g(BAD)
        finally:
            fg.config.update("debug_nans", False)


@pytest.mark.parametrize("n", [5, 1 << 17])
def test_checked_runs_give_the_same_bits(n):
    x = np.linspace(0.5, 2.0, n)
    g = traced(fg.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.tanh(x) + fnp.log(x))), x)
    plain = g(x)
    with fg.debug_nans():
        checked = g(x)
    assert plain.tobytes() == checked.tobytes()
    assert not np.shares_memory(plain, checked)
