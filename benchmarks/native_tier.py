"""The native tier of fg.jit against the NumPy replay and JAX's jit, one thread, same run.

    python benchmarks/native_tier.py            # prints a Markdown table (benchmarks/RESULTS.md, issue 25)

Rows (medians of timed batches; the first call and the time until native code is in use
reported separately):
- the 200-op chain (tanh(sin(y)) x 100, then sum) over shape (3,): ``jit(grad)``, us per op;
- the third derivative of f(x) = exp(sin x) + x tanh x at a scalar (nested grad);
- a 1e6 and a 1e7 float64 transcendental elementwise function, ``jit(grad)``:
  f(x) = sum(sin(x) * tanh(x) + exp(-x * x)).
The on-disk cache reload is timed in a fresh process (``--reload``).

    python benchmarks/native_tier.py --loops    # only the loop rows (benchmarks/native_loops.py):

- an ODE integrator, fori_loop of 1000 RK4 steps on a state of 4: ``jit(f)`` and ``jit(grad)``;
- an N-body leapfrog, 32 particles, 200 steps in fori_loop, ``jit(grad)`` w.r.t. the initial state;
JAX runs the same programs with ``lax.fori_loop``.

    python benchmarks/native_tier.py --rk4      # only the RK4 jit(f) row (quick: before/after runs)
    python benchmarks/native_tier.py --hessian  # best-of-200 times of the Hessian rows
    python benchmarks/native_tier.py --only HVP --only 1e6   # only the rows whose names contain these
    python benchmarks/native_tier.py --cpu      # time with the process's CPU time, not the wall clock

``--cpu`` is for a loaded machine: every timed library runs on one thread (the settings
below), so CPU time is its time less the time other processes took the core from it.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import funcgrad as fg  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402

fg.config.jit_threads = 1


clock = time.process_time if "--cpu" in sys.argv else time.perf_counter


def median_time(fn: Callable[[], Any], budget: float = 1.0) -> float:
    """Median seconds per call over batches filling about ``budget`` seconds."""
    fn()
    n = 1
    while True:
        t = clock()
        for _ in range(n):
            fn()
        if clock() - t > 0.05:
            break
        n *= 4
    times = []
    end = time.perf_counter() + budget
    while time.perf_counter() < end or len(times) < 5:
        t = clock()
        for _ in range(n):
            fn()
        times.append((clock() - t) / n)
    return float(np.median(times))


def first_call(make: Callable[[], Callable[[], Any]]) -> float:
    t = time.perf_counter()
    make()()
    return time.perf_counter() - t


def chain_fg(y: Any) -> Any:
    for _ in range(100):
        y = fnp.tanh(fnp.sin(y))
    return fnp.sum(y)


def scalar_fg(x: Any) -> Any:
    return fnp.exp(fnp.sin(x)) + fnp.tanh(x) * x


def big_fg(x: Any) -> Any:
    return fnp.sum(fnp.sin(x) * fnp.tanh(x) + fnp.exp(-x * x))


def loop_cases(jax: Any, jnp: Any) -> list[Any]:
    from benchmarks.native_loops import nbody_program, nbody_start, rk4_program

    rk_fg, rk_j = rk4_program(fnp, fg.fori_loop), rk4_program(jnp, jax.lax.fori_loop)
    nb_fg, nb_j = nbody_program(fnp, fg.fori_loop), nbody_program(jnp, jax.lax.fori_loop)
    x0 = np.array([1.0, 0.5, 0.0, 0.0])
    return [
        ("ODE RK4 x1000 fori_loop jit(f)", "us", rk_fg, jax.jit(rk_j), (x0,), 1),
        ("ODE RK4 x1000 fori_loop jit(grad)", "us", fg.grad(rk_fg), jax.jit(jax.grad(rk_j)), (x0,), 1),
        ("N-body 32 x200 leapfrog jit(grad)", "ms", fg.grad(nb_fg, argnums=(0, 1)),
         jax.jit(jax.grad(nb_j, argnums=(0, 1))), nbody_start(), 1),
    ]


def rows(only_loops: bool = False, only_rk4: bool = False) -> list[tuple[str, str, float, float, float, float, float]]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    if only_loops or only_rk4:
        return measure(loop_cases(jax, jnp)[:1 if only_rk4 else None], jnp)

    def chain_j(y: Any) -> Any:
        for _ in range(100):
            y = jnp.tanh(jnp.sin(y))
        return jnp.sum(y)

    def scalar_j(x: Any) -> Any:
        return jnp.exp(jnp.sin(x)) + jnp.tanh(x) * x

    def big_j(x: Any) -> Any:
        return jnp.sum(jnp.sin(x) * jnp.tanh(x) + jnp.exp(-x * x))

    rng = np.random.default_rng(0)
    cases = [
        ("200-op chain (3,) jit(grad)", "us/op", _nest(fg.grad, chain_fg, 1), jax.jit(_nest(jax.grad, chain_j, 1)),
         (np.array([0.1, 0.2, 0.3]),), 200),
        ("third derivative, scalar", "us", _nest(fg.grad, scalar_fg, 3), jax.jit(_nest(jax.grad, scalar_j, 3)),
         (np.float64(0.7),), 1),
        ("1e6 elementwise jit(grad)", "ms", fg.grad(big_fg), jax.jit(jax.grad(big_j)),
         (rng.uniform(-2, 2, 10**6),), 1),
        ("1e7 elementwise jit(grad)", "ms", fg.grad(big_fg), jax.jit(jax.grad(big_j)),
         (rng.uniform(-2, 2, 10**7),), 1),
    ]
    for n in (50, 200):
        a = rng.standard_normal((n, n)) / np.sqrt(n)
        f_fg, f_j = _hessian_problem(a, jnp)
        cases.append((f"Hessian n={n} jit(hessian)", "us", fg.hessian(f_fg), jax.jit(jax.hessian(f_j)),
                      (rng.standard_normal(n),), 1))
    n = 2000
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    f_fg, f_j = _hessian_problem(a, jnp)
    cases.append((f"HVP n={n} jit(hvp)", "us", lambda x, v, f=f_fg: fg.hvp(f, (x,), (v,))[1],
                  jax.jit(lambda x, v: jax.jvp(jax.grad(f_j), (x,), (v,))[1]),
                  (rng.standard_normal(n), rng.standard_normal(n)), 1))
    return measure(cases + loop_cases(jax, jnp), jnp)


def only_names() -> list[str]:
    """The ``--only NAME`` arguments: measure only rows whose names contain one of them."""
    return [sys.argv[j + 1] for j, a in enumerate(sys.argv[:-1]) if a == "--only"]


def measure(cases: list[Any], jnp: Any) -> list[tuple[str, str, float, float, float, float, float]]:
    out = []
    wanted = only_names()
    for name, unit, f_fg, jg, args, per in cases:
        if wanted and not any(w in name for w in wanted):
            continue
        scale = {"us/op": 1e6 / per, "us": 1e6, "ms": 1e3}[unit]
        jargs = tuple(jnp.asarray(x) for x in args)
        jax_first = first_call(lambda: (lambda: jax_block(jg(*jargs))))
        t_jax = median_time(lambda: jax_block(jg(*jargs)))
        replay = fg.jit(f_fg, backend="numpy")
        replay_first = first_call(lambda: (lambda: replay(*args)))
        t_replay = median_time(lambda: replay(*args))
        nat = fg.jit(f_fg, backend="native")
        native_first = first_call(lambda: (lambda: nat(*args)))
        t0 = time.perf_counter()
        compiled = nat.lower(*args).compile()
        until_native = time.perf_counter() - t0
        # (programs of float scalars keep their Python-float code: it is faster than a compiled call)
        assert compiled.backend == "native" or "Python-float" in compiled.why, compiled.why
        want = replay(*args)  # (cancellation near the gradient's zeros: compare relative to the scale)
        for got, w in zip(fg.tree_util.tree_leaves(nat(*args)), fg.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-12 * float(np.max(np.abs(w))))
        t_native = median_time(lambda: nat(*args))
        out.append((name, unit, t_native * scale, t_replay * scale, t_jax * scale,
                    native_first, until_native))
        print(f"{name}: native {t_native * scale:.3g} {unit}, replay {t_replay * scale:.3g}, "
              f"jax jit {t_jax * scale:.3g}; first call native {native_first * 1e3:.1f} ms / replay "
              f"{replay_first * 1e3:.1f} ms / jax {jax_first * 1e3:.1f} ms; native in use after "
              f"{until_native:.2f} s more ({compiled.lowered} equations lowered, {compiled.left} replayed)",
              flush=True)
    return out


def print_table(table: list[tuple[str, str, float, float, float, float, float]]) -> None:
    """The rows of :func:`measure` as a Markdown table."""
    print("\n| row | unit | native | NumPy replay | JAX jit | native / JAX | first call (native backend) | "
          "then native in use after |")
    print("|---|---|---|---|---|---|---|---|")
    for name, unit, nat, rep, jx, first, until in table:
        print(f"| {name} | {unit} | {nat:.3g} | {rep:.3g} | {jx:.3g} | {nat / jx:.2f}x | {first * 1e3:.1f} ms | "
              f"{until:.2f} s |")


def jax_block(out: Any) -> Any:
    """Wait for every array of a JAX result (a pytree)."""
    for leaf in fg.tree_util.tree_leaves(out):
        leaf.block_until_ready()
    return out


def _hessian_problem(a: Any, jnp: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """f(x) = sum(tanh(A x)^2) + x.x/2 (benchmarks/workloads/hessian.py) for funcgrad and JAX."""
    def f_fg(x: Any) -> Any:
        t = fnp.tanh(a @ x)
        return fnp.sum(t * t) + 0.5 * (x @ x)

    def f_j(x: Any) -> Any:
        t = jnp.tanh(a @ x)
        return jnp.sum(t * t) + 0.5 * (x @ x)
    return f_fg, f_j


def _nest(grad: Callable[..., Any], f: Callable[..., Any], depth: int) -> Callable[..., Any]:
    for _ in range(depth):
        f = grad(f)
    return f


MEMORY_PROBE = """
import sys, json, numpy as np
sys.path.insert(0, %(root)r)
from benchmarks.memprobe import _reset_hwm, _status
which, n, layers = %(which)r, %(n)d, %(layers)d
x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
if which == "jax":
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    def chain(y):
        for _ in range(layers):
            y = jnp.tanh(0.9 * y + 0.1)
        return jnp.sum(y)
    g = jax.jit(jax.grad(chain)).lower(x).compile()  # compiled ahead: the measured call is its first run
    call = lambda: g(x).block_until_ready()
