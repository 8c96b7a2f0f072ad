"""``ft.func`` on the eager constructs that stop or replace gradients: ``detach()``, ``.data``,
``no_grad`` / ``enable_grad`` inside the transformed function, in-place writes (through views too)
and custom ``autograd.Function``s, under grad, vjp, jvp, jacrev, jacfwd, hessian, vmap and nesting.

The same scripts run through ``funcgrad.tensor`` and through ``torch``; PyTorch's results (torch.func)
are recorded in tests/fixtures/torch_func_semantics.json (regenerate with
``PYTHONPATH=. python tests/fixtures/make_torch_func_semantics.py`` when torch is installed), so the
tests run without torch, and also live when torch is there. Errors are compared by type (the messages
name ``ft.func``); their key words are tested below. Where ft.func deliberately differs from
torch.func (it computes where torch.func refuses), the test states the value and why.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as np
import pytest

import funcgrad.tensor as ft
from recorded_compare import as_json, close

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "torch_func_semantics.json"
SCRIPTS = {}
X = [1.0, 2.0]
XB = [[1.0, 2.0], [-0.5, 3.0], [2.0, 0.25]]


def script(fn):
    SCRIPTS[fn.__name__] = fn
    return fn


def _np(t):
    if isinstance(t, (tuple, list)):
        return [_np(v) for v in t]
    return np.array(t.detach().numpy(), copy=True)


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to compare errors
        return type(e).__name__
    return None


def _x(T, v=X):
    return T.tensor(v, dtype=T.float64)


def _all(T, f, x=None):
    """f under every transform: grad, jacrev, jacfwd, hessian, vjp, jvp, vmap(grad), grad of grad."""
    F = T.func
    x = _x(T) if x is None else x
    ones = T.ones_like(x)
    return {
        "grad": _np(F.grad(f)(x)),
        "jacrev": _np(F.jacrev(f)(x)),
        "jacfwd": _np(F.jacfwd(f)(x)),
        "hessian": _np(F.hessian(f)(x)),
        "vjp": _np(F.vjp(f, x)[1](T.ones((), dtype=T.float64))),
        "jvp": _np(F.jvp(f, (x,), (ones,))),
        "vmap_grad": _np(F.vmap(F.grad(f))(_x(T, XB))),
        "grad_grad": _np(F.grad(lambda t: F.grad(f)(t).sum())(x)),
        "jacrev_jacfwd": _np(F.jacrev(F.jacfwd(f))(x)),
    }


# ---------------------------------------------------------------- detach / .data


@script
def detach(T):
    return _all(T, lambda t: (t.detach() * t.sin()).sum())


@script
def detach_in_vmap(T):
    F = T.func
    f = F.vmap(lambda t: t.detach() * t * t)
    return {"grad": _np(F.grad(lambda x: f(x).sum())(_x(T))), "jacfwd": _np(F.jacfwd(f)(_x(T))),
            "jacrev": _np(F.jacrev(f)(_x(T)))}


@script
def data(T):
    return _all(T, lambda t: (t.data ** 2 * t).sum())


@script
def detach_nested(T):
    F = T.func
    x = _x(T)

    def inner_detach(x):  # the inner transform's value detached: constant for both
        return F.grad(lambda y: (y.detach() * y * x).sum())(x).sum()

    def outer_detach(x):  # the outer transform's value detached inside the inner function
        return F.grad(lambda y: (x.detach() * y * x).sum())(x).sum()

    return {"inner": _np(F.grad(inner_detach)(x)), "outer": _np(F.grad(outer_detach)(x))}


@script
def detached_aliases(T):
    """detach()/.data share the tensor's memory: each sees the other's later in-place writes."""
    F = T.func
    x = _x(T)

    def follows(t):
        y = t * t
        d = y.detach()
        y.mul_(2)
        return (d * t).sum()

    def follows_view(t):
        y = t * t
        d = y[1:].detach()
        y[1] = t[0] * 7
        return (d * t[1:]).sum() + y.sum()

    def writes_back_through_view(t):
        y = t * t
        dv = y.detach()[0:1]
        dv.add_(5)
        return (y * t).sum()

    def detached_view(t):
        y = t.clone()
        y[:1].detach().mul_(3)
        return (y * t).sum()

    def data_follows(t):
        y = t * t
        dd = y.data
        y.add_(t)
        return (dd * t).sum() + (y * t).sum()

    out = {}
    for name, f in [("follows", follows), ("follows_view", follows_view),
                    ("writes_back_through_view", writes_back_through_view), ("detached_view", detached_view),
                    ("data_follows", data_follows)]:
        out[name] = {"grad": _np(F.grad(f)(x)), "jvp": _np(F.jvp(f, (x,), (T.ones_like(x),))[1]),
                     "hessian": _np(F.hessian(f)(x))}
    return out


# ---------------------------------------------------------------- no_grad / enable_grad


def _no_grad_f(T):
    def f(t):
        with T.no_grad():
            y = t * t * t
        return (y * t.sin()).sum()

    return f


@script
def no_grad(T):
    return _all(T, _no_grad_f(T))


@script
def no_grad_variants(T):
    F = T.func
    x = _x(T)

    def enable_inside(t):
        with T.no_grad():
            with T.enable_grad():
                y = t * t
        return (y * t).sum()

    def set_disabled(t):
        with T.set_grad_enabled(False):
            y = t.exp()
        return (y * t).sum()

    def around_inner_grad(x):  # the inner grad ignores the no_grad; its result is a constant for the outer
        with T.no_grad():
            g = F.grad(lambda y: (y * y * x).sum())(x)
        return (g * x).sum()

    def around_inner_vmap(x):
        with T.no_grad():
            y = F.vmap(lambda r: r * x)(x.reshape(2, 1).expand(2, 2) * 1.0)
        return (y.sum(0) * x).sum()

    with T.no_grad():  # a no_grad outside the transform is ignored
        outer = _np(F.grad(_no_grad_f(T))(x))
        outer_plain = _np(F.grad(lambda t: (t * t).sum())(x))
    return {"enable_inside": _np(F.grad(enable_inside)(x)), "set_disabled": _np(F.grad(set_disabled)(x)),
            "around_inner_grad": _np(F.grad(around_inner_grad)(x)),
            "around_inner_vmap": _np(F.grad(around_inner_vmap)(x)),
            "outer": outer, "outer_plain": outer_plain}


@script
def inplace_in_no_grad(T):
    """An in-place write in a no_grad block changes the value, not the reverse-mode derivative."""

    def mul_(t):
        y = t * t
        with T.no_grad():
            y.mul_(3)
        return (y * t).sum()

    def setitem(t):
        y = t * t
        with T.no_grad():
            y[0] = t[1] * 10
        return (y * t.exp()).sum()

    return {"mul_": _all(T, mul_), "setitem": _all(T, setitem)}


# ---------------------------------------------------------------- in-place


def _setitem(t):
    y = t.clone()
    y[0] = t[1]
    return (y * t).sum()


def _chain(t):
    y = t.clone()
    y[1:] += t[:1] * 3
    y.mul_(t)
    z = y.view(2, 1)
    z.add_(1)
    return (y ** 2).sum()


@script
def inplace_setitem(T):
    return _all(T, _setitem)


@script
def inplace_chain(T):
    return _all(T, _chain)


@script
def inplace_views(T):
    F = T.func
    x = _x(T)

    def base_then_view(t):  # a view sees a later write to its base
        y = t.clone()
        v = y[0:1]
        y.mul_(3)
        return (v * t[0]).sum()

    def through_view(t):  # a write through a view reaches its base
        y = t.clone()
        v = y.view(2, 1)
        v[1, 0] = t[0] ** 2
        return (y * y).sum()

    def matrix(t):
        m = (t.reshape(2, 1) * t.reshape(1, 2)).clone()
        m.t()[0] = t * 5  # writes column 0
        m.diagonal().mul_(t)
        m[:, 1].copy_(t.exp())
        row = m[0]
        m[1].zero_()
        return (m * m).sum() + (row * t).sum()

    def fresh_buffer(t):  # a tensor created inside the function may receive traced values
        y = T.zeros(3, dtype=T.float64)
        w = y[:2]  # a view made before the writes sees them
        y[0] = t[1] * t[0]
        y[1:].fill_(2.0)
        y[2] += t.sum()
        return (y * y).sum() + (w * t).sum()

    def advanced(t):
        y = T.zeros(4, dtype=T.float64)
        y[T.tensor([0, 2])] = t * t
        y[y > 3] = t[0]
        return (y * T.arange(4, dtype=T.float64)).sum()

    def detached_write(t):  # a write through .data / detach(): value changes, not the derivative
        y = t.clone()
        y.data.mul_(2)
        z = t.clone()
        z.detach().add_(1)
        return (y * t + z * z).sum()

    out = {}
    for name, f in [("base_then_view", base_then_view), ("through_view", through_view), ("matrix", matrix),
                    ("fresh_buffer", fresh_buffer), ("advanced", advanced), ("detached_write", detached_write)]:
        out[name] = {"grad": _np(F.grad(f)(x)), "jvp": _np(F.jvp(f, (x,), (T.ones_like(x),)))}
        if name not in ("fresh_buffer", "advanced"):  # (torch.func's vmap refuses batched writes into them)
            out[name]["hessian"] = _np(F.hessian(f)(x))
            out[name]["vmap_grad"] = _np(F.vmap(F.grad(f))(_x(T, XB)))
    out["jacrev_mul_"] = _np(F.jacrev(lambda t: t.clone().mul_(t))(x))
    FN = T.nn.functional
    out["inplace_modules"] = {
        "relu_module": _np(F.grad(lambda t: (T.nn.ReLU(inplace=True)(t * 2) * t).sum())(_x(T))),
        "leaky_vmap_grad": _np(F.vmap(F.grad(lambda t: (FN.leaky_relu(t * 2, 0.1, True) * t).sum()))(_x(T, XB))),
        "elu_hessian": _np(F.hessian(lambda t: (FN.elu(t * 2, inplace=True) * t).sum())(_x(T))),
    }
    relu_ = T.nn.functional.relu_  # the in-place activations run no_grad internally for eager tensors
    xr = T.tensor([1.0, -2.0, 3.0], dtype=T.float64)
    out["relu_"] = {"grad": _np(F.grad(lambda t: relu_(t * 2).sum())(xr)),
                    "vmap": _np(F.vmap(lambda t: T.nn.functional.leaky_relu_(t * 2))(T.stack([xr, -xr])))}
    return out


@script
def inplace_ops(T):
    F = T.func
    x = T.tensor([1.0, 2.0, -0.5], dtype=T.float64)
    cases = {
        "masked_fill_": lambda t: (t.clone().masked_fill_(t > 1.5, 0.0) * t).sum(),
        "clamp_": lambda t: (t.clone().clamp_(min=0.0) * t).sum(),
        "addcmul_": lambda t: (t.clone().addcmul_(t, t, value=2.0) * t).sum(),
        "add_alpha": lambda t: (t.clone().add_(t * t, alpha=0.5) * t).sum(),
        "unsqueeze": lambda t: (lambda y: (y.unsqueeze(0)[0, 1].mul_(t[0]), y)[1])(t.clone()).pow(2).sum(),
        "transpose": lambda t: (lambda m: (m.t()[1].add_(t), m)[1])(
            t.reshape(3, 1).expand(3, 3).clone()).pow(2).sum(),
        "narrow": lambda t: (lambda y: (y.narrow(0, 1, 2).copy_(t[:2] * 5), y)[1])(t.clone()).pow(2).sum(),
        "flatten": lambda t: (lambda m: (m.flatten()[0].mul_(t[1]), m)[1])(t.reshape(3, 1).clone()).pow(2).sum(),
        "select": lambda t: (lambda m: (m.select(0, 2).fill_(7.0), m)[1])(t.clone()).pow(2).sum() + t.sum(),
        "iadd_view": lambda t: (lambda y: (y[1:].__iadd__(t[:2]), y)[1])(t.clone()).pow(2).sum(),
    }
    return {k: {"grad": _np(F.grad(f)(x)), "jvp": _np(F.jvp(f, (x,), (T.ones_like(x),))[1]),
                "hessian": _np(F.hessian(f)(x))} for k, f in cases.items()}


# ---------------------------------------------------------------- custom autograd.Function


def _functions(T):
    class Sq(T.autograd.Function):  # backward deliberately not the derivative of forward
        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 100 * a

    class SqJ(Sq):
        generate_vmap_rule = True

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def jvp(ctx, t):
            (a,) = ctx.saved_tensors
            return t * 7 * a

    class Multi(T.autograd.Function):
        @staticmethod
        def forward(a, k):
            return a * k, a + 1, a.argmax()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]
            ctx.mark_non_differentiable(output[2])

        @staticmethod
        def backward(ctx, g1, g2, g3):
            return g1 * ctx.k * 10 + g2, None

    class SavesOutput(T.autograd.Function):
        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output)

        @staticmethod
        def backward(ctx, g):
            a, out = ctx.saved_tensors
            return g * out

    class OwnVmap(Sq):
        @staticmethod
        def vmap(info, in_dims, a):
            return Sq.apply(a) * info.batch_size, in_dims[0]

    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(a):
            a.mul_(2)
            return a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class Old(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g * 100

    return Sq, SqJ, Multi, SavesOutput, OwnVmap, Dirty, Old


@script
def function(T):
    F = T.func
    Sq, SqJ, Multi, SavesOutput, OwnVmap, Dirty, Old = _functions(T)
    x = _x(T)
    xb = _x(T, XB)
    ones = T.ones_like(x)
    return {
        "grad": _np(F.grad(lambda t: Sq.apply(t).sum())(x)),
        "jacrev": _np(F.jacrev(Sq.apply)(x)),
        "vjp": _np(F.vjp(Sq.apply, x)[1](ones)),
        "grad_grad": _np(F.grad(lambda t: F.grad(lambda u: Sq.apply(u).sum())(t).sum())(x)),
        "in_expression": _np(F.grad(lambda t: (Sq.apply(t.sin()) * t).sum())(x)),
        "jvp": _np(F.jvp(SqJ.apply, (x,), (ones,))),
        "vmap": _np(F.vmap(SqJ.apply)(xb)),
        "vmap_grad": _np(F.vmap(F.grad(lambda t: SqJ.apply(t).sum()))(xb)),
        "grad_vmap": _np(F.grad(lambda t: F.vmap(SqJ.apply)(t.reshape(2, 1)).sum())(x)),
        "multi": _np(F.grad(lambda t: sum(o.sum() for o in Multi.apply(t, 3.0)[:2]))(x)),
        "multi_first": _np(F.grad(lambda t: Multi.apply(t, 3.0)[0].sum())(x)),
        "saves_output": _np(F.grad(lambda t: SavesOutput.apply(t).sum())(x)),
        "saves_output_grad_grad": _np(F.grad(lambda t: F.grad(lambda u: SavesOutput.apply(u).sum())(t).sum())(x)),
        "own_vmap": _np(F.vmap(OwnVmap.apply)(xb)),
        "dirty": _np(F.grad(lambda t: (Dirty.apply(t.clone()) * t).sum())(x)),
        "errors": {
            "old_style_grad": _err(lambda: F.grad(lambda t: Old.apply(t).sum())(x)),
            "old_style_vmap": _err(lambda: F.vmap(Old.apply)(xb)),
            "no_vmap_rule": _err(lambda: F.vmap(Sq.apply)(xb)),
            "no_jvp": _err(lambda: F.jvp(Sq.apply, (x,), (ones,))),
        },
    }


@script
def function_arguments(T):
    """Non-tensor arguments, a constant tensor, argnums, vmap with in_dims None, an input returned."""
    F = T.func
    x = _x(T)
    c = T.tensor([3.0, -1.0], dtype=T.float64)

    class Mul(T.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a, b, k):
            return a * b * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            a, b, k = inputs
            ctx.save_for_backward(a, b)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b * ctx.k * 2, g * a * ctx.k, None

    class Ident(T.autograd.Function):
        @staticmethod
        def forward(a):
            return a

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 4

    xb = T.stack([x, 2 * x])
    return {
        "const": _np(F.grad(lambda t: Mul.apply(t, c, 2.0).sum())(x)),
        "both": _np(F.grad(lambda t: Mul.apply(t, t * 2, 2.0).sum())(x)),
        "argnums1": _np(F.grad(lambda a, b: Mul.apply(a, b, 2.0).sum(), argnums=1)(x, c)),
        "vmap_none": _np(F.vmap(lambda t, d: Mul.apply(t, d, 1.0), in_dims=(0, None))(xb, c)),
        "vmap_grad_none": _np(F.vmap(F.grad(lambda t, d: Mul.apply(t, d, 1.0).sum()), in_dims=(0, None))(xb, c)),
        "ident": _np(F.grad(lambda t: (Ident.apply(t) * t).sum())(x)),
        "ident_twice": _np(F.grad(lambda t: F.grad(lambda u: (Ident.apply(u) * u).sum())(t).sum())(x)),
        "jacrev": _np(F.jacrev(lambda t: Mul.apply(t, c, 1.0))(x)),
    }


@script
def errors(T):
    F = T.func
    x = _x(T)
    buf = T.zeros(2, dtype=T.float64)

    def requires_grad(t):
        y = t * 1
        y.requires_grad_()
        return y.sum()

    def backward(t):
        y = (t * t).sum()
        y.backward()
        return y

    def captured(t):
        buf[0] = t[1]
        return buf.sum()

    def data_set(t):
        y = t.clone()
        y.data = t * 5
        return y.sum()

    def out_arg(t):
        c = T.zeros(2, dtype=T.float64)
        T.mul(t, t, out=c)
        return c.sum()

    return {"requires_grad_": _err(lambda: F.grad(requires_grad)(x)), "backward": _err(lambda: F.grad(backward)(x)),
            "out_arg": _err(lambda: F.grad(out_arg)(x)),
            "data_under_vmap": _err(lambda: F.vmap(lambda t: t.data * t)(_x(T, XB))),
            "retain_grad": _err(lambda: F.grad(lambda t: (t * 2).retain_grad() or t.sum())(x)),
            "captured": _err(lambda: F.grad(captured)(x)), "captured_untouched": _np(buf),
            "data_set": _err(lambda: F.grad(data_set)(x)),
            "grad_attr_is_none": F.grad(lambda t: (t * t).sum() * (1.0 if t.grad is None else 0.0))(x).tolist()}


# ---------------------------------------------------------------- comparison


def run(T, name):
    return SCRIPTS[name](T)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_matches_recorded_torch(name):
    ref = json.loads(FIXTURE.read_text())["results"][name]
    close(as_json(run(ft, name)), ref, name)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="live comparison needs torch")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_matches_live_torch(name):
    import torch

    close(as_json(run(ft, name)), as_json(run(torch, name)), name)


# ---------------------------------------------------------------- ours only: messages, deliberate differences


def test_error_messages_name_the_way_out():
    Sq, SqJ, Multi, SavesOutput, OwnVmap, Dirty, Old = _functions(ft)
    x = _x(ft)
    with pytest.raises(RuntimeError, match="setup_context"):
        ft.func.grad(lambda t: Old.apply(t).sum())(x)
    with pytest.raises(RuntimeError, match="vmap staticmethod or set generate_vmap_rule=True"):
        ft.func.vmap(Sq.apply)(_x(ft, XB))
    with pytest.raises(NotImplementedError, match="jvp"):
        ft.func.jvp(Sq.apply, (x,), (x,))
    with pytest.raises(RuntimeError, match="requires_grad_.*ft.func"):
        ft.func.grad(lambda t: (t * 1).requires_grad_().sum())(x)
    with pytest.raises(RuntimeError, match="backward.*ft.func.grad or ft.func.vjp"):
        ft.func.grad(lambda t: (t * t).sum().backward())(x)
    with pytest.raises(RuntimeError, match=r"mutating directly with `\.data`"):
        ft.func.grad(lambda t: setattr(t.clone(), "data", t) or t.sum())(x)
    buf = ft.zeros(2, dtype=ft.float64)
    with pytest.raises(RuntimeError, match="captured Tensor.*accept the mutated"):
        ft.func.vmap(lambda t: buf.copy_(t).sum())(_x(ft, XB))
    assert not buf.any()  # the captured tensor keeps no traced value
    with pytest.raises(RuntimeError, match="more than one element"):
        ft.func.grad(lambda t: t.clone().expand(3, 2).add_(1).sum())(x)


def test_differences_from_torch_func():
    """ft.func computes where torch.func refuses; the values are the derivatives of what ran."""
    Sq, SqJ, Multi, SavesOutput, OwnVmap, Dirty, Old = _functions(ft)
    x = _x(ft)
    xv = np.array(X)
    # in-place on an input under grad (torch.func: 'a leaf Variable that requires grad ...'): a functional
    # update of the function's own tensor; the caller's tensor is not changed (also under vmap)
    g = ft.func.grad(lambda t: (t.add_(1) ** 2).sum())(x)
    np.testing.assert_allclose(g.numpy(), 2 * (xv + 1))
    np.testing.assert_allclose(x.numpy(), xv)
    ft.func.vmap(lambda t: t.mul_(2))(x)
    np.testing.assert_allclose(x.numpy(), xv)
    # a batched value written into an unbatched tensor made inside vmap (torch.func refuses)
    out = ft.func.vmap(lambda t: (lambda y: (y.__setitem__(0, t[1]), y)[1])(ft.zeros(2, dtype=ft.float64)))(
        _x(ft, XB))
    np.testing.assert_allclose(out.numpy(), [[2.0, 0.0], [3.0, 0.0], [0.25, 0.0]])
    # a Function with jvp but no vmap rule under jacfwd / hessian (torch.func: 'does not have vmap support'):
    # jacfwd runs the Function's jvp on batched tangents; hessian differentiates its backward forward-mode
    class J(ft.autograd.Function):
        forward, setup_context, backward, jvp = Sq.forward, SqJ.setup_context, Sq.backward, SqJ.jvp

    np.testing.assert_allclose(ft.func.jacfwd(J.apply)(x).numpy(), np.diag(7 * xv))
    np.testing.assert_allclose(ft.func.hessian(lambda t: J.apply(t).sum())(x).numpy(), 100 * np.eye(2))

    # a once_differentiable backward under nested transforms: torch.func returns zeros; ft.func raises
    class Once(ft.autograd.Function):
        forward, setup_context = Sq.forward, Sq.setup_context

        @staticmethod
        @ft.autograd.function.once_differentiable
        def backward(ctx, g):
            return g * 2 * ctx.saved_tensors[0]

    np.testing.assert_allclose(ft.func.grad(lambda t: Once.apply(t).sum())(x).numpy(), 2 * xv)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        ft.func.grad(lambda t: ft.func.grad(lambda u: Once.apply(u).sum())(t).sum())(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtypes_kept(dtype):
    d = getattr(ft, dtype)
    x = ft.tensor(X, dtype=d)
    for f in (lambda t: (t.detach() * t).sum(), _no_grad_f(ft), _setitem, _chain):
        assert ft.func.grad(f)(x).dtype == d
    Sq = _functions(ft)[0]
    assert ft.func.grad(lambda t: Sq.apply(t).sum())(x).dtype == d


def test_views_and_buffers_inside_do_not_leak():
    x = _x(ft)

    def f(t):
        y = t.clone()
        v = y[1:]
        v.mul_(t[0])
        return y, v

    y, v = ft.func.vmap(f)(_x(ft, XB))
    np.testing.assert_allclose(y.numpy(), [[1.0, 2.0], [-0.5, -1.5], [2.0, 0.5]])
    np.testing.assert_allclose(v.numpy(), [[2.0], [-1.5], [0.5]])
    assert not isinstance(y._value, ft.Tensor)
    # eager tensors inside a transformed function keep their eager semantics
    def eager_inside(t):
        w = ft.ones(2, dtype=ft.float64)
        w[0] = 5.0
        w.mul_(2)
        return (w * t).sum()

    np.testing.assert_allclose(ft.func.grad(eager_inside)(x).numpy(), [10.0, 2.0])


class _Exp(ft.autograd.Function):
    """exp with its true derivative in backward and jvp: the primitive's rules check numerically."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a):
        return a.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_function_primitive_rules_check_numerically(dtype):
    import funcgrad as fg
    from funcgrad.tensor.func import _to_raw, _to_tensor

    def f(a):  # arrays in, arrays out: the custom Function inside, on traced tensors
        (t,) = _to_tensor((a,))
        return _to_raw(_Exp.apply(t * 0.5) * t)

    x = np.array([0.3, -0.7, 1.1], dtype=dtype)
    fg.testing.check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    xb = np.array([[0.3, -0.7, 1.1], [1.0, 0.2, -0.4]], dtype=dtype)
    got = ft.func.vmap(lambda t: _Exp.apply(t * 0.5) * t)(ft.tensor(xb))
    want = np.stack([np.exp(r * 0.5) * r for r in xb])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.dtype == ft.tensor(xb).dtype
    g = ft.func.vmap(ft.func.grad(lambda t: (_Exp.apply(t) * t).sum()))(ft.tensor(xb))
    np.testing.assert_allclose(g.numpy(), np.exp(xb) * (1 + xb), rtol=1e-5)


