"""tests/background_checks.py: the slow subprocess checks (docs site, mypy, examples) that run
beside the other tests give their tests the same process results as a call inside the test."""

from __future__ import annotations

import shutil
import sys
import time

import background_checks
import pytest
from background_checks import Job, Runner, wanted_in_order


def _job(name, code, wanted=(), timeout=60.0):
    return Job(name, lambda folder: [sys.executable, "-c", code, str(folder)],
               frozenset((__file__, test) for test in wanted), timeout=timeout)


@pytest.fixture
def runner(tmp_path):
    made = []

    def make_folder(name):
        folder = tmp_path / f"{len(made)}-{name.replace(' ', '-')}"
        folder.mkdir()
        made.append(folder)
        return folder

    r = Runner(make_folder)
    yield r
    r.stop()


def test_started_jobs_hand_over_their_output_folder_and_exit_status(runner):
    write = _job("writes", "import sys, pathlib; pathlib.Path(sys.argv[1], 'out').write_text('x'); print('done')")
    fail = _job("fails", "import sys; sys.stderr.write('bad input'); sys.exit(3)")
    runner.start([write, fail])
    done = runner.result(fail)
    assert done.process.returncode == 3 and "bad input" in done.process.stderr
    done = runner.result(write)
    assert done.process.returncode == 0 and done.process.stdout == "done\n"
    assert (done.folder / "out").read_text() == "x"
    assert runner.result(write) is done  # (one run, read by every test that wants it)


def test_a_job_not_started_runs_in_the_test_that_asks(runner):
    job = _job("later", "print(41 + 1)")
    runner.start([])
    assert runner.result(job).process.stdout == "42\n"


def test_jobs_run_in_the_order_their_first_test_comes():
    a = _job("a", "", wanted=["test_two", "test_three"])
    b = _job("b", "", wanted=["test_one"])
    c = _job("c", "", wanted=["test_nobody_runs"])
    every = Job("every", lambda folder: [], frozenset({(__file__, "*")}))
    order = wanted_in_order([a, b, c, every], [(__file__, "test_one"), (__file__, "test_two"),
                                                ("other_file.py", "test_two")])
    assert order == [b, every, a]


def test_a_job_past_its_time_says_so(runner):
    job = _job("sleeps", "import time; time.sleep(30)", timeout=0.5)
    runner.start([job])
    with pytest.raises(RuntimeError, match=r"'sleeps' ran past its 0 s|'sleeps' ran past its 1 s"):
        runner.result(job)


def test_stopping_kills_the_job_under_way_and_fails_the_rest(runner):
    slow = _job("slow", "import time; time.sleep(30)")
    after = _job("after", "print(1)")
    runner.start([slow, after])
    time.sleep(0.3)
    started = time.monotonic()
    runner.stop()
    assert time.monotonic() - started < 10
    with pytest.raises(RuntimeError, match="stopped with the session"):
        runner.result(after)


def test_a_name_registered_for_other_tests_is_refused():
    job = background_checks.register("test_background_checks job", lambda folder: [],
                                     wanted_by=[(__file__, "test_x")])
    try:
        assert background_checks.register("test_background_checks job", lambda folder: [],
                                          wanted_by=[(__file__, "test_x")]) is job
        with pytest.raises(ValueError, match="already registered, for other tests"):
            background_checks.register("test_background_checks job", lambda folder: [],
                                       wanted_by=[(__file__, "test_y")])
    finally:
        background_checks.JOBS.remove(job)


def test_jobs_on_the_thread_take_only_the_cpu_the_tests_leave(runner):
    import os

    if shutil.which("nice") is None:
        pytest.skip("no nice(1) here")
    code = "import os; print(os.nice(0))"
    on_thread, in_test = _job("nice", code), _job("not nice", code)
    runner.start([on_thread])
    assert int(runner.result(on_thread).process.stdout) == 19
    assert int(runner.result(in_test).process.stdout) == os.nice(0)


def test_a_queued_job_a_test_asks_for_runs_in_the_test_and_only_there(runner, tmp_path):
    import os

    runs, go = tmp_path / "runs", tmp_path / "go"
    first = _job("first", f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)")  # (holds the queue)
    queued = _job("queued", f"import os; open({str(runs)!r}, 'a').write('run\\n'); print(os.nice(0))")
    runner.start([first, queued])
    assert int(runner.result(queued).process.stdout) == os.nice(0)  # (not nice 19: the test's own priority)
    go.write_text("")
    runner.result(first)
    runner.stop()
    assert runs.read_text() == "run\n"
