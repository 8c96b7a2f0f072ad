"""Tensor creation, dtypes and promotion, metadata, conversion, printing, forward values."""

import copy
import pickle

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_creation_dtypes():
    assert ft.tensor([1.0, 2.0]).dtype is ft.float32
    assert ft.tensor([1, 2]).dtype is ft.int64
    assert ft.tensor([True, False]).dtype is ft.bool
    assert ft.tensor([1 + 2j]).dtype is ft.complex64
    assert ft.tensor([1, 2.5]).dtype is ft.float32
    assert ft.tensor(np.array([1.0])).dtype is ft.float64  # NumPy arrays keep their dtype
    assert ft.tensor(np.array([1], dtype=np.int32)).dtype is ft.int32
    assert ft.zeros(2, 3).shape == (2, 3) and ft.zeros((2, 3)).dtype is ft.float32
    assert ft.ones(2, dtype=ft.float64).dtype is ft.float64
    assert ft.empty(4).shape == (4,)
    assert ft.full((2,), 7).dtype is ft.int64 and ft.full((2,), 7.0).dtype is ft.float32
    assert ft.arange(5).dtype is ft.int64 and ft.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ft.arange(5.0).dtype is ft.float32
    np.testing.assert_allclose(ft.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5), rtol=1e-6)
    x = ft.randn(3, 4)
    for like in (ft.zeros_like, ft.ones_like, ft.empty_like, ft.rand_like, ft.randn_like):
        y = like(x)
        assert y.shape == x.shape and y.dtype is x.dtype
    assert ft.full_like(x, 2.0).sum().item() == 24.0
    assert ft.eye(3).sum().item() == 3.0
    assert ft.float is ft.float32 and ft.double is ft.float64 and ft.long is ft.int64


def test_default_dtype():
    ft.set_default_dtype(ft.float64)
    assert ft.get_default_dtype() is ft.float64
    assert ft.tensor([1.0]).dtype is ft.float64 and ft.randn(2).dtype is ft.float64
    assert ft.tensor([1j]).dtype is ft.complex128
    assert (ft.tensor([1, 2]) * 0.5).dtype is ft.float64
    ft.set_default_dtype(ft.float32)
    with pytest.raises(TypeError, match="floating-point"):
        ft.set_default_dtype(ft.int64)


def test_manual_seed_reproducible():
    ft.manual_seed(123)
    a = ft.randn(5)
    ft.manual_seed(123)
    b = ft.randn(5)
    assert a.equal(b)
    g = ft.Generator().manual_seed(1)
    c = ft.rand(3, generator=g)
    g.manual_seed(1)
    assert c.equal(ft.rand(3, generator=g))
    r = ft.randint(0, 10, (100,))
    assert r.dtype is ft.int64 and 0 <= r.min().item() and r.max().item() < 10


