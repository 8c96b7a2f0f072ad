"""The autograd graph of ``ft.nn.RNN`` / ``LSTM`` / ``GRU`` against PyTorch's, recorded by
``tests/fixtures/make_torch_rnn_graph.py`` (torch 2.13, CPU) in ``torch_rnn_graph.json``: ``grad_fn`` names of
``output``, ``h_n`` and ``c_n`` with their ``next_functions`` two levels deep, which are views, their versions,
and which in-place writes before ``backward()`` raise, with PyTorch's message.

Where funcgrad differs on purpose, :data:`KNOWN` says why (each one is checked to still differ, so the table
stays true): the GRU's fused cell is one ``GruPointwiseBackward0`` node where PyTorch's CPU composite records
about ten ops a step; a float64 LSTM keeps the fused layer node where PyTorch falls back to a composite; a
packed LSTM sequence runs on the padded batch as one masked node (a GRU's or RNN's runs step by batch size, as
PyTorch's).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import funcgrad.tensor as ft

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))

from torch_rnn_graph_cases import (  # noqa: E402
    EXTRA_CASES, GRAPH_CASES, INPLACE_CONFIGS, TARGETS, chain, run_case, run_inplace,
)

RECORDED = json.loads((FIXTURES / "torch_rnn_graph.json").read_text())

# cases whose graph differs from PyTorch's by design, and why
KNOWN = {
    "LSTM-float64": "one fused layer node in every dtype (PyTorch's oneDNN layer is float32 only; in float64 it "
                    "records the cell's ops step by step)",
    "LSTM-packed": "an LSTM's packed sequence runs on the padded batch as one masked-sequence node (PyTorch's "
                   "steps by batch size, the cell's ops each)",
    "LSTM-bi-packed-h0-unsorted": "as LSTM-packed",
}


def _cells_as_one(graph: Any, cell: str) -> Any:
    """``graph`` with every node named ``cell`` (a GRU step's last node) as ``"<cell>"``, its inputs dropped."""
    if isinstance(graph, str):
        return "<cell>" if graph == cell else graph
    if isinstance(graph, list) and len(graph) == 2 and isinstance(graph[0], str) and isinstance(graph[1], list):
        if graph[0] == cell:
            return "<cell>"
        return [graph[0], [_cells_as_one(g, cell) for g in graph[1]]]
    if isinstance(graph, dict):
        return {k: _cells_as_one(v, cell) for k, v in graph.items()}
    return graph


@pytest.mark.parametrize("name", [n for n in GRAPH_CASES + EXTRA_CASES if n not in KNOWN and n != "LSTM-proj"])
def test_recurrent_graph_is_pytorchs(name):
    got, want = run_case(ft, name), RECORDED["graphs"][name]
    if name.startswith("GRU"):  # one fused node per step (PyTorch's GRU cell on the CPU: ~10 recorded ops)
        got, want = _cells_as_one(got, "GruPointwiseBackward0"), _cells_as_one(want, "AddBackward0")
    assert got == want


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_known_graph_differences_still_differ(name):
    got, want = run_case(ft, name), RECORDED["graphs"][name]
    assert got != want, f"{name} now matches PyTorch: drop it from KNOWN"
    for key in want:  # what does match: the same results, none a view, each requiring grad, at version 0
        assert {k: got[key][k] for k in ("view", "requires_grad", "version")} == {
            k: want[key][k] for k in ("view", "requires_grad", "version")}
    if name == "LSTM-float64":  # the float32 graph, in float64
        assert got == RECORDED["graphs"]["LSTM-l1-uni-tm-none"]


def test_lstm_proj_size_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="proj_size"):
        ft.nn.LSTM(3, 4, proj_size=2)


def _key(outcome: str | None) -> Any:
    """What an in-place outcome must share with PyTorch's: ok, or the error's kind and (for a tensor a node saved
    as its output) the node named; the versions of parameters differ (PyTorch's initialisation writes them once
    in place, funcgrad's makes them), and PyTorch's GRU/RNN unbind the initial state (its error on a modified
    unbound view is worded apart)."""
    if outcome is None or outcome == "ok":
        return outcome
    where, _, message = outcome.partition(": ")
    saved_as = message.split("which is ")[1].split(",")[0] if "which is output 0 of MkldnnRnnLayer" in message \
        else None
    kind = "view" if "Unbind" in message else "inplace" if "modified by an inplace operation" in message else message
    return where, kind, saved_as


@pytest.mark.parametrize("name", INPLACE_CONFIGS)
def test_in_place_writes_before_backward_as_pytorch(name):
    for target in TARGETS:
        got, want = run_inplace(ft, name, target), RECORDED["inplace"][name][target]
        assert _key(got) == _key(want), (target, got, want)
        if want is not None and "MkldnnRnnLayer" in want:  # the layer node's own error: PyTorch's words exactly
            assert got == want


