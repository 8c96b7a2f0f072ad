"""Minor page faults and time per training step, funcgrad.tensor and fg.nn, in a process WITHOUT torch.

Run from the repository root: ``python benchmarks/page_faults.py conv_table`` (any table of
``benchmarks/workloads/training.py``); ``FUNCGRAD_HOST_MEMORY_KEEP=0 python benchmarks/page_faults.py ...``
for glibc's own malloc settings. The harness's rows run beside torch, whose own large allocations raise
glibc's thresholds for everyone in the process; this script shows what a user's torch-less loop pays.
Prints the median over 20 samples of three steps (process CPU time, one thread) and the faults per step.
"""
from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import time

ROWS = ("funcgrad.tensor", "fg.nn")


def main(model: str) -> None:
    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]  # (torch's allocations would hide the faults)
    from benchmarks import peers
    from benchmarks.workloads import Context, training

    peers.pin_thread_env()
    peers.pin_threads_now()
    table = getattr(training, model)(Context(quick=True))
    fns = [next(e.fn for e in table.entries if e.name.startswith(row)) for row in ROWS]
    for fn in fns:
        for _ in range(5):
            fn()
    gc.collect()
    gc.freeze()
    times: dict[str, list[float]] = {row: [] for row in ROWS}
    faults: dict[str, list[float]] = {row: [] for row in ROWS}
    for _ in range(20):
        for row, fn in zip(ROWS, fns):
            before, start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
            fn(), fn(), fn()
            times[row].append((time.process_time() - start) / 3 * 1e3)
            faults[row].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 3)
    for row in ROWS:
        print(f"{model} {row}: {statistics.median(times[row]):.2f} ms, "
              f"{statistics.median(faults[row]):.0f} page faults per step")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "conv_table")
