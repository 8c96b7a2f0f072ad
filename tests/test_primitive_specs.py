"""Primitives tested through one spec each (tests/factories.py): forward values against
NumPy/SciPy, check_grads in both modes to order 2, vmap against a Python loop (and no loop
fallback), float32 in and out, and the fake device. To test a new primitive, add a Spec."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.numpy as fnp
import funcgrad.scipy.special as fsp
from factories import CHECKS, Spec, check_spec

sp = pytest.importorskip("scipy.special")

SPECS = [
    Spec("erf", fsp.erf, sp.erf, ["real"]),
    Spec("erfc", fsp.erfc, sp.erfc, ["real"]),
    Spec("erfinv", fsp.erfinv, sp.erfinv, ["unit"]),
    Spec("gammaln", fsp.gammaln, sp.gammaln, ["positive"]),
    Spec("digamma", fsp.digamma, sp.digamma, ["positive"], rtol=1e-9),
    Spec("gamma", fsp.gamma, sp.gamma, ["positive"]),
    Spec("i0", fsp.i0, sp.i0, ["real"]),
    Spec("i1", fsp.i1, sp.i1, ["real"]),
    Spec("expit", fsp.expit, sp.expit, ["real"]),
    Spec("xlogy", fsp.xlogy, sp.xlogy, ["real", "positive"]),
    Spec("sinc", fnp.sinc, np.sinc, ["real"]),
    Spec("cbrt", fnp.cbrt, np.cbrt, ["positive"]),
    Spec("arctan2", fnp.arctan2, np.arctan2, ["nonzero", "nonzero"]),
    Spec("hypot", fnp.hypot, np.hypot, ["nonzero", "nonzero"], shapes=((2, 3), (3,))),
    Spec("logaddexp", fnp.logaddexp, np.logaddexp, ["real", "real"]),
]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_spec(spec, check):
    check_spec(spec, check)
