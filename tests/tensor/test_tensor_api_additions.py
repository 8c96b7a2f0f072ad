"""Tensor API added for issue 29: scatter_add, flip(dims=), bernoulli, is_anomaly_enabled,
Module.get_submodule/get_parameter/get_buffer, forward(input=...) and relu on the rectifier primitive.

Expected values are PyTorch's (torch 2.13 printed them; the docs' examples where there are some),
written inline so that the tests run without torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad.tensor as ft
import funcgrad.tensor.nn.functional as F


def _double(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return ft.tensor(rng.standard_normal(shape), dtype=ft.float64, requires_grad=requires_grad)


# --- scatter_add

def test_scatter_add_values_match_pytorch_docs():
    src = ft.ones(2, 5)
    index = ft.tensor([[0, 1, 2, 0, 0]])  # smaller than src: only its leading part is used
    out = ft.zeros(3, 5, dtype=src.dtype).scatter_add(0, index, src)
    np.testing.assert_array_equal(out.numpy(), [[1, 0, 0, 1, 1], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]])
    index = ft.tensor([[0, 1, 2, 0, 0], [0, 1, 2, 2, 2]])
    out = ft.zeros(3, 5, dtype=src.dtype).scatter_add(0, index, src)
    np.testing.assert_array_equal(out.numpy(), [[2, 0, 0, 1, 1], [0, 2, 0, 0, 0], [0, 0, 2, 1, 1]])


def test_scatter_add_along_last_dim_with_smaller_index_and_repeats():
    out = ft.zeros(3, 4).scatter_add(1, ft.tensor([[3, 3], [0, 1]]), ft.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 0, 1], [4, 5, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(out.numpy(), ft.scatter_add(ft.zeros(3, 4), -1, ft.tensor([[3, 3], [0, 1]]),
                                                              ft.arange(12.0).reshape(3, 4)).numpy())


def test_scatter_add_matches_numpy_add_at():
    rng = np.random.default_rng(1)
    base, src = rng.standard_normal((4, 3, 5)), rng.standard_normal((6, 3, 5))
    idx = rng.integers(0, 4, size=(5, 2, 5))
    want = base.copy()
    for i, j, k in np.ndindex(*idx.shape):
        want[idx[i, j, k], j, k] += src[i, j, k]
    got = ft.tensor(base).scatter_add(0, ft.tensor(idx), ft.tensor(src))
    np.testing.assert_allclose(got.numpy(), want)
    assert got.dtype == ft.float64


def test_scatter_add_inplace_and_int32_index():
    x = ft.zeros(3)
    assert x.scatter_add_(0, ft.tensor([0, 0, 2], dtype=ft.int32), ft.ones(3)) is x
    np.testing.assert_array_equal(x.numpy(), [2, 0, 1])
    assert ft.zeros(3).scatter_add(0, ft.tensor([], dtype=ft.int64), ft.ones(2)).tolist() == [0, 0, 0]


def test_scatter_add_gradient_and_node_name():
    x, src = _double(3, 5), _double(2, 5, seed=1)
    index = ft.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    out = x.scatter_add(0, index, src)
    assert type(out.grad_fn).__name__ == "ScatterAddBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 5)))
    np.testing.assert_array_equal(src.grad.numpy(), np.ones((2, 5)))
    assert ft.autograd.gradcheck(lambda a, b: a.scatter_add(0, index, b), (x.detach().requires_grad_(),
                                                                          src.detach().requires_grad_()))
    assert ft.autograd.gradgradcheck(lambda a, b: (a.scatter_add(0, index, b) ** 2),
                                     (x.detach().requires_grad_(), src.detach().requires_grad_()))


def test_scatter_add_gradient_skips_src_beyond_index():
    src = _double(3, 5, seed=2)
    out = ft.zeros(3, 5, dtype=ft.float64).scatter_add(0, ft.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]]), src)
    (out * ft.arange(15.0, dtype=ft.float64).reshape(3, 5)).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy()[2], np.zeros(5))  # row 2 of src is not read


def test_scatter_add_inplace_gradient():
    def f(a, b):
        y = a * 1.0
        y.scatter_add_(1, ft.tensor([[1, 1], [0, 2]]), b)
        return y

    assert ft.autograd.gradcheck(f, (_double(2, 3), _double(2, 2, seed=3)))


@pytest.mark.parametrize("call, error, words", [
    (lambda: ft.zeros(3).scatter_add(0, ft.tensor([5]), ft.ones(1)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: ft.zeros(3).scatter_add(0, ft.tensor([-1]), ft.ones(1)), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: ft.zeros(3, 2).scatter_add(0, ft.tensor([0, 1]), ft.ones(2)), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda: ft.zeros(2, 2).scatter_add(0, ft.tensor([[0, 1, 1]]), ft.ones(2, 2)), RuntimeError,
     "Expected index [1, 3] to be no larger than self [2, 2] apart from dimension 0"),
    (lambda: ft.zeros(2).scatter_add(0, ft.tensor([0]), ft.ones(2, dtype=ft.float64)), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda: ft.zeros(3).scatter_add(0, ft.tensor([0.0, 1.0]), ft.ones(2)), RuntimeError,
     "Expected dtype int32/int64 for index"),
    (lambda: ft.zeros(2).scatter_add(0, [0], ft.ones(2)), TypeError, "argument 'index' (position 2) must be Tensor"),
    (lambda: ft.zeros(2).scatter_add(2, ft.tensor([0]), ft.ones(2)), IndexError, "Dimension out of range"),
])
def test_scatter_add_bad_input(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


# --- flip

def test_flip_keyword_and_positional_forms_agree():
    x = ft.arange(24).reshape(2, 3, 4)
    want = np.flip(np.arange(24).reshape(2, 3, 4), axis=(0, 2))
    for got in (x.flip(0, 2), x.flip((0, 2)), x.flip([0, -1]), x.flip(dims=(0, 2)), x.flip(dims=[0, -1]),
                ft.flip(x, (0, 2)), ft.flip(x, dims=(0, 2)), ft.flip(x, dims=[-3, 2])):
        np.testing.assert_array_equal(got.numpy(), want)


def test_flip_keyword_gradient_and_errors():
    assert ft.autograd.gradcheck(lambda a: a.flip(dims=(1,)) * ft.arange(3.0, dtype=ft.float64), (_double(2, 3),))
    with pytest.raises(TypeError, match="missing 1 required positional arguments"):
        ft.arange(3).flip()
    with pytest.raises(TypeError, match="both positionally and as a keyword"):
        ft.arange(3).flip(0, dims=(0,))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ft.arange(3).flip(dims=(1,))


# --- bernoulli

def test_bernoulli_method_function_and_inplace():
    g = ft.Generator().manual_seed(0)
    p = ft.tensor([0.0, 1.0, 0.0, 1.0])
    for draw in (p.bernoulli(), ft.bernoulli(p), p.bernoulli(generator=g), ft.zeros(4).bernoulli_(p)):
        np.testing.assert_array_equal(draw.numpy(), [0, 1, 0, 1])
        assert draw.dtype == ft.float32
    np.testing.assert_array_equal(ft.zeros(3).bernoulli(1.0).numpy(), [1, 1, 1])
    np.testing.assert_array_equal(ft.zeros(3).bernoulli_(0.0).numpy(), [0, 0, 0])
    big = ft.full((20000,), 0.3, dtype=ft.float64).bernoulli(generator=ft.Generator().manual_seed(1))
    assert abs(big.mean().item() - 0.3) < 0.02
    assert set(np.unique(big.numpy())) <= {0.0, 1.0}


def test_bernoulli_is_reproducible_with_a_seeded_generator():
    p = ft.full((50,), 0.5)
    a = p.bernoulli(generator=ft.Generator().manual_seed(7))
    b = ft.bernoulli(p, generator=ft.Generator().manual_seed(7))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bernoulli_has_no_gradient():
    p = ft.full((3,), 0.5, requires_grad=True)
    out = p.bernoulli()
    assert not out.requires_grad and out.grad_fn is None


def test_bernoulli_bad_input():
    with pytest.raises(RuntimeError, match="floating point"):
        ft.tensor([1, 0]).bernoulli()
    with pytest.raises(RuntimeError, match=r"p_in >= 0 && p_in <= 1"):
        ft.tensor([1.5]).bernoulli()
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        ft.zeros(3).bernoulli_(1.5)


# --- anomaly flags

def test_is_anomaly_enabled_follows_the_modes():
    assert not ft.is_anomaly_enabled()
    assert ft.is_anomaly_check_nan_enabled()  # PyTorch's default
    with pytest.warns(UserWarning):
        with ft.autograd.detect_anomaly(check_nan=False):
            assert ft.is_anomaly_enabled() and not ft.is_anomaly_check_nan_enabled()
    assert not ft.is_anomaly_enabled()
    with ft.autograd.set_detect_anomaly(True):
        assert ft.is_anomaly_enabled() is ft.autograd.is_anomaly_enabled() is True
    assert not ft.is_anomaly_enabled()


# --- Module.get_submodule / get_parameter / get_buffer

def _net():
    return ft.nn.Sequential(ft.nn.Linear(2, 3), ft.nn.Sequential(ft.nn.BatchNorm1d(3), ft.nn.ReLU()))


def test_get_submodule_parameter_buffer():
    net = _net()
    assert net.get_submodule("") is net
    assert net.get_submodule("1.0") is net[1][0]
    assert net.get_parameter("0.weight") is net[0].weight
    assert net.get_parameter("1.0.bias") is net[1][0].bias
    assert net.get_buffer("1.0.running_var") is net[1][0].running_var
    assert net[1][0].get_buffer("num_batches_tracked") is net[1][0].num_batches_tracked


@pytest.mark.parametrize("call, words", [
    (lambda n: n.get_submodule("2"), "Sequential has no attribute `2`"),
    (lambda n: n.get_submodule("0.foo"), "Linear has no attribute `foo`"),
    (lambda n: n.get_submodule("0.weight"), "`weight` is not an nn.Module"),
    (lambda n: n.get_parameter("0.nope"), "Linear has no attribute `nope`"),
    (lambda n: n.get_parameter("1.0.running_mean"), "`running_mean` is not an nn.Parameter"),
    (lambda n: n.get_buffer("0.weight"), "`weight` is not a buffer"),
    (lambda n: n.get_buffer("3.running_mean"), "Sequential has no attribute `3`"),
])
def test_get_submodule_errors_are_pytorchs(call, words):
    with pytest.raises(AttributeError) as info:
        call(_net())
    assert str(info.value) == words


# --- forward(input=...)

@pytest.mark.parametrize("layer, shape", [
    (lambda: ft.nn.Linear(3, 2), (4, 3)),
    (lambda: ft.nn.Conv1d(2, 1, 2), (1, 2, 5)),
    (lambda: ft.nn.Conv2d(2, 1, 2), (1, 2, 4, 4)),
    (lambda: ft.nn.Conv2d(2, 1, 3, padding=1, padding_mode="reflect"), (1, 2, 4, 4)),
    (lambda: ft.nn.ConvTranspose2d(2, 1, 2), (1, 2, 3, 3)),
    (lambda: ft.nn.ReLU(), (4,)),
    (lambda: ft.nn.GELU(), (4,)),
    (lambda: ft.nn.Sigmoid(), (4,)),
    (lambda: ft.nn.Tanh(), (4,)),
    (lambda: ft.nn.LeakyReLU(0.2), (4,)),
    (lambda: ft.nn.Softmax(dim=-1), (2, 4)),
    (lambda: ft.nn.PReLU(), (4,)),
    (lambda: ft.nn.Dropout(0.5).eval(), (4,)),
    (lambda: ft.nn.Flatten(), (2, 3, 4)),
    (lambda: ft.nn.Identity(), (4,)),
    (lambda: ft.nn.BatchNorm1d(3), (4, 3)),
    (lambda: ft.nn.InstanceNorm1d(3), (3, 5)),
    (lambda: ft.nn.LayerNorm(4), (2, 4)),
    (lambda: ft.nn.MaxPool1d(2), (1, 2, 4)),
    (lambda: ft.nn.Sequential(ft.nn.Linear(3, 3), ft.nn.ReLU()), (2, 3)),
])
def test_forward_takes_input_by_keyword(layer, shape):
    ft.manual_seed(0)
    m = layer()
    x = ft.randn(*shape)
    np.testing.assert_array_equal(m.forward(input=x).detach().numpy(), m(x).detach().numpy())
    np.testing.assert_array_equal(m(input=x).detach().numpy(), m(x).detach().numpy())


# --- relu through the rectifier primitive

def test_relu_keeps_nan_and_its_node_name():
    x = ft.tensor([-1.0, float("nan"), 0.0, 2.0], requires_grad=True)
    for y in (x.relu(), ft.relu(x), F.relu(x), ft.nn.ReLU()(x)):
        assert type(y.grad_fn).__name__ == "ReluBackward0"
        np.testing.assert_array_equal(y.detach().numpy(), [0.0, np.nan, 0.0, 2.0])
    x.relu().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[[0, 2, 3]], [0.0, 0.0, 1.0])  # derivative 0 at 0, as PyTorch


def test_relu_gradients_and_dtypes():
    x = _double(3, 4)
    assert ft.autograd.gradcheck(lambda a: a.relu(), (x,))
    assert ft.autograd.gradgradcheck(lambda a: a.relu() * a, (x,))
    assert ft.tensor([-2, 3], dtype=ft.int32).relu().tolist() == [0, 3]
    assert ft.tensor([-2, 3], dtype=ft.int32).relu().dtype == ft.int32
    assert ft.tensor([-1.0, 1.0], dtype=ft.float32).relu().dtype == ft.float32
    y = ft.tensor([-1.0, 3.0])
    assert y.relu_() is y and y.tolist() == [0.0, 3.0]
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        ft.tensor([True]).relu()


# --- on the (fake) device

def test_scatter_add_and_relu_stay_on_the_device():
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import fake_backend as fb

    with fb.as_cuda():
        x = ft.zeros(3, 2).cuda().requires_grad_()
        src = ft.tensor([[1.0, 2.0], [3.0, 4.0]]).cuda().requires_grad_()
        index = ft.tensor([[2, 0], [2, 1]]).cuda()
        out = x.scatter_add(0, index, src)  # the bounds check reads one flag on the host (as embedding's)
        with fb.no_host_sync():
            out.relu().sum().backward()
        assert out.is_cuda and src.grad.is_cuda
        np.testing.assert_array_equal(out.cpu().detach().numpy(), [[0, 2], [0, 4], [4, 0]])
        np.testing.assert_array_equal(src.grad.cpu().numpy(), np.ones((2, 2)))
        with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
            x.scatter_add(0, ft.tensor([[3, 0]]).cuda(), src)
