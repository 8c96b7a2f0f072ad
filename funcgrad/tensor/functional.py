"""``ft.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp (``torch.autograd.functional``).

Each runs the function on fresh copies of the inputs that require grad, and
uses :func:`ft.autograd.grad` (with ``create_graph=True`` where a second
derivative is needed: jvp uses the double-vjp trick, hvp/vhp differentiate
a gradient). Results are detached unless ``create_graph=True``.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, cast

from ..backend import namespace_of
from .backward import grad as _grad
from .creation import ones_like, zeros, zeros_like
from .grad_mode import enable_grad
from .ops import stack
from .tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# the tools run with grad mode on, as PyTorch's do: they work under ``no_grad``, and
# ``create_graph=True`` records the history back to the user's inputs
_grad_enabled = enable_grad()


def _check_outputs_require_grad(outs: tuple[Any, ...], strict: bool, first: int = 0) -> None:
    """Strict mode: every output (numbered from ``first``) must depend differentiably on the inputs."""
    for i, o in enumerate(outs if strict else (), first):
        if not o.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               f"must be computed in a differentiable manner from the input when running in strict "
                               f"mode.")


def _check_jacobian_requires_grad(jac: tuple[Any, ...], strict: bool) -> None:
    """Strict mode, second order: each first derivative must depend on the inputs."""
    for i, g in enumerate(jac if strict else ()):
        if not g.requires_grad:
            raise RuntimeError(f"While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {i} is independent of the input. This is not allowed in strict "
                               f"mode. You should ensure that your function is twice differentiable and that the "
                               f"jacobian depends on the inputs (this would be violated by a linear function for "
                               f"example).")


def _tuplify(x: Any, arg: str, fn: str) -> tuple[bool, tuple[Any, ...]]:
    """(whether ``x`` is a tuple, its Tensors); ``arg`` names ``x`` in the error ("inputs", "outputs of ...")."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            which = f"element {i}" if is_tuple else f"given {arg}"
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the {which} "
                            f"has type {type(t)}.")
    return is_tuple, items


def _prep_inputs(inputs: Any, create_graph: bool, fn: str) -> tuple[bool, tuple[Any, ...]]:
    """(whether ``inputs`` is a tuple, the copies of them that ``fn`` differentiates with respect to):
    with ``create_graph``, views keeping the history of those that require grad; else fresh leaves."""
    is_tuple, ins = _tuplify(inputs, "inputs", fn)
    return is_tuple, tuple((t.view_as(t) if t.dim() else t * 1) if create_graph and t.requires_grad
                           else t.detach().requires_grad_(True) for t in ins)


def _outputs(func: Callable[..., Any], inputs: tuple[Any, ...], fn: str) -> tuple[bool, tuple[Any, ...]]:
    with enable_grad():
        out = func(*inputs)
    return _tuplify(out, "outputs of the user-provided function", fn)


def _single_output(func: Callable[..., Any], inputs: tuple[Any, ...], fn: str, strict: bool) -> Any:
    """The one-element Tensor that the function given to ``fn`` (hessian, vhp, hvp) must return."""
    is_tuple, outs = _outputs(func, inputs, fn)
    if is_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    _check_outputs_require_grad(outs, strict)
    return outs[0]


def _check_v(v: Any, like: tuple[Any, ...], like_is_tuple: bool, name: str, fn: str) -> tuple[Any, ...]:
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            what = ("the user-provided function returns a single Tensor" if name == "outputs" else
                    "the input to the user-provided function is a single Tensor")
            raise RuntimeError(f"The vector v can only be None if {what} with a single element.")
        return tuple(ones_like(t) for t in like)
    _, vs = _tuplify(v, "v", fn)
    if len(vs) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            entry = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {b.shape.torch_repr()} but got "
                               f"{a.shape.torch_repr()}.")
    return vs


