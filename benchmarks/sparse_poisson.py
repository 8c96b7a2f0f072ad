"""Gradient through a sparse direct solve: 2-D Poisson conductivity recovery (issue 27).

``python benchmarks/sparse_poisson.py [--sizes 128 512] [--jax-sizes 32 64 128] [--repeat 5]``
prints a Markdown table (the numbers in benchmarks/RESULTS.md, section "issue 27").

On an ``n x n`` grid (``n^2`` unknowns, one conductivity per cell) the loss is the
least-squares misfit of the temperature ``u = A(k)^-1 f`` against observations, with
``A(k)`` the 5-point ``-div(k grad u)`` stiffness matrix assembled differentiably from
``k`` (see docs/sparse.md). Reported per size:

* ``spsolve``: one forward ``funcgrad.scipy.sparse.linalg.spsolve`` of the assembled
  matrix (concrete values; SuperLU factorization and solve);
* ``grad``: one ``fg.grad`` of the loss with respect to ``k`` (assembly, factorization,
  forward solve, one adjoint solve reusing the factors, gathers at the pattern), and its
  ratio to ``spsolve`` (issue 27's target: <= 2.5x);
* peak memory during the gradient: NumPy buffers seen by :mod:`tracemalloc` (a dense
  ``n^2 x n^2`` float64 array would be ``8 n^4`` bytes), and the rise of the process's
  peak resident set (VmHWM, which also sees SuperLU's factors);
* JAX's dense equivalent (``jnp.linalg.solve`` of the dense matrix, jitted), when JAX is
  installed, at the ``--jax-sizes``.

The gradient is checked against finite differences along a random direction first.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from funcgrad.scipy import sparse  # noqa: E402
from funcgrad.scipy.sparse.linalg import spsolve  # noqa: E402


def poisson_pattern(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.arange(n * n).reshape(n, n)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    edges = np.zeros((n, n))
    edges[0, :] += 1
    edges[-1, :] += 1
    edges[:, 0] += 1
    edges[:, -1] += 1
    return a, b, edges.ravel()


def coordinates(pattern: tuple[np.ndarray, np.ndarray, np.ndarray], m: int) -> tuple[np.ndarray, np.ndarray]:
    a, b, _ = pattern
    cells = np.arange(m)
    return np.concatenate([a, b, a, b, cells]), np.concatenate([a, b, b, a, cells])


def values(k, pattern, xp=fnp):  # type: ignore[no-untyped-def]
    a, b, edges = pattern
    kf = 0.5 * (k[a] + k[b])
    return xp.concatenate([kf, kf, -kf, -kf, 2.0 * k * edges])


def assemble(k, pattern):  # type: ignore[no-untyped-def]
    m = k.shape[0]
    rows, cols = coordinates(pattern, m)
    return sparse.coo_array((values(k, pattern), (rows, cols)), shape=(m, m)).tocsc()


def problem(n: int) -> tuple:
    pattern = poisson_pattern(n)
    x, y = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n))
    k_true = (1 + np.exp(-((x - 0.6) ** 2 + (y - 0.4) ** 2) / 0.03)).ravel()
    f = np.ones(n * n)
    u_obs = spsolve(assemble(k_true, pattern), f)

    def loss(k):  # type: ignore[no-untyped-def]
        u = spsolve(assemble(k, pattern), f)
        return fnp.sum((u - u_obs) ** 2)

    return pattern, f, u_obs, loss


def median_time(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _vmhwm_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _vmrss_kib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_memory(fn) -> tuple[int, int | None]:  # type: ignore[no-untyped-def]
    """(tracemalloc peak over the baseline in bytes, rise of peak RSS in bytes or None)."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")   # reset VmHWM to the current RSS
        rss0 = _vmrss_kib()
    except OSError:
        rss0 = None
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    hwm = _vmhwm_kib()
    return peak, (None if rss0 is None or hwm is None else (hwm - rss0) * 1024)


