"""Per-example gradients with vmap, and what they are for.

``fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))`` gives one gradient per
example in a single batched pass. This example computes them for a small MLP
on synthetic data, checks them against a Python loop, times both, and then
uses them for differentially-private-style training: clip each example's
gradient to a fixed norm before averaging (DP-SGD without the noise).

Run: python examples/per_example_grads.py [--batch 256] [--fast]
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: a smaller problem, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.nn as nn  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
import funcgrad.optim as optim  # noqa: E402


def example_loss(model: nn.MLP, x: np.ndarray, y: np.ndarray):
    """Cross-entropy of ONE example (x: (features,), y: a scalar label)."""
    logits = model(x[None, :])
    return nn.cross_entropy(logits, y[None])


def clip_per_example(grads, max_norm: float):
    """Scale each example's gradient (leading axis) to norm at most ``max_norm``."""
    leaves = fg.tree_util.tree_leaves(grads)
    sq = sum(fnp.sum(fnp.reshape(g * g, (g.shape[0], -1)), axis=1) for g in leaves)
    scale = fnp.minimum(1.0, max_norm / (fnp.sqrt(sq) + 1e-12))
    return fg.tree_util.tree_map(lambda g: g * fnp.reshape(scale, (-1,) + (1,) * (g.ndim - 1)), grads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args()
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    batch, steps = (64, 60) if fast else (args.batch, args.steps)

    rng = np.random.default_rng(0)
    n_features, n_classes = 20, 3
    centers = rng.standard_normal((n_classes, n_features)) * 1.5
    y_all = rng.integers(0, n_classes, 2000)
    x_all = (centers[y_all] + rng.standard_normal((2000, n_features))).astype(np.float32)
    model = nn.MLP(n_features, n_classes, hidden_sizes=(32,), key=0)

    x, y = x_all[:batch], y_all[:batch]
    per_example = fg.vmap(fg.grad(example_loss), in_axes=(None, 0, 0))
    vmapped = per_example(model, x, y)
    looped = [fg.grad(example_loss)(model, x[i], y[i]) for i in range(batch)]
    for v_leaf, *l_leaves in zip(fg.tree_util.tree_leaves(vmapped), *map(fg.tree_util.tree_leaves, looped)):
        assert np.allclose(v_leaf, np.stack(l_leaves), atol=1e-5), "vmap disagrees with the loop"
    print(f"per-example gradients for {batch} examples: vmap equals the Python loop")

    def timed(fn, repeats=5):
        fn()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        return (time.perf_counter() - start) / repeats

    t_vmap = timed(lambda: per_example(model, x, y))
    t_loop = timed(lambda: [fg.grad(example_loss)(model, x[i], y[i]) for i in range(batch)], repeats=2)
    print(f"vmap {t_vmap * 1e3:.1f} ms, loop {t_loop * 1e3:.1f} ms: {t_loop / t_vmap:.1f}x faster")

    # Clipped per-example gradients, averaged: the core of DP-SGD.
    opt = optim.adam(1e-2)
    state = opt.init(model)
    for step in range(steps):
        idx = rng.integers(0, 1500, batch)
        grads = clip_per_example(per_example(model, x_all[idx], y_all[idx]), max_norm=1.0)
        mean_grad = fg.tree_util.tree_map(lambda g: fnp.mean(g, axis=0), grads)
        updates, state = opt.update(mean_grad, state, model)
        model = optim.apply_updates(model, updates)
        if step % max(1, steps // 4) == 0:
            print(f"step {step:4d}  loss {float(nn.cross_entropy(model(x_all[1500:]), y_all[1500:])):.4f}")
    acc = float(np.mean(np.argmax(model(x_all[1500:]), axis=1) == y_all[1500:]))
    print(f"final test accuracy: {acc:.3f}")


if __name__ == "__main__":
    main()
