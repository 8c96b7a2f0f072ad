"""Gathers, scatters and einsum in the native tier of fg.jit against the NumPy replay and JAX's
jit, one thread, same run (issue 25):

    python benchmarks/native_gather.py --cpu    # prints a Markdown table (benchmarks/RESULTS.md)

Rows (``jit(grad)``; medians of timed batches, the first call and the time until native code
is in use reported separately; benchmarks/native_tier.py's ``measure``):
- an embedding lookup: a (1000, 16) table, 256 ids with repeats (an argument), loss
  sum(tanh(E[ids] w)^2); its gradient scatter-adds into the table;
- a particle system: 256 particles in 2-D joined by springs to 8 neighbours each (an index
  array, static), 50 steps in ``fori_loop``, gradient w.r.t. the initial positions;
- an einsum program: a batch of 64 quadratic forms 'bi,ij,bj->b' and a batched product
  'bij,bjk->bik' (n=8), squared and summed.
The same arithmetic is written once per library (``np_``: funcgrad.numpy or jax.numpy).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.native_tier import measure, print_table  # noqa: E402  (sets one thread for every library)

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402

PARTICLES, NEIGHBOURS, STEPS, DT = 256, 8, 50, 0.01


def embedding_program(np_: Any) -> Callable[..., Any]:
    def loss(table: Any, w: Any, ids: Any) -> Any:
        return np_.sum(np_.tanh(table[ids] * w) ** 2)
    return loss


def particle_program(np_: Any, fori_loop: Callable[..., Any], neighbours: np.ndarray) -> Callable[..., Any]:
    def step(i: Any, q: Any) -> Any:
        d = q[neighbours] - q[:, None, :]  # (N, K, 2)
        r = np_.sqrt(np_.sum(d * d, axis=-1) + 1e-3)
        return q + DT * np_.sum(d * ((r - 0.1) / r)[:, :, None], axis=1)

    def loss(q0: Any) -> Any:
        q = fori_loop(0, STEPS, step, q0)
        return np_.sum(q * q)
    return loss


def einsum_program(np_: Any) -> Callable[..., Any]:
    def loss(x: Any, a: Any, m: Any) -> Any:
        forms = np_.einsum("bi,ij,bj->b", x, a, x)
        prods = np_.einsum("bij,bjk->bik", m, m)
        return np_.sum(forms ** 2) + np_.sum(np_.tanh(prods))
    return loss


def cases(jax: Any, jnp: Any) -> list[Any]:
    rng = np.random.default_rng(0)
    neighbours = rng.integers(0, PARTICLES, (PARTICLES, NEIGHBOURS))
    table, w, ids = rng.standard_normal((1000, 16)), rng.standard_normal(16), rng.integers(0, 1000, 256)
    q0 = rng.standard_normal((PARTICLES, 2))
    x, a, m = rng.standard_normal((64, 8)), rng.standard_normal((8, 8)) / 3, rng.standard_normal((64, 8, 8)) / 3
    return [
        ("embedding lookup 1000x16, 256 ids jit(grad)", "us", fg.grad(embedding_program(fnp), argnums=(0, 1)),
         jax.jit(jax.grad(embedding_program(jnp), argnums=(0, 1))), (table, w, ids), 1),
        (f"particles {PARTICLES}x{NEIGHBOURS} neighbours x{STEPS} fori_loop jit(grad)", "ms",
         fg.grad(particle_program(fnp, fg.fori_loop, neighbours)),
         jax.jit(jax.grad(particle_program(jnp, jax.lax.fori_loop, neighbours))), (q0,), 1),
        ("einsum forms + batched products jit(grad)", "us", fg.grad(einsum_program(fnp), argnums=(0, 1, 2)),
         jax.jit(jax.grad(einsum_program(jnp), argnums=(0, 1, 2))), (x, a, m), 1),
    ]


if __name__ == "__main__":
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    table = measure(cases(jax, jnp), jnp)
    print_table(table)
