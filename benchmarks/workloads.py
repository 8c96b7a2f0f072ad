"""Workloads, each written side by side for funcgrad, hand-written NumPy and the peers.

Every workload returns a list of ``Entry`` rows: a name, a callable to time,
and the value it computes, so the runner can check that all libraries agree
before it times anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from . import peers


@dataclass
class Entry:
    name: str
    fn: Callable[[], Any]
    per: int = 1  # divide the time by this (e.g. number of ops)
    gradient: Callable[[Any], Any] | None = None  # maps fn's result to the gradient to check


# --------------------------------------------------------------------------
# (a) per-operation overhead: a chain of elementwise ops on a 3-element array

CHAIN_LENGTH = 200


def _chain_fg(x):
    for _ in range(CHAIN_LENGTH // 2):
        x = fnp.sin(x)
        x = fnp.tanh(x)
    return fnp.sum(x)


def _chain_numpy_fwd(x):
    for _ in range(CHAIN_LENGTH // 2):
        x = np.sin(x)
        x = np.tanh(x)
    return np.sum(x)


def _chain_numpy_grad(x):
    """Hand-written forward + backward: the floor for any tape."""
    saved = []
    for _ in range(CHAIN_LENGTH // 2):
        saved.append(x)
        x = np.sin(x)
        saved.append(x)
        x = np.tanh(x)
    g = np.ones_like(x)
    for i in range(CHAIN_LENGTH - 1, -1, -1):
        if i % 2:
            t = np.tanh(saved[i])
            g = g * (1 - t * t)
        else:
            g = g * np.cos(saved[i])
    return g


def per_op_overhead() -> tuple[str, list[Entry], Any]:
    x = np.array([0.1, 0.2, 0.3])
    n = CHAIN_LENGTH
    rows = [
        Entry("numpy forward", lambda: _chain_numpy_fwd(x), n),
        Entry("numpy hand fwd+bwd", lambda: _chain_numpy_grad(x), n, gradient=lambda g: g),
        Entry("funcgrad forward", lambda: _chain_fg(x), n),
        Entry("funcgrad grad", lambda: fg.grad(_chain_fg)(x), n, gradient=lambda g: g),
        Entry("funcgrad jvp", lambda: fg.jvp(_chain_fg, (x,), (np.ones(3),)), n),
    ]
    rows += peers.chain_entries(x, n, CHAIN_LENGTH)
    return "per-op overhead (us/op, chain of 200 ops on 3 elements)", rows, _chain_numpy_grad(x)


# --------------------------------------------------------------------------
# (b) MLP 784-256-256-10, tanh, batch 128, softmax cross-entropy gradient

def mlp_params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [784, 256, 256, 10]
    params = []
    for m, n in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((m, n)).astype(dtype) / np.sqrt(m), np.zeros(n, dtype)))
    x = rng.standard_normal((128, 784)).astype(dtype)
    y = rng.integers(0, 10, 128)
    return params, x, y


def mlp_loss_fg(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = fnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    m = fnp.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = fnp.log(fnp.sum(fnp.exp(z), axis=1))
    picked = z[np.arange(z.shape[0]), y]
    return fnp.mean(lse - picked)


def mlp_loss_np(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    z = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return np.mean(lse - z[np.arange(len(y)), y])


def mlp_grad_np(params, x, y):
    """Hand-written backward of the same MLP (the floor)."""
    hs = [x]
    h = x
    for w, b in params[:-1]:
        h = np.tanh(h @ w + b)
        hs.append(h)
    w, b = params[-1]
    logits = h @ w + b
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    p = e / e.sum(axis=1, keepdims=True)
    n = len(y)
    p[np.arange(n), y] -= 1
    g = p / n
    grads = [None] * len(params)
    grads[-1] = (hs[-1].T @ g, g.sum(0))
    g = g @ w.T
    for i in range(len(params) - 2, -1, -1):
        g = g * (1 - hs[i + 1] ** 2)
        w, _ = params[i]
        grads[i] = (hs[i].T @ g, g.sum(0))
        g = g @ w.T
    return grads


def mlp(dtype) -> tuple[str, list[Entry], Any]:
    params, x, y = mlp_params(dtype)
    rows = [
        Entry("numpy forward", lambda: mlp_loss_np(params, x, y)),
        Entry("numpy hand fwd+bwd", lambda: mlp_grad_np(params, x, y), gradient=lambda g: g),
        Entry("funcgrad forward", lambda: mlp_loss_fg(params, x, y)),
        Entry("funcgrad grad", lambda: fg.grad(mlp_loss_fg)(params, x, y), gradient=lambda g: g),
    ]
    rows += peers.mlp_entries(params, x, y, dtype)
    return f"MLP 784-256-256-10 tanh, batch 128, {np.dtype(dtype).name} (ms)", rows, mlp_grad_np(params, x, y)


WORKLOADS: dict[str, Callable[[], tuple[str, list[Entry], Any]]] = {
    "per_op": per_op_overhead,
    "mlp32": lambda: mlp(np.float32),
    "mlp64": lambda: mlp(np.float64),
}
