"""Tiered execution: the NumPy replay at once, native code when it is ready.

A :class:`Tiered` program runs the replay (:mod:`funcgrad.jit.numpy_replay`) from its
first call, so nobody waits for the compiler. With the native tier on
(``fg.config.jit_backend``: ``"auto"`` after ``fg.config.jit_native_after`` calls,
``"native"`` at once) the native version (:mod:`funcgrad.jit.native`) is compiled on
one background thread and swapped in when ready: every holder of the program's
``run`` (registered with :meth:`Tiered.hold`) gets the new function. With
``"auto"`` the next calls alternate between the two (:data:`TRIALS` each, timed)
and the faster stays: native code loses to NumPy's SIMD loops on large arrays of
transcendental functions, say. ``"native"`` keeps the native code. With
``"numpy"``, or without numba, ``run`` is the replay and nothing else happens.
A program on device arrays (CuPy) gets CUDA kernels for its elementwise regions
(:mod:`funcgrad.jit.cuda`) the same way, without the timed trials.

Example::

    tier = Tiered(prog, "f", backend="native")
    tier.wait()               # block until native code is in use (or known impossible)
    tier.run(*inputs)
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
from typing import Any, Callable

import numpy as np

from ..core import trace as _trace_module
from .compile_worker import CompileWorker
from .ir import Program
from .numpy_replay import compile_program

__all__ = ["Tiered", "BACKENDS", "COMPILERS", "check_compiler", "TRIALS", "check_backend", "settings", "closing", "stop_compiler"]

BACKENDS = ("auto", "numpy", "native")
TRIALS = 3  # timed calls of each version before "auto" keeps the faster
MARGIN = 1.1  # the replay stays only where native code is slower than this times the replay


def check_backend(value: Any, name: str = "backend") -> str:
    if value not in BACKENDS:
        raise ValueError(f"{name} must be one of {', '.join(repr(b) for b in BACKENDS)} "
                         f"(\"numpy\": the replay only; \"native\": numba-compiled code as soon as it "
                         f"is ready; \"auto\": native for programs called often), got {value!r}")
    return str(value)


COMPILERS = ("process", "thread")


def check_compiler(value: Any, name: str = "compiler") -> str:
    if value not in COMPILERS:
        raise ValueError(f"{name} must be \"process\" (numba compiles in a worker process, killed at exit) "
                         f"or \"thread\" (in this process, on a background thread), got {value!r}")
    return str(value)


class Settings:
    """Read when a program is compiled or called (``fg.config`` sets them)."""

    def __init__(self) -> None:
        import os

        self.backend = check_backend(os.environ.get("FUNCGRAD_JIT_BACKEND", "auto").strip() or "auto",
                                     "FUNCGRAD_JIT_BACKEND")
        self.native_after = 10
        self.native_wait = os.environ.get("FUNCGRAD_JIT_NATIVE_WAIT", "").strip() not in ("", "0")
        self.compiler = check_compiler(os.environ.get("FUNCGRAD_JIT_COMPILER", "process").strip() or "process",
                                       "FUNCGRAD_JIT_COMPILER")


settings = Settings()

# -- the background compiler: one daemon thread, stopped before the interpreter finalizes ------
#
# A compile left running at exit would be cut off inside numba/LLVM while the main thread tears
# the interpreter down: numba's exit handlers shut its runtime down, weakref finalizers run, and
# exit() runs LLVM's static destructors under the compiling thread. So the first job registers
# an exit hook (and registers it again once numba is imported, so that it runs before numba's own
# exit handlers) that drops the jobs not started, kills the compiler process (settings.compiler
# "process": numba compiles there, the thread here only waits on it and then loads the machine
# code from the disk cache, a matter of milliseconds) and joins the thread. With "thread" the
# compile runs on the thread itself, and the hook lets it finish its current segment (the compile
# checks :func:`closing` between segments): a process ending mid-compile waits for it.

_jobs: "queue.Queue[Tiered | None]" = queue.Queue()
_worker: threading.Thread | None = None
_worker_lock = threading.Lock()
_closing = threading.Event()
_compiler_process: CompileWorker | None = None
EXIT_JOIN_SECONDS = 120.0  # the longest the exit hook waits for the compile under way


def closing() -> bool:
    """Is the process exiting (the background compiler told to stop)?"""
    return _closing.is_set()


def _work() -> None:
    from . import native

    _compiler_worker()  # started before numba is imported here
    native.available()  # numba imported here, off the caller's thread, then:
    atexit.unregister(stop_compiler)
    atexit.register(stop_compiler)  # above numba's exit handlers: runs before them
    while True:
        tier = _jobs.get()
        if tier is None:
            return
        if _closing.is_set():
            tier._finish("replay only: the process is exiting")
        else:
            tier._compile(_compiler_worker())


def _compiler_worker() -> CompileWorker | None:
    """The compiler process where ``settings.compiler`` is ``"process"`` (started at the first
    compile that wants it: ``fg.config.jit_compiler`` may change between compiles), else None."""
    global _compiler_process
    if settings.compiler != "process":
        return None
    with _worker_lock:
        if _compiler_process is None and not _closing.is_set():
            _compiler_process = CompileWorker()
        return _compiler_process


def _submit(tier: "Tiered") -> None:
    global _worker
    with _worker_lock:
        if _closing.is_set():
            tier._finish("replay only: the process is exiting")
            return
        if _worker is None or not _worker.is_alive():
            atexit.register(stop_compiler)
            _worker = threading.Thread(target=_work, name="funcgrad-native-compiler", daemon=True)
            _worker.start()
    _jobs.put(tier)


def stop_compiler(timeout: float | None = None) -> None:
    """Stop the background compiler: drop the programs not started, kill the compiler process
    (the program under way keeps the replay) or, compiling on the thread, let the program under
    way finish its current segment, and join the thread (at most ``timeout`` seconds, default
    :data:`EXIT_JOIN_SECONDS`). Run at exit; programs requested after it keep the replay."""
    with _worker_lock:
        _closing.set()
        worker = _worker
        if _compiler_process is not None:
            _compiler_process.close()
    while True:
        try:
            tier = _jobs.get_nowait()
        except queue.Empty:
            break
        if tier is not None:
            tier._finish("replay only: the process is exiting")
    _jobs.put(None)
    if worker is not None and worker is not threading.current_thread():
        worker.join(EXIT_JOIN_SECONDS if timeout is None else timeout)


class Tiered:
    """A program's replay and, when compiled, its native version (see the module docstring)."""

    def __init__(self, program: Program, name: str, backend: str | None = None) -> None:
        self.program = program
        self.name = name
        self.replay = compile_program(program, name=name)
        self.backend = check_backend(backend if backend is not None else settings.backend)
        self.native: Callable[..., Any] | None = None
        self.state = "replay"  # -> "queued" -> "native" | "replay only: <why>"
        self.lowered = self.left = 0
        self.compile_seconds = 0.0
        self.done = threading.Event()
        self.holders: list[Any] = []
        self.calls = 0
        self.fallbacks = 0  # calls the native code handed to the replay (arguments of another kind)
        self.run: Callable[..., Any] = self.replay
        self.device = False  # a program on device arrays (compiled to CUDA kernels, not numba)
        if self.backend == "numpy" or not program.eqns:
            self._finish("replay only: backend 'numpy'" if self.backend == "numpy" else "replay only: no equations")
            return
        if hasattr(self.replay, "array_version"):  # Python-float code: faster than a compiled call
            self._finish("replay only: a program of float scalars runs as Python-float code")
            return
        from . import cuda, native

        # a device program: its elementwise regions as CUDA kernels (funcgrad.jit.cuda), not numba
        self.device = cuda.device_kind(program) is not None
        if self.device and cuda.kernel_namespace(program) is None:
            self._finish("replay only: the device's array namespace has no ElementwiseKernel")
            return
        if not self.device and not native.installed():  # (numba is imported where the compiling happens)
            self._finish("replay only: " + native.status())
            return
        if self.backend == "native" and settings.native_wait:
            self._compile()
        elif self.backend == "native":
            self.request()
        else:
            self.run = self._counting()

    def _counting(self) -> Callable[..., Any]:
        """The replay, counting calls until the native version is worth compiling ("auto")."""
        replay = self.replay

        def counting(*args: Any) -> Any:
            self.calls += 1
            if self.calls >= settings.native_after and self.state == "replay":
                self._swap(replay)
                self.request()
            return replay(*args)
        counting.source = getattr(replay, "source", "")  # type: ignore[attr-defined]
        return counting

    def hold(self, holder: Any) -> None:
        """Keep ``holder.run`` equal to this program's current function."""
        self.holders.append(holder)
        holder.run = self.run

    def _swap(self, fn: Callable[..., Any]) -> None:
        self.run = fn
        for h in self.holders:
            h.run = fn

    def _finish(self, state: str) -> None:
        self.state = state
        self.done.set()

    def request(self) -> None:
        """Compile the native version on the background thread (once)."""
        if self.state == "replay":
            self.state = "queued"
            _submit(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Compile now (on this thread) unless already under way, and block until native code is
        in use or known impossible; True when native code runs."""
        if self.state == "replay":
            self.state = "queued"
            self._compile()
        self.done.wait(timeout)
        return self.state == "native"

    def _compile(self, worker: CompileWorker | None = None) -> None:
        from . import cuda, native

        start = time.perf_counter()
        try:
            if self.device:
                made = cuda.cuda_program(self.program)
            else:
                made = native.native_program(self.program, stop=closing, worker=worker)
            if made is None:
                self._finish("replay only: no equation lowers" if not self.device else
                             "replay only: no elementwise region of two equations or more on the device")
                return
            prog, self.lowered, self.left = made
            compiled = compile_program(prog, name=self.name, debug_version=self.replay)
            fn = self._falling_back(compiled)
        except Exception as exc:  # noqa: BLE001 - the replay stays, and says why on request
            self._finish(f"replay only: native compilation failed ({type(exc).__name__}: {exc})")
            return
        finally:
            self.compile_seconds = time.perf_counter() - start
        self.native = fn
        # (device work is asynchronous: host timings would not say which is faster; fusing is)
        self._swap(fn if self.backend == "native" or self.device else self._trial(fn))
        self._finish("native")

    def _falling_back(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """``compiled``, or the replay for arguments its kernels were not compiled for (numba
        raises TypeError for them: a value of another kind than the one traced, say a 0-d array
        for a float), for calls whose complex results are not finite (the native code raises
        FloatingPointError there, or numba's ZeroDivisionError: NaN and inf are NumPy's,
        :mod:`funcgrad.jit.native_complex`) and for calls whose LAPACK work numba refuses (a
        singular matrix, one with NaN or inf: numba raises LinAlgError with its own words where
        NumPy raises its own or returns NaN), counted in :attr:`fallbacks`."""
        replay = self.replay

        def run(*args: Any) -> Any:
            try:
                return compiled(*args)
            except TypeError:
                self.fallbacks += 1
                return replay(*args)
            except (ArithmeticError, np.linalg.LinAlgError):
                if _trace_module.result_hook is not None:
                    raise  # (fg.debug_nans: the checked replay ran, and named the primitive)
                self.fallbacks += 1
                return replay(*args)
        run.source = getattr(compiled, "source", "")  # type: ignore[attr-defined]
        return run

    def _trial(self, native: Callable[..., Any]) -> Callable[..., Any]:
        """Alternate native code and replay, timing each call; after :data:`TRIALS` of each,
        keep the native code unless it was slower than :data:`MARGIN` times the replay."""
        replay = self.replay
        times: dict[bool, list[float]] = {True: [], False: []}

        def trial(*args: Any) -> Any:
            use_native = len(times[True]) <= len(times[False])
            start = time.perf_counter()
            out = (native if use_native else replay)(*args)
            times[use_native].append(time.perf_counter() - start)
            if len(times[False]) >= TRIALS and self.run is trial:
                fast, slow = min(times[True]), min(times[False])
                if fast > MARGIN * slow:
                    self.native = None
                    self._swap(replay)
                    self.state = (f"replay only: faster than the native code here "
                                  f"({slow * 1e6:.3g} us against {fast * 1e6:.3g} us a call)")
                else:
                    self._swap(native)
            return out
        trial.source = getattr(native, "source", "")  # type: ignore[attr-defined]
        return trial
