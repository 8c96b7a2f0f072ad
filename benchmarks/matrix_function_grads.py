"""Time of fg.grad through sqrtm and logm (issue 31: their derivatives now take the branch of
the result and compute the block identity in complex arithmetic).

Run: ``python benchmarks/matrix_function_grads.py LABEL`` (LABEL only tags the printed lines;
put an older checkout first on PYTHONPATH to compare).
"""
import sys
import time
import warnings

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import linalg as L

warnings.simplefilter("ignore")


def best_of(fn, arg, repeats=5):
    fn(arg)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t0)
    return min(times)


rng = np.random.default_rng(0)
for n in (4, 20):
    A = rng.standard_normal((n, n))
    S = A @ A.T + n * np.eye(n)
    for name, f in (("sqrtm", L.sqrtm), ("logm", L.logm)):
        g = fg.grad(lambda a, f=f: fnp.sum(f(a) ** 2))
        print(f"{sys.argv[1] if len(sys.argv) > 1 else ''} grad(sum({name}(S)**2)) n={n}: {best_of(g, S) * 1e3:.2f} ms")
