"""Second order through the Tensor layer's LSTM (one ``lstm_layer`` node per layer and direction giving
``output``, ``h_n`` and ``c_n``, checked against the old composition: the sequence kernel between recorded
views) and BatchNorm in training (running statistics from the normalizing kernel), and through its
convolution, layer/group norm, linear and attention layers (issue 26's kernels, ``create_graph`` backward)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.numpy as fnp
import funcgrad.tensor as ft
from funcgrad.nn.kernels.recurrent import lstm_sequence


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


def _old_lstm(lstm, x, hx):
    """ft.nn.LSTM as it was composed before its layers became one node each: the time-major input, a flip for
    the reverse direction, the sequence kernel, then ``h_n = out[-1:]``, ``c_n`` unsqueezed, the transposed
    output (views recorded around the kernel)."""
    ndir = 2 if lstm.bidirectional else 1
    x = x.transpose(0, 1) if lstm.batch_first else x
    finals = []
    for layer in range(lstm.num_layers):
        outs = []
        for d in range(ndir):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [getattr(lstm, n + sfx) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            k = layer * ndir + d
            out, c = lstm_sequence(x.flip(0) if d else x, hx[0][k], hx[1][k], *w)
            finals.append((out[-1:], fnp.expand_dims(c, 0)))
            outs.append(out.flip(0) if d else out)
        x = ft.cat(outs, -1)
    h_n, c_n = (ft.cat([f[i] for f in finals], 0) for i in range(2))
    return (x.transpose(0, 1) if lstm.batch_first else x), (h_n, c_n)


@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False), (1, False, True), (1, True, True),
                                                              (2, True, False)])
def test_lstm_layers_are_one_node_each_and_match_the_old_composition(layers, bidirectional, batch_first):
    ft.manual_seed(3)
    lstm = ft.nn.LSTM(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first).double()
    ndir = 2 if bidirectional else 1
    x = ft.randn(2, 5, 3, dtype=ft.float64, requires_grad=True)
    hx = tuple(ft.randn(layers * ndir, 2 if batch_first else 5, 4, dtype=ft.float64, requires_grad=True)
               for _ in range(2))
    cots = [ft.randn(*s, dtype=ft.float64) for s in ((2, 5, 4 * ndir), tuple(hx[0].shape), tuple(hx[0].shape))]
    leaves = (x, *hx, *lstm.parameters())
    got, want = [], []
    for run, into in ((lstm, got), (lambda x, hx: _old_lstm(lstm, x, hx), want)):
        out, (h, c) = run(x, hx)
        into.append([t.detach().numpy().copy() for t in (out, h, c)])
        grads = ft.autograd.grad(sum(((t * g).sum() for t, g in zip((out, h, c), cots)), ft.zeros(())), leaves)
        into.append([g.numpy() for g in grads])
        if run is lstm and layers == 1 and not bidirectional:  # one node for all three, PyTorch's graph around it
            layer = out.grad_fn.next_functions[0][0] if batch_first else out.grad_fn
            assert out._is_view() == batch_first and out.grad_fn.name() == (
                "TransposeBackward0" if batch_first else "MkldnnRnnLayerBackward0")  # (PyTorch's CPU names)
            assert layer.name() == "MkldnnRnnLayerBackward0"
            assert h.grad_fn.name() == c.grad_fn.name() == "StackBackward0" and not (h._is_view() or c._is_view())
            assert h.grad_fn.next_functions == ((layer, 1),) and c.grad_fn.next_functions == ((layer, 2),)
            # PyTorch's order: input (batch-first: its time-major copy), the four parameters, h0[0] and c0[0]
            parents = layer.next_functions
            assert [n.name() for n, _ in parents] == [
                "CloneBackward0" if batch_first else "torch::autograd::AccumulateGrad"] + [
                "torch::autograd::AccumulateGrad"] * 4 + ["SelectBackward0"] * 2
            assert all(n.variable is v for (n, _), v in zip(parents[1:5], lstm.parameters()))
        elif run is lstm:
            assert h.grad_fn.name() == c.grad_fn.name() == "StackBackward0"
            assert len(h.grad_fn.next_functions) == layers * ndir
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_final_states_changed_in_place_keep_the_gradients_and_the_output_refuses(batch_first):
    """As PyTorch's: h_n and c_n (stacks of the layers' final states, which save nothing) changed in place before
    the backward are no error and the gradients are those of the unchanged run; the output, which the layer
    node saves (batch-first: a view of it), changed in place makes the backward raise PyTorch's error."""
    ft.manual_seed(4)
    lstm = ft.nn.LSTM(3, 4, batch_first=batch_first).double()
    x = ft.randn(2, 5, 3, dtype=ft.float64, requires_grad=True)
    grads = []
    for change in (False, True):
        out, (h, c) = lstm(x)
        loss = (out * 2.0).sum() + h.sum() + (c * -3.0).sum()  # (no rule here reads out, h or c either)
        if change:
            h.mul_(2.0), c.zero_()
        grads.append([g.numpy() for g in ft.autograd.grad(loss, (x, *lstm.parameters()))])
    for got, want in zip(*grads):
        np.testing.assert_array_equal(got, want)
    out, (h, c) = lstm(x)
    loss = out.sum()
    out.add_(1.0)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: .*output 0 of MkldnnRnnLayer, is at "
                                           r"version 1; expected version 0"):
        loss.backward()


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
