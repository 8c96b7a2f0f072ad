"""Issue 26's training steps with each library's default threading (NumPy's BLAS threads, torch's intra-op
threads), the rows ``python -m benchmarks --only training`` measures on one thread.

Run: ``python benchmarks/training_threads.py [--quick]``. NumPy is imported before anything can pin its BLAS,
and torch gets ``torch.set_num_threads(os.cpu_count())`` back after the harness's loader pins it to one.
Ratios are of medians measured in the same run; on a shared machine the threaded numbers mostly measure
the other processes.
"""

from __future__ import annotations

import os
import sys

import numpy as np  # first: its BLAS starts with its default thread count

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import peers  # noqa: E402
from benchmarks.run import run_table  # noqa: E402
from benchmarks.workloads import Context, training  # noqa: E402


def main(argv: list[str]) -> None:
    torch = peers.torch()
    threads = os.cpu_count() or 1
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        import threadpoolctl
        blas = [(i["internal_api"], i["num_threads"]) for i in threadpoolctl.threadpool_info()]
    except ImportError:
        blas = "threadpoolctl not installed"
    print(f"default threads: numpy {np.__version__} BLAS {blas}; torch "
          f"{torch.get_num_threads() if torch is not None else 'not installed'}; {threads} CPUs, "
          f"load {os.getloadavg()}")
    ctx = Context(quick="--quick" in argv, clock="wall")  # CPU time would add up the threads
    for table in training.build(ctx):
        run_table(table, ctx)


if __name__ == "__main__":
    main(sys.argv[1:])
