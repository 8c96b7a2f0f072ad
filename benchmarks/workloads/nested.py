"""(f) Third derivative of a scalar function of a scalar by nested grad.

f(x) = exp(sin(x)) + tanh(x) * x; by hand
f'''(x) = e^s (c^3 - 3 s c - c) + (6 t^2 - 2)(1 - t^2) x + 3 (-2 t (1 - t^2))
with s = sin x, c = cos x, t = tanh x.
"""

from __future__ import annotations

import math

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table, Target


def third_np(x: float) -> float:
    s, c, t = math.sin(x), math.cos(x), math.tanh(x)
    d = 1.0 - t * t
    return math.exp(s) * (c ** 3 - 3.0 * s * c - c) + (6.0 * t * t - 2.0) * d * x - 6.0 * t * d


def build(ctx: Context) -> list[Table]:
    x = 0.7
    xa = np.float64(x)

    def f(x):
        return fnp.exp(fnp.sin(x)) + fnp.tanh(x) * x

    d3 = fg.grad(fg.grad(fg.grad(f)))
    rows = [
        Entry("numpy hand (closed form)", lambda: third_np(x), check=lambda r: r),
        Entry("funcgrad grad(grad(grad))", lambda: d3(xa), check=lambda r: r),
    ]
    fg_jd3 = fg.jit(d3)  # issue 13: staged, run as Python-float code
    rows += [
        Entry("funcgrad jit(grad(grad(grad)))", lambda: fg_jd3(xa), check=lambda r: r),
        Entry("funcgrad jit(grad^3) first call", lambda: fg.jit(fg.grad(fg.grad(fg.grad(f))))(xa), check=lambda r: r),
    ]
    a = peers.autograd()
    if a is not None:
        anp = a.np
        g = a.ag.grad
        ad3 = g(g(g(lambda x: anp.exp(anp.sin(x)) + anp.tanh(x) * x)))
        rows.append(Entry("autograd grad(grad(grad))", lambda: ad3(xa), check=lambda r: r))
    torch = peers.torch()
    if torch is not None:
        def f_t(x):
            return torch.exp(torch.sin(x)) + torch.tanh(x) * x

        tx = torch.tensor(x, dtype=torch.float64)

        def torch_chain():
            t = tx.detach().requires_grad_(True)
            y = f_t(t)
            (d1,) = torch.autograd.grad(y, t, create_graph=True)
            (d2,) = torch.autograd.grad(d1, t, create_graph=True)
            (d3t,) = torch.autograd.grad(d2, t)
            return d3t

        tg = torch.func.grad
        td3 = tg(tg(tg(f_t)))
        rows += [
            Entry("torch autograd.grad(create_graph=True) x3", torch_chain, check=lambda r: r),
            Entry("torch.func grad(grad(grad))", lambda: td3(tx), check=lambda r: r),
        ]
    j = peers.jax()
    if j is not None:
        jnp = j.np
        jg = j.jax.grad
        jd3 = jg(jg(jg(lambda x: jnp.exp(jnp.sin(x)) + jnp.tanh(x) * x)))
        jj = j.jax.jit(jd3)
        jx = jnp.asarray(x)
        rows += [
            Entry("jax eager grad(grad(grad))", lambda: jd3(jx).block_until_ready(), check=lambda r: r),
            Entry("jax jit grad(grad(grad))", lambda: jj(jx).block_until_ready(), check=lambda r: r),
        ]
    return [Table(
        "nested", "(f) third derivative of f(x) = exp(sin x) + x tanh x at a scalar, by nested grad",
        rows, third_np(x), rtol=1e-10, unit="us", baselines=("numpy hand (closed form)",),
        targets=[Target("(f) nested third derivative <= 0.5x PyTorch's create_graph chain",
                        "funcgrad grad(grad(grad))", ("torch autograd.grad(create_graph=True) x3",), 0.5),
                 Target("jit(grad^3) <= 0.05x PyTorch's create_graph chain", "funcgrad jit(grad(grad(grad)))",
                        ("torch autograd.grad(create_graph=True) x3",), 0.05, issue="13")],
        notes=["The hand row evaluates the closed-form third derivative with math.* on a float."],
    )]
