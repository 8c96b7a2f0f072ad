"""One training row alone in its process: time and page faults per step, as a user's loop runs it.

Run from the repository root: ``python benchmarks/standalone_rows.py <table> "<row prefix>[,<row prefix>...]"``,
e.g. ``FUNCGRAD_HOST_MEMORY_KEEP=0 python benchmarks/standalone_rows.py transformer_table "torch eager"``
(torch with glibc's own malloc settings, as in a process without funcgrad) beside
``FUNCGRAD_JIT_BACKEND=numpy python benchmarks/standalone_rows.py transformer_table fg.jit``. The harness
times every library in one process, so one library's allocations (and funcgrad's allocator setting,
``fg.config.host_memory_keep``) shape the others' page faults; this script separates them. Only the named
rows run (the table's other models are built, not stepped). Prints the median over 15 samples of three
steps (process CPU time, one thread) and the median page faults per step.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import sys
import time

def main(model: str, rows: list[str]) -> None:
    sys.path.insert(0, os.getcwd())
    from benchmarks import peers
    from benchmarks.workloads import Context, training
    peers.pin_thread_env()
    peers.pin_threads_now()
    table = getattr(training, model)(Context(quick=True))
    fns = {r: next(e.fn for e in table.entries if e.name.startswith(r)) for r in rows}
    for fn in fns.values():
        for _ in range(5):
            fn()
    gc.collect()
    gc.freeze()
    res: dict[str, tuple[list[float], list[float]]] = {r: ([], []) for r in rows}
    for _ in range(15):
        for r, fn in fns.items():
            f0, t = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
            fn(), fn(), fn()
            res[r][0].append((time.process_time() - t) / 3 * 1e3)
            res[r][1].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 3)
    for r in rows:
        print(model, r, "%.2f ms" % statistics.median(res[r][0]), "%.0f faults" % statistics.median(res[r][1]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
