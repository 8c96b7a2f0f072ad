"""Data-parallel step time and allreduce share for a ~200k-parameter MLP, at 1 and 2 MPI ranks.

    python benchmarks/distributed.py                 # launches itself with mpiexec -n 1, then -n 2
    python benchmarks/distributed.py --ranks 1 2 4 --steps 200 --global-batch 256
    python benchmarks/distributed.py --blas-threads 2     # what oversubscribing the cores costs

Each configuration runs ``--steps`` training steps of a 784-256-10 MLP (203,530
parameters, float32; cross-entropy, SGD) with ``dist.allreduce_gradients`` and
reports, as medians over the steps after warm-up, per rank:

* ``grad``: forward + backward on this rank's share of the batch;
* ``allreduce``: ``allreduce_gradients`` (packing, MPI_Allreduce, unpacking), including
  any wait for a slower rank;
* ``wire``: the same allreduce right after a barrier (the transport alone);
* ``step``: grad + allreduce + optimizer update.

Strong scaling keeps the global batch fixed (each rank gets 1/n of it); weak
scaling keeps each rank's batch fixed. Efficiency = ideal time / measured time.
Every rank runs one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1). Timings are
wall-clock: with fewer free cores than ranks they measure the machine, not funcgrad.
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
    import numpy as np

    import funcgrad as fg
    import funcgrad.distributed as dist
    import funcgrad.numpy as fnp

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
        g = dist.allreduce_gradients(g)
        t2 = time.perf_counter()
        upd, state = opt.update(g, state, model)
        model = fg.optim.apply_updates(model, upd)
        t3 = time.perf_counter()
        dist.barrier()
        t4 = time.perf_counter()
        dist.allreduce_gradients(g)
        t5 = time.perf_counter()
        if step >= args.warmup:
            rows.append((t1 - t0, t2 - t1, t3 - t0, t5 - t4))
    med = np.median(np.array(rows), axis=0)
    dist.check_replicated(model, "model")
    table = dist.world().transport(np).allgather(med)  # (ranks, 4)
    if r == 0:
        worst = table.max(axis=0)
        print("RESULT " + json.dumps({
            "ranks": n, "mode": args.mode, "params": nparams, "per_rank_batch": per_rank,
            "grad_ms": 1e3 * worst[0], "allreduce_ms": 1e3 * worst[1], "step_ms": 1e3 * worst[2],
            "wire_ms": 1e3 * worst[3], "bytes": 4 * nparams, "fg_mpi_lib": _mpi_lib(),
        }), flush=True)


def _mpi_lib() -> str:
    from mpi4py import MPI

    return MPI.Get_library_version().splitlines()[0].strip()


def launch(n: int, args: argparse.Namespace) -> dict:
    t = str(args.blas_threads)
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t, MKL_NUM_THREADS=t,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    here = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(here) if here.exists() else (shutil.which("mpiexec") or "mpiexec")
    cmd = [mpiexec, "-n", str(n), sys.executable, "-m", "mpi4py", __file__, "--worker", "--mode", args.mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--global-batch", str(args.global_batch)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--mode", choices=["strong", "weak", "both"], default="both")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--global-batch", type=int, default=256)
    p.add_argument("--blas-threads", type=int, default=1, help="BLAS threads per rank (1 unless comparing)")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    modes = ["strong", "weak"] if args.mode == "both" else [args.mode]
    print(f"| scaling | ranks | batch per rank | grad (ms) | allreduce (ms) | wire (ms) | step (ms) "
          f"| allreduce share | efficiency |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in modes:
        args.mode = mode
        base = None
        for n in args.ranks:
            res = launch(n, args)
            if base is None:
                base = res
            ideal = base["step_ms"] / (n / args.ranks[0]) if mode == "strong" else base["step_ms"]
            print(f"| {mode} | {n} | {res['per_rank_batch']} | {res['grad_ms']:.2f} | {res['allreduce_ms']:.3f} "
                  f"| {res['wire_ms']:.3f} | {res['step_ms']:.2f} | {res['allreduce_ms'] / res['step_ms']:.1%} "
                  f"| {ideal / res['step_ms']:.0%} |", flush=True)
    print(f"\n{base['params'] if base else '?'} parameters ({base['bytes'] / 1e6 if base else 0:.2f} MB of float32 "
          f"gradients); MPI: {base['fg_mpi_lib'] if base else '?'}")


if __name__ == "__main__":
    main()
