"""(c) A 10^7-element elementwise function: gradient time over forward time.

f(x) = sum(sin(x) * tanh(x)) on float64; the arrays are far larger than the
caches, so this measures how much memory traffic and how many passes the
backward adds, not overhead.
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit.blocking import default_jit_threads

from .. import peers
from . import Context, Entry, Table, Target


def build(ctx: Context, n_full: int = 10**7) -> list[Table]:
    n = ctx.pick(n_full, quick=min(n_full, 10**6), smoke=1000)
    x = np.random.default_rng(0).uniform(-2.0, 2.0, n)

    def np_forward():
        return np.sum(np.sin(x) * np.tanh(x))

    def np_grad():
        """Hand-written: d/dx sin(x) tanh(x) = cos(x) tanh(x) + sin(x) (1 - tanh(x)^2)."""
        s = np.sin(x)
        t = np.tanh(x)
        _ = np.sum(s * t)
        g = np.cos(x)
        g *= t
        t *= t
        np.subtract(1.0, t, out=t)
        t *= s
        g += t
        return g

    def f(y):
        return fnp.sum(fnp.sin(y) * fnp.tanh(y))

    fg_grad = fg.grad(f)
    rows = [
        Entry("numpy forward", np_forward, group="forward"),
        Entry("numpy hand fwd+bwd", np_grad, check=lambda g: g, own_forward="numpy forward"),
        Entry("funcgrad forward", lambda: f(x), group="forward"),
        Entry("funcgrad grad", lambda: fg_grad(x), check=lambda g: g, own_forward="funcgrad forward"),
    ]
    jit_grad = fg.jit(fg_grad)  # issue 13: staged, temporaries reused with out=
    rows += [
        Entry("funcgrad jit(grad)", lambda: jit_grad(x), check=lambda g: g, own_forward="funcgrad forward"),
        Entry("funcgrad jit(grad) first call", lambda: fg.jit(fg.grad(f))(x), check=lambda g: g),
    ]
    threads = max(2, default_jit_threads())
    threaded = f"funcgrad jit(grad), {threads} threads"

    def jit_grad_threaded():
        """The same program with its elementwise blocks on ``threads`` threads (the harness pins
        every library, funcgrad included, to one thread: this row alone lifts that)."""
        pinned = fg.config.jit_threads
        fg.config.jit_threads = threads
        try:
            return jit_grad(x)
        finally:
            fg.config.jit_threads = pinned
    rows.append(Entry(threaded, jit_grad_threaded, check=lambda g: g, own_forward="funcgrad forward"))
    a = peers.autograd()
    if a is not None:
        anp = a.np
        ag_grad = a.ag.grad(lambda y: anp.sum(anp.sin(y) * anp.tanh(y)))
        rows.append(Entry("autograd grad", lambda: ag_grad(x), check=lambda g: g, own_forward="numpy forward"))
    torch = peers.torch()
    if torch is not None:
        tx = torch.from_numpy(x)

        def torch_backward():
            t = tx.detach().requires_grad_(True)
            (torch.sin(t) * torch.tanh(t)).sum().backward()
            return t.grad

        rows += [
            Entry("torch forward", lambda: (torch.sin(tx) * torch.tanh(tx)).sum(), group="forward"),
            Entry("torch eager backward", torch_backward, check=lambda g: g, own_forward="torch forward"),
        ]
    j = peers.jax()
    if j is not None:
        jnp = j.np

        def jf(y):
            return jnp.sum(jnp.sin(y) * jnp.tanh(y))

        jx = jnp.asarray(x)
        jgrad = j.jax.grad(jf)
        jjf, jjgrad = j.jax.jit(jf), j.jax.jit(jgrad)
        rows += [
            Entry("jax eager forward", lambda: jf(jx).block_until_ready(), group="forward"),
            Entry("jax eager grad", lambda: jgrad(jx).block_until_ready(), check=lambda g: g,
                  own_forward="jax eager forward"),
            Entry("jax jit forward", lambda: jjf(jx).block_until_ready(), group="forward"),
            Entry("jax jit grad", lambda: jjgrad(jx).block_until_ready(), check=lambda g: g,
                  own_forward="jax jit forward"),
        ]
    big = n_full == 10**7
    targets = [Target("(c) grad / plain NumPy forward <= 2.2", "funcgrad grad", ("numpy forward",), 2.2)] if big else [
        Target("jit(grad) / plain NumPy forward <= 1.9 (1e6 float64)", "funcgrad jit(grad)", ("numpy forward",), 1.9,
               issue="13")]
    if not big and ctx.clock == "wall":  # CPU time adds the threads up: only wall-clock time can show a gain
        targets.append(Target(f"jit(grad) on {threads} threads / plain NumPy forward <= 1.9 (1e6 float64, wall clock)",
                              threaded, ("numpy forward",), 1.9, issue="13"))
    return [Table(
        "elementwise" if big else f"elementwise_{n_full:.0e}".replace("+0", ""),
        f"(c) elementwise f(x) = sum(sin(x) * tanh(x)), {n:.0e} float64 elements: grad / forward",
        rows, np_grad(), rtol=1e-12, unit="ms", baselines=("numpy forward",),
        targets=targets,
        notes=["'x numpy forward' is the ratio the target is about; 'grad/own fwd' divides each gradient by "
               "its own library's forward (autograd's forward is NumPy's).",
               "Large NumPy arrays are allocated with transparent huge pages (madvise); on a shared machine the "
               "kernel's compaction for them adds 0.1-1 s of system time to some calls at random, which is "
               "where the wide IQRs of the NumPy-based rows come from (PyTorch's allocator does not ask for "
               "huge pages). Compare the 'min' column, and the target's ratio of fastest samples."]
        + (["--quick uses 1e6 elements (still far beyond the caches)."] if ctx.quick and not ctx.smoke else []),
    )]
