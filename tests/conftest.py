"""Shared fixtures for the whole suite (see tests/factories.py and tests/strategies.py)."""

from __future__ import annotations

import os

# The suite's BLAS (NumPy's and SciPy's OpenBLAS) runs on one thread unless the environment says
# otherwise: the tests' matrices are small, and a second BLAS thread per call cost the linalg-heavy
# test files 20% more CPU time on a quiet machine, twice as much on a busy one (benchmarks/RESULTS.md,
# "Suite time, session 12"); the second core runs the background checks (tests/background_checks.py). Set before NumPy is first imported
# (nothing imports it before this file); the processes the tests start inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest
from factories import no_fallback


@pytest.fixture
def no_batching_fallback():
    """The :func:`factories.no_fallback` context manager: no vmap loop fallback inside."""
    return no_fallback


@pytest.fixture(scope="session", autouse=True)
def native_kernel_cache(tmp_path_factory):
    """One folder for the native tier's compiled kernels for the whole session (processes the
    tests start share it), never the user's ~/.cache; FUNCGRAD_CACHE_DIR, if set, is kept (a
    developer's cache that survives between runs). Tests about the cache itself use their own."""
    import os

    if os.environ.get("FUNCGRAD_CACHE_DIR"):
        yield os.environ["FUNCGRAD_CACHE_DIR"]
        return
    folder = str(tmp_path_factory.mktemp("funcgrad-kernels"))
    os.environ["FUNCGRAD_CACHE_DIR"] = folder
    yield folder
    del os.environ["FUNCGRAD_CACHE_DIR"]


@pytest.fixture(scope="session", autouse=True)
def background(request, tmp_path_factory, native_kernel_cache):
    """The :class:`background_checks.Runner` of the session: the slow subprocess checks the
    selected tests want (the docs site's build, mypy, the examples) start now, one at a time,
    beside the tests (after the kernel cache's folder is set: they see it);
    FUNCGRAD_TEST_BACKGROUND=0 leaves each to run inside its test."""
    import os
    import re

    import background_checks

    runner = background_checks.Runner(lambda name: tmp_path_factory.mktemp(re.sub(r"[^A-Za-z0-9_.-]+", "-", name)))
    if os.environ.get("FUNCGRAD_TEST_BACKGROUND", "1").strip() != "0":
        tests = [(str(item.path), item.name) for item in request.session.items]
        runner.start(background_checks.wanted_in_order(background_checks.JOBS, tests))
    yield runner
    runner.stop()


def pytest_generate_tests(metafunc):
    """The runs of tests/jit_modes.py's ``jit_mode``: eager, jit and of_jit for every test, and
    native (numba installed: the ``native`` extra) for those marked ``@pytest.mark.native``, or
    for all with FUNCGRAD_TEST_NATIVE=all."""
    if "jit_mode" not in metafunc.fixturenames:
        return
    import os

    from jit_modes import MODES

    from funcgrad.jit import native

    modes = list(MODES)
    wanted = os.environ.get("FUNCGRAD_TEST_NATIVE", "").strip()
    if wanted not in ("", "marked", "all", "none"):
        raise pytest.UsageError(f"FUNCGRAD_TEST_NATIVE must be 'marked' (default), 'all' or 'none', got {wanted!r}")
    if native.installed() and (wanted == "all" or (wanted in ("", "marked")
                                                   and metafunc.definition.get_closest_marker("native"))):
        modes.append("native")
    metafunc.parametrize("jit_mode", modes, indirect=True)


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
