"""PyTorch's in-place / view autograd semantics (test/test_autograd.py is the specification; these
are our own tests of its behaviours): an in-place change through a view gives the view and its
base their new history at once; ``mark_dirty`` on a view rewrites the base; ``retain_grad()``
follows a tensor through in-place changes while hooks stay with the version they were registered
on; views that may not be rebased (made in no-grad or inference mode, by a custom Function, or
returned together with others by split/chunk/unbind) refuse with PyTorch's messages.

Scenarios whose results are compared with PyTorch itself (recorded) are in
test_tensor_torch_compare.py (``inplace_*``).
"""

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad.tensor as ft


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def test_view_prims_are_funcgrad_numpy_primitives_that_view():
    """_views.VIEW_PRIMITIVES holds funcgrad.numpy's primitives whose results share memory with the first argument."""
    import funcgrad.numpy as fnp
    from funcgrad.core import Primitive, get_primitive
    from funcgrad.tensor import views as _views

    assert all(isinstance(p, Primitive) for p in _views.VIEW_PRIMITIVES)
    assert {p.name for p in _views.VIEW_PRIMITIVES} == {"reshape", "transpose", "swapaxes", "moveaxis", "expand_dims",
                                                      "squeeze", "diagonal", "real", "imag", "getitem",
                                                      "view_as_real", "view_as_complex"}
    assert get_primitive(fnp.reshape) in _views.VIEW_PRIMITIVES and get_primitive(fnp.indexing._getitem) in _views.VIEW_PRIMITIVES
    x = ft.ones((2, 3))
    for view in (x.reshape(3, 2), x.t(), x[0], x.unsqueeze(0), x.diagonal(), x.transpose(0, 1)):
        assert view._base is x


# ---------------------------------------------------------------- 1. history at once


def test_inplace_on_view_of_plain_tensor_records_at_once():
    a = ft.ones(3, 4)
    b = ft.ones(1, 4, requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    # read through the raw slots: nothing may depend on .grad_fn / .requires_grad being read first
    assert type(res._node).__name__ == "AsStridedBackward0" and res._requires_grad
    assert type(a._node).__name__ == "CopySlices" and a._requires_grad
    assert res.grad_fn.next_functions == ((a.grad_fn, 0),)
    base_edge, value_edge = a.grad_fn.next_functions
    assert base_edge == (None, 0)  # a did not require grad
    assert type(value_edge[0]).__name__ == "MulBackward0"
    assert not res.is_leaf and res.requires_grad and a.requires_grad


@pytest.mark.parametrize("root", ["view", "base", "grad", "view_backward"])
def test_gradient_reaches_the_operand_from_view_or_base(root):
    a = ft.tensor([[2.0, 5.0, 7.0], [1.0, 3.0, 4.0]])
    b = ft.tensor([3.0, -1.0, 2.0], requires_grad=True)
    res = a.select(0, 1).mul_(b)
    w = ft.tensor([1.0, 10.0, 100.0])
    if root == "view":
        (res * w).sum().backward()
        got = b.grad
    elif root == "base":
        (a * ft.stack([w, w])).sum().backward()
        got = b.grad
    elif root == "grad":
        (got,) = ft.autograd.grad((res * w).sum(), b)
    else:
        res.backward(w)
        got = b.grad
    np.testing.assert_allclose(got.numpy(), [1.0, 30.0, 400.0])
    assert a._grad is None  # (a is no leaf now: .grad would warn)


def test_view_of_view_of_plain_tensor():
    a = ft.zeros(4)
    v = a.view(2, 2)[1]
    b = ft.tensor([1.0, 2.0], requires_grad=True)
    v.add_(b * 3)
    assert _name(v) == "AsStridedBackward0" and _name(a) == "CopySlices"
    (a * ft.arange(4.0)).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [6.0, 9.0])


