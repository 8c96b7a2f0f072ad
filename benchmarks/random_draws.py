"""fg.random draw throughput beside NumPy's default_rng and JAX (issue 28).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/random_draws.py [--n 1000000] [--repeat 15]

Times ``normal(key, (n,))`` and ``uniform(key, (n,))`` in float64 and float32 (and
``bits``), each the median CPU time of ``--repeat`` calls after a warm-up, one
thread each, beside ``numpy.random.default_rng().standard_normal/random`` for
the same count and JAX's ``jax.random`` (jitted, x64, when JAX is installed).
Prints a Markdown table with the ratio funcgrad / NumPy. With numba installed, large
draws hash in compiled loops (funcgrad.random.native); ``FUNCGRAD_JIT_BACKEND=numpy``
measures the NumPy path instead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> list[tuple[str, float, float, float | None]]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    import funcgrad.random as fr

    n = args.n
    key = fr.PRNGKey(0)
    rng = np.random.default_rng(0)
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.random as jr

        jkey = jr.PRNGKey(0)
    except ImportError:
        jax = None
    rows = []
    cases = [
        ("normal float64", lambda: fr.normal(key, (n,)), lambda: rng.standard_normal(n), "normal", np.float64),
        ("normal float32", lambda: fr.normal(key, (n,), np.float32),
         lambda: rng.standard_normal(n, dtype=np.float32), "normal", np.float32),
        ("uniform float64", lambda: fr.uniform(key, (n,)), lambda: rng.random(n), "uniform", np.float64),
        ("uniform float32", lambda: fr.uniform(key, (n,), np.float32),
         lambda: rng.random(n, dtype=np.float32), "uniform", np.float32),
        ("bits uint32", lambda: fr.bits(key, (n,), np.uint32),
         lambda: rng.integers(0, 2**32, n, dtype=np.uint32), "bits", np.uint32),
    ]
    from funcgrad.random import native

    path = "compiled hash and erf_inv (numba)" if native.enabled() else "NumPy rounds"
    print(f"funcgrad path for large draws: {path} (FUNCGRAD_JIT_BACKEND=numpy forces the NumPy one)\n")
    print(f"| draw ({n} numbers) | funcgrad ms | NumPy default_rng ms | funcgrad / NumPy | JAX jit ms |")
    print("|---|---|---|---|---|")
    for label, ours, numpy_fn, jname, dt in cases:
        t_ours = median_time(ours, args.repeat)
        t_np = median_time(numpy_fn, args.repeat)
        t_jax = None
        if jax is not None:
            jfn = jax.jit(lambda k, f=getattr(jr, jname), d=dt: f(k, (n,), d))
            t_jax = median_time(lambda: jfn(jkey).block_until_ready(), args.repeat)
        rows.append((label, t_ours, t_np, t_jax))
        jax_cell = f"{t_jax * 1e3:.1f}" if t_jax is not None else "n/a"
        print(f"| {label} | {t_ours * 1e3:.1f} | {t_np * 1e3:.1f} | {t_ours / t_np:.2f}x | {jax_cell} |")
    return rows


if __name__ == "__main__":
    main()
