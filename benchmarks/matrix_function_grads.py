"""Time of fg.grad through sqrtm and logm (issue 31: their derivatives now take the branch of
the result and compute the block identity in complex arithmetic).

Run: ``python benchmarks/matrix_function_grads.py LABEL`` (LABEL only tags the printed lines;
put an older checkout first on PYTHONPATH to compare).
"""
import sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from funcgrad.scipy import linalg as L
rng = np.random.default_rng(0)
for n in (4, 20):
    A = rng.standard_normal((n, n)); S = A @ A.T + n * np.eye(n)
    for name, f in (("sqrtm", L.sqrtm), ("logm", L.logm)):
        g = fg.grad(lambda a: fnp.sum(f(a) ** 2))
        g(S)
        best = min((lambda t0: (g(S), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
        print(f"{sys.argv[1]} grad(sum({name}(S)**2)) n={n}: {best*1e3:.2f} ms")
