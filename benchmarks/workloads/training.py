"""PyTorch-style training steps (issue 19): a Conv2d + BatchNorm2d network and an LSTM, one step each
(forward, cross-entropy, backward, SGD-with-momentum update), in funcgrad.tensor (``ft.nn``/``ft.optim``),
in the functional layer (``fg.grad`` over ``fg.nn`` functions + ``fg.optim.sgd``) and in PyTorch eager.

The optimizers run with learning rate 0 (the update arithmetic is done, the parameters stay put), so
every call computes the same gradients and every row is checked against the same reference.
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table


def _ft_rows(model, x, y, ft):
    opt = ft.optim.SGD(model.parameters(), lr=0.0, momentum=0.9)
    loss_fn = ft.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        return [p.grad for p in model.parameters()]

    return step


def _compiled_row(model, x, y, ft):
    """The ft.nn step with the model's forward (and so its backward) staged by ft.compile."""
    return Entry("ft.compile(model) step", _ft_rows(ft.compile(model, fullgraph=True), x, y, ft), check=lambda g: g)


def _fg_step(loss, params, x, y, order, jit=False, running=None):
    """The functional step. With ``running`` (a pytree of batch norm's running statistics), ``loss(p, x, y,
    running)`` returns ``(loss, new_running)`` and the step carries the new statistics to the next one, as the
    ft and torch steps update their BatchNorm buffers in train mode."""
    opt = fg.optim.sgd(0.0, momentum=0.9)
    state = [opt.init(params)]
    grad = fg.grad(loss, has_aux=running is not None)
    grad = fg.jit(grad) if jit else grad
    box = [params, running]

    def step():
        if running is None:
            g = grad(box[0], x, y)
        else:
            g, box[1] = grad(box[0], x, y, box[1])
        updates, state[0] = opt.update(g, state[0], box[0])
        box[0] = fg.optim.apply_updates(box[0], updates)
        return [g[k] for k in order]

    return step


def _fg_rows(loss, params, xs, ys, order, running=None):
    """The functional step, eager and under fg.jit (the same loss, optimizer and reference)."""
    eager = _fg_step(loss, params, xs, ys, order, running=running)
    jitted = _fg_step(loss, params, xs, ys, order, jit=True, running=running)
    return eager, [Entry("fg.nn step (fg.grad + fg.optim)", eager, check=lambda g: g),
                   Entry("fg.jit(fg.grad) step", jitted, check=lambda g: g)]


