"""Derivatives through ``eigsh`` eigenvectors, ``expm_multiply`` and a ``LinearOperator``'s
parameters on the 2-D conductivity problem of ``sparse_poisson.py`` (issue 27).

``python benchmarks/sparse_spectral.py [--sizes 16 32 64] [--repeat 3]`` prints a Markdown
table (the numbers in benchmarks/RESULTS.md, section "issue 27"). Per grid ``n x n``
(``n^2`` unknowns, one conductivity ``k`` per cell, ``A(k)`` the stiffness matrix):

* ``eigsh``: the 4 largest eigenpairs of ``A(k)``; ``grad``: ``fg.grad`` of
  ``sum(w) + sum(v**4)`` in ``k`` (one sparse bordered LU per eigenvector);
* ``expm_multiply``: ``expm(-t A(k)) f`` (heat flow for time ``t = 0.05``), against
  SciPy's ``expm_multiply`` on the same matrix; ``grad``: ``fg.grad`` of the
  least-squares misfit of that in ``k`` (reverse mode through the Taylor steps);
* ``cg (operator)``: a ``LinearOperator`` with ``params=k`` (matvec by the assembled
  matrix) solved by ``cg`` at ``rtol=1e-10``; ``grad``: ``fg.grad`` of the misfit in ``k``
  (one adjoint cg solve and reverse mode through one matvec).

* ``eigsh (complex Hermitian)``: the magnetic version of ``A(k)`` (each off-diagonal
  entry times ``e^{i theta (r - c)}``), its 4 largest eigenpairs; ``grad``: of
  ``sum(w) + sum(|v|**4)`` (phase-invariant) in ``k``;
* ``expm_multiply under fg.jit``: the heat flow above staged by ``fg.jit`` (the step budget
  from the traced norm); forward and ``fg.jit(fg.grad(...))``, each after a first
  (tracing) call; the eager forward is in the ``expm_multiply`` row;
* ``svds k=4``: the 4 largest singular triplets of ``A(k)`` through ``eigsh`` of
  ``[[0, A], [A^T, 0]]``; ``grad``: of ``sum(s) + sum(u**4)``.

``--only`` selects rows by a word of their name (``--only hermitian jit svds``).

Each ratio is measured in the same run; the gradients are checked against a central
finite difference along a random direction first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from funcgrad.scipy.sparse import linalg as sla  # noqa: E402

from sparse_poisson import assemble, poisson_pattern  # noqa: E402


def median_time(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def fd_error(loss, k: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    direction = np.random.default_rng(0).normal(size=k.shape)
    eps = 1e-6
    numeric = (loss(k + eps * direction) - loss(k - eps * direction)) / (2 * eps)
    exact = float(np.dot(fg.grad(loss)(k), direction))
    return abs(numeric - exact) / max(abs(exact), 1e-300)


def measure(n: int, repeat: int, only: list[str] | None = None) -> list[tuple[str, float, float, float]]:
    import scipy.sparse.linalg as ssl

    pattern = poisson_pattern(n)
    m = n * n
    x, y = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n))
    k = (1 + 0.5 * np.sin(3 * x) * np.cos(2 * y)).ravel()
    f = np.sin(np.pi * x).ravel() * np.sin(np.pi * y).ravel()
    rows = []

    def wanted(name: str) -> bool:
        return not only or any(word in name for word in only)

    def eig_loss(k):  # type: ignore[no-untyped-def]
        w, v = sla.eigsh(assemble(k, pattern), k=4, which="LA")
        return fnp.sum(w) + fnp.sum(v ** 4)
    if wanted("eigsh k=4 (values + vectors)"):
        t_f = median_time(lambda: sla.eigsh(assemble(k, pattern), k=4, which="LA"), repeat)
        t_g = median_time(lambda: fg.grad(eig_loss)(k), repeat)
        rows.append(("eigsh k=4 (values + vectors)", t_f, t_g, fd_error(eig_loss, k)))

    plain = assemble(k, pattern).tocsr()
    phase = np.exp(0.3j * (plain.row - plain.col))      # Hermitian: theta(c, r) = -theta(r, c)

    def magnetic(k):  # type: ignore[no-untyped-def]
        a = assemble(k, pattern).tocsr()
        return a._like(a.data * phase)

    def hermitian_loss(k):  # type: ignore[no-untyped-def]
        w, v = sla.eigsh(magnetic(k), k=4, which="LA")
        return fnp.sum(w) + fnp.sum(fnp.abs(v) ** 4)
    if wanted("eigsh k=4 complex Hermitian"):
        t_f = median_time(lambda: sla.eigsh(magnetic(k), k=4, which="LA"), repeat)
        t_g = median_time(lambda: fg.grad(hermitian_loss)(k), repeat)
        rows.append(("eigsh k=4 complex Hermitian", t_f, t_g, fd_error(hermitian_loss, k)))

    t = 0.05
    target = sla.expm_multiply(-t * assemble(k * 1.1, pattern), f)

    def heat_loss(k):  # type: ignore[no-untyped-def]
        return fnp.sum((sla.expm_multiply(-t * assemble(k, pattern), f) - target) ** 2)
    scipy_matrix = (-t * assemble(k, pattern)).to_scipy()
    t_s = median_time(lambda: ssl.expm_multiply(scipy_matrix, f), repeat)
    if wanted("expm_multiply (SciPy"):
        t_f = median_time(lambda: sla.expm_multiply(-t * assemble(k, pattern), f), repeat)
        t_g = median_time(lambda: fg.grad(heat_loss)(k), repeat)
        rows.append((f"expm_multiply (SciPy: {t_s * 1e3:.1f} ms)", t_f, t_g, fd_error(heat_loss, k)))
    if wanted("expm_multiply under fg.jit"):
        staged = fg.jit(lambda k: sla.expm_multiply(-t * assemble(k, pattern), f))
        staged_grad = fg.jit(fg.grad(heat_loss))
        eager = sla.expm_multiply(-t * assemble(k, pattern), f)
        gap = float(np.abs(staged(k) - eager).max() / np.abs(eager).max())
        staged_grad(k)
        t_f = median_time(lambda: staged(k), repeat)
        t_g = median_time(lambda: staged_grad(k), repeat)
        rows.append((f"expm_multiply under fg.jit (vs eager {gap:.0e}; SciPy: {t_s * 1e3:.1f} ms)", t_f, t_g,
                     fd_error(heat_loss, k)))

    def operator(k):  # type: ignore[no-untyped-def]
        return sla.LinearOperator((m, m), matvec=lambda k, v: assemble(k, pattern) @ v, params=k)

    def op_loss(k):  # type: ignore[no-untyped-def]
        return fnp.sum((sla.cg(operator(k), f, rtol=1e-10)[0] - u_obs) ** 2)
    if wanted("cg of a LinearOperator(params=k)"):
        u_obs = sla.cg(operator(k * 1.1), f, rtol=1e-10)[0]
        t_f = median_time(lambda: sla.cg(operator(k), f, rtol=1e-10), repeat)
        t_g = median_time(lambda: fg.grad(op_loss)(k), repeat)
        rows.append(("cg of a LinearOperator(params=k)", t_f, t_g, fd_error(op_loss, k)))

    def svd_loss(k):  # type: ignore[no-untyped-def]
        u, s, vh = sla.svds(assemble(k, pattern), k=4)
        return fnp.sum(s) + fnp.sum(u ** 4)
    if wanted("svds k=4"):
        t_f = median_time(lambda: sla.svds(assemble(k, pattern), k=4), repeat)
        t_g = median_time(lambda: fg.grad(svd_loss)(k), repeat)
        rows.append(("svds k=4 (values + vectors)", t_f, t_g, fd_error(svd_loss, k)))
    return rows


def main(argv: list[str] | None = None) -> list[tuple[str, float, float, float]]:
    p = argparse.ArgumentParser(prog="python benchmarks/sparse_spectral.py")
    p.add_argument("--sizes", type=int, nargs="*", default=[16, 32, 64])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", nargs="*", default=None, help="rows whose name contains one of these words")
    args = p.parse_args(argv)
    print("| grid | operation | forward | grad | grad / forward | grad vs FD |")
    print("|---|---|---|---|---|---|")
    rows = []
    for n in args.sizes:
        for name, t_f, t_g, err in measure(n, args.repeat, args.only):
            rows.append((name, t_f, t_g, err))
            print(f"| {n}x{n} | {name} | {t_f * 1e3:.1f} ms | {t_g * 1e3:.1f} ms | {t_g / t_f:.2f}x | {err:.1e} |",
                  flush=True)
    return rows


if __name__ == "__main__":
    main()
