"""ft.nn semantics the PyTorch fixtures cannot see: hooks, buffers, containers, nn.utils, nn.init,
dropout variants, ft.utils.data, the default device, gradients of the new functional ops to second
order, and error messages."""

from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import fake_backend as fb  # noqa: E402
import funcgrad.tensor as ft  # noqa: E402
import funcgrad.tensor.nn.functional as F  # noqa: E402
from funcgrad.tensor.utils.data import (  # noqa: E402
    BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, SequentialSampler, Subset, TensorDataset,
    default_collate, random_split,
)

nn = ft.nn


# --------------------------------------------------------------------------- modules


def test_forward_hooks_modify_and_remove():
    lin = nn.Linear(3, 2)
    x = ft.randn(4, 3)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1.0)
    y = lin(x)
    assert calls == [ft.Size([4, 2])]
    np.testing.assert_allclose(y.detach().numpy(), (lin.bias + 1.0).expand(4, 2).detach().numpy())
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(lin(x).detach().numpy(), F.linear(x, lin.weight, lin.bias).detach().numpy())
    order = []
    lin.register_forward_pre_hook(lambda m, a: order.append("b"))
    lin.register_forward_pre_hook(lambda m, a: order.append("a"), prepend=True)
    lin.register_forward_hook(lambda m, a, k, out: order.append(sorted(k)), with_kwargs=True)
    lin(x)
    assert order == ["a", "b", []]


def test_buffers_persistent_and_errors():
    m = nn.Module()
    m.register_buffer("kept", ft.ones(2))
    m.register_buffer("scratch", ft.zeros(2), persistent=False)
    assert list(m.state_dict()) == ["kept"]
    assert {n for n, _ in m.named_buffers()} == {"kept", "scratch"}
    m.load_state_dict({"kept": ft.full((2,), 3.0)})
    assert m.kept.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError, match="buffer"):
        m.register_buffer("bad", [1, 2])
    m.register_buffer("kept", ft.ones(2))  # re-registering a buffer is allowed, as in PyTorch
    m.register_parameter("w", nn.Parameter(ft.ones(1)))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("w", ft.ones(1))
    with pytest.raises(KeyError, match="buffer name"):
        m.register_buffer("a.b", ft.ones(1))


def test_apply_and_named_modules():
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    assert [n for n, _ in net.named_modules()] == ["", "0", "1", "1.0", "1.1"]
    seen = []

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)
        seen.append(type(m).__name__)

    net.apply(init)
    assert seen == ["Linear", "ReLU", "Linear", "Sequential", "Sequential"]
    assert all(not m.weight.abs().sum().item() for m in net.modules() if isinstance(m, nn.Linear))


def test_containers_keys_and_indexing():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    ml.append(nn.Linear(2, 1))
    ml.insert(0, nn.Identity())
    assert len(ml) == 4 and isinstance(ml[0], nn.Identity) and isinstance(ml[-1], nn.Linear)
    assert [k.split(".")[0] for k in ml.state_dict()] == ["1", "1", "2", "2", "3", "3"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    with pytest.raises(IndexError, match="out of range"):
        ml[7]
    md = nn.ModuleDict({"enc": nn.Linear(2, 3)})
    md["dec"] = nn.Linear(3, 2)
    assert list(md) == ["enc", "dec"] and "dec" in md and list(md.state_dict())[0] == "enc.weight"
    pl = nn.ParameterList([ft.ones(2), nn.Parameter(ft.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and list(pl.state_dict()) == ["0", "1"]
    pd = nn.ParameterDict({"scale": ft.ones(2)})
    pd["shift"] = ft.zeros(2)
    assert list(pd.state_dict()) == ["scale", "shift"] and len(list(pd.parameters())) == 2

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
            self.gains = nn.ParameterList([nn.Parameter(ft.ones(2)) for _ in range(2)])

        def forward(self, x):
            for b, g in zip(self.blocks, self.gains):
                x = b(x) * g
            return x

    net = Net()
    net(ft.randn(3, 2)).sum().backward()
    assert all(p.grad is not None for p in net.parameters()) and len(list(net.parameters())) == 6


def test_clip_grad_norm_and_value():
    a = nn.Parameter(ft.tensor([3.0, 0.0]))
    b = nn.Parameter(ft.tensor([0.0, 4.0]))
    (a * ft.tensor([3.0, 0.0]) + b * ft.tensor([0.0, 4.0])).sum().backward()
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert math.isclose(total.item(), 5.0, rel_tol=1e-6)
    assert math.isclose(math.hypot(a.grad[0].item(), b.grad[1].item()), 1.0, rel_tol=1e-5)
    a.grad = ft.tensor([1.0, -2.0])
    b.grad = ft.tensor([0.5, 0.0])
    assert nn.utils.clip_grad_norm_([a, b], 10.0, norm_type=math.inf).item() == 2.0
    assert a.grad.tolist() == [1.0, -2.0]  # below max_norm: unchanged
    nn.utils.clip_grad_value_([a, b], 0.75)
    assert a.grad.tolist() == [0.75, -0.75] and b.grad.tolist() == [0.5, 0.0]
    a.grad = ft.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)


def test_parameters_vector_round_trip():
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = nn.utils.parameters_to_vector(net.parameters())
    assert v.shape == (3 * 2 + 2 + 2 + 1,)
    nn.utils.vector_to_parameters(ft.arange(11.0), net.parameters())
    assert net[0].weight.reshape(-1).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and net[1].bias.item() == 10.0
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], net.parameters())


def test_init_functions():
    w = ft.empty(4, 6)
    nn.init.orthogonal_(w)
    np.testing.assert_allclose((w @ w.t()).numpy(), np.eye(4), atol=1e-5)
    nn.init.eye_(w)
    assert w.numpy().trace() == 4.0
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False)
    nn.init.dirac_(conv.weight)
    x = ft.randn(1, 3, 5, 5)
    np.testing.assert_allclose(conv(x).detach().numpy(), x.numpy(), atol=1e-6)
    t = ft.empty(1000)
    nn.init.trunc_normal_(t, std=1.0, a=-0.5, b=0.5)
    assert t.abs().max().item() <= 0.5
    assert nn.init.calculate_gain("relu") == math.sqrt(2.0)
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.eye_(ft.empty(3))