def test_stale_sibling_views_follow_their_base_everywhere():
    """Views made before their base gained history: every consumer sees the new history."""
    b = ft.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)

    def fresh():
        a = ft.zeros(4)
        s = a[1:3]
        a.add_(b)
        return s

    s = fresh()
    s.backward(ft.tensor([1.0, 10.0]))  # as a root of backward
    np.testing.assert_allclose(b.grad.numpy(), [0, 1, 10, 0])
    c = ft.zeros(2)
    c.copy_(fresh())  # as the source of copy_
    (g,) = ft.autograd.grad((c * ft.tensor([1.0, 10.0])).sum(), b)
    np.testing.assert_allclose(g.numpy(), [0, 1, 10, 0])

    class Twice(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    (g,) = ft.autograd.grad(Twice.apply(fresh()).sum(), b)  # as a custom Function's input
    np.testing.assert_allclose(g.numpy(), [0, 2, 2, 0])
    s = fresh()
    s.retain_grad()  # retain_grad and hooks on a stale view
    seen = []
    s.register_hook(seen.append)
    (s * 3).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), [3, 3])
    assert len(seen) == 1


def test_stale_sibling_overwritten_by_a_constant_drops_the_old_gradient():
    b = ft.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a = ft.zeros(4)
    v2 = a[2:]
    a.add_(b)
    v2.copy_(ft.tensor([5.0, 6.0]))  # v2 is stale here: the copy must still rebase a
    (a * ft.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 2.0, 0.0, 0.0])


def test_view_made_before_the_base_gained_history():
    x = ft.ones(5)
    v = x.select(0, 1)
    assert not v.requires_grad and v.grad_fn is None
    r = ft.tensor(2.0, requires_grad=True)
    x.add_(r)
    assert v.requires_grad and _name(v) == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0] is x.grad_fn
    (v * 3).backward()
    assert r.grad.item() == 3.0


def test_view_made_a_leaf_stays_one():
    a = ft.zeros(3)
    v = a[:2]
    v.requires_grad_()
    a.mul_(2)  # v is stale: refreshed from a base without history, it stays a leaf
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    assert "a view of a leaf Variable that requires grad" in _message(lambda: v.mul_(2))


VIEWS = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(0, 2),
    "t": lambda x: x.t(),
    "view": lambda x: x.view(12),
    "diagonal": lambda x: x.diagonal(),
    "ellipsis": lambda x: x[..., 1],
    "unsqueeze": lambda x: x.unsqueeze(0),
    "chain": lambda x: x.t()[1:].narrow(1, 0, 2),
}
OPS = {
    "mul_": lambda v, b: v.mul_(b),
    "add_": lambda v, b: v.add_(b, alpha=2),
    "div_": lambda v, b: v.div_(b + 3),
    "copy_": lambda v, b: v.copy_(b * 2),
    "addcmul_": lambda v, b: v.addcmul_(b, b, value=0.5),
    "pow_": lambda v, b: v.pow_(2).mul_(b),
    "sigmoid_": lambda v, b: v.mul_(b).sigmoid_(),  # saves its result: the last change of it
    "setitem": lambda v, b: v.__setitem__((Ellipsis,), b * 2),
    "setitem_row": lambda v, b: v.__setitem__(0, b[0] * 3),
}


def _operand(view):
    return ft.tensor(np.linspace(0.5, 1.5, view.numel()).reshape(view.shape), dtype=ft.float64, requires_grad=True)


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("base_requires_grad", [True, False])
def test_inplace_through_views_gradcheck(view, op, base_requires_grad):
    root = ft.tensor(np.linspace(-1.0, 2.0, 12).reshape(3, 4), dtype=ft.float64, requires_grad=base_requires_grad)
    b = _operand(VIEWS[view](root.detach()))

    def f(root, b):
        x = root.clone()
        v = VIEWS[view](x)
        OPS[op](v, b)
        return x * x, v * 3  # the base and the view, both used after the change

    inputs = (root, b) if base_requires_grad else (b,)
    fn = f if base_requires_grad else (lambda b: f(root, b))
    assert ft.autograd.gradcheck(fn, inputs)
    assert ft.autograd.gradgradcheck(fn, inputs)


@settings(max_examples=20, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(sorted(VIEWS)), st.sampled_from(sorted(set(OPS) - {"sigmoid_"}))),
                      min_size=2, max_size=3),
       use=st.sampled_from(["base", "last_view", "both"]))
