"""Issue 26: ``ft.optim.SGD(lr=0, momentum=0.9).step()`` alone against the functional update, on the
parameters of the training benchmark's models (benchmarks/workloads/training.py, quick sizes).

Run: ``python -m benchmarks.sgd_step`` from the repository root. Printed per model: the number of
parameters, then the best of 7 repeats of 200 calls (µs per call) of SGD's own step, of the base class's
step on the same optimizer (the functional transformation applied to the list of parameters, which SGD took
before it was written on the arrays; the flattened ``foreach`` path for groups of many small parameters)
and of ``fg.optim.sgd(0.0, momentum=0.9)``'s ``update`` + ``apply_updates`` on a dict of the same arrays
(the parameters stay put: lr is 0). SGD's step makes one new array per parameter and step (``lr * buf``;
the buffer and the parameter are updated in place); the other two make several (the new trace, the
scaled update) and walk the pytree of the state.
"""

from __future__ import annotations

import timeit
from typing import Any

import numpy as np

import funcgrad as fg
import funcgrad.tensor as ft


def _models() -> dict[str, list[Any]]:
    ft.manual_seed(0)
    cnn = ft.nn.Sequential(ft.nn.Conv2d(3, 16, 3, padding=1, bias=False), ft.nn.BatchNorm2d(16), ft.nn.ReLU(),
                           ft.nn.MaxPool2d(2), ft.nn.Flatten(), ft.nn.Linear(16 * 8 * 8, 10))
    lstm = [*ft.nn.LSTM(32, 64, batch_first=True).parameters(), *ft.nn.Linear(64, 10).parameters()]
    layer = ft.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    return {"cnn": list(cnn.parameters()), "lstm": lstm, "transformer": list(layer.parameters())}


def main() -> None:
    rng = np.random.default_rng(0)
    for name, params in _models().items():
        for p in params:
            p.grad = ft.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        row = {}
        for label, step in (("SGD.step", ft.optim.SGD.step), ("transform path", ft.optim.Optimizer.step)):
            opt = ft.optim.SGD(params, lr=0.0, momentum=0.9)
            step(opt)

            def call(opt: Any = opt, step: Any = step) -> None:
                step(opt)

            row[label] = min(timeit.repeat(call, number=200, repeat=7)) / 200 * 1e6
        tree = {i: p.detach().numpy().copy() for i, p in enumerate(params)}
        grads = {i: p._grad._value for i, p in enumerate(params)}
        fopt = fg.optim.sgd(0.0, momentum=0.9)
        box = [tree, fopt.init(tree)]

        def functional() -> None:
            updates, box[1] = fopt.update(grads, box[1], box[0])
            box[0] = fg.optim.apply_updates(box[0], updates)

        functional()
        row["fg.optim"] = min(timeit.repeat(functional, number=200, repeat=7)) / 200 * 1e6
        cells = "  ".join(f"{k} {t:6.1f} µs" for k, t in row.items())
        print(f"{name:12s} {len(params):2d} params  {cells}")


if __name__ == "__main__":
    main()
