"""The benchmark harness must not rot: every workload runs at smoke sizes
(tiny arrays, one sample), its libraries agree, its targets get evaluated.

No timing is ever asserted here: the numbers of a smoke run mean nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/ is not installed

from benchmarks import run  # noqa: E402
from benchmarks.workloads import NAMES, Context, Entry, Table, Target, build  # noqa: E402


def _smoke(tmp_path, *names, peers="none"):
    args = ["--smoke", "--peers", peers, "--json", str(tmp_path / "out.json"), "--markdown", str(tmp_path / "out.md")]
    for n in names:
        args += ["--only", n]
    return run.main(args)


def _timed_rows(result):
    return {n: r for n, r in result["rows"].items() if "median" in r}


def test_per_op_smoke_runs_checks_and_reports(tmp_path, capsys):
    report = _smoke(tmp_path, "per_op")
    (res,) = report["results"]
    rows = res["rows"]
    for name in ("numpy forward", "numpy hand fwd+bwd", "funcgrad grad", "funcgrad jvp", "funcgrad.tensor backward"):
        assert "median" in rows[name], (name, rows[name])
        assert rows[name]["median"] > 0
    # gradients were compared with the hand-written one before timing
    assert rows["funcgrad grad"]["checked"] and rows["funcgrad grad"]["error"] < 1e-9
    assert rows["funcgrad jvp"]["error"] < 1e-9
    assert rows["funcgrad grad"]["ratios"]["x numpy hand fwd+bwd"] > 0
    labels = {t["label"]: t for t in res["targets"]}
    assert "ratio" in labels["(a) grad <= 2.5x hand NumPy fwd+bwd"]
    # the files were written and hold the same run
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["results"][0]["name"] == "per_op"
    assert data["mode"] == "smoke" and "blas" in data["environment"]["machine"]
    md = (tmp_path / "out.md").read_text()
    assert "| funcgrad grad |" in md and "### Targets" in md
    out = capsys.readouterr().out
    assert "target (a) grad" in out


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("per_op", "memory")])
def test_every_workload_agrees_at_smoke_size(name, tmp_path):
    report = _smoke(tmp_path, name)
    for res in report["results"]:
        funcgrad_rows = [n for n in res["rows"] if n.startswith("funcgrad")]
        assert funcgrad_rows
        for n in funcgrad_rows:
            row = res["rows"][n]
            assert "median" in row, (res["name"], n, row.get("status"))
        for t in res["targets"]:
            assert t["status"] != "not measured" or "torch" in t["why"], t


def test_memory_smoke_in_process(tmp_path):
    report = _smoke(tmp_path, "memory")
    peak, leak = report["results"]
    rows = peak["rows"]
    tape = rows["minimal tape (the tanh outputs)"]["value"]
    assert tape == pytest.approx(6 * 2000 * 8 / 1e6)
    fwd = rows["numpy forward (no tape)"]["value"]
    grad = rows["funcgrad grad"]["value"]
    # a gradient tape holds at least the tanh outputs; the forward pass holds a few arrays
    assert grad >= 0.99 * tape > fwd > 0
    assert {t["label"]: t for t in peak["targets"]}["(g) grad peak <= 1.05x the minimal tape"]["ratio"] > 0
    assert "growth" in str(leak["targets"][0]) and "ratio" in leak["targets"][0]


def test_memprobe_gradients_agree():
    from benchmarks.memprobe import make_call

    import funcgrad as fg

    x = np.linspace(-1.0, 1.0, 7)
    want = fg.grad(make_call("funcgrad", "forward", 4))(x)
    np.testing.assert_allclose(make_call("numpy", "hand", 4)(x.copy()), want, rtol=1e-12)
    want7 = fg.grad(make_call("funcgrad", "forward", 7))(x)
    np.testing.assert_allclose(make_call("funcgrad", "grad-ckpt-5", 7)(x), want7, rtol=1e-12)
    np.testing.assert_allclose(make_call("funcgrad", "grad-ckpt-layer", 7)(x), want7, rtol=1e-12)


def test_a_row_that_disagrees_is_reported_and_not_timed():
    ref = np.arange(3.0)
    table = Table("fake", "fake table", [
        Entry("numpy right", lambda: ref.copy(), check=lambda g: g),
        Entry("funcgrad wrong", lambda: ref + 1e-3, check=lambda g: g),
        Entry("peer broken", lambda: 1 / 0, check=lambda g: g),
    ], reference=ref, rtol=1e-9, baselines=("numpy right",),
        targets=[Target("fake target", "funcgrad wrong", ("numpy right",), 1.0)])
    res = run.run_table(table, Context(smoke=True), log=lambda *a: None)
    assert "median" in res["rows"]["numpy right"]
    assert res["rows"]["funcgrad wrong"]["status"].startswith("DISAGREES")
    assert "median" not in res["rows"]["funcgrad wrong"]
    assert res["rows"]["peer broken"]["status"].startswith("failed: ZeroDivisionError")
    assert res["targets"][0]["status"] == "not measured"


def test_target_evaluation():
    t = Target("x", "a", ("b", "c"), 2.0)
    r = t.evaluate({"a": 3.0, "b": 2.0, "c": 1.0})  # against the fastest of b, c
    assert r["against"] == "c" and r["ratio"] == 3.0 and not r["met"] and r["status"] == "missed by 1.50x"
    assert t.evaluate({"a": 1.0, "b": 1.0})["met"]


def test_disagreement_measure():
    assert run.disagreement([np.ones(3), (2.0,)], [np.ones(3), (2.0,)]) == 0.0
    assert run.disagreement(np.ones(3), np.ones(4)) == float("inf")
    assert run.disagreement(np.array([np.nan]), np.array([1.0])) == float("inf")
    assert run.disagreement(np.array([1.0, 2.001]), np.array([1.0, 2.0])) == pytest.approx(5e-4)


@pytest.mark.skipif(not any(importlib.util.find_spec(p) for p in ("autograd", "torch", "jax")),
                    reason="no peer library installed")
def test_peers_agree_at_smoke_size(tmp_path):
    report = _smoke(tmp_path, "per_op", peers="autograd,torch,jax")
    rows = report["results"][0]["rows"]
    peer_rows = [n for n in rows if not n.startswith(("numpy", "funcgrad"))]
    assert peer_rows
    for n in peer_rows:
        assert "median" in rows[n], (n, rows[n].get("status"))


def test_build_accepts_every_name():
    assert set(NAMES) >= {"per_op", "mlp32", "mlp64", "elementwise", "hessian", "jacobian", "nested", "memory",
                          "per_example"}
    assert [t.name for t in build("hessian", Context(smoke=True))] == ["hessian6", "hvp"]


# --------------------------------------------------------------------------- --threads

def test_threads_mode_is_read_from_the_command_line_before_imports():
    from benchmarks.threads import mode_from_argv

    assert mode_from_argv([]) == "one"
    assert mode_from_argv(["--quick", "--threads", "both"]) == "both"
    assert mode_from_argv(["--threads=default"]) == "default"
    assert mode_from_argv(["--threads", "many"]) == "one"  # argparse names the choices later
    assert mode_from_argv(["--threads"]) == "one"


class _RefuseImport:
    """A ``sys.meta_path`` finder that makes ``name`` look uninstalled."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ImportError(f"{fullname} hidden by the test")
        return None