def _filled(res: tuple[Any, ...], like: tuple[Any, ...], strict: bool = False, create_graph: bool = False,
            stage: str = "back") -> tuple[Any, ...]:
    """Computed derivatives with zeros (shaped as ``like``) for the missing ones, after strict mode's
    checks (PyTorch's, per stage): a missing one is an independence error; with create_graph=True,
    one without history is too."""
    for i, r in enumerate(res if strict else ()):
        if r is None:
            raise RuntimeError({
                "back": f"The output of the user-provided function is independent of input {i}. This is not allowed "
                        f"in strict mode.",
                "back_trick": f"The gradient with respect to the input is independent of entry {i} in the "
                              f"grad_outputs when using the double backward trick to compute forward mode "
                              f"gradients. This is not allowed in strict mode.",
                "double_back": f"The jacobian of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode.",
            }[stage])
        if create_graph and not r.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode when create_graph=True.")
    return tuple(zeros_like(t) if r is None else r for r, t in zip(res, like))


def _grad_of(outs: tuple[Any, ...], ins: tuple[Any, ...], gouts: tuple[Any, ...], create_graph: bool,
             retain_graph: bool | None = True) -> tuple[Any, ...]:
    """``autograd.grad`` of the ``outs`` that require grad (with their ``gouts``) w.r.t. ``ins``: None for an
    input they do not depend on (all None when no output requires grad)."""
    pairs = [(o, g) for o, g in zip(outs, gouts) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(ins)
    return tuple(_grad([o for o, _ in pairs], list(ins), [g for _, g in pairs], create_graph=create_graph,
                       retain_graph=retain_graph, allow_unused=True))


def _finish(x: Any, create_graph: bool) -> Any:
    if isinstance(x, tuple):
        return tuple(_finish(e, create_graph) for e in x)
    return x if create_graph or not isinstance(x, Tensor) else x.detach()


def _answer(outs: tuple[Any, ...], out_is_tuple: bool, res: tuple[Any, ...], res_is_tuple: bool,
            create_graph: bool) -> tuple[Any, Any]:
    """``(output, derivative)`` as the user passed them (a lone Tensor or a tuple), detached unless create_graph."""
    return (_finish(outs if out_is_tuple else outs[0], create_graph),
            _finish(res if res_is_tuple else res[0], create_graph))


@_grad_enabled
def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, ...]:
    """``(func(inputs), v^T J)``.

    Example::

        out, g = ft.autograd.functional.vjp(lambda x: x ** 2, x, ft.ones(3))   # g = 2x
    """
    is_tuple_in, ins = _prep_inputs(inputs, create_graph, "vjp")
    is_tuple_out, outs = _outputs(func, ins, "vjp")
    vs = _check_v(v, outs, is_tuple_out, "outputs", "vjp")
    _check_outputs_require_grad(outs, strict)
    res = _filled(_grad_of(outs, ins, vs, create_graph), ins, strict, create_graph)
    return _answer(outs, is_tuple_out, res, is_tuple_in, create_graph)


@_grad_enabled
def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, ...]:
    """``(func(inputs), J v)`` by the double-vjp trick (as PyTorch does).

    Example::

        out, t = ft.autograd.functional.jvp(lambda x: x.sin(), x, v)   # t = cos(x) * v
    """
    is_tuple_in, ins = _prep_inputs(inputs, create_graph, "jvp")
    vs = _check_v(v, ins, is_tuple_in, "inputs", "jvp")
    is_tuple_out, outs = _outputs(func, ins, "jvp")
    _check_outputs_require_grad(outs, strict)
    us = tuple(zeros_like(o).requires_grad_(True) if o.is_floating_point() or o.is_complex() else zeros_like(o)
               for o in outs)
    with enable_grad():
        g = _filled(_grad_of(outs, ins, us, True), ins, strict, True)
        res = _filled(_grad_of(g, us, vs, create_graph), outs, strict and any(x.requires_grad for x in g),
                      create_graph, "back_trick")
    return _answer(outs, is_tuple_out, res, is_tuple_out, create_graph)