@pytest.mark.parametrize("cls, shape", [(nn.Dropout1d, (4, 8, 5)), (nn.Dropout2d, (4, 8, 3, 3)),
                                        (nn.Dropout3d, (2, 8, 2, 2, 2))])
def test_channel_dropout(cls, shape):
    drop = cls(0.5)
    y = drop(ft.ones(*shape)).numpy().reshape(shape[0], shape[1], -1)
    per_channel = y.min(-1) == y.max(-1)
    assert per_channel.all() and set(np.unique(y)) <= {0.0, 2.0}
    drop.eval()
    assert drop(ft.ones(*shape)).equal(ft.ones(*shape))
    with pytest.raises(ValueError, match="between 0 and 1"):
        cls(1.5)


def test_alpha_dropout_keeps_moments_and_eval_identity():
    x = ft.randn(20000)
    y = F.alpha_dropout(x, 0.2, training=True)
    assert abs(y.mean().item()) < 0.05 and abs(y.std().item() - 1.0) < 0.05
    assert nn.AlphaDropout(0.2).eval()(x).equal(x)


def test_batchnorm_eval_uses_running_stats_and_momentum_none():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [ft.randn(8, 2) for _ in range(3)]
    for x in xs:
        bn(x)
    mean = ft.stack([x.mean(0) for x in xs]).mean(0)
    np.testing.assert_allclose(bn.running_mean.numpy(), mean.numpy(), rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = ft.randn(4, 2)
    want = (x - bn.running_mean) / (bn.running_var + bn.eps).sqrt()
    np.testing.assert_allclose(bn(x).detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="expected 2D or 3D"):
        bn(ft.randn(2, 2, 2, 2))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(2)(ft.randn(1, 2))


# --------------------------------------------------------------------------- gradients to second order


@pytest.mark.parametrize("fn, shapes", [
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), [(1, 2, 3, 3), (2, 1, 3, 3)]),
    (lambda x: F.interpolate(x, size=(4, 5), mode="bilinear", align_corners=False), [(1, 1, 3, 3)]),
    (lambda x: F.pad(x, (1, 2), mode="reflect"), [(1, 2, 4)]),
    (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [(1, 1, 5, 5)]),
    (lambda x: F.adaptive_max_pool1d(x, 3), [(1, 2, 7)]),
    (lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    (lambda x: F.instance_norm(x), [(2, 2, 5)]),
    (lambda x, y: F.cosine_similarity(x, y), [(3, 4), (3, 4)]),
    (lambda x: F.fold(F.unfold(x, 2), (3, 3), 2), [(1, 2, 3, 3)]),
    (lambda x: F.mish(x) + F.selu(x) + F.hardswish(x) + F.softplus(x, 2.0, 1.0), [(5,)]),
    (lambda x: nn.LSTMCell(2, 3).double()(x)[1], [(2, 2)]),
])
def test_gradcheck_to_second_order(fn, shapes):
    ft.manual_seed(0)
    rng = np.random.default_rng(0)
    args = [ft.tensor(rng.standard_normal(s) + 0.1, requires_grad=True) for s in shapes]
    ft.manual_seed(0)
    assert ft.autograd.gradcheck(lambda *a: (ft.manual_seed(0), fn(*a))[1], args)
    assert ft.autograd.gradgradcheck(lambda *a: (ft.manual_seed(0), fn(*a))[1], args)