def test_no_grad_stop_rules():
    """The no_grad stop: zero VJP, identity JVP, batching kept; checked on arrays."""
    import funcgrad as fg
    from funcgrad.tensor._func_support import stop_reverse

    x = np.array([0.5, 2.0])
    f = lambda a: stop_reverse(a * a) * a  # noqa: E731
    np.testing.assert_allclose(fg.grad(lambda a: f(a).sum())(x), x * x)
    np.testing.assert_allclose(fg.jvp(f, (x,), (np.ones(2),))[1], 3 * x * x)
    np.testing.assert_allclose(fg.vmap(f)(np.stack([x, 2 * x])), np.stack([x ** 3, 8 * x ** 3]))
    np.testing.assert_allclose(fg.grad(lambda a: fg.vmap(f)(a[None]).sum())(x), x * x)


def test_nested_transform_writing_outer_tensor_is_captured():
    x = _x(ft)

    def outer(t):
        acc = t * 1.0  # made by the outer function: captured by the inner one

        def inner(u):
            acc.add_(u)
            return u.sum()

        ft.func.grad(inner)(t)
        return acc.sum()

    with pytest.raises(RuntimeError, match="captured Tensor"):
        ft.func.grad(outer)(x)


def test_a_tensor_of_the_call_in_a_reference_cycle_is_not_captured():
    """A tensor made inside the transformed function and written with a traced value is the call's own,
    even when only the garbage collector can free it (a reference cycle): no "captured Tensor" error."""
    import gc

    def f(x):
        buf = ft.zeros(3, dtype=ft.float64)
        buf.me = buf  # a reference cycle
        buf[0] = x[0] * 2
        return (buf * x).sum()

    x = ft.tensor([1.0, 2.0, 3.0], dtype=ft.float64)
    enabled = gc.isenabled()
    gc.disable()
    try:
        g = ft.func.grad(f)(x)
    finally:
        if enabled:
            gc.enable()
    np.testing.assert_allclose(g.numpy(), [4.0, 0.0, 0.0])  # d/dx (2 x0 * x0) = 4 x0
