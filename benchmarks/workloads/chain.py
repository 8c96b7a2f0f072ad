"""(a) per-operation overhead, and (h) the Tensor layer on it.

A chain of 200 elementwise ops (sin, tanh alternating) on a 3-element float64
array, then a sum: the arrays are so small that the time is all overhead,
reported in microseconds per op.
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table, Target


def build(ctx: Context) -> list[Table]:
    length = ctx.pick(200, smoke=10)
    half = length // 2
    x = np.array([0.1, 0.2, 0.3])
    v = np.ones_like(x)

    # -- plain NumPy: the floor --------------------------------------------
    def np_forward():
        y = x
        for _ in range(half):
            y = np.tanh(np.sin(y))
        return np.sum(y)

    def np_grad():
        """Hand-written forward + backward: save what the backward needs, nothing else."""
        ins, outs = [], []
        y = x
        for _ in range(half):
            ins.append(y)
            y = np.sin(y)
            y = np.tanh(y)
            outs.append(y)
        g = np.ones_like(y)
        for i in range(half - 1, -1, -1):
            t = outs[i]
            g = g * (1.0 - t * t)
            g = g * np.cos(ins[i])
        return g

    def np_jvp():
        """Hand-written forward mode: carry the tangent along."""
        y, t = x, v
        for _ in range(half):
            t = t * np.cos(y)
            y = np.tanh(np.sin(y))
            t = t * (1.0 - y * y)
        return np.sum(y), np.sum(t)

    # -- funcgrad -------------------------------------------------------------
    def f(y):
        for _ in range(half):
            y = fnp.tanh(fnp.sin(y))
        return fnp.sum(y)

    fg_grad = fg.grad(f)
    reference = np_grad()
    tangent = np_jvp()[1]
    rows = [
        Entry("numpy forward", np_forward, group="forward", per=length),
        Entry("numpy hand fwd+bwd", np_grad, check=lambda g: g, per=length),
        Entry("numpy hand jvp", np_jvp, check=lambda r: r[1], group="jvp", expect=tangent, per=length),
        Entry("funcgrad forward", lambda: f(x), group="forward", per=length),
        Entry("funcgrad grad", lambda: fg_grad(x), check=lambda g: g, own_forward="funcgrad forward", per=length),
        Entry("funcgrad jvp", lambda: fg.jvp(f, (x,), (v,)), check=lambda r: r[1], group="jvp", expect=tangent, per=length),
    ]
    # -- issue 13: staged execution -------------------------------------------------
    jit_grad = fg.jit(fg.grad(f))
    grad_jit = fg.grad(fg.jit(f))
    rows += [
        Entry("funcgrad jit(grad)", lambda: jit_grad(x), check=lambda g: g),
        Entry("funcgrad grad(jit)", lambda: grad_jit(x), check=lambda g: g),
        Entry("funcgrad jit(grad) first call", lambda: fg.jit(fg.grad(f))(x), check=lambda g: g),
    ]

    # -- (h) funcgrad.tensor ----------------------------------------------------
    import funcgrad.tensor as ft

    def ft_backward():
        t = ft.tensor(x, requires_grad=True)
        y = t
        for _ in range(half):
            y = ft.tanh(ft.sin(y))
        y.sum().backward()
        return t.grad

    rows.append(Entry("funcgrad.tensor backward", ft_backward, check=lambda g: g))

    # -- peers --------------------------------------------------------------------
    a = peers.autograd()
    if a is not None:
        anp = a.np

        def af(y):
            for _ in range(half):
                y = anp.tanh(anp.sin(y))
            return anp.sum(y)

        ag_grad = a.ag.grad(af)
        rows.append(Entry("autograd grad", lambda: ag_grad(x), check=lambda g: g))
    torch = peers.torch()
    if torch is not None:
        tx = torch.from_numpy(x)
        tv = torch.from_numpy(v)

        def tf(y):
            for _ in range(half):
                y = torch.tanh(torch.sin(y))
            return y.sum()

        def torch_backward():
            t = tx.detach().requires_grad_(True)
            tf(t).backward()
            return t.grad

        def torch_forward():
            return tf(tx)

        tfunc_grad = torch.func.grad(tf)
        rows += [
            Entry("torch forward", torch_forward, group="forward"),
            Entry("torch eager backward", torch_backward, check=lambda g: g, own_forward="torch forward"),
            Entry("torch.func grad", lambda: tfunc_grad(tx), check=lambda g: g, own_forward="torch forward"),
            Entry("torch.func jvp", lambda: torch.func.jvp(tf, (tx,), (tv,)), check=lambda r: r[1], group="jvp", expect=tangent),
        ]
    j = peers.jax()
    if j is not None:
        jnp = j.np

        def jf(y):
            for _ in range(half):
                y = jnp.tanh(jnp.sin(y))
            return jnp.sum(y)

        jgrad = j.jax.grad(jf)
        jjit = j.jax.jit(jgrad)
        jx = jnp.asarray(x)
        rows += [
            Entry("jax eager grad", lambda: jgrad(jx).block_until_ready(), check=lambda g: g),
            Entry("jax jit grad", lambda: jjit(jx).block_until_ready(), check=lambda g: g),
        ]
    for e in rows:
        e.per = length
    return [Table(
        "per_op",
        f"(a)+(h) per-op overhead: chain of {length} elementwise ops (sin, tanh) on a 3-element float64 array",
        rows, reference, rtol=1e-9, unit="us",
        baselines=("numpy forward", "numpy hand fwd+bwd"),
        targets=[
            Target("(a) grad <= 2.5x hand NumPy fwd+bwd", "funcgrad grad", ("numpy hand fwd+bwd",), 2.5),
            Target("(a) jvp <= 2x hand NumPy jvp", "funcgrad jvp", ("numpy hand jvp",), 2.0),
            Target("jit(grad) <= 1.0x hand NumPy fwd+bwd", "funcgrad jit(grad)", ("numpy hand fwd+bwd",), 1.0, issue="13"),
            Target("jit(grad) >= 5x faster than PyTorch eager (<= 0.2x)", "funcgrad jit(grad)",
                   ("torch eager backward",), 0.2, issue="13"),
            Target("grad(jit) <= 1.0x eager grad", "funcgrad grad(jit)", ("funcgrad grad",), 1.0, issue="13"),
            Target("Tensor backward per op <= 1.3x fg.grad per op", "funcgrad.tensor backward", ("funcgrad grad",),
                   1.3, issue="12"),
        ],
        notes=["Times are per op of the chain (total / %d). 'hand fwd+bwd' saves each op's input or output "
               "and runs the backward by hand; 'hand jvp' carries the tangent by hand." % length,
               "(h): funcgrad.tensor builds the same graph through the PyTorch-style Tensor layer "
               "(tensor(..., requires_grad=True), .backward()); compare with 'torch eager backward'."],
    )]
