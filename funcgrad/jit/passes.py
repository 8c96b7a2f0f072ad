"""Passes over a :class:`~funcgrad.jit.ir.Program`: what every backend runs first.

:func:`optimize` folds constants, drops identities (``x * 1``, ``x + 0``), merges
common subexpressions, lets ufuncs broadcast for themselves, removes dead code
(pure primitives only) and turns a contraction with a diagonal matrix built from
the identity into a row scaling (bit for bit: see :func:`diagonal_products`).
:func:`split_program` cuts a joint forward-and-backward program into the two
programs reverse mode over a staged call runs.

Example::

    prog = optimize(fg.make_program(f)(x))   # (make_program's programs are optimized already)
"""

from __future__ import annotations

from typing import Any, Callable

from .ir import Const, Eqn, Program, Var
from .kinds import is_gufunc, is_host_array, is_ufunc, makes_fresh, writes_out
from .known import ADD, BROADCAST_TO, MATMUL, MULTIPLY, SUBTRACT, TENSORDOT

__all__ = ["optimize", "split_program", "fold_constants", "identities", "common_subexpressions",
           "implicit_broadcasts", "dead_code", "diagonal_products", "elementwise_after_products",
           "register_rewrite", "REWRITES"]


REWRITES: list[Callable[[Program], None]] = []  # registered by higher layers (register_rewrite)


def register_rewrite(rewrite: Callable[[Program], None]) -> Callable[[Program], None]:
    """Run ``rewrite(prog)`` in :func:`optimize`, after dead-code elimination: a higher layer's rewrite of
    its own primitives (it must keep every result the program returns, bit for bit or as the layer
    documents). Returns ``rewrite``.

    Example::

        @register_rewrite
        def pool_before_relu(prog): ...
    """
    if rewrite not in REWRITES:
        REWRITES.append(rewrite)
    return rewrite


def optimize(prog: Program) -> Program:
    """Constant folding, identities (x * 1, x + 0), common-subexpression elimination,
    dead-code elimination, the registered rewrites (:func:`register_rewrite`), diagonal products;
    ``prog`` is rewritten in place and returned."""
    fold_constants(prog)
    identities(prog)
    common_subexpressions(prog)
    implicit_broadcasts(prog)
    dead_code(prog)
    for rewrite in REWRITES:
        rewrite(prog)
    diagonal_products(prog)
    elementwise_after_products(prog)
    return prog


PRODUCT_BYTES = 1 << 18  # products from this size (host arrays) have their elementwise reader moved up to them


def _makes_product(e: Eqn) -> bool:
    """A matrix product or a declared kernel (not elementwise) whose result is a new array (``dense``, a
    convolution ...)."""
    if e.multiple:
        return False
    if e.prim is MATMUL or is_gufunc(e.fn):
        return True
    return makes_fresh(e.fn, e.kwargs) and not is_ufunc(e.fn) and not writes_out(e.fn, e.kwargs)


def elementwise_after_products(prog: Program) -> None:
    """Move an elementwise call that is the last reader of a large host product's result up to right after
    that product, when its other arguments are ready there: it then reads the product while the product's
    last rows are still in cache (and can write into its buffer), instead of after unrelated calls that
    stream other arrays through the cache (the relu mask of a feed-forward layer's backward, which waited
    for the weight gradient's product). The moved call is pure and reads nothing made in between, so every
    result is the same."""
    eqns = prog.eqns
    made_at: dict[int, int] = {}
    last_read: dict[int, int] = {}
    for k, e in enumerate(eqns):
        for a in e.ins:
            if isinstance(a, Var):
                last_read[id(a)] = k
        for o in e.outs:
            made_at[id(o)] = k
    outputs = {id(o) for o in prog.outs if isinstance(o, Var)}
    moves: dict[int, list[int]] = {}  # product's index -> the indices of the calls moved after it
    moved: set[int] = set()
    for k, e in enumerate(eqns):
        if not (e.prim.pure and len(e.outs) == 1 and not e.multiple and writes_out(e.fn, e.kwargs)):
            continue
        ins = [a for a in e.ins if isinstance(a, Var)]
        for a in ins:
            j = made_at.get(id(a))
            if j is None or j >= k - 1 or last_read.get(id(a)) != k or id(a) in outputs:
                continue
            p = eqns[j]
            if not (_makes_product(p) and is_host_array(a.kind) and a.nbytes >= PRODUCT_BYTES):
                continue
            if j not in moved and all(made_at.get(id(b), -1) <= j for b in ins):
                moves.setdefault(j, []).append(k)
                moved.add(k)
                break
    if not moves:
        return
    order: list[Eqn] = []
    for k, e in enumerate(eqns):
        if k in moved:
            continue
        order.append(e)
        order.extend(eqns[m] for m in moves.get(k, ()))
    prog.eqns = order


