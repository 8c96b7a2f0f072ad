"""Issue 26: every training row of ``benchmarks/workloads/training.py``, this tree beside another, torch eager in each run.

Run: ``git archive <base> | tar -x -C /tmp/before`` (any older tree with ``benchmarks/training_steady.py``),
then ``python benchmarks/training_before_after.py /tmp/before [processes] [rounds] [tables]`` from the repository
root (``[tables]``: a comma-separated subset of ``conv_table,conv2_table,lstm_table,transformer_table``).
The trees take turns, one process at a time (``processes`` each, default 3). Each process builds
the four training tables of its own tree (its own workloads) at the harness's ``--quick`` sizes and
times their rows in steady state as ``benchmarks/training_steady.py`` does (``rounds`` samples of three
consecutive steps per row, rows interleaved, process CPU time, one thread). Printed per table, row and
tree: the median over the processes of each process's median step and of its ratio to torch eager in
that process (the ratio is what to compare: both rows of a process see the same load).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = ("conv_table", "conv2_table", "lstm_table", "transformer_table")


def _one(rounds: int, tables: list[str]) -> None:
    """In a child whose working directory is the tree to measure: print one JSON line of medians (s)."""
    sys.path.insert(0, os.getcwd())
    from benchmarks import peers

    peers.pin_thread_env()
    peers.pin_threads_now()
    from benchmarks.training_steady import steady
    from benchmarks.workloads import Context, training

    out = {}
    for name in tables:
        table = getattr(training, name)(Context(quick=True))
        out[table.name] = {row: statistics.median(s) for row, s in steady(table, rounds).items()}
    print(json.dumps(out))


def main(argv: list[str]) -> None:
    before = os.path.abspath(argv[0])
    processes = int(argv[1]) if len(argv) > 1 else 3
    rounds = argv[2] if len(argv) > 2 else "8"
    tables = argv[3] if len(argv) > 3 else ",".join(TABLES)
    trees = {"before": before, "this": HERE}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {k: [] for k in trees}
    for _ in range(processes):
        for label, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=tree, FUNCGRAD_JIT_BACKEND="numpy")
            res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", rounds, tables], cwd=tree, env=env,
                                 capture_output=True, text=True, check=True)
            runs[label].append(json.loads(res.stdout.strip().splitlines()[-1]))
    for table in runs["this"][0]:
        print(f"== {table}  (median over {processes} processes; ms, and x torch eager of the same process)")
        for row in runs["this"][0][table]:
            line = f"  {row:<11}"
            for label in trees:
                ms = [r[table][row] for r in runs[label] if row in r.get(table, {})]
                ratio = [r[table][row] / r[table]["torch"] for r in runs[label]
                         if row in r.get(table, {}) and "torch" in r[table]]
                if ms:
                    line += f"  {label}: {statistics.median(ms) * 1e3:7.2f} ms"
                    if ratio:
                        line += f" x{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})"
            print(line)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _one(int(sys.argv[2]), sys.argv[3].split(","))
    else:
        main(sys.argv[1:])
