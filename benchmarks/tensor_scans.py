"""The maths breadth's scans and order statistics (issue 29, part A) against PyTorch, in the same run.

Run: ``python benchmarks/tensor_scans.py``. A float64 (64, 4096) tensor; for each operation the minimum over
5 repeats of 5 calls of forward + ``sum().backward()``, for ``funcgrad.tensor`` and (when installed) torch,
and their ratio. ``cummax`` and ``logcumsumexp`` scan in ``log2(n)`` whole-array steps (device-safe, no
``ufunc.accumulate``), so they do ``n log n`` work where torch's loops do ``n``.
"""
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad.tensor as ft  # noqa: E402

OPS = {
    "cummax(1)": lambda T, x: x.cummax(1).values,
    "logcumsumexp(1)": lambda T, x: x.logcumsumexp(1),
    "quantile(q[3], dim=1)": lambda T, x: x.quantile(T.tensor([0.1, 0.5, 0.9], dtype=T.float64), dim=1),
    "nanmedian(1)": lambda T, x: x.nanmedian(1).values,
    "kthvalue(10, 1)": lambda T, x: x.kthvalue(10, 1).values,
    "erfinv": lambda T, x: (x * 0.5).erfinv(),
    "cov": lambda T, x: x.cov(),
}


def timed(T, op, data):
    x = T.tensor(data, requires_grad=True)

    def step():
        op(T, x).sum().backward()
        x.grad = None

    step()
    return min(timeit.repeat(step, number=5, repeat=5)) / 5


def main() -> None:
    data = np.random.default_rng(0).uniform(-1, 1, (64, 4096))
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    for name, op in OPS.items():
        ours = timed(ft, op, data)
        line = f"{name}: ft {ours * 1e3:.2f} ms"
        if torch is not None:
            theirs = timed(torch, op, data)
            line += f", torch {theirs * 1e3:.2f} ms, ft / torch {ours / theirs:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
