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

``python benchmarks/tensor_step_overhead.py --kernels [model] [steps] [-v]`` logs what each step asks of the kernels:
every primitive's forward and derivative-rule calls of one ft step and one functional step, in order (``-v``: with
each call's array arguments and result, dtype, shape and layout), then the median time of each call over
``steps`` interleaved steps at quick sizes, beside the steps' own medians (what the kernels leave to the rest).

``python benchmarks/tensor_step_overhead.py --layers [smoke|quick] [steps] [cold]`` times each layer of the CNN step
inside the step, three calls in a row (the first with the caches as the previous layer left them, the third warm),
for ft (``model[i](h)``) and for fg.nn (the same functional layers inside ``fg.grad``); ``cold``: an 8 MB buffer is
written before the first and the third call, so both find the caches cold (as every layer does behind large kernels).
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


def _describe(a: Any) -> str:
    """An argument or result of a kernel call in a few characters: dtype, shape, layout (C, F or strides; 'v' for
    a view of another array's memory)."""
    import numpy as np

    if isinstance(a, np.ndarray):
        layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else f"S{a.strides}"
        return f"{a.dtype}{a.shape}{layout}{'' if a.flags.owndata else 'v'}"
    if isinstance(a, (tuple, list)) and len(a) < 8:
        return "(" + ",".join(_describe(b) for b in a) + ")"
    return repr(a) if isinstance(a, (int, float, str, bool, type(None))) else type(a).__name__


