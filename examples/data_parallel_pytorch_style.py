"""PyTorch-style data parallelism: ``ft.nn.parallel.DistributedDataParallel`` over MPI ranks.

The loop a PyTorch user writes with ``torch.distributed`` and DDP, with
``import funcgrad.tensor as ft``: ``init_process_group``, wrap the model, train
on this rank's share of each batch; DDP averages the gradients over ranks during
``backward`` (in buckets, from per-parameter hooks). Every other step uses two
micro-batches with ``no_sync()`` (gradient accumulation, one reduction). The
result equals single-process training on whole batches (checked at the end).

Run:
    pip install "funcgrad[mpi]"
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 4 python examples/data_parallel_pytorch_style.py
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: fewer steps, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per rank

import numpy as np  # noqa: E402

import funcgrad.tensor as ft  # noqa: E402  (PyTorch: import torch as ft)
import funcgrad.tensor.distributed as dist  # noqa: E402  (PyTorch: import torch.distributed as dist)

nn = ft.nn
BATCH = 256


def make_data(n: int = 4096):
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (n, 2))
    y = np.sin(1.5 * x[:, :1]) * np.cos(x[:, 1:]) + 0.05 * rng.standard_normal((n, 1))
    return ft.tensor(x), ft.tensor(y)


def make_model(seed: int) -> nn.Module:
    ft.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)).double()


def my_share(n: int) -> slice:
    """This rank's contiguous part of a batch of n (shares differ by at most one)."""
    r, size = dist.get_rank(), dist.get_world_size()
    base, extra = divmod(n, size)
    lo = r * base + min(r, extra)
    return slice(lo, lo + base + (r < extra))


def train(steps: int, parallel: bool = True, log: bool = True) -> nn.Module:
    x, y = make_data()
    if parallel:
        # different random starts per rank on purpose: DDP broadcasts rank 0's parameters
        model = nn.parallel.DistributedDataParallel(make_model(dist.get_rank()), bucket_cap_mb=0.01)
        size = dist.get_world_size()
    else:
        model, size = make_model(0), 1
    opt = ft.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = np.random.default_rng(1)  # the same batches on every rank

    def loss_of(xb, yb):
        # summed error over the global batch size, times world size: DDP's average over ranks then
        # gives the whole batch's mean loss gradient, whatever the share sizes
        return ((model(xb) - yb) ** 2).sum() * (size / BATCH)

    for step in range(steps):
        idx = ft.tensor(order.choice(len(x), BATCH, replace=False))
        part = my_share(BATCH) if parallel else slice(None)
        xb, yb = x[idx][part], y[idx][part]
        opt.zero_grad()
        if step % 2:  # accumulate two micro-batches, reduce once
            half = xb.shape[0] // 2
            with model.no_sync() if parallel else _nothing():
                loss_of(xb[:half], yb[:half]).backward()
            loss = loss_of(xb[half:], yb[half:])
            loss.backward()
        else:
            loss = loss_of(xb, yb)
            loss.backward()
        opt.step()
        if log and (step % 50 == 0 or step == steps - 1) and dist.get_rank() == 0:
            print(f"step {step:4d}  rank 0's part of the batch loss {loss.item() / size:.5f}")
    return model.module if parallel else model


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    steps = 30 if args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1" else args.steps
    dist.init_process_group("mpi")
    if dist.get_rank() == 0:
        print(f"{dist.get_world_size()} rank(s), global batch {BATCH}, {steps} steps")
    t0 = time.perf_counter()
    model = train(steps)
    elapsed = time.perf_counter() - t0
    # every rank holds the same parameters: compare the sums (a cheap check) over ranks
    total = ft.tensor([float(sum(p.detach().sum().item() for p in model.parameters()))])
    low, high = total.clone(), total.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    ref = train(steps, parallel=False, log=False)  # whole batches, one process, no communication
    diff = max(float((p - q).abs().max().item()) for p, q in zip(model.parameters(), ref.parameters()))
    if dist.get_rank() == 0:
        print(f"trained in {elapsed:.2f} s; parameters replicated on {dist.get_world_size()} rank(s): "
              f"{low.item() == high.item()}")
        print(f"matches single-process full-batch training: {diff < 1e-9} (max difference {diff:.1e})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