def diagonal_products(prog: Program) -> None:
    """``tensordot(D, W, ((1,), (0,)))`` where ``D`` is the identity times vectors along its
    last axis (what reverse mode over ``vmap`` makes of the basis vectors: ``D = I * u * v``)
    becomes ``diagonal(D)[:, None] * W``: one elementwise pass instead of an n^3 product.
    The sums it skips add only signed zeros while everything is finite; the generated call
    checks that at run time and otherwise runs the product (host NumPy arrays only)."""
    diag: set[Var] = set()
    for e in prog.eqns:
        if e.prim is MULTIPLY and len(e.ins) == 2 and not e.kwargs and is_ufunc(e.fn):
            out = e.outs[0]
            if len(out.shape) != 2 or out.shape[0] != out.shape[1] or not is_host_array(out.kind):
                continue
            n = out.shape[0]
            for k in (0, 1):
                a, b = e.ins[k], e.ins[1 - k]
                if ((a in diag or _is_identity(a, n)) and isinstance(b, Var) and b.shape == (n,)
                        and b.dtype == out.dtype and is_host_array(b.kind)):
                    diag.add(out)
                    break
        elif (e.prim is TENSORDOT and len(e.ins) == 3 and not e.kwargs and e.ins[0] in diag
              and _axes_are(e.ins[2], ((1,), (0,)))):
            d, w, out = e.ins[0], e.ins[1], e.outs[0]
            if isinstance(w, Const):
                kind, dtype, shape = type(w.value), getattr(w.value, "dtype", None), getattr(w.value, "shape", ())
            elif isinstance(w, Var):
                kind, dtype, shape = w.kind, w.dtype, w.shape
            else:
                continue
            if is_host_array(kind) and dtype == d.dtype == out.dtype and d.dtype.kind == "f" and len(shape) == 2:
                e.fn = _diag_rows(e.fn, known_finite=isinstance(w, Const) and _all_finite(w.value))


def implicit_broadcasts(prog: Program) -> None:
    """Drop ``b = broadcast_to(a, s)`` where every use of ``b`` is a two-argument
    ufunc whose other argument already has shape ``s``: the ufunc broadcasts ``a``
    itself, to the same values."""
    uses: dict[Var, list[Eqn]] = {}
    for e in prog.eqns:
        for a in e.ins:
            if isinstance(a, Var):
                uses.setdefault(a, []).append(e)
    outs = {o for o in prog.outs if isinstance(o, Var)}
    for e in prog.eqns:
        if e.prim is not BROADCAST_TO or e.kwargs or not isinstance(e.ins[0], Var) or e.outs[0] in outs:
            continue
        b, a = e.outs[0], e.ins[0]
        users = uses.get(b, [])
        if not users or a.dtype != b.dtype or a.kind is not b.kind:
            continue
        ok = True
        for u in users:
            others = [x for x in u.ins if x is not b]
            if not (is_ufunc(u.fn) and not u.kwargs and len(u.ins) == 2 and len(others) == 1
                    and isinstance(others[0], Var) and others[0].shape == b.shape):
                ok = False
                break
        if ok:
            for u in users:
                u.ins = [a if x is b else x for x in u.ins]


def identities(prog: Program) -> None:
    """``x * 1``, ``1 * x``, ``x + 0``, ``0 + x``, ``x - 0`` where the result is ``x``
    exactly (same shape, dtype and type: the constant neither broadcasts nor casts)."""
    subst: dict[Var, Any] = {}
    kept = []
    unit = {MULTIPLY: (1, (0, 1)), ADD: (0, (0, 1)), SUBTRACT: (0, (1,))}
    for e in prog.eqns:
        e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
        rule = unit.get(e.prim)
        if rule is not None and len(e.ins) == 2 and not e.kwargs and e.prim.pure:
            value, positions = rule
            out = e.outs[0]
            for k in positions:
                other = e.ins[1 - k]
                if (isinstance(other, Var) and _is_constant(e.ins[k], value) and other.shape == out.shape
                        and other.dtype == out.dtype and other.kind is out.kind):
                    subst[out] = other
                    break
            else:
                kept.append(e)
            continue
        kept.append(e)
    prog.eqns = kept
    prog.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in prog.outs]


def fold_constants(prog: Program) -> None:
    kept = []
    subst: dict[Var, Any] = {}
    for e in prog.eqns:
        e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
        if e.prim.pure and not any(isinstance(a, Var) for a in e.ins):
            args = [a.value if isinstance(a, Const) else a for a in e.ins]
            try:
                out = e.fn(*args, **e.kwargs)
            except Exception:  # leave it to run time, where it raises for real
                kept.append(e)
                continue
            outs = out if e.multiple else (out,)
            for v, val in zip(e.outs, outs):
                subst[v] = prog.new_const(val)
            continue
        kept.append(e)
    prog.eqns = kept
    prog.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in prog.outs]


