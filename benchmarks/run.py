"""Run the benchmarks: ``python -m benchmarks [--quick] [--only NAME] [--json FILE]``.

Each workload first checks that every library computes the same gradient,
then times each entry (median of repeated runs after warm-up) and prints
ratios measured in this same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from . import peers
from .timing import median_time
from .workloads import WORKLOADS


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        out = []
        for t in tree:
            out.extend(_leaves(t))
        return out
    if isinstance(tree, dict):
        return _leaves([tree[k] for k in sorted(tree)])
    return [np.asarray(tree)]


def _agree(a, b, rtol) -> bool:
    la, lb = _leaves(a), _leaves(b)
    return len(la) == len(lb) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=rtol, atol=rtol * max(1.0, np.abs(y).max(initial=0)))
        for x, y in zip(la, lb)
    )


def run_workload(name: str, quick: bool) -> dict:
    title, entries, reference = WORKLOADS[name]()
    print(f"\n== {title}")
    results = {}
    for e in entries:
        if e.gradient is not None:
            got = e.gradient(e.fn())
            rtol = 2e-3 if "32" in name else 1e-6
            if not _agree(got, reference, rtol):
                print(f"  !! {e.name}: gradient disagrees with the reference; not timed")
                continue
        t = median_time(e.fn, repeats=5 if quick else 15, warmup=1 if quick else 3,
                        min_time=0.01 if quick else 0.05) / e.per
        results[e.name] = t
    scale, unit = (1e6, "us") if "us/op" in title else (1e3, "ms")
    base_fwd = results.get("numpy forward")
    hand = results.get("numpy hand fwd+bwd")
    ours = results.get("funcgrad grad")
    for n, t in results.items():
        extra = []
        if base_fwd:
            extra.append(f"{t / base_fwd:6.2f}x numpy fwd")
        if hand:
            extra.append(f"{t / hand:6.2f}x hand fwd+bwd")
        if ours and n != "funcgrad grad" and "forward" not in n:
            extra.append(f"funcgrad/this = {ours / t:5.2f}")
        print(f"  {n:22s} {t * scale:10.3f} {unit}   " + "   ".join(extra))
    return {"title": title, "seconds": results}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (under a minute)")
    parser.add_argument("--only", action="append", choices=sorted(WORKLOADS), help="run only this workload")
    parser.add_argument("--json", help="write results to this file")
    args = parser.parse_args(argv)
    print(f"funcgrad benchmarks  {time.strftime('%Y-%m-%d %H:%M')}  python {sys.version.split()[0]}  "
          f"{platform.machine()}  versions {peers.versions()}")
    out = {name: run_workload(name, args.quick) for name in (args.only or WORKLOADS)}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"versions": peers.versions(), "results": out}, fh, indent=2)


if __name__ == "__main__":
    main()
