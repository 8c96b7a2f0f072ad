"""Processes that exit while the native tier is compiling in the background: how many crash, how
long their exit takes, how much the compile slows the caller down and how soon native code runs.

    python benchmarks/native_exit.py              # 20 processes, each its own empty kernel cache
    python benchmarks/native_exit.py --runs 40 --ops 60 --programs 4
    python benchmarks/native_exit.py --compiler thread   # numba on a thread of the caller's process

Each child traces ``--programs`` programs (``jit(grad)`` of a chain of ``--ops`` elementwise
steps) with ``backend="native"``, so the background compiler starts on them, then keeps calling a
NumPy-replay workload (``jit(f, backend="numpy")`` of 40 small-array steps: the caller's own work)
for a different time each run (spread over the compile) and returns from its script. It prints a
Markdown row: non-zero exits (segfaults show as -11); the median and largest time from the end of
the child's script to the end of its process (funcgrad/jit/tiered.py's exit hook: kill the compiler
process, or let the compiling thread finish its segment); the caller's slowdown (median workload
call while the compiler runs over the median before it started); the time from the first call to
native code in use (runs that got there). ``--compiler`` sets ``FUNCGRAD_JIT_COMPILER``. Needs
numba (the ``native`` extra).
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

def work(y):
    for _ in range(40):
        y = fnp.sin(y) * 0.5 + y
    return y

caller = fg.jit(work, backend="numpy")
z = np.ones(3)

def timed_calls(seconds, until=None):
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end and not (until is not None and until()):
        t = time.perf_counter(); caller(z); times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2] if times else float("nan")

before = timed_calls(0.5)

def make(k):
    def f(y):
        for _ in range(ops + k):
            y = fnp.tanh(fnp.sin(y)) * 1.5 + fnp.exp(-y * y)
        return fnp.sum(y)
    return f

tiers = []
start = time.perf_counter()
for k in range(programs):
    g = fg.jit(fg.grad(make(k)), backend="native")
    g(np.ones(3))
    tiers.append(next(iter(g.cache.values())).staged.tier)
during = timed_calls(sleep, until=lambda: tiers[0].done.is_set())
to_native = time.perf_counter() - start if tiers[0].state == "native" else float("nan")
timed_calls(max(0.0, sleep - (time.perf_counter() - start)))
print(during / before, to_native, time.perf_counter(), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--ops", type=int, default=20, help="elementwise steps per program")
    parser.add_argument("--programs", type=int, default=4)
    parser.add_argument("--longest-sleep", type=float, default=4.0, help="seconds; sleeps spread over 0..this")
    parser.add_argument("--compiler", choices=("process", "thread"), default="process",
                        help="FUNCGRAD_JIT_COMPILER: numba in a worker process or on a thread")
    args = parser.parse_args()
    failures, exits, slowdowns, to_native = [], [], [], []
    for run in range(args.runs):
        sleep = args.longest_sleep * run / max(args.runs - 1, 1)
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, FUNCGRAD_CACHE_DIR=cache, PYTHONPATH=ROOT, FUNCGRAD_JIT_COMPILER=args.compiler)
            out = subprocess.run([sys.executable, "-c", CHILD, str(args.ops), str(args.programs), str(sleep)],
                                 env=env, capture_output=True, text=True, timeout=600)
            end = time.perf_counter()  # (CLOCK_MONOTONIC: the same clock as the child's)
        if out.returncode != 0:
            failures.append(f"run {run} (sleep {sleep:.2f} s): exit {out.returncode}: {out.stderr.strip()[-300:]}")
        elif out.stdout.strip():
            slowdown, native_after, finished = (float(v) for v in out.stdout.split()[-3:])
            exits.append(end - finished)
            slowdowns.append(slowdown)
            if native_after == native_after:
                to_native.append(native_after)
    exits.sort()
    for line in failures:
        print(line, file=sys.stderr)
    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2] if values else float("nan")

    print("| compiler | runs | non-zero exits | exit time, median | exit time, largest | caller slowdown, median "
          "| time to native code, median (runs) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.compiler} | {args.runs} | {len(failures)} | {median(exits):.2f} s "
          f"| {max(exits, default=float('nan')):.2f} s | {median(slowdowns):.2f}x "
          f"| {median(to_native):.2f} s ({len(to_native)}) |")


if __name__ == "__main__":
    main()