def measure(n: int, repeat: int) -> dict:
    pattern, f, u_obs, loss = problem(n)
    m = n * n
    k0 = np.full(m, 1.0)
    A0 = assemble(k0, pattern)
    grad = fg.grad(loss)
    g = grad(k0)
    # check the gradient along a random direction against central differences
    d = np.random.default_rng(0).standard_normal(m)
    eps = 1e-6
    fd = (loss(k0 + eps * d) - loss(k0 - eps * d)) / (2 * eps)
    err = abs(float(g @ d) - float(fd)) / max(abs(float(fd)), 1e-300)
    # fresh values each call: spsolve factorizes (its factorization cache keys on the values array)
    t_fwd = median_time(lambda: spsolve(A0._like(A0.data.copy()), f), repeat)
    t_grad = median_time(lambda: grad(k0), repeat)
    traced, rss = peak_memory(lambda: grad(k0))
    return {"n": n, "unknowns": m, "nnz": A0.nnz, "spsolve_s": t_fwd, "grad_s": t_grad,
            "ratio": t_grad / t_fwd, "traced_peak": traced, "rss_rise": rss, "fd_rel_err": err,
            "dense_bytes": 8 * m * m}


def measure_jax(n: int, repeat: int) -> dict | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    pattern, f, u_obs, _ = problem(n)
    m = n * n
    rows, cols = coordinates(pattern, m)

    def loss(k):  # type: ignore[no-untyped-def]
        A = jnp.zeros((m, m)).at[rows, cols].add(values(k, pattern, jnp))
        u = jnp.linalg.solve(A, f)
        return jnp.sum((u - u_obs) ** 2)

    fwd = jax.jit(lambda k: jnp.linalg.solve(jnp.zeros((m, m)).at[rows, cols].add(values(k, pattern, jnp)), f))
    grad = jax.jit(jax.grad(loss))
    k0 = jnp.ones(m)
    rss0 = _vmhwm_kib()
    if m >= 128 * 128:
        # minutes per call here: one cold call each (compilation, well under a second, included)
        t_fwd = median_time(lambda: fwd(k0).block_until_ready(), 1)
        print(f"(JAX dense {n}x{n}: forward solve {t_fwd:.1f} s, peak RSS {_mb((_vmhwm_kib() or 0) * 1024)}; "
              "now the gradient)", file=sys.stderr, flush=True)
        t = time.perf_counter()
        g = np.asarray(grad(k0).block_until_ready())
        t_grad = time.perf_counter() - t
    else:
        fwd(k0).block_until_ready()
        g = np.asarray(grad(k0).block_until_ready())
        t_fwd = median_time(lambda: fwd(k0).block_until_ready(), repeat)
        t_grad = median_time(lambda: grad(k0).block_until_ready(), repeat)
    hwm = _vmhwm_kib()
    ours = fg.grad(problem(n)[3])(np.ones(m))
    return {"n": n, "unknowns": m, "spsolve_s": t_fwd, "grad_s": t_grad,
            "peak_rss": None if rss0 is None or hwm is None else hwm * 1024,
            "max_rel_diff": float(np.abs(g - ours).max() / np.abs(ours).max())}


def _mb(x: int | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:.1f} MB"


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(prog="python benchmarks/sparse_poisson.py")
    p.add_argument("--sizes", type=int, nargs="*", default=[128, 512])
    p.add_argument("--jax-sizes", type=int, nargs="*", default=[32, 64, 128])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    rows = []
    print("| grid | unknowns | nnz | spsolve | grad | grad / spsolve | traced peak (grad) | RSS rise (grad) "
          "| dense n x n would be | grad vs FD |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        r = measure(n, args.repeat if n <= 256 else max(1, args.repeat // 5))
        rows.append(r)
        print(f"| {n}x{n} | {r['unknowns']} | {r['nnz']} | {r['spsolve_s'] * 1e3:.1f} ms | {r['grad_s'] * 1e3:.1f} ms "
              f"| {r['ratio']:.2f}x | {_mb(r['traced_peak'])} | {_mb(r['rss_rise'])} | {_mb(r['dense_bytes'])} "
              f"| {r['fd_rel_err']:.1e} |", flush=True)
    if args.jax_sizes:
        print()
        print("| JAX dense (jit, CPU) grid | unknowns | forward solve | grad | peak RSS of the process "
              "| max rel. diff vs funcgrad |")
        print("|---|---|---|---|---|---|")
        for n in args.jax_sizes:
            r = measure_jax(n, max(1, args.repeat // (1 if n <= 32 else 5)))
            if r is None:
                print("| (JAX not installed) | | | | |")
                break
            rows.append({"jax": True, **r})
            print(f"| {n}x{n} | {r['unknowns']} | {r['spsolve_s'] * 1e3:.1f} ms | {r['grad_s'] * 1e3:.1f} ms "
                  f"| {_mb(r['peak_rss'])} | {r['max_rel_diff']:.1e} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
