"""(b) MLP 784-256-256-10, tanh, batch 128, softmax cross-entropy gradient,
float32 and float64; and (h) the same through funcgrad's Tensor layer."""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table, Target


def make_problem(dtype, sizes=(784, 256, 256, 10), batch=128, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype)
        params.append((w, (0.1 * rng.standard_normal(n)).astype(dtype)))
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    y = rng.integers(0, sizes[-1], batch)
    return params, x, y


# -- plain NumPy ----------------------------------------------------------------

def loss_np(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
    w, b = params[-1]
    z = h @ w + b
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return np.mean(lse - z[np.arange(len(y)), y])


def grad_np(params, x, y):
    """Hand-written forward + backward of the same MLP (the floor)."""
    hs = [x]
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
        hs.append(h)
    w, b = params[-1]
    z = h @ w + b
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    n = len(y)
    p[np.arange(n), y] -= 1
    g = p / n
    grads = [None] * len(params)
    grads[-1] = (hs[-1].T @ g, g.sum(0))
    g = g @ w.T
    for i in range(len(params) - 2, -1, -1):
        g = g * (1 - hs[i + 1] * hs[i + 1])
        grads[i] = (hs[i].T @ g, g.sum(0))
        if i:
            g = g @ params[i][0].T
    return grads


# -- funcgrad -------------------------------------------------------------------

def loss_fg(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = fnp.tanh(h @ w + b)
    w, b = params[-1]
    z = h @ w + b
    z = z - fnp.max(z, axis=1, keepdims=True)
    lse = fnp.log(fnp.sum(fnp.exp(z), axis=1))
    return fnp.mean(lse - z[np.arange(z.shape[0]), y])


def build(ctx: Context, dtype_name: str) -> list[Table]:
    dtype = np.dtype(dtype_name)
    sizes = ctx.pick((784, 256, 256, 10), smoke=(20, 8, 8, 3))
    batch = ctx.pick(128, smoke=4)
    params, x, y = make_problem(dtype, sizes, batch)
    reference = grad_np(params, x, y)
    fg_grad = fg.grad(loss_fg)
    rows = [
        Entry("numpy forward", lambda: loss_np(params, x, y), group="forward"),
        Entry("numpy hand fwd+bwd", lambda: grad_np(params, x, y), check=lambda g: g),
        Entry("funcgrad forward", lambda: loss_fg(params, x, y), group="forward"),
        Entry("funcgrad grad", lambda: fg_grad(params, x, y), check=lambda g: g, own_forward="funcgrad forward"),
    ]
    jit_grad = fg.jit(fg_grad)  # issue 13
    grad_jit = fg.grad(fg.jit(loss_fg))
    rows += [
        Entry("funcgrad jit(grad)", lambda: jit_grad(params, x, y), check=lambda g: g),
        Entry("funcgrad grad(jit)", lambda: grad_jit(params, x, y), check=lambda g: g),
        Entry("funcgrad jit(grad) first call", lambda: fg.jit(fg.grad(loss_fg))(params, x, y), check=lambda g: g),
    ]

    # (h) the Tensor layer
    import funcgrad.tensor as ft

    fparams = [(ft.tensor(w, requires_grad=True), ft.tensor(b, requires_grad=True)) for w, b in params]
    fx, fy = ft.tensor(x), ft.tensor(y)

    def ft_backward():
        for w, b in fparams:
            w.grad = b.grad = None
        h = fx
        for w, b in fparams[:-1]:
            h = ft.tanh(h @ w + b)
        w, b = fparams[-1]
        ft.nn.functional.cross_entropy(h @ w + b, fy).backward()
        return [(w.grad, b.grad) for w, b in fparams]

    rows.append(Entry("funcgrad.tensor backward", ft_backward, check=lambda g: g))

    a = peers.autograd()
    if a is not None:
        anp = a.np

        def aloss(params, x, y):
            h = x
            for w, b in params[:-1]:
                h = anp.tanh(anp.dot(h, w) + b)
            w, b = params[-1]
            z = anp.dot(h, w) + b
            z = z - anp.max(z, axis=1, keepdims=True)
            return anp.mean(anp.log(anp.sum(anp.exp(z), axis=1)) - z[np.arange(len(y)), y])

        ag_grad = a.ag.grad(aloss)
        rows.append(Entry("autograd grad", lambda: ag_grad(params, x, y), check=lambda g: g))
    torch = peers.torch()
    if torch is not None:
        tparams = [(torch.from_numpy(w).requires_grad_(True), torch.from_numpy(b).requires_grad_(True))
                   for w, b in params]
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def tloss(tparams, tx, ty):
            h = tx
            for w, b in tparams[:-1]:
                h = torch.tanh(h @ w + b)
            w, b = tparams[-1]
            return torch.nn.functional.cross_entropy(h @ w + b, ty)

        def torch_forward():
            with torch.no_grad():
                return tloss(tparams, tx, ty)

        def torch_backward():
            for w, b in tparams:
                w.grad = b.grad = None
            tloss(tparams, tx, ty).backward()
            return [(w.grad, b.grad) for w, b in tparams]

        plain = [(w.detach(), b.detach()) for w, b in tparams]
        tfunc_grad = torch.func.grad(tloss)
        rows += [
            Entry("torch forward (no_grad)", torch_forward, group="forward"),
            Entry("torch eager backward", torch_backward, check=lambda g: g, own_forward="torch forward (no_grad)"),
            Entry("torch.func grad", lambda: tfunc_grad(plain, tx, ty), check=lambda g: g,
                  own_forward="torch forward (no_grad)"),
        ]
    j = peers.jax()
    if j is not None:
        jnp = j.np

        def jloss(params, x, y):
            h = x
            for w, b in params[:-1]:
                h = jnp.tanh(h @ w + b)
            w, b = params[-1]
            z = h @ w + b
            z = z - jnp.max(z, axis=1, keepdims=True)
            return jnp.mean(jnp.log(jnp.sum(jnp.exp(z), axis=1)) - z[jnp.arange(z.shape[0]), y])

        jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in params]
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jgrad = j.jax.grad(jloss)
        jjit = j.jax.jit(jgrad)
        ready = j.jax.block_until_ready
        rows += [
            Entry("jax eager grad", lambda: ready(jgrad(jparams, jx, jy)), check=lambda g: g),
            Entry("jax jit grad", lambda: ready(jjit(jparams, jx, jy)), check=lambda g: g),
        ]
    shape = "-".join(map(str, sizes))
    return [Table(
        f"mlp{dtype.itemsize * 8}",
        f"(b)+(h) MLP {shape} tanh, batch {batch}, softmax cross-entropy gradient, {dtype.name}",
        rows, reference, rtol=2e-4 if dtype == np.float32 else 1e-9, unit="ms",
        baselines=("numpy forward", "numpy hand fwd+bwd"),
        targets=[Target(f"(b) {dtype.name} grad <= 1.1x hand NumPy fwd+bwd", "funcgrad grad",
                        ("numpy hand fwd+bwd",), 1.1),
                 Target(f"{dtype.name} jit(grad) <= 1.05x hand NumPy fwd+bwd", "funcgrad jit(grad)",
                        ("numpy hand fwd+bwd",), 1.05, issue="13"),
                 Target(f"{dtype.name} grad(jit) <= 1.0x eager grad", "funcgrad grad(jit)", ("funcgrad grad",), 1.0,
                        issue="13"),
                 Target(f"{dtype.name} first call of jit(grad) <= 3x one eager grad call",
                        "funcgrad jit(grad) first call", ("funcgrad grad",), 3.0, issue="13"),
                 Target(f"{dtype.name} Tensor MLP step <= 1.05x fg.grad", "funcgrad.tensor backward",
                        ("funcgrad grad",), 1.05, issue="12")],
        notes=["'hand fwd+bwd' is the backward written out in NumPy (three matmuls back, tanh' from the saved "
               "activations). The peers' forward rows are their own forward without a graph.",
               "(h): funcgrad.tensor runs the same model through the Tensor layer with "
               "ft.nn.functional.cross_entropy and .backward()."],
    )]