def test_float32_stays_float32():
    x = ft.randn(2, 3, 6, 6)
    for m in (nn.Conv2d(3, 4, 3), nn.BatchNorm2d(3), nn.ConvTranspose2d(3, 2, 2, stride=2), nn.GroupNorm(1, 3),
              nn.AdaptiveAvgPool2d(2), nn.InstanceNorm2d(3)):
        assert m(x).dtype == ft.float32, type(m).__name__
    out, (h, c) = nn.LSTM(6, 4)(x[0])
    assert out.dtype == ft.float32 and h.dtype == ft.float32


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "GRU", "LSTM"])
def test_recurrent_stacks_follow_their_cells_step_by_step(mode):
    """Two bidirectional layers, batch_first: each direction is its cell run over the steps (the reverse one
    from the last step), the layers' outputs concatenated; the final states stacked per layer and direction."""
    rng = np.random.default_rng(7)
    kind = {"RNN_TANH": "RNN", "RNN_RELU": "RNN", "GRU": "GRU", "LSTM": "LSTM"}[mode]
    extra = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    net = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True, **extra).double()
    x = ft.tensor(rng.standard_normal((2, 5, 3)), requires_grad=True)
    out, hn = net(x)
    hn = hn if kind == "LSTM" else (hn,)
    cell = {"RNN": lambda i, h, w: (np.maximum(0, i @ w[0].T + w[2] + h[0] @ w[1].T + w[3]) if extra else
                                    np.tanh(i @ w[0].T + w[2] + h[0] @ w[1].T + w[3]),),
            "GRU": lambda i, h, w: (_gru_ref(i, h[0], *w),),
            "LSTM": lambda i, h, w: _lstm_ref(i, h[0], h[1], *w)}[kind]
    seq = x.detach().numpy().swapaxes(0, 1)
    finals = []
    for layer in range(2):
        outs = []
        for d in range(2):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w = [getattr(net, n + sfx).detach().numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            h = tuple(np.zeros((2, 4)) for _ in range(2 if kind == "LSTM" else 1))
            steps = range(4, -1, -1) if d else range(5)
            ys = [None] * 5
            for t in steps:
                h = cell(seq[t], h, w)
                ys[t] = h[0]
            outs.append(np.stack(ys))
            finals.append(h)
        seq = np.concatenate(outs, -1)
    np.testing.assert_allclose(out.detach().numpy(), seq.swapaxes(0, 1), rtol=1e-12, atol=1e-12)
    for k, h in enumerate(hn):
        np.testing.assert_allclose(h.detach().numpy(), np.stack([f[k] for f in finals]), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert x.grad.shape == x.shape and np.all(np.isfinite(x.grad.numpy()))


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _gru_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    r = _sigmoid(gi[:, :4] + gh[:, :4])
    z = _sigmoid(gi[:, 4:8] + gh[:, 4:8])
    n = np.tanh(gi[:, 8:] + r * gh[:, 8:])
    return (1 - z) * n + z * h


def _lstm_ref(x, h, c, w_ih, w_hh, b_ih, b_hh):
    g = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, o = _sigmoid(g[:, :4]), _sigmoid(g[:, 4:8]), _sigmoid(g[:, 12:])
    c = f * c + i * np.tanh(g[:, 8:12])
    return o * np.tanh(c), c


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, words", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), "divisible by groups"),
    (lambda: nn.Conv2d(2, 2, 3, padding="full"), "Invalid padding string"),
    (lambda: nn.Conv2d(2, 2, 3, stride=2, padding="same"), "strided"),
    (lambda: F.layer_norm(ft.randn(2, 3), (4,)), "normalized_shape"),
    (lambda: F.interpolate(ft.randn(1, 1, 2, 2), size=3, scale_factor=2), "only one of size or scale_factor"),
    (lambda: F.interpolate(ft.randn(1, 1, 2, 2), size=3, align_corners=True), "align_corners"),
    (lambda: F.pad(ft.randn(2, 2), (1, 2, 3)), "divisible by 2"),
    (lambda: nn.MultiheadAttention(6, 4), "divisible by num_heads"),
    (lambda: nn.LSTM(3, 4)(ft.randn(5, 2, 2)), "input_size"),
    (lambda: nn.GRU(3, 4)(ft.randn(5, 2, 3), ft.zeros(2, 2, 4)), "Expected hidden size"),
    (lambda: F.cross_entropy(ft.randn(2, 3), ft.tensor([0, 1]), label_smoothing=1.5), "label_smoothing"),
    (lambda: F.embedding(ft.tensor([0.5]), ft.randn(3, 2)), "indices"),
    (lambda: F.one_hot(ft.tensor([3]), 2), "smaller than num_classes"),
    (lambda: nn.MSELoss(reduction="avg"), "not a valid value for reduction"),
    (lambda: F.max_pool2d(ft.randn(1, 1, 4, 4), 2, padding=2), "at most half the kernel size"),
    (lambda: nn.GroupNorm(3, 4), "divisible by num_groups"),
    (lambda: F.binary_cross_entropy(ft.rand(3), ft.rand(4)), "target size"),
    (lambda: nn.Embedding(3, 2, padding_idx=5), "Padding_idx"),
])
def test_error_messages(call, words):
    with pytest.raises((ValueError, RuntimeError, AssertionError, NotImplementedError, TypeError), match=words):
        call()


