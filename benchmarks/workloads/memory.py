"""(g) Peak memory of grad through a 50-layer tanh chain on 10^6-element
arrays, relative to the minimal tape and to the forward pass; the same with
``fg.checkpoint``; and memory flat over repeated grad calls.

Each measurement runs in a fresh process (``python -m benchmarks.memprobe``)
so that no earlier workload's heap is counted, with glibc told to return
every block over 64 KiB to the system when it is freed
(``MALLOC_MMAP_THRESHOLD_=65536``), so that the resident-set peak follows
live memory for the allocators tracemalloc cannot see (PyTorch, XLA).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from .. import peers
from ..memprobe import SEGMENT, probe
from . import Context, Table, Target

MB = 1e6


def _run_probe(lib: str, mode: str, n: int, layers: int, repeat: int, in_process: bool) -> dict[str, Any]:
    if in_process:  # the self-test: no fresh process, RSS figures meaningless
        return probe(lib, mode, n, layers, repeat)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    cmd = [sys.executable, "-m", "benchmarks.memprobe", lib, mode, "--n", str(n), "--layers", str(layers),
           "--repeat", str(repeat)]
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"{lib} {mode}: {last[:150]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def build(ctx: Context) -> list[Table]:
    n = ctx.pick(10**6, quick=2 * 10**5, smoke=2000)
    layers = ctx.pick(50, smoke=6)
    leak_n = ctx.pick(10**4, smoke=100)
    repeat = ctx.pick(1000, quick=100, smoke=15)
    in_process = ctx.smoke
    plan = [
        ("numpy forward (no tape)", "numpy", "forward"),
        ("numpy hand fwd+bwd", "numpy", "hand"),
        ("funcgrad forward", "funcgrad", "forward"),
        ("funcgrad grad", "funcgrad", "grad"),
        ("funcgrad grad, checkpoint per layer", "funcgrad", "grad-ckpt-layer"),
        (f"funcgrad grad, checkpoint per {SEGMENT} layers", "funcgrad", f"grad-ckpt-{SEGMENT}"),
    ]
    if peers.autograd() is not None:
        plan.append(("autograd grad", "autograd", "grad"))
    if peers.torch() is not None:
        plan += [("torch forward (no_grad)", "torch", "forward")] if not ctx.quick else []
        plan += [("torch eager backward", "torch", "grad")]
    if peers.jax() is not None and not ctx.quick:
        plan.append(("jax eager grad", "jax", "grad"))
    if ctx.smoke:
        plan = [p for p in plan if p[1] in ("numpy", "funcgrad") and p[2] != "hand"]
    tape = layers * n * 8

    def run_peak(ctx: Context) -> dict[str, dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {
            "minimal tape (the tanh outputs)": {"value": tape / MB, "columns": {"measured by": "computed"}},
        }
        fwd = None
        for name, lib, mode in plan:
            try:
                r = _run_probe(lib, mode, n, layers, repeat, in_process)
            except Exception as exc:
                rows[name] = {"value": None, "status": f"failed: {exc}"}
                continue
            peak = r["traced"] if r["traced"] is not None else r["rss"]
            if name.startswith("numpy forward"):
                fwd = peak
            cols: dict[str, Any] = {
                "measured by": "tracemalloc" if r["traced"] is not None else "RSS",
                "tracemalloc MB": r["traced"] / MB if r["traced"] is not None else "n/a",
                "RSS MB": r["rss"] / MB if r["rss"] is not None else "n/a",
                "x minimal tape": peak / tape,
            }
            if fwd:
                cols["x numpy forward"] = peak / fwd
            rows[name] = {"value": peak / MB, "columns": cols}
        return rows

    def run_leak(ctx: Context) -> dict[str, dict[str, Any]]:
        try:
            r = _run_probe("funcgrad", "leak", leak_n, layers, repeat, in_process)
        except Exception as exc:
            return {"funcgrad grad, repeated": {"value": None, "status": f"failed: {exc}"}}
        rows = {
            "peak of call 1 (MB)": {"value": r["first_call_peak"] / MB},
            f"peak of call {repeat} (MB)": {"value": r["last_call_peak"] / MB},
            f"traced memory growth, calls 10..{repeat} (MB)": {"value": r["traced_growth"] / MB},
            f"live Python objects growth, calls 10..{repeat}": {"value": float(r["object_growth"])},
        }
        rows["peak of call 1 (MB)"]["derived"] = {
            "growth": max(r["traced_growth"], 0), "one call's peak": r["first_call_peak"],
            "peak of last call": r["last_call_peak"]}
        return rows

    return [
        Table(
            "memory", f"(g) peak memory of grad through a {layers}-layer chain y = tanh(0.9 y + 0.1), "
                      f"{n:.0e} float64 elements ({n * 8 / MB:g} MB per array)",
            unit="MB", run=run_peak,
            targets=[
                Target("(g) grad peak <= 1.05x the minimal tape", "funcgrad grad",
                       ("minimal tape (the tanh outputs)",), 1.05),
                Target(f"(g) with fg.checkpoint (per {SEGMENT} layers) <= 0.5x the minimal tape",
                       f"funcgrad grad, checkpoint per {SEGMENT} layers", ("minimal tape (the tanh outputs)",), 0.5),
                Target(f"fg.checkpoint (per {SEGMENT} layers) lowers grad's peak (< 1x grad without)",
                       f"funcgrad grad, checkpoint per {SEGMENT} layers", ("funcgrad grad",), 0.999, issue="3"),
            ],
            notes=[
                "Peak = the highest memory in use during one call, over what was in use before it (the input "
                "array excluded). tracemalloc sees NumPy's buffers (NumPy, funcgrad, autograd); PyTorch and "
                "JAX are measured by the resident-set peak of a fresh process (RSS), with glibc returning "
                "freed blocks at once (MALLOC_MMAP_THRESHOLD_=65536).",
                "The minimal tape is what any reverse pass must keep: the %d tanh outputs "
                "(%d x %g MB); the mul and add by constants need nothing stored." % (layers, layers, n * 8 / MB),
                "Checkpointing each layer still keeps each layer's input, which on this chain is the previous "
                "tanh output: the same %d arrays as the minimal tape, so it cannot halve it; checkpointing "
                "segments of %d layers keeps %d segment inputs plus one segment's tape while it is "
                "recomputed." % (layers, SEGMENT, -(-layers // SEGMENT)),
            ] + (["--quick uses %g-element arrays and leaves out JAX and torch's forward." % n]
                 if ctx.quick and not ctx.smoke else []),
        ),
        Table(
            "memory_leak", f"(g) memory over {repeat} repeated funcgrad grad calls ({layers} layers, "
                           f"{leak_n:.0e} elements)",
            unit="value", run=run_leak,
            targets=[Target(f"(g) flat over {repeat} calls: growth <= 1% of one call's peak", "growth",
                            ("one call's peak",), 0.01)],
            notes=["Traced memory (tracemalloc) and the number of objects the garbage collector tracks, after "
                   "a full collection, after call 10 and after the last call."],
        ),
    ]
