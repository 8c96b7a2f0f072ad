"""The training rows of ``python -m benchmarks --only training`` in steady state: consecutive steps.

Run: ``python benchmarks/training_steady.py [rounds]``. The harness's ``--quick`` samples are one
call each, right after a ``gc.collect()`` and after another row's call, so they include what the
first step after a switch costs (caches refilled, freed memory faulted in again); this script
takes every sample as three consecutive steps of one row (rows interleaved round by round, the
process's CPU time, one thread, the collector frozen after warm-up as in the harness), which is
what a training loop pays per step. It prints each row's median and minimum per step and the
ratios to the functional step (``fg.nn``) and to PyTorch eager where torch is installed.
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import peers  # noqa: E402
from benchmarks.workloads import Context, training  # noqa: E402

ROWS = {"funcgrad.tensor": "ft", "ft.compile": "ft.compile", "fg.nn": "fg.nn", "fg.jit": "fg.jit",
        "torch eager": "torch"}
PER_SAMPLE = 3


def steady(table: training.Table, rounds: int) -> dict[str, list[float]]:
    fns = {short: e.fn for e in table.entries for prefix, short in ROWS.items() if e.name.startswith(prefix)}
    for fn in fns.values():
        fn(), fn()
    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.process_time()
            for _ in range(PER_SAMPLE):
                fn()
            samples[name].append((time.process_time() - t) / PER_SAMPLE)
    gc.unfreeze()
    return samples


def main(argv: list[str]) -> None:
    rounds = int(argv[0]) if argv else 15
    peers.pin_thread_env()
    peers.pin_threads_now()
    ctx = Context(quick=True)
    for build in (training.conv_table, training.conv2_table, training.lstm_table, training.transformer_table):
        table = build(ctx)
        s = steady(table, rounds)
        med = {k: statistics.median(v) for k, v in s.items()}
        low = {k: min(v) for k, v in s.items()}
        print(f"== {table.title}")
        for k in s:
            line = f"  {k:<11} median {med[k] * 1e3:7.2f} ms  min {low[k] * 1e3:7.2f} ms"
            for base in ("fg.nn", "torch"):
                if base in med and k != base:
                    line += f"  x {base} {med[k] / med[base]:.2f} (min {low[k] / low[base]:.2f})"
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
