"""The suite's own pytest configuration (issue 31: ``python -m pytest -q`` printed no summary
line because pyproject.toml already added ``-q``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_pyproject_adds_no_verbosity_option():
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.pytest.ini_options]", 1)[1].split("\n[", 1)[0]
    assert "-q" not in section and "--quiet" not in section


def test_pytest_q_prints_its_summary_line(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                          str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path / "test_one.py")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout.splitlines()[-1]


def test_the_suite_runs_blas_on_one_thread_unless_told_otherwise():
    """tests/conftest.py sets OPENBLAS_NUM_THREADS=1 (if unset) before NumPy loads: NumPy's OpenBLAS
    then runs one thread (the suite's matrices are small; the second core runs the background checks)."""
    import os

    assert os.environ.get("OPENBLAS_NUM_THREADS")
    threadpoolctl = pytest.importorskip("threadpoolctl")  # in CI through scikit-learn ([examples])
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))
    openblas = [p for p in threadpoolctl.threadpool_info() if p.get("internal_api") == "openblas"]
    if not openblas:
        pytest.skip("NumPy's BLAS is not OpenBLAS here")
    assert {p["num_threads"] for p in openblas} == {int(os.environ["OPENBLAS_NUM_THREADS"])}
