"""``F.cross_entropy`` with class labels calls fg.nn's cross entropy on the logits Tensor as it is (no bridge
boxes): the same values, gradients, second derivatives and node name as the bridge's composition."""

import numpy as np
import pytest

import funcgrad.nn as fnn
import funcgrad.tensor as ft
from funcgrad.tensor.nn import functional as F
from funcgrad.tensor.nn.bridge import _run_on_tensors_named


@pytest.mark.parametrize("shape, smoothing, reduction", [((5, 4), 0.0, "mean"), ((3, 4, 2), 0.1, "sum"),
                                                         ((4,), 0.0, "none"), ((6, 3), 0.2, "none")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_labels_path_matches_the_bridge_composition(shape, smoothing, reduction, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    axis = 1 if len(shape) > 1 else 0
    y = rng.integers(0, shape[axis], shape[:axis] + shape[axis + 1:])
    direct, bridged = ft.tensor(x, requires_grad=True), ft.tensor(x, requires_grad=True)
    got = F.cross_entropy(direct, ft.tensor(y), label_smoothing=smoothing, reduction=reduction)
    want = _run_on_tensors_named("NllLossBackward0", fnn.cross_entropy, bridged, y, axis=axis,
                                 label_smoothing=smoothing, reduction=reduction)
    assert type(got) is ft.Tensor and got.dtype == want.dtype
    assert got.grad_fn.name() == want.grad_fn.name() == "NllLossBackward0"
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    # first and second derivatives (the gradient's squared norm differentiated again)
    g_got, = ft.autograd.grad(got.sum(), direct, create_graph=True)
    g_want, = ft.autograd.grad(want.sum(), bridged, create_graph=True)
    np.testing.assert_array_equal(g_got.detach().numpy(), g_want.detach().numpy())
    (g_got * g_got).sum().backward()
    (g_want * g_want).sum().backward()
    np.testing.assert_allclose(direct.grad.numpy(), bridged.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert np.abs(direct.grad.numpy()).max() > 0


def test_labels_path_still_refuses_out_of_range_labels():
    x = ft.zeros(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.cross_entropy(x, ft.tensor([0, 3]))
