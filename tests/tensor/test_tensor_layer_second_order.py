"""Second order through the Tensor layer's LSTM (the sequence kernel called directly, ``h_n``/``c_n`` sliced
from its results) and BatchNorm in training (running statistics from the normalizing kernel), and through its
convolution, layer/group norm, linear and attention layers (issue 26's kernels, ``create_graph`` backward)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft


@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, True), (2, True, False)])
def test_lstm_outputs_and_final_state_second_order(layers, bidirectional, batch_first):
    ft.manual_seed(0)
    lstm = ft.nn.LSTM(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first).double()
    x = ft.randn(2, 3, 3, dtype=ft.float64, requires_grad=True)

    def f(x):
        out, (h, c) = lstm(x)
        return (out ** 2).sum() + (h ** 3).sum() + (c * h).sum()

    assert ft.autograd.gradcheck(f, (x,))
    assert ft.autograd.gradgradcheck(f, (x,))
    out, (h, c) = lstm(x)
    ndir = 2 if bidirectional else 1
    assert tuple(h.shape) == tuple(c.shape) == (layers * ndir, 2 if batch_first else 3, 4)
    last = out[:, -1] if batch_first else out[-1]
    np.testing.assert_allclose(h[-ndir].detach().numpy(), last[..., :4].detach().numpy(), rtol=1e-12)


def test_lstm_weight_gradients_match_the_cell_loop():
    ft.manual_seed(1)
    lstm = ft.nn.LSTM(3, 4).double()
    cell = ft.nn.LSTMCell(3, 4).double()
    with ft.no_grad():
        for a, b in (("weight_ih_l0", "weight_ih"), ("weight_hh_l0", "weight_hh"), ("bias_ih_l0", "bias_ih"),
                     ("bias_hh_l0", "bias_hh")):
            getattr(cell, b).copy_(getattr(lstm, a))
    x = ft.randn(6, 2, 3, dtype=ft.float64)
    out, (h, c) = lstm(x)
    (out.sum() + c.sum()).backward()
    hc = None
    outs = []
    for t in range(6):
        hc = cell(x[t], hc)
        outs.append(hc[0])
    (ft.stack(outs).sum() + hc[1].sum()).backward()
    for a, b in (("weight_ih_l0", "weight_ih"), ("weight_hh_l0", "weight_hh"), ("bias_hh_l0", "bias_hh")):
        np.testing.assert_allclose(getattr(lstm, a).grad.numpy(), getattr(cell, b).grad.numpy(), rtol=1e-10)


def test_batch_norm_training_second_order_and_running_statistics():
    bn = ft.nn.BatchNorm2d(3, momentum=0.3).double()
    x = ft.randn(4, 3, 2, 2, dtype=ft.float64, requires_grad=True)
    with ft.no_grad():
        bn.weight.copy_(ft.tensor([0.5, 1.5, -1.0], dtype=ft.float64))
    assert ft.autograd.gradgradcheck(lambda x: (bn(x) ** 3).sum(), (x,))
    bn.reset_running_stats()
    bn(x)
    xv = x.detach().numpy()
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.3 * xv.mean(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.7 + 0.3 * xv.var(axis=(0, 2, 3), ddof=1), rtol=1e-12)


def test_batch_norm_training_under_ft_func_grad():
    """Under ft.func.grad the kernel's statistics are traced (the parameters are): the running ones are
    blended from their values, not differentiated, and the gradients are the eager step's."""
    ft.manual_seed(2)
    bn = ft.nn.BatchNorm2d(3).double()
    x = ft.randn(4, 3, 2, 2, dtype=ft.float64)
    params, buffers = dict(bn.named_parameters()), dict(bn.named_buffers())
    grads = ft.func.grad(lambda p: (ft.func.functional_call(bn, (p, buffers), (x,)) ** 3).sum())(params)
    after_func = bn.running_mean.numpy().copy()
    bn.reset_running_stats()
    (bn(x) ** 3).sum().backward()
    np.testing.assert_allclose(after_func, bn.running_mean.numpy(), rtol=1e-12)
    for name, g in grads.items():
        np.testing.assert_allclose(g.numpy(), getattr(bn, name).grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make,shape", [
    (lambda: ft.nn.Conv2d(4, 2, (2, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), (1, 4, 3, 5)),
    (lambda: ft.nn.Conv1d(2, 3, 3, padding=1), (2, 2, 5)),
    (lambda: ft.nn.LayerNorm((3, 4)), (2, 3, 4)),
    (lambda: ft.nn.GroupNorm(2, 4), (1, 4, 3)),
    (lambda: ft.nn.Linear(3, 2), (2, 4, 3)),
], ids=["conv2d_groups_stride_dil_batch1", "conv1d_pad", "layer_norm", "group_norm_batch1", "linear_stack"])
def test_layer_second_order_in_input_and_parameters(make, shape):
    ft.manual_seed(1)
    layer = make().double()
    x = ft.randn(*shape, dtype=ft.float64, requires_grad=True)
    names, params = zip(*[(n, p.detach().clone().requires_grad_(True)) for n, p in layer.named_parameters()])

    def f(x, *ps):
        y = ft.func.functional_call(layer, dict(zip(names, ps)), (x,))
        return (y ** 2 * ft.sin(y)).sum()

    assert ft.autograd.gradgradcheck(f, (x, *params))


def test_attention_second_order():
    ft.manual_seed(2)
    q, k, v = (ft.randn(1, 2, n, 3, dtype=ft.float64, requires_grad=True) for n in (3, 4, 4))
    mask = ft.tensor(np.triu(np.ones((3, 4), bool), 2))

    def f(q, k, v):
        return (ft.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~mask) ** 2).sum()

    assert ft.autograd.gradgradcheck(f, (q, k, v))
