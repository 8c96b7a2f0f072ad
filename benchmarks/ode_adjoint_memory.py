"""Peak memory of a gradient through ``funcgrad.scipy.integrate.odeint``: adjoint vs unrolled.

``python benchmarks/ode_adjoint_memory.py`` prints a Markdown table (the numbers in
benchmarks/RESULTS.md, section "issue 16"). The ODE is a chain of ``N`` coupled
oscillators (state of ``2 N`` float64 values); the loss is the sum of squares of the
solution at 5 output times; the gradient is taken with respect to the initial state
and the stiffness. The number of RK4 steps grows (``substeps`` per output interval);
the peak of :mod:`tracemalloc` during one gradient call (over what was allocated before
it) is reported for the adjoint method (``odeint``'s default) and for differentiating
through the unrolled steps (``adjoint=False``). The two gradients are compared first.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from funcgrad.scipy.integrate import odeint  # noqa: E402

N = 2000
T = np.linspace(0.0, 1.0, 5)


def rhs(y, t, k):
    x, v = y[:N], y[N:]
    lap = fnp.concatenate([x[1:2] - x[:1], x[2:] - 2 * x[1:-1] + x[:-2], x[-2:-1] - x[-1:]])
    return fnp.concatenate([v, k * lap - 0.1 * v])


def loss(adjoint, substeps):
    return lambda y0, k: fnp.sum(odeint(rhs, y0, T, k, substeps=substeps, adjoint=adjoint) ** 2)


def peak(fn, *args):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = fn(*args)
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, top - base


def main() -> None:
    y0 = np.concatenate([np.sin(np.linspace(0, 3, N)), np.zeros(N)])
    k = np.array(0.5)
    print(f"state: {2 * N} float64 values ({2 * N * 8 / 1e3:.0f} kB); 5 output times; peak tracemalloc in MB\n")
    print("| RK4 steps | adjoint (MB) | unrolled (MB) | max rel. difference of the gradients |")
    print("|---:|---:|---:|---:|")
    for substeps in (5, 20, 80, 320):
        ga, ma = peak(fg.grad(loss(True, substeps), argnums=(0, 1)), y0, k)
        gu, mu = peak(fg.grad(loss(False, substeps), argnums=(0, 1)), y0, k)
        diff = max(float(np.max(np.abs(a - u)) / (np.max(np.abs(u)) + 1e-300)) for a, u in zip(ga, gu))
        print(f"| {4 * substeps} | {ma / 1e6:.2f} | {mu / 1e6:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
