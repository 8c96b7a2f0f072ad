"""Optimizer state as PyTorch lays it out (issue 29): the live ``state[p]`` and ``state_dict()`` of
every optimizer hold PyTorch's slots, in its order, and a state saved by torch (recorded in
tests/fixtures/torch_optim_state.pt by make_torch_optim_state.py, read here with ft.load, no torch
needed) loads into ft.optim and resumes to torch's parameters."""

from __future__ import annotations

import collections
import json
import os
import sys

import numpy as np
import pytest

import funcgrad.tensor as ft

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
sys.path.insert(0, FIXTURES)
import make_torch_optim as mk  # noqa: E402

with open(os.path.join(FIXTURES, "torch_optim_state.json")) as _f:
    RECORD = json.load(_f)
_SAVED = ft.load(os.path.join(FIXTURES, "torch_optim_state.pt"))
TORCH_STATES, TORCH_SCHEDULERS = _SAVED["optimizers"], _SAVED["schedulers"]
with open(os.path.join(FIXTURES, "torch_lr_scheduler.json")) as _f:
    LR_SEQUENCES = {c["name"]: c for c in json.load(_f)["cases"]}


def make(expr, params):
    w, b = params
    return eval(expr, {"optim": ft.optim, "P": [w, b], "w": w, "b": b})  # noqa: S307


def params_at(values):
    return [ft.tensor(values[0], dtype=ft.float64, requires_grad=True),
            ft.tensor(values[1], dtype=ft.float64, requires_grad=True)]


def steps(opt, params, n):
    """As make_torch_optim_state.py's: ``n`` steps, or ``n // 5`` closure calls of LBFGS."""
    def closure():
        opt.zero_grad()
        loss = mk.loss_fn(*params, ft)
        loss.backward()
        return loss

    lbfgs = isinstance(opt, ft.optim.LBFGS)
    for _ in range(n // 5 if lbfgs else n):
        if lbfgs:
            opt.step(closure)
        else:
            closure()
            opt.step()


def _same_entry(got, want, where, rtol):
    """A state entry as PyTorch's: tensors of its dtype and shape and values, lists of them, plain numbers."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _same_entry(g, w, f"{where}[{i}]", rtol)
    elif want is None or isinstance(want, (int, float)):
        assert type(got) is type(want), (where, got, want)
        assert got == want if want is None or isinstance(want, int) else abs(got - want) <= rtol * abs(want), where
    else:
        assert got.dtype is want.dtype and got.shape == want.shape, where
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=1e-14, err_msg=where)


@pytest.mark.parametrize("name", sorted(RECORD["cases"]))
def test_state_dict_layout_and_values_are_torchs(name):
    case = RECORD["cases"][name]
    params = params_at([mk.W0, mk.B0])
    opt = make(case["expr"], params)
    steps(opt, params, 10)
    ours, theirs = opt.state_dict(), TORCH_STATES[name]
    assert list(ours) == ["state", "param_groups"]
    assert [list(g) for g in ours["param_groups"]] == [list(g) for g in theirs["param_groups"]]
    for mine, want in zip(ours["param_groups"], theirs["param_groups"]):
        assert {k: v for k, v in mine.items() if k != "params"} == {k: v for k, v in want.items() if k != "params"}
    assert list(ours["state"]) == list(theirs["state"])
    for idx, want in theirs["state"].items():
        got = ours["state"][idx]
        assert list(got) == list(want), (name, idx)
        for slot, v in want.items():
            # torch's NAdam keeps mu_product as a float32 tensor (step's dtype) and rounds its moments with it
            rtol = 1e-6 if getattr(v, "dtype", None) is ft.float32 else 1e-7 if name.startswith("nadam") else \
                1e-8 if name.startswith("lbfgs") else 1e-10
            _same_entry(got[slot], v, f"{name} {idx} {slot}", rtol)
    # the live state holds the same slots, as tensors the user can read and edit
    live = opt.state[opt.param_groups[0]["params"][0]]  # (state index 0: the first parameter optimized)
    assert list(live) == list(theirs["state"].get(0, {})) and "functional" not in live


@pytest.mark.parametrize("name", sorted(RECORD["cases"]))
def test_a_state_saved_by_torch_resumes_identically(name):
    case = RECORD["cases"][name]
    params = params_at(case["params_10"])
    opt = make(case["expr"], params)
    opt.load_state_dict(TORCH_STATES[name])
    steps(opt, params, 10)
    # ASGD's eta is a float32 tensor in an uninterrupted run, cast to the parameters' float64 on loading
    # (PyTorch's load_state_dict does the same), so a resumed run differs from it in the 9th digit
    rtol = 1e-7 if name.startswith("asgd") else 1e-9
    np.testing.assert_allclose(params[0].detach().numpy(), case["params_20"][0], rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(params[1].detach().numpy(), case["params_20"][1], rtol=rtol, atol=1e-12)


def test_state_is_a_defaultdict_for_custom_optimizers():
    class SignSGD(ft.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        @ft.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                    state["step"] += 1
                    p.add_(p.grad.sign(), alpha=-group["lr"])

    p = ft.nn.Parameter(ft.tensor([1.0, -2.0]))
    opt = SignSGD([p])
    assert isinstance(opt.state, collections.defaultdict)
    for _ in range(3):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    assert opt.state[p]["step"] == 3 and p.tolist() == pytest.approx([0.7, -1.7])
    assert opt.state_dict()["state"] == {0: {"step": 3}}


def test_editing_the_live_state_changes_the_next_step():
    p = ft.nn.Parameter(ft.tensor([1.0]))
    opt = ft.optim.SGD([p], lr=0.1, momentum=0.9)
    (p * p).sum().backward()
    opt.step()
    assert opt.state[p]["momentum_buffer"].tolist() == [2.0]
    opt.state[p]["momentum_buffer"].zero_()  # in place
    opt.zero_grad()
    (p * 0).sum().backward()
    before = p.item()
    opt.step()
    assert p.item() == before  # zero gradient, zeroed buffer: no move
    opt.state[p]["momentum_buffer"] = ft.tensor([10.0])  # replaced
    opt.step()
    assert p.item() == pytest.approx(before - 0.1 * 9.0)


@pytest.mark.parametrize("foreach", [False, True])
def test_a_slot_tensor_is_updated_in_place_from_step_to_step(foreach):
    """PyTorch updates its buffers in place: the state's tensor stays the same object, and a reference
    taken before a step sees the step's values (its memory is the new state's: a view taken before the
    step keeps the old values, unlike PyTorch's)."""
    p = ft.nn.Parameter(ft.tensor([1.0, 2.0]))
    opt = ft.optim.SGD([p], lr=0.1, momentum=0.9, foreach=foreach)
    (p * p).sum().backward()
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    want = 2.0 * p.detach().numpy() + 0.9 * buf.numpy()
    opt.zero_grad()
    (p * p).sum().backward()
    opt.step()
    assert opt.state[p]["momentum_buffer"] is buf
    np.testing.assert_allclose(buf.numpy(), want, rtol=1e-6)


def scheduled(expr):
    p1, p2 = ft.zeros(2, requires_grad=True), ft.zeros(2, requires_grad=True)
    opt = ft.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.05}], lr=0.1, momentum=0.9)
    return opt, eval(expr, {"lr_scheduler": ft.optim.lr_scheduler, "opt": opt})  # noqa: S307


