"""Train an MLP classifier on scikit-learn's bundled handwritten digits (8x8 images).

No download: the 1,797 digits ship with scikit-learn (install the examples
extra: ``pip install funcgrad[examples]``). The model is a funcgrad.nn.MLP,
trained with adam on minibatches; the gradient of the loss with respect to
the model is a model-shaped pytree. Reaches >= 95% test accuracy in a few
seconds on 2 cores, reproducibly for a given --seed. The trained model is
saved with fg.save and reloaded with fg.load to show a checkpoint round trip.

Run: python examples/mnist_like_mlp.py [--seed 0] [--epochs 30] [--fast]
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: fewer epochs, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

# Small matrices: a multi-threaded BLAS spends more time synchronizing threads than
# multiplying (10x slower on a busy 2-core machine). Override by setting these yourself.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.nn as nn  # noqa: E402
import funcgrad.optim as optim  # noqa: E402
from funcgrad.serialization import load, save  # noqa: E402


def load_digits_split(seed: int, test_fraction: float = 0.2):
    """Standardized features, integer labels; a stratified train/test split fixed by ``seed``."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn: pip install 'funcgrad[examples]'")
    digits = load_digits()
    X = digits.data.astype(np.float32) / 16.0
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    test_idx = []
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        test_idx.extend(idx[: int(round(test_fraction * len(idx)))])
    test = np.zeros(len(y), bool)
    test[test_idx] = True
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    mean, std = Xtr.mean(0), Xtr.std(0) + 1e-2
    return (Xtr - mean) / std, ytr, (Xte - mean) / std, yte


def loss_fn(model: nn.MLP, x: np.ndarray, y: np.ndarray):
    return nn.cross_entropy(model(x), y, label_smoothing=0.05)


def accuracy(model: nn.MLP, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(model(x), axis=-1) == y))


def train(seed: int = 0, epochs: int = 30, batch_size: int = 64, lr: float = 2e-3, verbose: bool = True):
    Xtr, ytr, Xte, yte = load_digits_split(seed)
    model = nn.MLP(64, 10, hidden_sizes=(128, 128), activation=nn.relu, key=seed)
    steps_per_epoch = -(-len(Xtr) // batch_size)
    total_steps = epochs * steps_per_epoch
    schedule = optim.warmup_cosine_decay_schedule(0.0, lr, warmup_steps=min(steps_per_epoch, total_steps // 5),
                                                  decay_steps=total_steps, end_value=lr * 0.05)
    opt = optim.adamw(schedule, weight_decay=1e-4)
    state = opt.init(model)
    value_and_grad = fg.value_and_grad(loss_fn)
    rng = np.random.default_rng(seed)
    if verbose:
        print(f"digits: {len(Xtr)} train / {len(Xte)} test; model with {nn.count_params(model)} parameters")
    t0 = time.perf_counter()
    for epoch in range(epochs):
        perm = rng.permutation(len(Xtr))
        total = 0.0
        for i in range(0, len(Xtr), batch_size):
            b = perm[i:i + batch_size]
            loss, grads = value_and_grad(model, Xtr[b], ytr[b])
            updates, state = opt.update(grads, state, model)
            model = optim.apply_updates(model, updates)
            total += float(loss) * len(b)
        if verbose and (epoch % 5 == 4 or epoch == epochs - 1):
            print(f"epoch {epoch + 1:3d}  loss {total / len(Xtr):.4f}  test accuracy {accuracy(model, Xte, yte):.4f}"
                  f"  ({time.perf_counter() - t0:.1f} s)")
    return model, state, accuracy(model, Xte, yte), (Xte, yte)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    epochs = min(args.epochs, 8) if fast else args.epochs
    t0 = time.perf_counter()
    model, state, acc, (Xte, yte) = train(args.seed, epochs)
    print(f"final test accuracy: {acc:.4f} after {epochs} epochs in {time.perf_counter() - t0:.1f} s")

    # Checkpoint round trip: model and optimizer state in one file.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "digits_mlp.npz")
        save(path, {"model": model, "opt_state": state})
        fresh = nn.MLP(64, 10, hidden_sizes=(128, 128), key=123)  # same structure, other weights
        restored = load(path, like={"model": fresh, "opt_state": state})
        acc2 = accuracy(restored["model"], Xte, yte)
        print(f"reloaded from checkpoint: test accuracy {acc2:.4f} (identical: {acc2 == acc})")
    return acc


if __name__ == "__main__":
    main()
