"""``ft.optim``'s ``foreach=True`` (one update over the concatenated parameters) against the per-parameter
loop: the optimizer step alone and a whole training step, for a wide MLP (few large parameters) and a
deep narrow one (many small parameters).

Run: ``python benchmarks/optim_foreach.py`` (prints the minimum of repeated timings, in ms).
"""

from __future__ import annotations

import sys
import time

import numpy as np

sys.path.insert(0, ".")
import funcgrad.tensor as ft  # noqa: E402


def mlp(sizes: list[int]) -> ft.nn.Module:
    layers: list = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [ft.nn.Linear(a, b), ft.nn.Tanh()]
    return ft.nn.Sequential(*layers[:-1])


def best(fn, repeat: int = 7, number: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return min(times) * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    for label, sizes, batch in (("wide 784-256-256-10", [784, 256, 256, 10], 128),
                                ("deep 32x(64) layers", [64] * 33 + [10], 32)):
        x = ft.tensor(rng.standard_normal((batch, sizes[0])), dtype=ft.float32)
        y = ft.tensor(rng.integers(0, 10, batch))
        for name in ("SGD", "Adam"):
            row = []
            for foreach in (False, True):
                ft.manual_seed(0)
                model = mlp(sizes)
                kw = {"momentum": 0.9} if name == "SGD" else {}
                opt = getattr(ft.optim, name)(model.parameters(), lr=1e-3, foreach=foreach, **kw)
                loss = ft.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()

                def train() -> None:
                    opt.zero_grad()
                    ft.nn.functional.cross_entropy(model(x), y).backward()
                    opt.step()

                row += [best(opt.step), best(train)]
            print(f"{label:22s} {name:5s} step: loop {row[0]:.3f} ms, foreach {row[2]:.3f} ms "
                  f"({row[2] / row[0]:.2f}x); training step: loop {row[1]:.3f} ms, foreach {row[3]:.3f} ms "
                  f"({row[3] / row[1]:.2f}x)")


if __name__ == "__main__":
    main()
