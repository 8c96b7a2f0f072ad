"""Data-parallel step time and allreduce share for a ~200k-parameter MLP, at 1 and 2 MPI ranks.

    python benchmarks/distributed.py                 # launches itself with mpiexec -n 1, then -n 2
    python benchmarks/distributed.py --ranks 1 2 4 --steps 200 --global-batch 256
    python benchmarks/distributed.py --blas-threads 2     # what oversubscribing the cores costs
    python benchmarks/distributed.py --repeat 5 --baseline /tmp/old   # before/after, interleaved
    python benchmarks/distributed.py --front tensor --bucket-mb 0.25  # DistributedDataParallel

Each configuration runs ``--steps`` training steps of a 784-256-10 MLP (203,530
parameters, float32; cross-entropy, SGD) with ``dist.allreduce_gradients``. Every
rank records every step; per step the columns are:

* ``grad``: forward + backward on this rank's share of the batch (the slowest rank);
* ``allreduce incl. wait``: ``allreduce_gradients`` (packing, the in-place MPI
  allreduce, scaling, unpacking), including any wait for a slower rank (the median of
  the rank with the largest median: the definition of the first RESULTS.md tables);
* ``exposed``: the allreduce time of the rank that arrived last (the smallest over
  ranks): the communication on the step's critical path, which waits for nobody;
* ``wait``: the largest minus the smallest, i.e. the time an early rank waits for the
  last one (load imbalance and scheduling, not communication);
* ``wire``: the same allreduce right after a barrier (no waiting);
* ``step``: grad + allreduce + optimizer update (the slowest rank).

With ``--front tensor`` the same MLP (ReLU, like the functional one) runs in the Tensor
layer wrapped in ``ft.nn.parallel.DistributedDataParallel``, whose allreduce runs inside
backward from the gradient hooks: ``grad`` is forward + backward less the time spent in
DDP's bucket work (pack, start, wait, copy back), which is the allreduce column.

Each column is the median over steps; with ``--repeat`` the median over runs of those
medians, and a "(best)" row: the run whose step was fastest (the least disturbed run on
a shared machine: other processes only ever add time). The share of communication is ``exposed / step`` (and, for comparison with
the first tables, ``allreduce incl. wait / step``). Strong scaling keeps the global
batch fixed (each rank gets 1/n of it); weak scaling keeps each rank's batch fixed.
Efficiency = ideal time / measured time. Every rank runs one BLAS thread
(OMP/OPENBLAS/MKL_NUM_THREADS=1). Timings are wall-clock: with fewer free cores than
ranks they measure the machine, not funcgrad. ``--baseline DIR`` runs another
checkout's funcgrad (e.g. ``git archive <commit> funcgrad | tar -x -C DIR``) through the
same harness, alternating with this one, so before and after share the run window.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (784, 256, 10)


def worker(args: argparse.Namespace) -> None:
    (tensor_worker if args.front == "tensor" else functional_worker)(args)


def functional_worker(args: argparse.Namespace) -> None:
    import numpy as np

    import funcgrad as fg
    import funcgrad.distributed as dist

    dist.initialize()
    n, r = dist.size(), dist.rank()
    model = dist.broadcast_parameters(fg.nn.MLP(SIZES[0], SIZES[-1], SIZES[1:-1], key=0, dtype=np.float32))
    nparams = sum(int(x.size) for x in fg.tree_util.tree_leaves(model))
    per_rank = args.global_batch // n if args.mode == "strong" else args.global_batch
    rng = np.random.default_rng(r)
    x = rng.standard_normal((per_rank, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], per_rank)

    def loss(m, x, y):
        return fg.nn.cross_entropy(m(x), y)

    grad_fn = fg.grad(loss)
    opt = fg.optim.sgd(1e-3)
    state = opt.init(model)
    rows = []
    for step in range(args.steps + args.warmup):
        t0 = time.perf_counter()
        g = grad_fn(model, x, y)
        t1 = time.perf_counter()
        g = dist.allreduce_gradients(g, bucket_mb=args.bucket_mb)
        t2 = time.perf_counter()
        upd, state = opt.update(g, state, model)
        model = fg.optim.apply_updates(model, upd)
        t3 = time.perf_counter()
        dist.barrier()
        t4 = time.perf_counter()
        dist.allreduce_gradients(g, bucket_mb=args.bucket_mb)
        t5 = time.perf_counter()
        if step >= args.warmup:
            rows.append((t1 - t0, t2 - t1, t3 - t0, t5 - t4))
    dist.check_replicated(model, "model")
    _report(args, rows, nparams, per_rank)


def tensor_worker(args: argparse.Namespace) -> None:
    """The same MLP in the Tensor layer, wrapped in DistributedDataParallel: its allreduce runs inside
    backward, from the gradient hooks; the time spent in them is the allreduce column."""
    import numpy as np

    import funcgrad.distributed as dist
    import funcgrad.tensor as ft

    ft.distributed.init_process_group("mpi")
    n, r = dist.size(), dist.rank()
    ft.manual_seed(0)
    net = ft.nn.Sequential(ft.nn.Linear(SIZES[0], SIZES[1]), ft.nn.ReLU(), ft.nn.Linear(SIZES[1], SIZES[2]))
    model = ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=args.bucket_mb,
                                                   **({"gradient_as_bucket_view": True} if args.bucket_view else {}))
    model.poll_progress = not args.no_poll
    nparams = sum(int(p.numel()) for p in model.parameters())
    per_rank = args.global_batch // n if args.mode == "strong" else args.global_batch
    rng = np.random.default_rng(r)
    x = ft.tensor(rng.standard_normal((per_rank, SIZES[0])).astype(np.float32))
    y = ft.tensor(rng.integers(0, SIZES[-1], per_rank))
    opt = ft.optim.SGD(model.parameters(), lr=1e-3)
    spent = [0.0]

    def timed(fn):
        def run(*a):
            t = time.perf_counter()
            try:
                return fn(*a)
            finally:
                spent[0] += time.perf_counter() - t
        return run

    for name in ("_start", "_finish"):  # the hooks' communication work (pack, start, wait, copy back)
        object.__setattr__(model, name, timed(getattr(model, name)))
    rows = []
    for step in range(args.steps + args.warmup):
        spent[0] = 0.0
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=not args.bucket_view)
        ft.nn.functional.cross_entropy(model(x), y).backward()
        t1 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        dist.barrier()
        t4 = time.perf_counter()
        dist.allreduce_gradients([p.grad._value for p in model.parameters()], bucket_mb=args.bucket_mb)
        t5 = time.perf_counter()
        if step >= args.warmup:
            rows.append((t1 - t0 - spent[0], spent[0], t3 - t0, t5 - t4))
    dist.check_replicated([p.detach().numpy() for p in model.parameters()], "model")
    _report(args, rows, nparams, per_rank)


def _report(args: argparse.Namespace, rows: list, nparams: int, per_rank: int) -> None:
    import numpy as np

    import funcgrad.distributed as dist

    n, r = dist.size(), dist.rank()
    # every rank's every step: (ranks, steps, 4)
    table = dist.world().transport(np).allgather(np.array(rows)) * 1e3
    if r == 0:
        grad, ar, step, wire = (table[..., k] for k in range(4))
        # the rank that reaches the allreduce last waits for nobody: its time is the communication on
        # the step's critical path (exposed); the others' extra time is waiting for it (imbalance)
        exposed = ar.min(axis=0)
        print("RESULT " + json.dumps({
            "ranks": n, "mode": args.mode, "params": nparams, "per_rank_batch": per_rank,
            "grad_ms": float(np.median(grad.max(axis=0))),
            "allreduce_ms": float(np.median(ar, axis=1).max()),
            "exposed_ms": float(np.median(exposed)),
            "wait_ms": float(np.median(ar.max(axis=0) - exposed)),
            "step_ms": float(np.median(step.max(axis=0))),
            "wire_ms": float(np.median(wire, axis=1).max()),
            "bytes": 4 * nparams, "fg_mpi_lib": _mpi_lib(),
        }), flush=True)


def _mpi_lib() -> str:
    from mpi4py import MPI

    return MPI.Get_library_version().splitlines()[0].strip()


def launch(n: int, args: argparse.Namespace, tree: Path = ROOT) -> dict:
    t = str(args.blas_threads)
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, MKL_NUM_THREADS=t,
               PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])))
    here = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(here) if here.exists() else (shutil.which("mpiexec") or "mpiexec")
    bind = ["-bind-to", "core"] if args.bind else []
    cmd = [mpiexec, *bind, "-n", str(n), sys.executable, "-m", "mpi4py", __file__, "--worker", "--mode", args.mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--global-batch", str(args.global_batch),
           "--front", args.front, "--bucket-mb", str(args.bucket_mb), *(["--no-poll"] if args.no_poll else []),
           *(["--bucket-view"] if args.bucket_view else [])]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line[len("RESULT "):]))


def _busy_fraction(window: float = 0.5) -> float:
    """The fraction of all CPUs' time spent busy over ``window`` seconds (Linux /proc/stat), else 0."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait
    try:
        t0, i0 = sample()
        time.sleep(window)
        t1, i1 = sample()
    except OSError:
        return 0.0
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


