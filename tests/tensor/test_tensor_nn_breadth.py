"""Issue 29's nn breadth beyond the recorded PyTorch outputs (tests/tensor/test_tensor_torch_nn.py,
family ``breadth``): derivatives to second order (gradcheck / gradgradcheck), PyTorch's errors for bad
input, the random layers' laws, lazy modules, and the small wrappers. No torch needed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F
from funcgrad.tensor.autograd import gradcheck, gradgradcheck


def _x(seed: int, *shape: int, lo: float | None = None) -> ft.Tensor:
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, 1.0, shape) if lo is not None else rng.standard_normal(shape)
    return ft.tensor(v, dtype=ft.float64, requires_grad=True)


SAMPLES = ft.tensor(np.random.default_rng(9).uniform(0, 1, (1, 2, 3)), dtype=ft.float64)

SECOND_ORDER = {
    "lp_pool2d": (lambda x: F.lp_pool2d(x, 2.0, 2, stride=1), [(1, 1, 2, 3, 3)]),
    "lp_pool1d_ceil": (lambda x: F.lp_pool1d(x, 3.0, 2, ceil_mode=True), [(2, 1, 2, 5, 0.2)]),
    "fractional_max_pool2d": (lambda x: F.fractional_max_pool2d(x, 2, output_size=2,
                                                                _random_samples=SAMPLES[:, :, :2]),
                              [(3, 1, 2, 4, 4)]),
    "fractional_max_pool3d": (lambda x: F.fractional_max_pool3d(x, 2, output_size=2, _random_samples=SAMPLES),
                              [(4, 1, 2, 3, 4, 3)]),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3, alpha=0.5), [(5, 1, 4, 2, 2)]),
    "cross_map_lrn": (lambda x: ft.nn.CrossMapLRN2d(4, alpha=0.5)(x), [(6, 1, 5, 2, 2)]),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 2), [(7, 1, 4, 3)]),
    "conv_tbc": (lambda x, w, b: F.conv_tbc(x, w, b, 1), [(8, 4, 2, 3), (9, 2, 3, 2), (10, 2)]),
    "grid_sample_zeros": (lambda x, g: F.grid_sample(x, g, align_corners=False), [(11, 1, 2, 3, 4), (12, 1, 2, 2, 2)]),
    "grid_sample_border_ac": (lambda x, g: F.grid_sample(x, g, padding_mode="border", align_corners=True),
                              [(13, 1, 1, 3, 3), (14, 1, 3, 2, 2)]),
    "grid_sample_reflection": (lambda x, g: F.grid_sample(x * 1.0, g * 0.7, padding_mode="reflection",
                                                          align_corners=False), [(15, 1, 1, 4, 3), (16, 1, 2, 2, 2)]),
    "affine_grid": (lambda t: F.affine_grid(t, (1, 1, 3, 2), align_corners=False), [(17, 1, 2, 3)]),
    "multi_margin_p2": (lambda x: F.multi_margin_loss(x, ft.tensor([1, 0, 3]), p=2, margin=2.0), [(18, 3, 4)]),
    "multilabel_margin": (lambda x: F.multilabel_margin_loss(x, ft.tensor([[2, 0, -1, 0], [1, -1, 0, 0]]) ),
                          [(19, 2, 4)]),
    "triplet_with_distance": (lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=3.0),
                              [(20, 3, 2), (21, 3, 2), (22, 3, 2)]),
    "ctc_loss": (lambda x: F.ctc_loss(x.log_softmax(-1), ft.tensor([[1, 2], [2, 2]]), ft.tensor([4, 4]),
                                      ft.tensor([2, 2])), [(23, 4, 2, 3)]),
    "embedding_bag_psw": (lambda w, s: F.embedding_bag(ft.tensor([0, 2, 1, 2]), w, ft.tensor([0, 1]), mode="sum",
                                                       per_sample_weights=s), [(24, 3, 2), (25, 4)]),
    "embedding_bag_mean": (lambda w: F.embedding_bag(ft.tensor([[0, 2], [1, 1]]), w), [(26, 3, 2)]),
    "rrelu_eval": (lambda x: F.rrelu(x), [(27, 5)]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_derivatives(name):
    fn, specs = SECOND_ORDER[name]
    args = tuple(_x(s[0], *[d for d in s[1:] if isinstance(d, int)], lo=next((d for d in s[1:] if isinstance(d, float)),
                                                                              None)) for s in specs)
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_cross_map_lrn_gradient_is_the_derivative_of_its_output():
    """PyTorch's CrossMapLRN2d backward assumes a symmetric window its forward does not use (channel 0 stays in
    every window); ours differentiates the output PyTorch computes: a finite difference agrees."""
    x = _x(30, 1, 6, 1, 1)
    m = ft.nn.CrossMapLRN2d(3, alpha=1.0)
    assert gradcheck(lambda t: m(t), (x,))
    with ft.no_grad():
        y = m(x)
    sq = x.detach().numpy()[0, :, 0, 0] ** 2
    window = [sq[0] + sq[1]] + [sq[0] + sq[c - 1: c + 2].sum() - (sq[0] if c == 1 else 0) for c in range(1, 5)]
    window.append(sq[0] + sq[4] + sq[5])
    want = x.detach().numpy()[0, :, 0, 0] * (1.0 + np.array(window) / 3) ** -0.75
    np.testing.assert_allclose(y.numpy()[0, :, 0, 0], want, rtol=1e-12)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: F.multi_margin_loss(ft.randn(2, 3), ft.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: F.multi_margin_loss(ft.randn(2, 3), ft.tensor([0, 3])), RuntimeError, "target out of range"),
    (lambda: F.multilabel_margin_loss(ft.randn(2, 3), ft.tensor([0, 1])), RuntimeError, "inconsistent target size"),
    (lambda: F.channel_shuffle(ft.randn(1, 3, 2), 2), RuntimeError, "divisible by groups"),
    (lambda: F.channel_shuffle(ft.randn(3, 2), 1), RuntimeError, "at least 3 dimensions"),
    (lambda: F.fractional_max_pool2d(ft.randn(1, 1, 4, 4), 2), ValueError, "output_size or an output_ratio"),
    (lambda: F.fractional_max_pool2d(ft.randn(1, 1, 4, 4), 3, output_size=3), RuntimeError, "too large"),
    (lambda: ft.nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError, "between 0 and 1"),
    (lambda: ft.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError, "only one of"),
    (lambda: F.local_response_norm(ft.randn(2, 3), 2), ValueError, "3D or higher"),
    (lambda: ft.nn.CrossMapLRN2d(3)(ft.randn(1, 2, 3)), ValueError, "Expected input to be 4D"),
    (lambda: F.lp_pool2d(ft.randn(1, 1, 2, 2), 2.0, 3), RuntimeError, "larger than the input"),
    (lambda: F.affine_grid(ft.randn(1, 3, 3), (1, 1, 2, 2), align_corners=False), ValueError, "Nx2x3"),
    (lambda: F.affine_grid(ft.randn(1, 2, 3), (1, 2), align_corners=False), NotImplementedError, "4D and 5D"),
    (lambda: F.grid_sample(ft.randn(1, 1, 2, 2), ft.randn(1, 2, 2, 2), mode="cubic", align_corners=False),
     ValueError, "expected mode"),
    (lambda: F.grid_sample(ft.randn(1, 1, 2, 2), ft.randn(1, 2, 2, 2), padding_mode="wrap", align_corners=False),
     ValueError, "expected padding_mode"),
    (lambda: F.grid_sample(ft.randn(1, 1, 2, 2), ft.randn(1, 2, 2, 3), align_corners=False), RuntimeError,
     "size 2 in last dimension"),
    (lambda: F.embedding_bag(ft.tensor([0, 1]), ft.randn(3, 2), ft.tensor([0]), per_sample_weights=ft.ones(2)),
     NotImplementedError, "only supported for mode='sum'"),
    (lambda: F.embedding_bag(ft.tensor([[0, 1]]), ft.randn(3, 2), ft.tensor([0])), ValueError, "offsets has to be None"),
    (lambda: F.embedding_bag(ft.tensor([0, 1]), ft.randn(3, 2)), ValueError, "offsets has to be a 1D Tensor"),
    (lambda: F.embedding_bag(ft.tensor([0, 5]), ft.randn(3, 2), ft.tensor([0])), IndexError, "index out of range"),
    (lambda: F.triplet_margin_with_distance_loss(ft.randn(2, 3), ft.randn(2, 3), ft.randn(3)), RuntimeError,
     "same number of dimensions"),
    (lambda: ft.nn.TripletMarginWithDistanceLoss(margin=0.0), ValueError, "greater than 0"),
    (lambda: F.ctc_loss(ft.randn(3, 1, 4).log_softmax(-1), ft.tensor([[1]]), ft.tensor([3]), ft.tensor([1]),
                        blank=4), RuntimeError, "blank must be in label range"),
    (lambda: F.ctc_loss(ft.randn(3, 1, 4).log_softmax(-1), ft.tensor([[1]]), ft.tensor([5]), ft.tensor([1])),
     RuntimeError, "input_lengths to have value at most 3"),
    (lambda: F.conv_tbc(ft.randn(3, 2), ft.randn(2, 2, 2), ft.randn(2)), RuntimeError, "Input must have 3 dims"),
    (lambda: F.conv_tbc(ft.randn(3, 2, 4), ft.randn(2, 3, 2), ft.randn(2)), RuntimeError, "input channels"),
    (lambda: F.rrelu(ft.randn(3), 0.5, 0.1, training=True), RuntimeError, "Lower bound"),
    (lambda: ft.nn.DataParallel(ft.nn.Linear(2, 2), device_ids=[0, 1]), NotImplementedError,
     "DistributedDataParallel"),
    (lambda: ft.nn.LazyLinear(3)(ft.tensor(2.0)), IndexError, "tuple index"),
])
def test_bad_input_errors(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_ctc_impossible_alignment_is_inf_or_zero():
    lp = ft.randn(2, 1, 3, dtype=ft.float64).log_softmax(-1).requires_grad_()
    args = (ft.tensor([[1, 1]]), ft.tensor([2]), ft.tensor([2]))  # a repeat needs a blank between: 3 frames
    assert F.ctc_loss(lp, *args, reduction="sum").item() == float("inf")
    loss = F.ctc_loss(lp, *args, reduction="sum", zero_infinity=True)
    assert loss.item() == 0.0
    loss.backward()
    assert not lp.grad.abs().sum().item()


def test_ctc_single_label_closed_form():
    """One label over two frames: the alignments are (l, l), (b, l), (l, b)."""
    p = np.array([[0.2, 0.8], [0.6, 0.4]])  # (T, C) probabilities of blank 0 and label 1
    loss = F.ctc_loss(ft.tensor(np.log(p)).unsqueeze(1), ft.tensor([[1]]), [2], [1], reduction="sum")
    want = -np.log(p[0, 1] * p[1, 1] + p[0, 0] * p[1, 1] + p[0, 1] * p[1, 0])
    assert abs(loss.item() - want) < 1e-12


def test_rrelu_draws_slopes_in_range_and_seeded():
    x = -ft.ones(1000, dtype=ft.float64)
    ft.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    ft.manual_seed(3)
    assert np.array_equal(F.rrelu(x, 0.1, 0.3, training=True).numpy(), y.numpy())
    assert np.allclose(ft.nn.RReLU(0.1, 0.3).eval()(x).numpy(), -0.2)
    z = ft.randn(4)
    assert F.rrelu_(z) is z


def test_feature_alpha_dropout_drops_whole_channels_and_keeps_moments():
    ft.manual_seed(0)
    x = ft.randn(200, 8, 30, dtype=ft.float64)
    y = F.feature_alpha_dropout(x, 0.3, training=True).numpy()
    a = ((1 - 0.3) * (1 + 0.3 * 1.7580993408473766 ** 2)) ** -0.5
    dropped = np.isclose(y, a * (-1.7580993408473766) + a * 1.7580993408473766 * 0.3)
    per_channel = dropped.all(-1) | ~dropped.any(-1)
    assert per_channel.all() and 0.2 < dropped.all(-1).mean() < 0.4
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
    assert F.feature_alpha_dropout(x, 0.3, training=False) is x
    m = ft.nn.FeatureAlphaDropout(0.3).eval()
    assert m(x) is x


def test_fractional_pool_default_samples_come_from_the_generator():
    x = ft.randn(2, 3, 9, 9)
    ft.manual_seed(5)
    a, ia = F.fractional_max_pool2d(x, 3, output_ratio=0.5, return_indices=True)
    ft.manual_seed(5)
    b = ft.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))(x)
    assert a.shape == (2, 3, 4, 4) and np.array_equal(a.numpy(), b.numpy())
    flat = x.reshape(2, 3, -1).gather(2, ia.reshape(2, 3, -1)).reshape(a.shape)
    assert np.array_equal(flat.numpy(), a.numpy())


def test_lazy_modules_become_the_ordinary_module():
    ft.manual_seed(1)
    lazy = ft.nn.LazyLinear(3)
    assert lazy.has_uninitialized_params() and not list(lazy.parameters())
    calls = []
    lazy.register_forward_hook(lambda m, i, o: calls.append(o.shape))
    y = lazy(ft.ones(2, 4))
    ft.manual_seed(1)
    plain = ft.nn.Linear(4, 3)
    assert type(lazy) is ft.nn.Linear and lazy.in_features == 4 and y.shape == (2, 3)
    assert np.array_equal(lazy.weight.detach().numpy(), plain.weight.detach().numpy())
    lazy(ft.ones(1, 4))
    assert calls == [(2, 3), (1, 3)]  # the hook survives the change of class
    conv = ft.nn.LazyConv2d(4, 3, padding=1)
    assert conv(ft.randn(3, 5, 5)).shape == (4, 5, 5) and conv.in_channels == 3  # unbatched: channels first
    bn = ft.nn.LazyBatchNorm1d()
    bn(ft.randn(4, 6))
    assert type(bn) is ft.nn.BatchNorm1d and list(bn.state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    inst = ft.nn.LazyInstanceNorm2d(affine=True).eval()
    inst(ft.randn(2, 3, 4, 4))
    assert inst.num_features == 3 and not inst.training
    tconv = ft.nn.LazyConvTranspose1d(2, 3)
    assert tconv(ft.randn(1, 5, 4)).shape == (1, 2, 6)


def test_transformer_mask_and_checks():
    mask = ft.nn.Transformer.generate_square_subsequent_mask(3)
    assert np.array_equal(np.isinf(mask.numpy()), np.triu(np.ones((3, 3), bool), 1))
    model = ft.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        model(ft.randn(3, 2, 8), ft.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="equal to d_model"):
        model(ft.randn(3, 2, 6), ft.randn(4, 2, 6))
    for name, p in model.named_parameters():  # Xavier-uniform: |w| <= sqrt(6 / (fan_in + fan_out))
        if p.dim() > 1:
            assert np.abs(p.detach().numpy()).max() <= np.sqrt(6.0 / sum(p.shape[:2])) + 1e-7, name


def test_data_parallel_and_container():
    inner = ft.nn.Linear(3, 2)
    dp = ft.nn.DataParallel(inner)
    x = ft.randn(4, 3)
    assert np.array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert ft.nn.parallel.DataParallel is ft.nn.DataParallel
    with pytest.warns(UserWarning, match="Container is deprecated"):
        c = ft.nn.Container(fc=ft.nn.Linear(2, 2))
    assert list(c.state_dict()) == ["fc.weight", "fc.bias"]


def test_torch_function_protocol_helpers():
    class Logged:
        seen: list = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func.__name__)
            return "handled"

    def scale(x):
        if F.has_torch_function_unary(x):
            return F.handle_torch_function(scale, (x,), x)
        return x * 2

    assert scale(ft.ones(1)).item() == 2.0 and not F.has_torch_function((ft.ones(1), 3))
    assert scale(Logged()) == "handled" and Logged.seen == ["scale"]
    assert F.has_torch_function_variadic(1, Logged())

    class Declines:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    with pytest.raises(TypeError, match="no implementation found for"):
        F.handle_torch_function(scale, (Declines(),), Declines())
    pick = F.boolean_dispatch("flag", 1, False, lambda x, flag=False: "yes", lambda x, flag=False: "no",
                              func_name="pick")
    assert (pick(1), pick(1, True), pick(1, flag=True), pick.__name__) == ("no", "yes", "yes", "pick")
    F.assert_int_or_pair(3, "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        F.assert_int_or_pair((1, 2, 3), "k", "{} bad")


def test_grid_sample_identity_and_warning():
    x = ft.randn(2, 3, 4, 5)
    theta = ft.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2)
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    assert np.allclose(F.grid_sample(x, grid, align_corners=False).numpy(), x.numpy(), atol=1e-6)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        F.affine_grid(theta, x.shape)
    assert any("align_corners=False" in str(w.message) for w in seen)


def test_embedding_bag_module_matches_manual_sums():
    bag = ft.nn.EmbeddingBag(5, 2, mode="sum", padding_idx=0)
    w = bag.weight.detach().numpy()
    out = bag(ft.tensor([1, 0, 2, 3, 4]), ft.tensor([0, 2, 2]))
    assert np.allclose(out.detach().numpy(), [w[1], np.zeros(2), w[2] + w[3] + w[4]])
    frozen = ft.nn.EmbeddingBag.from_pretrained(ft.ones(3, 2), mode="max")
    assert not frozen.weight.requires_grad and frozen(ft.tensor([[0, 1]])).shape == (1, 2)


def test_sync_batchnorm_is_batchnorm_in_one_process_and_converts_models():
    ft.manual_seed(0)
    model = ft.nn.Sequential(ft.nn.Conv2d(2, 3, 1), ft.nn.BatchNorm2d(3), ft.nn.Sequential(ft.nn.BatchNorm1d(3)))
    ref = ft.nn.BatchNorm2d(3)
    model[1].weight.data.mul_(2.0)
    ref.load_state_dict(model[1].state_dict())
    converted = ft.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is ft.nn.SyncBatchNorm and type(converted[2][0]) is ft.nn.SyncBatchNorm
    assert converted[1].weight is model[1].weight and list(converted.state_dict()) == list(model.state_dict())
    x = ft.randn(4, 3, 2, 2)
    np.testing.assert_allclose(converted[1](x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(converted[1].running_var.numpy(), ref.running_var.numpy(), rtol=1e-6)
    assert ft.nn.SyncBatchNorm(3)(ft.randn(2, 3, 2, 2, 2)).shape == (2, 3, 2, 2, 2)  # any rank
    with pytest.raises(ValueError, match="expected at least 2D input"):
        ft.nn.SyncBatchNorm(3)(ft.randn(3))


def test_adaptive_log_softmax_log_prob_predict_and_errors():
    ft.manual_seed(0)
    asm = ft.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)
    x = ft.randn(5, 8, dtype=ft.float32)
    lp = asm.log_prob(x)
    np.testing.assert_allclose(lp.exp().sum(1).detach().numpy(), 1.0, rtol=1e-5)
    y = ft.tensor([0, 9, 4, 2, 6])
    out, loss = asm(x, y)
    np.testing.assert_allclose(out.detach().numpy(), lp.gather(1, y.unsqueeze(1)).squeeze(1).detach().numpy(),
                               rtol=1e-5)
    assert np.array_equal(asm.predict(x).numpy(), lp.argmax(1).numpy())
    with pytest.raises(RuntimeError, match="Target values should be in"):
        asm(x, ft.tensor([0, 1, 2, 3, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        asm(x, ft.tensor([0, 1]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ft.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
