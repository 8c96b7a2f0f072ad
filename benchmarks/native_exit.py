"""Processes that exit while the native tier is compiling in the background: how many crash, and
how long their exit takes.

    python benchmarks/native_exit.py              # 20 processes, each its own empty kernel cache
    python benchmarks/native_exit.py --runs 40 --ops 60 --programs 4

Each child traces ``--programs`` programs (``jit(grad)`` of a chain of ``--ops`` elementwise
steps) with ``backend="native"``, so the background thread starts compiling them, sleeps a
different time each run (spread over the compile) and returns from its script. It prints a
Markdown row: non-zero exits (segfaults show as -11), and the median and largest time from the
end of the child's script to the end of its process (the exit hook lets the compile under way
finish its segment: funcgrad/jit/tiered.py). Needs numba (the ``native`` extra).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import sys, time
import numpy as np
import funcgrad as fg, funcgrad.numpy as fnp

ops, programs, sleep = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def make(k):
    def f(y):
        for _ in range(ops + k):
            y = fnp.tanh(fnp.sin(y)) * 1.5 + fnp.exp(-y * y)
        return fnp.sum(y)
    return f

for k in range(programs):
    g = fg.jit(fg.grad(make(k)), backend="native")
    g(np.ones(3))
time.sleep(sleep)
print(time.perf_counter(), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--ops", type=int, default=20, help="elementwise steps per program")
    parser.add_argument("--programs", type=int, default=4)
    parser.add_argument("--longest-sleep", type=float, default=4.0, help="seconds; sleeps spread over 0..this")
    args = parser.parse_args()
    failures, exits = [], []
    for run in range(args.runs):
        sleep = args.longest_sleep * run / max(args.runs - 1, 1)
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, FUNCGRAD_CACHE_DIR=cache, PYTHONPATH=ROOT)
            out = subprocess.run([sys.executable, "-c", CHILD, str(args.ops), str(args.programs), str(sleep)],
                                 env=env, capture_output=True, text=True, timeout=600)
            end = time.perf_counter()  # (CLOCK_MONOTONIC: the same clock as the child's)
        if out.returncode != 0:
            failures.append(f"run {run} (sleep {sleep:.2f} s): exit {out.returncode}: {out.stderr.strip()[-300:]}")
        elif out.stdout.strip():
            exits.append(end - float(out.stdout.split()[-1]))
    exits.sort()
    for line in failures:
        print(line, file=sys.stderr)
    median = exits[len(exits) // 2] if exits else float("nan")
    print("| runs | non-zero exits | exit time, median | exit time, largest |")
    print("|---:|---:|---:|---:|")
    print(f"| {args.runs} | {len(failures)} | {median:.2f} s | {max(exits, default=float('nan')):.2f} s |")


if __name__ == "__main__":
    main()
