"""Custom ``ft.autograd.Function``s under ``ft.func``: one primitive whose rules are the Function's.

``Function.apply`` on tensors holding a transform's traced values (see :mod:`._func_support`) calls
:func:`apply_function`: the call becomes one funcgrad primitive whose VJP is the Function's
``backward``, whose JVP is its ``jvp`` and whose batching rule is its ``vmap`` staticmethod (or, with
``generate_vmap_rule = True``, its forward once per example), as torch.func does for Functions
written with ``setup_context``. The rules rebuild ``ctx`` with ``setup_context`` from the inputs and
outputs as each transform sees them, so saved tensors carry the enclosing transforms' derivatives
and higher orders differentiate ``backward`` itself.
"""

from __future__ import annotations

import inspect
from typing import Any

import funcgrad.numpy as fnp

from ..backend import dtype_of, namespace_of
from ..core import Box, JVPBox, VJPBox, defprimitive
from ..core.trace import shape_of
from ._func_support import _raw_value, is_traced, traced_inplace
from .grad_mode import enable_grad, no_grad
from .function import DIRTY_NOT_RETURNED, register_traced_apply
from .tensor import Tensor

__all__ = ["apply_function", "VmapInfo"]



class _Call:
    """One ``Function.apply`` under a transform: the class, the non-tensor arguments, the output layout."""

    __slots__ = ("cls", "args", "pos", "is_tuple", "out_layout", "non_diff", "dirty", "materialize")

    def __init__(self, cls: type, args: tuple[Any, ...], pos: list[int]) -> None:
        self.cls = cls
        self.args = args
        self.pos = pos  # positions of the tensor arguments
        self.is_tuple = False
        self.out_layout: list[Any] = []  # per output: None (a tensor, next leaf) or a constant
        self.non_diff: set[int] = set()  # output indices marked non-differentiable (or not floating)
        self.dirty: dict[int, int] = {}  # input position -> output index (mark_dirty)
        self.materialize = True

    def inputs(self, leaves: Any) -> tuple[Any, ...]:
        full = list(self.args)
        for p, leaf in zip(self.pos, leaves):
            full[p] = Tensor._make(leaf)
        return tuple(full)

    def layout(self, output: Any) -> list[Any]:
        """Record the layout of what forward (or vmap) returned; its outputs as a list."""
        self.is_tuple = isinstance(output, tuple)
        outs = list(output) if self.is_tuple else [output]
        self.out_layout = [None if isinstance(o, Tensor) else (o,) for o in outs]
        return outs

    def tensor_outputs(self) -> list[int]:
        """The indices of the tensor outputs (in the order of their leaves)."""
        return [k for k, c in enumerate(self.out_layout) if c is None]

    def outputs(self, leaves: Any) -> list[Any]:
        it = iter(leaves)
        return [Tensor._make(next(it)) if c is None else c[0] for c in self.out_layout]

    def output(self, leaves: Any) -> Any:
        outs = self.outputs(leaves)
        return tuple(outs) if self.is_tuple else outs[0]


def _ctx_for(call: _Call, inputs: tuple[Any, ...], output: Any, needs: tuple[bool, ...]) -> Any:
    from .function import FunctionCtx

    ctx = FunctionCtx()
    ctx.needs_input_grad = needs
    call.cls.setup_context(ctx, inputs, output)  # type: ignore[attr-defined]
    return ctx


def _fn_raw(*leaves: Any, call: _Call) -> tuple[Any, ...]:
    copies = [namespace_of(x).array(x, copy=True) if hasattr(x, "shape") else x for x in leaves]
    inputs = call.inputs(copies)
    with no_grad():
        output = call.cls.forward(*inputs)  # type: ignore[attr-defined]
        needs = tuple(isinstance(a, Tensor) and a.is_floating_point() for a in inputs)
        ctx = _ctx_for(call, inputs, output, needs)
    outs = call.layout(output)
    call.non_diff = {k for k, o in enumerate(outs) if isinstance(o, Tensor)
                     and (id(o) in ctx._non_differentiable or o._value.dtype.kind not in "fc")}
    call.materialize = ctx.materialize_grads
    by_id = {id(o): k for k, o in enumerate(outs) if isinstance(o, Tensor)}
    dirty = [p for p in call.pos if id(inputs[p]) in ctx._dirty]
    if any(id(inputs[p]) not in by_id for p in dirty):
        raise RuntimeError(DIRTY_NOT_RETURNED)
    call.dirty = {p: by_id[id(inputs[p])] for p in dirty}
    return tuple(_raw_value(o) for o in outs if isinstance(o, Tensor))