def test_threads_mode_refusals_name_the_way_out(monkeypatch, capsys):
    for argv, words in ((["--threads", "both", "--peers", "jax"], ("XLA_FLAGS", "--peers without jax")),
                        (["--threads", "default", "--clock", "cpu"], ("wall clock", "drop --clock cpu")),
                        (["--threads", "many"], ("invalid choice", "'both'"))):
        with pytest.raises(SystemExit):
            run.main(["--smoke", "--only", "per_op"] + argv)
        err = capsys.readouterr().err
        assert all(w in err for w in words), (argv, err)
    monkeypatch.delitem(sys.modules, "threadpoolctl", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_RefuseImport("threadpoolctl")] + sys.meta_path)
    with pytest.raises(SystemExit):
        run.main(["--smoke", "--only", "per_op", "--peers", "none", "--threads", "both"])
    assert "needs threadpoolctl" in capsys.readouterr().err


def test_threads_both_prints_the_same_rows_at_both_settings(tmp_path, capsys):
    pytest.importorskip("threadpoolctl")  # in CI through scikit-learn ([examples])
    import funcgrad as fg

    jit_threads = fg.config.jit_threads
    report = run.main(["--smoke", "--only", "per_op", "--peers", "none", "--threads", "both",
                       "--markdown", str(tmp_path / "out.md")])
    assert fg.config.jit_threads == jit_threads  # put back after the one-thread pass
    assert report["threads"] == "both" and report["clock"] == "wall"
    one, default, both = report["results"]
    assert (one["threads"], default["threads"], both["threads"]) == ("one", "default", "both")
    assert list(one["rows"]) == list(default["rows"]) == list(both["rows"])
    assert one["targets"] and not default["targets"]  # the targets are for one thread
    assert default["title"].endswith("[default threads]")
    for name, row in both["rows"].items():
        assert row["value"] == pytest.approx(one["rows"][name]["median"] * 1e6)  # per_op's unit is µs
        columns = row["columns"]
        assert columns["default threads (us)"] == pytest.approx(default["rows"][name]["median"] * 1e6)
        assert columns["one / default"] == pytest.approx(one["rows"][name]["median"] / default["rows"][name]["median"])
    out = capsys.readouterr().out
    assert "threads: --threads both; default threads:" in out and "one thread vs default threads" in out
    md = (tmp_path / "out.md").read_text()
    assert "- threads: --threads both" in md and "| one thread (us) | default threads (us) | one / default |" in md


def test_threads_default_pins_nothing(monkeypatch):
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "FUNCGRAD_JIT_THREADS"):
        monkeypatch.delenv(key, raising=False)
    report = run.main(["--smoke", "--only", "per_op", "--peers", "none", "--threads", "default"])
    assert report["threads"] == "default" and report["clock"] == "wall"
    assert report["environment"]["threads"].startswith("default threads:")
    assert [r["threads"] for r in report["results"]] == ["default"]
    assert "OMP_NUM_THREADS" not in os.environ and "OPENBLAS_NUM_THREADS" not in os.environ
