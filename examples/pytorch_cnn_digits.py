"""A PyTorch CNN on the 8x8 digits, run by ``funcgrad.tensor``: the same file runs under PyTorch.

scikit-learn's bundled handwritten digits (no download), a small convolutional
network (Conv2d, BatchNorm2d, MaxPool2d, Dropout), a DataLoader with a seeded
shuffle, AdamW with a OneCycleLR schedule, ``model.train()/eval()``, and a
``state_dict`` saved and loaded again. Only the import line says funcgrad:
replace it with ``import torch`` and the script runs under PyTorch unchanged.

Run: python examples/pytorch_cnn_digits.py [--seed 0] [--epochs 12] [--fast]
(--fast, or FUNCGRAD_EXAMPLE_FAST=1: 3 epochs, for the test suite.)
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

import funcgrad.tensor as torch  # noqa: E402  (PyTorch: import torch)

nn = torch.nn
DataLoader = torch.utils.data.DataLoader
TensorDataset = torch.utils.data.TensorDataset


def digits_datasets(seed: int):
    """Train/test TensorDatasets of (1, 8, 8) images scaled to [0, 1] and int64 labels (a 80/20 split)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn: pip install scikit-learn")
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(0.8 * len(labels))
    tr, te = order[:cut], order[cut:]
    return (TensorDataset(torch.tensor(images[tr]), torch.tensor(labels[tr])),
            TensorDataset(torch.tensor(images[te]), torch.tensor(labels[te])))


class DigitsCNN(nn.Module):
    def __init__(self, dropout: float = 0.25):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),   # 8x8 -> 4x4
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # -> 2x2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for xb, yb in loader:
            correct += (model(xb).argmax(dim=1) == yb).sum().item()
            total += yb.shape[0]
    return correct / total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--fast", action="store_true")
    args = ap.parse_args()
    epochs = 3 if (args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST")) else args.epochs

    torch.manual_seed(args.seed)
    train_ds, test_ds = digits_datasets(args.seed)
    train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, drop_last=True,
                              generator=torch.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test_ds, batch_size=256)

    model = DigitsCNN()
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs,
                                                    steps_per_epoch=len(train_loader))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{len(train_ds)} training images, {len(test_ds)} test images, {n_params} parameters")

    t0 = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * yb.shape[0]
        print(f"epoch {epoch + 1:2d}  loss {total / (len(train_loader) * 32):.4f}  "
              f"test accuracy {evaluate(model, test_loader):.4f}  lr {scheduler.get_last_lr()[0]:.5f}")
    print(f"trained in {time.perf_counter() - t0:.1f} s")
    print(f"final test accuracy: {evaluate(model, test_loader):.4f}")

    # checkpoint: save the state_dict, load it into a fresh model, predict the same
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits_cnn.pt")
        torch.save(model.state_dict(), path)
        restored = DigitsCNN()
        restored.load_state_dict(torch.load(path))
    restored.eval()
    model.eval()
    xb, _ = next(iter(test_loader))
    with torch.no_grad():
        same = torch.equal(model(xb).argmax(dim=1), restored(xb).argmax(dim=1)) and \
            torch.allclose(model(xb), restored(xb))
    print(f"state_dict keys: {list(model.state_dict())[:7]} ...")
    print(f"reloaded model predicts identically: identical: {same}")


if __name__ == "__main__":
    main()
