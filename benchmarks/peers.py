"""The same workloads written for the peer libraries, each used only when installed."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


def _try(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # not installed, or broken install: skip that peer
        return None


def versions() -> dict[str, str]:
    out = {"numpy": np.__version__}
    for name in ("autograd", "torch", "jax"):
        mod = _try(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


def chain_entries(x: np.ndarray, per: int, length: int) -> list:
    from .workloads import Entry

    rows = []
    ag = _try("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")

        def f(x):
            for _ in range(length // 2):
                x = anp.tanh(anp.sin(x))
            return anp.sum(x)

        rows.append(Entry("autograd grad", lambda: ag.grad(f)(x), per, gradient=lambda g: g))
    torch = _try("torch")
    if torch is not None:
        torch.set_num_threads(1)

        def run():
            t = torch.tensor(x, requires_grad=True)
            y = t
            for _ in range(length // 2):
                y = torch.tanh(torch.sin(y))
            y.sum().backward()
            return t.grad.numpy()

        rows.append(Entry("torch eager grad", run, per, gradient=lambda g: g))
    jax = _try("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        jnp = importlib.import_module("jax.numpy")

        def jf(x):
            for _ in range(length // 2):
                x = jnp.tanh(jnp.sin(x))
            return jnp.sum(x)

        jg = jax.grad(jf)
        rows.append(Entry("jax eager grad", lambda: np.asarray(jg(x)), per, gradient=lambda g: g))
        jj = jax.jit(jg)
        rows.append(Entry("jax jit grad", lambda: np.asarray(jj(x)), per, gradient=lambda g: g))
    return rows


def mlp_entries(params: list, x: np.ndarray, y: np.ndarray, dtype: Any) -> list:
    from .workloads import Entry

    rows = []
    ag = _try("autograd")
    if ag is not None:
        anp = importlib.import_module("autograd.numpy")

        def loss(params, x, y):
            h = x
            for w, b in params[:-1]:
                h = anp.tanh(anp.dot(h, w) + b)
            w, b = params[-1]
            z = anp.dot(h, w) + b
            z = z - anp.max(z, axis=1, keepdims=True)
            return anp.mean(anp.log(anp.sum(anp.exp(z), axis=1)) - z[np.arange(len(y)), y])

        rows.append(Entry("autograd grad", lambda: ag.grad(loss)(params, x, y), gradient=lambda g: g))
    torch = _try("torch")
    if torch is not None:
        torch.set_num_threads(1)
        tparams = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)) for w, b in params]
        tx, ty = torch.tensor(x), torch.tensor(y)

        def run():
            for w, b in tparams:
                w.grad = b.grad = None
            h = tx
            for w, b in tparams[:-1]:
                h = torch.tanh(h @ w + b)
            w, b = tparams[-1]
            loss = torch.nn.functional.cross_entropy(h @ w + b, ty)
            loss.backward()
            return [(w.grad.numpy(), b.grad.numpy()) for w, b in tparams]

        rows.append(Entry("torch eager grad", run, gradient=lambda g: g))
    return rows