def conv_table(ctx: Context) -> Table:
    import funcgrad.tensor as ft

    batch, c, hw, ch = ctx.pick(32, smoke=4), 3, ctx.pick(16, smoke=4), ctx.pick(16, smoke=2)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, c, hw, hw)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    ft.manual_seed(0)
    model = ft.nn.Sequential(ft.nn.Conv2d(c, ch, 3, padding=1, bias=False), ft.nn.BatchNorm2d(ch), ft.nn.ReLU(),
                             ft.nn.MaxPool2d(2), ft.nn.Flatten(), ft.nn.Linear(ch * (hw // 2) ** 2, 10))
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    order = ["0.weight", "1.weight", "1.bias", "5.weight", "5.bias"]
    fx, fy = ft.tensor(xs), ft.tensor(ys)
    ft_step = _ft_rows(model, fx, fy, ft)

    def loss(p, x, y, running):  # (the running statistics updated, as ft's and torch's BatchNorm2d in train mode)
        h = fnn.conv2d(x, p["0.weight"], None, padding=1)
        h, mean, var = fnn.batch_norm(h, running["mean"], running["var"], p["1.weight"], p["1.bias"], training=True)
        h = fnn.max_pool2d(fnn.relu(h), 2)
        h = fnp.reshape(h, (fnp.shape(h)[0], -1))
        return fnn.cross_entropy(h @ fnp.transpose(p["5.weight"]) + p["5.bias"], y, axis=-1), {"mean": mean, "var": var}

    params = {k: init[k] for k in order}
    running = {"mean": init["1.running_mean"], "var": init["1.running_var"]}
    fg_step, fg_rows = _fg_rows(loss, params, xs, ys, order, running)
    reference = fg_step()
    rows = [Entry("funcgrad.tensor step (ft.nn + ft.optim)", ft_step, check=lambda g: g),
            _compiled_row(model, fx, fy, ft), *fg_rows]
    torch = peers.torch()
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Conv2d(c, ch, 3, padding=1, bias=False), torch.nn.BatchNorm2d(ch), torch.nn.ReLU(),
                                 torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(ch * (hw // 2) ** 2, 10))
        tm.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in init.items()})
        tstep = _ft_rows(tm, torch.from_numpy(xs), torch.from_numpy(ys), torch)
        rows.append(Entry("torch eager step", tstep, check=lambda g: g))
    return Table("train_conv", f"issue 19: Conv2d({c},{ch},3,bias=False)+BatchNorm2d+ReLU+MaxPool2d+Linear training step, "
                 f"batch {batch}, {hw}x{hw}, float32", rows, reference, rtol=2e-3, unit="ms",
                 baselines=("torch eager step", "fg.nn step (fg.grad + fg.optim)"),
                 notes=["One step = zero_grad, forward, cross-entropy, backward, SGD(momentum=0.9) update; every row updates batch norm's running statistics (the functional ones carry them from step to step)."])


def lstm_table(ctx: Context) -> Table:
    import funcgrad.tensor as ft

    T, batch, n_in, hid = ctx.pick(20, smoke=3), ctx.pick(16, smoke=2), ctx.pick(32, smoke=3), ctx.pick(64, smoke=4)
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((batch, T, n_in)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    ft.manual_seed(0)

    def net(nn):  # the same model class in ft.nn and torch.nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(n_in, hid, batch_first=True)
                self.fc = nn.Linear(hid, 10)

            def forward(self, x):
                out, _ = self.lstm(x)
                return self.fc(out[:, -1])

        return Net()

    model = net(ft.nn)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    order = list(init)
    ft_step = _ft_rows(model, ft.tensor(xs), ft.tensor(ys), ft)
    compiled = _compiled_row(model, ft.tensor(xs), ft.tensor(ys), ft)

    def loss(p, x, y):
        h0 = fnp.zeros((fnp.shape(x)[0], hid), dtype=x.dtype)
        _, (h, _) = fnn.lstm(x, h0, h0, p["lstm.weight_ih_l0"], p["lstm.weight_hh_l0"], p["lstm.bias_ih_l0"],
                             p["lstm.bias_hh_l0"], batch_first=True)
        return fnn.cross_entropy(h @ fnp.transpose(p["fc.weight"]) + p["fc.bias"], y, axis=-1)

    fg_step, fg_rows = _fg_rows(loss, dict(init), xs, ys, order)
    reference = fg_step()
    rows = [Entry("funcgrad.tensor step (ft.nn + ft.optim)", ft_step, check=lambda g: g), compiled, *fg_rows]
    torch = peers.torch()
    if torch is not None:
        tm = net(torch.nn)
        tm.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in init.items()})
        rows.append(Entry("torch eager step", _ft_rows(tm, torch.from_numpy(xs), torch.from_numpy(ys), torch),
                          check=lambda g: g))
    return Table("train_lstm", f"issue 19: LSTM({n_in},{hid}) over {T} steps + Linear training step, batch {batch}, "
                 "float32", rows, reference, rtol=2e-3, unit="ms",
                 baselines=("torch eager step", "fg.nn step (fg.grad + fg.optim)"),
                 notes=["fg.nn runs fg.nn.lstm (the whole sequence as one kernel, its backward one more) under "
                        "fg.grad; ft.nn.LSTM runs the same kernel on tensors; PyTorch runs its fused LSTM kernel."])


def _torch_rows(make, init, xs, ys):
    torch = peers.torch()
    if torch is None:
        return []
    tm = make(torch.nn)
    tm.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in init.items()})
    return [Entry("torch eager step", _ft_rows(tm, torch.from_numpy(xs), torch.from_numpy(ys), torch),
                  check=lambda g: g)]


def conv2_loss(p, x, y):
    """The functional loss of the two-conv-layer CNN (conv, batch norm, relu, max pool, twice; a linear
    layer), over ``p`` keyed as the ft model's ``state_dict``; ``benchmarks/training_profile.py`` profiles it."""
    return conv2_loss_tracked(p, x, y, None)[0]


def conv2_loss_tracked(p, x, y, running):
    """:func:`conv2_loss` and the batch norms' running statistics blended with the batch's (``running``: keyed as
    the ``state_dict``'s ``"1.running_mean"``...; None: not tracked), as ft's and torch's BatchNorm2d in train mode:
    ``(loss, new_running)``."""
    h, new = x, {}
    for conv, bn in (("0", "1"), ("4", "5")):
        h = fnn.conv2d(h, p[f"{conv}.weight"], None, padding=1)
        rm, rv = (None, None) if running is None else (running[f"{bn}.running_mean"], running[f"{bn}.running_var"])
        h, new[f"{bn}.running_mean"], new[f"{bn}.running_var"] = fnn.batch_norm(
            h, rm, rv, p[f"{bn}.weight"], p[f"{bn}.bias"], training=True)
        h = fnn.max_pool2d(fnn.relu(h), 2)
    h = fnp.reshape(h, (fnp.shape(h)[0], -1))
    return fnn.cross_entropy(h @ fnp.transpose(p["9.weight"]) + p["9.bias"], y, axis=-1), new


