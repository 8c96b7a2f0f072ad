"""ft.nn's batch norm in training: the running statistics blended outside the graph (from the input's
own namespace) match PyTorch's recorded values (tests/fixtures/torch_kernels.json), in the buffers'
dtype, with their version counters advanced; the same through ft.compile's traced values."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import funcgrad.tensor as ft

FIXTURE = pathlib.Path(__file__).parent.parent / "fixtures" / "torch_kernels.json"
with open(FIXTURE) as _f:
    CASES = {name: case for name, case in json.load(_f)["cases"].items()
             if case["float32"]["kind"] == "batch_norm"}


def _arr(d):
    return np.asarray(d["data"], dtype=d["dtype"]).reshape(d["shape"])


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_running_statistics_match_recorded_torch(name, dtype, compiled):
    rec = CASES[name][dtype]
    x, w, b = (_arr(a) for a in rec["inputs"])
    c = x.shape[1]
    layer = (ft.nn.BatchNorm1d if x.ndim == 2 else ft.nn.BatchNorm2d)(c, eps=rec["kwargs"]["eps"],
                                                                       momentum=rec["kwargs"]["momentum"])
    layer = layer.to(getattr(ft, dtype))
    with ft.no_grad():
        layer.weight.copy_(ft.tensor(w))
        layer.bias.copy_(ft.tensor(b))
        layer.running_mean.copy_(ft.tensor(np.linspace(-0.5, 0.5, c).astype(dtype)))
        layer.running_var.copy_(ft.tensor(np.linspace(0.5, 1.5, c).astype(dtype)))
    versions = layer.running_mean._version, layer.running_var._version
    run = ft.compile(layer, fullgraph=True) if compiled else layer
    y = run(ft.tensor(x, requires_grad=True))
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-5, "atol": 2e-5}
    np.testing.assert_allclose(y.detach().numpy(), _arr(rec["out"]), **tol)
    np.testing.assert_allclose(layer.running_mean.numpy(), _arr(rec["running_mean"]), **tol)
    np.testing.assert_allclose(layer.running_var.numpy(), _arr(rec["running_var"]), **tol)
    assert layer.running_mean.dtype == layer.running_var.dtype == getattr(ft, dtype)
    if not compiled:
        assert layer.running_mean._version > versions[0] and layer.running_var._version > versions[1]
