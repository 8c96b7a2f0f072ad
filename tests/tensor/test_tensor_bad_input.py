"""Bad input to the Tensor layer raises what PyTorch raises (type and key words).

PyTorch's answers are recorded in tests/fixtures/torch_errors.json by
tests/fixtures/make_torch_errors.py (the cases live there, shared with this test).
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import funcgrad.tensor as ft

_FIX = Path(__file__).resolve().parent.parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_torch_errors", _FIX / "make_torch_errors.py")
assert _spec is not None and _spec.loader is not None
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
TORCH = json.loads((_FIX / "torch_errors.json").read_text())["errors"]


@pytest.mark.parametrize("name", sorted(_cases.CASES))
def test_error_matches_pytorch(name):
    case, words = _cases.CASES[name]
    got = _cases.raised(ft, case)
    assert got is not None, f"{name}: nothing raised (PyTorch: {TORCH[name]})"
    assert got[0] == TORCH[name][0], (name, got, TORCH[name])
    for w in words:
        assert w in got[1], (name, w, got[1])


def test_nan_hyperparameters_are_refused():
    # PyTorch accepts lr=nan (and then produces nan parameters); we refuse it
    p = [ft.ones(2, requires_grad=True)]
    for kwargs in ({"lr": math.nan}, {"lr": 0.1, "momentum": math.nan}, {"lr": 0.1, "weight_decay": math.nan}):
        with pytest.raises(ValueError, match="Invalid"):
            ft.optim.SGD(p, **kwargs)
    with pytest.raises(ValueError, match="Invalid epsilon"):
        ft.optim.Adam(p, eps=math.nan)


def test_optimizer_params_must_be_iterable():
    with pytest.raises(TypeError, match="iterable of Tensors or dicts.*got float"):
        ft.optim.SGD(1.5, lr=0.1)
    # a generator and a single-tensor param group still work
    w = ft.ones(2, requires_grad=True)
    ft.optim.SGD((q for q in [w]), lr=0.1)
    ft.optim.SGD([{"params": w}], lr=0.1)


def test_hook_that_keeps_dtype_and_shape_is_used():
    x = ft.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 3)
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 6.0])
    assert x.grad.dtype == ft.float32


# clip_grad_norm_ against PyTorch's semantics (numbers worked out by hand: grads [3, 4] and [12])
@pytest.mark.parametrize("norm_type, total", [
    # norm_type 0 counts nonzero entries of the per-tensor norms [2, 1], as PyTorch does: 2
    (2.0, 13.0), ("inf", 12.0), (math.inf, 12.0), (1.0, 19.0), (0, 2.0), (3.0, (27 + 64 + 1728) ** (1 / 3)),
])
def test_clip_grad_norm_types(norm_type, total):
    a, b = ft.ones(2, requires_grad=True), ft.ones(1, requires_grad=True)
    a.grad, b.grad = ft.tensor([3.0, 4.0]), ft.tensor([12.0])
    out = ft.nn.utils.clip_grad_norm_([a, b], 1.0, norm_type=norm_type, foreach=True)
    np.testing.assert_allclose(out.item(), total, rtol=1e-6)
    assert out.dtype == ft.float32
    coef = min(1.0 / (total + 1e-6), 1.0)
    np.testing.assert_allclose(a.grad.numpy(), np.array([3.0, 4.0]) * coef, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [12.0 * coef], rtol=1e-6)


def test_clip_grad_norm_leaves_small_gradients_and_scales_by_nonfinite_norm():
    a = ft.ones(2, requires_grad=True)
    a.grad = ft.tensor([0.3, 0.4])
    assert ft.nn.utils.clip_grad_norm_(a, 1.0).item() == pytest.approx(0.5)
    np.testing.assert_allclose(a.grad.numpy(), [0.3, 0.4])
    a.grad = ft.tensor([math.inf, 1.0])
    with np.errstate(invalid="ignore"):
        total = ft.nn.utils.clip_grad_norm_([a], 1.0)  # error_if_nonfinite=False: PyTorch scales anyway
    assert math.isinf(total.item())
    assert np.isnan(a.grad.numpy()[0]) and a.grad.numpy()[1] == 0.0
    a.grad = ft.tensor([math.nan, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        ft.nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    assert ft.nn.utils.clip_grad_norm_([ft.ones(2)], 1.0).item() == 0.0  # no gradients
