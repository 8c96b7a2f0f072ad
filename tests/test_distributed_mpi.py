"""funcgrad.distributed on 2 real MPI ranks: launches tests/mpi_worker.py under mpiexec.

``python -m mpi4py`` aborts every rank when one raises, and the subprocess timeout
ends the run if something still hangs (a collective called on one rank only).
Skipped only when mpi4py (the ``mpi`` extra) is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def mpiexec() -> str:
    pytest.importorskip("mpi4py", reason="the mpi extra (mpi4py, mpich) is not installed")
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("mpi4py is installed but no mpiexec was found; install the mpich wheel (the mpi extra)")
    return found


def launch(script: Path, n: int = 2, timeout: float = 240, args: tuple[str, ...] = ()) -> str:
    """Run ``script`` on ``n`` ranks, one BLAS thread each; returns the combined output."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        proc = subprocess.run([mpiexec(), "-n", str(n), sys.executable, "-m", "mpi4py", str(script), *args],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{script.name} on {n} ranks did not finish in {timeout}s (a collective on some ranks "
                    f"only?):\n{err.stdout}\n{err.stderr}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script.name} on {n} ranks failed:\n{out[-6000:]}"
    return out


def test_two_ranks_match_the_single_process_reference() -> None:
    out = launch(ROOT / "tests" / "mpi_worker.py")
    assert "rank 0 OK" in out and "rank 1 OK" in out, out[-3000:]


@pytest.mark.parametrize("name", ["data_parallel.py", "data_parallel_pytorch_style.py"])
def test_examples_on_two_ranks(name: str) -> None:
    from test_examples import check_data_parallel

    out = launch(ROOT / "examples" / name, args=("--fast",))
    assert "2 rank(s)" in out, out
    check_data_parallel(out)


def test_a_failing_rank_aborts_the_others(tmp_path: Path) -> None:
    # rank 1 raises while rank 0 waits in a collective: `-m mpi4py` must end both, not hang
    script = tmp_path / "fail.py"
    script.write_text(
        "import numpy as np\nimport funcgrad.distributed as dist\n"
        "if dist.rank() == 1:\n    raise ValueError('rank 1 fails on purpose')\n"
        "dist.psum(np.ones(3))\n"
    )
    with pytest.raises(AssertionError, match="rank 1 fails on purpose"):
        launch(script, timeout=120)