else:
    import funcgrad as fg, funcgrad.numpy as fnp
    fg.config.jit_threads = 1
    def chain(y):
        for _ in range(layers):
            y = fnp.tanh(0.9 * y + 0.1)
        return fnp.sum(y)
    g = fg.jit(fg.grad(chain), backend=which)
    g(x)
    assert g.lower(x).compile().backend == which
    call = lambda: g(x)
if which != "jax":  # (XLA keeps what its first run allocated: JAX's measured call is its first)
    call(); call()
before = _status("VmRSS")
assert _reset_hwm()
out = call()
print(json.dumps({"peak": _status("VmHWM") - before}))
"""


def peak_memory(n: int = 10**6, layers: int = 50) -> dict[str, float]:
    """MiB the peak resident set rises during one call of jit(grad) of the 50-layer chain
    y = tanh(0.9 y + 0.1) (benchmarks/memprobe.py's), each in a fresh process, warm (glibc's
    malloc told to map large blocks, so that memory freed by the warm calls is not counted
    as resident already)."""
    import json

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    for which in ("native", "numpy", "jax"):
        code = MEMORY_PROBE % {"root": root, "which": which, "n": n, "layers": layers}
        # large blocks from mmap (given back when freed): the warm calls' memory is not resident still
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        out[which] = json.loads(run.stdout.strip().splitlines()[-1])["peak"] / 2**20
    return out


def reload_seconds() -> float:
    """Seconds until native code is in use in a new process whose kernels are on disk."""
    code = ("import time, numpy as np, sys; sys.path.insert(0, %r)\n"
            "import funcgrad as fg\n"
            "from benchmarks.native_tier import chain_fg\n"
            "x = np.array([0.1, 0.2, 0.3])\n"
            "f = fg.jit(fg.grad(chain_fg), backend='native'); f(x)\n"
            "t = time.perf_counter(); c = f.lower(x).compile(); print(time.perf_counter() - t, c.backend)\n"
            % os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = ""
    for _ in range(2):  # the first run may compile (and write) the kernels
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def hessian_best(calls: int = 200) -> None:
    """Best-of-``calls`` times of jit(hessian) at n=50 and 200 (native, replay, JAX): less moved by a
    loaded machine than medians (``--hessian``)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)

    def best(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(calls):
            t = clock()
            fn()
            times.append(clock() - t)
        return min(times) * 1e6

    for n in (50, 200):
        a = rng.standard_normal((n, n)) / np.sqrt(n)
        x = rng.standard_normal(n)
        f_fg, f_j = _hessian_problem(a, jnp)
        nat = fg.jit(fg.hessian(f_fg), backend="native")
        assert nat.lower(x).compile().backend == "native"
        rep = fg.jit(fg.hessian(f_fg), backend="numpy")
        jh, jx = jax.jit(jax.hessian(f_j)), jnp.asarray(x)
        t_nat, t_rep, t_jax = best(lambda: nat(x)), best(lambda: rep(x)), best(lambda: jh(jx).block_until_ready())
        print(f"Hessian n={n}, best of {calls}: native {t_nat:.0f} us, replay {t_rep:.0f} us, JAX jit {t_jax:.0f} us "
              f"(native / JAX {t_nat / t_jax:.2f}x)")


if __name__ == "__main__":
    if "--hessian" in sys.argv:
        hessian_best()
        sys.exit(0)
    loops_only = "--loops" in sys.argv or "--rk4" in sys.argv
    table = rows(loops_only, "--rk4" in sys.argv)
    print_table(table)
    if loops_only or only_names():
        sys.exit(0)
    mem = peak_memory()
    print(f"\npeak memory, jit(grad) of the 50-layer chain on 1e6 float64 (rise of VmHWM during one warm call): "
          f"native {mem['native']:.1f} MiB, replay {mem['numpy']:.1f} MiB, JAX jit {mem['jax']:.1f} MiB "
          f"(native / JAX {mem['native'] / mem['jax']:.2f}x)")
    print(f"\non-disk cache: native code in use {reload_seconds():.2f} s after the first call in a new process")
