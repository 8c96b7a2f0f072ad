"""The float64 MLP step outside the harness: process time and minor page faults per step.

    python benchmarks/mlp_faults.py                 # fg.grad and the Tensor step, alternating rounds
    python benchmarks/mlp_faults.py --states        # the Tensor step from 42 different heap states

A step loop on glibc can fall into a cycle where freeing the step's last arrays leaves more
than the trim threshold (twice the dynamic mmap threshold: 2 x 1.6 MB after the 784x256 float64
weight gradient) free at the top of the heap, so glibc gives it back and the next step faults it
in again (about 740 faults, +1.3 ms, a step). ``--states`` makes heap states in fresh processes
(blocks of random sizes, every other one freed) and counts those in which the step lands in that
cycle. See benchmarks/RESULTS.md, "Issue 12 (session 4)".
"""

from __future__ import annotations

import gc
import resource
import sys
import time

ROWS = ("funcgrad grad", "funcgrad.tensor backward")


_TABLES: list[object] = []  # kept alive, as the harness keeps its table (its reference gradients are 2 MB)


def _steps(dtype: str) -> dict[str, object]:
    import threadpoolctl

    from benchmarks import peers
    from benchmarks.workloads import Context, mlp

    peers.set_enabled(set())
    threadpoolctl.threadpool_limits(1)
    (table,) = mlp.build(Context(clock="cpu"), dtype)
    _TABLES.append(table)
    return {e.name: e.fn for e in table.entries}


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def alternate(dtype: str, rounds: int = 15, steps: int = 20) -> None:
    import statistics

    fns = {n: f for n, f in _steps(dtype).items() if n in ROWS}
    for f in fns.values():
        for _ in range(steps):
            f()
    ms: dict[str, list[float]] = {n: [] for n in fns}
    flt: dict[str, list[float]] = {n: [] for n in fns}
    for _ in range(rounds):
        for n, f in fns.items():
            gc.collect()
            f0, c0 = _faults(), time.process_time()
            for _ in range(steps):
                f()
            ms[n].append((time.process_time() - c0) / steps * 1e3)
            flt[n].append((_faults() - f0) / steps)
    med = {n: statistics.median(v) for n, v in ms.items()}
    for n in fns:
        print(f"{dtype} {n:26s} {med[n]:.3f} ms  faults/step {statistics.median(flt[n]):.1f}")
    print(f"ratio {med[ROWS[1]] / med[ROWS[0]]:.3f}")


def one_state(dtype: str, row: str, seed: int, blocks: int) -> None:
    """One heap state: ``blocks`` NumPy blocks of 512 B .. 512 KiB, every other one freed; then 10 steps,
    and the faults and time per step over 30 more. (Which states fall into the cycle depends on every
    allocation the process made before, down to the order of its imports: the counts are a sample.)"""
    import numpy as np
    import threadpoolctl

    from benchmarks import peers
    from benchmarks.workloads import Context, mlp

    peers.set_enabled(set())
    threadpoolctl.threadpool_limits(1)
    (table,) = mlp.build(Context(clock="cpu"), dtype)
    fn = {e.name: e.fn for e in table.entries}[row]
    fn()
    rng = np.random.default_rng(seed)
    made = [np.empty(int(64 * 1024 ** rng.random()), np.float64) for _ in range(blocks)]
    held = made[::2]  # noqa: F841 - kept alive: the holes between them are the state
    del made
    gc.collect()
    for _ in range(10):
        fn()
    f0, c0 = _faults(), time.process_time()
    for _ in range(30):
        fn()
    print(f"{(_faults() - f0) / 30:.0f} {(time.process_time() - c0) / 30 * 1e3:.2f}")


def states(dtype: str, row: str) -> None:
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    faults = []
    for blocks in (0, 10, 30, 100, 300, 1000, 3000):
        for seed in range(1, 7):
            out = subprocess.run([sys.executable, __file__, "--one", dtype, row, str(seed), str(blocks)],
                                 capture_output=True, text=True, env=env, check=True).stdout.split()
            faults.append(int(out[0]))
    bad = sum(f > 100 for f in faults)
    print(f"{row}: {bad} of {len(faults)} heap states fault every step; faults/step: {' '.join(map(str, faults))}")


if __name__ == "__main__" and sys.argv[1:2] == ["--one"]:  # (imports nothing more: each import moves the heap)
    one_state(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float64")
    p.add_argument("--states", action="store_true", help="count heap states in the trim cycle")
    p.add_argument("--row", default=ROWS[1], help="row for --states (default: %(default)s)")
    a = p.parse_args()
    if a.states:
        states(a.dtype, a.row)
    else:
        alternate(a.dtype)