def test_random_sequences_of_inplace_changes_through_views(steps, use):
    """Several in-place changes through (possibly overlapping) views of one base, each with its
    own operand; the base and/or the last view used afterwards: gradients to first order. (Not
    sigmoid_: it saves its result, which a later change may overwrite: an error, as in PyTorch.)"""
    root = ft.tensor(np.linspace(-1.0, 2.0, 12).reshape(3, 4), dtype=ft.float64, requires_grad=True)
    operands = [_operand(VIEWS[v](root.detach())) for v, _ in steps]

    def f(root, *bs):
        x = root.clone()
        for (view, op), b in zip(steps, bs):
            v = VIEWS[view](x)
            OPS[op](v, b)
        outs = {"base": (x * x,), "last_view": (v * 3,), "both": (x * x, v * 3)}
        return outs[use]

    assert ft.autograd.gradcheck(f, (root, *operands))


@pytest.mark.parametrize("part", ["real", "imag"])
def test_inplace_on_real_or_imag_view_of_complex_base(part):
    """Only that component is overwritten: the other keeps its gradient; the overwritten one's
    cotangent has the right sign (funcgrad's complex cotangents follow JAX's convention)."""
    z0 = ft.tensor([1 + 2j, 3 - 1j], dtype=ft.complex128, requires_grad=True)
    z = z0.clone()
    getattr(z, part).mul_(3)
    (z.real * ft.tensor([1.0, 2.0], dtype=ft.float64) + z.imag * ft.tensor([10.0, 20.0], dtype=ft.float64)).sum() \
        .backward()
    want = [3 + 10j, 6 + 20j] if part == "real" else [1 + 30j, 2 + 60j]  # PyTorch's convention: d/dx + i d/dy
    np.testing.assert_allclose(z0.grad.numpy(), want)


def test_then_no_grad_refresh_and_weak_grad_fn():
    a = ft.ones(3, 1, dtype=ft.float64, requires_grad=True)
    c = (a * 2).view_as(a)
    c[0][0] = 3
    with ft.no_grad():
        assert _name(c) == "AsStridedBackward0"  # refreshed without grad mode
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[0.0], [2.0], [2.0]])
    a = ft.arange(10.0, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()  # the history of b survives b
    assert s.item() == 1.0 and a.grad.tolist() == [0.0, 1.0] + [0.0] * 8


def test_inplace_on_view_under_no_grad_then_refresh():
    a = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a.clone()
    v = x[:2]
    with ft.no_grad():
        v.mul_(2)  # not tracked
    assert _name(v) == "AsStridedBackward0" and _name(x) == "CloneBackward0"
    (v.sum() + x.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 1.0])


