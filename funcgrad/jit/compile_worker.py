"""The native tier's compiler process: numba compiles kernel modules there, the caller loads them
from the disk cache.

Compiling in another process keeps numba's front end (pure Python, hours of GIL in a long
session) off the caller's interpreter, and a process that exits while a compile is under way
simply kills the worker: nothing of numba or LLVM is running in the exiting process (the
"Operand is null" exit crash class of a compile thread cut off at exit). The worker is a plain
``python -c`` child (no ``multiprocessing``: its spawn would run the user's main script again)
that imports numba, not funcgrad. It reads one job a line on stdin (JSON: the module's path and
name, the function and its signature as a numba type expression), imports the module, compiles
the function for the signature (``cache=True`` writes the machine code next to the module) and
answers one line: ``ok`` or the error.

Example::

    worker = CompileWorker()
    worker.compile(path, "funcgrad_native_ab12", "segment", "(numba.float64,)")  # the cache now has it
    worker.close()
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

__all__ = ["CompileWorker", "WorkerGone", "WORKER_SOURCE"]

#: What the worker process runs (``python -c``): no funcgrad import, only numba's.
WORKER_SOURCE = r"""
import importlib.util, json, sys
import numpy as np
import numba
sys.stdout.write("ready\n"); sys.stdout.flush()
for line in sys.stdin:
    job = json.loads(line)
    try:
        spec = importlib.util.spec_from_file_location(job["module"], job["path"])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[job["module"]] = mod
        spec.loader.exec_module(mod)
        getattr(mod, job["function"]).compile(eval(job["signature"], {"numba": numba, "np": np}))
        answer = "ok"
    except BaseException as exc:
        answer = "error " + type(exc).__name__ + ": " + str(exc).replace("\n", " ")[:2000]
    sys.stdout.write(answer + "\n"); sys.stdout.flush()
"""


class WorkerGone(RuntimeError):
    """The worker process ended (killed at exit, or crashed) before answering."""


class CompileWorker:
    """One compiler process, started on first use; :meth:`compile` blocks the calling thread
    (not the GIL: it waits on a pipe) until the module is compiled and cached."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self.closed = False

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ)
        env.setdefault("NUMBA_NUM_THREADS", "1")
        self._proc = proc = subprocess.Popen([sys.executable, "-c", WORKER_SOURCE], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        if self.closed:  # (close() ran before the process was known to it)
            proc.kill()
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            proc.kill()
            raise WorkerGone("the native compiler process did not start (killed at exit, or numba is not "
                             f"importable by {sys.executable})")
        return proc

    def compile(self, path: str, module: str, function: str, signature: str) -> None:
        """Compile ``module``'s (at ``path``) ``function`` for ``signature`` (a Python expression
        over ``numba`` and ``np``, e.g. ``"(numba.float64,)"``) in the worker, which writes the
        machine code to numba's cache beside the module. Raises :class:`WorkerGone` when the
        worker is killed meanwhile, RuntimeError with the worker's message when compiling fails."""
        with self._lock:
            if self.closed:
                raise WorkerGone("the native compiler process was stopped (the process is exiting)")
            proc = self._proc
            if proc is None or proc.poll() is not None:
                proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps({"path": path, "module": module, "function": function,
                                             "signature": signature}) + "\n")
                proc.stdin.flush()
                answer = proc.stdout.readline().strip()
            except (OSError, ValueError) as exc:
                raise WorkerGone(f"the native compiler process ended ({exc})") from None
        if not answer:
            raise WorkerGone("the native compiler process ended before answering")
        if answer != "ok":
            raise RuntimeError(f"the native compiler process failed: {answer[6:] if answer.startswith('error ') else answer}")

    def close(self) -> None:
        """Kill the worker (a compile under way is dropped); later :meth:`compile` calls raise."""
        self.closed = True
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()  # (the thread waiting in compile() reads end of file and raises WorkerGone)
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                pass
        if self._lock.acquire(timeout=5.0):  # (no compile() reading the pipes any more)
            try:
                for pipe in (proc.stdin, proc.stdout):
                    if pipe is not None:
                        try:
                            pipe.close()
                        except OSError:
                            pass
            finally:
                self._lock.release()
