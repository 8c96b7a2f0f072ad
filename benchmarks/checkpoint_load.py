"""Time and peak memory of ``fg.load`` on a ~100 MB checkpoint, each in a fresh process.

``python -m benchmarks.checkpoint_load [--mb 100] [--leaves 8] [--repeat 3]``
prints one JSON line: the file size, the best wall time of
``fg.load(path, like=tree)`` over ``--repeat`` fresh processes (tracing off),
and, from as many other fresh processes, the :mod:`tracemalloc` peak during
the load (NumPy reports its buffers to it) and the rise of the process's peak
resident set (VmHWM, reset just before the load) over the resident set before
it. Nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, os, sys, time, tracemalloc
import numpy as np
import funcgrad as fg

path, n_leaves, per, trace = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "trace"
like = {f"w{i}": np.zeros(per, np.float32) for i in range(n_leaves)}

def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0

try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
base = rss("VmRSS:")
if trace:
    tracemalloc.start()
t0 = time.perf_counter()
out = fg.load(path, like=like)
dt = time.perf_counter() - t0
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(json.dumps({"seconds": dt, "traced_peak": peak, "rss_rise": rss("VmHWM:") - base}))
"""


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=100.0)
    p.add_argument("--leaves", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    import numpy as np

    import funcgrad as fg

    per = int(args.mb * 2**20 / 4 / args.leaves)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.npz")
        fg.save(path, {f"w{i}": rng.standard_normal(per, dtype=np.float32) for i in range(args.leaves)})
        size = os.path.getsize(path)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        runs: dict[str, list[dict]] = {"time": [], "trace": []}
        for _ in range(args.repeat):
            for mode, rows_of_mode in runs.items():
                r = subprocess.run([sys.executable, "-c", _CHILD, path, str(args.leaves), str(per), mode], env=env,
                                   capture_output=True, text=True, check=True)
                rows_of_mode.append(json.loads(r.stdout.strip().splitlines()[-1]))
        row = {"file_mb": size / 2**20, "leaves": args.leaves,
               "best_seconds": min(r["seconds"] for r in runs["time"]),
               "traced_peak_mb": max(r["traced_peak"] for r in runs["trace"]) / 2**20,
               "rss_rise_mb": max(r["rss_rise"] for r in runs["trace"]) / 2**20}
        print(json.dumps(row))
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