def conv2_table(ctx: Context) -> Table:
    """Issue 26: 32x32 inputs through two Conv2d+BatchNorm2d+ReLU+MaxPool2d blocks and a Linear head."""
    import funcgrad.tensor as ft

    batch, hw, c1, c2 = ctx.pick(32, smoke=2), ctx.pick(32, smoke=8), ctx.pick(16, smoke=2), ctx.pick(32, smoke=2)
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((batch, 3, hw, hw)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    ft.manual_seed(0)

    def make(nn):
        return nn.Sequential(nn.Conv2d(3, c1, 3, padding=1, bias=False), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(c1, c2, 3, padding=1, bias=False), nn.BatchNorm2d(c2), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(c2 * (hw // 4) ** 2, 10))

    model = make(ft.nn)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    order = ["0.weight", "1.weight", "1.bias", "4.weight", "5.weight", "5.bias", "9.weight", "9.bias"]
    ft_step = _ft_rows(model, ft.tensor(xs), ft.tensor(ys), ft)
    compiled = _compiled_row(model, ft.tensor(xs), ft.tensor(ys), ft)

    running = {k: v for k, v in init.items() if k.endswith(("running_mean", "running_var"))}
    fg_step, fg_rows = _fg_rows(conv2_loss_tracked, {k: init[k] for k in order}, xs, ys, order, running)
    reference = fg_step()
    rows = [Entry("funcgrad.tensor step (ft.nn + ft.optim)", ft_step, check=lambda g: g), compiled, *fg_rows,
            *_torch_rows(make, init, xs, ys)]
    return Table("train_conv32", f"issue 26: two (Conv2d+BatchNorm2d+ReLU+MaxPool2d) blocks ({c1}, {c2} channels) + "
                 f"Linear training step, batch {batch}, {hw}x{hw}, float32", rows, reference, rtol=2e-2, unit="ms",
                 baselines=("torch eager step", "fg.nn step (fg.grad + fg.optim)"),
                 notes=["One step = zero_grad, forward, cross-entropy, backward, SGD(momentum=0.9) update; every row "
                        "updates the batch norms' running statistics (the functional ones carry them from step to step).",
                        "rtol 2e-2: on one thread PyTorch's float32 gradients of the first block are 1.2e-2 (relative) "
                        "from its own float64 ones; funcgrad's float32 gradients are within 1.2e-6 of them."])


def transformer_table(ctx: Context) -> Table:
    """Issue 26: one TransformerEncoderLayer(d_model=64, nhead=4) (post-norm, ReLU, dim_feedforward 2048,
    dropout 0) on batch 8 x 32 tokens, mean over tokens, Linear head."""
    import funcgrad.tensor as ft

    batch, T, d, heads = ctx.pick(8, smoke=2), ctx.pick(32, smoke=3), ctx.pick(64, smoke=8), ctx.pick(4, smoke=2)
    ff = ctx.pick(2048, smoke=16)
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((batch, T, d)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    ft.manual_seed(0)

    def make(nn):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
                self.fc = nn.Linear(d, 10)

            def forward(self, x):
                return self.fc(self.enc(x).mean(1))

        return Net()

    model = make(ft.nn)
    init = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    order = list(init)
    ft_step = _ft_rows(model, ft.tensor(xs), ft.tensor(ys), ft)
    compiled = _compiled_row(model, ft.tensor(xs), ft.tensor(ys), ft)

    def linear(h, p, name, w="weight", b="bias"):
        return fnn.linear(h, p[f"{name}.{w}"], p[f"{name}.{b}"])

    def loss(p, x, y):
        n, L, _ = fnp.shape(x)
        qkv = linear(x, p, "enc.self_attn", "in_proj_weight", "in_proj_bias")
        q, k, v = (fnp.swapaxes(fnp.reshape(part, (n, L, heads, d // heads)), 1, 2) for part in fnp.split(qkv, 3, axis=-1))
        a = fnp.reshape(fnp.swapaxes(fnn.dot_product_attention(q, k, v), 1, 2), (n, L, d))
        h = fnn.layer_norm(x + linear(a, p, "enc.self_attn.out_proj"), 1, p["enc.norm1.weight"], p["enc.norm1.bias"])
        f = linear(fnn.relu(linear(h, p, "enc.linear1")), p, "enc.linear2")
        h = fnn.layer_norm(h + f, 1, p["enc.norm2.weight"], p["enc.norm2.bias"])
        return fnn.cross_entropy(linear(fnp.mean(h, axis=1), p, "fc"), y, axis=-1)

    fg_step, fg_rows = _fg_rows(loss, dict(init), xs, ys, order)
    reference = fg_step()
    rows = [Entry("funcgrad.tensor step (ft.nn + ft.optim)", ft_step, check=lambda g: g), compiled, *fg_rows,
            *_torch_rows(make, init, xs, ys)]
    return Table("train_transformer", f"issue 26: TransformerEncoderLayer(d_model={d}, nhead={heads}, "
                 f"dim_feedforward={ff}, dropout=0) + Linear training step, batch {batch} x {T} tokens, float32",
                 rows, reference, rtol=2e-3, unit="ms", baselines=("torch eager step", "fg.nn step (fg.grad + fg.optim)"),
                 notes=["fg.nn writes the layer with fg.nn functions (dot_product_attention, layer_norm); ft.nn "
                        "runs its TransformerEncoderLayer; PyTorch its own."])


def build(ctx: Context) -> list[Table]:
    return [conv_table(ctx), conv2_table(ctx), lstm_table(ctx), transformer_table(ctx)]