def _kernels(model: str, steps: int, verbose: bool) -> None:
    """Every primitive call (forward and derivative rules) of one ft step and one functional step, then each
    call's median time over ``steps`` interleaved steps (quick sizes), beside the steps' medians."""
    import collections
    import gc
    import time

    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]
    from benchmarks import peers
    from benchmarks.workloads import Context, training
    from funcgrad.core.trace import Primitive

    peers.pin_thread_env()
    peers.pin_threads_now()
    table = getattr(training, model)(Context(quick=True))
    fns = [next(e.fn for e in table.entries if e.name.startswith(row)) for row in ("funcgrad.tensor", "fg.nn")]
    log: list[Any] | None = None
    clock = time.perf_counter

    def timed(f: Callable[..., Any], label: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if log is None:
                return f(*args, **kwargs)
            t = clock()
            out = f(*args, **kwargs)
            log.append((label, clock() - t, args, out))
            return out
        return call

    # (a measuring run only: every primitive's entry points wrapped in this process)
    for p in [o for o in gc.get_objects() if isinstance(o, Primitive)]:
        same = p.fast_fn is p.raw
        p.raw = timed(p.raw, p.name)
        p.fast_fn = p.raw if same else timed(p.fast_fn, p.name)
        p.call = timed(p.call, p.name)
        for i in list(p.vjps):
            p.vjps[i] = timed(p.vjps[i], f"{p.name}.vjp{i}")
        if p.vjp_all is not None:
            p.vjp_all = timed(p.vjp_all, f"{p.name}.vjp_all")
    for fn in fns:
        for _ in range(5):
            fn()
    for who, fn in zip(("ft", "fg.nn"), fns):
        log = []
        fn()
        print(f"{who}: {len(log)} kernel calls")
        for label, _, args, out in log:
            print(f"  {label}" + (f" {_describe(list(args))} -> {_describe(out)}" if verbose else ""))
        log = None
    gc.collect()
    gc.freeze()
    times: list[Any] = [collections.defaultdict(list), collections.defaultdict(list)]
    whole: list[list[float]] = [[], []]
    for _ in range(steps):
        for k, fn in enumerate(fns):
            log = []
            t = clock()
            fn()
            whole[k].append(clock() - t)
            calls, log = log, None
            seen: Any = collections.Counter()
            for label, dt, _, _ in calls:
                seen[label] += 1
                times[k][(label, seen[label])].append(dt)
    medians = [{key: statistics.median(v) * 1e6 for key, v in t.items() if len(v) == steps} for t in times]
    keys = sorted(set(medians[0]) | set(medians[1]), key=lambda c: -max(medians[0].get(c, 0), medians[1].get(c, 0)))
    print(f"{'kernel call (median us)':44s} {'ft':>8s} {'fg.nn':>8s}")
    for key in keys:
        print(f"  {key[0] + ' #' + str(key[1]):42s} " + " ".join(f"{m[key]:8.1f}" if key in m else f"{'-':>8s}"
                                                          for m in medians))
    print(f"  {'all kernel calls':42s} {sum(medians[0].values()):8.1f} {sum(medians[1].values()):8.1f}")
    print(f"  {'whole step':42s} {statistics.median(whole[0]) * 1e6:8.1f} {statistics.median(whole[1]) * 1e6:8.1f}")


def _layers(size: str, steps: int, cold: bool) -> None:
    """Each CNN layer's wall time inside the step, first and third of three calls in a row, ft beside fg.nn (the
    layers of ``training.conv_table``'s functional loss, timed inside ``fg.grad``); medians over ``steps`` steps."""
    import functools
    import gc
    import time

    import numpy as np

    sys.path.insert(0, os.getcwd())
    sys.modules["torch"] = None  # type: ignore[assignment]
    from benchmarks import peers
    from benchmarks.workloads import Context, training
    import funcgrad as fg
    import funcgrad.nn as fnn
    import funcgrad.numpy as fnp

    peers.pin_thread_env()
    peers.pin_threads_now()
    table = training.conv_table(Context(quick=True, smoke=size == "smoke"))
    ft_step = next(e.fn for e in table.entries if e.name.startswith("funcgrad.tensor"))
    names = dict(zip(ft_step.__code__.co_freevars, (c.cell_contents for c in ft_step.__closure__ or ())))
    opt, loss_fn, net, x, y = (names[k] for k in ("opt", "loss_fn", "model", "x", "y"))
    state = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    xs, ys = x.numpy(), y.numpy()
    buffer = np.ones(1 << 21, np.float32)
    clock = time.perf_counter
    times: dict[tuple[str, str, int], list[float]] = {}

    def three(who: str, layer: str, call: Callable[[], Any]) -> Any:
        out = None
        for k in range(3):
            if cold and k != 1:
                np.add(buffer, 1, out=buffer)
            t = clock()
            r = call()
            times.setdefault((layer, who, k), []).append(clock() - t)
            out = r if k == 0 else out
        return out

    def ft_once() -> None:
        opt.zero_grad()
        h = x
        for m in net:
            h = three("ft", type(m).__name__, functools.partial(m, h))
        three("ft", "loss", lambda: loss_fn(h, y)).backward()
        opt.step()

    def fg_loss(p: Any) -> Any:  # (conv_table's functional loss, layer by layer)
        h = three("fg.nn", "Conv2d", lambda: fnn.conv2d(xs, p["0.weight"], None, padding=1))
        h = three("fg.nn", "BatchNorm2d", lambda: fnn.batch_norm(h, state["1.running_mean"], state["1.running_var"],
                                                                 p["1.weight"], p["1.bias"], training=True))[0]
        h = three("fg.nn", "ReLU", lambda: fnn.relu(h))
        h = three("fg.nn", "MaxPool2d", lambda: fnn.max_pool2d(h, 2))
        h = three("fg.nn", "Flatten", lambda: fnp.reshape(h, (fnp.shape(h)[0], -1)))
        h = three("fg.nn", "Linear", lambda: h @ fnp.transpose(p["5.weight"]) + p["5.bias"])
        return three("fg.nn", "loss", lambda: fnn.cross_entropy(h, ys, axis=-1))

    fg_grad = fg.grad(fg_loss)
    params = {k: state[k] for k in ("0.weight", "1.weight", "1.bias", "5.weight", "5.bias")}
    for _ in range(10):
        ft_once()
        fg_grad(params)
    times.clear()
    gc.collect()
    gc.freeze()
    for _ in range(steps):
        ft_once()
        fg_grad(params)
    med = {key: statistics.median(v) * 1e6 for key, v in times.items()}
    print(f"{size} sizes, {'cold' if cold else 'as left'} caches, medians of {steps} steps (us)")
    print(f"  {'layer':12s} {'ft 1st':>8s} {'ft 3rd':>8s} {'fg 1st':>8s} {'fg 3rd':>8s} {'ft-fg 1st':>10s} {'ft-fg 3rd':>10s}")
    sums = [0.0, 0.0]
    for layer in ("Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Flatten", "Linear", "loss"):
        a, b, c, d = (med[(layer, who, k)] for who in ("ft", "fg.nn") for k in (0, 2))
        sums[0] += a - c
        sums[1] += b - d
        print(f"  {layer:12s} {a:8.1f} {b:8.1f} {c:8.1f} {d:8.1f} {a - c:10.1f} {b - d:10.1f}")
    print(f"  {'sum':12s} {'':8s} {'':8s} {'':8s} {'':8s} {sums[0]:10.1f} {sums[1]:10.1f}")


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
    elif sys.argv[1:2] == ["--kernels"]:
        rest = [a for a in sys.argv[2:] if a != "-v"]
        _kernels(rest[0] if rest else "conv_table", int(rest[1]) if len(rest) > 1 else 100, "-v" in sys.argv)
    elif sys.argv[1:2] == ["--layers"]:
        rest = sys.argv[2:]
        _layers(rest[0] if rest else "smoke", int(rest[1]) if len(rest) > 1 else 200, "cold" in rest)
    elif sys.argv[1:2] == ["--op-count"]:
        _op_count()
    elif sys.argv[1:2] == ["--count"]:
        _count(sys.argv[2])
    else:
        main(sys.argv[1:])
