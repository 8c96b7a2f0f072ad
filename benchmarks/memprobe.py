"""Memory probes for workload (g), each meant to run in a fresh process.

``python -m benchmarks.memprobe LIB MODE --n N --layers L [--repeat R]``
prints one JSON line. The chain is ``y = tanh(0.9 * y + 0.1)``, ``L`` times,
on a float64 array of ``N`` elements, then ``sum(y)``; the gradient is taken
with respect to the input. The minimal tape -- the forward values the
gradient needs -- is the ``L`` tanh outputs, ``L * N * 8`` bytes.

Two measures, each on its own call:

* ``traced``: the peak of :mod:`tracemalloc` during the call, over what was
  allocated before it. NumPy reports its array buffers to tracemalloc, so
  this is exact for NumPy-based code (NumPy, funcgrad, HIPS autograd) and
  blind to PyTorch's and XLA's own allocators (``None`` for them).
* ``rss``: the rise of the process's peak resident set (VmHWM, reset through
  /proc/self/clear_refs just before the call) over its resident set before
  it. It sees every allocator, at page granularity, and includes whatever
  the allocator keeps.

Mode ``leak`` calls the gradient ``R`` times and reports how much traced
memory and how many live objects remain after call 10 and after call R.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from typing import Any, Callable

from .peers import pin_thread_env

SEGMENT = 5  # layers per checkpointed segment in mode grad-ckpt-5

NUMPY_BASED = {"numpy", "funcgrad", "autograd"}
MODES = {
    "numpy": ("forward", "hand"),
    "funcgrad": ("forward", "grad", "grad-ckpt-layer", f"grad-ckpt-{SEGMENT}", "leak"),
    "autograd": ("grad",),
    "torch": ("forward", "grad"),
    "jax": ("grad",),
}


def _status(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def make_call(lib: str, mode: str, layers: int) -> Callable[[Any], Any]:
    """The call to measure, taking the NumPy input array."""
    if lib == "numpy":
        import numpy as np

        if mode == "forward":
            def forward(x):
                y = x
                for _ in range(layers):
                    y = np.tanh(0.9 * y + 0.1)
                return np.sum(y)
            return forward

        def hand(x):
            outs = []
            y = x
            for _ in range(layers):
                y = np.tanh(0.9 * y + 0.1)
                outs.append(y)
            del y
            g = np.ones_like(x)
            for i in range(layers - 1, -1, -1):
                t = outs.pop()
                t *= t
                np.subtract(1.0, t, out=t)
                g *= t
                g *= 0.9
                del t
            return g
        return hand

    if lib == "funcgrad":
        import funcgrad as fg
        import funcgrad.numpy as fnp

        def layer(y):
            return fnp.tanh(0.9 * y + 0.1)

        def chain(y):
            for _ in range(layers):
                y = layer(y)
            return fnp.sum(y)

        if mode == "forward":
            return chain
        if mode in ("grad", "leak"):
            return fg.grad(chain)
        if mode == "grad-ckpt-layer":
            ck = fg.checkpoint(layer)

            def chain_ck(y):
                for _ in range(layers):
                    y = ck(y)
                return fnp.sum(y)
            return fg.grad(chain_ck)
        if mode.startswith("grad-ckpt-"):
            k = int(mode.rsplit("-", 1)[1])

            def segment(y, m):
                for _ in range(m):
                    y = layer(y)
                return y

            seg = fg.checkpoint(segment, static_argnums=(1,))

            def chain_seg(y):
                done = 0
                while done < layers:
                    m = min(k, layers - done)
                    y = seg(y, m)
                    done += m
                return fnp.sum(y)
            return fg.grad(chain_seg)

    if lib == "autograd":
        import autograd
        import autograd.numpy as anp

        def chain_ag(y):
            for _ in range(layers):
                y = anp.tanh(0.9 * y + 0.1)
            return anp.sum(y)
        return autograd.grad(chain_ag)

    if lib == "torch":
        import torch

        torch.set_num_threads(1)

        def chain_t(y):
            for _ in range(layers):
                y = torch.tanh(0.9 * y + 0.1)
            return y.sum()

        if mode == "forward":
            def forward_t(x):
                with torch.no_grad():
                    return chain_t(torch.from_numpy(x)).item()
            return forward_t

        def grad_t(x):
            t = torch.from_numpy(x).requires_grad_(True)
            chain_t(t).backward()
            return t.grad
        return grad_t

    if lib == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def chain_j(y):
            for _ in range(layers):
                y = jnp.tanh(0.9 * y + 0.1)
            return jnp.sum(y)

        g = jax.grad(chain_j)

        def grad_j(x):
            return g(x).block_until_ready()
        return grad_j

    raise ValueError(f"unknown lib/mode {lib}/{mode}")


def probe(lib: str, mode: str, n: int, layers: int, repeat: int = 1000) -> dict[str, Any]:
    """Measure one (library, mode); run this in a fresh process for the RSS figures."""
    import numpy as np

    call = make_call(lib, mode, layers)
    small = np.random.default_rng(1).uniform(-1.0, 1.0, 1000)
    call(small)  # imports, caches, compiled kernels: not part of the peak
    call(small)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    out: dict[str, Any] = {"lib": lib, "mode": mode, "n": n, "layers": layers, "array_bytes": x.nbytes}
    if mode == "leak":
        out.update(_leak(call, x, repeat))
        return out
    gc.collect()
    rss_ok = _reset_hwm()
    rss0 = _status("VmRSS")
    result = call(x)
    out["rss"] = _status("VmHWM") - rss0 if rss_ok else None
    del result
    if lib in NUMPY_BASED:
        gc.collect()
        tracemalloc.start()
        cur0 = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call(x)
        out["traced"] = tracemalloc.get_traced_memory()[1] - cur0
        del result
        tracemalloc.stop()
    else:
        out["traced"] = None
    return out


def _leak(call: Callable[[Any], Any], x: Any, repeat: int) -> dict[str, Any]:
    gc.collect()
    tracemalloc.start()
    marks: dict[int, tuple[int, int]] = {}
    first_peak = last_peak = 0
    for i in range(1, repeat + 1):
        tracemalloc.reset_peak()
        cur0 = tracemalloc.get_traced_memory()[0]
        call(x)
        peak = tracemalloc.get_traced_memory()[1] - cur0
        if i == 1:
            first_peak = peak
        last_peak = peak
        if i in (10, repeat):
            gc.collect()
            marks[i] = (tracemalloc.get_traced_memory()[0], len(gc.get_objects()))
    tracemalloc.stop()
    start = marks.get(10, marks[repeat])
    return {"repeat": repeat, "first_call_peak": first_peak, "last_call_peak": last_peak,
            "traced_growth": marks[repeat][0] - start[0], "object_growth": marks[repeat][1] - start[1]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.memprobe")
    p.add_argument("lib", choices=sorted(MODES))
    p.add_argument("mode")
    p.add_argument("--n", type=int, default=10**6)
    p.add_argument("--layers", type=int, default=50)
    p.add_argument("--repeat", type=int, default=1000)
    a = p.parse_args(argv)
    if a.mode not in MODES[a.lib]:
        p.error(f"mode for {a.lib}: one of {MODES[a.lib]}")
    print(json.dumps(probe(a.lib, a.mode, a.n, a.layers, a.repeat)))


if __name__ == "__main__":
    pin_thread_env()
    main(sys.argv[1:])
