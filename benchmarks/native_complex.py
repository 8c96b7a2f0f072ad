"""Complex programs in the native tier of fg.jit against the NumPy replay and JAX's jit, one thread.

    python benchmarks/native_complex.py --cpu    # a Markdown table (benchmarks/RESULTS.md, issue 25)

Rows (medians of timed batches, after ``lower(...).compile()``; funcgrad's and JAX's results
checked equal first):
- a complex elementwise chain (``z = 0.4 tanh(z) + 0.2 sin(z) + 0.1j``, 50 times, then
  ``sum(|z|^2)``) over shape (3,) complex128: ``jit(grad)``, us per call;
- a complex elementwise function of 1e6 complex128 values,
  ``sum(|exp(1j z) sin(z) + conj(z)|^2)``: ``jit(f)`` and ``jit(grad)``, ms per call;
- complex linalg: ``sum(|solve(A, b)|^2)`` over a stack of 16 complex128 8x8 matrices,
  ``jit(grad)`` with respect to the stack, us per call.
``--cpu`` times with the process's CPU time (a loaded machine; every library on one thread);
``--linalg`` times the linalg row alone.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from native_tier import clock, median_time  # noqa: E402  (sets the one-thread environment first)

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402


def chain(z, xp):
    for _ in range(50):
        z = xp.tanh(z) * 0.4 + xp.sin(z) * 0.2 + 0.1j
    return xp.sum(xp.abs(z) ** 2)


def big(z, xp):
    return xp.sum(xp.abs(xp.exp(1j * z) * xp.sin(z) + xp.conj(z)) ** 2)


def solve_loss(a, rhs, xp):
    return xp.sum(xp.abs(xp.linalg.solve(a, rhs)) ** 2)


def complex_stack(count, n):
    rng = np.random.default_rng(2)
    g = rng.normal(size=(count, n, n)) + 1j * rng.normal(size=(count, n, n))
    return g + 2 * n * np.eye(n)  # well-conditioned


def rows():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    small = np.linspace(-0.5, 0.5, 3) + 1j * np.linspace(0.3, -0.2, 3)
    large = np.random.default_rng(0).uniform(-1, 1, 10**6) + 1j * np.random.default_rng(1).uniform(-1, 1, 10**6)
    cases = [("complex chain (3,), jit(grad)", "us", 1e6, lambda xp: (lambda z: chain(z, xp)), True, small),
             ("complex 1e6 elementwise, jit(f)", "ms", 1e3, lambda xp: (lambda z: big(z, xp)), False, large),
             ("complex 1e6 elementwise, jit(grad)", "ms", 1e3, lambda xp: (lambda z: big(z, xp)), True, large)]
    stack = complex_stack(16, 8)
    rhs = np.linspace(-1.0, 1.0, 16 * 8).reshape(16, 8, 1) * (1.0 - 0.5j)
    linalg = [("complex solve, stack of 16 8x8, jit(grad)", "us", 1e6,
               lambda xp: (lambda a: solve_loss(a, rhs, xp)), True, stack)]
    cases = linalg if "--linalg" in sys.argv else cases + linalg
    out = []
    for name, unit, scale, make, derivative, z in cases:
        f, jf = make(fnp), make(jnp)
        if derivative:
            f, jf = fg.grad(f), jax.grad(jf)
        native = fg.jit(f, backend="native")
        compiled = native.lower(z).compile()
        assert compiled.backend == "native" and compiled.left == 0, compiled.why
        replay = fg.jit(f, backend="numpy")
        jax_jit = jax.jit(jf)
        want = np.asarray(jax_jit(z))
        for got in (native(z), replay(z)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        t = {k: median_time(lambda g=g: g(z)) for k, g in
             (("native", native), ("replay", replay), ("jax", lambda v: jax_jit(v).block_until_ready()))}
        out.append((name, unit, scale, t))
    return out


def main() -> None:
    print(f"clock: {'process CPU time' if clock is not None and '--cpu' in sys.argv else 'wall'}")
    print("| row | native | replay | JAX jit | native / JAX | native / replay |")
    print("|---|---|---|---|---|---|")
    for name, unit, scale, t in rows():
        print(f"| {name} | {t['native'] * scale:.3g} {unit} | {t['replay'] * scale:.3g} {unit} | "
              f"{t['jax'] * scale:.3g} {unit} | {t['native'] / t['jax']:.2f} | {t['native'] / t['replay']:.2f} |")


if __name__ == "__main__":
    main()