# --------------------------------------------------------------------------- ft.utils.data


def test_tensor_dataset_dataloader_batches_and_drop_last():
    x, y = ft.arange(10.0).reshape(10, 1), ft.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[0][1].tolist() == [0, 1, 2, 3]
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(x, ft.arange(9))


def test_shuffle_is_a_permutation_and_reproducible_with_a_generator():
    ds = TensorDataset(ft.arange(20))

    def order(seed):
        return [int(v) for (b,) in DataLoader(ds, batch_size=6, shuffle=True,
                                               generator=ft.Generator().manual_seed(seed)) for v in b.tolist()]

    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(20)) and a == b and a != c
    loader = DataLoader(ds, batch_size=20, shuffle=True, generator=ft.Generator().manual_seed(0))
    e1, e2 = next(iter(loader))[0].tolist(), next(iter(loader))[0].tolist()
    assert e1 != e2  # a new order each epoch


def test_collate_dicts_tuples_and_numbers():
    samples = [{"x": np.ones(2) * i, "y": i, "name": f"s{i}", "pair": (ft.tensor(i), 0.5)} for i in range(3)]
    batch = default_collate(samples)
    assert batch["x"].shape == (3, 2) and batch["y"].tolist() == [0, 1, 2] and batch["name"] == ["s0", "s1", "s2"]
    assert batch["pair"][0].tolist() == [0, 1, 2] and batch["pair"][1].tolist() == [0.5, 0.5, 0.5]
    loader = DataLoader(samples, batch_size=2, collate_fn=lambda b: len(b))
    assert list(loader) == [2, 1]
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object()])


def test_random_split_subset_concat_and_samplers():
    ds = TensorDataset(ft.arange(10))
    a, b = random_split(ds, [0.7, 0.3], generator=ft.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(int(a[i][0]) for i in range(7)) + [] != [] and \
        sorted([int(a[i][0]) for i in range(7)] + [int(b[i][0]) for i in range(3)]) == list(range(10))
    parts = random_split(ds, [0.34, 0.33, 0.33])
    assert [len(p) for p in parts] == [4, 3, 3]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    sub = Subset(ds, [9, 0])
    assert int(sub[0][0]) == 9 and len(sub) == 2
    cat = ConcatDataset([sub, ds])
    assert len(cat) == 12 and int(cat[2][0]) == 0 and int(cat[-1][0]) == 9
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)) == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)


def test_map_and_iterable_datasets():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return ft.tensor(float(i * i)), i

    xs, ys = next(iter(DataLoader(Squares(), batch_size=5)))
    assert xs.tolist() == [0.0, 1.0, 4.0, 9.0, 16.0] and ys.tolist() == [0, 1, 2, 3, 4]

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)


# --------------------------------------------------------------------------- default device


def test_default_device_with_the_fake_gpu():
    with fb.as_cuda():
        try:
            ft.set_default_device("cuda")
            assert ft.get_default_device() == ft.device("cuda") and ft.zeros(2).is_cuda and ft.randn(3).is_cuda
            model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
            assert all(t.is_cuda for t in model.state_dict().values() if t.dtype != ft.int64)
            opt = ft.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
            x, y = ft.randn(6, 4), ft.tensor([0, 1, 2, 0, 1, 2])
            with fb.no_host_sync():
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            assert all(p.is_cuda for p in model.parameters())
        finally:
            ft.set_default_device(None)
    assert ft.get_default_device() == ft.device("cpu") and not ft.zeros(1).is_cuda