def common_subexpressions(prog: Program) -> None:
    seen: dict[Any, list[Var]] = {}
    subst: dict[Var, Var] = {}
    kept = []
    for e in prog.eqns:
        e.ins = [subst.get(a, a) if isinstance(a, Var) else a for a in e.ins]
        if e.prim.pure:
            try:
                key = (id(e.prim), id(e.fn), tuple(_atom_key(a) for a in e.ins),
                       tuple(sorted((k, _atom_key(v)) for k, v in e.kwargs.items())))
                hash(key)
            except TypeError:
                key = None
            if key is not None:
                prev = seen.get(key)
                if prev is not None:
                    for a, b in zip(e.outs, prev):
                        subst[a] = b
                    continue
                seen[key] = e.outs
        kept.append(e)
    prog.eqns = kept
    prog.outs = [subst.get(o, o) if isinstance(o, Var) else o for o in prog.outs]


def dead_code(prog: Program) -> None:
    live = {o for o in prog.outs if isinstance(o, Var)}
    kept = []
    for e in reversed(prog.eqns):
        if not e.prim.pure or any(o in live for o in e.outs):
            kept.append(e)
            live.update(a for a in e.ins if isinstance(a, Var))
    kept.reverse()
    prog.eqns = kept
    used = {id(a) for e in prog.eqns for a in e.ins if isinstance(a, Const)}
    used |= {id(o) for o in prog.outs if isinstance(o, Const)}
    prog.consts = [c for c in prog.consts if id(c) in used]


def _is_constant(a: Any, value: float) -> bool:
    """Is the atom ``a`` a constant whose every entry equals ``value``?"""
    v = a.value if isinstance(a, Const) else a
    if isinstance(a, Var):
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v == value
    if type(v).__module__ == "numpy" and getattr(v, "dtype", None) is not None and v.dtype.kind in "fiu" and v.size:
        return bool((v == value).all())
    return False


def _atom_key(a: Any) -> Any:
    if isinstance(a, Var):
        return ("v", a.n)
    if isinstance(a, Const):
        v = a.value
        return ("c", id(v)) if hasattr(v, "shape") else ("k", type(v), v)
    if hasattr(a, "shape") and not isinstance(a, (int, float, complex)):
        return ("a", id(a))
    if isinstance(a, (float, complex)):
        return (type(a), repr(a))  # 0.0 and -0.0 are equal but not the same literal
    return (type(a), a)


def _is_identity(a: Any, n: int) -> bool:
    """A constant host identity matrix of order ``n``."""
    if not isinstance(a, Const) or not is_host_array(type(a.value)) or a.value.shape != (n, n):
        return False
    import numpy as np
    return bool(np.array_equal(a.value, np.eye(n)))


def _all_finite(a: Any) -> bool:
    import numpy as np
    return bool(np.isfinite(a).all())


def _axes_are(axes: Any, want: tuple[tuple[int, ...], ...]) -> bool:
    try:
        return tuple(tuple(int(i) for i in ax) for ax in axes) == want
    except TypeError:
        return False


def _diag_rows(product: Callable[..., Any], known_finite: bool) -> Callable[..., Any]:
    """``tensordot(D, W, axes)`` for a diagonal ``D``: its diagonal scales the rows of ``W``
    (exact while ``D`` and ``W`` are finite; otherwise the product itself)."""
    import numpy as np
    isfinite, multiply = np.isfinite, np.multiply

    def diag_rows(d: Any, w: Any, axes: Any) -> Any:
        scale = d.diagonal()
        if isfinite(scale).all() and (known_finite or isfinite(w).all()):
            return multiply(scale[:, None], w)
        return product(d, w, axes)
    return diag_rows


def split_program(joint: Program, n_primal_in: int, n_primal_out: int) -> tuple[Program, Program]:
    """Split a program ``(xs, cts) -> (outs, grads)`` into a forward program
    ``xs -> (outs, residuals)`` and a backward program ``(residuals, cts) -> grads``.

    Equations that depend on no cotangent input belong to the forward program; the
    forward values the backward equations read are its residuals (nothing is recomputed).
    """
    back_vars = set(joint.invars[n_primal_in:])
    fwd_eqns, bwd_eqns = [], []
    for e in joint.eqns:
        if any(isinstance(a, Var) and a in back_vars for a in e.ins):
            bwd_eqns.append(e)
            back_vars.update(e.outs)
        else:
            fwd_eqns.append(e)
    residuals: list[Var] = []
    seen: set[Var] = set()

    def need(a: Any) -> None:
        if isinstance(a, Var) and a not in back_vars and a not in seen:
            seen.add(a)
            residuals.append(a)

    for e in bwd_eqns:
        for a in e.ins:
            need(a)
    grads = joint.outs[n_primal_out:]
    for a in grads:
        need(a)
    fwd = joint.derived()
    fwd.invars = list(joint.invars[:n_primal_in])
    fwd.eqns = fwd_eqns
    fwd.consts = list(joint.consts)
    fwd.outs = list(joint.outs[:n_primal_out]) + residuals
    bwd = joint.derived()
    bwd.invars = residuals + list(joint.invars[n_primal_in:])
    bwd.eqns = bwd_eqns
    bwd.consts = list(joint.consts)
    bwd.outs = list(grads)
    return optimize(fwd), optimize(bwd)
