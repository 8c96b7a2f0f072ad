"""Multi-tensor gradient hooks, module full backward hooks and batched Hessians: the same scripts
run through funcgrad.tensor and through torch.

PyTorch's results are recorded in tests/fixtures/torch_hooks_compare.json (regenerate with
``PYTHONPATH=. python tests/fixtures/make_torch_hooks_compare.py`` when torch is installed); the
tests compare against that file, so they run without torch, and also live when torch is there.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft
from recorded_compare import as_json, close

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "torch_hooks_compare.json"
SCRIPTS = {}

W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
BIAS = np.array([0.1, -0.2])
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]])
V = np.array([0.3, -0.2, 0.9])


def script(fn):
    SCRIPTS[fn.__name__] = fn
    return fn


def _np(t):
    return None if t is None else np.array(t.detach().numpy(), copy=True)


def _flags(grads):
    return [g is not None for g in grads]


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to compare errors
        return [type(e).__name__, str(e).replace("torch.", "ft.").split("\n")[0][:100]]
    return None


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return sorted({str(x.message)[:100] for x in w if issubclass(x.category, UserWarning)})


def _linear(T):
    lin = T.nn.Linear(3, 2).double()
    with T.no_grad():
        lin.weight.copy_(T.tensor(W))
        lin.bias.copy_(T.tensor(BIAS))
    return lin


@script
def multi_grad_all(T):
    reg = T.autograd.graph.register_multi_grad_hook
    a = T.tensor(V, requires_grad=True)
    b = T.tensor(V * 2, requires_grad=True)
    c, d = a * b, a * b
    calls = []
    h = reg((a, b, c, d), lambda gs: calls.append([_np(g) for g in gs]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    h.remove()
    c.sum().backward(retain_graph=True)  # removed: no call
    y, z = a * 3, b * 4
    out = (c * y + z).sum()
    nonleaf = []
    reg((y, z), lambda gs: nonleaf.append(_flags(gs)))  # (PyTorch refuses leaves under autograd.grad)
    T.autograd.grad(out, (y,), retain_graph=True)
    T.autograd.grad(out, (a, b), retain_graph=True)
    (y.sum() * 2).backward()
    return {"calls": calls, "nonleaf": nonleaf}


@script
def multi_grad_any(T):
    reg = T.autograd.graph.register_multi_grad_hook
    a = T.tensor(V, requires_grad=True)
    y = a * 2
    z = y * 3
    seen = []
    h = reg((y, z), lambda g: seen.append(_np(g)), mode="any")
    (z * z).sum().backward(retain_graph=True)
    (z * z).sum().backward(retain_graph=True)
    h.remove()
    (z * z).sum().backward()
    return {"seen": seen, "a_grad": _np(a.grad),
            "bad_mode": _err(lambda: reg((a,), lambda g: None, mode="every"))}


@script
def module_hooks(T):
    lin = _linear(T)
    x = T.tensor(X, requires_grad=True)
    seen = []
    h = lin.register_full_backward_hook(lambda m, gin, gout: seen.append(([_np(g) for g in gin],
                                                                           [_np(g) for g in gout])))
    (lin(x) ** 2).sum().backward()
    h.remove()
    out = {"seen": seen, "x_grad": _np(x.grad), "w_grad": _np(lin.weight.grad)}
    x.grad = None
    lin.weight.grad = None
    hp = lin.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 10,))
    hr = lin.register_full_backward_hook(lambda m, gin, gout: (gin[0] + 1,))
    (lin(x) ** 2).sum().backward()
    out.update(pre_x_grad=_np(x.grad), pre_w_grad=_np(lin.weight.grad))
    hp.remove()
    hr.remove()
    lin.register_full_backward_hook(lambda m, gin, gout: None)
    out["inplace_out"] = _err(lambda: lin(x).add_(1))
    out["no_input_grad_warns"] = _warned(lambda: lin(T.tensor(X)).sum().backward())
    return out


@script
def module_hook_errors(T):
    lin = _linear(T)
    x = T.tensor(X, requires_grad=True)
    h = lin.register_full_backward_hook(lambda m, gin, gout: (gin[0], gin[0]))
    out = {"hook_len": _err(lambda: lin(x).sum().backward())}
    h.remove()
    h = lin.register_full_backward_pre_hook(lambda m, gout: (gout[0], gout[0]))
    out["pre_len"] = _err(lambda: lin(x).sum().backward())
    h.remove()
    lin2 = _linear(T)
    lin2.register_full_backward_hook(lambda m, gin, gout: (T.ones(2, 3, dtype=T.float64),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["no_input_return"] = _err(lambda: lin2(T.tensor(X)).sum().backward())

    class Three(T.nn.Module):
        def forward(self, a, k, b):
            return a * k + b, 3, b * 2

    class Dict(T.nn.Module):
        def forward(self, a):
            return {"y": a * 2}

    m = Three()
    got = []
    m.register_full_backward_hook(lambda mod, gin, gout: got.append(([_np(g) for g in gin], [_np(g) for g in gout])))
    a = T.tensor(V, requires_grad=True)
    res = m(a, 2.0, T.tensor(V))
    res[0].sum().backward()
    out.update(three=got, three_name=res[0].grad_fn.name(), three_req=[res[0].requires_grad, res[2].requires_grad])
    dm = Dict()
    dm.register_full_backward_hook(lambda *args: None)
    out["dict_warns"] = _warned(lambda: dm(a))
    return out


@script
def batched_hessian(T):
    AF = T.autograd.functional
    w = T.tensor(W)

    def f(t):
        u = T.tanh(w @ t)
        return (u * u).sum() + 0.5 * (t @ t)

    x = T.tensor(V)
    return {"vec": _np(AF.hessian(f, x, vectorize=True)), "default": _np(AF.hessian(f, x)),
            "jac_vec": _np(AF.jacobian(lambda t: T.tanh(w @ t), x, vectorize=True)),
            "two": [[_np(h) for h in row] for row in AF.hessian(lambda p, q: ((p * q) ** 2).sum(), (x, x * 2),
                                                                  vectorize=True)]}


def run(T, name):
    return SCRIPTS[name](T)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_matches_recorded_torch(name):
    ref = json.loads(FIXTURE.read_text())["results"][name]
    close(as_json(run(ft, name)), ref, name)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="live comparison needs torch")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_matches_live_torch(name):
    import torch

    close(as_json(run(ft, name)), as_json(run(torch, name)), name)
