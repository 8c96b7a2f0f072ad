"""Issue 26: the Tensor layer's training step against the functional one, this tree beside another.

Run: ``git archive <base> | tar -x -C /tmp/before`` (any older tree), then
``python benchmarks/tensor_step_overhead.py /tmp/before [rounds] [smoke|quick]`` from the repository
root. Each round runs, for each model of ``benchmarks/workloads/training.py`` (the CNN and the LSTM)
and each tree in turn, one process that times its ``funcgrad.tensor`` step (``ft.nn`` + ``ft.optim`` +
``loss.backward()``) and its functional step (``fg.nn`` + ``fg.grad`` + ``fg.optim``) interleaved, three
steps a sample, process CPU time, one thread, the collector frozen. Printed per model and tree: the
median over the rounds of each process's median step times and of its ratio ft / fg.nn (the ratio is
what this script compares: both rows of a process see the same load). ``smoke`` sizes leave only
the per-op overhead (the kernels' arrays are tiny); ``quick`` are the harness's sizes.

``python benchmarks/tensor_step_overhead.py /tmp/before --bytecodes`` counts instead, per model and
tree, the bytecodes one step runs at smoke sizes (``sys.settrace`` opcode events, after three warm-up
steps): a measure of the per-op overhead that the machine's load does not move; first, the bytecodes of
single Tensor ops (a ``tanh`` of a Tensor that requires grad, of one that does not, a product of two).

``python benchmarks/tensor_step_overhead.py --phases [model]`` counts the bytecodes of this tree's ft step split
by phase (zero_grad, the model's forward, the loss, backward, optimizer.step, reading the ``.grad``s), beside
the whole functional step, and lists the functions that run the most of them (``[model]``: one of MODELS).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("conv_table", "lstm_table", "transformer_table")


def _one(model: str, size: str, samples: int) -> None:
    """In a child process whose working directory is the tree to measure: print 'ft fg' medians (ms)."""
    import gc
    import time

    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]  # (the peer's rows are not needed here)
    from benchmarks import peers
    from benchmarks.workloads import Context, training

    peers.pin_thread_env()
    peers.pin_threads_now()
    table = getattr(training, model)(Context(quick=True, smoke=size == "smoke"))
    fns = [next(e.fn for e in table.entries if e.name.startswith(row)) for row in ("funcgrad.tensor", "fg.nn")]
    for fn in fns:
        for _ in range(5):
            fn()
    gc.collect()
    gc.freeze()
    times: list[list[float]] = [[], []]
    for _ in range(samples):
        for k, fn in enumerate(fns):
            t = time.process_time()
            fn(), fn(), fn()
            times[k].append((time.process_time() - t) / 3)
    print(*(statistics.median(v) * 1e3 for v in times))


def _count(model: str) -> None:
    """In a child process whose working directory is the tree to measure: print 'ft fg' bytecodes
    of one step at smoke sizes."""
    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]
    from benchmarks.workloads import Context, training

    table = getattr(training, model)(Context(quick=True, smoke=True))
    fns = [next(e.fn for e in table.entries if e.name.startswith(row)) for row in ("funcgrad.tensor", "fg.nn")]
    print(*(_opcodes(fn) for fn in fns))


def _opcodes(fn: Callable[[], Any]) -> int:
    """The bytecodes one call of ``fn`` runs (``sys.settrace`` opcode events), after three warm-up calls."""
    for _ in range(3):
        fn()
    n = [0]

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        frame.f_trace_opcodes = True
        if event == "opcode":
            n[0] += 1
        return tracer

    sys.settrace(tracer)
    fn()
    sys.settrace(None)
    return n[0]


# one Tensor op each (forward only; the counts include the lambda's own few bytecodes)
OPS = ("tanh", "tanh_no_grad", "product")


def _op_count() -> None:
    """In a child process whose working directory is the tree to measure: print the bytecodes of each of OPS."""
    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]
    import funcgrad.tensor as ft

    x = ft.randn(3, requires_grad=True)
    y = ft.randn(3, requires_grad=True)
    c = x.detach()
    fns = {"tanh": lambda: x.tanh(), "tanh_no_grad": lambda: c.tanh(), "product": lambda: x * y}
    print(*(_opcodes(fns[op]) for op in OPS))


def _counting(counts: Any, calls: Any) -> Callable[..., Any]:
    """A ``sys.settrace`` tracer that counts opcodes (and calls) per function."""
    def name(code: Any) -> str:
        path = code.co_filename
        return f"{os.path.relpath(path) if 'funcgrad' in path else os.path.basename(path)}:{code.co_name}"

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        frame.f_trace_opcodes = True
        if event == "opcode":
            counts[name(frame.f_code)] += 1
        elif event == "call":
            calls[name(frame.f_code)] += 1
        return tracer

    return tracer


def _phases(model: str, top: int) -> None:
    """Bytecodes of this tree's ft step by phase, at smoke sizes, and the functions that run the most."""
    import collections

    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]
    from benchmarks.workloads import Context, training

    table = getattr(training, model)(Context(quick=True, smoke=True))
    ft_step = next(e.fn for e in table.entries if e.name.startswith("funcgrad.tensor"))
    fg_step = next(e.fn for e in table.entries if e.name.startswith("fg.nn"))
    names = dict(zip(ft_step.__code__.co_freevars, (c.cell_contents for c in ft_step.__closure__ or ())))
    opt, loss_fn, net, x, y = (names[k] for k in ("opt", "loss_fn", "model", "x", "y"))
    for _ in range(3):
        ft_step(), fg_step()
    counts: Any = collections.Counter()
    calls: Any = collections.Counter()
    tracer = _counting(counts, calls)

    def count(fn: Callable[[], Any]) -> tuple[int, Any]:
        counts.clear()
        sys.settrace(tracer)
        out = fn()
        sys.settrace(None)
        return sum(counts.values()), out

    phases: dict[str, int] = {}
    phases["zero_grad"], _ = count(opt.zero_grad)
    phases["forward"], out = count(lambda: net(x))
    phases["loss"], loss = count(lambda: loss_fn(out, y))
    phases["backward"], _ = count(loss.backward)
    phases["step"], _ = count(opt.step)
    phases[".grad"], _ = count(lambda: [p.grad for p in net.parameters()])
    fg_n, _ = count(fg_step)
    ft_n = sum(phases.values())
    print(f"{model}: ft {ft_n}  fg.nn {fg_n}  ft / fg.nn {ft_n / fg_n:.3f}")
    print("  " + "  ".join(f"{k} {v}" for k, v in phases.items()))
    calls.clear()
    count(ft_step)
    for k, v in counts.most_common(top):
        print(f"  {v:6d} bytecodes {calls[k]:4d} calls  {k}")