def _wait_idle(limit: float, busy: float = 0.1) -> float:
    """Wait (up to ``limit`` s) until the CPUs are at most ``busy`` busy; returns the last busy fraction."""
    end = time.monotonic() + limit
    b = _busy_fraction()
    while b > busy and time.monotonic() < end:
        time.sleep(1.0)
        b = _busy_fraction()
    return b


COLUMNS = ("grad_ms", "allreduce_ms", "exposed_ms", "wait_ms", "wire_ms", "step_ms")


def _median_runs(runs: list[dict]) -> dict:
    """The median over repeated runs of every timing."""
    import statistics

    out = dict(runs[0])
    for k in COLUMNS:
        out[k] = statistics.median(r[k] for r in runs)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--mode", choices=["strong", "weak", "both"], default="both")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--blas-threads", type=int, default=1, help="BLAS threads per rank (1 unless comparing)")
    p.add_argument("--repeat", type=int, default=1, help="runs per configuration (medians and spread reported)")
    p.add_argument("--baseline", type=Path, default=None,
                   help="another checkout's root: its funcgrad runs each configuration too, interleaved with ours")
    p.add_argument("--front", choices=["functional", "tensor"], default="functional",
                   help="functional: fg.grad + allreduce_gradients; tensor: ft.nn.parallel.DistributedDataParallel")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="bucket size (MiB) for both front ends")
    p.add_argument("--bucket-view", action="store_true",
                   help="tensor front: gradient_as_bucket_view=True and zero_grad(set_to_none=False)")
    p.add_argument("--no-poll", action="store_true", help="tensor front: DDP does not test started reductions")
    p.add_argument("--wait-idle", type=float, default=0.0, metavar="S",
                   help="before each run wait up to S seconds for the CPUs to be at most 10%% busy (shared machines)")
    p.add_argument("--bind", action="store_true", help="pin each rank to a core (mpiexec -bind-to core)")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    modes = ["strong", "weak"] if args.mode == "both" else [args.mode]
    trees = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print("| tree | scaling | ranks | batch per rank | grad (ms) | allreduce incl. wait (ms) | exposed (ms) "
          "| wait (ms) | wire (ms) | step (ms) | share, exposed | share, incl. wait | efficiency |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base: dict[str, dict] = {}
    all_busy: list[float] = []
    for mode in modes:
        args.mode = mode
        for n in args.ranks:
            runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
            for _ in range(args.repeat):  # interleaved: every tree once per round
                for name, tree in trees:
                    busy = _wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
                    runs[name].append(dict(launch(n, args, tree), busy=busy))
            all_busy.extend(r["busy"] for rs in runs.values() for r in rs)
            for name, _ in trees:
                steps = [r["step_ms"] for r in runs[name]]
                picks = [("", _median_runs(runs[name]))]
                if args.repeat > 1:  # also the least disturbed run: other processes only ever add time
                    picks.append((" (best)", min(runs[name], key=lambda r: r["step_ms"])))
                for label, res in picks:
                    if n == args.ranks[0]:
                        base[name + label] = res
                    ref = base[name + label]["step_ms"]
                    ideal = ref / (n / args.ranks[0]) if mode == "strong" else ref
                    print(f"| {name}{label} | {mode} | {n} | {res['per_rank_batch']} | {res['grad_ms']:.2f} "
                          f"| {res['allreduce_ms']:.3f} | {res['exposed_ms']:.3f} | {res['wait_ms']:.3f} "
                          f"| {res['wire_ms']:.3f} | {res['step_ms']:.2f} ({min(steps):.2f}-{max(steps):.2f}) "
                          f"| {res['exposed_ms'] / res['step_ms']:.1%} | {res['allreduce_ms'] / res['step_ms']:.1%} "
                          f"| {ideal / res['step_ms']:.0%} |", flush=True)
    if args.wait_idle > 0:
        print(f"\nbusy CPUs before the runs (other processes): at most {max(all_busy):.0%}, median "
              f"{sorted(all_busy)[len(all_busy) // 2]:.0%} over {len(all_busy)} runs")
    any_res = next(iter(base.values()), None)
    if any_res:
        print(f"\n{any_res['params']} parameters ({any_res['bytes'] / 1e6:.2f} MB of float32 gradients); "
              f"MPI: {any_res['fg_mpi_lib']}; {args.repeat} run(s) per row, "
              "medians over runs; (best): the run with the fastest step; step: (range over runs)")


if __name__ == "__main__":
    main()
