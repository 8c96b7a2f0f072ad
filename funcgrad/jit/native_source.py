"""The Python source numba compiles for a segment of lowerable equations.

The equations become *steps*, run in order:

- a **loop nest** over one shape runs a row of elementwise equations of that shape and
  the reductions of operands of that shape, element by element: a value read only inside
  its nest lives in a local (no temporary array); one read later is stored whole; a
  reduction accumulates as the nest goes (float64 accumulators for float32 sums, means
  and products; the accumulator is the result where the dtypes agree) and is ready after
  it. Shapes that differ only by size-1 axes count as the nest's shape (:func:`_placement`):
  (1, n) in a nest over (n,), (n, 1, n) in one over (n, n), and (n, 1) in one over (n, n),
  made in the outer loop before the inner one opens (an open nest over (n, 1) widens to
  (n, n) for that); never a shape whose elements the nest would make more than once;
- a **block** computes one whole-array result (a contraction, a concatenation, a scatter,
  a LAPACK call, looped over a stack of matrices) with loops of its own, or BLAS through
  ``np.dot`` for large matrices; two products ``A x`` and ``A v`` of one large matrix whose
  vectors are both ready are made together, in one pass over ``A``;
- a **view** makes no step: whoever reads it indexes its operand through the view's map
  of indices (:func:`funcgrad.jit.native_ops.view_map`).

An equation joins the open nest when it has the nest's shape (as above) and reads nothing
of that nest other than the element the nest holds where the equation is made (not a
reduction made in it, not another element through broadcasting or a view); otherwise an elementwise equation joins the latest earlier nest of its shape
that comes after the steps making its operands (one pass over memory less), and only
then does a new nest open.

The segment reads its array arguments as C-contiguous arrays (numba compiles for any
layout; a loop body, called at every step, reads them as they come); float64 ``exp``/``tanh`` call the inline functions of :mod:`funcgrad.jit.native_math`.

A **loop** or **branch** step (``fg.scan``, ``while_loop``, ``cond``/``switch``) calls
its bodies, each generated as a function of its own (:meth:`_Source.loop`).

Example::

    print(segment_source(segment))   # def segment(v0, c1): ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import native_complex, native_math
from .native_gather import check_lines
from .ir import Const, Eqn, Var
from .kinds import is_host_array
from .loops import Branches, WhileLoop, loop_of
from .native_ops import (complex_elementwise, INTS, is_int_scalar, ASTYPE, COMPARISONS, CONCATENATE, INDEX_ADD, LINALG, POWER, POWERS, STACK, NATIVE_EXPR, NATIVE_EXPR_FLOAT64, SELECTIONS, WHERE, Contraction,
                         SPLIT, contraction, dtype_name, is_literal, kind_of, loop_consts, reduction, scatter_region,
                         reads_of, split_maps, view_map, index_of, linalg_batch, EINSUM, Einsum, einsum_plan, WINNER_MASK, UNINDEX, winner_region)

__all__ = ["segment_source", "BLAS_MIN_WORK", "SCRATCH_MAX_SIZE"]

# contractions of at least this many multiply-adds on matrices go to BLAS (numba's np.dot)
BLAS_MIN_WORK = 32 * 32 * 32
# a loop or branch body's arrays of at most this many elements are buffers made once before the
# loop (two sets, alternated) instead of at every step; larger ones are made per step (memory)
SCRATCH_MAX_SIZE = 4096


def _literal(value: Any, dtype: str) -> str:
    if dtype in native_complex.COMPLEX and not isinstance(value, bool):
        return native_complex.literal(value, dtype)
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int) and dtype in INTS:
        return f"np.{dtype}({value!r})"
    v = float(value)
    if v != v:
        text = "np.nan"
    elif v in (float("inf"), float("-inf")):
        text = "np.inf" if v > 0 else "-np.inf"
    else:
        text = repr(v)
    return f"np.{dtype}({text})"


def _is_number(value: Any) -> bool:
    """A Python number (a literal operand, written in the result's dtype by :func:`_literal`)."""
    return is_literal(value) or type(value) is complex


def _is_bool(a: Any) -> bool:
    return isinstance(a, (Var, Const)) and dtype_name(a) == "bool"


def _is_strided_array(a: Any) -> bool:
    """A host array argument of at least one axis: numba compiles the segment for arrays of any
    layout, whose every read multiplies strides (twice as slow on a transcendental 1e6 loop), so
    the segment reads it through ``np.ascontiguousarray`` (no copy when it is C-contiguous)."""
    if isinstance(a, Var):
        return is_host_array(a.kind) and len(a.shape) > 0
    return isinstance(a, Const) and is_host_array(type(a.value)) and np.ndim(a.value) > 0


def _counters(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{d}" for d in range(n)]


def _broadcast_index(s: tuple[int, ...], shape: tuple[int, ...], ix: list[str]) -> list[str]:
    """Indices into a value of shape ``s`` broadcast against ``shape`` (counters ``ix``)."""
    lead = len(shape) - len(s)
    return ["0" if d == 1 and shape[lead + j] != 1 else ix[lead + j] for j, d in enumerate(s)]


def _placement(s: tuple[int, ...], nest: tuple[int, ...]) -> list[str] | None:
    """Where a loop nest over ``nest`` (counters ``i0 ...``) computes the elements of a value of
    shape ``s``: index expressions, one per axis of ``s`` (``"0"`` on a size-1 axis), when each
    element is computed exactly once; None otherwise. ``s`` fits when it differs from ``nest``
    only by size-1 axes ((n, 1, n) in (n, n), (1, n) in (n,)), or when it broadcasts against
    ``nest`` along its trailing axes only ((n, 1) in (n, n): made in the outer loop, before the
    inner one opens). Not (n,) in (n, n): that would be computed once per row."""
    real = [d for d, n in enumerate(nest) if n != 1]
    mine = [j for j, n in enumerate(s) if n != 1]
    if [s[j] for j in mine] == [nest[d] for d in real]:  # the same axes, size-1 ones aside
        at = dict(zip(mine, real))
        return [f"i{at[j]}" if j in at else "0" for j in range(len(s))]
    lead = len(nest) - len(s)
    if lead < 0 or any(n != 1 and n != nest[lead + j] for j, n in enumerate(s)):
        return None
    varying = [lead + j for j in mine]
    if varying != real[:len(varying)]:  # a broadcast axis outside another: computed again per element
        return None
    return [f"i{lead + j}" if n != 1 else "0" for j, n in enumerate(s)]


def _depth(ix: list[str]) -> int:
    """The loops of a nest that a value at indices ``ix`` (from :func:`_placement`) is made in."""
    return max((int(i[1:]) + 1 for i in ix if i != "0"), default=0)


class _Source:
    """The generator of one segment's source (see the module docstring)."""

    def __init__(self, eqns: list[Eqn], ins: list[Any], outs: list[Any], helpers: list[str] | None = None,
                 scratch: bool = False) -> None:
        self.eqns, self.ins, self.outs = eqns, ins, outs
        self.helpers: list[str] = [] if helpers is None else helpers  # loop bodies' functions, shared
        # a body's small arrays are buffers its caller passes in (name, shape, dtype): None at the top
        self.scratch: list[tuple[str, tuple[int, ...], str]] | None = [] if scratch else None
        self.kind: dict[Var, str] = {}
        self.eqn_of: dict[Var, Eqn] = {}
        self.maps: dict[Var, Any] = {}
        for e in eqns:
            k = kind_of(e)
            assert k is not None, e
            maps = (split_maps(e) if e.prim is SPLIT else [view_map(e)]) if k == "view" else [None] * len(e.outs)
            for o, mapping in zip(e.outs, maps):  # type: ignore[arg-type]
                self.kind[o] = k
                self.eqn_of[o] = e
                if k == "view":
                    self.maps[o] = mapping
        self.step_of: dict[Var, int] = {}
        self.steps: list[tuple[str, Any, list[Eqn]]] = []  # ("nest", shape, eqns) | ("block", None, [e])
        # where a nest computes each of its values (a reduction: its operand), in the nest's counters
        self.index_of: dict[Var, list[str]] = {}
        self._make_steps()
        self.stored = self._stored()
        self.wanted = {a for e in eqns for a in reads_of(e) if isinstance(a, Var)} | {o for o in outs if isinstance(o, Var)}
        self.lines: list[str] = []
        self.temps = 0
        self.paired = self._shared_matrix_pairs()

    # -- structure -------------------------------------------------------------------------------

    def root(self, a: Any) -> Any:
        while isinstance(a, Var) and a in self.maps:
            a = self.eqn_of[a].ins[0]
        return a

    def _made_here(self, a: Any) -> bool:
        return isinstance(a, Var) and a in self.kind and a not in self.maps

    def _make_steps(self) -> None:
        open_nest: int | None = None
        for e in self.eqns:
            o = e.outs[0]
            k = self.kind[o]
            if k == "view":
                continue
            if k in ("block", "loop"):
                self.steps.append((k, None, [e]))
                for out in e.outs:
                    self.step_of[out] = len(self.steps) - 1
                open_nest = None
                continue
            shape = tuple(e.ins[0].shape) if k == "reduce" else tuple(o.shape)
            target: int | None = None
            ix = None if open_nest is None else self._fit(e, shape, open_nest)
            if ix is None and open_nest is not None:
                ix = self._widen(e, shape, open_nest)
            if ix is not None:
                target = open_nest
            elif k == "elementwise":
                target, ix = self._earlier_nest(e, shape)
            if target is None or ix is None:
                self.steps.append(("nest", shape, []))
                open_nest = target = len(self.steps) - 1
                ix = ["0" if n == 1 else f"i{d}" for d, n in enumerate(shape)]  # (= _placement(shape, shape))
            self.steps[target][2].append(e)
            self.step_of[o] = target
            self.index_of[o] = ix

    def _earlier_nest(self, e: Eqn, shape: tuple[int, ...]) -> tuple[int | None, list[str] | None]:
        """An earlier loop nest that the elementwise ``e`` (of ``shape``) can join (one pass less):
        the latest one after every step that makes an operand of ``e`` that :meth:`_fit` admits,
        and where; (None, None) where there is none."""
        made = {self.step_of[r] for a in e.ins for r in [self.root(a)] + self._index_values(a) if self._made_here(r)}
        first = max(made, default=0)
        for j in range(len(self.steps) - 1, first - 1, -1):
            if self.steps[j][0] == "nest":
                ix = self._fit(e, shape, j)
                if ix is not None:
                    return j, ix
        return None, None

    def _fit(self, e: Eqn, shape: tuple[int, ...], nest: int) -> list[str] | None:
        """Where ``nest`` would compute ``e`` (an elementwise equation of ``shape``, or a reduction
        of an operand of ``shape``): :func:`_placement`, provided every value of that nest that
        ``e`` reads is the element the nest holds at that point (not a reduction made in it, not
        another element through broadcasting or a view); None where ``e`` does not fit."""
        ix = _placement(shape, self.steps[nest][1])
        if ix is None:
            return None
        for a in e.ins:
            if any(self._made_here(v) and self.step_of.get(v) == nest for v in self._index_values(a)):
                return None  # an advanced index made in this nest may be read at another element
            r = self.root(a)
            if not self._made_here(r) or self.step_of.get(r) != nest:
                continue
            if self.kind[r] == "reduce" or self._index_at_root(a, shape, ix) != self.index_of[r]:
                return None
        return ix

    def _widen(self, e: Eqn, shape: tuple[int, ...], nest: int) -> list[str] | None:
        """Make the open ``nest`` loop over ``shape`` instead where its own shape fits in it
        (:func:`_placement`: (n, 1) -> (n, n), the column's work then done in the outer loop)
        and ``e`` then fits (:meth:`_fit`): where ``e`` is computed; None (nothing changed)
        otherwise."""
        what, old_shape, eqns = self.steps[nest]
        moved = _placement(old_shape, shape)
        if moved is None or len(shape) < len(old_shape) or shape == old_shape:
            return None
        at = {f"i{d}": i for d, i in enumerate(moved)}
        before = {e2.outs[0]: self.index_of[e2.outs[0]] for e2 in eqns}
        for o, ix in before.items():
            self.index_of[o] = [at.get(i, i) for i in ix]
        self.steps[nest] = (what, shape, eqns)
        fitted = self._fit(e, shape, nest)
        if fitted is None:
            self.index_of.update(before)
            self.steps[nest] = (what, old_shape, eqns)
        return fitted

    def _index_at_root(self, a: Any, shape: tuple[int, ...], ix: list[str]) -> list[str]:
        """The indices of :meth:`root` of ``a`` that reading ``a`` broadcast against a loop over
        ``shape`` at ``ix`` reads (through the index maps of views)."""
        at = _broadcast_index(tuple(a.shape), shape, ix)
        while a in self.maps:
            at = self.maps[a](at)
            a = self.eqn_of[a].ins[0]
        return at

    def _index_values(self, a: Any) -> list[Any]:
        """The program's index values the views leading to ``a`` read (an advanced index's)."""
        found: list[Any] = []
        while isinstance(a, Var) and a in self.maps:
            e = self.eqn_of[a]
            found.extend(v for v in e.ins[2:] if isinstance(v, Var))
            a = e.ins[0]
        return found

    def _blas_matvec(self, e: Eqn) -> Contraction | None:
        """``e`` as a matrix-vector product large enough for BLAS (:meth:`_contract`), or None."""
        c = contraction(e)
        if c is None or c.a_order is None or c.b_order is None or c.b_order != sorted(c.b_order):
            return None
        if dtype_name(e.outs[0]) in native_complex.COMPLEX:
            return None  # (matvec_pair is real)
        o = e.outs[0]
        work = 1
        for n in tuple(o.shape) + c.sizes:
            work *= n
        b_shape = tuple(c.b.shape) if isinstance(c.b, Var) else tuple(c.b.value.shape)
        if work < BLAS_MIN_WORK or not o.shape or b_shape != c.sizes or c.b in self.maps:
            return None
        return c

    def _shared_matrix_pairs(self) -> dict[int, tuple[int, Contraction, Contraction]]:
        """Matrix-vector products of one matrix (``A x`` and ``A v``, as in a Hessian-vector
        product) whose vectors are both ready at the first: its step -> (the second's step, both
        contractions); both are made there in one pass over ``A`` (:meth:`_contract_pair`)."""
        products = [(k, c) for k, (what, _, eqns) in enumerate(self.steps) if what == "block"
                    for c in [self._blas_matvec(eqns[0])] if c is not None]
        pairs: dict[int, tuple[int, Contraction, Contraction]] = {}
        taken: set[int] = set()
        for j, (k1, c1) in enumerate(products):
            for k2, c2 in products[j + 1:]:
                if k1 in taken or k2 in taken:
                    continue
                ready = not self._made_here(c2.b) or self.step_of[c2.b] < k1
                if (c2.a is c1.a and c2.a_order == c1.a_order and c2.sizes == c1.sizes and ready
                        and dtype_name(c2.b) == dtype_name(c1.b)):
                    pairs[k1] = (k2, c1, c2)
                    taken |= {k1, k2}
        return pairs

    def _stored(self) -> set[Var]:
        """Values made in a nest that must exist as whole arrays (read by another step or returned)."""
        stored: set[Var] = set()

        def need(a: Any, step: int | None) -> None:
            r = self.root(a)
            if self._made_here(r) and r.shape and self.kind[r] == "elementwise" and self.step_of[r] != step:
                stored.add(r)

        for k, (_, _, eqns) in enumerate(self.steps):
            for e in eqns:
                for a in e.ins:
                    need(a, k)
        for o in self.outs:
            need(o, None)
        return stored

    # -- reading values ----------------------------------------------------------------------------

    def value_at(self, a: Any, ix: list[str], step: int | None, dtype: str) -> str:
        """The expression for ``a`` at indices ``ix`` (one per axis of ``a``) inside ``step``."""
        if isinstance(a, Const) and _is_number(a.value):
            a = a.value
        if not isinstance(a, (Var, Const)):
            return _literal(a, dtype)
        if isinstance(a, Var) and a in self.maps:
            return self.value_at(self.eqn_of[a].ins[0], self.maps[a](ix), step, dtype)
        if isinstance(a, Var) and self._made_here(a):
            if not a.shape or (self.step_of[a] == step and self.kind[a] == "elementwise"):
                return a.name
            return f"a_{a.name}[{', '.join(ix)}]"
        kind = a.kind if isinstance(a, Var) else type(a.value)
        if not is_host_array(kind):
            return a.name  # a scalar argument
        return f"{a.name}[()]" if not ix else f"{a.name}[{', '.join(ix)}]"

    def read(self, a: Any, shape: tuple[int, ...], ix: list[str], step: int | None, dtype: str) -> str:
        """``a`` broadcast against a loop over ``shape`` with counters ``ix``."""
        s = a.shape if isinstance(a, Var) else tuple(getattr(a.value, "shape", ())) if isinstance(a, Const) else ()
        return self.value_at(a, _broadcast_index(tuple(s), shape, ix), step, dtype)

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * (depth + 1) + text)

    def alloc(self, name: str, shape: tuple[int, ...], dt: str, fill: str | None = None) -> None:
        """Array ``name`` of ``shape`` and dtype ``dt`` (``np.float64``...), of zeros or ``fill``
        where given: in a body, a small one is a buffer the caller made once (:data:`SCRATCH_MAX_SIZE`)."""
        size = 1
        for n in shape:
            size *= n
        if self.scratch is not None and shape and size <= SCRATCH_MAX_SIZE:
            self.scratch.append((name, tuple(shape), dt))
            if fill is not None:
                ix = _counters("i", len(shape))
                self.emit(self.loops(0, ix, shape), f"{name}[{', '.join(ix)}] = {fill}")
        elif fill is None:
            self.emit(0, f"{name} = np.empty({tuple(shape)!r}, {dt})")
        else:
            self.emit(0, f"{name} = np.full({tuple(shape)!r}, {fill}, {dt})")

    def copy_into(self, name: str, source: str, shape: tuple[int, ...], dt: str) -> None:
        """``name = a copy of the array source``, into a buffer where this is a body."""
        self.alloc(name, shape, dt)
        ix = _counters("i", len(shape))
        self.emit(self.loops(0, ix, shape), f"{name}[{', '.join(ix)}] = {source}[{', '.join(ix)}]")

    def store(self, depth: int, target: str, at: list[str], source: str, shape: tuple[int, ...]) -> None:
        """``target[at] = source``, where ``source`` is an array of ``shape`` (a row of ``target``),
        written element by element: numba compiles a whole-row store (``a[t] = row``) with an error
        path that formats the shapes into a string, seconds per rank pair in each new process
        (benchmarks/RESULTS.md, "row stores"); the element loop compiles in a fraction of that."""
        ex = _counters("e", len(shape))
        depth = self.loops(depth, ex, shape)
        self.emit(depth, f"{target}[{', '.join(at + ex)}] = {source}[{', '.join(ex)}]" if ex
                  else f"{target}[{', '.join(at)}] = {source}")

    def loops(self, depth: int, counters: list[str], shape: tuple[int, ...]) -> int:
        for d, (c, n) in enumerate(zip(counters, shape)):
            self.emit(depth + d, f"for {c} in range({n}):")
        return depth + len(shape)

    # -- steps -------------------------------------------------------------------------------------

    def nest(self, k: int, shape: tuple[int, ...], eqns: list[Eqn]) -> None:
        """One loop nest over ``shape``: each equation at its place (:func:`_placement`), in the
        loops it needs (a value of shape (n, 1) in a nest over (n, n) before the inner loop)."""
        ix = _counters("i", len(shape))
        for e in eqns:
            o = e.outs[0]
            odt = dtype_name(o)
            if self.kind[o] == "reduce":
                op, axes, keep = reduction(e)  # type: ignore[misc]
                acc_dt = ("complex128" if odt in native_complex.COMPLEX else "float64") if op in ("sum", "mean", "prod") \
                    else "bool_" if odt == "bool" else odt
                start = {"sum": "0.0", "mean": "0.0", "prod": "1.0", "max": "-np.inf", "min": "np.inf",
                         "any": "False", "all": "True"}[op]
                if o.shape:
                    self.alloc(f"acc_{o.name}", tuple(o.shape), f"np.{acc_dt}", start)
                else:
                    self.emit(0, f"acc_{o.name} = np.{acc_dt}({start})")
            elif o in self.stored:
                dt = "np.bool_" if odt == "bool" else f"np.{odt}"
                self.alloc(f"a_{o.name}", tuple(o.shape), dt)
        depth = 0
        for e in sorted(eqns, key=lambda e: _depth(self.index_of[e.outs[0]])):  # (stable: operands first)
            o = e.outs[0]
            at = self.index_of[o]
            while depth < _depth(at):
                self.emit(depth, f"for {ix[depth]} in range({shape[depth]}):")
                depth += 1
            if self.kind[o] == "reduce":
                self._accumulate(e, tuple(e.ins[0].shape), at, k, depth)
                continue
            self.emit(depth, f"{o.name} = {self._elementwise(e, tuple(o.shape), at, k)}")
            if o in self.stored:
                self.emit(depth, f"a_{o.name}[{', '.join(at)}] = {o.name}")
        for e in eqns:
            o = e.outs[0]
            if self.kind[o] != "reduce":
                continue
            op, axes, _ = reduction(e)  # type: ignore[misc]
            odt = dtype_name(o)
            count = 1
            for a in axes:
                count *= e.ins[0].shape[a]
            value = f"acc_{o.name} / {float(count)!r}" if op == "mean" else f"acc_{o.name}"
            checked = op == "prod" and odt in native_complex.COMPLEX  # (NumPy's special values: the replay's)
            if checked and not o.shape:
                value = f"{native_complex.FINITE}({value})"
            same = odt == "bool" or (op != "mean" and (op in ("max", "min") or odt == "float64"))
            if same and o.shape:  # the accumulator is the result (no copy)
                self.emit(0, f"a_{o.name} = acc_{o.name}")
            elif odt == "bool":
                self.emit(0, f"{o.name} = {value}")
            elif o.shape:
                self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}")
                rx = _counters("i", len(o.shape))
                cell = ", ".join(rx)
                acc = f"{native_complex.FINITE}(acc_{o.name}[{cell}])" if checked else f"acc_{o.name}[{cell}]"
                self.emit(self.loops(0, rx, tuple(o.shape)), f"a_{o.name}[{cell}] = np.{odt}({acc}"
                          + (f" / {float(count)!r})" if op == "mean" else ")"))
            else:
                self.emit(0, f"{o.name} = np.{odt}({value})")

    def _elementwise(self, e: Eqn, shape: tuple[int, ...], ix: list[str], k: int) -> str:
        o = e.outs[0]
        odt = dtype_name(o)
        if complex_elementwise(e):
            return self._complex(e, shape, ix, k)
        if e.prim in COMPARISONS:
            dts = [dtype_name(a) if isinstance(a, Var) else dtype_name(a.value) for a in e.ins
                   if isinstance(a, (Var, Const)) and not (isinstance(a, Const) and is_literal(a.value))]
            args = [self.read(a, shape, ix, k, dts[0]) for a in e.ins]
            return COMPARISONS[e.prim].format(*args)
        if e.prim is WHERE:
            c, x, y = (self.read(a, shape, ix, k, odt) for a in e.ins)
            return f"({x} if {c} else {y})"
        if e.prim is ASTYPE:
            return f"np.{odt}({self.read(e.ins[0], shape, ix, k, odt)})"
        args = [f"np.{odt}({self.read(a, shape, ix, k, odt)})" if _is_bool(a) or is_int_scalar(a)
                else self.read(a, shape, ix, k, odt) for a in e.ins]
        if e.prim in SELECTIONS:
            return SELECTIONS[e.prim].format(*args)
        if e.prim is POWER:
            p = e.ins[1].value if isinstance(e.ins[1], Const) else e.ins[1]
            if is_literal(p) and not isinstance(p, bool) and float(p) in POWERS:
                return f"np.{odt}(" + POWERS[float(p)].format(f"({args[0]})", t=f"np.{odt}") + ")"
        table = NATIVE_EXPR_FLOAT64 if odt == "float64" and e.prim in NATIVE_EXPR_FLOAT64 else NATIVE_EXPR
        return f"np.{odt}(" + table[e.prim].format(*args, t=f"np.{odt}") + ")"

    def _complex(self, e: Eqn, shape: tuple[int, ...], ix: list[str], k: int) -> str:
        """An elementwise equation with a complex result, or a real part of a complex value
        (:mod:`funcgrad.jit.native_complex`): operands converted to the result's dtype first."""
        o = e.outs[0]
        odt = dtype_name(o)
        if e.prim in native_complex.COMPLEX_PARTS:
            x = self.read(e.ins[0], shape, ix, k, dtype_name(e.ins[0]))
            if dtype_name(e.ins[0]) not in native_complex.COMPLEX:  # real or imag of a real value
                return x if e.prim is native_complex.REAL else f"np.{odt}(0.0)"
            return f"np.{odt}(" + native_complex.COMPLEX_PARTS[e.prim].format(f"({x})") + ")"

        def operand(a: Any) -> str:
            value = self.read(a, shape, ix, k, odt)
            converted = not isinstance(a, (Var, Const)) or (isinstance(a, Const) and _is_number(a.value))
            return value if converted or dtype_name(a) == odt else f"np.{odt}({value})"
        if e.prim is WHERE:
            c = self.read(e.ins[0], shape, ix, k, "bool")
            return f"({operand(e.ins[1])} if {c} else {operand(e.ins[2])})"
        if e.prim is ASTYPE:
            return operand(e.ins[0])
        if e.prim is POWER:  # integer literal exponents: NumPy's products (and a division), exactly
            p = e.ins[1].value if isinstance(e.ins[1], Const) else e.ins[1]
            if is_literal(p) and not isinstance(p, bool) and float(p) in native_complex.INTEGER_POWERS:
                return f"np.{odt}({native_complex.FINITE}(" + POWERS[float(p)].format(
                    f"({operand(e.ins[0])})", t=f"np.{odt}") + "))"
        return f"np.{odt}(" + native_complex.COMPLEX_EXPR[e.prim].format(
            *(operand(a) for a in e.ins), t=f"np.{odt}") + ")"

    def _accumulate(self, e: Eqn, shape: tuple[int, ...], ix: list[str], k: int, depth: int) -> None:
        o = e.outs[0]
        op, axes, keep = reduction(e)  # type: ignore[misc]
        x = self.read(e.ins[0], shape, ix, k, dtype_name(o))
        if o.shape:
            at = [("0" if d in axes else i) for d, i in enumerate(ix)] if keep else \
                [i for d, i in enumerate(ix) if d not in axes]
            acc = f"acc_{o.name}[{', '.join(at)}]"
        else:
            acc = f"acc_{o.name}"
        if op in ("any", "all"):
            self.emit(depth, f"if {'' if op == 'any' else 'not '}{x}:")
            self.emit(depth + 1, f"{acc} = {op == 'any'}")
        elif op in ("sum", "mean"):
            self.emit(depth, f"{acc} += {x}")
        elif op == "prod":
            self.emit(depth, f"{acc} *= {x}")
        else:  # max/min: NaN wins, as in NumPy
            self.emit(depth, f"t_{o.name} = {x}")
            cmp = ">" if op == "max" else "<"
            self.emit(depth, f"if t_{o.name} {cmp} {acc} or t_{o.name} != t_{o.name}:")
            self.emit(depth + 1, f"{acc} = t_{o.name}")

    def block(self, k: int, e: Eqn) -> None:
        o = e.outs[0]
        odt = dtype_name(o)
        if e.prim in LINALG:
            batch = linalg_batch(e)
            if batch:
                self._linalg_stack(k, e, batch)
                return
            args = [f"np.ascontiguousarray({self._whole(a, k)})" for a in e.ins]
            call = LINALG[e.prim].format(*args)
            if len(e.outs) > 1:
                self.emit(0, f"{', '.join('a_' + x.name for x in e.outs)} = {call}")
            elif o.shape:
                self.emit(0, f"a_{o.name} = {call}")
            else:
                self.emit(0, f"{o.name} = np.{odt}({call})")
            return
        if e.prim is STACK:
            axis = int(e.ins[0])
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}")
            for j, piece in enumerate(e.ins[1:]):
                ix = _counters("i", len(piece.shape))
                depth = self.loops(0, ix, tuple(piece.shape))
                at = ix[:axis] + [str(j)] + ix[axis:]
                self.emit(depth, f"a_{o.name}[{', '.join(at)}] = {self.value_at(piece, ix, k, odt)}")
            return
        if e.prim is CONCATENATE:
            axis = int(e.ins[0]) % len(o.shape)
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}")
            offset = 0
            for piece in e.ins[1:]:
                ix = _counters("i", len(piece.shape))
                depth = self.loops(0, ix, tuple(piece.shape))
                at = [f"{offset} + {i}" if d == axis and offset else i for d, i in enumerate(ix)]
                self.emit(depth, f"a_{o.name}[{', '.join(at)}] = {self.value_at(piece, ix, k, odt)}")
                offset += piece.shape[axis]
            return
        if k in self.paired:
            self._contract_pair(k, e, self.steps[self.paired[k][0]][2][0], *self.paired[k][1:])
            return
        if any(second == k for second, _, _ in self.paired.values()):
            return  # made with the first of its pair
        if e.prim is EINSUM:
            self._einsum(k, o, einsum_plan(e))  # type: ignore[arg-type]
            return
        c = contraction(e)
        if c is not None:
            self._contract(k, o, c)
            return
        if e.prim is WINNER_MASK:
            self._winner_mask(k, e)
            return
        base, values, mapping, region = scatter_region(e)
        if base is None:
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}", "0")
        else:
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}")
            ix = _counters("i", len(o.shape))
            depth = self.loops(0, ix, tuple(o.shape))
            self.emit(depth, f"a_{o.name}[{', '.join(ix)}] = {self.value_at(base, ix, k, odt)}")
        ix = _counters("i", len(region))
        depth = self.loops(0, ix, region)
        op = "+=" if e.prim in (INDEX_ADD, UNINDEX) else "="  # (repeated positions accumulate; set: last wins)
        self.emit(depth, f"a_{o.name}[{', '.join(mapping(ix))}] {op} {self.read(values, region, ix, k, odt)}")

    def _winner_mask(self, k: int, e: Eqn) -> None:
        """1 where a write to ``like[idx]`` (C order) is the last to its position, else 0: each
        position first records its last writer's number, then each write compares."""
        o = e.outs[0]
        mapping, region = winner_region(e)
        like = tuple(e.ins[0].shape if isinstance(e.ins[0], Var) else e.ins[0].value.shape)
        self.alloc(f"w_{o.name}", like, "np.int64", "-1")
        self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{dtype_name(o)}")
        ix = _counters("i", len(region))
        for write in (True, False):
            self.emit(0, f"n_{o.name} = 0")
            depth = self.loops(0, ix, region)
            at = f"w_{o.name}[{', '.join(mapping(ix))}]"
            self.emit(depth, f"{at} = n_{o.name}" if write else
                      f"a_{o.name}[{', '.join(ix)}] = 1.0 if {at} == n_{o.name} else 0.0")
            self.emit(depth, f"n_{o.name} += 1")

    def _linalg_stack(self, k: int, e: Eqn, batch: tuple[int, ...]) -> None:
        """A LAPACK call on each matrix of a stack (..., n, n) (:func:`~funcgrad.jit.native_ops.linalg_ok`):
        a loop over the result's batch axes, an operand's batch axes that broadcast read at 0."""
        ix = _counters("i", len(batch))
        args = []
        for a in e.ins:
            whole = self._whole(a, k)
            shape = tuple(a.shape if isinstance(a, Var) else a.value.shape)
            at = _broadcast_index(shape[:-2], batch, ix) if len(shape) > 1 else []
            args.append(f"np.ascontiguousarray({whole}[{', '.join(at)}])" if at else
                        f"np.ascontiguousarray({whole})")  # (a vector b, or an unbatched operand: the same for every matrix)
        for o in e.outs:
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{dtype_name(o)}")
        depth = self.loops(0, ix, batch)
        results = [f"x{k}_{j}" for j in range(len(e.outs))]
        self.emit(depth, f"{', '.join(results)} = {LINALG[e.prim].format(*args)}")
        for o, r in zip(e.outs, results):
            self.store(depth, f"a_{o.name}", ix, r, tuple(o.shape)[len(batch):])

    def _whole(self, a: Any, k: int) -> str:
        """A name for ``a`` as a whole array (a view is copied out first)."""
        if isinstance(a, Var) and a in self.maps:
            self.temps += 1
            t = f"m{self.temps}"
            shape = tuple(a.shape)
            self.alloc(t, shape, f"np.{dtype_name(a)}")
            ix = _counters("i", len(shape))
            depth = self.loops(0, ix, shape)
            self.emit(depth, f"{t}[{', '.join(ix)}] = {self.value_at(a, ix, k, dtype_name(a))}")
            return t
        return f"a_{a.name}" if self._made_here(a) else a.name

    def _function(self, prog: Any, consts: list[Const], k: int, copies: int = 1) -> tuple[str, list[list[str]]]:
        """The name of a new function computing the (body) program ``prog`` of its inputs and
        the constants ``consts``, then of its small arrays' buffers, made here once (before step
        ``k``'s loop) in ``copies`` sets: a loop alternates two, so that a step never writes
        into the buffers its carries were read from."""
        slot = len(self.helpers)
        self.helpers.append("")
        name = f"body_{slot}"
        body = _Source(prog.eqns, list(prog.invars) + consts, list(prog.outs), self.helpers, scratch=True)
        self.helpers[slot] = body.source(name)
        sets: list[list[str]] = []
        for c in range(copies):
            names = []
            for j, (_, shape, dt) in enumerate(body.scratch or []):
                names.append(f"s{k}_{slot}_{j}_{c}")
                self.alloc(names[-1], shape, dt)
            sets.append(names)
        return name, sets

    def _call(self, depth: int, result: str, name: str, args: list[str], sets: list[list[str]],
              parity: str) -> None:
        """``result = name(*args, *buffers)``, the buffers of the set ``parity`` (an int expression) picks."""
        if len(sets) == 1 or not sets[0]:
            self.emit(depth, f"{result} = {name}({', '.join(args + sets[0])})")
            return
        self.emit(depth, f"if {parity} % 2 == 0:")
        self.emit(depth + 1, f"{result} = {name}({', '.join(args + sets[0])})")
        self.emit(depth, "else:")
        self.emit(depth + 1, f"{result} = {name}({', '.join(args + sets[1])})")

    def _carries(self, k: int, ins: list[Any], likes: list[Var]) -> list[str]:
        """Locals holding a loop's carries, started from ``ins`` (arrays copied: the loop owns them)."""
        carries = []
        for j, (a, like) in enumerate(zip(ins, likes)):
            c = f"carry{k}_{j}"
            if like.shape:
                self.copy_into(c, self._whole(a, k), tuple(like.shape), f"np.{dtype_name(like)}")
            else:
                self.emit(0, f"{c} = {self.value_at(a, [], k, dtype_name(like))}")
            carries.append(c)
        return carries

    def _results(self, depth: int, outs: list[Var], values: list[str]) -> None:
        for o, v in zip(outs, values):
            self.emit(depth, f"{'a_' if o.shape else ''}{o.name} = {v}")

    def loop(self, k: int, e: Eqn) -> None:
        """A loop or branch equation: each body a function of its own, called from here."""
        lp = loop_of(e)
        assert lp is not None
        consts = loop_consts(lp)
        const_args = [c.name for c in consts]
        if isinstance(lp, Branches):
            funcs = [self._function(b, consts, k) for b in lp.bodies]
            args = [self._operand(a, k) for a in e.ins[1:]] + const_args
            index = self.value_at(e.ins[0], [], k, dtype_name(e.ins[0]))
            if lp.is_cond:
                self.emit(0, f"if {index}:")
                self._call(1, f"r{k}", funcs[1][0], args, funcs[1][1], "0")
                self.emit(0, "else:")
                self._call(1, f"r{k}", funcs[0][0], args, funcs[0][1], "0")
            else:
                self.emit(0, f"k{k} = min(max(int({index}), 0), {len(funcs) - 1})")
                for j, (name, sets) in enumerate(funcs):
                    self.emit(0, ("if" if j == 0 else "elif" if j < len(funcs) - 1 else "else") +
                              (f" k{k} == {j}:" if j < len(funcs) - 1 else ":"))
                    self._call(1, f"r{k}", name, args, sets, "0")
            self._results(0, e.outs, [f"r{k}[{j}]" for j in range(len(e.outs))])
            return
        if isinstance(lp, WhileLoop):
            (cond_fn, cond_sets), (body_fn, body_sets) = (self._function(lp.cond, consts, k),
                                                          self._function(lp.body, consts, k, 2))
            carries = self._carries(k, list(e.ins), list(lp.body.invars))
            args = carries + const_args
            self.emit(0, f"w{k} = 0")
            self.emit(0, "while True:")
            self._call(1, f"q{k}", cond_fn, args, cond_sets, "0")
            self.emit(1, f"if not q{k}[0]:")
            self.emit(2, "break")
            self._call(1, f"r{k}", body_fn, args, body_sets, f"w{k}")
            self.emit(1, f"w{k} += 1")
            for j, c in enumerate(carries):
                self.emit(1, f"{c} = r{k}[{j}]")
            self._results(0, e.outs, carries)
            return
        body, nc, nx = lp.body, lp.n_carry, lp.n_xs
        fname, sets = self._function(body, consts, k, 2)
        carries = self._carries(k, e.ins[:nc], body.invars[:nc])
        xs = [self._whole(a, k) for a in e.ins[nc:nc + nx]]
        ny = len(body.outs) - nc
        ys, entering = e.outs[nc:nc + ny], e.outs[nc + ny:]
        for o, like in list(zip(ys, body.outs[nc:])) + list(zip(entering, body.invars[:nc])):
            if o not in self.wanted:
                continue
            dt = "np.bool_" if dtype_name(like) == "bool" else f"np.{dtype_name(like)}"
            self.alloc(f"a_{o.name}", tuple(o.shape), dt)
        t = f"t{k}"
        self.emit(0, f"for {t} in range({lp.length - 1}, -1, -1):" if lp.reverse else f"for {t} in range({lp.length}):")
        for o, c in zip(entering, carries):
            if o in self.wanted:
                self.store(1, f"a_{o.name}", [t], c, tuple(o.shape)[1:])
        step_args = carries + [f"{x}[{t}]" for x in xs] + const_args
        self._call(1, f"r{k}", fname, step_args, sets, t)
        for j, c in enumerate(carries):
            self.emit(1, f"{c} = r{k}[{j}]")
        for j, o in enumerate(ys):
            if o in self.wanted:
                self.store(1, f"a_{o.name}", [t], f"r{k}[{nc + j}]", tuple(o.shape)[1:])
        self._results(0, e.outs[:nc], carries)

    def _operand(self, a: Any, k: int) -> str:
        """An operand passed whole to a body function."""
        if isinstance(a, (Var, Const)) and not (isinstance(a, Const) and is_literal(a.value)):
            shape = a.shape if isinstance(a, Var) else tuple(getattr(a.value, "shape", ()))
            kind = a.kind if isinstance(a, Var) else type(a.value)
            if is_host_array(kind) and (a in self.maps or not self._made_here(a) or shape):
                return self._whole(a, k)
            return self.value_at(a, [], k, dtype_name(a))
        return self.value_at(a, [], k, "float64")

    def _contract(self, k: int, o: Var, c: Contraction) -> None:
        work = 1
        for n in tuple(o.shape) + c.sizes:
            work *= n
        if c.a_order is not None and c.b_order is not None and work >= BLAS_MIN_WORK:
            kk = 1
            for n in c.sizes:
                kk *= n
            a = self._matrix(c.a, c.a_order, kk, False, k)
            b = self._matrix(c.b, c.b_order, kk, True, k)
            if o.shape:
                self.emit(0, f"a_{o.name} = np.dot({a}, {b}).reshape({tuple(o.shape)!r})")
            else:
                self.emit(0, f"{o.name} = np.dot({a}, {b})[0, 0]")
            return
        self._sum_of_products(k, o, c.sizes, [(c.a, c.a_index), (c.b, c.b_index)])

    def _sum_of_products(self, k: int, o: Var, sizes: tuple[int, ...], factors: list[tuple[Any, list[str]]]) -> None:
        """``o[r...] = sum over s... of the product of the factors`` (each an operand and its index
        expressions in the counters ``r0 ...``/``s0 ...``): one loop nest, accumulating in float64."""
        odt = dtype_name(o)
        oc, cc = _counters("r", len(o.shape)), _counters("s", len(sizes))
        if o.shape:
            self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{odt}")
        depth = self.loops(0, oc, tuple(o.shape))
        self.emit(depth, f"acc_{o.name} = np.{'complex128' if odt in native_complex.COMPLEX else 'float64'}(0.0)")
        inner = self.loops(depth, cc, sizes)
        product = " * ".join(self.value_at(a, ix, k, odt) for a, ix in factors)
        self.emit(inner, f"acc_{o.name} += {product}")
        if o.shape:
            self.emit(depth, f"a_{o.name}[{', '.join(oc)}] = np.{odt}(acc_{o.name})")
        else:
            self.emit(depth, f"{o.name} = np.{odt}(acc_{o.name})")

    def _einsum(self, k: int, o: Var, plan: Einsum) -> None:
        """An einsum: a matrix product where it is one (:meth:`_contract`: BLAS when large), else
        one loop nest over the result's and the summed labels."""
        if plan.blas is not None:
            self._contract(k, o, plan.blas)
        else:
            self._sum_of_products(k, o, plan.sizes, list(zip(plan.operands, plan.indices)))

    def _contract_pair(self, k: int, e1: Eqn, e2: Eqn, c1: Contraction, c2: Contraction) -> None:
        """``A x`` and ``A v`` (:meth:`_shared_matrix_pairs`) in one pass over ``A``
        (:data:`~funcgrad.jit.native_math.MATVEC_PAIR`)."""
        kk = 1
        for n in c1.sizes:
            kk *= n
        a = self._matrix(c1.a, c1.a_order, kk, False, k)  # type: ignore[arg-type]
        x, v = (f"np.ascontiguousarray({self._whole(c.b, k)}).reshape(({kk},))" for c in (c1, c2))
        self.emit(0, f"p{k}_0, p{k}_1 = {native_math.MATVEC_PAIR}({a}, {x}, {v})")
        for row, e in enumerate((e1, e2)):
            self.emit(0, f"a_{e.outs[0].name} = p{k}_{row}.reshape({tuple(e.outs[0].shape)!r})")

    def _matrix(self, a: Any, order: list[int], summed: int, summed_first: bool, k: int) -> str:
        """Operand ``a`` with its axes in ``order``, as a C-contiguous (M, K) matrix (``summed``
        = K; (K, N) where ``summed_first``): the array itself where it is one in that order, a
        copy through its view map otherwise."""
        shape = tuple(a.shape) if isinstance(a, Var) else tuple(a.value.shape)
        size = 1
        for n in shape:
            size *= n
        other = size // summed if summed else 0
        two = (summed, other) if summed_first else (other, summed)
        if a not in self.maps and order == sorted(order):
            name = f"a_{a.name}" if self._made_here(a) else a.name
            return f"np.ascontiguousarray({name}).reshape({two!r})"
        self.temps += 1
        t = f"m{self.temps}"
        permuted = tuple(shape[d] for d in order)
        self.alloc(t, permuted, f"np.{dtype_name(a)}")
        ix = _counters("i", len(permuted))
        at = [""] * len(order)
        for j, d in enumerate(order):
            at[d] = ix[j]
        depth = self.loops(0, ix, permuted)
        self.emit(depth, f"{t}[{', '.join(ix)}] = {self.value_at(a, at, k, dtype_name(a))}")
        return f"{t}.reshape({two!r})"

    # -- the function ----------------------------------------------------------------------------

    def source(self, name: str) -> str:
        for k, (what, shape, eqns) in enumerate(self.steps):
            if what == "nest":
                self.nest(k, shape, eqns)
            elif what == "loop":
                self.loop(k, eqns[0])
            else:
                self.block(k, eqns[0])
        rets: list[str] = []
        for o in self.outs:
            if isinstance(o, Var) and not self._made_here(o) and o not in self.maps:  # an input returned
                if is_host_array(o.kind) and o.shape:
                    self.copy_into(f"out{len(rets)}", o.name, tuple(o.shape), f"np.{dtype_name(o)}")
                    rets.append(f"out{len(rets)}")
                else:
                    rets.append(f"np.copy({o.name})" if is_host_array(o.kind) else o.name)
                continue
            if o in self.maps and o in self.outs[:len(rets)]:  # the same view returned again
                pass
            elif o in self.maps:  # a view returned: copied out
                if o.shape:
                    self.alloc(f"a_{o.name}", tuple(o.shape), f"np.{dtype_name(o)}")
                    ix = _counters("i", len(o.shape))
                    depth = self.loops(0, ix, tuple(o.shape))
                    self.emit(depth, f"a_{o.name}[{', '.join(ix)}] = {self.value_at(o, ix, None, dtype_name(o))}")
                else:
                    self.emit(0, f"{o.name} = {self.value_at(o, [], None, dtype_name(o))}")
            rets.append(f"a_{o.name}" if o.shape else o.name)
        checks = [c for e in self.eqns for made in [index_of(e)] if made is not None and kind_of(e) is not None
                  for c in made.checks]
        params, entry = [], []
        for a in self.ins:
            if _is_strided_array(a) and self.scratch is None:  # (a body's step is too short to gain)
                params.append(f"{a.name}_in")
                entry.append(f"    {a.name} = np.ascontiguousarray({a.name}_in)")
            else:
                params.append(a.name)
        params += [name for name, _, _ in self.scratch or []]
        return "".join(h + "\n\n" for h in self.helpers if h) + (f"def {name}({', '.join(params)}):\n"
                                                                  + "\n".join(entry + check_lines(checks) + self.lines)
                + f"\n    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})\n")


def segment_source(eqns: list[Eqn], ins: list[Any], outs: list[Var], name: str = "segment") -> str:
    """The Python source of the equations ``eqns`` as a numba-compilable function of the
    values ``ins`` returning ``outs``."""
    src = _Source(eqns, ins, outs).source(name)
    src = native_complex.SOURCE + "\n\n" + src if native_complex.uses(src) else src
    return native_math.SOURCE + "\n\n" + src if native_math.uses(src) else src
