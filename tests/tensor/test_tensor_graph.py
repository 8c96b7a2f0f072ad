"""Graph recording: grad_fn names, next_functions, saved values, leaves, requires_grad."""

import gc
import weakref

import numpy as np
import pytest

import funcgrad.tensor as ft


def test_leaf_and_requires_grad_flags():
    x = ft.randn(3, requires_grad=True)
    c = ft.randn(3)
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert c.is_leaf and not c.requires_grad
    y = x * c
    assert not y.is_leaf and y.requires_grad and y.grad_fn is not None
    z = c * 2
    assert z.is_leaf and not z.requires_grad and z.grad_fn is None
    c.requires_grad_()
    assert (c * 2).requires_grad
    c.requires_grad = False
    assert not (c * 2).requires_grad
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    y.requires_grad_(True)  # allowed: already requires grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ft.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        ft.tensor([1, 2], requires_grad=True)


def test_grad_fn_names_and_next_functions():
    x = ft.randn(2, 3, requires_grad=True)
    c = ft.randn(2, 3)
    y = x * c
    assert y.grad_fn.name() == "MulBackward0"
    (acc, nr), (none, nr2) = y.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is x and nr == 0
    assert none is None and nr2 == 0
    assert (x * 2).grad_fn.next_functions[0][0] is acc  # one accumulator per leaf
    s = (y + 1).sum()
    assert s.grad_fn.name() == "SumBackward0"
    assert s.grad_fn.next_functions[0][0].name() == "AddBackward0"
    names = {
        "x.sum(0)": (x.sum(0), "SumBackward1"), "x.mean()": (x.mean(), "MeanBackward0"),
        "2 - x": (2 - x, "RsubBackward1"), "x - 2": (x - 2, "SubBackward0"), "x / 2": (x / 2, "DivBackward0"),
        "x ** 2": (x ** 2, "PowBackward0"), "x ** x": (x.exp() ** x, "PowBackward1"), "x.exp()": (x.exp(), "ExpBackward0"),
        "x.t()": (x.t(), "TBackward0"), "x.T": (x.T, "PermuteBackward0"), "x[0]": (x[0], "SelectBackward0"),
        "x[:, 1:]": (x[:, 1:], "SliceBackward0"), "x[[0, 1]]": (x[[0, 1]], "IndexBackward0"),
        "x.view(6)": (x.view(6), "ViewBackward0"), "x.transpose(0, 1)": (x.transpose(0, 1), "TransposeBackward0"),
        "x.unsqueeze(0)": (x.unsqueeze(0), "UnsqueezeBackward0"), "x @ x.T": (x @ x.T, "MmBackward0"),
        "relu": (x.relu(), "ReluBackward0"), "sigmoid": (x.sigmoid(), "SigmoidBackward0"),
        "tanh": (x.tanh(), "TanhBackward0"), "clamp": (x.clamp(0, 1), "ClampBackward1"),
        "where": (ft.where(x > 0, x, 0.0), "WhereBackward0"), "cat": (ft.cat([x, x]), "CatBackward0"),
        "stack": (ft.stack([x, x]), "StackBackward0"), "clone": (x.clone(), "CloneBackward0"),
        "to": (x.to(ft.float64), "ToCopyBackward0"), "max": (x.max(), "MaxBackward1"),
        "max(dim)": (x.max(0).values, "MaxBackward0"), "softmax": (x.softmax(1), "SoftmaxBackward0"),
        "log_softmax": (x.log_softmax(1), "LogSoftmaxBackward0"), "neg": (-x, "NegBackward0"),
        "abs": (x.abs(), "AbsBackward0"), "expand": (x[:1].expand(4, 3), "ExpandBackward0"),
        "var": (x.var(), "VarBackward0"), "norm": (x.norm(), "LinalgVectorNormBackward0"),
        "dot": (x[0].dot(x[1]), "DotBackward0"), "mv": (x.mv(x[0]), "MvBackward0"),
    }
    for label, (t, want) in names.items():
        assert t.grad_fn.name() == want, label
    assert repr(x.exp().grad_fn).startswith("<ExpBackward0 object at 0x")


def test_graph_built_anew_each_forward():
    w = ft.tensor([2.0], requires_grad=True)

    def f(x):
        out = x
        for _ in range(int(x.item())):  # plain Python control flow
            out = out * w
        return out.sum()

    f(ft.tensor([1.0])).backward()
    assert w.grad.item() == pytest.approx(1.0)
    w.grad = None
    f(ft.tensor([3.0])).backward()
    assert w.grad.item() == pytest.approx(3 * 3.0 * 2.0 ** 2)