def test_top_level_helpers():
    assert ft.median(ft.tensor([3.0, 1.0, 2.0, 4.0])).item() == 2.0
    v, i = ft.median(ft.tensor([[3.0, 1.0, 2.0]]), dim=1)
    assert v.tolist() == [2.0] and i.tolist() == [2]
    vals, inv, cnt = ft.unique(ft.tensor([2, 1, 2, 3]), return_inverse=True, return_counts=True)
    assert vals.tolist() == [1, 2, 3] and inv.tolist() == [1, 0, 1, 2] and cnt.tolist() == [1, 2, 1]
    assert ft.bincount(ft.tensor([0, 2, 2])).tolist() == [1, 0, 2]
    draws = ft.multinomial(ft.tensor([0.0, 1.0, 0.0]), 4, replacement=True)
    assert draws.tolist() == [1, 1, 1, 1]
    with pytest.raises(RuntimeError, match="without replacement"):
        ft.multinomial(ft.tensor([1.0, 1.0]), 3)
    assert set(ft.unique(ft.bernoulli(ft.full((50,), 0.5))).tolist()) <= {0.0, 1.0}
    f = lambda x: x  # noqa: E731
    assert ft.compile(f, disable=True) is f and not ft.cuda.is_available() and not ft.backends.mps.is_available()


# --------------------------------------------------------------------------- legacy reduction arguments

LEGACY = [  # (size_average, reduce) -> the reduction PyTorch reads from them
    ((None, False), "none"), ((False, None), "sum"), ((True, None), "mean"), ((False, True), "sum"),
    ((True, False), "none"), ((None, True), "mean"),
]


@pytest.mark.parametrize("legacy,reduction", LEGACY)
def test_deprecated_size_average_and_reduce_decide_the_reduction(legacy, reduction):
    """PyTorch's deprecated arguments still decide the reduction, with its warning, in the functional
    forms (positionally too) and the modules; they win over ``reduction``."""
    rng = np.random.default_rng(0)
    x = ft.tensor(rng.normal(size=(3, 4)))
    y = ft.tensor(rng.uniform(size=(3, 4)))
    size_average, reduce = legacy
    cases = [
        (F.mse_loss, nn.MSELoss, (x, y)), (F.l1_loss, nn.L1Loss, (x, y)),
        (F.smooth_l1_loss, nn.SmoothL1Loss, (x, y)), (F.soft_margin_loss, nn.SoftMarginLoss, (x, y.sign())),
        (F.binary_cross_entropy_with_logits, nn.BCEWithLogitsLoss, (x, y)),
    ]
    for fn, module, args in cases:
        want = fn(*args, reduction=reduction)
        with pytest.warns(UserWarning, match=f"please use reduction='{reduction}'"):
            other = "sum" if reduction != "sum" else "none"
            got = fn(*args, size_average=size_average, reduce=reduce, reduction=other)
        np.testing.assert_allclose(got.numpy(), want.numpy(), err_msg=fn.__name__)
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            m = module(size_average=size_average, reduce=reduce)
        assert m.reduction == reduction
        np.testing.assert_allclose(m(*args).numpy(), want.numpy(), err_msg=module.__name__)
    with pytest.warns(UserWarning):  # positionally, in PyTorch's order
        np.testing.assert_allclose(F.mse_loss(x, y, size_average, reduce).numpy(),
                                   F.mse_loss(x, y, reduction=reduction).numpy())


def test_bce_with_logits_weight_is_the_third_argument():
    """``F.binary_cross_entropy_with_logits(input, target, weight, ...)``: PyTorch's order; the weight scales
    each element's loss before the reduction, as the module's weight does."""
    z = ft.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=ft.float64, requires_grad=True)
    t = ft.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.5]], dtype=ft.float64)
    w = ft.tensor([0.2, 1.0, 3.0], dtype=ft.float64)
    plain = F.binary_cross_entropy_with_logits(z, t, reduction="none")
    got = F.binary_cross_entropy_with_logits(z, t, w)
    np.testing.assert_allclose(got.item(), (plain * w).mean().item(), rtol=1e-12)
    np.testing.assert_allclose(nn.BCEWithLogitsLoss(weight=w, reduction="sum")(z, t).item(),
                               (plain * w).sum().item(), rtol=1e-12)
    s = 1 / (1 + np.exp(-z.detach().numpy()))
    got.backward()
    np.testing.assert_allclose(z.grad.numpy(), (s - t.numpy()) * w.numpy() / 6, rtol=1e-12)
    assert F.binary_cross_entropy_with_logits(z, t, pos_weight=ft.tensor(2.0)).item() > 0
