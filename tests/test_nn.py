"""funcgrad.nn: modules as pytrees, layers against direct implementations, functional ops."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.nn as nn
import funcgrad.numpy as fnp
import funcgrad.optim as optim
from funcgrad import tree_util
from funcgrad.testing import check_grads

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float64, scale=1.0):
    return (RNG.normal(size=shape) * scale).astype(dtype)


# =========================================================================== Module basics


class Affine(nn.Module):
    w: Any
    b: Any
    name: str = "affine"
    scale: float = 2.0

    def __call__(self, x):
        return self.scale * fnp.tanh(x @ self.w + self.b)


class Net(nn.Module):
    first: Affine
    rest: list
    act: Any = nn.static_field(default=None)

    def __init__(self, key=0):
        g = np.random.default_rng(key)
        self.first = Affine(g.normal(size=(3, 4)), g.normal(size=4))
        self.rest = [nn.Linear(4, 4, key=g, dtype=np.float64), nn.Linear(4, 2, key=g, dtype=np.float64)]
        self.act = nn.relu

    def forward(self, x):
        x = self.first(x)
        for layer in self.rest:
            x = self.act(layer(x))
        return x


def test_fields_children_and_static():
    a = Affine(np.ones((3, 2)), np.zeros(2))
    leaves, treedef = tree_util.tree_flatten(a)
    assert len(leaves) == 2  # w, b; name and scale are static (not arrays)
    assert leaves[0] is a.w and leaves[1] is a.b
    back = tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(back, Affine) and back.name == "affine" and back.scale == 2.0
    # static values are part of the structure
    assert treedef != tree_util.tree_structure(Affine(np.ones((3, 2)), np.zeros(2), scale=3.0))
    assert hash(treedef) == hash(tree_util.tree_structure(Affine(np.ones((3, 2)), np.ones(2))))


def test_key_paths_name_fields():
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path(Net())]
    assert paths == [".first.w", ".first.b", ".rest[0].weight", ".rest[0].bias", ".rest[1].weight", ".rest[1].bias"]


def test_grad_has_module_structure():
    net = Net()
    x = rand(5, 3)
    g = fg.grad(lambda m, x: fnp.sum(m(x) ** 2))(net, x)
    assert type(g) is Net and tree_util.tree_structure(g) == tree_util.tree_structure(net)
    assert g.act is nn.relu
    # against a finite difference on one weight
    eps = 1e-6
    w = net.rest[0].weight
    dw = np.zeros_like(w)
    dw[1, 2] = eps
    f = lambda m: float(np.sum(m(x) ** 2))  # noqa: E731
    plus = nn.tree_at(lambda m: m.rest[0].weight, net, w + dw)
    minus = nn.tree_at(lambda m: m.rest[0].weight, net, w - dw)
    assert np.isclose((f(plus) - f(minus)) / (2 * eps), g.rest[0].weight[1, 2], rtol=1e-5)


def test_forward_mode_and_hessian_through_module():
    a = Affine(rand(3, 2), rand(2))
    x = rand(3)
    t = tree_util.tree_map(np.ones_like, a)
    out, tan = fg.jvp(lambda m: fnp.sum(m(x)), (a,), (t,))
    g = fg.grad(lambda m: fnp.sum(m(x)))(a)
    assert np.isclose(tan, np.sum(g.w) + np.sum(g.b))
    check_grads(lambda m: m(x), (a,), order=2)


def test_immutable_with_clear_error():
    a = Affine(np.ones((3, 2)), np.zeros(2))
    with pytest.raises(AttributeError, match="immutable.*replace"):
        a.w = np.zeros((3, 2))
    with pytest.raises(AttributeError):
        del a.b


def test_init_must_set_declared_fields():
    class Bad(nn.Module):
        a: Any
        b: Any

        def __init__(self):
            self.a = np.ones(2)

    with pytest.raises(TypeError, match=r"did not set the field\(s\) \['b'\]"):
        Bad()

    class Undeclared(nn.Module):
        a: Any

        def __init__(self):
            self.a = 1.0
            self.c = 2.0

    with pytest.raises(AttributeError, match="no field 'c'"):
        Undeclared()


def test_dataclass_init_post_init_and_subclass():
    class Scaled(nn.Module):
        w: Any
        k: int = 3

        def __post_init__(self):
            if self.k < 0:
                raise ValueError("k must be >= 0")

        def __call__(self, x):
            return self.k * self.w * x

    s = Scaled(np.ones(2))
    assert s.k == 3 and np.array_equal(s(2.0), [6.0, 6.0])
    with pytest.raises(ValueError, match="k must"):
        Scaled(np.ones(2), -1)

    class Sub(Scaled):
        extra: Any = None

    sub = Sub(np.ones(2), 1, np.zeros(1))
    assert len(tree_util.tree_leaves(sub)) == 2
    # unflatten does not run __post_init__ (placeholder leaves are fine)
    td = tree_util.tree_structure(sub)
    assert td.unflatten([None, None]).w is None


def test_static_and_child_overrides():
    class P(nn.Module):
        trainable: float = nn.field(static=False, default=1.5)
        table: Any = nn.static_field(default=None)

    p = P(table=np.arange(3))
    assert tree_util.tree_leaves(p) == [1.5]

    class Scalars(nn.Module):
        scale: Any
        n: Any
        trainable: Any

    s = Scalars(np.sqrt(np.float32(4.0)), np.prod((2, 3)), np.array(1.0))
    assert tree_util.tree_leaves(s) == [s.trainable]  # NumPy scalars are configuration
    g = fg.grad(lambda m: m.trainable ** 2)(p)
    assert g.trainable == 3.0


def test_replace_and_tree_at():
    net = Net()
    new_w = np.zeros((4, 4))
    n2 = nn.tree_at(lambda m: m.rest[0].weight, net, new_w)
    assert n2.rest[0].weight is new_w and net.rest[0].weight is not new_w
    assert n2.rest[1] is not net.rest[1] or np.array_equal(n2.rest[1].weight, net.rest[1].weight)
    # replace_fn, several nodes, a subtree, and a None field
    n3 = nn.tree_at(lambda m: m.first.b, net, replace_fn=lambda b: b + 1)
    assert np.allclose(n3.first.b, net.first.b + 1)
    n4 = nn.tree_at(lambda m: (m.first.w, m.first.b), net, (1.0, 2.0))
    assert n4.first.w == 1.0 and n4.first.b == 2.0
    lin = nn.Linear(4, 4, key=3, dtype=np.float64)
    n5 = nn.tree_at(lambda m: m.rest[0], net, lin)
    assert n5.rest[0] is lin
    nobias = nn.Linear(2, 2, bias=False, key=0)
    withbias = nn.tree_at(lambda m: m.bias, nobias, np.ones(2, np.float32))
    assert np.array_equal(withbias.bias, [1, 1]) and nobias.bias is None
    assert tree_util.tree_structure(withbias) != tree_util.tree_structure(nobias)
    # replace: re-classifies the field
    r = nobias.replace(bias=np.zeros(2, np.float32))
    assert len(tree_util.tree_leaves(r)) == 2
    with pytest.raises(TypeError, match="unknown field"):
        nobias.replace(nope=1)
    with pytest.raises(ValueError, match="not a node of the tree"):
        nn.tree_at(lambda m: np.zeros(3), net, 1.0)
    with pytest.raises(TypeError, match="exactly one"):
        nn.tree_at(lambda m: m.first, net)


def test_eq_hash_repr():
    a, b = Net(key=1), Net(key=1)
    assert a == b and hash(a) == hash(b)
    c = nn.tree_at(lambda m: m.first.b, a, a.first.b + 1)
    assert a != c
    assert a != Net(key=2)
    text = repr(nn.MLP(3, 2, hidden_sizes=(4,), key=0))
    assert "MLP(" in text and "Linear(weight=f32[4,3], bias=f32[4]" in text and "<function relu>" in text
    traced = []
    fg.grad(lambda m: traced.append(repr(m)) or fnp.sum(m.weight))(nn.Linear(2, 1, key=0))
    assert "(traced)" in traced[0]


def test_count_params_and_filters():
    mlp = nn.MLP(10, 3, hidden_sizes=(7,), key=0)
    assert nn.count_params(mlp) == 10 * 7 + 7 + 7 * 3 + 3
    assert nn.is_inexact_array(np.ones(2)) and not nn.is_inexact_array(np.ones(2, int))
    assert nn.is_array(np.float32(1)) and not nn.is_array(1.0)


def test_partition_combine_freezes_leaves():
    model = nn.MLP(4, 2, hidden_sizes=(8,), key=0, dtype=np.float64)
    spec = tree_util.tree_map(lambda _: False, model)
    spec = nn.tree_at(lambda m: m.layers[-1], spec, replace=True)  # a prefix: the whole last layer
    params, frozen = nn.partition(model, spec)
    assert params.layers[0].weight is None and frozen.layers[0].weight is model.layers[0].weight
    assert params.layers[1].weight is model.layers[1].weight and frozen.layers[1].bias is None
    x, y = rand(16, 4), rand(16, 2)

    def loss(p, x, y):
        return nn.mse_loss(nn.combine(p, frozen)(x), y)

    opt = optim.adam(1e-2)
    state = opt.init(params)
    l0 = float(loss(params, x, y))
    for _ in range(20):
        grads = fg.grad(loss)(params, x, y)
        assert grads.layers[0].weight is None
        updates, state = opt.update(grads, state, params)
        params = optim.apply_updates(params, updates)
    trained = nn.combine(params, frozen)
    assert float(loss(params, x, y)) < l0
    assert trained.layers[0].weight is model.layers[0].weight  # frozen: untouched
    assert np.array_equal(trained.layers[0].bias, model.layers[0].bias)
    assert not np.allclose(trained.layers[1].weight, model.layers[1].weight)
    # a predicate as the filter
    floats, rest = nn.partition({"w": np.ones(2), "n": np.arange(2)}, nn.is_inexact_array)
    assert floats["n"] is None and rest["w"] is None
    assert nn.tree_equal(nn.combine(floats, rest), {"w": np.ones(2), "n": np.arange(2)})
    with pytest.raises(TypeError, match="bool"):
        nn.partition({"w": np.ones(2)}, lambda x: "yes")


# =========================================================================== initializers


def test_initializers_reproducible_and_scaled():
    from funcgrad.nn import init

    a = init.kaiming_uniform(0, (256, 128))
    assert a.dtype == np.float32 and np.array_equal(a, init.kaiming_uniform(0, (256, 128)))
    bound = math.sqrt(6 / 128)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.95 * bound
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(init.glorot_uniform(g1, (4, 5)), init.glorot_uniform(g2, (4, 5)))
    assert not np.array_equal(init.glorot_uniform(g1, (4, 5)), init.glorot_uniform(np.random.default_rng(5), (4, 5)))
    assert init.fans((16, 3, 3, 3)) == (27, 144)
    w = init.kaiming_normal(1, (2000, 500), np.float64)
    assert abs(w.std() - math.sqrt(2 / 500)) < 0.01 * math.sqrt(2 / 500) * 5
    q = init.orthogonal(0, (6, 6), np.float64)
    assert np.allclose(q @ q.T, np.eye(6), atol=1e-12)
    # layers built from one generator are reproducible as a whole
    assert nn.MLP(3, 2, hidden_sizes=(4, 4), key=7) == nn.MLP(3, 2, hidden_sizes=(4, 4), key=7)
    assert nn.MLP(3, 2, hidden_sizes=(4, 4), key=7) != nn.MLP(3, 2, hidden_sizes=(4, 4), key=8)
    with pytest.raises(TypeError, match="key must be"):
        init.rng("seed")


# =========================================================================== Linear, MLP, Embedding


def test_linear_values_and_errors():
    lin = nn.Linear(3, 2, key=0)
    assert lin.weight.shape == (2, 3) and lin.weight.dtype == np.float32
    assert np.abs(lin.weight).max() <= 1 / math.sqrt(3)
    x = rand(4, 3, dtype=np.float32)
    y = lin(x)
    assert y.dtype == np.float32 and np.allclose(y, x @ lin.weight.T + lin.bias, atol=1e-6)
    assert lin(x[0]).shape == (2,)
    with pytest.raises(ValueError, match="last axis must have length 3"):
        lin(rand(4, 5))
    lin64 = nn.Linear(3, 2, key=0, dtype=np.float64)
    check_grads(lambda m, x: m(x), (lin64, rand(4, 3)), order=2)


def test_embedding_lookup_and_gradient_scatter():
    emb = nn.Embedding(5, 3, key=0, dtype=np.float64)
    ids = np.array([[0, 2], [2, 4]])
    out = emb(ids)
    assert out.shape == (2, 2, 3) and np.array_equal(out[1, 0], emb.weight[2])
    g = fg.grad(lambda m: fnp.sum(m(ids)))(emb)
    assert np.array_equal(g.weight[:, 0], [1, 0, 2, 0, 1])  # id 2 used twice
    with pytest.raises(IndexError, match=r"\[0, 5\)"):
        emb(np.array([5]))
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([0.0]))


# =========================================================================== convolution


def conv2d_loop(x, w, b, stride, padding, dilation, groups):
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    Ho = (H + 2 * padding[0] - dilation[0] * (KH - 1) - 1) // stride[0] + 1
    Wo = (W + 2 * padding[1] - dilation[1] * (KW - 1) - 1) // stride[1] + 1
    out = np.zeros((N, O, Ho, Wo))
    Og = O // groups
    for o in range(O):
        g = o // Og
        for i in range(Ho):
            for j in range(Wo):
                for c in range(Cg):
                    for ki in range(KH):
                        for kj in range(KW):
                            out[:, o, i, j] += w[o, c, ki, kj] * xp[:, g * Cg + c, i * stride[0] + ki * dilation[0],
                                                                    j * stride[1] + kj * dilation[1]]
        out[:, o] += b[o]
    return out


def conv2d_loop_grads(x, w, G, stride, padding, dilation, groups):
    """Direct loops for d(sum(G * conv(x, w, b)))/d(x, w, b)."""
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    Og = O // groups
    for o in range(O):
        g = o // Og
        for i in range(G.shape[2]):
            for j in range(G.shape[3]):
                for c in range(Cg):
                    for ki in range(KH):
                        for kj in range(KW):
                            r, s = i * stride[0] + ki * dilation[0], j * stride[1] + kj * dilation[1]
                            dxp[:, g * Cg + c, r, s] += w[o, c, ki, kj] * G[:, o, i, j]
                            dw[o, c, ki, kj] += np.sum(G[:, o, i, j] * xp[:, g * Cg + c, r, s])
    dx = dxp[:, :, padding[0]:padding[0] + H, padding[1]:padding[1] + W]
    return dx, dw, G.sum(axis=(0, 2, 3))


CONV_CASES = [
    # C, O, kernel, stride, padding, dilation, groups
    (3, 4, (3, 3), (1, 1), (1, 1), (1, 1), 1),
    (4, 6, (3, 3), (2, 2), (0, 0), (1, 1), 2),
    (2, 2, (2, 2), (1, 1), (2, 2), (2, 2), 2),
    (3, 6, (2, 3), (1, 2), (1, 0), (2, 1), 3),
    (4, 2, (1, 1), (2, 1), (0, 1), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_direct_loops(case):
    C, O, k, s, p, d, g = case
    x, w, b = rand(2, C, 7, 6), rand(O, C // g, *k), rand(O)
    y = nn.conv2d(x, w, b, s, p, d, g)
    ref = conv2d_loop(x, w, b, s, p, d, g)
    assert y.shape == ref.shape and np.allclose(y, ref, atol=1e-12)
    G = rand(*ref.shape)
    grads = fg.grad(lambda x, w, b: fnp.sum(G * nn.conv2d(x, w, b, s, p, d, g)), argnums=(0, 1, 2))(x, w, b)
    for got, want in zip(grads, conv2d_loop_grads(x, w, G, s, p, d, g)):
        assert np.allclose(got, want, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2), st.sampled_from([1, 2, 3]), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2),
       st.integers(0, 2), st.integers(1, 2), st.integers(0, 3), st.integers(0, 3))
def test_conv2d_matches_loops_hypothesis(n, groups, cpg, opg, k, pad, dil, h_extra, w_extra):
    s = 1 + (h_extra % 2)
    C, O = groups * cpg, groups * opg
    H, W = dil * (k - 1) + 1 + h_extra, dil * (k - 1) + 1 + w_extra
    x, w, b = rand(n, C, H, W), rand(O, cpg, k, k), rand(O)
    args = ((s, 1), (pad, pad), (dil, dil), groups)
    y = nn.conv2d(x, w, b, *args)
    assert np.allclose(y, conv2d_loop(x, w, b, *args), atol=1e-12)
    G = rand(*y.shape)
    got = fg.grad(lambda x, w, b: fnp.sum(G * nn.conv2d(x, w, b, *args)), argnums=(0, 1, 2))(x, w, b)
    for a, e in zip(got, conv2d_loop_grads(x, w, G, *args)):
        assert np.allclose(a, e, atol=1e-12)


def test_conv2d_higher_order_and_float32():
    x, w, b = rand(2, 2, 5, 5), rand(4, 1, 3, 3), rand(4)
    check_grads(lambda x, w, b: nn.conv2d(x, w, b, 2, 1, 1, 2), (x, w, b), order=2)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    y = nn.conv2d(x32, w32, b.astype(np.float32), padding="same", groups=2)
    assert y.dtype == np.float32 and y.shape == (2, 4, 5, 5)
    gx = fg.grad(lambda x: fnp.sum(nn.conv2d(x, w32, padding=1, groups=2) ** 2))(x32)
    assert gx.dtype == np.float32


def test_conv2d_layer_and_errors():
    conv = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding="same", key=0)
    assert conv.weight.shape == (8, 3, 3, 3) and np.abs(conv.weight).max() <= 1 / math.sqrt(27)
    x = rand(2, 3, 6, 5, dtype=np.float32)
    assert conv(x).shape == (2, 8, 6, 5)
    assert conv(x[0]).shape == (8, 6, 5)  # unbatched input
    with pytest.raises(ValueError, match="input channels"):
        conv(rand(2, 4, 6, 5, dtype=np.float32))
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 8, 3, groups=2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        nn.conv2d(rand(1, 1, 2, 2), rand(1, 1, 3, 3))


def test_conv1d_and_conv3d():
    x, w, b = rand(2, 3, 9), rand(4, 3, 3), rand(4)
    y = nn.conv1d(x, w, b, stride=2, padding=1, dilation=1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    ref = np.stack([np.einsum("nck,ock->no", xp[:, :, 2 * i:2 * i + 3], w) for i in range(y.shape[-1])], -1) + b[:, None]
    assert np.allclose(y, ref)
    check_grads(lambda x, w: nn.conv1d(x, w, dilation=2), (x, w), order=1)
    layer = nn.Conv3d(1, 2, kernel_size=2, key=0)
    assert layer(rand(1, 1, 3, 3, 3, dtype=np.float32)).shape == (1, 2, 2, 2, 2)


def test_im2col_col2im_are_adjoint():
    x = rand(2, 3, 6, 5)
    cols = nn.im2col(x, (3, 2), stride=(2, 1), padding=((1, 0), (0, 1)), dilation=(1, 2))
    c = rand(*cols.shape)
    back = nn.col2im(c, x.shape, (3, 2), stride=(2, 1), padding=((1, 0), (0, 1)), dilation=(1, 2))
    assert np.isclose(np.sum(cols * c), np.sum(x * back))


def test_conv2d_matches_torch():
    torch = pytest.importorskip("torch")
    x, w, b = rand(2, 4, 7, 7), rand(6, 2, 3, 3), rand(6)
    y = nn.conv2d(x, w, b, stride=2, padding=1, dilation=2, groups=2)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = torch.nn.functional.conv2d(xt, wt, bt, stride=2, padding=1, dilation=2, groups=2)
    assert np.allclose(y, yt.detach().numpy())
    G = rand(*y.shape)
    (yt * torch.tensor(G)).sum().backward()
    gx, gw, gb = fg.grad(lambda x, w, b: fnp.sum(G * nn.conv2d(x, w, b, 2, 1, 2, 2)), argnums=(0, 1, 2))(x, w, b)
    assert np.allclose(gx, xt.grad.numpy()) and np.allclose(gw, wt.grad.numpy()) and np.allclose(gb, bt.grad.numpy())


def test_pooling():
    x = rand(2, 3, 6, 6)
    mp = nn.MaxPool2d(2)(x)
    assert np.array_equal(mp, x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    ap = nn.AvgPool2d(2)(x)
    assert np.allclose(ap, x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)))
    # overlapping windows with padding, against a loop
    y = nn.max_pool2d(x, 3, stride=2, padding=1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.array([[[[xp[n, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(3)] for i in range(3)]
                     for c in range(3)] for n in range(2)])
    assert np.array_equal(y, ref)
    # the gradient of max pooling goes to the maximum of each window
    g = fg.grad(lambda x: fnp.sum(nn.max_pool2d(x, 2)))(x)
    assert g.sum() == 2 * 3 * 9 and np.array_equal(g != 0, x == np.repeat(np.repeat(mp, 2, 2), 2, 3))
    check_grads(lambda x: nn.avg_pool2d(x, 3, stride=2, padding=1), (x,), order=2)
    check_grads(lambda x: nn.max_pool2d(x, 3, stride=2, padding=1), (x,), order=1)
    assert nn.MaxPool1d(2)(rand(2, 3, 7)).shape == (2, 3, 3)  # odd length: last element dropped


# =========================================================================== normalization


def test_layernorm():
    ln = nn.LayerNorm(5, dtype=np.float64)
    x = rand(3, 5, scale=4) + 10
    y = ln(x)
    assert np.allclose(y.mean(-1), 0, atol=1e-10) and np.allclose(y.var(-1), 1, atol=1e-4)
    ln2 = nn.tree_at(lambda m: (m.weight, m.bias), ln, (rand(5), rand(5)))
    check_grads(lambda m, x: m(x), (ln2, x), order=2)
    with pytest.raises(ValueError, match="trailing axes"):
        ln(rand(3, 4))
    x32 = rand(2, 5, dtype=np.float32)
    assert nn.LayerNorm(5)(x32).dtype == np.float32
    gn = nn.GroupNorm(2, 4, dtype=np.float64)
    check_grads(lambda x: gn(x), (rand(2, 4, 3),), order=1)
    check_grads(lambda x: nn.RMSNorm(4, dtype=np.float64)(x), (rand(2, 4),), order=2)


def test_batchnorm_explicit_state():
    bn = nn.BatchNorm(3, momentum=0.1, dtype=np.float64)
    state = bn.initial_state()
    x = rand(8, 3, 4, 4, scale=2.0) + 5.0
    y, new_state = bn(x, state, training=True)
    assert np.allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-10)
    assert np.allclose(new_state.running_mean, 0.1 * x.mean(axis=(0, 2, 3)))
    assert np.allclose(new_state.running_var, 0.9 + 0.1 * x.var(axis=(0, 2, 3), ddof=1))
    assert np.array_equal(state.running_mean, np.zeros(3))  # the old state is untouched
    y_eval, same = bn(x, new_state, training=False)
    assert same is new_state
    assert np.allclose(y_eval, (x - new_state.running_mean[:, None, None]) / np.sqrt(new_state.running_var[:, None, None] + 1e-5))

    def loss(model, state, x):
        out, state = model(x, state, training=True)
        return fnp.sum(out * rand(*x.shape)), state

    (l, st), g = fg.value_and_grad(loss, has_aux=True)(bn, state, x)
    assert type(g) is nn.BatchNorm and not fg.core.is_traced(st.running_mean)
    assert np.allclose(st.running_mean, new_state.running_mean)
    check_grads(lambda x: bn(x, state, training=True)[0], (rand(4, 3),), order=2)
    with pytest.raises(TypeError, match="initial_state"):
        bn(x, None, training=True)
    with pytest.raises(TypeError, match="training must be"):
        bn(x, state, training=None)


def test_sequential_threads_state_and_keys():
    seq = nn.Sequential(nn.Linear(4, 6, key=0), nn.BatchNorm(6), nn.relu, nn.Dropout(0.5), nn.Linear(6, 2, key=1))
    assert isinstance(seq.layers[2], nn.Lambda) and len(seq) == 5
    x = rand(10, 4, dtype=np.float32)
    state = seq.initial_state()
    assert state[0] is None and isinstance(state[1], nn.BatchNormState)
    y1, s1 = seq(x, state, key=0, training=True)
    y2, _ = seq(x, state, key=0, training=True)
    y3, _ = seq(x, state, key=1, training=True)
    assert np.array_equal(y1, y2) and not np.array_equal(y1, y3)
    ye, se = seq(x, s1, training=False)
    assert se[1] is s1[1]
    with pytest.raises(TypeError, match="initial_state"):
        seq(x)
    plain = nn.Sequential([nn.Linear(4, 3, key=0), nn.tanh])
    assert plain(x).shape == (10, 3) and isinstance(plain[0:1], nn.Sequential)
    assert nn.Flatten()(np.zeros((2, 3, 4))).shape == (2, 12)


# =========================================================================== dropout


def test_dropout_is_explicit():
    x = np.ones((200, 50), np.float32)
    drop = nn.Dropout(0.25)
    assert drop(x) is x  # no key: evaluation
    assert drop(x, key=0, training=False) is x
    with pytest.raises(ValueError, match="needs a random key"):
        drop(x, training=True)
    y = drop(x, key=0)
    assert y.dtype == np.float32 and set(np.unique(y)) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02 and abs(y.mean() - 1.0) < 0.03
    assert np.array_equal(y, drop(x, key=0))  # reproducible from a seed
    g = np.random.default_rng(3)
    a, b = drop(x, key=g), drop(x, key=g)  # a Generator advances
    assert not np.array_equal(a, b)
    grad = fg.grad(lambda x: fnp.sum(drop(x, key=0)))(x)
    assert np.array_equal(grad, y)  # the same mask scales the gradient
    with pytest.raises(ValueError, match="p must be"):
        nn.Dropout(1.0)


# =========================================================================== recurrent cells


def _sig(z):
    return 1 / (1 + np.exp(-z))


def test_gru_cell_matches_equations():
    cell = nn.GRUCell(3, 4, key=0, dtype=np.float64)
    x, h = rand(2, 3), rand(2, 4)
    gi = x @ cell.weight_ih.T + cell.bias_ih
    gh = h @ cell.weight_hh.T + cell.bias_hh
    r, z = _sig(gi[:, :4] + gh[:, :4]), _sig(gi[:, 4:8] + gh[:, 4:8])
    n = np.tanh(gi[:, 8:] + r * gh[:, 8:])
    assert np.allclose(cell(x, h), (1 - z) * n + z * h)
    assert cell(x).shape == (2, 4)
    check_grads(lambda m, x, h: m(x, h), (cell, x, h), order=2)


def test_lstm_cell_matches_equations_and_scan():
    cell = nn.LSTMCell(3, 2, key=0, dtype=np.float64)
    x, h, c = rand(5, 3), rand(5, 2), rand(5, 2)
    gates = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
    i, f, g, o = _sig(gates[:, :2]), _sig(gates[:, 2:4]), np.tanh(gates[:, 4:6]), _sig(gates[:, 6:])
    c2 = f * c + i * g
    h2, c2_got = cell(x, (h, c))
    assert np.allclose(c2_got, c2) and np.allclose(h2, o * np.tanh(c2))
    check_grads(lambda m, x: m(x, (h, c)), (cell, x), order=1)
    xs = rand(2, 4, 3)
    hs, (hT, cT) = nn.scan_cell(cell, xs)
    assert hs.shape == (2, 4, 2) and np.allclose(hs[:, -1], hT)
    g = fg.grad(lambda m: fnp.sum(nn.scan_cell(m, xs)[0]))(cell)
    assert type(g) is nn.LSTMCell and np.all(np.isfinite(g.weight_hh))


# =========================================================================== attention


def _mha_reference(m, q, k, v, mask=None):
    def proj(lin, x):
        return x @ lin.weight.T + lin.bias

    H, E = m.num_heads, m.embed_dim
    d = E // H

    def heads(x):
        return x.reshape(x.shape[:-1] + (H, d)).swapaxes(-2, -3)

    Q, K, V = heads(proj(m.q_proj, q)), heads(proj(m.k_proj, k)), heads(proj(m.v_proj, v))
    logits = Q @ K.swapaxes(-1, -2) / math.sqrt(d)
    if mask is not None:
        logits = np.where(mask, logits, -1e30)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ V).swapaxes(-2, -3).reshape(q.shape[:-1] + (E,))
    return proj(m.out_proj, out), w


def test_multihead_attention():
    m = nn.MultiheadAttention(8, 2, key=0, dtype=np.float64)
    q, kv = rand(3, 4, 8), rand(3, 5, 8)
    out, w = m(q, kv, kv, return_weights=True)
    ref, wref = _mha_reference(m, q, kv, kv)
    assert out.shape == (3, 4, 8) and w.shape == (3, 2, 4, 5)
    assert np.allclose(out, ref) and np.allclose(w, wref)
    # causal self-attention: position t ignores positions > t
    x = rand(2, 4, 8)
    causal = m(x, x, x, causal=True)
    assert np.allclose(causal, _mha_reference(m, x, x, x, nn.causal_mask(4))[0])
    g = fg.grad(lambda x: fnp.sum(m(x, x, x, causal=True)[:, 1]))(x)
    assert np.allclose(g[:, 2:], 0) and not np.allclose(g[:, :2], 0)
    # boolean padding mask (True = attend), same for all heads
    pad = np.ones((2, 4, 4), bool)
    pad[:, :, 3] = False
    assert np.allclose(m(x, x, x, mask=pad), _mha_reference(m, x, x, x, pad[:, None])[0])
    small = nn.MultiheadAttention(4, 2, key=1, dtype=np.float64)
    check_grads(lambda m, x: m(x, x, x), (small, rand(3, 4)), order=1)
    with pytest.raises(ValueError, match="must divide"):
        nn.MultiheadAttention(6, 4)


# =========================================================================== functional ops


X = rand(3, 4) * 2
X_AWAY0 = np.where(np.abs(X) < 0.2, 0.5, X)  # away from kinks


ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0), X_AWAY0),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6), X_AWAY0),
    "leaky_relu": (lambda x: nn.leaky_relu(x, 0.1), lambda x: np.where(x >= 0, x, 0.1 * x), X_AWAY0),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), X_AWAY0),
    "gelu_tanh": (nn.gelu, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), X),
    "silu": (nn.silu, lambda x: x / (1 + np.exp(-x)), X),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(x)), X),
    "sigmoid": (nn.sigmoid, _sig, X),
    "log_sigmoid": (nn.log_sigmoid, lambda x: np.log(_sig(x)), X),
    "tanh": (nn.tanh, np.tanh, X),
    "softmax": (nn.softmax, lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), X),
    "log_softmax": (nn.log_softmax, lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)), X),
    "logsumexp": (nn.logsumexp, lambda x: np.log(np.exp(x).sum(-1)), X),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_grads(name):
    f, ref, x = ACTIVATIONS[name]
    assert np.allclose(f(x), ref(x), atol=1e-12)
    check_grads(f, (x,), order=2)
    y32 = f(x.astype(np.float32))
    assert y32.dtype == np.float32 and np.allclose(y32, ref(x), atol=1e-5)
    check_grads(f, (x.astype(np.float32),), order=1)


def test_gelu_exact():
    pytest.importorskip("scipy")
    from scipy.special import erf

    assert np.allclose(nn.gelu(X, approximate=False), 0.5 * X * (1 + erf(X / math.sqrt(2))))
    check_grads(lambda x: nn.gelu(x, approximate=False), (X,), order=2)


def test_activations_stable_in_float32():
    big = np.array([-1e4, -100.0, 0.0, 100.0, 1e4], np.float32)
    for f in (nn.softplus, nn.sigmoid, nn.log_sigmoid, nn.silu, nn.elu, nn.gelu, nn.softmax, nn.log_softmax):
        y = f(big)
        g = fg.grad(lambda x: fnp.sum(f(x)))(big)
        assert np.all(np.isfinite(y)) and np.all(np.isfinite(g)), f.__name__
        assert y.dtype == np.float32 and g.dtype == np.float32
    assert nn.softplus(big)[-1] == 1e4 and nn.log_sigmoid(big)[0] == -1e4
    logits = np.array([[1e4, 0.0, -1e4]], np.float32)
    assert np.isclose(nn.cross_entropy(logits, np.array([0])), 0.0)
    assert np.isclose(nn.cross_entropy(logits, np.array([2])), 2e4)
    g = fg.grad(lambda z: nn.cross_entropy(z, np.array([1])))(logits)
    assert np.all(np.isfinite(g)) and np.allclose(g, [[1, -1, 0]])


def test_one_hot():
    assert np.array_equal(nn.one_hot(np.array([0, 2]), 3), [[1, 0, 0], [0, 0, 1]])
    oh = nn.one_hot(np.array([[1], [0]]), 2, dtype=np.float64, axis=0)
    assert oh.shape == (2, 2, 1) and oh.dtype == np.float64 and oh[1, 0, 0] == 1
    assert np.array_equal(nn.one_hot(np.array([5]), 3), [[0, 0, 0]])


def test_cross_entropy_forms():
    logits = rand(6, 5)
    labels = np.array([0, 1, 4, 2, 3, 3])
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -logp[np.arange(6), labels]
    assert np.isclose(nn.cross_entropy(logits, labels), want.mean())
    assert np.allclose(nn.cross_entropy(logits, labels, reduction="none"), want)
    assert np.isclose(nn.cross_entropy(logits, labels, reduction="sum"), want.sum())
    probs = np.eye(5)[labels]
    assert np.isclose(nn.cross_entropy(logits, probs), want.mean())
    eps = 0.1
    smooth = -((1 - eps) * logp[np.arange(6), labels] + eps / 5 * logp.sum(-1))
    assert np.isclose(nn.cross_entropy(logits, labels, label_smoothing=eps), smooth.mean())
    # class axis first
    assert np.isclose(nn.cross_entropy(logits.T, labels, axis=0), want.mean())
    assert np.isclose(nn.nll_loss(logp, labels), want.mean())
    check_grads(lambda z: nn.cross_entropy(z, labels, label_smoothing=0.1), (logits,), order=2)
    soft = np.abs(rand(6, 5))
    soft /= soft.sum(-1, keepdims=True)
    check_grads(lambda z, t: nn.cross_entropy(z, t), (logits, soft), order=2)
    check_grads(lambda z: nn.cross_entropy(z, labels), (logits.astype(np.float32),), order=1)
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        nn.cross_entropy(logits, labels + 1)
    with pytest.raises(ValueError, match="shape"):
        nn.cross_entropy(logits, labels[:3])
    with pytest.raises(ValueError, match="reduction"):
        nn.cross_entropy(logits, labels, reduction="avg")


def test_regression_and_binary_losses():
    p, t = rand(4, 3), rand(4, 3)
    assert np.isclose(nn.mse_loss(p, t), np.mean((p - t) ** 2))
    assert np.isclose(nn.l1_loss(p, t), np.mean(np.abs(p - t)))
    d = np.array([0.5, -2.0, 3.0])
    assert np.allclose(nn.huber_loss(d, np.zeros(3), reduction="none"), [0.125, 1.5, 2.5])
    z = rand(4, 3) * 3
    y = (rand(4, 3) > 0).astype(np.float64)
    ref = -(y * np.log(_sig(z)) + (1 - y) * np.log(1 - _sig(z)))
    assert np.isclose(nn.binary_cross_entropy_with_logits(z, y), ref.mean())
    pw = 2.0
    refw = -(pw * y * np.log(_sig(z)) + (1 - y) * np.log(1 - _sig(z)))
    assert np.isclose(nn.binary_cross_entropy_with_logits(z, y, pos_weight=pw), refw.mean())
    big = np.array([100.0, -100.0, 1e4], np.float32)
    assert np.allclose(nn.binary_cross_entropy_with_logits(big, np.array([1.0, 0.0, 1.0], np.float32),
                                                           reduction="none"), 0, atol=1e-6)
    for f in (nn.mse_loss, nn.huber_loss, nn.binary_cross_entropy_with_logits):
        check_grads(lambda a: f(a, y), (np.where(np.abs(z - y) < 0.05, z + 0.2, z),), order=2)
        check_grads(lambda a: f(a, y), (z.astype(np.float32),), order=1)
    check_grads(lambda a: nn.l1_loss(a, t), (np.where(np.abs(p - t) < 0.1, p + 0.3, p),), order=1)
    with pytest.raises(ValueError, match="same shape"):
        nn.mse_loss(p, t[:2])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 6), st.floats(0.0, 0.5))
def test_cross_entropy_properties(n, c, eps):
    logits = RNG.normal(size=(n, c)) * 3
    labels = RNG.integers(0, c, size=n)
    loss = nn.cross_entropy(logits, labels, label_smoothing=eps, reduction="none")
    assert np.all(loss >= -1e-12)
    # invariant to shifting the logits
    assert np.allclose(loss, nn.cross_entropy(logits + 7.0, labels, label_smoothing=eps, reduction="none"))
    # the gradient of each example's loss sums to zero over the classes
    g = fg.grad(lambda z: nn.cross_entropy(z, labels, label_smoothing=eps, reduction="sum"))(logits)
    assert np.allclose(g.sum(-1), 0, atol=1e-12)