def test_the_recorded_layer_error_names_the_output_and_its_versions():
    message = RECORDED["inplace"]["LSTM-l1-uni-tm-h0"]["output"]
    assert "output 0 of MkldnnRnnLayer, is at version 1; expected version 0" in message
    assert run_inplace(ft, "LSTM-l1-uni-tm-h0", "output") == message


def test_chain_reads_two_levels():
    x = ft.randn(2, requires_grad=True)
    y = (x * 2).sum()
    assert chain(y.grad_fn) == ["SumBackward0", [["MulBackward0", ["torch::autograd::AccumulateGrad", None]]]]


@pytest.mark.parametrize("op,name", [("transpose_", "TransposeBackward1"), ("swapdims_", "TransposeBackward1"),
                                     ("t_", "TBackward1")])
def test_in_place_transposes_are_named_as_pytorchs(op, name):
    """(a GRU's or RNN's batch-first output is its stacked output transposed in place, as PyTorch's)"""
    x = ft.randn(2, 3, dtype=ft.float64, requires_grad=True)
    y = x * 1
    getattr(y, op)(*(() if op == "t_" else (0, 1)))
    assert y.grad_fn.name() == type(y.grad_fn).__name__ == name
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
    assert tuple(y.shape) == (3, 2) and y._version == 1 and not y._is_view()
    (y * ft.arange(6.0, dtype=ft.float64).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_batch_first_recurrent_modules_compile_fullgraph_as_eager(mode):
    """The time-major copy of a batch-first input is staged by ft.compile (no host conversion of the input)."""
    ft.manual_seed(5)
    net = getattr(ft.nn, mode)(3, 4, batch_first=True).double()
    x = ft.randn(2, 3, 3, dtype=ft.float64)
    fast = ft.compile(net, fullgraph=True)
    grads = []
    for run in (fast, net):
        out, _ = run(x)
        (out ** 2).sum().backward()
        grads.append([p.grad.numpy().copy() for p in net.parameters()])
        net.zero_grad()
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", ["GRU", "RNN"])
def test_packed_steps_on_a_device_match_the_host(mode):
    """A GRU's or RNN's packed path (slices, cats, index_select of the states) on the fake device, which refuses
    host copies, gives the host's outputs and gradients."""
    sys.path.insert(0, str(FIXTURES.parent))
    import fake_backend as fb
    from funcgrad.tensor.nn.utils.rnn import pack_padded_sequence

    rng = np.random.default_rng(3)
    x_np, h_np = rng.standard_normal((3, 3, 3)), rng.standard_normal((4, 3, 2))
    results = []
    with fb.as_cuda():
        for dev in ("cpu", "cuda"):
            ft.manual_seed(0)
            net = getattr(ft.nn, mode)(3, 2, num_layers=2, bidirectional=True).double().to(dev)
            x = ft.tensor(x_np, device=dev, requires_grad=True)
            h0 = ft.tensor(h_np, device=dev, requires_grad=True)
            packed = pack_padded_sequence(x, [2, 3, 1], enforce_sorted=False)
            with fb.no_host_sync() if dev != "cpu" else contextlib.nullcontext():
                out, h = net(packed, h0)
                ((out.data ** 2).sum() + (h ** 3).sum()).backward()
            results.append([t.detach().cpu().numpy() for t in (out.data, h, x.grad, h0.grad, net.weight_hh_l1.grad)])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-12)



def test_one_layer_final_states_recorded_in_one_frame_as_the_general_stack():
    """A one-layer LSTM's ``h_n``/``c_n`` (a stack of one tensor, recorded by the view recorder as a copy) against
    the general stack (anomaly mode takes the general path): the same node class and edges, no view, its own
    version counter, the same gradients to second order; under ``no_grad`` a plain copy."""
    ft.manual_seed(3)
    net = ft.nn.LSTM(3, 4).double()
    x = ft.randn(5, 2, 3, dtype=ft.float64)
    grads = []
    for general in (False, True):
        with ft.autograd.detect_anomaly() if general else contextlib.nullcontext():
            out, (h, c) = net(x)
            assert [g.grad_fn.name() for g in (h, c)] == ["StackBackward0"] * 2
            assert [g.grad_fn.next_functions[0][1] for g in (h, c)] == [1, 2]
            assert h._base is None and not h._is_view() and h._version_counter is not out._version_counter
            (g1,) = ft.autograd.grad((h * h).sum() + c.sum(), net.weight_hh_l0, create_graph=True)
            (g2,) = ft.autograd.grad((g1 * g1).sum(), net.weight_ih_l0)
            grads.append((g1.detach().numpy(), g2.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)
    h[0, 0, 0] = 1.0  # (a copy: writing to it is no error, and leaves the layer's output alone)
    with ft.no_grad():
        _, (h, _) = net(x)
    assert h.grad_fn is None and h._base is None and tuple(h.shape) == (1, 2, 4)