def test_saved_tensors_exposed():
    x = ft.randn(5, requires_grad=True)
    y = x.pow(2)
    assert y.grad_fn._saved_self is x  # inputs are saved as themselves
    e = x.exp()
    r = e.grad_fn._saved_result
    assert r is not e and r.equal(e)  # outputs are saved without a reference cycle
    m = x * ft.ones(5)
    assert m.grad_fn._saved_other.equal(ft.ones(5))
    assert not hasattr((x + 1).grad_fn, "_saved_self")  # add saves nothing
    raw = y.grad_fn._raw_saved_self
    assert isinstance(raw, ft.autograd.graph.SavedTensor)
    s = e.sum()
    s.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        e.grad_fn._saved_result
    assert s.grad_fn.name() == "SumBackward0"


def test_saved_values_are_properties_of_node_classes():
    # a __getattr__ on nodes would make every attribute read of every node slower (the hot path)
    from funcgrad.tensor.prim_node import PrimNode

    assert "__getattr__" not in vars(PrimNode)
    x = ft.randn(3, requires_grad=True)
    n = x.pow(2).grad_fn
    assert n._saved_self is x and isinstance(n._raw_saved_self, ft.autograd.graph.SavedTensor)
    assert not hasattr(n, "_saved_arg5") and not hasattr(n, "_raw_saved_result")
    with pytest.raises(AttributeError, match="'PowBackward0' object has no attribute '_saved_nothing'"):
        n._saved_nothing  # noqa: B018
    assert "_saved_self" in dir(n) and "_saved_arg5" not in dir(n)


def test_raw_saved_register_hooks():
    x = ft.randn(4, requires_grad=True)
    y = x.pow(2)
    packed = []

    def pack(t):
        packed.append(t)
        return t.detach().numpy().copy()

    def unpack(a):
        return ft.from_numpy(a)

    y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    assert len(packed) == 1
    with pytest.raises(RuntimeError, match="SavedTensor hooks have already been set"):
        y.grad_fn._raw_saved_self.register_hooks(pack, unpack)
    with pytest.raises(TypeError, match="callable"):
        (x * x).grad_fn._raw_saved_self.register_hooks(1, unpack)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


def test_graph_frees_saved_values_after_backward():
    x = ft.randn(1000, requires_grad=True)
    h = x.exp()
    ref = weakref.ref(h.grad_fn._raw_saved_result)
    y = h.sum()
    saved = h.grad_fn._raw_saved_result
    y.backward()
    assert saved._data is None  # buffers dropped
    del saved, h, y
    gc.collect()
    assert ref() is None


def test_multi_output_and_nodes():
    x = ft.randn(4, 3, requires_grad=True)
    parts = x.split(2)
    loss = (parts[0] * 2).sum() + parts[1].sum()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.r_[np.full((2, 3), 2.0), np.ones((2, 3))])


def test_node_hooks_and_metadata():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    seen = {}

    def post(grad_inputs, grad_outputs):
        seen["in"] = [g.tolist() for g in grad_inputs if g is not None]
        seen["out"] = [g.tolist() for g in grad_outputs]

    def pre(grad_outputs):
        return (grad_outputs[0] * 10,)

    y.grad_fn.register_hook(post)
    h = y.grad_fn.register_prehook(pre)
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}
    y.sum().backward(retain_graph=True)
    assert seen == {"in": [[30.0, 30.0]], "out": [[10.0, 10.0]]}
    assert x.grad.tolist() == [30.0, 30.0]
    h.remove()
    x.grad = None
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_tensors_inside_functional_transforms_are_constants():
    import funcgrad as fg
    import funcgrad.numpy as fnp

    w = ft.tensor([1.0, 2.0])
    g = fg.grad(lambda a: fnp.sum(a * 3.0))(np.ones(2))
    np.testing.assert_allclose(g, [3.0, 3.0])
    assert isinstance(fnp.sin(w), ft.Tensor)  # funcgrad.numpy functions accept tensors


def test_functional_transforms_over_tensors():
    import funcgrad as fg
    import funcgrad.numpy as fnp

    x = ft.tensor([1.0, 2.0], dtype=ft.float64)
    g = fg.grad(lambda t: fnp.sum(fnp.sin(t) * t))(x)  # a function of tensors, differentiated by fg.grad
    np.testing.assert_allclose(np.asarray(g), np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]))
    w = ft.tensor([3.0, 4.0], requires_grad=True)
    gw = fg.grad(lambda a: fnp.sum(a * w))(np.ones(2))  # a tensor inside: a constant of the transform
    np.testing.assert_allclose(gw.detach().numpy(), [3.0, 4.0])
    gw.sum().backward()  # ... and the result is recorded on the tensor graph
    assert w.grad.tolist() == [1.0, 1.0]


def test_setitem_with_grad_into_plain_buffer():
    w = ft.tensor([2.0, 3.0], requires_grad=True)
    buf = ft.zeros(4)
    buf[1:3] = w * 2
    buf[0] = w[0]
    assert buf.requires_grad and buf.tolist() == [2.0, 4.0, 6.0, 0.0]
    (buf * ft.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    assert w.grad.tolist() == [21.0, 200.0]
    m = w * 1
    m[m > 2.5] = 0.0
    m.sum().backward()
    assert w.grad.tolist() == [22.0, 200.0]