def test_no_reference_cycle_through_an_inplace_view():
    freed = []

    class OnDelete:
        def __del__(self):
            freed.append(1)

        def __call__(self, *args):
            return None

    def run():
        root = ft.randn(3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(OnDelete())
        view = copy.view(9)
        ft.nn.functional.relu(view, inplace=True)  # saves its output
        v = copy[1]
        v.retain_grad()
        v.mul_(v)

    gc.disable()
    try:
        run()
    finally:
        gc.enable()
    assert freed == [1]


# ---------------------------------------------------------------- 2. mark_dirty on a view


class _PyAdd(ft.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.mark_dirty(x)
        x.add_(y)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class _Double(ft.autograd.Function):
    """Modifies x in place; its backward doubles (so the gradient must go through it)."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_mark_dirty_view_rewrites_the_base():
    x = ft.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    base = x.clone()
    v = base[0]
    r = _Double.apply(v)
    assert r is v
    assert _name(base) == "CopySlices" and _name(r) == "AsStridedBackward0"
    assert r.grad_fn.next_functions[0][0] is base.grad_fn
    old_base, fn_edge = base.grad_fn.next_functions
    assert type(old_base[0]).__name__ == "CloneBackward0" and type(fn_edge[0]).__name__ == "_DoubleBackward"
    assert base.tolist() == [[2.0, 4.0, 6.0], [4.0, 5.0, 6.0]]
    (base * ft.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 4.0, 6.0], [4.0, 5.0, 6.0]])


def test_mark_dirty_view_of_plain_tensor_gives_it_history():
    a = ft.zeros(2, 2)
    b = ft.tensor([1.0, 2.0], requires_grad=True)
    r = _PyAdd.apply(a[1], b)
    assert a.requires_grad and _name(a) == "CopySlices" and r.requires_grad
    (a * ft.tensor([[1.0, 1.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 4.0])


def test_mark_dirty_views_gradcheck():
    a = ft.tensor(np.linspace(-1, 1, 16).reshape(4, 4), dtype=ft.float64, requires_grad=True)
    b = ft.tensor([[1.0, 2.0], [-0.5, 0.3]], dtype=ft.float64, requires_grad=True)

    def f(root, b):
        x = root.clone()
        _PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        _PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x * x

    assert ft.autograd.gradcheck(f, (a, b))
    assert ft.autograd.gradgradcheck(f, (a, b))


def test_mark_dirty_view_errors():
    class DirtyTwo(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            x.mul_(2)
            return x, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    base = ft.tensor([1.0, 2.0, 3.0], requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="modifies inplace an input that is a view of another Tensor, your "
                                           "Function cannot return more than one Tensor"):
        DirtyTwo.apply(base[:2])
    DirtyTwo.apply(base.clone())  # not a view: fine
    leaf = ft.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        _Double.apply(leaf[:1])
    with ft.no_grad():
        v = base[:2]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        _Double.apply(v)


def test_mark_dirty_moves_retain_grad_and_keeps_hooks():
    base = ft.tensor([1.0, 2.0], requires_grad=True).clone()
    v = base[:1]
    v.retain_grad()
    _Double.apply(v)
    (v * 5).sum().backward()
    assert v.grad.tolist() == [5.0]
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    _Double.apply(y)
    (y * 5).sum().backward()
    assert y.grad.tolist() == [5.0, 5.0]  # the gradient of y after the Function
    assert seen == [[10.0, 10.0]]  # the hook stays with the y before it
    assert x.grad.tolist() == [10.0, 10.0]


# ---------------------------------------------------------------- 3. retain_grad and hooks


def test_retain_grad_follows_inplace_changes():
    a = ft.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(3)
    (a * 5).sum().backward()
    assert a.grad.tolist() == [5.0] and a.retains_grad
    old = a.grad_fn
    assert not old.next_functions[0][0]._retain  # nothing left behind on the old versions


def test_retain_grad_of_base_moves_through_copyslices():
    x = ft.tensor([1.0, 2.0], requires_grad=True).clone()
    x.retain_grad()
    x[:1].mul_(2)
    assert x.grad_fn._retain and 0 in x.grad_fn._retain
    x.mul_(3)
    (x * ft.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 10.0]


def test_retain_grad_on_views_over_inplace():
    base = ft.tensor([1.0], requires_grad=True).clone()
    view, view2 = base[:], base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2 * 3).sum().backward()
    assert view.grad.tolist() == [1.0] and view2.grad.tolist() == [3.0]


def test_retain_grad_multiple_outputs():
    class DoubleMul(ft.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    w = ft.tensor([1.0, 2.0, 3.0])
    for fn in (DoubleMul.apply, lambda t: ft.var_mean(t, dim=0)):
        b = ft.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.1, 0.2, 0.3]], requires_grad=True)
        first, second = fn(b)
        first.retain_grad()
        second.retain_grad()
        first.mul_(2)
        (first * w + second).sum().backward()
        np.testing.assert_allclose(first.grad.numpy(), np.broadcast_to(w.numpy(), first.shape))
        np.testing.assert_allclose(second.grad.numpy(), np.ones(second.shape))


def test_hooks_stay_with_the_version_they_were_registered_on():
    calls = []

    def hook(tag, factor):
        def fn(g):
            calls.append((tag, g.tolist()))
            return g * factor
        return fn

    a = ft.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(hook("before", 2))
    b.mul_(2)
    b.register_hook(hook("after", 2))
    b.sum().backward()
    # the new version's hook first (gradient of the final b), then the old one (x2 from mul, x2 from it)
    assert calls == [("after", [1.0]), ("before", [4.0])]
    assert a.grad.tolist() == [8.0]


def test_hooks_on_multiple_outputs_over_inplace():
    b = ft.rand(3, 3, requires_grad=True)
    o1, o2 = ft.var_mean(b, dim=0)
    counts = {"o1": 0, "o2": 0, "new": 0}

    def count(tag, want):
        def fn(g):
            counts[tag] += 1
            np.testing.assert_allclose(g.numpy(), want)
        return fn

    o1.register_hook(count("o1", 2.0))
    o2.register_hook(count("o2", 3.0))
    o1.mul_(2)
    o1.register_hook(count("new", 1.0))
    (o1 + o2 * 3).sum().backward()
    assert counts == {"o1": 1, "o2": 1, "new": 1}


def test_hooks_on_views_over_inplace():
    calls = []
    base = ft.tensor([1.0], requires_grad=True).clone()
    view, view2 = base[:], base[:]
    view.register_hook(lambda g: calls.append("view_before"))
    view2.register_hook(lambda g: calls.append("view2_before"))
    view.mul_(2)
    view2.grad_fn  # the refresh gives view2 a new node; its old hook stays on the old one
    view2.register_hook(lambda g: calls.append(("view2_after", g.tolist())))
    (view + view2).sum().backward()
    assert calls == [("view2_after", [1.0])]


def test_hook_on_a_view_sees_only_uses_of_its_old_value():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    v = y[:1]
    early = v * 10
    seen = []
    v.register_hook(lambda g: seen.append(g.tolist()))
    v.mul_(3)
    (y.sum() + early.sum()).backward()
    assert seen == [[10.0]]  # not the in-place op's own gradient (PyTorch's CopySlices bypasses it)
    assert x.grad.tolist() == [13.0, 1.0]


def test_hook_on_a_view_whose_view_is_changed_in_place():
    x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x.clone()
    v = base.view(-1)
    seen = []
    v.register_hook(lambda g: seen.append(g.tolist()))
    v.unsqueeze(0).copy_(ft.ones(1, 3))  # through a view of v: v's old node is bypassed too
    (base * 1 + v * 2).sum().backward()  # v refreshed from base: a new node
    assert seen == [] and x.grad.tolist() == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- 4. views that refuse in-place


_NO_GRAD_FIX = "You can clarify your code by moving both the view and the inplace either both inside the no_grad block"
_FN_FIX = "This view was created inside a custom Function (or because an input was returned as-is)"
_MULTI_FIX = "This view is the output of a function that returns multiple views. Such functions do not allow"


def _message(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_no_grad_views_refuse_inplace_with_grad_mode():
    a = ft.tensor([1.0, 2.0, 3.0], requires_grad=True).clone()
    with ft.no_grad():
        v = a[:2]
    assert v.requires_grad and v.grad_fn is None  # reported as PyTorch does; nothing recorded (docs/tensor.md)
    msg = _message(lambda: v.mul_(2))
    assert msg.startswith("A view was created in no_grad mode and is being modified inplace with grad mode "
                          "enabled. Given that this use case is ambiguous and error-prone, it is forbidden.")
    assert _NO_GRAD_FIX in msg
    assert "no_grad mode" in _message(lambda: v.copy_(ft.ones(2)))
    with ft.no_grad():
        v.mul_(2)  # both inside no_grad: allowed, not tracked
    assert a.tolist()[:2] == [2.0, 4.0] and _name(a) == "CloneBackward0"
    msg = _message(lambda: v * 2)  # its base changed: using it with grad mode on
    assert msg.startswith("A view was created in no_grad mode and its base or another view of its base has been "
                          "modified inplace with grad mode enabled.")
    with ft.no_grad():
        assert (v * 2).tolist() == [4.0, 8.0]  # without grad mode it is usable


def test_no_grad_view_of_plain_tensor_refuses_operand_that_requires_grad():
    a = ft.tensor([1.0, 2.0, 3.0])
    with ft.no_grad():
        v = a[:2]
    v.mul_(2)  # nothing requires grad: allowed
    assert "no_grad mode and is being modified inplace" in _message(lambda: v.mul_(ft.ones(2, requires_grad=True)))
    leaf = ft.tensor([1.0, 2.0], requires_grad=True)
    with ft.no_grad():
        lv = leaf[:1]
    assert "no_grad mode" in _message(lambda: lv.zero_())  # before the view-of-leaf error, as in PyTorch


def test_view_of_no_grad_view_inherits_its_kind():
    a = ft.tensor([1.0, 2.0, 3.0], requires_grad=True).clone()
    with ft.no_grad():
        v = a[:2]
    w = v[:1]  # made with grad mode on, of a no-grad view
    assert "no_grad mode and is being modified inplace" in _message(lambda: w.mul_(2))


def test_inference_mode_views_refuse_inplace_in_normal_mode():
    a = ft.tensor([1.0, 2.0, 3.0], requires_grad=True).clone()
    with ft.inference_mode():
        v = a[:2]
    assert not v.is_inference()
    msg = _message(lambda: v.mul_(2))
    assert msg.startswith("A view was created in inference mode and is being modified inplace in normal mode.")
    assert "both inside the inference_mode block" in msg
    a.mul_(2)
    assert "inference mode and its base or another view of its base has been modified inplace in normal mode" \
        in _message(lambda: v.grad_fn)


class _Alias(ft.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x[:]

    @staticmethod
    def backward(ctx, g):
        return g


class _Ident(ft.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_views_refuse_inplace():
    x = ft.tensor([1.0, 2.0], requires_grad=True).clone()
    for fn in (_Alias, _Ident):
        o = fn.apply(x)
        assert o._base is x
        msg = _message(lambda: o.mul_(2))
        name = fn.__name__
        assert msg.startswith(f"Output 0 of {name} is a view and is being modified inplace.") and _FN_FIX in msg
        assert "Output 0 of Slice is a view and is being modified inplace." in _message(lambda: o[:1].mul_(2))
    o = _Alias.apply(x)
    x.mul_(2)
    msg = _message(lambda: o.grad_fn)
    assert msg.startswith("Output 0 of _Alias is a view and its base or another view of its base has been modified "
                          "inplace.") and _FN_FIX in msg
    o = _Alias.apply(x.detach())
    o.mul_(3)  # nothing requires grad: allowed


def test_custom_function_views_of_inputs_that_need_no_grad():
    a = ft.rand(1, 2)
    b = ft.rand(1, requires_grad=True)
    view_a = _Alias.apply(a)
    msg = _message(lambda: view_a.add_(b))
    assert msg.startswith("A view was created in no_grad mode and is being modified inplace with grad mode enabled.")
    assert _FN_FIX in msg
    assert _FN_FIX in _message(lambda: _Alias.apply(ft.rand(1, 2)).copy_(b))
    inp = ft.rand(2, requires_grad=True)
    with ft.no_grad():
        made = _Alias.apply(inp)
    assert not made.requires_grad
    assert "A view was created in no_grad mode" in _message(lambda: made.zero_())


@pytest.mark.parametrize("op,node,label", [
    (lambda t: t.split(1), "SplitBackward0", "Split"),
    (lambda t: t.split([1, 2]), "SplitWithSizesBackward0", "SplitWithSizes"),
    (lambda t: t.chunk(3), "SplitBackward0", "Split"),
    (lambda t: t.unbind(), "UnbindBackward0", "Unbind"),
    (lambda t: ft.unbind(t), "UnbindBackward0", "Unbind"),
])
def test_multi_output_views_refuse_inplace(op, node, label):
    b = ft.rand(3, 2, requires_grad=True) * 2
    pieces = op(b)
    assert _name(pieces[1]) == node and pieces[1]._base is b
    msg = _message(lambda: pieces[1].mul_(2))
    assert msg.startswith(f"Output 1 of {label} is a view and is being modified inplace.") and _MULTI_FIX in msg
    assert "Output 0 of View is a view" in _message(lambda: pieces[0].view_as(pieces[0]).mul_(2))
    assert (pieces[0] * 2).requires_grad  # used out of place: fine
    b.mul_(3)
    msg = _message(lambda: pieces[0] * 2)
    assert msg.startswith(f"Output 0 of {label} is a view and its base or another view of its base has been "
                          "modified inplace.") and _MULTI_FIX in msg


def test_stale_multi_output_view_errors_name_the_right_change():
    b = ft.rand(3, 2, requires_grad=True) * 2
    pieces = b.unbind()
    b.mul_(3)
    for change in (lambda p: p.mul_(2), lambda p: p.copy_(ft.ones(2)), lambda p: p.zero_(), lambda p: p.fill_(1.0),
                   lambda p: p.__setitem__(..., 1.0), lambda p: p.__setitem__(ft.tensor([True, False]), 1.0)):
        assert _message(lambda: change(pieces[1])).startswith("Output 1 of Unbind is a view and is being modified")
    # p[0] = v first takes a view of p (reading its history): the earlier change is named
    assert _message(lambda: pieces[1].__setitem__(0, 1.0)).startswith(
        "Output 1 of Unbind is a view and its base or another view of its base has been modified")
    msg = _message(lambda: _Double.apply(pieces[1]))  # a Function reads its inputs' history first
    assert msg.startswith("Output 1 of Unbind is a view and its base or another view of its base has been modified")


def test_multi_output_views_without_autograd_and_unsafe_split():
    a = ft.tensor([[1.0, 2.0]])
    a.unbind()[0].mul_(2)  # nothing requires grad: allowed
    assert a.tolist() == [[2.0, 4.0]]
    msg = _message(lambda: a.unbind()[0].copy_(ft.tensor([3.0, 4.0], requires_grad=True)))
    assert msg.startswith("A view was created in no_grad mode and is being modified inplace") and _MULTI_FIX in msg
    for f in (lambda t: t.unsafe_split(1), lambda t: t.unsafe_chunk(3), lambda t: t.unsafe_split_with_sizes([1, 1, 1])):
        x = ft.tensor([[0.5, -1.0], [1.5, 0.25], [0.1, 0.2]], requires_grad=True)
        s1, s2, _ = f(x + x)
        s1.mul_(s2)
        s1.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [[6.0, 1.0], [2.0, -4.0], [0.0, 0.0]])


def test_relu_module_inplace_after_a_norm_differentiates_twice():
    """PyTorch's nn.ReLU(True) after InstanceNorm: the in-place ReLU overwrites the norm's
    output, which the norm's backward does not need (double backward works)."""
    x = ft.tensor([[[[1.0, 2.0], [0.5, -1.0]], [[3.0, -2.0], [0.25, 1.0]]]], dtype=ft.float64, requires_grad=True)
    net = ft.nn.Sequential(ft.nn.InstanceNorm2d(2), ft.nn.ReLU(True))
    assert repr(net[1]) == "ReLU(inplace=True)"
    y = net[0](x)
    assert net[1](y) is y
    assert ft.autograd.gradgradcheck(lambda t: net(t).pow(2), (x,))


def test_setitem_ellipsis_writes_the_tensor_itself():
    b = ft.rand(3, 2, requires_grad=True) * 2
    piece = b.unbind()[1]
    msg = _message(lambda: piece.__setitem__(..., 1.0))  # no new view in between: the piece is named
    assert msg.startswith("Output 1 of Unbind is a view and is being modified inplace.")
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y[...] = x * 3
    assert _name(y) == "CopyBackwards"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_retain_grad_twice_on_a_stale_multi_output_view_is_a_no_op():
    b = ft.rand(3, 2, requires_grad=True) * 2
    piece = b.unbind()[0]
    piece.retain_grad()
    b.mul_(2)
    piece.retain_grad()  # already retained: nothing to refresh (PyTorch returns early too)


@pytest.mark.parametrize("args,error,words", [
    ((0, 2, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    ((0, -1, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    ((0, 4, 0), IndexError, "start out of range (expected to be in range of [-3, 3], but got 4)"),
    ((0, 0, -1), RuntimeError, "narrow(): length must be non-negative."),
])
def test_narrow_checks_its_bounds(args, error, words):
    with pytest.raises(error) as info:
        ft.zeros(3, 2).narrow(*args)
    assert words in str(info.value)
    assert ft.zeros(3, 2).narrow(0, 3, 0).shape == (0, 2)


def test_split_chunk_unbind_edge_shapes():
    assert [tuple(p.shape) for p in ft.zeros(0, 3).split(1)] == [(0, 3)]
    assert [tuple(p.shape) for p in ft.zeros(0, 3).chunk(2)] == [(0, 3), (0, 3)]
    with pytest.raises(RuntimeError, match="split expects at least a 1-dimensional tensor"):
        ft.zeros(()).split(1)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ft.zeros(()).unbind()
    b = ft.rand(2, 3, requires_grad=True) * 1
    inner = b.unbind()[1].unbind()  # pieces of a piece: each names its own position
    assert _message(lambda: inner[2].mul_(2)).startswith("Output 2 of Unbind is a view")
