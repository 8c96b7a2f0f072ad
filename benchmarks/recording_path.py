"""Issue 30: the recording path, before and after, on one machine at the same time.

Run: ``git archive <base> | tar -x -C /tmp/before`` (any older tree), then
``python benchmarks/recording_path.py /tmp/before`` from the repository root. Two measurements:

1. **pairs**: this tree and the other run the same workloads as two concurrent processes
   (so that both see the same load), six times, alternating which starts first: a
   200-op sin/tanh chain on 3 elements (forward + ``.backward()`` / ``fg.grad``, per op) and
   a 784-256-256-10 tanh MLP step (batch 128, cross-entropy), Tensor and ``fg.grad``,
   float64 and float32; ``time.process_time``, median of 15 samples per process. Printed:
   per row, the medians over the pairs and the median of the per-pair ratios.
2. **skeleton**: in one process, the other tree's ``ReverseTrace.process`` compiled as a
   subclass of this tree's ``ReverseTrace`` beside it, both recording and walking the chain,
   interleaved: the cost of the skeleton's step calls, with no load drift between the two.

"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _workloads(tree: str, steps_only: bool = False) -> None:
    sys.path.insert(0, tree)
    import numpy as np

    import funcgrad as fg
    import funcgrad.numpy as fnp
    import funcgrad.tensor as ft

    assert fg.__file__.startswith(tree), fg.__file__
    if steps_only:
        from funcgrad.tensor.tensor_trace import TensorTrace

        TensorTrace.record_one = None  # type: ignore[assignment]
    def per_op_tensor() -> None:
        y = x = ft.tensor(np.array([0.1, 0.2, 0.3]), requires_grad=True)
        for _ in range(100):
            y = y.sin().tanh()
        y.sum().backward()
        assert x.grad is not None

    def chain(x):  # type: ignore[no-untyped-def]
        for _ in range(100):
            x = fnp.tanh(fnp.sin(x))
        return fnp.sum(x)

    def per_op_grad() -> None:
        fg.grad(chain)(np.array([0.1, 0.2, 0.3]))

    rng = np.random.default_rng(0)

    def mlp(dtype: str):  # type: ignore[no-untyped-def]
        sizes = [784, 256, 256, 10]
        ws = [rng.standard_normal((a, b)).astype(dtype) * 0.05 for a, b in zip(sizes, sizes[1:])]
        bs = [np.zeros(b, dtype) for b in sizes[1:]]
        xs = rng.standard_normal((128, 784)).astype(dtype)
        ys = rng.integers(0, 10, 128)
        tw = [ft.tensor(w, requires_grad=True) for w in ws]
        tb = [ft.tensor(b, requires_grad=True) for b in bs]
        tx, ty = ft.tensor(xs), ft.tensor(ys)

        def tensor_step() -> None:
            h = tx
            for i, (w, b) in enumerate(zip(tw, tb)):
                h = h @ w + b
                if i < 2:
                    h = h.tanh()
            loss = ft.nn.functional.cross_entropy(h, ty)
            for p in tw + tb:
                p.grad = None
            loss.backward()

        def loss_fn(params):  # type: ignore[no-untyped-def]
            h = xs
            for i, (w, b) in enumerate(params):
                h = h @ w + b
                if i < 2:
                    h = fnp.tanh(h)
            top = fnp.max(h, axis=1, keepdims=True)
            lse = fnp.log(fnp.sum(fnp.exp(h - top), axis=1)) + top[:, 0]
            return fnp.mean(lse - h[np.arange(128), ys])

        g = fg.grad(loss_fn)
        params = list(zip(ws, bs))
        return tensor_step, lambda: g(params)

    def bench(fn, n: int, reps: int = 15) -> float:  # type: ignore[no-untyped-def]
        fn()
        out = []
        for _ in range(reps):
            t = time.process_time()
            for _ in range(n):
                fn()
            out.append((time.process_time() - t) / n)
        return statistics.median(out)

    res = {"tensor_per_op_us": bench(per_op_tensor, 20) / 200 * 1e6, "grad_per_op_us": bench(per_op_grad, 20) / 200 * 1e6}
    for dt in ("float64", "float32"):
        ts, gs = mlp(dt)
        res[f"tensor_mlp_{dt}_ms"] = bench(ts, 5) * 1e3
        res[f"grad_mlp_{dt}_ms"] = bench(gs, 5) * 1e3
    print(" ".join(f"{k}={v:.4f}" for k, v in res.items()), flush=True)


def _skeleton(other: str) -> None:
    sys.path.insert(0, HERE)
    import numpy as np

    import funcgrad.numpy as fnp
    from funcgrad.core import reverse

    src = open(os.path.join(other, "funcgrad", "core", "reverse.py")).read()
    body = src[src.index("    def process(self, prim: Primitive"):src.index("def _accumulate(")]
    names = dict(vars(reverse))
    exec("class OtherTrace(ReverseTrace):\n    __slots__ = ()\n" + body, names)  # noqa: S102 - a benchmark
    traces = {"other": names["OtherTrace"], "this": reverse.ReverseTrace}
    times: dict[str, list[float]] = {k: [] for k in traces}
    for _ in range(60):
        for key, cls in traces.items():
            t = time.perf_counter()
            with cls("bench") as trace:
                y = trace.new_input(np.array([0.1, 0.2, 0.3]))
                for _ in range(100):
                    y = fnp.tanh(fnp.sin(y))
                y = fnp.sum(y)
            reverse.backward_pass([(y._node, np.array(1.0))], release=True)
            times[key].append((time.perf_counter() - t) / 200 * 1e6)
    for key, v in times.items():
        print(f"skeleton {key}: fastest {min(v):.3f} us/op, median {statistics.median(v):.3f} (record + walk)")


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--workloads":
        return _workloads(sys.argv[2], "--steps-only" in sys.argv)
    if len(sys.argv) >= 3 and sys.argv[1] == "--skeleton":
        return _skeleton(sys.argv[2])
    other = os.path.abspath(sys.argv[1])
    variant = ["--steps-only"] if "--steps-only" in sys.argv else []
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    me = [sys.executable, os.path.abspath(__file__), "--workloads"]
    rows: dict[str, list[dict[str, float]]] = {"other": [], "this": []}
    for k in range(6):
        order = [("other", other), ("this", HERE)] if k % 2 == 0 else [("this", HERE), ("other", other)]
        procs = [(key, subprocess.Popen(me + [tree] + (variant if key == "this" else []), stdout=subprocess.PIPE,
                                        text=True, env=env, cwd="/"))
                 for key, tree in order]
        for key, p in procs:
            out, _ = p.communicate()
            rows[key].append({k: float(v) for k, v in (kv.split("=") for kv in out.split())})
    print("| row | other tree (median of 6) | this tree | this/other, per pair (median) |")
    print("|---|---:|---:|---:|")
    for name in rows["this"][0]:
        a = [r[name] for r in rows["this"]]
        b = [r[name] for r in rows["other"]]
        ratio = statistics.median(x / y for x, y in zip(a, b))
        print(f"| {name} | {statistics.median(b):.3f} | {statistics.median(a):.3f} | {ratio:.2f} |")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--skeleton", other], check=True, env=env)


if __name__ == "__main__":
    main()
