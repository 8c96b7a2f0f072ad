"""Shared fixtures for the whole suite (see tests/factories.py and tests/strategies.py)."""

from __future__ import annotations

import pytest
from factories import no_fallback


@pytest.fixture
def no_batching_fallback():
    """The :func:`factories.no_fallback` context manager: no vmap loop fallback inside."""
    return no_fallback


def pytest_configure(config):
    """The suite checks the NumPy replay unless FUNCGRAD_JIT_BACKEND says otherwise: with the
    native tier installed, "auto" would swap in native code (equal to a few ulp, not bit for
    bit) after some calls, in the middle of bit-for-bit tests. tests/test_jit_native.py forces
    the native tier where it checks it; FUNCGRAD_JIT_BACKEND=native FUNCGRAD_JIT_NATIVE_WAIT=1
    runs the jit-parametrized suites on native code."""
    import os

    if not os.environ.get("FUNCGRAD_JIT_BACKEND"):
        import funcgrad as fg

        fg.config.jit_backend = "numpy"
