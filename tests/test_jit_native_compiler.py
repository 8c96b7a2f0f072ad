"""The native tier's background compiler (funcgrad/jit/tiered.py, funcgrad/jit/compile_worker.py):
numba compiles in a worker process, the caller's process loads the machine code from the disk
cache; every generated module is cacheable (linalg included), so a new process compiles nothing;
an exit during a compile kills the worker instead of waiting for it. Skips without numba (the
`native` extra). Each test runs its programs in fresh processes with their own kernel cache.
The linalg program (numba's LAPACK bindings: seconds of compile) is compiled once, by the worker;
where the compile runs ("thread" against "process") is checked on a small program.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import background_checks
import pytest

from funcgrad.jit import native
from funcgrad.jit.compile_worker import CompileWorker

pytestmark = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# argv[2] "linalg": every LAPACK binding numba lowers (solve, inv, det, cholesky, eigh), their values
# (their gradients run native in tests/test_jit_native_lowerings.py), or "small": the gradient of a
# tanh; argv[3], if given, sets fg.config.jit_compiler
PROGRAM = """
import json, sys, warnings
warnings.simplefilter("always")
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
n = 4
a = np.linspace(-1.0, 1.5, n * n).reshape(n, n)
a = a @ a.T + n * np.eye(n)
def linalg(a):
    return (fnp.sum(fnp.linalg.solve(a, fnp.arange(4.0))) + fnp.linalg.det(a) + fnp.sum(fnp.linalg.inv(a))
            + fnp.sum(fnp.linalg.cholesky(a) ** 2) + fnp.sum(fnp.linalg.eigh(a)[0] ** 2))
def small(a):
    return fnp.sum(fnp.tanh(a) * a)
f = {"linalg": linalg, "small": fg.grad(small)}[sys.argv[2]]
if len(sys.argv) > 3:
    fg.config.jit_compiler = sys.argv[3]  # (over the environment's FUNCGRAD_JIT_COMPILER)
g = fg.jit(f, backend="native")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if sys.argv[1] == "background":
        g(a)
        tier = next(iter(g.cache.values())).staged.tier
        tier.done.wait(600)
        state = tier.state
    else:
        state = g.lower(a).compile().backend
mods = [m for n, m in sys.modules.items() if n.startswith("funcgrad_native_")]
print(json.dumps({"state": state, "modules": len(mods),
                  "hits": sum(len(m.segment.stats.cache_hits) for m in mods),
                  "misses": sum(len(m.segment.stats.cache_misses) for m in mods),
                  "uncached": [str(w.message) for w in caught if "Cannot cache" in str(w.message)],
                  "result": np.asarray(g(a)).ravel().tolist(), "replay": np.asarray(f(a)).ravel().tolist()}))
