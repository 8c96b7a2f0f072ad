"""scan: a loop with a differentiable carry whose tape stays small.

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
from ..numpy._batching import fallback
from .custom import _fill, _partial_jvp, _partial_vjp, _Spec, _split

__all__ = ["scan", "fori_loop"]

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
    __slots__ = ("f", "n_carry", "n_xs", "length", "reverse", "carry_def", "xs_def", "y_def", "n_y")

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
    out = _run(leaves, spec)
    spec.check_closure(out)
    return out


def _scan_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _ScanSpec) -> list[Any]:
    import funcgrad.numpy as fnp

    nc, ny = spec.n_carry, spec.n_y
    g = _fill(g[: nc + ny], ans[: nc + ny])
    g_carry = list(g[:nc])
    g_ys = g[nc:nc + ny]
    entering = ans[nc + ny:]
    xs = leaves[nc:]
    step = _step_fn(spec)
    n_leaves = nc + len(xs)
    diff = [i for i in range(n_leaves) if _is_float(leaves[i])]
    g_xs: list[list[Any]] = [[None] * spec.length for _ in xs]
    for t in reversed(list(_order(spec))):
        point = [c[t] for c in entering] + [x[t] for x in xs]
        cts = _partial_vjp(step, point, diff, tuple(g_carry) + tuple(gy[t] for gy in g_ys))
        by_leaf = dict(zip(diff, cts))
        g_carry = [by_leaf.get(i, fnp.zeros_like(point[i])) for i in range(nc)]
        for k in range(len(xs)):
            g_xs[k][t] = by_leaf.get(nc + k, fnp.zeros_like(point[nc + k]))
    result_by_leaf = {i: g_carry[i] for i in range(nc)}
    for k in range(len(xs)):
        result_by_leaf[nc + k] = fnp.stack(g_xs[k]) if spec.length else fnp.zeros_like(xs[k])
    return [result_by_leaf[i] for i in argnums]


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
    return _partial_jvp(lambda *ls: _run(ls, spec), leaves, tangents)


def _scan_batch(args: list[Any], dims: list[Any], spec: _ScanSpec) -> tuple[Any, ...]:
    size = next((shape_of(a)[d] for a, d in zip(args, dims) if d is not None))
    batched: tuple[Any, ...] = fallback(get_primitive(_scan), args, dims, size, {"spec": spec})
    return batched


_scan = defprimitive(
    _scan_raw,
    name="scan",
    vjp_all=_scan_vjp_all_full,
    jvp_all=_scan_jvp_all,
    batch=_scan_batch,
    multiple_results=True,
)


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
