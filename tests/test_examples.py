"""Every script in examples/ runs, in its fast mode, and shows what it claims.

Each example is run as a separate process with FUNCGRAD_EXAMPLE_FAST=1 (fewer
epochs/steps). The digits examples need scikit-learn (the ``examples``
extra) and are skipped without it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import background_checks
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None


def _skip_reason(path: Path) -> str | None:
    if "sklearn" in path.read_text() and not HAVE_SKLEARN:
        return "needs scikit-learn (pip install funcgrad[examples])"
    if ("distributed" in path.name or "data_parallel" in path.name) and not HAVE_MPI4PY:
        return "needs mpi4py (pip install funcgrad[mpi])"
    return None


def example_output(job: background_checks.Job, background: background_checks.Runner) -> str:
    """The printout of an example's run (a job below), which must have succeeded."""
    proc = background.result(job).process
    assert proc.returncode == 0, f"{job.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


# The digits examples run with a fixed seed; test_digits_examples_are_reproducible runs them once
# more and compares with what test_example_runs printed.
DIGITS = ("mnist_like_mlp.py", "cnn_digits.py")
SEED = ("--seed", "3")


def _example_job(path: Path, name: str, *wanted: str) -> background_checks.Job:
    """Each run is one process (in the fast mode), started with the session and run beside the
    other tests (tests/background_checks.py)."""
    args = SEED if path.name in DIGITS else ()
    env = {"FUNCGRAD_EXAMPLE_FAST": "1", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runnable = _skip_reason(path) is None
    return background_checks.register(name, lambda folder: [sys.executable, str(path), *args], cwd=ROOT, env=env,
                                      timeout=300, wanted_by=[(__file__, test) for test in wanted if runnable])


RUNS = {path.name: _example_job(path, f"example {path.name}", f"test_example_runs[{path.name}]",
                                *([f"test_digits_examples_are_reproducible[{path.name}]"] if path.name in DIGITS
                                  else []))
        for path in EXAMPLES}
RERUNS = {name: _example_job(ROOT / "examples" / name, f"example {name} again",
                             f"test_digits_examples_are_reproducible[{name}]") for name in DIGITS}


def test_examples_found():
    names = {p.name for p in EXAMPLES}
    assert {"mnist_like_mlp.py", "cnn_digits.py", "newton_optimization.py", "hamiltonian.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, background):
    reason = _skip_reason(path)
    if reason:
        pytest.skip(reason)
    out = example_output(RUNS[path.name], background)
    assert out.strip(), f"{path.name} printed nothing"
    checks = {
        "mnist_like_mlp.py": _check_digits_mlp,
        "cnn_digits.py": _check_cnn,
        "newton_optimization.py": _check_newton,
        "hamiltonian.py": _check_hamiltonian,
        "pytorch_style_training.py": _check_torch_style,
        "quickstart.py": _check_quickstart,
        "per_example_grads.py": _check_per_example,
        "data_parallel.py": check_data_parallel,
        "data_parallel_pytorch_style.py": check_data_parallel,
        "pytorch_cnn_digits.py": _check_torch_cnn,
    }
    check = checks.get(path.name)
    if check is not None:
        check(out)


def _final_accuracy(out: str) -> float:
    m = re.search(r"final test accuracy: ([0-9.]+)", out)
    assert m, out
    return float(m.group(1))


def _check_digits_mlp(out: str) -> None:
    assert _final_accuracy(out) >= 0.95, out
    assert "identical: True" in out  # the checkpoint round trip


def _check_torch_style(out: str) -> None:
    assert _final_accuracy(out) >= 0.93 and "identical: True" in out, out


def check_data_parallel(out: str) -> None:
    """Also used by tests/test_distributed_mpi.py on 2 ranks."""
    assert "replicated on" in out and "rank(s): True" in out, out
    assert "matches single-process full-batch training: True" in out, out


def _check_torch_cnn(out: str) -> None:
    assert _final_accuracy(out) >= 0.93 and "identical: True" in out, out  # fast mode: 3 epochs, ~0.99


def test_pytorch_cnn_example_is_plain_pytorch():
    """Apart from its import line, examples/pytorch_cnn_digits.py names nothing of funcgrad (it runs under
    ``import torch``; checked by hand with PyTorch installed, which CI has not)."""
    lines = (ROOT / "examples" / "pytorch_cnn_digits.py").read_text().splitlines()
    code = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    imports = [ln for ln in code if "funcgrad" in ln and ln.startswith("import ")]
    assert imports == ["import funcgrad.tensor as torch  # noqa: E402  (PyTorch: import torch)"]
    body = "\n".join(ln for ln in lines if not ln.startswith("import funcgrad"))
    doc_end = body.index('"""', body.index('"""') + 3)
    assert "funcgrad" not in body[doc_end:] and "ft." not in body[doc_end:]


def _check_per_example(out: str) -> None:
    assert "vmap equals the Python loop" in out and _final_accuracy(out) >= 0.9, out


def _check_quickstart(out: str) -> None:
    assert "Hessian is symmetric: True" in out and "matches the full Hessian: True" in out, out


def _check_cnn(out: str) -> None:
    assert _final_accuracy(out) >= 0.93, out  # fast mode trains 4 epochs; the full run reaches ~0.98


def _check_newton(out: str) -> None:
    m = re.search(r"Newton needs (\d+) iterations, quasi-Newton (\d+)-(\d+)", out)
    assert m, out
    newton, quasi_lo = int(m.group(1)), int(m.group(2))
    assert newton < quasi_lo, out


def _check_hamiltonian(out: str) -> None:
    assert "FAILED" not in out and out.count("OK") >= 4, out


@pytest.mark.parametrize("name", DIGITS)
def test_digits_examples_are_reproducible(name, background):
    reason = _skip_reason(ROOT / "examples" / name)
    if reason:
        pytest.skip(reason)
    first = example_output(RUNS[name], background)  # (test_example_runs' run, when it ran)
    strip = lambda s: re.sub(r"\(?[0-9.]+ s\)?", "", s)  # noqa: E731  (timings differ)
    assert "final test accuracy" in first and strip(first) == strip(example_output(RERUNS[name], background))