def test_promotion_like_pytorch():
    f32 = ft.ones(2)
    i64 = ft.ones(2, dtype=ft.int64)
    f64_0d = ft.tensor(1.0, dtype=ft.float64)
    assert (i64 * 2.5).dtype is ft.float32  # NumPy: float64
    assert (f32 * f64_0d).dtype is ft.float32  # zero-dim tensors do not promote within a category
    assert (f32 * ft.ones(2, dtype=ft.float64)).dtype is ft.float64
    assert (i64 + f32).dtype is ft.float32  # NumPy: float64
    assert (i64 / i64).dtype is ft.float32  # true division of integers
    assert (i64 // 2).dtype is ft.int64
    assert (ft.tensor([True]) + 1).dtype is ft.int64
    assert (f32 * (1 + 1j)).dtype is ft.complex64
    assert (f32 * np.float64(2.0)).dtype is ft.float32  # NumPy scalars act as Python numbers
    assert (ft.ones(2, dtype=ft.complex64) * ft.ones(2, dtype=ft.float64)).dtype is ft.complex128
    assert ft.promote_types(ft.int64, ft.float32) is ft.float32
    assert ft.result_type(ft.tensor([1, 2]), 2.5) is ft.float32
    assert (i64.exp()).dtype is ft.float32 and i64.mean if True else None


def test_metadata():
    x = ft.zeros(2, 3, 4)
    assert x.shape == ft.Size([2, 3, 4]) and x.size() == (2, 3, 4) and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24 and x.shape.numel() == 24
    assert str(x.device) == "cpu" and x.device == ft.device("cpu") and not x.is_cuda
    assert x.is_floating_point() and not x.is_complex() and x.element_size() == 4
    assert repr(x.shape) == "ft.Size([2, 3, 4])"
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


def test_conversions():
    x = ft.tensor([1.5, 2.5])
    assert x.tolist() == [1.5, 2.5]
    assert ft.tensor(3.5).item() == 3.5 and float(ft.tensor([2.0])) == 2.0 and int(ft.tensor(3)) == 3
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        x.item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(x)
    a = x.numpy()
    a[0] = 9.0
    assert x[0].item() == 9.0  # numpy() shares memory
    w = ft.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        w.numpy()
    assert np.asarray(w.detach()).tolist() == [1.0, 1.0]
    n = np.arange(3.0)
    t = ft.from_numpy(n)
    n[0] = 5
    assert t[0].item() == 5.0
    assert x.to(ft.float64).dtype is ft.float64 and x.double().dtype is ft.float64 and x.long().dtype is ft.int64
    assert x.to("cpu") is x
    assert x.type() == "ft.FloatTensor"
    assert ft.tensor([1, 2]).equal(ft.tensor([1, 2])) and not ft.tensor([1, 2]).equal(ft.tensor([1, 3]))
    assert len(ft.zeros(4, 2)) == 4 and [r.shape for r in ft.zeros(2, 3)] == [(3,), (3,)]
    with pytest.raises(TypeError, match="0-d tensor"):
        len(ft.tensor(1.0))
    assert f"{ft.tensor(1.23456):.2f}" == "1.23"


def test_repr():
    assert repr(ft.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(ft.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ft.tensor([1.0], dtype=ft.float64)) == "tensor([1.], dtype=ft.float64)"
    assert repr(ft.tensor([0.1, 0.25])) == "tensor([0.1000, 0.2500])"
    assert repr(ft.tensor(2.0)) == "tensor(2.)"


def test_pickle_and_deepcopy_leaves():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.equal(x) and y.requires_grad and y is not x
    z = copy.deepcopy(x)
    assert z.equal(x) and z.requires_grad
    z.data.add_(1)  # independent memory
    assert x[0].item() == 1.0
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)


OPS = [
    ("add", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a / b, np.divide),
    ("pow", lambda a, b: a.abs() ** b, lambda a, b: np.abs(a) ** b),
    ("max", lambda a, b: ft.maximum(a, b), np.maximum),
    ("atan2", lambda a, b: ft.atan2(a, b), np.arctan2),
]


@pytest.mark.parametrize("name,f,ref", OPS)
def test_binary_forward_matches_numpy(name, f, ref):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,)) + 2.5
    out = f(ft.tensor(a), ft.tensor(b))
    np.testing.assert_allclose(out.numpy(), ref(a, b), rtol=1e-5, atol=1e-6)


