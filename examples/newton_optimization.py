"""Newton's method with exact Hessians on the Rosenbrock function, against (L-)BFGS.

The Hessian of the n-dimensional Rosenbrock function comes from
``fg.hessian`` (forward-over-reverse, exact, no finite differences). Newton's
method with a backtracking line search (and a shift of the Hessian when it is
not positive definite) converges quadratically near the minimum, in far
fewer iterations than quasi-Newton methods that build curvature from
gradients alone: funcgrad's own L-BFGS (``fg.optim.minimize_lbfgs``) and,
when SciPy is installed, SciPy's BFGS and Newton-CG fed with funcgrad's
gradients, Hessians and Hessian-vector products.

Run: python examples/newton_optimization.py [--dims 10 30] [--fast]
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
import funcgrad.optim as optim  # noqa: E402


def rosenbrock(x):
    """sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2; minimum 0 at x = (1, ..., 1)."""
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def start_point(n: int) -> np.ndarray:
    # (-1.2, ..., -1.2): every method here reaches the global minimum from it. (From the
    # classic (-1.2, 1, 1, ...) they all stop at the local minimum near (-1, 1, ..., 1)
    # that the chained Rosenbrock function has in 4 or more dimensions.)
    return np.full(n, -1.2)


def newton(f, x0, tol: float = 1e-10, maxiter: int = 200, verbose: bool = False):
    """Damped Newton: solve (H + tau I) d = -g with the exact Hessian, backtrack on f."""
    value_and_grad = fg.value_and_grad(f)
    hess = fg.hessian(f)
    x = np.array(x0, dtype=np.float64)
    n_f = 0
    for it in range(maxiter):
        fx, g = value_and_grad(x)
        n_f += 1
        gnorm = float(np.max(np.abs(g)))
        if verbose:
            print(f"  newton it {it:3d}  f = {float(fx):.3e}  max|g| = {gnorm:.3e}")
        if gnorm <= tol:
            return x, it, n_f
        H = np.asarray(hess(x))
        tau = 0.0
        while True:  # shift until positive definite (Nocedal & Wright, Alg. 3.3)
            try:
                L = np.linalg.cholesky(H + tau * np.eye(len(x)))
                break
            except np.linalg.LinAlgError:
                tau = max(2 * tau, 1e-3 * np.abs(H).max())
        d = -np.linalg.solve(L.T, np.linalg.solve(L, g))
        t, gd = 1.0, float(g @ d)
        while float(f(x + t * d)) > float(fx) + 1e-4 * t * gd and t > 1e-12:
            t *= 0.5
            n_f += 1
        x = x + t * d
    return x, maxiter, n_f


def compare(n: int, verbose: bool) -> dict:
    x0 = start_point(n)
    results = {}
    t = time.perf_counter()
    x, iters, nfev = newton(rosenbrock, x0, verbose=verbose)
    results["Newton (exact Hessian, fg.hessian)"] = (iters, float(rosenbrock(x)), time.perf_counter() - t)
    assert np.allclose(x, 1.0, atol=1e-6), x

    t = time.perf_counter()
    xl, info = optim.minimize_lbfgs(rosenbrock, x0, tol=1e-10, maxiter=2000)
    results["L-BFGS (fg.optim.minimize_lbfgs)"] = (info.n_iter, info.value, time.perf_counter() - t)

    try:
        import scipy.optimize as so
    except ImportError:
        print("  (SciPy not installed: skipping the SciPy BFGS and Newton-CG comparison)")
        return results
    H_fg = np.asarray(fg.hessian(rosenbrock)(x0))
    err = float(np.max(np.abs(H_fg - so.rosen_hess(x0))))
    print(f"  fg.hessian vs SciPy's closed-form rosen_hess at x0: max abs difference {err:.1e}")
    assert err < 1e-8
    f = lambda x: float(rosenbrock(x))  # noqa: E731
    jac = fg.grad(rosenbrock)
    t = time.perf_counter()
    r = so.minimize(f, x0, jac=jac, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
    results["BFGS (scipy, fg.grad gradients)"] = (r.nit, float(r.fun), time.perf_counter() - t)

    def hessp(x, v):
        return fg.hvp(rosenbrock, (x,), (v,))[1]

    t = time.perf_counter()
    r = so.minimize(f, x0, jac=jac, hessp=hessp, method="Newton-CG", options={"xtol": 1e-12, "maxiter": 5000})
    results["Newton-CG (scipy, fg.hvp products)"] = (r.nit, float(r.fun), time.perf_counter() - t)
    return results


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--verbose", action="store_true", help="print every Newton iteration")
    parser.add_argument("--fast", action="store_true", help="10 dimensions only (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    dims = [10] if fast else args.dims
    all_results = {}
    for n in dims:
        print(f"Rosenbrock in {n} dimensions, start (-1.2, ..., -1.2):")
        res = compare(n, args.verbose)
        for name, (iters, fval, secs) in res.items():
            print(f"  {name:40s} {iters:5d} iterations   f = {fval:.2e}   {secs:6.2f} s")
        newton_iters = res["Newton (exact Hessian, fg.hessian)"][0]
        quasi = [v[0] for k, v in res.items() if "BFGS" in k]
        print(f"  -> Newton needs {newton_iters} iterations, quasi-Newton {min(quasi)}-{max(quasi)}")
        all_results[n] = res
    return all_results


if __name__ == "__main__":
    main()
