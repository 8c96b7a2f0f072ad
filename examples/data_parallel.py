"""Data-parallel training with funcgrad.distributed: one MLP, its batches split over MPI ranks.

Every rank runs this same script on its share of each batch; gradients are summed
over ranks before the optimizer, so every rank applies the same update and the
parameters stay identical. The result equals single-process training on the
whole batch (checked at the end, up to rounding).

Run:
    pip install "funcgrad[mpi]"
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 4 python examples/data_parallel.py
    python examples/data_parallel.py            # also works: a world of one rank
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: fewer steps, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per rank: ranks already fill the cores

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.distributed as dist  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402

BATCH = 256


def make_data(n: int = 4096):
    """The same data set on every rank (same seed): y = sin(1.5 x0) cos(x1) + noise."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (n, 2))
    y = np.sin(1.5 * x[:, :1]) * np.cos(x[:, 1:]) + 0.05 * rng.standard_normal((n, 1))
    return x, y


def make_model(seed: int):
    return fg.nn.MLP(2, 1, hidden_sizes=(64, 64), activation=fnp.tanh, key=seed, dtype=np.float64)


def loss_sum(model, x, y):
    """Squared error summed over the examples given, divided by the *global* batch size.

    Summed over ranks this is the full batch's mean loss, whatever the shard sizes,
    so its gradients are reduced with op="sum".
    """
    return fnp.sum((model(x) - y) ** 2) / BATCH


def train(steps: int, sharded: bool = True, log: bool = True):
    x, y = make_data()
    # Ranks start from different random models on purpose: broadcast_parameters makes rank 0's
    # everyone's. (The single-process reference starts from rank 0's model too.)
    model = make_model(seed=dist.rank() if sharded else 0)
    if sharded:
        model = dist.broadcast_parameters(model)
        opt = fg.optim.chain(dist.sync_gradients("sum"), fg.optim.adam(3e-3))
    else:
        opt = fg.optim.adam(3e-3)
    state = opt.init(model)
    order = np.random.default_rng(1)  # the same batches on every rank
    grad_fn = fg.value_and_grad(loss_sum)
    for step in range(steps):
        idx = order.choice(len(x), BATCH, replace=False)
        xb, yb = dist.shard((x[idx], y[idx])) if sharded else (x[idx], y[idx])
        value, grads = grad_fn(model, xb, yb)
        updates, state = opt.update(grads, state, model)
        model = fg.optim.apply_updates(model, updates)
        if log and (step % 50 == 0 or step == steps - 1):
            total = float(dist.psum(value)) if sharded else float(value)  # every rank joins the psum
            if dist.rank() == 0:
                print(f"step {step:4d}  batch loss {total:.5f}")
    return model


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    steps = 30 if args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1" else args.steps
    dist.initialize()
    if dist.rank() == 0:
        print(f"{dist.size()} rank(s), global batch {BATCH}, {steps} steps")
    t0 = time.perf_counter()
    model = train(steps)
    elapsed = time.perf_counter() - t0
    dist.check_replicated(model, "model")  # raises, naming the leaf, if ranks drifted apart
    # The check: single-process training on whole batches (every rank computes it, no communication).
    ref = train(steps, sharded=False, log=False)
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(fg.tree_util.tree_leaves(model),
                                                           fg.tree_util.tree_leaves(ref)))
    if dist.rank() == 0:
        print(f"trained in {elapsed:.2f} s; parameters replicated on {dist.size()} rank(s): True")
        print(f"matches single-process full-batch training: {diff < 1e-9} (max difference {diff:.1e})")


if __name__ == "__main__":
    main()
