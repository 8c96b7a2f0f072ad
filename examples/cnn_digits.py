"""A small convolutional network on scikit-learn's bundled 8x8 digit images.

Two 3x3 convolutions (funcgrad.nn.Conv2d: im2col + matmul, with a backward
pass as cheap as the forward), max pooling and a dense head, trained with
adam. Reaches >= 95% test accuracy (about 98%) in well under a minute on 2
cores, reproducibly for a given --seed. Needs scikit-learn (``pip install
funcgrad[examples]``).

Run: python examples/cnn_digits.py [--seed 0] [--epochs 15] [--fast]
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: fewer epochs, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# Small matrices: a multi-threaded BLAS spends more time synchronizing threads than
# multiplying. Override by setting these yourself.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.nn as nn  # noqa: E402
import funcgrad.optim as optim  # noqa: E402


def load_digit_images(seed: int, test_fraction: float = 0.2):
    """Images (N, 1, 8, 8) scaled to [0, 1] and standardized; a stratified split fixed by ``seed``."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn: pip install 'funcgrad[examples]'")
    digits = load_digits()
    X = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), bool)
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: int(round(test_fraction * len(idx)))]] = True
    mean, std = X[~test].mean(), X[~test].std()
    X = (X - mean) / std
    return X[~test], y[~test], X[test], y[test]


def make_model(seed: int) -> nn.Sequential:
    rng = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1, key=rng),    # (N, 16, 8, 8)
        nn.relu,
        nn.Conv2d(16, 32, kernel_size=3, padding=1, key=rng),   # (N, 32, 8, 8)
        nn.relu,
        nn.MaxPool2d(2),                                         # (N, 32, 4, 4)
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 64, key=rng),
        nn.relu,
        nn.Dropout(0.2),
        nn.Linear(64, 10, key=rng),
    )


def loss_fn(model, x, y, key):
    return nn.cross_entropy(model(x, key=key), y)


def accuracy(model, x, y, batch: int = 512) -> float:
    correct = 0
    for i in range(0, len(x), batch):
        correct += int(np.sum(np.argmax(model(x[i:i + batch]), axis=-1) == y[i:i + batch]))
    return correct / len(x)


def train(seed: int = 0, epochs: int = 15, batch_size: int = 64, lr: float = 2e-3, verbose: bool = True):
    Xtr, ytr, Xte, yte = load_digit_images(seed)
    model = make_model(seed)
    steps = epochs * (-(-len(Xtr) // batch_size))
    opt = optim.adam(optim.cosine_decay_schedule(lr, steps, alpha=0.05))
    state = opt.init(model)
    value_and_grad = fg.value_and_grad(loss_fn)
    rng = np.random.default_rng(seed + 1)        # data order and dropout masks
    if verbose:
        print(f"digit images: {len(Xtr)} train / {len(Xte)} test; {nn.count_params(model)} parameters")
    t0 = time.perf_counter()
    for epoch in range(epochs):
        perm = rng.permutation(len(Xtr))
        total = 0.0
        for i in range(0, len(Xtr), batch_size):
            b = perm[i:i + batch_size]
            loss, grads = value_and_grad(model, Xtr[b], ytr[b], rng)   # training: dropout on
            updates, state = opt.update(grads, state, model)
            model = optim.apply_updates(model, updates)
            total += float(loss) * len(b)
        if verbose:
            print(f"epoch {epoch + 1:3d}  loss {total / len(Xtr):.4f}  test accuracy "
                  f"{accuracy(model, Xte, yte):.4f}  ({time.perf_counter() - t0:.1f} s)")
    return model, accuracy(model, Xte, yte)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    epochs = min(args.epochs, 4) if fast else args.epochs
    t0 = time.perf_counter()
    _, acc = train(args.seed, epochs)
    print(f"final test accuracy: {acc:.4f} after {epochs} epochs in {time.perf_counter() - t0:.1f} s")
    return acc


if __name__ == "__main__":
    main()
