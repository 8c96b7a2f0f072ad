"""Time per equation of the staged training steps (issue 26): where ``fg.jit(fg.grad(loss))`` spends its time.

Runs the program recorded for the functional step of the 32x32 CNN, the LSTM and the Transformer of
``benchmarks/workloads/training.py`` equation by equation (each call timed in process CPU time, robust on a shared machine; best of ``--repeat``), sums the time
per primitive and prints the top equations. Each equation runs on its own (no ``out=`` buffer reuse between
calls); each value is dropped after its last reader, as the replay drops it, so the heap keeps the step's size
and fresh allocations (page faults) are counted where they happen.

    OPENBLAS_NUM_THREADS=1 python benchmarks/training_profile.py [--repeat 5] [--top 15] [--only cnn32,lstm,transformer]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad as fg  # noqa: E402
import funcgrad.nn as fnn  # noqa: E402
import funcgrad.numpy as fnp  # noqa: E402
from benchmarks.workloads.training import conv2_loss  # noqa: E402
from funcgrad.jit.ir import Const, Var  # noqa: E402


def cnn32() -> tuple[Any, dict[str, Any], Any, Any]:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    shapes = {"0.weight": (16, 3, 3, 3), "1.weight": (16,), "1.bias": (16,), "4.weight": (32, 16, 3, 3),
              "5.weight": (32,), "5.bias": (32,), "9.weight": (10, 32 * 8 * 8), "9.bias": (10,)}
    p = {k: (0.1 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
    return conv2_loss, p, x, y


def lstm() -> tuple[Any, dict[str, Any], Any, Any]:
    T, n, n_in, hid = 20, 16, 32, 64
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, T, n_in)).astype(np.float32)
    y = rng.integers(0, 10, n)
    shapes = {"wih": (4 * hid, n_in), "whh": (4 * hid, hid), "bih": (4 * hid,), "bhh": (4 * hid,),
              "fcw": (10, hid), "fcb": (10,)}
    p = {k: (0.1 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}

    def loss(p: Any, x: Any, y: Any) -> Any:
        h0 = fnp.zeros((fnp.shape(x)[0], hid), dtype=x.dtype)
        _, (h, _) = fnn.lstm(x, h0, h0, p["wih"], p["whh"], p["bih"], p["bhh"], batch_first=True)
        return fnn.cross_entropy(h @ fnp.transpose(p["fcw"]) + p["fcb"], y, axis=-1)
    return loss, p, x, y


def transformer() -> tuple[Any, dict[str, Any], Any, Any]:
    n, L, d, heads, ff = 8, 32, 64, 4, 2048
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, L, d)).astype(np.float32)
    y = rng.integers(0, 10, n)
    shapes = {"in_w": (3 * d, d), "in_b": (3 * d,), "out_w": (d, d), "out_b": (d,), "n1w": (d,), "n1b": (d,),
              "l1w": (ff, d), "l1b": (ff,), "l2w": (d, ff), "l2b": (d,), "n2w": (d,), "n2b": (d,),
              "fcw": (10, d), "fcb": (10,)}
    p = {k: (0.05 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}

    lin = fnn.linear

    def loss(p: Any, x: Any, y: Any) -> Any:
        qkv = lin(x, p["in_w"], p["in_b"])
        q, k, v = (fnp.swapaxes(fnp.reshape(part, (n, L, heads, d // heads)), 1, 2) for part in fnp.split(qkv, 3, axis=-1))
        a = fnp.reshape(fnp.swapaxes(fnn.dot_product_attention(q, k, v), 1, 2), (n, L, d))
        h = fnn.layer_norm(x + lin(a, p["out_w"], p["out_b"]), 1, p["n1w"], p["n1b"])
        f = lin(fnn.relu(lin(h, p["l1w"], p["l1b"])), p["l2w"], p["l2b"])
        h = fnn.layer_norm(h + f, 1, p["n2w"], p["n2b"])
        return fnn.cross_entropy(lin(fnp.mean(h, axis=1), p["fcw"], p["fcb"]), y, axis=-1)
    return loss, p, x, y


MODELS = {"cnn32": cnn32, "lstm": lstm, "transformer": transformer}


def _describe(e: Any) -> str:
    def atom(a: Any) -> str:
        if isinstance(a, Var):
            return f"{a.dtype}{list(a.shape)}" if a.shape else str(a.dtype)
        if isinstance(a, Const):
            return f"const{list(getattr(a.value, 'shape', ()))}"
        text = repr(a)
        return text if len(text) < 30 else text[:27] + "..."
    return f"{e.prim.name}({', '.join(atom(a) for a in e.ins)})"


def profile_program(prog: Any, inputs: list[Any], repeat: int) -> list[tuple[float, str]]:
    """Best-of-``repeat`` seconds of each equation of ``prog`` run on ``inputs`` (one by one)."""
    best = [float("inf")] * len(prog.eqns)
    last = {id(a): k for k, e in enumerate(prog.eqns) for a in e.ins if isinstance(a, Var)}
    kept = {id(o) for o in prog.outs} | {id(v) for v in prog.invars}
    for _ in range(repeat):
        env: dict[Any, Any] = dict(zip(prog.invars, inputs))
        for k, e in enumerate(prog.eqns):
            args = [env[a] if isinstance(a, Var) else (a.value if isinstance(a, Const) else a) for a in e.ins]
            t0 = time.process_time()
            out = e.fn(*args, **e.kwargs)
            best[k] = min(best[k], time.process_time() - t0)
            env.update(zip(e.outs, out) if e.multiple else ((e.outs[0], out),))
            del args, out
            for a in e.ins:  # values die after their last reader, as in the replay (the heap stays the step's size)
                if isinstance(a, Var) and last.get(id(a)) == k and id(a) not in kept:
                    env.pop(a, None)
    return [(t, _describe(e)) for t, e in zip(best, prog.eqns)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--only", default=",".join(MODELS))
    args = ap.parse_args()
    for name in args.only.split(","):
        loss, p, x, y = MODELS[name]()
        grad = fg.jit(fg.grad(loss))
        prog = fg.make_program(grad)(p, x, y)
        leaves = fg.tree_util.tree_leaves((p, x, y))
        rows = profile_program(prog, leaves, args.repeat)
        step = min(_timed(lambda: grad(p, x, y)) for _ in range(args.repeat * 2))
        total = sum(t for t, _ in rows)
        by_prim: dict[str, float] = defaultdict(float)
        for t, d in rows:
            by_prim[d.split("(")[0]] += t
        print(f"== {name}: {len(rows)} equations, sum {total * 1e3:.2f} ms, jitted step {step * 1e3:.2f} ms")
        for prim, t in sorted(by_prim.items(), key=lambda r: -r[1])[:args.top]:
            print(f"  {t * 1e3:8.3f} ms  {prim}")
        print("  -- top equations")
        for t, d in sorted(rows, key=lambda r: -r[0])[:args.top]:
            print(f"  {t * 1e3:8.3f} ms  {d}")


def _timed(fn: Any) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


if __name__ == "__main__":
    main()
