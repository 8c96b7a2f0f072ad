"""``ft.func``: ``torch.func`` on Tensors, built on funcgrad's transforms (``fg.grad``, ``fg.vjp``,
``fg.jvp``, ``fg.jacrev``, ``fg.jacfwd``, ``fg.hessian``, ``fg.vmap``), not reimplemented.

Inside a transformed function the tensors hold the transform's traced values, so Tensor methods
and ``ft`` functions work on them; reading a value out (``.item()``, ``.numpy()``, Python
``if`` on a tensor) raises, as in torch.func. Results come back as Tensors. ``detach()``, ``.data``,
``no_grad()`` blocks, in-place writes and custom ``autograd.Function``s inside the function follow
torch.func's rules (:mod:`._func_support`, :mod:`._func_function`).

Example::

    import funcgrad.tensor as ft
    from funcgrad.tensor.func import functional_call, grad, vmap

    model = ft.nn.Linear(3, 1)
    params = {k: v.detach() for k, v in model.named_parameters()}
    def loss(p, x, y):
        return ((functional_call(model, p, (x,)) - y) ** 2).mean()
    per_example = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator, Sequence

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import tree_util

from ..core import Box
from . import _func_function  # noqa: F401  (registers Function.apply on traced Tensors)
from . import _func_support as _support
from ._func_support import _raw_value
from .grad_mode import state as _mode
from .ops import stack
from .tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state"]


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _to_raw(tree: Any) -> Any:
    """Tensors -> their values (arrays, or a transform's traced values), through any pytree."""
    return tree_util.tree_map(_raw_value, tree, is_leaf=_is_tensor)


def _array_like(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Tensor)


def _to_tensor(tree: Any) -> Any:
    """Arrays / traced values -> Tensors wrapping them (no grad recording), through any pytree."""
    return tree_util.tree_map(lambda v: Tensor._make(v) if _array_like(v) else v, tree, is_leaf=_is_tensor)


def _result(tree: Any) -> Any:
    """A transform's result as Tensors; a traced value that escaped is an error, never a result."""

    def leaf(v: Any) -> Any:
        inner = _raw_value(v)
        if _support.depth() and isinstance(inner, Box):  # inside an outer ft.func transform: its traced value
            return Tensor._make(inner)
        if isinstance(inner, Box) or isinstance(getattr(inner, "_value", None), Box):
            raise TypeError(
                "a value traced by a funcgrad transform cannot be used as a Tensor here: an operation mixed the "
                "traced value with the tensor holding it (e.g. relu() under a bare ft.func.vmap); write that step "
                "with funcgrad.numpy or an ft function of the tensor alone (ft.maximum(x, 0) for relu)")
        return Tensor._make(inner) if _array_like(inner) else inner

    return tree_util.tree_map(leaf, tree, is_leaf=_is_tensor)


def _lift(func: Callable[..., Any], has_aux: bool = False, reverse: bool = False) -> Callable[..., Any]:
    """``func`` on Tensors as a function on arrays (what the fg transforms differentiate). Each call
    runs in a frame of :mod:`._func_support` (``reverse``: grad mode on inside, as torch.func)."""

    def f(*args: Any, **kwargs: Any) -> Any:
        frame = _support.enter(reverse)
        ok = False
        try:
            out = func(*_to_tensor(args), **kwargs)
            if has_aux and not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("has_aux=True: the function must return a tuple (output, aux)")
            raw = _to_raw(out)  # (with has_aux, the pair of both converted)
            del out  # (tensors the function made are gone now: those still alive were captured)
            ok = True
        finally:
            _support.leave(frame, ok)
        return raw

    return f


def _reverse_result(result: Any, enabled: bool) -> Any:
    """A reverse-mode transform's result as Tensors. Called in a no_grad block (``enabled`` False)
    inside another transform, its results are constants for the enclosing reverse-mode transforms
    (torch.func's rule)."""
    return _result(result if enabled or not _support.depth() else _support.stop_reverse(result))


def _on_tensors(transformed: Callable[..., Any]) -> Callable[..., Any]:
    """A reverse-mode transform of a lifted function, called on Tensors and returning Tensors."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        enabled = _mode.enabled
        return _reverse_result(transformed(*_to_raw(args), **kwargs), enabled)

    return wrapped


def _scalar_output(f: Callable[..., Any], has_aux: bool, name: str) -> Callable[..., Any]:
    """``f`` (lifted), raising torch.func's RuntimeError when its output is not a 0-d tensor."""

    def checked(*args: Any, **kwargs: Any) -> Any:
        res = f(*args, **kwargs)
        out = res[0] if has_aux else res
        ndim = len(fnp.shape(out)) if hasattr(out, "shape") else None
        if ndim != 0:
            got = f"tensor with {ndim} dims" if ndim is not None else type(out).__name__
            raise RuntimeError(f"{name}(f)(*args): Expected f(*args) to return a scalar Tensor, got {got}. Maybe "
                               f"you wanted to use the vjp or jacrev APIs instead?")
        return res

    return checked


def grad(func: Callable[..., Any], argnums: int | tuple[Any, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar-valued ``func`` with respect to ``argnums`` (``fg.grad``).

    Example: ``ft.func.grad(lambda x: x.sin().sum())(x)  # cos(x)``.
    """
    lifted = _scalar_output(_lift(func, has_aux, reverse=True), has_aux, "grad")
    return _on_tensors(fg.grad(lifted, argnums=argnums, has_aux=has_aux))


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[Any, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``(gradient, value)`` (``(gradient, (value, aux))`` with ``has_aux``), as torch.func.

    Example: ``g, v = ft.func.grad_and_value(f)(x)``.
    """
    lifted = _scalar_output(_lift(func, has_aux, reverse=True), has_aux, "grad_and_value")
    vg = _on_tensors(fg.value_and_grad(lifted, argnums=argnums, has_aux=has_aux))

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, g = vg(*args, **kwargs)
        return g, value

    return wrapped


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, vjp_fn[, aux])``; ``vjp_fn(cotangents)`` returns one cotangent per primal (``fg.vjp``).

    Example: ``out, vjp_fn = ft.func.vjp(ft.sin, x); (g,) = vjp_fn(ft.ones_like(out))``.
    """
    enabled = _mode.enabled
    out, f_vjp, *aux = fg.vjp(_lift(func, has_aux, reverse=True), *_to_raw(primals), has_aux=has_aux)

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        return tuple(_reverse_result(f_vjp(_to_raw(cotangents)), _mode.enabled))

    return (_reverse_result(out, enabled), vjp_fn, *(_reverse_result(a, enabled) for a in aux))


def jvp(func: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(output, jvp_out[, aux])``: forward-mode derivative along ``tangents`` (``fg.jvp``).

    Example: ``out, t = ft.func.jvp(ft.sin, (x,), (ft.ones_like(x),))``.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    res = fg.jvp(_lift(func, has_aux), tuple(_to_raw(tuple(primals))), tuple(_to_raw(tuple(tangents))),
                 has_aux=has_aux)
    return tuple(_result(r) for r in res)


def jacrev(func: Callable[..., Any], argnums: int | tuple[Any, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """Jacobian by reverse mode (``fg.jacrev``). Example: ``ft.func.jacrev(f)(x)``."""
    return _on_tensors(fg.jacrev(_lift(func, has_aux, reverse=True), argnums=argnums, has_aux=has_aux))


def jacfwd(func: Callable[..., Any], argnums: int | tuple[Any, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """Jacobian by forward mode (``fg.jacfwd``). Example: ``ft.func.jacfwd(f)(x)``."""
    j = fg.jacfwd(_lift(func, has_aux), argnums=argnums, has_aux=has_aux)
    return lambda *args, **kw: _result(j(*_to_raw(args), **kw))


def hessian(func: Callable[..., Any], argnums: int | tuple[Any, ...] = 0) -> Callable[..., Any]:
    """Hessian, forward over reverse (``fg.hessian``). Example: ``ft.func.hessian(f)(x)``."""
    return _on_tensors(fg.hessian(_lift(func, reverse=True), argnums=argnums))


def _chunks(args: tuple[Any, ...], dims: Any, size: int, chunk: int) -> Iterator[tuple[Any, ...]]:
    for lo in range(0, size, chunk):
        cut = (slice(lo, lo + chunk),)
        yield tuple(a if d is None else tree_util.tree_map(lambda v, d=d: v[(slice(None),) * (d % v.ndim) + cut], a)
                    for a, d in zip(args, dims))


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """Vectorize ``func`` over a batch dimension (``fg.vmap``); ``chunk_size`` maps that many examples
    at a time and concatenates (less memory).

    Example: ``ft.func.vmap(ft.dot)(a, b)  # row-wise dot products``.
    """
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    v = fg.vmap(_lift(func), in_axes=tuple(in_dims) if isinstance(in_dims, list) else in_dims, out_axes=out_dims)

    def mapped(*raw: Any, **kwargs: Any) -> Any:
        if chunk_size is None:
            return v(*raw, **kwargs)
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(raw)
        sizes = [tree_util.tree_leaves(a)[0].shape[d] for a, d in zip(raw, dims) if d is not None]
        if not sizes:
            raise ValueError("vmap: at least one argument must be mapped (in_dims not None)")
        outs = [v(*part, **kwargs) for part in _chunks(raw, dims, sizes[0], chunk_size)]
        return tree_util.tree_map(lambda *xs: fnp.concatenate(xs, axis=out_dims), *outs)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _with_history(mapped, args, kwargs)

    return wrapped


def _with_history(mapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``mapped`` (on raw values) of ``args`` as Tensors; outside other transforms, with grad mode on and
    an argument that requires grad, the result is recorded as one node of the autograd graph whose
    backward is funcgrad's VJP of ``mapped`` (so ``.backward()`` reaches the arguments, as with
    torch.func.vmap; a create_graph backward through it raises: higher derivatives go through the
    transforms)."""
    flat, tree = tree_util.tree_flatten(args, is_leaf=_is_tensor)
    tracked = [i for i, a in enumerate(flat) if isinstance(a, Tensor) and a.requires_grad]
    if not tracked or not _mode.enabled or _support.depth():
        return _result(mapped(*_to_raw(args), **kwargs))
    raw = [_raw_value(a) if isinstance(a, Tensor) else a for a in flat]
    out_tree: list[Any] = []

    def on_tracked(*values: Any) -> tuple[Any, ...]:
        vals = list(raw)
        for i, x in zip(tracked, values):
            vals[i] = x
        outs, treedef = tree_util.tree_flatten(mapped(*tree_util.tree_unflatten(tree, vals), **kwargs))
        out_tree[:] = [treedef]
        return tuple(outs)

    outs, f_vjp = fg.vjp(on_tracked, *[raw[i] for i in tracked])
    inexact = [i for i, o in enumerate(outs) if hasattr(o, "dtype") and o.dtype.kind in "fc"]
    if not inexact:
        return _result(tree_util.tree_unflatten(out_tree[0], list(outs)))
    recorded = _recorded_node().apply(f_vjp, outs, inexact, *[flat[i] for i in tracked])
    results = list(_result(outs))  # integer and Python outputs: constants
    for i, t in zip(inexact, recorded if isinstance(recorded, tuple) else (recorded,)):
        results[i] = t
    return tree_util.tree_unflatten(out_tree[0], results)


@functools.cache
def _recorded_node() -> Any:
    from .function import Function

    class TransformBackward(Function):
        """Outputs a funcgrad transform computed, as one node; backward is the transform's VJP."""

        @staticmethod
        def forward(ctx: Any, f_vjp: Any, outs: tuple[Any, ...], inexact: list[int], *inputs: Any) -> Any:
            ctx.f_vjp, ctx.outs, ctx.inexact = f_vjp, outs, inexact
            return tuple(Tensor._make(outs[i]) for i in inexact)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            if _mode.enabled:  # create_graph: the VJP below is not recorded, so refuse rather than give zeros
                raise RuntimeError(
                    "the result of ft.func.vmap is recorded for one backward pass; differentiating through it "
                    "again (create_graph=True) is not supported: take higher derivatives inside the transforms, "
                    "e.g. ft.func.vmap(ft.func.hessian(f)) or ft.func.jacrev(ft.func.vmap(f))")
            cotangents = [fnp.zeros_like(o) for o in ctx.outs]
            for i, g in zip(ctx.inexact, grads):
                if g is not None:
                    cotangents[i] = g._value
            return (None, None, None, *(Tensor._make(c) for c in ctx.f_vjp(tuple(cotangents))))

    return TransformBackward


@contextlib.contextmanager
def _swapped(module: Any, values: dict[Any, Any]) -> Iterator[None]:
    saved = []
    try:
        for name, value in values.items():
            *path, leaf = name.split(".")
            m = module
            for p in path:
                m = m._modules[p]
            store = m._parameters if leaf in m._parameters else m._buffers if leaf in m._buffers else None
            if store is None:
                raise RuntimeError(f"functional_call: {type(module).__name__} has no parameter or buffer '{name}'")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value if isinstance(value, Tensor) or value is None else Tensor._make(value)
        yield
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict[Any, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced by the given tensors (by dotted name).

    Example: ``functional_call(model, {"weight": w, "bias": b}, (x,))``.
    """
    dicts = parameter_and_buffer_dicts
    values: dict[Any, Any] = {}
    for d in (dicts if isinstance(dicts, (tuple, list)) else (dicts,)):
        for k, v in d.items():
            if k in values:
                raise ValueError(f"functional_call: {k} appeared in multiple dictionaries")
            values[k] = v
    if strict:
        own = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing, unexpected = sorted(own - set(values)), sorted(set(values) - own)
        if missing or unexpected:
            raise RuntimeError(f"functional_call got missing keys {missing} and unexpected keys {unexpected}")
    a = () if args is None else (args if isinstance(args, tuple) else (args,))
    with _swapped(module, values):
        return module(*a, **(kwargs or {}))


def stack_module_state(models: Sequence[Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """``(params, buffers)``: each model's tensors stacked along a new first axis, by name (for ``vmap``
    over an ensemble). Example: ``params, buffers = stack_module_state(models)``."""
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    ps, bs = [dict(m.named_parameters()) for m in models], [dict(m.named_buffers()) for m in models]
    params = {n: stack([p[n].detach() for p in ps]).requires_grad_(True) for n in ps[0]}
    return params, {n: stack([b[n] for b in bs]) for n in bs[0]}