def _conj(v: Any) -> Any:
    return fnp.conj(v) if dtype_of(v).kind == "c" else v


def _fn_vjp(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Any, *leaves: Any, call: _Call) -> list[Any]:
    from .function import _backward_of, _check_returned, _gradients

    cls = call.cls
    needs = tuple(p in [call.pos[j] for j in argnums] for p in range(len(call.args)))
    with enable_grad():  # backward is differentiated by the enclosing transforms (higher order)
        ctx = _ctx_for(call, call.inputs(leaves), call.output(ans), needs)
        grads: list[Any] = [None] * len(call.out_layout)
        for leaf_k, k in enumerate(call.tensor_outputs()):
            gk = g[leaf_k]
            if gk is None or k in call.non_diff:
                grads[k] = Tensor._make(fnp.zeros_like(ans[leaf_k])) if call.materialize or k in call.non_diff else None
            else:
                grads[k] = Tensor._make(_conj(gk))
        backward = _backward_of(cls)
        if getattr(backward, "__code__", None) is _once_code() and \
                any(_differentiated(v) for v in (*leaves, *ans, *g)):
            raise RuntimeError(f"trying to differentiate twice a function that was marked with @once_differentiable "
                               f"({cls.__name__}.backward under nested ft.func transforms)")
        res = _gradients(backward(ctx, *grads), len(call.args), f"{cls.__name__}Backward")
    out: list[Any] = []
    for j in argnums:
        p = call.pos[j]
        r, leaf = res[p], leaves[j]
        if r is None or dtype_of(leaf).kind not in "fc":
            out.append(None)
            continue
        _check_returned(r, p, f"function {cls.__name__}Backward", "gradient of type ")
        out.append(_conform(_conj(_raw_value(r)), leaf, f"function {cls.__name__}Backward returned an invalid "
                                                      f"gradient at index {p}"))
    return out


def _once_code() -> Any:
    """The code of ``once_differentiable``'s wrapper (the same for every decorated backward)."""
    from .function import once_differentiable

    return once_differentiable(lambda *a: a).__code__


def _differentiated(v: Any) -> bool:
    """Whether ``v`` is traced by a differentiating transform (not only batched)."""
    while isinstance(v, Box):
        if isinstance(v, (VJPBox, JVPBox)):
            return True
        v = v._value
    return False


def _conform(v: Any, like: Any, what: str) -> Any:
    from .function import check_gradient_shape

    shape, got = tuple(shape_of(like)), tuple(shape_of(v))
    if got != shape:
        check_gradient_shape(got, shape, what)
        v = fnp.broadcast_to(v, shape)
    if dtype_of(v) != dtype_of(like):
        v = fnp.astype(v, dtype_of(like))
    return v


def _fn_jvp(tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, call: _Call) -> tuple[Any, ...]:
    from .function import _check_returned, _require_jvp, _run_jvp

    cls = call.cls
    _require_jvp(cls, "is under ft.func.jvp / jacfwd / hessian")
    needs = tuple(p in call.pos for p in range(len(call.args)))
    with enable_grad():
        ctx = _ctx_for(call, call.inputs(leaves), call.output(ans), needs)
        t_in: list[Any] = [None] * len(call.args)
        for j, p in enumerate(call.pos):
            t = tangents[j]
            if t is not None:
                t_in[p] = Tensor._make(t)
            elif dtype_of(leaves[j]).kind in "fc":
                t_in[p] = Tensor._make(fnp.zeros_like(leaves[j]))
        t_out = _run_jvp(cls, ctx, t_in, len(call.out_layout))
    result = []
    for leaf_k, k in enumerate(call.tensor_outputs()):
        a, t = ans[leaf_k], t_out[k]
        if t is None or k in call.non_diff:
            result.append(fnp.zeros_like(a))
        else:
            _check_returned(t, k, f"Function {cls.__name__}.jvp")
            result.append(_conform(_raw_value(t), a, f"Function {cls.__name__}.jvp returned an invalid tangent at "
                                                     f"index {k}"))
    return tuple(result)


