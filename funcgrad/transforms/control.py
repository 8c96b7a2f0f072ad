"""Control flow: scan and fori_loop (small tapes), while_loop, cond and switch.

scan: a loop with a differentiable carry whose tape stays small.

Tracing is eager, so ordinary Python loops already differentiate; ``scan``
is for long recurrences. It runs as one primitive: the forward pass keeps
only the carry entering each step (stacked into one array per carry leaf),
and the backward pass walks the steps in reverse, re-running one step at a
time under its own short tape. A 10^5-step scan therefore holds a few
arrays, not 10^5 nodes.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from ..core.trace import shape_of
from .. import tree_util
from ..core import Box, defprimitive, get_primitive
from ..core.batching import is_batched
from ..jit.bodies import replayed, stage_body, staging_now
from ..jit.loops import Loop, avals, register_loop
from ..numpy._batching import fallback
from ..core.staging import is_staged
from .custom import _fill, _partial_jvp, _partial_vjp, _Spec, _split
from .staged_control import staged_switch, staged_while

__all__ = ["scan", "fori_loop", "while_loop", "cond", "switch"]

T = TypeVar("T")


def _raw_value(x: Any) -> Any:
    while isinstance(x, Box):
        x = x._value
    return x


def _is_float(x: Any) -> bool:
    import numpy as np

    d = getattr(_raw_value(x), "dtype", None)
    kind = np.dtype(d).kind if d is not None else np.result_type(_raw_value(x)).kind
    return kind in "fc"


class _ScanSpec(_Spec):
    __slots__ = ("f", "n_carry", "n_xs", "length", "reverse", "carry_def", "xs_def", "y_def", "n_y", "bodies")

    # Slot types, for type checkers only (no runtime effect).
    f: Callable[..., Any]
    n_carry: int
    n_xs: int
    length: int
    reverse: bool
    carry_def: tree_util.PyTreeDef
    xs_def: Any  # a PyTreeDef, or None when xs is None
    y_def: Any  # a PyTreeDef once the step function has run
    n_y: int
    bodies: dict[Any, Any]  # operands' avals -> the step staged into a program (while fg.jit traces)


def _step_fn(spec: _ScanSpec) -> Callable[..., Any]:
    """One step on flat leaves: (carry leaves..., x leaves...) -> (carry leaves..., y leaves...)."""

    def step(*leaves: Any) -> tuple[Any, ...]:
        carry = tree_util.tree_unflatten(spec.carry_def, list(leaves[: spec.n_carry]))
        x = tree_util.tree_unflatten(spec.xs_def, list(leaves[spec.n_carry:])) if spec.n_xs or spec.xs_def is not None else None
        out = spec.f(carry, x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError("scan: the step function must return a pair (new_carry, y)")
        new_carry, y = out
        c_leaves, c_def = tree_util.tree_flatten(new_carry)
        if c_def != spec.carry_def:
            raise TypeError(
                f"scan: the step function must return a carry with the structure of init, "
                f"{spec.carry_def}, but returned {c_def}"
            )
        y_leaves, spec.y_def = tree_util.tree_flatten(y)
        spec.n_y = len(y_leaves)
        return tuple(c_leaves) + tuple(y_leaves)

    return step


def _order(spec: _ScanSpec) -> range:
    return range(spec.length - 1, -1, -1) if spec.reverse else range(spec.length)


def _run(leaves: tuple[Any, ...], spec: _ScanSpec) -> tuple[Any, ...]:
    """The whole loop: (final carry..., stacked ys..., stacked carries entering each step...)."""
    import funcgrad.numpy as fnp

    step = _step_fn(spec)
    carry = list(leaves[: spec.n_carry])
    xs = leaves[spec.n_carry:]
    ys: list[list[Any]] = [None] * spec.length  # type: ignore[list-item]
    entering: list[list[Any]] = [None] * spec.length  # type: ignore[list-item]
    for t in _order(spec):
        entering[t] = carry
        out = step(*carry, *[x[t] for x in xs])
        carry = list(out[: spec.n_carry])
        ys[t] = list(out[spec.n_carry:])
    stacked_y = [fnp.stack([ys[t][k] for t in range(spec.length)]) for k in range(spec.n_y)] if spec.length else []
    stacked_c = [fnp.stack([entering[t][k] for t in range(spec.length)]) for k in range(spec.n_carry)] if spec.length else []
    return tuple(carry) + tuple(stacked_y) + tuple(stacked_c)


def _scan_raw(*leaves: Any, spec: _ScanSpec) -> tuple[Any, ...]:
    if spec.length and staging_now():  # recorded by fg.jit: the step as a program too, for compiling
        key = avals(leaves)
        if key not in spec.bodies:
            first = spec.length - 1 if spec.reverse else 0
            spec.bodies[key] = stage_body(_step_fn(spec), list(leaves[:spec.n_carry])
                                          + [x[first] for x in leaves[spec.n_carry:]], "scan step")
        body = spec.bodies[key]
        if body is not None:  # run the step's replay: no Python step function per step
            return replayed(Loop(body, spec.n_carry, spec.n_xs, spec.length, spec.reverse))(*leaves)
    out = _run(leaves, spec)
    spec.check_closure(out)
    return out


def _scan_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _ScanSpec) -> list[Any]:
    """The cotangents of the leaves: a scan running the other way whose step is the VJP of
    ``f`` at the carry entering that step (so it is a loop again, staged and compiled as one)."""
    import funcgrad.numpy as fnp

    nc, ny = spec.n_carry, spec.n_y
    g = _fill(g[: nc + ny], ans[: nc + ny])
    entering = list(ans[nc + ny:])
    xs = list(leaves[nc:])
    nx = len(xs)
    if not spec.length:
        by_leaf = {i: fnp.zeros_like(leaves[i]) if i >= nc else g[i] for i in range(nc + nx)}
        return [by_leaf[i] for i in argnums]
    step = _step_fn(spec)
    diff = [i for i in range(nc + nx) if _is_float(leaves[i])]

    float_xs = [i for i in diff if i >= nc]

    def back(g_carry: list[Any], at: tuple[list[Any], list[Any], list[Any]]) -> tuple[list[Any], list[Any]]:
        carry_in, x, g_y = at
        point = list(carry_in) + list(x)
        by_leaf = dict(zip(diff, _partial_vjp(step, point, diff, tuple(g_carry) + tuple(g_y))))
        return ([by_leaf[i] if i in by_leaf else fnp.zeros_like(point[i]) for i in range(nc)],
                [by_leaf[i] for i in float_xs])  # (integer xs have no cotangent: none is stacked)

    g_init, g_xs = scan(back, list(g[:nc]), (entering, xs, list(g[nc:])), length=spec.length,
                        reverse=not spec.reverse)
    by_xs = dict(zip(float_xs, g_xs))
    result = list(g_init) + [by_xs[nc + k] if nc + k in by_xs else fnp.zeros_like(xs[k]) for k in range(nx)]
    return [result[i] for i in argnums]


def _scan_vjp_all_full(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _ScanSpec) -> list[Any]:
    """VJP including cotangents that reach the stacked entering carries (higher order)."""
    nc, ny = spec.n_carry, spec.n_y
    res_g = g[nc + ny:]
    base = _scan_vjp_all(g[: nc + ny], ans, argnums, *leaves, spec=spec)
    if all(r is None for r in res_g):
        return base
    extra = _partial_vjp(lambda *ls: _run(ls, spec)[nc + ny:], leaves, argnums, _fill(res_g, ans[nc + ny:]))
    return [b + e for b, e in zip(base, extra)]


def _scan_jvp_all(tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, spec: _ScanSpec) -> tuple[Any, ...]:
    """The output tangents: a scan of ``f`` and its JVP side by side (the carry holds the
    float carries' tangents too), so that it is a loop again, staged and compiled as one."""
    import funcgrad.numpy as fnp
    from .autodiff import jvp

    nc = spec.n_carry
    if not spec.length:
        return _partial_jvp(lambda *ls: _run(ls, spec), leaves, tangents)
    step = _step_fn(spec)
    floats = [i for i in range(nc) if _is_float(leaves[i])]
    moving = [i for i in range(nc, len(leaves)) if tangents[i] is not None]
    carry_t = [tangents[i] if tangents[i] is not None else fnp.zeros_like(leaves[i]) for i in floats]

    def both(state: tuple[list[Any], list[Any]], at: tuple[list[Any], list[Any]]) -> Any:
        carry, t_carry = state
        x, t_x = at
        point = list(carry) + list(x)
        diff = floats + moving

        def of_diff(*d: Any) -> tuple[Any, ...]:
            full = list(point)
            for i, v in zip(diff, d):
                full[i] = v
            return tuple(step(*full))
        out, t_out = jvp(of_diff, tuple(point[i] for i in diff), tuple(t_carry) + tuple(t_x))
        new_t = [t_out[i] for i in floats]
        return (list(out[:nc]), new_t), (list(t_out[nc:]), list(carry), list(t_carry))

    (_, t_final), (t_ys, _, t_entering) = scan(both, (list(leaves[:nc]), carry_t),
                                               (list(leaves[nc:]), [tangents[i] for i in moving]),
                                               length=spec.length, reverse=spec.reverse)
    by_carry = dict(zip(floats, zip(t_final, t_entering)))
    ny = spec.n_y
    out_t: list[Any] = []
    for i in range(nc):
        out_t.append(by_carry[i][0] if i in by_carry else fnp.zeros_like(ans[i]))
    out_t.extend(t_ys[:ny])
    for i in range(nc):
        out_t.append(by_carry[i][1] if i in by_carry else fnp.zeros_like(ans[nc + ny + i]))
    return tuple(out_t)


def _scan_batch(args: list[Any], dims: list[Any], spec: _ScanSpec) -> tuple[Any, ...]:
    """One scan of the batched step (every carry batched along axis 0, batched xs along axis 1),
    so that a vmapped loop stays one loop (and one compiled loop under fg.jit)."""
    import funcgrad.numpy as fnp
    from .batching import vmap

    size = next((shape_of(a)[d] for a, d in zip(args, dims) if d is not None))
    nc = spec.n_carry
    if not spec.length:
        batched: tuple[Any, ...] = fallback(get_primitive(_scan), args, dims, size, {"spec": spec})
        return batched
    carries = [fnp.moveaxis(a, d, 0) if d is not None else fnp.broadcast_to(a, (size,) + tuple(shape_of(a)))
               for a, d in zip(args[:nc], dims[:nc])]
    xs = [fnp.moveaxis(a, d, 1) if d is not None else a for a, d in zip(args[nc:], dims[nc:])]
    step = vmap(_step_fn(spec), in_axes=(0,) * nc + tuple(None if d is None else 0 for d in dims[nc:]))

    def batched_step(carry: list[Any], x: list[Any]) -> tuple[list[Any], tuple[list[Any], list[Any]]]:
        out = step(*carry, *x)
        return list(out[:nc]), (list(out[nc:]), list(carry))

    final, (ys, entering) = scan(batched_step, carries, xs, length=spec.length, reverse=spec.reverse)
    outs = tuple(final) + tuple(ys) + tuple(entering)
    return outs, (0,) * nc + (1,) * (len(ys) + nc)


_scan = defprimitive(
    _scan_raw,
    name="scan",
    vjp_all=_scan_vjp_all_full,
    jvp_all=_scan_jvp_all,
    batch=_scan_batch,
    multiple_results=True,
)


def _scan_loop(e: Any) -> Loop | None:
    spec: _ScanSpec = e.kwargs["spec"]
    body = spec.bodies.get(avals(e.ins))
    return None if body is None else Loop(body, spec.n_carry, spec.n_xs, spec.length, spec.reverse)


register_loop(get_primitive(_scan), _scan_loop)


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None, reverse: bool = False
) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns
    ``(final_carry, stacked_ys)`` (JAX's ``lax.scan`` semantics).

    Differentiable in ``init`` and ``xs`` in both modes and to any order; the
    tape keeps only the carry entering each step. Traced values that ``f``
    needs must come in through ``init`` or ``xs``, not through a closure.

    Example::

        def step(h, x):
            h = fnp.tanh(0.5 * h + x)
            return h, h * h
        h_final, ys = fg.scan(step, fnp.zeros(3), xs)    # xs: (T, 3)
    """
    init_leaves, carry_def = tree_util.tree_flatten(init)
    xs_leaves, xs_def = tree_util.tree_flatten(xs)
    lengths: set[Any] = {shape_of(x)[0] if shape_of(x) else None for x in xs_leaves}
    if None in lengths:
        raise ValueError("scan: every leaf of xs needs a leading axis to scan over")
    if length is None:
        if len(lengths) != 1:
            raise ValueError(
                "scan: xs leaves have different leading sizes " + str(sorted(lengths))
                if lengths else "scan: give xs or length"
            )
        (length,) = lengths
    elif lengths and lengths != {length}:
        raise ValueError(f"scan: length={length} but xs has leading size(s) {sorted(lengths)}")
    leaves = list(init_leaves) + list(xs_leaves)
    _, base = _split(tuple(leaves), (), "the function given to scan")
    spec = _ScanSpec.__new__(_ScanSpec)
    for slot in _Spec.__slots__:
        setattr(spec, slot, getattr(base, slot))
    spec.f, spec.n_carry, spec.n_xs, spec.length, spec.reverse = f, len(init_leaves), len(xs_leaves), length, reverse
    y_def: Any = None  # set by the step function
    spec.carry_def, spec.xs_def, spec.y_def, spec.n_y = carry_def, (xs_def if xs is not None else None), y_def, 0
    spec.bodies = {}
    if not any(isinstance(x, Box) for x in leaves):
        out = _run(tuple(leaves), spec)
    else:
        out = _scan(*leaves, spec=spec)
    carry = tree_util.tree_unflatten(carry_def, list(out[: spec.n_carry]))
    ys = tree_util.tree_unflatten(spec.y_def, list(out[spec.n_carry:spec.n_carry + spec.n_y]))
    return carry, ys


def fori_loop(lower: int, upper: int, body: Callable[[Any, T], T], init: T) -> T:
    """``for i in range(lower, upper): val = body(i, val)``, as a scan (small tape).

    Example::

        fg.fori_loop(0, 10, lambda i, x: x * 0.5, 1.0)
    """
    import numpy as np

    idx = np.arange(lower, upper)
    carry: T
    carry, _ = scan(lambda c, i: (body(i, c), None), init, idx)
    return carry


# --------------------------------------------------------------------------
# while_loop, cond, switch
#
# Tracing is eager, so a predicate that is one value (plain, or traced by grad/jvp)
# is read and only the chosen branch / the iterations actually needed run: each runs
# traced like any other code, so forward and reverse mode see exactly what ran (reverse
# mode through while_loop works, beyond JAX). A predicate batched by vmap has one value
# per example: cond/switch run every branch and select per example; while_loop runs
# until every example is done, freezing the finished ones.


def _scalar_pred(p: Any, fn: str, what: str) -> Any:
    import funcgrad.numpy as fnp

    if tuple(fnp.shape(p)) != ():
        raise TypeError(f"{fn}: {what} must be a scalar, but it has shape {tuple(fnp.shape(p))}")
    return p


def _avals(tree: Any) -> tuple[Any, list[tuple[tuple[int, ...], Any]]]:
    import funcgrad.numpy as fnp
    from ..numpy._util import dtype

    leaves, treedef = tree_util.tree_flatten(tree)
    return treedef, [(tuple(fnp.shape(x)), dtype(x)) for x in leaves]


def _check_same(fn: str, names: tuple[str, str], a: Any, b: Any) -> None:
    """Branch outputs (or loop carries) must agree in structure, shapes and dtypes."""
    (da, va), (db, vb) = _avals(a), _avals(b)
    if da != db:
        raise TypeError(
            f"{fn}: {names[0]} and {names[1]} must have the same pytree structure, but got {da} and {db}"
        )
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(a)[0]]
    for path, (sa, ta), (sb, tb) in zip(paths, va, vb):
        if sa != sb or ta != tb:
            raise TypeError(
                f"{fn}: {names[0]} and {names[1]} must have the same shapes and dtypes, but at "
                f"{path or 'the output'} they are {ta}{list(sa)} and {tb}{list(sb)}"
            )


def _select(pred: Any, on_true: Any, on_false: Any) -> Any:
    import funcgrad.numpy as fnp

    return tree_util.tree_map(lambda a, b: fnp.where(pred, a, b), on_true, on_false)


def _truth(p: Any) -> bool:
    from ..core import unbox_all

    return bool(unbox_all(p))


def while_loop(cond_fun: Callable[[T], Any], body_fun: Callable[[T], T], init_val: T) -> T:
    """``val = init_val; while cond_fun(val): val = body_fun(val)`` (JAX's ``lax.while_loop``).

    Differentiable in forward and reverse mode (the iterations that actually run
    are recorded; JAX refuses reverse mode here) and batched by vmap: examples
    whose condition is false stop changing while the others go on, until all
    are done. The carry must keep its pytree structure, shapes and dtypes.

    Example::

        fg.while_loop(lambda x: x < 10.0, lambda x: x * 2.0, 1.0)   # 16.0
    """
    val = init_val
    pred = _scalar_pred(cond_fun(val), "while_loop", "cond_fun's result")
    if is_staged(pred) and not is_batched(pred):  # inside fg.jit: one equation, a real loop
        leaves, treedef = tree_util.tree_flatten(val)
        out = staged_while(_flat(lambda v: (cond_fun(v),), treedef, []), _flat(body_fun, treedef, [treedef]),
                           leaves)
        final: T = tree_util.tree_unflatten(treedef, list(out))
        return final
    while True:
        if is_batched(pred):
            if not _any(pred):
                return val
            new = body_fun(val)
            _check_same("while_loop", ("body_fun's result", "the carry init_val"), new, val)
            val = _select(pred, new, val)
        else:
            if not _truth(pred):
                return val
            new = body_fun(val)
            _check_same("while_loop", ("body_fun's result", "the carry init_val"), new, val)
            val = new
        pred = _scalar_pred(cond_fun(val), "while_loop", "cond_fun's result")


def _any(pred: Any) -> bool:
    from ..backend import namespace_of
    from ..core import unbox_all

    raw = unbox_all(pred)
    return bool(namespace_of(raw).any(raw))


def cond(pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)`` (JAX's ``lax.cond``).

    ``pred`` is a scalar (bool, or a number: nonzero is true). When it is one
    value, only the chosen branch runs (and is differentiated). Under ``vmap``
    with a batched ``pred`` both branches run and each example takes its own;
    the branches must then return the same pytree structure, shapes and dtypes.

    Example::

        fg.cond(x > 0, lambda x: x * 2.0, lambda x: -x, x)
    """
    _scalar_pred(pred, "cond", "pred")
    if is_staged(pred) and not is_batched(pred):  # inside fg.jit: one equation, real branches
        done = _staged_branches(pred, [false_fun, true_fun], operands, True)
        if done is not None:
            return done[0]
    elif not is_batched(pred):
        return true_fun(*operands) if _truth(pred) else false_fun(*operands)
    import funcgrad.numpy as fnp

    on_true, on_false = true_fun(*operands), false_fun(*operands)
    _check_same("cond", ("true_fun's output", "false_fun's output"), on_true, on_false)
    return _select(fnp.not_equal(pred, 0), on_true, on_false)


def switch(index: Any, branches: Sequence[Callable[..., Any]], *operands: Any) -> Any:
    """``branches[index](*operands)``, ``index`` clamped to the valid range (JAX's ``lax.switch``).

    Under ``vmap`` with a batched ``index`` every branch runs and each example
    takes its own; the branches must return the same structure, shapes and dtypes.

    Example::

        fg.switch(1, [fnp.sin, fnp.cos, fnp.tanh], x)   # fnp.cos(x)
    """
    import funcgrad.numpy as fnp
    from ..numpy._util import dtype

    branches = list(branches)
    if not branches:
        raise ValueError("switch: branches must be a non-empty sequence of functions")
    _scalar_pred(index, "switch", "index")
    if dtype(index).kind not in "iub":
        raise TypeError(f"switch: index must be an integer scalar, got dtype {dtype(index)}")
    last = len(branches) - 1
    if is_staged(index) and not is_batched(index):  # inside fg.jit: one equation, real branches
        done = _staged_branches(index, branches, operands, False)
        if done is not None:
            return done[0]
    elif not is_batched(index):
        from ..core import unbox_all

        return branches[min(max(int(unbox_all(index)), 0), last)](*operands)
    index = fnp.clip(index, 0, last)
    outs = [b(*operands) for b in branches]
    for k, o in enumerate(outs[1:], 1):
        _check_same("switch", ("branch 0's output", f"branch {k}'s output"), outs[0], o)
    result = outs[last]
    for k in range(last - 1, -1, -1):
        result = _select(fnp.equal(index, k), outs[k], result)
    return result


def _flat(fun: Callable[..., Any], in_def: Any, out_defs: list[Any]) -> Callable[..., tuple[Any, ...]]:
    """``fun`` of one pytree (of ``in_def``) as a function of its leaves returning leaves;
    the structure of each result is appended to ``out_defs`` (checked equal to the first)."""
    def flat(*leaves: Any) -> tuple[Any, ...]:
        out_leaves, out_def = tree_util.tree_flatten(fun(tree_util.tree_unflatten(in_def, list(leaves))))
        if out_defs and out_def != out_defs[0]:
            raise TypeError(f"the function must return the structure {out_defs[0]}, but returned {out_def}")
        out_defs.append(out_def)
        return tuple(out_leaves)
    return flat


def _staged_branches(index: Any, branches: Sequence[Callable[..., Any]], operands: tuple[Any, ...],
                     is_cond: bool) -> tuple[Any] | None:
    """The chosen branch's output recorded as one switch equation (in a 1-tuple), or None where
    a branch reads traced values through its closure: then every branch runs and one is selected."""
    leaves, treedef = tree_util.tree_flatten(operands)
    defs: list[list[Any]] = [[] for _ in branches]
    flats = [_flat(lambda ops, b=b: b(*ops), treedef, d) for b, d in zip(branches, defs)]
    try:
        out = staged_switch(index, flats, leaves, is_cond)
    except TypeError:
        if len({d[0] for d in defs if d}) > 1:
            fn = "cond" if is_cond else "switch"
            names = ("false_fun", "true_fun") if is_cond else ("branch 0", "branch 1")
            raise TypeError(f"{fn}: {names[0]}'s output and {names[1]}'s output must have the same pytree "
                            f"structure, but got {' and '.join(str(d[0]) for d in defs if d)}") from None
        raise
    if out is None:
        return None
    return (tree_util.tree_unflatten(next(d[0] for d in defs if d), list(out)),)
