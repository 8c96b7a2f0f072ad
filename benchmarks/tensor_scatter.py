"""The scatter family of the Tensor layer (issue 29, part B) against PyTorch, when it is installed.

Run: ``python benchmarks/tensor_scatter.py``. float64, 10**5 source elements scattered into 100
positions (so each position repeats about 1000 times); the minimum over 5 repeats of 5 calls of the
forward and of forward + ``sum().backward()``, in ms, and the ratio to torch measured in the same run.
"""
import importlib.util
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad.tensor as ft  # noqa: E402

N, BINS = 100_000, 100
CASES = {
    "scatter_reduce sum": lambda x, i, s: x.scatter_reduce(0, i, s, "sum"),
    "scatter_reduce mean": lambda x, i, s: x.scatter_reduce(0, i, s, "mean"),
    "scatter_reduce amax": lambda x, i, s: x.scatter_reduce(0, i, s, "amax"),
    "scatter_reduce amin (include_self=False)": lambda x, i, s: x.scatter_reduce(0, i, s, "amin", include_self=False),
    "scatter_reduce prod": lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
    "index_add": lambda x, i, s: x.index_add(0, i, s),
}


def timings(T, fn, x0, idx, src):
    x = T.tensor(x0, requires_grad=True)
    s = T.tensor(src, requires_grad=True)
    i = T.tensor(idx)

    def both():
        fn(x, i, s).sum().backward()
        x.grad = s.grad = None

    both()
    fwd = min(timeit.repeat(lambda: fn(x.detach(), i, s.detach()), number=5, repeat=5)) / 5
    fb = min(timeit.repeat(both, number=5, repeat=5)) / 5
    return fwd * 1e3, fb * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    x0, src, idx = rng.standard_normal(BINS), rng.standard_normal(N), rng.integers(0, BINS, N)
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
    print(f"{'op':42s} {'ft fwd':>8s} {'ft f+b':>8s} {'torch fwd':>10s} {'torch f+b':>10s} {'f+b x torch':>11s}")
    for name, fn in CASES.items():
        f, fb = timings(ft, fn, x0, idx, src)
        line = f"{name:42s} {f:8.2f} {fb:8.2f}"
        if torch is not None:
            tf, tfb = timings(torch, fn, x0, idx, src)
            line += f" {tf:10.2f} {tfb:10.2f} {fb / tfb:10.2f}x"
        print(line)


if __name__ == "__main__":
    main()
