"""The native tier's compile time of one small program in a fresh process, with a kernel cache
of its own (benchmarks/RESULTS.md, "row stores"): a scan whose carry is an array (its stacked
outputs were once written as whole-row stores ``a[t] = row``, which numba compiles with a slow
shape-error path), or an inverse over a stack of matrices (the same store per matrix).

Run from the repository root, one program per process::

    python -m benchmarks.native_row_store_compile scan 2 float64
    python -m benchmarks.native_row_store_compile inv 3 complex128

Prints numba's compile time of the program (after a first trivial ``njit`` compile, so numba's
own start-up is not counted) and the largest difference from the NumPy replay. With
``--save DIR`` the native results are saved there (to compare two versions bit for bit).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np


def program(kind: str, rank: int, dtype: str) -> tuple[Callable[[Any], Any], np.ndarray]:
    """The function and its argument: ``scan`` with a carry of ``rank`` axes, or ``inv`` of a
    stack (3, 2, 2) (``rank`` ignored)."""
    import funcgrad as fg
    import funcgrad.numpy as fnp

    if kind == "inv":
        m = (np.eye(2) + np.arange(6.0).reshape(3, 2, 1) * 0.1).astype(dtype)
        return (lambda m: fnp.linalg.inv(m) * 2.0), m
    shape = (3,) if rank == 1 else (2, 3)
    x = (np.arange(int(np.prod(shape))).reshape(shape) * 0.1 + 0.2).astype(dtype)
    ts = np.linspace(-1.0, 1.0, 5).astype(dtype)
    if np.iscomplexobj(x):
        x = x + 0.3j * x
        return (lambda x: fg.scan(lambda c, t: (c * 0.7 + t, c * 2.0), x, ts)), x
    return (lambda x: fg.scan(lambda c, t: (fnp.tanh(c * 0.7 + t), c * 2.0), x, ts)), x


def main(argv: list[str]) -> None:
    os.environ["FUNCGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="funcgrad-bench-cache-")
    save = argv[argv.index("--save") + 1] if "--save" in argv else None
    kind, rank, dtype = argv[0], int(argv[1]), argv[2]
    import numba

    import funcgrad as fg
    from funcgrad.jit import native

    f, x = program(kind, rank, dtype)
    prog = fg.jit(f).program(x)
    numba.njit(lambda a: a + 1.0)(1.0)
    start = time.perf_counter()
    made = native.native_program(prog)
    seconds = time.perf_counter() - start
    assert made is not None and made[2] == 0, "the program did not lower whole"
    got = fg.tree_util.tree_leaves(fg.jit(f, backend="native")(x))
    want = fg.tree_util.tree_leaves(fg.jit(f, backend="numpy")(x))
    diff = max(float(np.max(np.abs(np.asarray(g) - np.asarray(w)))) for g, w in zip(got, want))
    if save:
        for j, g in enumerate(got):
            np.save(os.path.join(save, f"{kind}_{rank}_{dtype}_{j}.npy"), np.asarray(g))
    print(f"{kind} rank {rank} {dtype}: compile {seconds:.2f} s, max |native - replay| {diff:.3g}")


if __name__ == "__main__":
    main(sys.argv[1:])
