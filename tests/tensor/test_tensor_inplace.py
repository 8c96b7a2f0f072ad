"""In-place operations: version counters, PyTorch's errors, views updating their base and its graph."""

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_inplace_ops_values_and_versions():
    x = ft.tensor([1.0, 2.0, 3.0])
    assert x._version == 0
    x.add_(1).mul_(2)
    assert x.tolist() == [4.0, 6.0, 8.0] and x._version == 2
    x.sub_(1, alpha=2).div_(2)
    assert x.tolist() == [1.0, 2.0, 3.0]
    x.clamp_(1.5, 2.5)
    assert x.tolist() == [1.5, 2.0, 2.5]
    x.zero_()
    assert x.tolist() == [0.0, 0.0, 0.0]
    x.fill_(3)
    x += 1
    x *= 2
    assert x.tolist() == [8.0, 8.0, 8.0]
    y = ft.ones(2, 3)
    y.copy_(ft.tensor([1.0, 2.0, 3.0]))
    assert y.tolist() == [[1, 2, 3], [1, 2, 3]]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ft.ones(3).add_(ft.ones(2, 3))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ft.tensor([1, 2]).add_(1.5)
    i = ft.tensor([1, 2])
    i.mul_(3)
    assert i.tolist() == [3, 6] and i.dtype is ft.int64
    m = ft.zeros(3)
    m.masked_fill_(ft.tensor([True, False, True]), 5.0)
    assert m.tolist() == [5.0, 0.0, 5.0]


def test_leaf_inplace_errors_and_no_grad_updates():
    w = ft.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        w.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place operation."):
        w[0] = 5.0
    with ft.no_grad():
        w.sub_(0.5)  # how optimizers update parameters
        w[1] = 7.0
    assert w.tolist() == [0.5, 7.0, 0.5] and w.is_leaf and w.requires_grad


def test_modified_saved_value_raises_pytorch_message():
    x = ft.randn(3, requires_grad=True)
    a = x * 1
    b = a.sin()  # SinBackward0 saves its input
    a.add_(1)
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    msg = str(info.value)
    assert "one of the variables needed for gradient computation has been modified by an inplace operation" in msg
    assert "[ft.FloatTensor [3]], which is output 0 of Add, is at version 1; expected version 0 instead" in msg
    e = x.exp()  # saves its result
    e.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 1; expected version 0"):
        e.sum().backward()
    d = x.detach()
    y = x.pow(2)
    d.zero_()  # detach() shares the version counter
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_inplace_graph_on_non_leaf():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    a.mul_(3)
    assert a.grad_fn.name() == "MulBackward0"
    a.sin_()  # needs the original input: kept for this op, as PyTorch does
    a.exp_()  # saves its result, which is a itself
    a.sum().backward()
    xv = np.array([1.0, 2.0])
    want = np.exp(np.sin(3 * xv)) * np.cos(3 * xv) * 3
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5)
    y = ft.zeros(2)
    y.add_(x)  # a tensor that did not require grad starts to
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "AddBackward0"


def test_inplace_through_views_updates_base_and_graph():
    x = ft.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    base = x.clone()
    v = base[1:3]
    assert v._base is base and v._version == base._version
    v.mul_(10)
    assert base.tolist() == [1.0, 20.0, 30.0, 4.0]  # the base sees it
    assert base.grad_fn.name() == "torch::autograd::CopySlices" and base._version == 1
    (base * base).sum().backward()
    assert x.grad.tolist() == [2.0, 400.0, 600.0, 8.0]
    # the view's own graph is rebased on the new base
    x.grad = None
    base = x.clone()
    v = base[:2]
    base.mul_(2)
    assert v.tolist() == [2.0, 4.0]
    v.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 0.0, 0.0]
    # views of views, transposes, reshape
    x2 = ft.arange(6.0).reshape(2, 3).requires_grad_()
    b2 = x2 * 1
    b2.t()[0].add_(100)  # column 0 of b2
    assert b2[:, 0].tolist() == [100.0, 103.0]
    (b2 * x2).sum().backward()
    want = 2 * np.arange(6.0).reshape(2, 3)
    want[:, 0] = 2 * np.array([0.0, 3.0]) + 100  # d/dx of (x+100)*x = 2x + 100
    np.testing.assert_allclose(x2.grad.numpy(), want)


def test_setitem():
    x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y[0] = 10.0
    assert y.tolist() == [10.0, 4.0, 6.0] and y.grad_fn.name() == "torch::autograd::CopySlices" and "grad_fn=<CopySlices>" in repr(y)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]
    z = x * 1
    w = ft.tensor([5.0, 6.0], requires_grad=True)
    z[[0, 2]] = w  # advanced index: index_put
    assert z.grad_fn.name() == "IndexPutBackward0"
    (z * ft.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 3.0]
    m = ft.zeros(2, 3)
    m[m == 0] = 1.0
    m[:, 1] = ft.tensor([7.0, 8.0])
    assert m.tolist() == [[1, 7, 1], [1, 8, 1]]


def test_inplace_on_expanded_view_raises():
    a = ft.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory location"):
        a.add_(1)


def test_data_and_detach_semantics():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x.pow(2)
    x.data.mul_(10)  # .data has its own version counter: no error (the known hole, as in PyTorch)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 40.0]
    x.data = ft.tensor([5.0, 5.0])
    assert x.tolist() == [5.0, 5.0] and x.requires_grad
    z = (x * 2).detach_()
    assert z.is_leaf and not z.requires_grad
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (x * 1)[0:1].detach_()