UNARY = ["exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs", "neg", "sigmoid", "relu", "log1p", "expm1",
         "square", "reciprocal", "rsqrt", "sinh", "cosh", "atan"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_forward_matches_numpy(name):
    a = np.linspace(0.1, 2.0, 7)
    ref = {
        "neg": -a, "sigmoid": 1 / (1 + np.exp(-a)), "relu": np.maximum(a, 0), "reciprocal": 1 / a,
        "rsqrt": 1 / np.sqrt(a), "atan": np.arctan(a), "abs": np.abs(a), "square": a * a,
    }.get(name)
    if ref is None:
        ref = getattr(np, name)(a)
    out = getattr(ft.tensor(a), name)()
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    assert getattr(ft, name)(ft.tensor(a)).equal(out)


def test_reductions_and_shapes():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = ft.tensor(a)
    assert x.sum().item() == a.sum()
    np.testing.assert_array_equal(x.sum(1).numpy(), a.sum(1))
    np.testing.assert_array_equal(x.sum((0, 2), keepdim=True).numpy(), a.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(x.mean(-1).numpy(), a.mean(-1))
    np.testing.assert_allclose(x.var(1).numpy(), a.var(1, ddof=1))  # unbiased by default
    np.testing.assert_allclose(x.std(1, unbiased=False).numpy(), a.std(1))
    np.testing.assert_allclose(x.std(1, correction=0).numpy(), a.std(1))
    values, indices = x.max(1)
    np.testing.assert_array_equal(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))
    assert x.max().item() == 23 and x.min().item() == 0 and x.argmax().item() == 23
    assert ft.tensor([1, 2]).sum().dtype is ft.int64
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ft.tensor([1, 2]).mean()
    np.testing.assert_allclose(x.logsumexp(2).numpy(), np.log(np.exp(a).sum(2)), rtol=1e-10)
    np.testing.assert_allclose(x.softmax(-1).sum(-1).numpy(), np.ones((2, 3)))
    np.testing.assert_allclose(x.norm().item(), np.linalg.norm(a))
    assert x.reshape(6, 4).shape == (6, 4) and x.view(-1).shape == (24,) and x.flatten(1).shape == (2, 12)
    assert x.transpose(0, 2).shape == (4, 3, 2) and x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x[0].t().shape == (4, 3) and x[0].T.shape == (4, 3) and x.mT.shape == (2, 4, 3)
    assert x.unsqueeze(1).shape == (2, 1, 3, 4) and x.unsqueeze(1).squeeze().shape == (2, 3, 4)
    assert ft.zeros(3, 1).expand(3, 5).shape == (3, 5) and ft.zeros(3, 1).expand(2, -1, 4).shape == (2, 3, 4)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        ft.zeros(3, 2).expand(3, 5)
    with pytest.raises(RuntimeError, match="Use .reshape"):
        x.transpose(0, 2).view(-1)
    assert x.repeat(2, 1, 1).shape == (4, 3, 4)
    assert [c.shape[0] for c in ft.arange(10).chunk(3)] == [4, 4, 2]
    assert [c.shape[0] for c in ft.arange(10).split([3, 7])] == [3, 7]
    assert len(x.unbind(1)) == 3
    np.testing.assert_array_equal(x[:, 1, ::2].numpy(), a[:, 1, ::2])
    np.testing.assert_array_equal(x[..., [0, 3]].numpy(), a[..., [0, 3]])
    np.testing.assert_array_equal(x[x > 20].numpy(), a[a > 20])
    np.testing.assert_array_equal(x[ft.tensor([1, 0])].numpy(), a[[1, 0]])
    assert ft.cat([x, x], 1).shape == (2, 6, 4) and ft.stack([x, x], -1).shape == (2, 3, 4, 2)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ft.stack([ft.zeros(2), ft.zeros(3)])
    np.testing.assert_array_equal(x.clamp(3, 5).numpy(), np.clip(a, 3, 5))
    np.testing.assert_array_equal(ft.where(x > 5, x, ft.zeros(())).numpy(), np.where(a > 5, a, 0))
    np.testing.assert_array_equal((x > 5).numpy(), a > 5)
    assert (x == x).all().item() and (x != x).any().item() is False
    m = ft.randn(3, 4)
    n = ft.randn(4, 5)
    np.testing.assert_allclose((m @ n).numpy(), m.numpy() @ n.numpy(), rtol=1e-5)
    np.testing.assert_allclose(ft.bmm(ft.randn(2, 3, 4), ft.randn(2, 4, 5)).shape, (2, 3, 5))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        ft.tensor(1.0) @ m
    np.testing.assert_allclose(m.gather(1, ft.tensor([[0], [1], [2]])).numpy().ravel(),
                               m.numpy()[[0, 1, 2], [0, 1, 2]])


def test_numpy_interop():
    x = ft.tensor([1.0, 2.0])
    out = np.array([1.0, 1.0]) + x
    assert isinstance(out, ft.Tensor) and out.dtype is ft.float64
    assert isinstance(np.exp(x), ft.Tensor)