def _bytecodes(other: str) -> None:
    print("bytecodes per Tensor op (" + ", ".join(OPS) + ")")
    for name, tree in (("other", other), ("this", HERE)):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--op-count"], cwd=tree,
                             capture_output=True, text=True, check=True).stdout.split()
        print(f"  {name:<5} ({tree}): " + "  ".join(f"{op} {k}" for op, k in zip(OPS, out[-len(OPS):])))
    print("bytecodes per step, smoke sizes (ft, fg.nn, ft / fg.nn)")
    for model in MODELS:
        for name, tree in (("other", other), ("this", HERE)):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--count", model], cwd=tree,
                                 capture_output=True, text=True, check=True).stdout.split()
            ft, fg = int(out[-2]), int(out[-1])
            print(f"  {model:<11} {name:<5} ({tree}): ft {ft}  fg.nn {fg}  ft / fg.nn {ft / fg:.3f}")


def main(argv: list[str]) -> None:
    if argv[0] == "--phases":
        for model in argv[1:] or MODELS:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--phase-count", model], check=True)
        return None
    other = os.path.abspath(argv[0])
    if "--bytecodes" in argv:
        return _bytecodes(other)
    rounds = int(argv[1]) if len(argv) > 1 else 5
    size = argv[2] if len(argv) > 2 else "quick"
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    trees = {"other": other, "this": HERE}
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for model in MODELS:
            for name, tree in trees.items():
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", model, size, "30"], cwd=tree,
                                     env=env, capture_output=True, text=True, check=True).stdout.split()
                got.setdefault((model, name), []).append((float(out[-2]), float(out[-1])))
    print(f"{size} sizes, {rounds} rounds, medians over rounds (ms per step)")
    for (model, name), rows in got.items():
        ft_ms = statistics.median(r[0] for r in rows)
        fg_ms = statistics.median(r[1] for r in rows)
        ratio = statistics.median(r[0] / r[1] for r in rows)
        print(f"  {model:<11} {name:<5} ({trees[name]}): ft {ft_ms:6.2f}  fg.nn {fg_ms:6.2f}  ft / fg.nn {ratio:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        _one(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["--phase-count"]:
        _phases(sys.argv[2], 25)
    elif sys.argv[1:2] == ["--op-count"]:
        _op_count()
    elif sys.argv[1:2] == ["--count"]:
        _count(sys.argv[2])
    else:
        main(sys.argv[1:])
