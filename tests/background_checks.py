"""Slow subprocess checks that start with the session and run beside the other tests.

CI has two cores and the suite keeps one of them busy. The slow checks that are each one
subprocess whose command is known before any test runs (the docs site's build, mypy over the
package, the example scripts) are registered here by their test modules at import, and the
session fixture in tests/conftest.py starts those the selected tests want, one at a time, in
the order the tests will ask for them: they run on the otherwise idle core while the
in-process tests run. A test takes its job's result with :meth:`Runner.result`, which waits
for the job if it is running; a job not begun (still queued, its tests deselected when the
session began, or ``FUNCGRAD_TEST_BACKGROUND=0``) runs then, inside the first test that asks
for it, as a plain subprocess call would.
Only *when* the command runs moves: the command, its environment and the test's assertions
are the test's own.

Example (in a test module)::

    BUILD = background_checks.register(
        "docs site", lambda folder: [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(folder)],
        wanted_by=[(__file__, "test_every_page_is_built")])

    def test_every_page_is_built(background):
        done = background.result(BUILD)       # a Finished: the process and its folder
        assert done.process.returncode == 0, done.process.stderr
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["JOBS", "Finished", "Job", "Runner", "register", "wanted_in_order"]


@dataclass(eq=False)
class Job:
    """One subprocess check: ``command(folder)`` gives its argv (``folder`` is an empty
    temporary folder of its own, or with ``after`` the folder of that job, which runs first),
    run in ``cwd`` with ``env`` (a dict, or a function of the folder giving one) over the
    environment of the moment it starts; ``wanted_by`` names the tests that read it, as (test
    file, test name), the name ``"*"`` standing for every test of the file."""

    name: str
    command: Callable[[pathlib.Path], Sequence[str]]
    wanted_by: frozenset[tuple[str, str]]
    cwd: pathlib.Path | None = None
    env: dict[str, str] | Callable[[pathlib.Path], dict[str, str]] = field(default_factory=dict)
    timeout: float = 600.0
    after: Job | None = None


@dataclass
class Finished:
    """A job's completed process (``stdout``/``stderr`` as text) and its folder."""

    process: subprocess.CompletedProcess[str]
    folder: pathlib.Path


#: Every registered job, in registration order.
JOBS: list[Job] = []


def register(name: str, command: Callable[[pathlib.Path], Sequence[str]], *,
             wanted_by: Iterable[tuple[str, str]], cwd: pathlib.Path | None = None,
             env: dict[str, str] | Callable[[pathlib.Path], dict[str, str]] | None = None, timeout: float = 600.0,
             after: Job | None = None) -> Job:
    """Declare a job (at a test module's import); see the module's docstring."""
    wanted = frozenset((str(pathlib.Path(path).resolve()), test) for path, test in wanted_by)
    for job in JOBS:
        if job.name == name:
            if job.wanted_by != wanted:  # (the same module imported twice registers the same job)
                raise ValueError(f"a background check named {name!r} is already registered, for other tests")
            return job
    job = Job(name, command, wanted, cwd, env if callable(env) else dict(env or {}), timeout, after)
    JOBS.append(job)
    return job


class Runner:
    """Runs the session's jobs one after another on a thread; :meth:`result` hands them out.
    The jobs started on the thread run at the lowest scheduling priority (nice 19): they take
    only the CPU the tests leave (NumPy's BLAS threads in the tests' process, the native
    tier's compiler process), never slow the tests down."""

    def __init__(self, make_folder: Callable[[str], pathlib.Path]) -> None:
        self._make_folder = make_folder
        self._lock = threading.Lock()
        self._done: dict[int, Finished] = {}
        self._events: dict[int, threading.Event] = {}
        self._errors: dict[int, BaseException] = {}
        self._running: set[subprocess.Popen[str]] = set()
        self._claimed: set[int] = set()  # (the jobs begun, on the thread or in a test)
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self, jobs: Sequence[Job]) -> None:
        """Run ``jobs`` in this order on a background thread (the first one begun at once: a test
        asking for it waits)."""
        jobs = list(jobs)
        with self._lock:
            for job in jobs:
                self._events.setdefault(id(job), threading.Event())
            if jobs:
                self._claimed.add(id(jobs[0]))
        self._thread = threading.Thread(target=self._run_all, args=(jobs,), name="background-checks", daemon=True)
        self._thread.start()

    def _run_all(self, jobs: list[Job]) -> None:
        for n, job in enumerate(jobs):
            with self._lock:
                if n > 0 and id(job) in self._claimed:  # (a test asked for it first and runs it)
                    continue
                self._claimed.add(id(job))
            if self._stopped:
                self._errors[id(job)] = RuntimeError(f"the background check {job.name!r} was stopped with the session")
                self._events[id(job)].set()
                continue
            try:
                self._done[id(job)] = self._run(job, lowest_priority=True)
            except Exception as exc:  # noqa: BLE001  (handed to the test that reads the job)
                self._errors[id(job)] = exc
            finally:
                self._events[id(job)].set()

    def _run(self, job: Job, lowest_priority: bool = False) -> Finished:
        folder = self.result(job.after).folder if job.after is not None else self._make_folder(job.name)
        env = dict(os.environ, **(job.env(folder) if callable(job.env) else job.env))
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"the background check {job.name!r} was stopped with the session")
            argv = list(job.command(folder))
            nice = shutil.which("nice") if lowest_priority else None
            if nice is not None:  # (the processes it starts inherit the setting)
                argv = [nice, "-n", "19", *argv]
            proc = subprocess.Popen(argv, cwd=job.cwd, env=env, text=True, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=job.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise RuntimeError(f"the background check {job.name!r} ran past its {job.timeout:.0f} s:\n"
                               f"{out[-3000:]}\n{err[-3000:]}") from None
        finally:
            with self._lock:
                self._running.discard(proc)
        return Finished(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), folder)

    def result(self, job: Job) -> Finished:
        """``job``'s result: waits for it if it is running on the thread, else (not started, or
        still queued) runs it now, at the test's priority (once: a later call hands out the same
        result)."""
        with self._lock:
            event = self._events.setdefault(id(job), threading.Event())
            run_here = id(job) not in self._claimed
            self._claimed.add(id(job))
        if run_here:
            try:
                self._done[id(job)] = self._run(job)
            except Exception as exc:  # noqa: BLE001  (raised below, and to a later call)
                self._errors[id(job)] = exc
            finally:
                event.set()
        event.wait()
        if id(job) in self._errors:
            raise self._errors[id(job)]
        return self._done[id(job)]

    def stop(self) -> None:
        """Kill the job under way (at the end of the session) and start no other."""
        with self._lock:
            self._stopped = True
            for proc in self._running:
                if proc.poll() is None:
                    proc.kill()
        if self._thread is not None:
            self._thread.join(30.0)


def wanted_in_order(jobs: Sequence[Job], tests: Iterable[tuple[str, str]]) -> list[Job]:
    """The jobs some of ``tests`` (as (test file, test name), in run order) want, in the order of
    the first test wanting each (a job's ``after`` job just before it, if not already earlier)."""
    first: dict[int, int] = {}
    for position, (path, name) in enumerate(tests):
        file = str(pathlib.Path(path).resolve())
        for job in jobs:
            if (file, name) in job.wanted_by or (file, "*") in job.wanted_by:
                first.setdefault(id(job), position)
    order: list[Job] = []

    def add(job: Job) -> None:
        if job.after is not None:
            add(job.after)
        if job not in order:
            order.append(job)

    for job in sorted((job for job in jobs if id(job) in first), key=lambda job: first[id(job)]):
        add(job)
    return order