class VmapInfo:
    """What a Function's ``vmap`` staticmethod gets first: ``batch_size`` and ``randomness``."""

    def __init__(self, batch_size: int, randomness: str = "error") -> None:
        self.batch_size = batch_size
        self.randomness = randomness


def _fn_batch(args: list[Any], dims: list[Any], call: _Call) -> tuple[Any, ...]:
    from ..core import get_primitive
    from ..numpy._batching import fallback
    from .function import Function

    cls = call.cls
    size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
    own = getattr(cls, "vmap", None)
    if inspect.getattr_static(cls, "vmap", None) is not inspect.getattr_static(Function, "vmap"):
        in_dims: list[Any] = [None] * len(call.args)
        full = list(call.args)
        for j, p in enumerate(call.pos):  # batched arguments move their batch dimension first
            full[p] = Tensor._make(fnp.moveaxis(args[j], dims[j], 0) if dims[j] is not None else args[j])
            in_dims[p] = None if dims[j] is None else 0
        res = own(VmapInfo(size), tuple(in_dims), *full)  # type: ignore[misc]
        if not (isinstance(res, tuple) and len(res) == 2):
            raise RuntimeError(f"{cls.__name__}.vmap must return a pair (output, out_dims)")
        out, out_dims = res
        outs = call.layout(out)
        od = list(out_dims) if isinstance(out_dims, (tuple, list)) else [out_dims] * len(outs)
        if len(od) != len(outs):
            raise RuntimeError(f"{cls.__name__}.vmap returned {len(od)} out_dims for {len(outs)} outputs")
        pairs = [(_raw_value(o), d) for o, d in zip(outs, od) if isinstance(o, Tensor)]
        # an output without a batch dimension is the same for every example: broadcast along a new first one
        leaves = tuple(v if d is not None else fnp.broadcast_to(fnp.expand_dims(v, 0), (size,) + tuple(shape_of(v)))
                       for v, d in pairs)
        return leaves, tuple(0 if d is None else d for _, d in pairs)
    if getattr(cls, "generate_vmap_rule", False):
        batched: tuple[Any, ...] = fallback(get_primitive(_FN), args, dims, size, {"call": call})
        return batched
    raise RuntimeError(
        f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please override and implement the "
        f"vmap staticmethod or set generate_vmap_rule=True (ft.func.vmap, jacfwd and hessian batch it).")


_FN = defprimitive(_fn_raw, name="autograd_function", vjp_all=_fn_vjp, jvp_all=_fn_jvp, batch=_fn_batch,
                   multiple_results=True, doc="One ``ft.autograd.Function.apply`` under an ft.func transform.")


def apply_function(cls: type, args: tuple[Any, ...]) -> Any:
    """``cls.apply(*args)`` on traced tensors: the Function's rules become the transforms' rules.

    Example::

        class Sq(ft.autograd.Function):
            @staticmethod
            def forward(a): return a * a
            @staticmethod
            def setup_context(ctx, inputs, output): ctx.save_for_backward(inputs[0])
            @staticmethod
            def backward(ctx, g): return 2 * g * ctx.saved_tensors[0]

        ft.func.grad(lambda x: Sq.apply(x).sum())(x)   # 2 * x, by Sq.backward
    """
    from .function import Function

    if cls.setup_context is Function.setup_context:  # type: ignore[attr-defined]
        raise RuntimeError(
            f"In order to use an autograd.Function with ft.func transforms (vmap, grad, jvp, jacrev, ...), it must "
            f"override the setup_context staticmethod: {cls.__name__}.forward must not take ctx; save what backward "
            f"needs in a static setup_context(ctx, inputs, output). See 'Extending torch.func with "
            f"autograd.Function' in PyTorch's documentation.")
    pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    call = _Call(cls, tuple(None if isinstance(a, Tensor) else a for a in args), pos)
    leaves = [_raw_value(args[p]) for p in pos]
    results = call.outputs(_FN(*leaves, call=call))
    for p, k in call.dirty.items():  # forward changed this input in place: it takes the output's value
        t = args[p]
        if not traced_inplace(t, results[k]):
            t._value = results[k]._value
        results[k] = t
    return tuple(results) if call.is_tuple else results[0]


register_traced_apply(apply_function)