def advance(opt, sched, t):
    opt.step()
    if type(sched).__name__ == "ReduceLROnPlateau":
        sched.step(mk.METRICS[t])
    else:
        sched.step()


def plain(v):
    """A state_dict value for comparison: tensors as lists, nested containers alike."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v.tolist() if isinstance(v, ft.Tensor) else v


@pytest.mark.parametrize("name, expr", mk.SCHEDULERS)
def test_scheduler_state_dict_is_torchs(name, expr):
    opt, sched = scheduled(expr)
    for t in range(5):
        advance(opt, sched, t)
    ours, theirs = sched.state_dict(), TORCH_SCHEDULERS[name]["sched"]
    assert list(ours) == list(theirs) == RECORD["schedulers"][name]["keys"]
    for k in theirs:
        same_value(plain(ours[k]), plain(theirs[k]), f"{name}.{k}")


def same_value(got, want, path):
    """Numbers to 1e-12 (relative), containers item by item, anything else equal."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), path
        for k in want:
            same_value(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            same_value(g, w, f"{path}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=1e-12), path
    else:
        assert got == want and type(got) is type(want), path


@pytest.mark.parametrize("name, expr", mk.SCHEDULERS)
def test_a_scheduler_state_saved_by_torch_resumes_identically(name, expr):
    opt, sched = scheduled(expr)
    opt.load_state_dict(TORCH_SCHEDULERS[name]["opt"])
    sched.load_state_dict(TORCH_SCHEDULERS[name]["sched"])
    want = LR_SEQUENCES[name]["lrs"]
    assert [g["lr"] for g in opt.param_groups] == pytest.approx(want[5], rel=1e-12)
    for t in range(5, 30):
        advance(opt, sched, t)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx(want[t + 1], rel=1e-12), (name, t)
