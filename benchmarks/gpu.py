"""GPU benchmarks: funcgrad on CuPy against PyTorch on CUDA; skipped without a GPU.

Three workloads, each timed on the GPU (every timed call ends with a device
synchronization, so the numbers are wall-clock times of finished work) and,
for scale, with funcgrad on the CPU:

* ``gpu_mlp``: one training step of an MLP 784-1024-1024-10 (tanh, float32,
  batch 512, softmax cross-entropy): gradient plus an Adam update, parameters
  and optimizer state on the device. PyTorch: eager ``backward()`` and
  ``torch.optim.Adam`` (foreach) on CUDA.
* ``gpu_hvp``: a Hessian-vector product of f(x) = sum(tanh(A x)^2) + x.x/2 at
  n = 4096, float64 (forward-over-reverse ``fg.hvp`` against
  ``torch.func.jvp(torch.func.grad(f))``).
* ``gpu_jit_kernels``: ``fg.jit(fg.grad(f))`` of a 50-layer elementwise chain over 1e7
  float64 values: the replay (one CuPy kernel per primitive) against fg.jit's CUDA
  backend (the elementwise regions as ``ElementwiseKernel`` s), with the kernels'
  build-and-compile time and the memory pool's growth per call.

Run on its own (prints a table; ``--quick`` for shorter timing)::

    python -m benchmarks.gpu

or through the harness, once hooked in as the workload ``gpu`` (see
``benchmarks/workloads/__init__.py``)::

    python -m benchmarks --only gpu --clock wall

The tables read the **wall** clock: kernels run asynchronously, so process CPU
time says little about a GPU. Without CuPy or a visible GPU, ``build`` returns
no tables and ``python -m benchmarks.gpu`` says why.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.backend import device_put, to_numpy

from . import peers
from .workloads import Context, Entry, Table, Target
from .workloads import mlp as _mlp


def gpu_status() -> tuple[Any, str]:
    """``(cupy, "")`` when a GPU is usable, else ``(None, why not)``."""
    try:
        import cupy
    except ImportError as e:
        return None, f"CuPy is not installed ({e}); pip install 'funcgrad[cuda]'"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError without a driver or device
        return None, f"no CUDA device is visible ({e})"
    if n == 0:
        return None, "no CUDA device is visible"
    return cupy, ""


def _torch_cuda() -> Any:
    torch = peers.torch()
    if torch is None or not torch.cuda.is_available():
        return None
    return torch


def _synced(fn: Callable[[], Any], sync: Callable[[], None]) -> Callable[[], Any]:
    def call() -> Any:
        out = fn()
        sync()
        return out

    return call


# --------------------------------------------------------------------------
# MLP training step

def mlp_table(ctx: Context, cp: Any) -> Table:
    sizes = ctx.pick((784, 1024, 1024, 10), quick=(784, 512, 512, 10), smoke=(20, 8, 8, 3))
    batch = ctx.pick(512, quick=256, smoke=4)
    params, x, y = _mlp.make_problem(np.float32, sizes, batch)
    opt = fg.optim.adam(1e-3)
    vg = fg.value_and_grad(_mlp.loss_fg)

    def step(p: Any, s: Any, xb: Any, yb: Any) -> Any:
        loss, g = vg(p, xb, yb)
        updates, s = opt.update(g, s, p)
        return loss, fg.optim.apply_updates(p, updates), s

    host_state = opt.init(params)
    dparams = device_put(params, "cuda")
    dstate = opt.init(dparams)
    dx, dy = device_put((x, y), "cuda")
    sync = cp.cuda.get_current_stream().synchronize
    reference = _mlp.loss_np(params, x, y)
    rows = [
        Entry("funcgrad cpu step", lambda: step(params, host_state, x, y), check=lambda r: r[0]),
        Entry("funcgrad cupy step", _synced(lambda: step(dparams, dstate, dx, dy), sync),
              check=lambda r: to_numpy(r[0])),
        Entry("funcgrad cupy forward", _synced(lambda: _mlp.loss_fg(dparams, dx, dy), sync), group="forward",
              check=lambda r: to_numpy(r)),
    ]
    torch = _torch_cuda()
    if torch is not None:
        dev = torch.device("cuda")
        tparams = [(torch.tensor(w, device=dev, requires_grad=True), torch.tensor(b, device=dev, requires_grad=True))
                   for w, b in params]
        flat = [t for pair in tparams for t in pair]
        topt = torch.optim.Adam(flat, lr=1e-3)
        tx = torch.tensor(x, device=dev)
        ty = torch.tensor(y, device=dev)
        snapshot = [t.detach().clone() for t in flat]

        def tloss() -> Any:
            h = tx
            for w, b in tparams[:-1]:
                h = torch.tanh(h @ w + b)
            w, b = tparams[-1]
            return torch.nn.functional.cross_entropy(h @ w + b, ty)

        def torch_step() -> Any:
            with torch.no_grad():  # the same parameters every call: the same work, comparable numbers
                for t, s in zip(flat, snapshot):
                    t.copy_(s)
            topt.zero_grad(set_to_none=True)
            loss = tloss()
            loss.backward()
            topt.step()
            return loss

        def torch_forward() -> Any:
            with torch.no_grad():
                return tloss()

        tsync = torch.cuda.synchronize
        rows += [
            Entry("torch cuda step", _synced(torch_step, tsync), check=lambda r: r.detach().cpu().numpy()),
            Entry("torch cuda forward", _synced(torch_forward, tsync), group="forward",
                  check=lambda r: r.cpu().numpy()),
        ]
    shape = "-".join(map(str, sizes))
    return Table(
        "gpu_mlp", f"GPU: MLP {shape} tanh, batch {batch}, float32: one training step (grad + Adam)",
        rows, reference, rtol=2e-4, unit="ms", baselines=("torch cuda step",),
        targets=[Target("GPU MLP step <= 2x torch CUDA", "funcgrad cupy step", ("torch cuda step",), 2.0,
                        issue="6")],
        notes=["Wall clock; each timed call ends with a device synchronization. The torch step copies the same "
               "starting parameters back in first (a few device copies), so each call does the same work as "
               "funcgrad's pure step.",
               "funcgrad's step is value_and_grad + fg.optim.adam's update + apply_updates on CuPy arrays: one "
               "CuPy kernel per primitive (no fusion yet, see docs/gpu.md), so small layers are launch-bound."],
    )


# --------------------------------------------------------------------------
# Hessian-vector product

def hvp_table(ctx: Context, cp: Any) -> Table:
    n = ctx.pick(4096, quick=2048, smoke=16)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    x, v = rng.standard_normal(n), rng.standard_normal(n)
    t = np.tanh(a @ x)
    w = (2.0 - 6.0 * t * t) * (1.0 - t * t)
    reference = a.T @ (w * (a @ v)) + v

    def make_f(am: Any) -> Callable[[Any], Any]:
        def f(z: Any) -> Any:
            tz = fnp.tanh(am @ z)
            return fnp.sum(tz * tz) + 0.5 * (z @ z)

        return f

    da, dx, dv = device_put((a, x, v), "cuda")
    f_host, f_dev = make_f(a), make_f(da)
    sync = cp.cuda.get_current_stream().synchronize
    rows = [
        Entry("funcgrad cpu hvp", lambda: fg.hvp(f_host, (x,), (v,)), check=lambda r: r[1]),
        Entry("funcgrad cupy hvp", _synced(lambda: fg.hvp(f_dev, (dx,), (dv,)), sync),
              check=lambda r: to_numpy(r[1])),
    ]
    torch = _torch_cuda()
    if torch is not None:
        dev = torch.device("cuda")
        ta, tx, tv = (torch.tensor(arr, device=dev) for arr in (a, x, v))

        def tf(z: Any) -> Any:
            tz = torch.tanh(ta @ z)
            return torch.sum(tz * tz) + 0.5 * (z @ z)

        def torch_hvp() -> Any:
            return torch.func.jvp(torch.func.grad(tf), (tx,), (tv,))

        rows.append(Entry("torch.func jvp(grad) cuda", _synced(torch_hvp, torch.cuda.synchronize),
                          check=lambda r: r[1].cpu().numpy()))
    return Table(
        "gpu_hvp", f"GPU: Hessian-vector product of sum(tanh(A x)^2) + x.x/2, n = {n}, float64",
        rows, reference, rtol=1e-8, unit="ms", baselines=("torch.func jvp(grad) cuda",),
        targets=[Target(f"GPU HVP n={n} <= 1.5x torch.func CUDA", "funcgrad cupy hvp",
                        ("torch.func jvp(grad) cuda",), 1.5, issue="6")],
        notes=["Forward over reverse on both sides; both return the gradient too. Wall clock, synchronized."],
    )


# --------------------------------------------------------------------------
# fg.jit's CUDA kernels: fused elementwise regions against one CuPy kernel per primitive

def _layers(x: Any, layers: int) -> Any:
    for _ in range(layers):
        x = fnp.tanh(fnp.sin(x) * 1.1 + 0.1)
    return fnp.sum(x * x)


def jit_kernels_table(ctx: Context, cp: Any) -> Table:
    """``jit(grad)`` of a 50-layer elementwise chain on the GPU: the NumPy replay (one CuPy kernel
    per primitive) against the CUDA backend (elementwise regions as ElementwiseKernels)."""
    import time

    n = ctx.pick(10**7, quick=10**6, smoke=1000)
    layers = ctx.pick(50, quick=50, smoke=3)
    x = np.linspace(-1.0, 1.0, n)
    reference = fg.grad(lambda v: _layers(v, layers))(x)
    dx = device_put(x, "cuda")
    sync = cp.cuda.get_current_stream().synchronize
    replay = fg.jit(fg.grad(lambda v: _layers(v, layers)), backend="numpy")
    fused = fg.jit(fg.grad(lambda v: _layers(v, layers)), backend="native")
    start = time.perf_counter()
    compiled = fused.lower(dx).compile()  # builds and launches each kernel once (CuPy compiles it)
    compile_s = time.perf_counter() - start
    pool = cp.get_default_memory_pool()
    peaks = {}
    for label, fn in (("replay", replay), ("kernels", fused)):
        fn(dx)
        sync()
        pool.free_all_blocks()
        before = pool.total_bytes()
        fn(dx)
        sync()
        peaks[label] = (pool.total_bytes() - before) / 2**20
    rows = [
        Entry("funcgrad cupy jit(grad) replay", _synced(lambda: replay(dx), sync), check=to_numpy),
        Entry("funcgrad cupy jit(grad) kernels", _synced(lambda: fused(dx), sync), check=to_numpy),
    ]
    torch = _torch_cuda()
    if torch is not None:
        tx = torch.tensor(x, device="cuda")

        def tchain(v: Any) -> Any:
            for _ in range(layers):
                v = torch.tanh(torch.sin(v) * 1.1 + 0.1)
            return torch.sum(v * v)

        rows.append(Entry("torch.func grad cuda", _synced(lambda: torch.func.grad(tchain)(tx), torch.cuda.synchronize),
                          check=lambda r: r.cpu().numpy()))
    return Table(
        "gpu_jit_kernels", f"GPU: jit(grad) of a {layers}-layer elementwise chain, n = {n}, float64",
        rows, reference, rtol=1e-9, unit="ms", baselines=("funcgrad cupy jit(grad) replay",),
        targets=[Target("GPU jit(grad) with CUDA kernels <= 0.5x the replay", "funcgrad cupy jit(grad) kernels",
                        ("funcgrad cupy jit(grad) replay",), 0.5, issue="25")],
        notes=[f"CUDA backend: {compiled.backend} ({compiled.lowered} equations in kernels, {compiled.left} "
               f"left to the replay{'; ' + compiled.why if compiled.why else ''}); building and compiling the "
               f"kernels took {compile_s:.2f} s (CuPy's disk cache makes a second process faster).",
               f"Memory pool growth of one call: replay {peaks['replay']:.1f} MiB, kernels "
               f"{peaks['kernels']:.1f} MiB.",
               "Wall clock; each timed call ends with a device synchronization."],
    )


def build(ctx: Context) -> list[Table]:
    """The GPU tables, or none when CuPy or a GPU is missing (the reason is printed)."""
    cp, why = gpu_status()
    if cp is None:
        print(f"  (gpu: skipped: {why})")
        return []
    return [mlp_table(ctx, cp), hvp_table(ctx, cp), jit_kernels_table(ctx, cp)]


def main(argv: list[str] | None = None) -> int:
    from .run import run_table

    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes, shorter timing")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, one sample (a self-test)")
    args = p.parse_args(argv)
    cp, why = gpu_status()
    if cp is None:
        print(f"GPU benchmarks skipped: {why}")
        return 0
    ctx = Context(quick=args.quick, smoke=args.smoke, clock="wall")
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    print(f"GPU: {name.decode() if isinstance(name, bytes) else name}; CuPy {cp.__version__}")
    for table in build(ctx):
        run_table(table, ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
