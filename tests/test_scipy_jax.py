"""funcgrad.scipy equals jax.scipy: values and gradients recorded from JAX (x64) in
tests/fixtures/scipy_jax.json (regenerate with tests/fixtures/make_scipy_jax.py). Never skips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.scipy as fsp
import funcgrad.scipy.integrate  # noqa: F401
import funcgrad.scipy.linalg  # noqa: F401
import funcgrad.scipy.signal  # noqa: F401
import funcgrad.scipy.stats  # noqa: F401

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location("scipy_jax_cases", FIXTURES / "scipy_jax_cases.py")
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
RECORDED = json.loads((FIXTURES / "scipy_jax.json").read_text())


def test_every_case_is_recorded():
    assert set(_cases.CASES) == set(RECORDED) - {"_about"}


@pytest.mark.parametrize("name", sorted(_cases.CASES))
def test_matches_jax(name):
    fn, args, argnums = _cases.CASES[name]
    want = RECORDED[name]
    value = fn(fsp, fnp, *args)
    np.testing.assert_allclose(np.asarray(value), np.asarray(want["value"]), rtol=1e-9, atol=1e-12)
    if not argnums:
        return
    grads = fg.grad(lambda *a: _cases.weighted(fnp, fn(fsp, fnp, *a)), argnums=argnums)(*args)
    assert len(grads) == len(want["grads"])
    for g, w in zip(grads, want["grads"]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-8, atol=1e-11)
