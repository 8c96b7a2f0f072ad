"""The digits MLP of ``mnist_like_mlp.py``, written as a PyTorch training loop with ``funcgrad.tensor``.

Same task and split as the functional example (scikit-learn's bundled 8x8
handwritten digits, no download), but in PyTorch style: a mutable
``ft.nn.Module``, ``loss.backward()``, ``.grad`` on parameters,
``optimizer.zero_grad()/step()``, ``model.train()/eval()``, ``ft.no_grad()``
for evaluation, and ``ft.save``/``ft.load`` of state dicts. Apart from the
import (``import funcgrad.tensor as ft`` instead of ``import torch``) this is
the loop a PyTorch user would write.

Run: python examples/pytorch_style_training.py [--seed 0] [--epochs 20] [--fast]
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: fewer epochs, for the test suite.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: BLAS threads only synchronize

import numpy as np  # noqa: E402

import funcgrad.tensor as ft  # noqa: E402  (PyTorch: import torch as ft)

nn = ft.nn


def load_digits_split(seed: int, test_fraction: float = 0.2):
    """Standardized features, integer labels; the same stratified split as mnist_like_mlp.py."""
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
    return (ft.tensor((Xtr - mean) / std), ft.tensor(ytr), ft.tensor((Xte - mean) / std), ft.tensor(yte))


class MLP(nn.Module):
    def __init__(self, hidden: int = 128, p_drop: float = 0.1):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 10)
        self.drop = nn.Dropout(p_drop)

    def forward(self, x):
        x = self.drop(self.fc1(x).relu())
        x = self.drop(self.fc2(x).relu())
        return self.out(x)


def accuracy(model: nn.Module, x, y) -> float:
    model.eval()
    with ft.no_grad():
        pred = model(x).argmax(dim=1)
    model.train()
    return (pred == y).float().mean().item()


def train(seed: int = 0, epochs: int = 20, batch_size: int = 64, lr: float = 2e-3, verbose: bool = True):
    ft.manual_seed(seed)
    Xtr, ytr, Xte, yte = load_digits_split(seed)
    model = MLP()
    opt = ft.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    n = Xtr.shape[0]
    steps = epochs * -(-n // batch_size)
    if verbose:
        print(f"digits: {n} train / {Xte.shape[0]} test; {sum(p.numel() for p in model.parameters())} parameters")
    t0 = time.perf_counter()
    step = 0
    for epoch in range(epochs):
        perm = ft.randperm(n)
        total = 0.0
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            for group in opt.param_groups:  # cosine learning-rate decay, set by hand as in PyTorch loops
                group["lr"] = lr * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * step / steps)))
            opt.zero_grad()
            loss = loss_fn(model(Xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * idx.shape[0]
            step += 1
        if verbose and (epoch % 5 == 4 or epoch == epochs - 1):
            print(f"epoch {epoch + 1:3d}  loss {total / n:.4f}  test accuracy {accuracy(model, Xte, yte):.4f}"
                  f"  ({time.perf_counter() - t0:.1f} s)")
    return model, opt, accuracy(model, Xte, yte), (Xte, yte)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    epochs = 6 if fast else args.epochs
    t0 = time.perf_counter()
    model, opt, acc, (Xte, yte) = train(args.seed, epochs)
    print(f"final test accuracy: {acc:.4f} after {epochs} epochs in {time.perf_counter() - t0:.1f} s")

    # Checkpoint round trip: state dicts of the model and the optimizer, in PyTorch's argument order.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "digits_mlp.ft")
        ft.save({"model": model.state_dict(), "optim": opt.state_dict()}, path)
        fresh = MLP()
        fresh.load_state_dict(ft.load(path)["model"])
        acc2 = accuracy(fresh, Xte, yte)
        print(f"reloaded from checkpoint: test accuracy {acc2:.4f} (identical: {acc2 == acc})")
    return acc


if __name__ == "__main__":
    main()
