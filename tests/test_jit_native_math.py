"""The native tier's inline float64 exp and tanh (funcgrad/jit/native_math.py) against NumPy.

Bound (docs/jit.md): each value within 4 ulp of the replay's (NumPy's); NaN, inf, signed
zeros, overflow and subnormal results where NumPy puts them. Skips without numba (the
`native` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native, native_math
from funcgrad.jit.native_source import segment_source

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")

ULP_BOUND = 4


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path / "cache"))


def native_and_replay(f, x):
    with np.errstate(all="ignore"):  # (tracing runs NumPy on the special values)
        nat = fg.jit(f, backend="native")
        compiled = nat.lower(x).compile()
        assert compiled.backend == "native" and compiled.left == 0, compiled.why
        return nat(x), fg.jit(f, backend="numpy")(x)


def ulps(got, want):
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    ok = np.isfinite(want)
    return float(np.max(np.abs(got[ok] - want[ok]) / np.spacing(np.abs(want[ok])), initial=0.0))


RANGES = {  # name: points (1e5 or more each)
    "uniform -2..2": np.random.default_rng(0).uniform(-2.0, 2.0, 200_000),
    "whole exp range": np.random.default_rng(1).uniform(-745.0, 709.7, 200_000),
    "near zero": np.random.default_rng(2).standard_normal(200_000) * 1e-3,
    "positive decades": np.geomspace(1e-300, 709.0, 200_000),
    "negative decades": -np.geomspace(1e-300, 745.0, 200_000),
}


@pytest.mark.parametrize("name", sorted(RANGES))
@pytest.mark.parametrize("fn", [fnp.exp, fnp.tanh], ids=["exp", "tanh"])
def test_inline_exp_and_tanh_are_within_the_ulp_bound(fn, name):
    got, want = native_and_replay(fn, RANGES[name])
    assert ulps(got, want) <= ULP_BOUND


def test_special_values_come_out_as_numpy_s():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-320, -1e-320, 709.78, 709.79, -745.13, -745.14,
                  -708.4, -740.0, 19.0, 22.5, -25.0, 1e-10, -1e-10])
    for fn in (fnp.exp, fnp.tanh):
        got, want = native_and_replay(fn, x)
        assert ulps(got, want) <= ULP_BOUND, fn
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # tanh(-0.0) is -0.0


def test_float64_uses_the_inline_functions_and_float32_the_c_library():
    prog64 = fg.jit(lambda x: fnp.tanh(fnp.exp(x))).program(np.ones(3))
    src = segment_source(prog64.eqns, list(prog64.invars), list(prog64.outs))
    assert native_math.uses(src) and "np.exp(" not in src and "np.tanh(" not in src
    prog32 = fg.jit(lambda x: fnp.tanh(fnp.exp(x))).program(np.ones(3, np.float32))
    src = segment_source(prog32.eqns, list(prog32.invars), list(prog32.outs))
    assert not native_math.uses(src) and "np.exp(" in src


def test_gradient_of_a_transcendental_chain_stays_within_the_chain_bound():
    x = np.linspace(-3.0, 3.0, 10_001)
    f = fg.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.tanh(x) + fnp.exp(-x * x)))
    got, want = native_and_replay(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
