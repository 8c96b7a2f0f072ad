"""``ft.nn.utils.rnn`` against torch 2.13: values, gradients and error messages of the cases in
tests/fixtures/torch_rnn_utils_cases.py, recorded by tests/fixtures/make_torch_rnn_utils.py into
torch_rnn_utils.json (also compared live when torch is importable), and semantics the cases do not see
(module layout, PackedSequence fields and conversions, device data)."""

from __future__ import annotations

import importlib
import json
import pathlib
import sys

import numpy as np
import pytest

TESTS = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS / "fixtures"))

import fake_backend as fb  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
from torch_rnn_utils_cases import CASES, ERRORS, OWN_MESSAGES, run_case, run_error  # noqa: E402

RECORDED = json.loads((TESTS / "fixtures" / "torch_rnn_utils.json").read_text())
rnn = ft.nn.utils.rnn


def _live_torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def _references(record_of):
    """The recorded torch result, and the live one too when torch is importable."""
    refs = [record_of(RECORDED)]
    torch = _live_torch()
    if torch is not None:
        refs.append(record_of(torch))
    return refs


def _assert_same(ours, theirs):
    assert ours["outputs"].keys() == theirs["outputs"].keys()
    for key, want in theirs["outputs"].items():
        got = ours["outputs"][key]
        if want is None:
            assert got is None, key
            continue
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), key
        np.testing.assert_allclose(np.asarray(got["values"], dtype=float), np.asarray(want["values"], dtype=float),
                                   rtol=1e-6, atol=1e-12, err_msg=key)
    assert len(ours["grads"]) == len(theirs["grads"])
    for got, want in zip(ours["grads"], theirs["grads"]):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-12)
    assert ours.get("parameter_grads", {}).keys() == theirs.get("parameter_grads", {}).keys()
    for key, want in theirs.get("parameter_grads", {}).items():
        np.testing.assert_allclose(np.asarray(ours["parameter_grads"][key]), np.asarray(want), rtol=1e-6, atol=1e-12,
                                   err_msg=key)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    ours = run_case(ft, name)
    for theirs in _references(lambda src: src["cases"][name] if isinstance(src, dict) else run_case(src, name)):
        _assert_same(ours, theirs)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    ours = run_error(ft, name)
    if name in OWN_MESSAGES:  # torch packs past the end of the input silently; funcgrad refuses
        assert RECORDED["errors"][name]["type"] == "none"
        assert ours["type"] == "RuntimeError" and "exceeds" in ours["message"] and "time steps" in ours["message"]
        return
    for theirs in _references(lambda src: src["errors"][name] if isinstance(src, dict) else run_error(src, name)):
        assert ours == theirs


def test_fixture_covers_every_case():
    assert RECORDED["cases"].keys() == CASES.keys() and RECORDED["errors"].keys() == ERRORS.keys()


def test_module_layout():
    from funcgrad.tensor.nn.utils.rnn import pad_sequence
    import funcgrad.tensor.nn.utils.rnn as module

    assert ft.nn.utils.rnn is module and module.pad_sequence is pad_sequence
    assert ft.nn.utils.clip_grad_norm_.__module__ == "funcgrad.tensor.nn.utils"


def test_packed_sequence_fields_and_conversions():
    seqs = [ft.tensor([1.0, 2.0, 3.0]), ft.tensor([4.0]), ft.tensor([5.0, 6.0])]
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    assert isinstance(packed, tuple) and packed._fields == ("data", "batch_sizes", "sorted_indices",
                                                            "unsorted_indices")
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert data.tolist() == [1.0, 5.0, 4.0, 2.0, 6.0, 3.0]
    assert batch_sizes.tolist() == [3, 2, 1] and batch_sizes.dtype == ft.int64 and batch_sizes.device.type == "cpu"
    assert sorted_indices.tolist() == [0, 2, 1] and unsorted_indices.tolist() == [0, 2, 1]
    as_double = packed.double()
    assert isinstance(as_double, rnn.PackedSequence) and as_double.data.dtype == ft.float64
    assert as_double.batch_sizes is packed.batch_sizes and packed.to(ft.float32) is packed
    assert not packed.is_cuda
    rebuilt = rnn.PackedSequence(data, batch_sizes, sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        rnn.PackedSequence(data, [3, 2, 1])


def test_round_trip_gives_the_sequences_back():
    rng = np.random.default_rng(0)
    seqs = [ft.tensor(rng.standard_normal((n, 2))) for n in (2, 5, 1, 5)]
    for got, want in zip(rnn.unpack_sequence(rnn.pack_sequence(seqs, enforce_sorted=False)), seqs):
        assert np.array_equal(got.numpy(), want.numpy())


def test_on_a_device_matches_the_host():
    rng = np.random.default_rng(1)
    host = rng.standard_normal((5, 3, 2))
    results = []
    for dev in ("cpu", "cuda"):
        with fb.as_cuda():
            x = ft.tensor(host, device=dev, requires_grad=True)
            packed = rnn.pack_padded_sequence(x, [3, 5, 2], enforce_sorted=False)
            assert packed.data.device.type == dev and packed.batch_sizes.device.type == "cpu"
            assert packed.sorted_indices.device.type == dev
            padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True, total_length=6)
            (padded * padded).sum().backward()
            results.append((padded.cpu().detach().numpy(), lengths.tolist(), x.grad.cpu().numpy()))
    assert results[0][1] == results[1][1] == [3, 5, 2]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][2], results[1][2])


def test_gradients_to_second_order():
    rng = np.random.default_rng(2)
    x = ft.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)

    def round_trip(x):
        packed = rnn.pack_padded_sequence(x, [1, 4, 2], enforce_sorted=False)
        padded, _ = rnn.pad_packed_sequence(packed, batch_first=True, padding_value=0.5, total_length=5)
        return padded.tanh()

    assert ft.autograd.gradcheck(round_trip, (x,))
    assert ft.autograd.gradgradcheck(round_trip, (x,))
    gru = ft.nn.GRU(2, 3, dtype=ft.float64)

    def packed_gru(x):
        out, h = gru(rnn.pack_padded_sequence(x, [1, 4, 2], enforce_sorted=False))
        return out.data, h

    assert ft.autograd.gradcheck(packed_gru, (x,))
    assert ft.autograd.gradgradcheck(packed_gru, (x,))


def test_packed_recurrent_modules_on_a_device_match_the_host():
    rng = np.random.default_rng(3)
    host = rng.standard_normal((3, 4, 2))
    results = []
    for dev in ("cpu", "cuda"):
        with fb.as_cuda():
            ft.manual_seed(0)
            lstm = ft.nn.LSTM(2, 3, bidirectional=True, batch_first=True).double().to(dev)
            x = ft.tensor(host, device=dev, requires_grad=True)
            out, (h, c) = lstm(rnn.pack_padded_sequence(x, [2, 4, 1], batch_first=True, enforce_sorted=False))
            assert isinstance(out, rnn.PackedSequence) and out.data.device.type == dev
            (out.data.sum() + h.sum() + c.sum()).backward()
            results.append([t.cpu().detach().numpy() for t in (out.data, h, c, x.grad)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