"""


def _python(code: str, *argv: str, env: dict[str, str] | None = None) -> str:
    full = dict(os.environ, **(env or {}))
    out = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=full, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _program_job(name: str, test: str, *argv: str, compiler: str = "process",
                 after: background_checks.Job | None = None) -> background_checks.Job:
    """PROGRAM run as one process with its own kernel cache (the job's folder; with ``after``,
    that job's, which runs first), started with the session and run beside the other tests
    (tests/background_checks.py)."""
    return background_checks.register(
        name, lambda folder: [sys.executable, "-c", PROGRAM, *argv], cwd=ROOT, timeout=600, after=after,
        env=lambda folder: {"FUNCGRAD_CACHE_DIR": str(folder / "kernels"), "FUNCGRAD_JIT_COMPILER": compiler},
        wanted_by=[(__file__, test)] if native.available() else [])


def _program_output(job: background_checks.Job, background: background_checks.Runner) -> dict:
    proc = background.result(job).process
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


LOADS = "test_the_worker_process_compiles_and_this_process_loads_from_the_cache_then_a_new_process_compiles_nothing"
LINALG_FIRST = _program_job("compiler: linalg in the worker", LOADS, "background", "linalg")
LINALG_AGAIN = _program_job("compiler: linalg again", LOADS, "block", "linalg", after=LINALG_FIRST)
THREAD = "test_compiling_on_a_thread_writes_every_module_to_the_cache"
# fg.config.jit_compiler = "thread" set in the script wins over the environment's "process"
SMALL_FIRST = _program_job("compiler: small on a thread", THREAD, "background", "small", "thread")
SMALL_AGAIN = _program_job("compiler: small again", THREAD, "block", "small", compiler="thread", after=SMALL_FIRST)


def test_the_worker_process_compiles_and_this_process_loads_from_the_cache_then_a_new_process_compiles_nothing(
        background):
    """Every linalg module the worker compiles reaches the cache: this process and a new one load
    them all (no miss, no "Cannot cache" warning)."""
    first = _program_output(LINALG_FIRST, background)
    assert first["state"] == "native"
    assert first["uncached"] == []
    # numba compiled in the worker: this process only loaded the machine code the worker cached
    assert first["modules"] >= 1 and first["misses"] == 0 and first["hits"] == first["modules"]
    again = _program_output(LINALG_AGAIN, background)  # a new process, the same cache: no compile
    assert again["state"] == "native" and again["misses"] == 0 and again["hits"] == again["modules"] == first["modules"]
    for run in (first, again):
        assert_equal_results(run)


def test_compiling_on_a_thread_writes_every_module_to_the_cache(background):
    # fg.config.jit_compiler = "thread" set in the script wins over the environment's "process":
    # numba compiled in this process (cache misses here), not in a worker. (That the linalg modules
    # reach the cache is the test above: the same module text, cached by numba the same way.)
    first = _program_output(SMALL_FIRST, background)
    assert first["state"] == "native" and first["uncached"] == [] and first["misses"] == first["modules"] >= 1
    # a new process compiling on its own thread (FUNCGRAD_JIT_COMPILER=thread) loads them from the disk
    again = _program_output(SMALL_AGAIN, background)
    assert again["misses"] == 0 and again["hits"] == again["modules"] == first["modules"]
    for run in (first, again):
        assert_equal_results(run)


def assert_equal_results(run: dict) -> None:
    assert len(run["result"]) == len(run["replay"]) >= 1
    assert all(abs(x - y) <= 1e-12 * max(1.0, abs(y)) for x, y in zip(run["result"], run["replay"]))


EXIT = """
import os, time
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from funcgrad.jit import tiered
def f(y):
    for _ in range(30):
        y = fnp.tanh(fnp.sin(y)) * 1.5 + fnp.exp(-y * y)
    return fnp.sum(y)
g = fg.jit(fg.grad(f), backend="native")
g(np.ones(3))
tier = next(iter(g.cache.values())).staged.tier
while tiered._compiler_process is None or tiered._compiler_process._proc is None:
    time.sleep(0.01)
print(tiered._compiler_process._proc.pid, flush=True)
"""


def test_an_exit_during_a_compile_kills_the_worker_process(tmp_path):
    out = _python(EXIT, env={"FUNCGRAD_CACHE_DIR": str(tmp_path / "kernels"), "FUNCGRAD_JIT_COMPILER": "process"})
    pid = int(out.split()[-1])
    with pytest.raises(ProcessLookupError):  # (killed and reaped by the exit hook)
        os.kill(pid, 0)


def test_the_worker_reports_what_failed(tmp_path):
    path = tmp_path / "funcgrad_native_test_worker.py"
    path.write_text("import numpy as np\nimport numba\n\n\n@numba.njit(cache=True)\ndef segment(x):\n"
                    "    return x * 2.0\n")
    worker = CompileWorker()
    try:
        worker.compile(str(path), "funcgrad_native_test_worker", "segment", "(numba.float64,)")
        assert list((tmp_path / "__pycache__").glob("funcgrad_native_test_worker.segment-*.nbi"))
        with pytest.raises(RuntimeError, match="compiler process failed: .*AttributeError"):
            worker.compile(str(path), "funcgrad_native_test_worker", "no_such_function", "(numba.float64,)")
    finally:
        worker.close()
    with pytest.raises(RuntimeError, match="stopped"):
        worker.compile(str(path), "funcgrad_native_test_worker", "segment", "(numba.float64,)")
