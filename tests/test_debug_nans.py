"""fg.debug_nans: raise at the first primitive producing a NaN (forward, VJP or JVP), naming it
and the user's line; off by default; the config flag and the environment variable."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


def test_off_by_default_nan_passes():
    assert not fg.config.debug_nans
    with np.errstate(invalid="ignore"):
        assert np.isnan(fnp.log(np.array([-1.0])))[0]


def test_forward_nan_names_primitive_and_user_line():
    with fg.debug_nans(), np.errstate(invalid="ignore"):
        with pytest.raises(FloatingPointError, match=r"'log' produced a NaN in the forward.*test_debug_nans.py:\d+"):
            fg.grad(lambda x: fnp.sum(fnp.log(x)))(-np.ones(2))
        with pytest.raises(FloatingPointError, match="'arcsin'"):
            fnp.arcsin(np.array([2.0]))  # untraced calls are checked too
    assert not fg.config.debug_nans


def test_reverse_and_forward_mode_derivative_nans():
    f = lambda x: fnp.sum(fnp.sqrt(x) * 0.0)  # noqa: E731  value fine, derivative 0 * inf
    with fg.debug_nans(), np.errstate(invalid="ignore", divide="ignore"):
        with pytest.raises(FloatingPointError, match="VJP rule of 'sqrt'"):
            fg.grad(f)(np.zeros(2))
        with pytest.raises(FloatingPointError, match="JVP rule of 'multiply'"):
            fg.jvp(f, (np.zeros(2),), (np.ones(2),))
        # no NaN: no error, same values
        np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(fnp.sin(x)))(np.ones(2)), np.cos(np.ones(2)))


def test_config_flag_and_nesting():
    fg.config.update("jax_debug_nans", True)
    try:
        assert fg.config.debug_nans
        with fg.debug_nans(False):
            assert not fg.config.debug_nans
        assert fg.config.debug_nans
    finally:
        fg.config.update("debug_nans", False)
    with pytest.raises(KeyError, match="unknown flag"):
        fg.config.update("debug_infs", True)


def test_environment_variable():
    code = ("import numpy as np, funcgrad as fg, funcgrad.numpy as fnp\n"
            "assert fg.config.debug_nans\n"
            "try:\n    fnp.log(np.array([-1.0]))\nexcept FloatingPointError as e:\n    print('raised', e)\n")
    env = dict(os.environ, FUNCGRAD_DEBUG_NANS="1", PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "raised" in out.stdout and "'log'" in out.stdout, out.stderr
