"""Advanced indexing for the native backend: ``x[idx]`` where ``idx`` holds integer arrays
(static ones, recorded in the index, or the program's own values), static boolean masks or
traced integer scalars, as a map from the result's indices to ``x``'s.

NumPy's rules hold: every integer array (and every integer, once one array is there) is an
*advanced* entry; their shapes broadcast to one shape ``B``; the result has ``B``'s axes
where the advanced entries stand when they are adjacent, else in front, and one axis per
slice or ``None``. A static boolean mask is the integer arrays of its True positions.

Reading ``x[idx][r...]`` is reading ``x`` at ``idx_array[b...]`` on an advanced axis
(``b...`` the result's counters on ``B``'s axes, broadcast) and at the slice's affine
counter on a basic one. Static index arrays are checked and wrapped (negative positions)
when the program is compiled and passed in as constants; the program's own index values are
checked when the compiled function starts (:func:`check_lines`: ``IndexError``, as NumPy
raises) and wrapped where they are read.

Example::

    made = advanced_index((slice(None), np.array([0, -1])), [], (3, 4))
    made.mapping(["r0", "r1"])   # ['r0', 'ix<digest>_0[r1]'], made.shape == (3, 2)
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any, Callable

import numpy as np

from ..numpy.indexing import _Slot
from .ir import Const, Var
from .kinds import is_host_array

__all__ = ["AdvancedIndex", "advanced_index", "check_lines"]

_INTS = ("int64", "int32")


class AdvancedIndex:
    """``x[idx]`` as index expressions: :attr:`mapping` (the result's counters to ``x``'s index
    expressions), :attr:`shape` (the result's), :attr:`consts` (the static index arrays, checked
    and wrapped, as constants named by their values) and :attr:`checks` (the program's own index
    values to check at entry: (value, size of its axis, the axis))."""

    def __init__(self, mapping: Callable[[list[str]], list[str]], shape: tuple[int, ...], consts: list[Const],
                 checks: list[tuple[Var, int, int]]) -> None:
        self.mapping, self.shape, self.consts, self.checks = mapping, shape, consts, checks


def _int_value(a: Any) -> bool:
    """A value of the program usable as an index: a host integer array or an integer scalar."""
    if not isinstance(a, Var):
        return False
    dt = str(a.dtype)
    dt = "int64" if dt == "int" else dt
    return dt in _INTS and (is_host_array(a.kind) or (a.shape == () and a.kind in (int, np.int64, np.int32)))


def _scalar(v: Var) -> str:
    """The expression of an index value of no axes (a 0-d array is read with ``[()]``)."""
    return f"{v.name}[()]" if is_host_array(v.kind) else v.name


def _slice_ok(k: slice) -> bool:
    return all(v is None or (isinstance(v, numbers.Integral) and not isinstance(v, bool))
               for v in (k.start, k.stop, k.step))


def advanced_index(idx: Any, dyn: list[Any], shape: tuple[int, ...]) -> AdvancedIndex | None:
    """``x[idx]`` on ``x`` of ``shape`` for an index template (funcgrad.numpy.indexing's: the
    program's index values ``dyn`` stand in its slots) holding at least one integer array, static
    mask or index value of the program; None where it does not lower (basic indices only, a bad
    static index, a dynamic mask, an index of another dtype). A static array's constant is named
    by its values (its name is the same in every process: the compiled kernel's cache key)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    entries: list[tuple[str, Any]] = []  # ("new"|"ellipsis"|"slice"|"int"|"static"|"dynamic", value)
    arrays_seen = False  # (0-d integer arrays index as integers do)
    for item in idx:
        if isinstance(item, _Slot):
            a = dyn[item.k] if item.k < len(dyn) else None
            if not _int_value(a):
                return None
            entries.append(("dynamic", a))
        elif item is None:
            entries.append(("new", None))
        elif item is Ellipsis:
            entries.append(("ellipsis", None))
        elif isinstance(item, slice):
            if not _slice_ok(item):
                return None
            entries.append(("slice", item))
        elif isinstance(item, (bool, np.bool_)):
            return None
        elif isinstance(item, numbers.Integral):
            entries.append(("int", int(item)))
        elif isinstance(item, np.ndarray) and item.dtype == np.bool_ and item.ndim:
            entries.extend(("static", part) for part in np.nonzero(item))  # a mask: its True positions
        elif isinstance(item, np.ndarray) and item.dtype.kind in "iu":
            entries.append(("int", int(item)) if item.ndim == 0 else ("static", item))
            arrays_seen = True
        else:
            return None
    if not arrays_seen and not any(k in ("static", "dynamic") for k, _ in entries):
        return None  # basic indexing (funcgrad.jit.native_ops.basic_index)
    if sum(1 for k, _ in entries if k == "ellipsis") > 1:
        return None
    real = sum(1 for k, _ in entries if k not in ("new", "ellipsis"))
    if real > len(shape):
        return None
    full: list[tuple[str, Any]] = []
    for k, v in entries:
        full.extend([("slice", slice(None))] * (len(shape) - real) if k == "ellipsis" else [(k, v)])
    if not any(k == "ellipsis" for k, _ in entries):
        full.extend([("slice", slice(None))] * (len(shape) - real))

    consts: list[Const] = []
    checks: list[tuple[Var, int, int]] = []
    plan: list[tuple[str, Any]] = []  # per entry: ("new"|"slice"|"int"|"array", detail)
    arrays: list[tuple[int, ...]] = []
    d = 0
    for k, v in full:
        if k == "new":
            plan.append(("new", None))
            continue
        n = shape[d]
        if k == "slice":
            start, stop, step = v.indices(n)
            plan.append(("slice", (start, step, len(range(start, stop, step)))))
        elif k == "int":
            if not -n <= v < n:
                return None
            plan.append(("int", v % n))
        elif k == "static":
            if v.size and (v.min() < -n or v.max() >= n):
                return None  # (the replay raises IndexError)
            wrapped = np.ascontiguousarray(np.where(v < 0, v + n, v).astype(np.int64))
            digest = hashlib.sha1(repr(wrapped.shape).encode() + wrapped.tobytes()).hexdigest()[:16]
            c = Const(0, wrapped, f"ix{digest}_")  # (named by its value: equal arrays are one argument)
            consts.append(c)
            plan.append(("array", (c.name, tuple(v.shape), None)))
            arrays.append(tuple(v.shape))
        else:
            checks.append((v, n, d))
            plan.append(("array", (v.name, tuple(v.shape), n)) if v.shape else ("scalar", (_scalar(v), n)))
            if v.shape:
                arrays.append(tuple(v.shape))
        d += 1
    try:
        adv_shape = tuple(np.broadcast_shapes(*arrays))
    except ValueError:
        return None
    adv = [j for j, (k, _) in enumerate(plan) if k in ("int", "array", "scalar")]
    adjacent = adv[-1] - adv[0] + 1 == len(adv)
    basic = [v[2] if k == "slice" else 1 for k, v in plan if k in ("slice", "new")]
    first = sum(1 for k, _ in plan[:adv[0]] if k in ("slice", "new")) if adjacent and arrays else 0
    out_shape = tuple(basic[:first]) + adv_shape + tuple(basic[first:])
    rank = len(adv_shape)

    def mapping(ix: list[str]) -> list[str]:
        adv_ix = ix[first:first + rank]
        rest = iter(ix[:first] + ix[first + rank:])
        base: list[str] = []
        for k, v in plan:
            if k == "new":
                next(rest)
            elif k == "slice":
                start, step, _ = v
                i = next(rest)
                base.append(i if (start, step) == (0, 1) else f"{start} + {step} * {i}" if start else f"{step} * {i}")
            elif k == "int":
                base.append(str(v))
            elif k == "scalar":
                name, n = v
                base.append(f"({name} + {n} if {name} < 0 else {name})")
            else:
                name, s, n = v
                lead = rank - len(s)
                at = ["0" if m == 1 and adv_shape[lead + j] != 1 else adv_ix[lead + j] for j, m in enumerate(s)]
                read = f"{name}[{', '.join(at)}]"
                base.append(read if n is None else f"({read} + {n} if {read} < 0 else {read})")
        return base

    return AdvancedIndex(mapping, out_shape, consts, checks)


def check_lines(checks: list[tuple[Var, int, int]]) -> list[str]:
    """Source lines (at the function's top level) raising NumPy's ``IndexError`` where an index
    value of the program is out of bounds."""
    lines: list[str] = []
    seen: set[tuple[str, int, int]] = set()
    for v, n, axis in checks:
        if (v.name, n, axis) in seen:
            continue
        seen.add((v.name, n, axis))
        ix = [f"q{d}" for d in range(len(v.shape))]
        depth = 1
        for c, m in zip(ix, v.shape):
            lines.append("    " * depth + f"for {c} in range({m}):")
            depth += 1
        at = f"{v.name}[{', '.join(ix)}]" if ix else _scalar(v)
        lines.append("    " * depth + f"if {at} < -{n} or {at} >= {n}:")
        lines.append("    " * (depth + 1) + f"raise IndexError(\"index out of bounds for axis {axis} with size {n} "
                     f"(in fg.jit's native code)\")")
    return lines