@_grad_enabled
def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian: for output ``i`` and input ``j``, a tensor of shape ``out_i.shape + in_j.shape``.

    ``vectorize=True`` computes all rows in one backward walk batched by ``fg.vmap`` (without
    ``create_graph`` or ``strict``; the same numbers as the row-by-row loop, which it falls back to
    when an op does not batch). With ``vectorize=False`` the rows are computed one by one, except
    when the walk runs no user code (no hooks, custom Functions, retained gradients): then the
    batched walk gives the same result, faster. ``strategy`` may be "reverse-mode" or
    "forward-mode" (the latter is computed in reverse mode too).

    Example::

        ft.autograd.functional.jacobian(lambda x: x ** 2, ft.tensor([1., 2.]))   # diag(2, 4)
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer '
                         'to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")  # sic: PyTorch's text
    if strict and strategy == "forward-mode":
        raise RuntimeError('ft.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    if strict and vectorize:
        raise RuntimeError("ft.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                           "together. Please either set `strict=False` or `vectorize=False`.")
    is_tuple_in, ins = _prep_inputs(inputs, create_graph, "jacobian")
    is_tuple_out, outs = _outputs(func, ins, "jacobian")
    jac: list[Any] = []
    for i, o in enumerate(outs):
        blocks = None
        if (not create_graph and not strict and o.requires_grad and o.is_floating_point()
                and (vectorize or _plain_graph(o))):
            blocks = _vectorized_rows(o, ins)
        if blocks is None:
            blocks = _looped_rows(o, i, ins, create_graph, strict)
        jac.append(blocks if is_tuple_in else blocks[0])
    return _finish(tuple(jac) if is_tuple_out else jac[0], create_graph)


def _looped_rows(o: Tensor, i: int, ins: tuple[Any, ...], create_graph: bool, strict: bool) -> tuple[Any, ...]:
    """The blocks ``o.shape + in.shape`` of ``d o / d ins`` (``o`` is output ``i``), one backward walk
    per element of ``o``; zeros where an input is unused (an error in strict mode)."""
    _check_outputs_require_grad((o,) if o.numel() else (), strict, i)
    flat = o.reshape(-1)
    rows = []
    for k in range(o.numel() if o.requires_grad else 0):  # (no rows: zero blocks below)
        rows.append(_grad(flat[k], list(ins), retain_graph=True, create_graph=create_graph, allow_unused=True))
        unused = [j for j, r in enumerate(rows[-1]) if r is None] if strict else []
        if unused:
            raise RuntimeError(f"Output {i} of the user-provided function is independent of input {unused[0]}. "
                               f"This is not allowed in strict mode.")
        if strict and create_graph and any(not r.requires_grad for r in rows[-1]):
            # a row with no history: the Jacobian is constant, so create_graph has nothing to record
            # (PyTorch numbers this message by the output, as here)
            raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode when create_graph=True.")
    return tuple(stack([zeros_like(t) if g[j] is None else g[j] for g in rows]).reshape(o.shape + t.shape) if rows
                 else zeros(tuple(o.shape) + tuple(t.shape), dtype=t.dtype) for j, t in enumerate(ins))


def _plain_graph(out: Tensor) -> bool:
    """True when a backward walk from ``out`` runs no user code (only primitive nodes and leaves;
    no tensor or node hooks, retained gradients, custom Functions, anomaly mode): then one batched
    walk is indistinguishable from the row-by-row loop, so ``vectorize=False`` may take it too."""
    from .debug_modes import anomaly
    from .nodes import AccumulateGrad
    from .prim_node import PrimNode

    if anomaly.enabled:
        return False
    seen: set[int] = set()
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if not isinstance(node, (PrimNode, AccumulateGrad)) or any(
                getattr(node, a, None) for a in ("_hooks", "_prehooks", "_tensor_prehooks", "_retain")):
            return False
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if leaf is not None and (getattr(leaf, "_hooks", None) or getattr(leaf, "_post_hooks", None)):
                return False
            continue
        stack.extend(nxt for nxt, _ in node.next_functions)
    return True


_BATCH_ELEMENTS = 1 << 22  # rows per batched walk: about this many elements per cotangent batch


def _vectorized_rows(out: Tensor, ins: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The rows of ``d out / d ins`` from backward walks over the recorded graph ``fg.vmap``-ed over
    the one-hot cotangents (the walk's derivative rules are funcgrad.numpy functions, so they batch),
    as PyTorch vmaps ``autograd.grad``: one walk, or one per chunk of rows when the batch would be
    large (memory stays bounded). Blocks of shape ``out.shape + in.shape``; None when some step of
    the walk does not batch (the caller then loops over the rows)."""
    import funcgrad as fg

    flat = out.reshape(-1)
    n = flat.numel()
    xp = namespace_of(flat._value)
    width = max([n] + [t.numel() for t in ins])
    chunk = max(1, min(n, _BATCH_ELEMENTS // max(width, 1)))

    def row(e: Any) -> tuple[Any, ...]:
        g = _grad(flat, list(ins), grad_outputs=Tensor._make(e), retain_graph=True, allow_unused=True)
        return tuple(None if r is None else r._value for r in g)

    parts = []
    try:
        with warnings.catch_warnings():  # a rule without a batching rule loops inside vmap: the user
            warnings.filterwarnings("ignore", message="vmap: primitive .* has no batching rule")  # did not ask
            for lo in range(0, n, chunk):
                m = min(chunk, n - lo)
                seeds = xp.zeros((m, n), dtype=flat._value.dtype)
                seeds[xp.arange(m), lo + xp.arange(m)] = 1
                parts.append(fg.vmap(row)(seeds))
    except Exception:  # noqa: BLE001 - an op whose rule does not batch: the caller loops instead
        return None
    blocks = []
    for k, t in enumerate(ins):
        pieces = [p[k] for p in parts]
        if any(p is None for p in pieces):
            whole = zeros_like(t).expand(n, *t.shape)
        else:
            whole = Tensor._make(pieces[0] if len(pieces) == 1 else xp.concatenate(pieces, axis=0))
        blocks.append(whole.reshape(tuple(out.shape) + tuple(t.shape)))
    return tuple(blocks)


@_grad_enabled
def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a function with one output element: ``in_i.shape + in_j.shape`` blocks
    (the output's own dims, e.g. a ``(1, 1)`` output, are dropped as in PyTorch).

    Example::

        ft.autograd.functional.hessian(lambda x: (x ** 3).sum(), ft.tensor([1., 2.]))   # diag(6, 12)
    """
    is_tuple_in, ins = _tuplify(inputs, "inputs", "hessian")

    def jac_fn(*xs: Any) -> Any:
        out = _single_output(func, xs, "hessian", strict)
        g = _filled(_grad_of((out.reshape(()),), xs, (None,), True, retain_graph=None), xs)
        _check_jacobian_requires_grad(g, strict)
        return g

    res = jacobian(jac_fn, ins, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    if not is_tuple_in:
        return res[0][0]
    return res


@_grad_enabled
def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False,
        _fn: str = "vhp") -> tuple[Any, ...]:
    """``(func(inputs), v^T H)`` for a scalar function.

    Example::

        out, r = ft.autograd.functional.vhp(lambda x: (x ** 3).sum(), x, v)   # 6 x v
    """
    is_tuple_in, ins = _prep_inputs(inputs, create_graph, _fn)
    vs = _check_v(v, ins, is_tuple_in, "inputs", _fn)
    out = _single_output(func, ins, _fn, strict)
    with enable_grad():  # (an output that needs no grad: all derivatives None, so zeros)
        g = _filled(_grad_of((out,), ins, (None,), True, retain_graph=None), ins, strict)
        _check_jacobian_requires_grad(g, strict)
        res = _grad_of(g, ins, vs, create_graph, retain_graph=None)
    return _answer((out,), False, _filled(res, ins, strict, create_graph, "double_back"), is_tuple_in, create_graph)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, ...]:
    """``(func(inputs), H v)`` for a scalar function (equal to ``vhp`` for twice-differentiable functions,
    whose Hessian is symmetric).
    """
    return cast("tuple[Any, ...]", vhp(func, inputs, v, create_graph, strict, _fn="hvp"))
