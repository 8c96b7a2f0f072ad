"""Indexing: ``x[idx]``, take, take_along_axis, and ``x.at[idx].set/add/...``.

Four primitives carry every derivative here, each linear, each rule another
of them, so higher orders come for free:

* ``_getitem(x, idx)``            gather ``x[idx]``                  (VJP: ``_unindex``)
* ``_unindex(g, idx, shape)``     zeros with ``g`` added at ``idx``   (VJP: ``_getitem``)
* ``_index_add(x, idx, v)``       ``x`` with ``v`` added at ``idx``
* ``_index_set(x, idx, v)``       ``x`` with ``v`` written at ``idx`` (last write wins)

Repeated integer indices accumulate in every scatter-add (``numpy.add.at`` on
the CPU, ``cupyx.scatter_add`` on CuPy), so the VJP of ``x[[0, 0]]`` puts both
cotangents on ``x[0]``.

The user's index is normalized once per call (:func:`normalize_index`) into a
tuple holding no traced values: indices carry no derivative, so a traced
index contributes its value and a tape node stores plain data. The one
exception is an index batched by ``vmap`` (one index per example): it is
passed to the primitive as an extra positional argument, where the batching
trace sees it, and the template tuple marks its place. NumPy's own indexing
does the rest: basic and advanced indices, boolean masks and NumPy's rules
for where the advanced dimensions go are NumPy's, and a bad index raises
NumPy's ``IndexError`` unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad.numpy as fnp

from ..core.trace import contains_box
from ..backend import device_constant, namespace_of, scatter, to_numpy
from ..core import Box, defprimitive, get_primitive, unbox_all
from ..core.batching import BatchBox
from ..core.staging import StagingBox, staged_error
from ._batching import fallback, move_to_front
from ._batching import batch_size as _batch_size, front as _front
from ._util import dtype, shape, unbroadcast
from .nondiff import _zeros_like  # plain zeros (fnp.zeros_like may give a ConstBox)

__all__ = [
    "take", "take_along_axis", "put_along_axis", "compress", "extract", "choose", "at", "unique", "bincount",
]


# --------------------------------------------------------------------------
# the index: normalization and classification

class _Slot:
    """Placeholder in an index template for the ``k``-th dynamic (vmap-batched) entry."""

    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k

    def __repr__(self) -> str:
        return f"<index entry {self.k}>"


def _strip(item: Any) -> Any:
    """Drop the differentiation boxes (and constant boxes) around an index entry.

    They hold the index's own value, which carries no derivative. A vmap box
    holds a whole batch of per-example indices, so it is kept: it travels as a
    positional argument of the primitive, where the batching trace sees it.
    """
    while isinstance(item, Box) and not isinstance(item, (BatchBox, StagingBox)):
        item = item._value
    if isinstance(item, StagingBox) and dtype(item).kind == "b":
        raise staged_error("a boolean mask index (its result's shape depends on the values)")
    return item


def _static_item(item: Any, x: Any) -> Any:
    """One index entry, stripped (lists become arrays of ``x``'s namespace)."""
    if isinstance(item, Box):
        return _strip(item)
    if isinstance(item, (list, tuple)):  # a sequence inside the index tuple: NumPy reads it as an array
        item = list(item)
        if any(isinstance(i, (Box, list, tuple)) for i in item):
            item = [_static_item(i, x) for i in item]
            if contains_box(item):
                return _strip(fnp.array(item))  # per-example entries: stacked, still batched
        if _has_device_array(item):  # a list of device scalars/arrays: an array on that device
            return fnp.array(item)
        try:  # static host data: it goes to the device (once, cached) when the index is used
            return np.asarray(item) if item else np.asarray(item, dtype=np.intp)
        except (ValueError, TypeError):
            return item  # ragged or odd: let the backend's indexing raise its own error
    return item


def _has_device_array(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_has_device_array(o) for o in obj)
    return hasattr(obj, "shape") and not isinstance(obj, (np.ndarray, np.generic)) and namespace_of(obj) is not np


def _on_device(idx: tuple[Any, ...], x: Any) -> tuple[Any, ...]:
    """``idx`` ready to index ``x``: for a device array, host index arrays become device
    constants (uploaded once and cached, see funcgrad.backend.device_constant) and host
    boolean masks become the integer arrays of their True positions (computed on the
    host: a device mask would need a device-to-host sync to size the result)."""
    if type(x) is np.ndarray or namespace_of(x) is np:
        return idx
    out: list[Any] = []
    changed = False
    for item in idx:
        if isinstance(item, np.ndarray) and item.ndim:
            changed = True
            if item.dtype == np.bool_:
                out.extend(device_constant(x, part) for part in np.nonzero(item))
            else:
                out.append(device_constant(x, item))
        else:
            out.append(item)
    return tuple(out) if changed else idx


def normalize_index(idx: Any, x: Any = None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``idx`` as ``(template, dyn)``: an index tuple holding no traced values,
    plus the vmap-batched entries, which the template marks with slots.

    ``x[i]`` and ``x[(i,)]`` mean the same in NumPy for every non-tuple ``i``,
    so the template is always a tuple. Lists become arrays of ``x``'s
    namespace. Outside vmap, ``dyn`` is empty and the template is the index.
    """
    if type(idx) is not tuple:
        idx = (idx,)
    for item in idx:
        if isinstance(item, (Box, list, tuple)):
            break
    else:
        return idx, ()
    template: list[Any] = []
    dyn: list[Any] = []
    for item in idx:
        item = _static_item(item, x)
        if isinstance(item, Box):
            template.append(_Slot(len(dyn)))
            dyn.append(item)
        else:
            template.append(item)
    return tuple(template), tuple(dyn)


def _fill(template: tuple[Any, ...], dyn: tuple[Any, ...]) -> tuple[Any, ...]:
    """The index with the dynamic entries put back in their slots."""
    if not dyn:
        return template
    return tuple(dyn[i.k] if isinstance(i, _Slot) else i for i in template)


def _is_int_array(item: Any) -> bool:
    """An integer index array of rank >= 1 (the only kind that can repeat a position)."""
    if isinstance(item, (int, slice, type(None), type(Ellipsis), np.integer, bool, np.bool_)):
        return False
    if isinstance(item, (list, tuple)):
        return True
    if isinstance(item, Box):
        return dtype(item).kind in "iu" and len(shape(item)) > 0
    d = getattr(item, "dtype", None)
    return d is not None and np.dtype(d).kind in "iu" and getattr(item, "ndim", 0) > 0


def may_repeat(idx: tuple[Any, ...]) -> bool:
    """True when ``idx`` holds an integer array, so a position can be hit twice."""
    for item in idx:
        if _is_int_array(item):
            return True
    return False


# --------------------------------------------------------------------------
# backend-neutral scatters (raw, in place)

def _materialized(out: Any, idx: tuple[Any, ...], v: Any) -> Any:
    """``v`` broadcast, in memory, to the shape of ``out[idx]`` (NumPy arrays).

    NumPy 2.4's ``ufunc.at`` reads broadcast (stride-0) values wrongly — it can
    add garbage — so the values it gets always have the full indexed shape.
    """
    if v is None:
        return v
    target = out[idx].shape
    v = np.asarray(v)
    if v.shape == target:
        return v
    if v.ndim > len(target):  # assignment drops leading unit axes of v
        v = v.reshape(v.shape[v.ndim - len(target):])
    return np.ascontiguousarray(np.broadcast_to(v, target))


def _scatter_ufunc_at(out: Any, idx: tuple[Any, ...], v: Any, ufunc: str = "add") -> None:
    """``numpy.<ufunc>.at(out, idx, v)`` on ``out``'s own backend (in place): ``numpy.add.at``,
    ``cupyx.scatter_add``/``scatter_max``/``scatter_min`` (see funcgrad.backend.scatter)."""
    scatter(out, _on_device(idx, out), v, ufunc)


def _copy(x: Any) -> Any:
    """A fresh, writable array with ``x``'s values (scalars become 0-d arrays)."""
    return namespace_of(x).array(x, copy=True)


def _occurrences(xshape: tuple[Any, ...], idx: tuple[Any, ...], like: Any) -> tuple[Any, ...]:
    """Where each element of ``x[idx]`` lands, and its rank among writes to the same place.

    Returns ``(targets, rank, is_last, ishape)``: flat over the indexed shape
    ``ishape`` (C order), the flat position in ``x`` each element refers to, how
    many earlier elements refer to the same position, and whether it is the
    last of them. Integer work only; nothing is differentiated. ``like`` is an
    array on the device the results should live on. A static (host) index is
    worked out on the host and its results are uploaded once (cached); a device
    index is worked out on the device, without a device-to-host sync.
    """
    if namespace_of(like) is np or not any(_is_device_item(i) for i in idx):
        targets, rank, is_last, ishape = _occurrences_in(np, xshape, idx)
        if namespace_of(like) is not np:
            targets, rank, is_last = (device_constant(like, a) for a in (targets, rank, is_last))
        return targets, rank, is_last, ishape
    return _occurrences_in(namespace_of(like), xshape, _on_device(idx, like))


def _is_device_item(item: Any) -> bool:
    return hasattr(item, "shape") and not isinstance(item, (np.ndarray, np.generic)) and namespace_of(item) is not np


def _occurrences_in(xp: Any, xshape: tuple[Any, ...], idx: tuple[Any, ...]) -> tuple[Any, ...]:
    size = 1
    for n in xshape:
        size *= n
    where = xp.reshape(xp.arange(size, dtype=np.intp), xshape)[idx]
    ishape = tuple(where.shape)
    targets = xp.reshape(where, (-1,))
    n = targets.shape[0]
    try:
        order = xp.argsort(targets, kind="stable")
    except (TypeError, ValueError, NotImplementedError):  # a backend whose sort is stable anyway
        order = xp.argsort(targets)
    s = targets[order]
    last = xp.ones(n, dtype=bool)
    if n > 1:
        last[:-1] = s[1:] != s[:-1]
    # rank within a run of equal (sorted) targets: position minus the run's first position
    rank_sorted = xp.arange(n, dtype=np.intp) - xp.searchsorted(s, s, side="left") if n \
        else xp.zeros(0, dtype=np.intp)
    rank = xp.empty(n, dtype=np.intp)
    rank[order] = rank_sorted
    is_last = xp.empty(n, dtype=bool)
    is_last[order] = last
    return targets, rank, is_last, ishape


# --------------------------------------------------------------------------
# batching (vmap) rules
#
# The batch axis goes in front of the indexed array. Unbatched index entries:
# a full slice is prepended for it. Batched (per-example) index arrays: an
# ``arange`` over the batch joins them as one more advanced index. Either way
# NumPy may place the batch axis away from the front (its rule for where
# advanced dimensions go), so each rule carries a permutation ``perm`` from the
# batched result's layout to (batch, per-example layout).

def _describe(item: Any, batched: bool = False) -> tuple[str, int, int]:
    """(kind, advanced rank, dimensions consumed) of one index entry."""
    if item is None:
        return "new", 0, 0
    if item is Ellipsis:
        return "ellipsis", 0, 0
    if isinstance(item, slice):
        return "slice", 0, 1
    if isinstance(item, (bool, np.bool_)):
        return "bool", 1, 0
    if isinstance(item, (int, np.integer)):
        return "int", 0, 1
    nd = len(shape(item)) - (1 if batched else 0)
    if dtype(item).kind == "b":
        return "bool", 1, nd
    if nd == 0:
        return "int", 0, 1
    return "array", nd, 1


def _layout(descs: list[Any], per_ndim: int) -> tuple[bool, bool, int, int, int]:
    """NumPy's placement of advanced dimensions for an index described by ``descs``.

    Returns (fancy, moved, R, P, n): any advanced index at all, whether the
    advanced dimensions go first (non-adjacent advanced entries), their
    broadcast rank, how many result dimensions come before them when they stay
    in place, and the result's rank.
    """
    fancy = any(k in ("bool", "array") for k, _, _ in descs)
    spare = per_ndim - sum(c for _, _, c in descs)  # dimensions an Ellipsis (or the end) takes
    n_basic = sum(1 for k, _, _ in descs if k in ("slice", "new")) + max(spare, 0)
    if not fancy:
        return False, False, 0, 0, n_basic
    adv = [i for i, (k, _, _) in enumerate(descs) if k in ("bool", "array", "int")]
    R = max(r for _, r, _ in descs)
    moved = adv[-1] - adv[0] + 1 != len(adv)
    P = 0
    for k, _, _ in descs[: adv[0]]:
        P += max(spare, 0) if k == "ellipsis" else (1 if k in ("slice", "new") else 0)
    return True, moved, R, P, R + n_basic


def _vmapped_index(idx: tuple[Any, ...], dyn: tuple[Any, ...], ddims: list[Any], size: int, per_ndim: int,
                   xp: Any) -> Any:
    """``(bidx, perm, n)``: an index for the batched array (batch axis in front)
    doing the per-example ``idx``, the permutation (or None) taking its result
    to (batch, per-example layout), and the per-example result's rank. None
    where the index cannot be vectorized (a batched boolean mask)."""
    if all(d is None for d in ddims):
        full = _fill(idx, dyn)
        fancy, moved, R, _, n = _layout([_describe(i) for i in full], per_ndim)
        perm = [R] + list(range(R)) + list(range(R + 1, n + 1)) if moved and R else None
        return (slice(None),) + full, perm, n
    items: list[Any] = []
    batched: list[Any] = []
    for p, item in enumerate(idx):
        if isinstance(item, _Slot):
            k = item.k
            if ddims[k] is None:
                item = dyn[k]
            else:
                item = move_to_front(dyn[k], ddims[k])
                if dtype(item).kind == "b":
                    return None
                items.append(item)
                batched.append(True)
                continue
        if isinstance(item, (bool, np.bool_)):
            return None
        if not isinstance(item, (slice, int, np.integer)) and item is not None and item is not Ellipsis \
                and dtype(item).kind == "b":
            if not shape(item):
                return None
            for part in fnp.nonzero(item):  # a mask is the integer arrays of its True positions
                items.append(part)
                batched.append(False)
            continue
        items.append(item)
        batched.append(False)
    # Per-example semantics: a batched entry that is a scalar per example is an integer.
    fancy, moved, R, P, n = _layout([_describe(i, b) for i, b in zip(items, batched)], per_ndim)
    for p, (item, b) in enumerate(zip(items, batched)):
        if b:
            s = tuple(shape(item)[1:])
            if len(s) < R:
                items[p] = fnp.reshape(item, (size,) + (1,) * (R - len(s)) + s)
    batch_index = xp.reshape(xp.arange(size, dtype=np.intp), (size,) + (1,) * R)
    bidx = (batch_index,) + tuple(items)
    # In the batched index every entry but the basic ones is advanced, and the
    # batch arange comes first: NumPy gives [batch, advanced..., basic...]. That
    # is the per-example layout unless its advanced dims stay in place after P others.
    perm = None
    if fancy and not moved and P:
        perm = [0] + list(range(1 + R, 1 + R + P)) + list(range(1, 1 + R)) + list(range(1 + R + P, n + 1))
    return bidx, perm, n


def _from_layout(out: Any, perm: Any) -> Any:
    return out if perm is None else fnp.transpose(out, perm)


def _to_layout(a: Any, perm: Any) -> Any:
    """Inverse of ``_from_layout``: (batch, per-example layout) to the batched layout."""
    return a if perm is None else fnp.transpose(a, tuple(int(i) for i in np.argsort(perm)))


def _getitem_batch(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
    x, idx, *dyn = args
    size = _batch_size(args, dims)
    x = _front(x, dims[0], size)
    plan = _vmapped_index(idx, tuple(dyn), dims[2:], size, len(shape(x)) - 1, namespace_of(x))
    if plan is None:
        return fallback(get_primitive(_getitem), list(args), list(dims), size, {})
    bidx, perm, _ = plan
    return _from_layout(getitem(x, bidx), perm), 0


def _unindex_batch(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
    g, idx, shape_, *dyn = args
    size = _batch_size(args, dims)
    g = _front(g, dims[0], size)
    plan = _vmapped_index(idx, tuple(dyn), dims[3:], size, len(shape_), namespace_of(g))
    if plan is None:
        return fallback(get_primitive(_unindex), list(args), list(dims), size, {})
    bidx, perm, _ = plan
    template, bdyn = normalize_index(bidx, g)
    return _unindex(_to_layout(g, perm), template, (size,) + tuple(shape_), *bdyn), 0


def _update_batch(prim: Callable[..., Any]) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
        x, idx, v, *dyn = args
        size = _batch_size(args, dims)
        x = _front(x, dims[0], size)
        plan = _vmapped_index(idx, tuple(dyn), dims[3:], size, len(shape(x)) - 1, namespace_of(x))
        if plan is None:
            return fallback(get_primitive(prim), list(args), list(dims), size, {})
        bidx, perm, n = plan
        # v broadcasts to the per-example indexed shape (rank n): give it exactly
        # n dimensions after a batch axis (of length 1 when v is not batched).
        dv = dims[2]
        if dv is None:
            vs = tuple(shape(v))
            v_front = v
        else:
            v_front = move_to_front(v, dv)
            vs = tuple(shape(v_front)[1:])
        vs = vs[len(vs) - n:] if len(vs) > n else (1,) * (n - len(vs)) + vs
        v_front = fnp.reshape(v_front, ((1,) if dv is None else (size,)) + vs)
        template, bdyn = normalize_index(bidx, x)
        return prim(x, template, _to_layout(v_front, perm), *bdyn), 0

    return rule


def _winner_mask_batch(args: list[Any], dims: list[Any]) -> tuple[Any, ...]:
    like, idx, *dyn = args
    if all(d is None for d in dims[2:]):  # the same positions for every example
        d = dims[0]
        one = getitem(like, (slice(None),) * d + (0,)) if d is not None else like
        return _winner_mask(one, idx, *dyn), None
    return fallback(get_primitive(_winner_mask), list(args), list(dims), _batch_size(args, dims), {})


# Index entries (positions ``first`` on) carry no derivative (they are integers or
# booleans); should one be traced by a differentiating transform below a vmap, it
# contributes nothing.
_MAX_DYN = 32


def _entries(first: int, rules: dict[Any, Any], vjp: bool) -> dict[Any, Any]:
    """``rules`` plus the zero rules of the dynamic index entries from position ``first``."""
    if vjp:
        zero: Callable[..., Any] = lambda g, ans, *a, **k: None  # noqa: E731
    else:
        zero = lambda t, ans, *a, **k: _zeros_like(ans)  # noqa: E731
    return {**{k: zero for k in range(first, first + _MAX_DYN)}, **rules}


def _entries_read(first: int, reads: dict[int, set[Any]]) -> dict[int, set[Any]]:
    """``reads`` (what the rules of the fixed arguments read) plus the dynamic index
    entries from position ``first``: every rule reads them, their own rules nothing."""
    dyn = set(range(first, first + _MAX_DYN))
    return {**{k: set() for k in dyn}, **{k: r | dyn for k, r in reads.items()}}


# --------------------------------------------------------------------------
# the primitives: (array, index template, ..., *dynamic index entries)

def _getitem_raw(x: Any, idx: tuple[Any, ...], *dyn: Any) -> Any:
    return x[_on_device(_fill(idx, dyn), x)]


def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]``, differentiable in ``x`` (what ``Box.__getitem__`` calls).

    Any NumPy index works: integers, slices (with negative steps), ``...``,
    ``None``, integer arrays (repeated positions accumulate in the gradient),
    boolean masks, and mixtures placed by NumPy's rules. Traced values inside
    the index are used for their value; indices carry no derivative.

    Example::

        fg.grad(lambda x: (x[[0, 0, 2]] ** 2).sum())(fnp.ones(3))  # [4., 0., 2.]
    """
    template, dyn = normalize_index(idx, x)
    return _getitem(x, template, *dyn)


def _unindex_raw(g: Any, idx: tuple[Any, ...], shape_: tuple[Any, ...], *dyn: Any) -> Any:
    out = namespace_of(g).zeros(shape_, dtype=dtype(g))
    idx = _fill(idx, dyn)
    if may_repeat(idx):
        _scatter_ufunc_at(out, idx, g, "add")
    else:
        out[_on_device(idx, out)] = g  # no position is hit twice
    return out


# The transpose of getitem: zeros of ``shape_`` with ``g`` added at ``idx``.


def _host_values_to(out: Any, v: Any) -> Any:
    """Values ``v`` on ``out``'s device: CuPy refuses to write a host array into a device
    one (a rule's constant, e.g. a Python 0 reshaped by vmap, arrives as a NumPy array)."""
    if isinstance(v, np.ndarray) and v.ndim and namespace_of(out) is not np:
        return device_constant(out, v)
    return v


def _index_add_raw(x: Any, idx: tuple[Any, ...], v: Any, *dyn: Any) -> Any:
    out = _copy(x)
    v = _host_values_to(out, v)
    idx = _fill(idx, dyn)
    if may_repeat(idx):
        _scatter_ufunc_at(out, idx, v, "add")
    else:
        out[_on_device(idx, out)] += v
    return out


def _index_set_raw(x: Any, idx: tuple[Any, ...], v: Any, *dyn: Any) -> Any:
    out = _copy(x)
    v = _host_values_to(out, v)
    idx = _fill(idx, dyn)
    xp = namespace_of(out)
    if xp is np or not may_repeat(idx) or not shape(v):
        out[_on_device(idx, out)] = v  # NumPy: with repeated positions the last write wins
        return out
    # Other backends leave the winner of repeated writes unspecified: every write to a
    # position writes the value of its last occurrence, so the result is NumPy's (and
    # no boolean compaction, which would need a device-to-host sync, is involved).
    targets, winner, ishape = _last_writers(tuple(out.shape), idx, out)
    v = xp.asarray(v, dtype=out.dtype)
    if v.ndim > len(ishape):  # assignment drops leading unit axes of v
        v = xp.reshape(v, v.shape[v.ndim - len(ishape):])
    vb = xp.reshape(xp.broadcast_to(v, ishape), (-1,))
    flat = xp.reshape(out, (-1,))
    flat[targets] = vb[winner]
    return xp.reshape(flat, out.shape)  # reshape may have copied a non-contiguous ``out``


def _last_writers(xshape: tuple[Any, ...], idx: tuple[Any, ...], like: Any) -> tuple[Any, ...]:
    """``(targets, winner, ishape)``: for each element of ``x[idx]`` (flat, C order) its flat
    position in ``x`` and the element index of the last write to that position."""
    if namespace_of(like) is np or not any(_is_device_item(i) for i in idx):
        targets, winner, ishape = _last_writers_in(np, xshape, idx)
        if namespace_of(like) is not np:
            targets, winner = device_constant(like, targets), device_constant(like, winner)
        return targets, winner, ishape
    return _last_writers_in(namespace_of(like), xshape, _on_device(idx, like))


def _last_writers_in(xp: Any, xshape: tuple[Any, ...], idx: tuple[Any, ...]) -> tuple[Any, ...]:
    size = 1
    for n in xshape:
        size *= n
    where = xp.reshape(xp.arange(size, dtype=np.intp), xshape)[idx]
    ishape = tuple(where.shape)
    targets = xp.reshape(where, (-1,))
    n = targets.shape[0]
    if not n:
        return targets, xp.zeros(0, dtype=np.intp), ishape
    try:
        order = xp.argsort(targets, kind="stable")
    except (TypeError, ValueError, NotImplementedError):
        order = xp.argsort(targets)
    s = targets[order]
    last_sorted = xp.searchsorted(s, s, side="right") - 1  # the run's last position, in sorted order
    winner = xp.empty(n, dtype=np.intp)
    winner[order] = order[last_sorted]
    return targets, winner, ishape


def _winner_mask_raw(like: Any, idx: tuple[Any, ...], *dyn: Any) -> Any:
    """0/1 mask in ``like``'s dtype over ``like[idx]``: 1 where that write is the
    last to its position (the one ``_index_set`` keeps)."""
    xp = namespace_of(like)
    _, _, is_last, ishape = _occurrences(tuple(shape(like)), _fill(idx, dyn), like)
    return xp.reshape(is_last, ishape).astype(dtype(like))


_winner_mask = defprimitive(
    _winner_mask_raw, name="winner_mask", batch=_winner_mask_batch, differentiable=False,
)


def _cotangent_of_values(g_sel: Any, v: Any) -> Any:
    """Sum a cotangent shaped like ``x[idx]`` down to ``v`` (which was broadcast to it)."""
    vs = shape(v)
    gs = shape(g_sel)
    if len(vs) > len(gs):  # assignment drops leading unit axes of v
        g_sel = fnp.reshape(g_sel, (1,) * (len(vs) - len(gs)) + tuple(gs))
    g_v = unbroadcast(g_sel, v)
    want = dtype(v)
    if dtype(g_v) != want and want.kind in "fc":
        g_v = fnp.astype(g_v, want)
    return g_v


def _index_set_vjp_v(g: Any, ans: Any, x: Any, idx: tuple[Any, ...], v: Any, *dyn: Any) -> Any:
    g_sel = _getitem(g, idx, *dyn)
    if may_repeat(_fill(idx, dyn)):  # only the last write to a position reaches the output
        g_sel = g_sel * _winner_mask(g, idx, *dyn)
    return _cotangent_of_values(g_sel, v)


_getitem: Callable[..., Any] = defprimitive(
    _getitem_raw, name="getitem",
    vjp=_entries(2, {0: lambda g, ans, x, idx, *dyn: _unindex(g, idx, shape(x), *dyn)}, vjp=True),
    jvp=_entries(2, {0: lambda t, ans, x, idx, *dyn: _getitem(t, idx, *dyn)}, vjp=False),
    batch=_getitem_batch,
    reads=_entries_read(2, {0: {1}}),  # the index (and x's shape)
)
_unindex: Callable[..., Any] = defprimitive(
    _unindex_raw, name="unindex",
    vjp=_entries(3, {0: lambda g, ans, x, idx, shape_, *dyn: _getitem(g, idx, *dyn)}, vjp=True),
    jvp=_entries(3, {0: lambda t, ans, x, idx, shape_, *dyn: _unindex(t, idx, shape_, *dyn)}, vjp=False),
    batch=_unindex_batch,
)
_index_add: Callable[..., Any] = defprimitive(
    _index_add_raw,
    name="index_add",
    vjp=_entries(3, {
        0: lambda g, ans, x, idx, v, *dyn: g,
        2: lambda g, ans, x, idx, v, *dyn: _cotangent_of_values(_getitem(g, idx, *dyn), v),
    }, vjp=True),
    jvp=_entries(3, {
        0: lambda t, ans, x, idx, v, *dyn: t,
        2: lambda t, ans, x, idx, v, *dyn: _index_add(_zeros_like(ans), idx, t, *dyn),
    }, vjp=False),
    batch_from=_update_batch,
)
_index_set: Callable[..., Any] = defprimitive(
    _index_set_raw,
    name="index_set",
    vjp=_entries(3, {
        0: lambda g, ans, x, idx, v, *dyn: _index_set(g, idx, 0, *dyn),
        2: _index_set_vjp_v,
    }, vjp=True),
    jvp=_entries(3, {
        0: lambda t, ans, x, idx, v, *dyn: _index_set(t, idx, 0, *dyn),
        2: lambda t, ans, x, idx, v, *dyn: _index_set(_zeros_like(ans), idx, t, *dyn),
    }, vjp=False),
    batch_from=_update_batch,
    reads=_entries_read(3, {0: {1}, 2: {1}}),  # the index (and v's shape and dtype)
)


# --------------------------------------------------------------------------
# functional updates: x.at[idx].set(v) ...

def _as_array(x: Any) -> Any:
    if isinstance(x, Box) or hasattr(x, "shape"):
        return x
    return fnp.array(x) if contains_box(x) else np.asarray(x)


def _update(prim: Callable[..., Any], x: Any, index: Any, v: Any) -> Any:
    """``prim(x, template, v, *dyn)`` for a user index (``_index_set`` or ``_index_add``)."""
    template, dyn = normalize_index(index, x)
    return prim(x, template, v, *dyn)


def _apply_at(x: Any, index: Any, v: Any, fn: Callable[..., Any], ufunc: str | None) -> Any:
    """``x`` with ``fn(x[idx], v)`` applied at ``idx``, repeated positions in turn (``ufunc.at``)."""
    template, dyn = normalize_index(index, x)
    xp = namespace_of(x)
    if not dyn and ufunc is not None and xp is np and not isinstance(x, Box) and not isinstance(v, Box):
        out = _copy(x)
        if v is None:
            getattr(np, ufunc).at(out, template)
        else:
            getattr(np, ufunc).at(out, template, _materialized(out, template, v))
        return out
    if not may_repeat(_fill(template, dyn)):
        cur = _getitem(x, template, *dyn)
        return _index_set(x, template, fn(cur) if v is None else fn(cur, v), *dyn)
    if dyn:
        raise NotImplementedError(
            f"x.at[idx].{ufunc or 'apply'}(...) with integer-array index values traced by fg.jit or "
            f"batched by vmap: only get, set, add and subtract take those (repeated positions of other "
            f"updates are applied in rounds planned from the index's values); make the index static "
            f"(a NumPy array closed over, or fg.jit(f, static_argnums=...)) or unbatched"
        )
    if ufunc in ("maximum", "minimum") and xp is not np and not isinstance(x, Box) and not isinstance(v, Box):
        out = _copy(x)  # untraced on a device: one scatter_max/scatter_min
        scatter(out, _on_device(template, out), v, ufunc)
        return out
    idx = template
    raw_x = unbox_all(x)
    static = not any(_is_device_item(i) for i in idx)
    # A static (host) index: the rounds are planned on the host. A device index: how
    # often a position repeats is data, read back once (a device-to-host sync).
    h_targets, h_rank, _, ishape = _occurrences_in(np, tuple(shape(x)), idx) if static else (None,) * 4
    if static:
        n_rounds = int(h_rank.max()) + 1 if h_rank.shape[0] else 0
    else:
        targets, rank, _, ishape = _occurrences(tuple(shape(x)), idx, raw_x)
        n_rounds = int(to_numpy(rank.max())) + 1 if rank.shape[0] else 0
    if n_rounds <= 1:  # no position repeats: one gather, one write
        cur = _getitem(x, idx)
        return _index_set(x, idx, fn(cur) if v is None else fn(cur, v))
    # Repeated positions: apply in rounds, each touching every position at most once,
    # in the order NumPy's ufunc.at would (C order over the index).
    xshape = tuple(shape(x))
    out = fnp.reshape(x, (-1,))
    if v is not None:
        v = fnp.asarray(v)
        if len(shape(v)) > len(ishape):
            v = fnp.reshape(v, shape(v)[len(shape(v)) - len(ishape):])
        v = fnp.reshape(fnp.broadcast_to(v, ishape), (-1,))
    for r in range(n_rounds):
        if static:
            sel_h = np.nonzero(h_rank == r)[0]
            sel, pos = sel_h, (h_targets[sel_h],)
        else:
            sel = xp.nonzero(rank == r)[0]
            pos = (targets[sel],)
        cur = _getitem(out, pos)
        new = fn(cur) if v is None else fn(cur, _getitem(v, (sel,)))
        out = _index_set(out, pos, new)
    return fnp.reshape(out, xshape)


def _minimum(a: Any, b: Any) -> Any:
    return fnp.minimum(a, b)


def _maximum(a: Any, b: Any) -> Any:
    return fnp.maximum(a, b)


class IndexUpdateRef:
    """``x.at[idx]``: the functional updates of ``x`` at ``idx`` (JAX's API).

    Each method returns a new array and never writes into ``x``. Semantics
    follow NumPy (``x[idx] = v`` and ``numpy.<ufunc>.at``), which JAX's differ
    from in two places: a bad index raises ``IndexError`` (JAX clamps or
    drops), and repeated positions are defined:

    * ``set``: the last write wins (NumPy's behaviour); its gradient w.r.t.
      ``v`` reaches only the winning occurrence.
    * ``add``/``subtract``/``multiply``/``divide``/``power``/``min``/``max``/
      ``apply``: every occurrence applies, in turn (``numpy.<ufunc>.at``).

    ``v`` broadcasts to ``x[idx].shape``. Differentiable w.r.t. ``x`` and ``v``
    to any order, in both modes.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array = array
        self.index = index


    def get(self, mode: str | None = None, fill_value: Any = None) -> Any:
        """``x[idx]`` (``mode`` other than None/'raise' is not supported)."""
        if mode not in (None, "raise", "promise_in_bounds") or fill_value is not None:
            raise NotImplementedError(
                f"x.at[idx].get(mode={mode!r}, fill_value={fill_value!r}): only NumPy's indexing "
                f"(mode=None, out-of-bounds raises IndexError) is supported"
            )
        return getitem(self.array, self.index)

    def set(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] = values`` (last write wins on repeated positions)."""
        return _update(_index_set, self.array, self.index, values)

    def add(self, values: Any) -> Any:
        """A copy of ``x`` with ``values`` added at ``idx``; repeated positions accumulate."""
        return _update(_index_add, self.array, self.index, values)

    def subtract(self, values: Any) -> Any:
        """A copy of ``x`` with ``values`` subtracted at ``idx``; repeated positions accumulate."""
        return _update(_index_add, self.array, self.index, -_as_array(values))

    def multiply(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] *= values``; repeated positions multiply in turn."""
        return _apply_at(self.array, self.index, values, fnp.multiply, "multiply")

    mul = multiply

    def divide(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] /= values``; repeated positions divide in turn."""
        return _apply_at(self.array, self.index, values, fnp.divide, "divide")

    def power(self, values: Any) -> Any:
        """A copy of ``x`` with ``x[idx] **= values``; repeated positions apply in turn."""
        return _apply_at(self.array, self.index, values, fnp.power, "power")

    def min(self, values: Any) -> Any:  # noqa: A003 - JAX's name
        """A copy of ``x`` with ``x[idx] = minimum(x[idx], values)`` (``numpy.minimum.at``)."""
        return _apply_at(self.array, self.index, values, _minimum, "minimum")

    def max(self, values: Any) -> Any:  # noqa: A003 - JAX's name
        """A copy of ``x`` with ``x[idx] = maximum(x[idx], values)`` (``numpy.maximum.at``)."""
        return _apply_at(self.array, self.index, values, _maximum, "maximum")

    def apply(self, func: Callable[..., Any]) -> Any:
        """A copy of ``x`` with ``func`` applied elementwise at ``idx``, once per occurrence.

        ``func`` must be elementwise and written with funcgrad.numpy functions.
        """
        ufunc = func.__name__ if isinstance(func, np.ufunc) else None
        fn = getattr(fnp, func.__name__) if isinstance(func, np.ufunc) else func
        return _apply_at(self.array, self.index, None, fn, ufunc)

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


class IndexUpdateHelper:
    """``x.at``: index it to get an :class:`IndexUpdateRef` (``x.at[idx].set(v)``)."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


_IndexUpdateHelper = IndexUpdateHelper  # the name box_methods uses


def at(x: Any) -> IndexUpdateHelper:
    """JAX's ``x.at`` for any array, traced or not: ``fnp.at(x)[idx].set(v)``.

    Traced values also have it as an attribute (``x.at[idx].add(v)``); plain
    NumPy arrays don't, so use this function on them. The input is never
    modified; a new array is returned.

    Example::

        y = fnp.at(fnp.zeros(3))[[0, 0, 2]].add(1.0)   # array([2., 0., 1.])
    """
    return IndexUpdateHelper(_as_array(x))


# --------------------------------------------------------------------------
# take, take_along_axis, put_along_axis, compress, extract, choose

def _concrete_index(item: Any, fn: str) -> Any:
    """An index argument whose values decide the result's shape: vmap-batched is refused."""
    item = _static_item(item, None) if isinstance(item, (Box, list)) else item
    if isinstance(item, StagingBox):
        raise staged_error(f"{fn} with a traced index/condition (its result's shape depends on the values)")
    if isinstance(item, Box):
        raise NotImplementedError(
            f"{fn} with a value batched by vmap as its index/condition is not supported: the "
            f"result's shape would differ between examples"
        )
    return item


def _axis_index(axis: int, nd: int, arg: str, fn: str) -> int:
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{fn}: {arg} must be an int or None, got {axis!r}")
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(f"{fn}: {arg}={axis} is out of bounds for an array of dimension {nd}")
    return int(axis) % nd


def _mode_indices(indices: Any, n: int, mode: str, fn: str) -> Any:
    if mode == "raise":
        return indices
    if mode not in ("wrap", "clip"):
        raise ValueError(f"{fn}: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if isinstance(indices, Box):  # per-example indices under vmap
        # Box arithmetic is registered by funcgrad.numpy (box_methods), not visible to mypy here
        return (indices % n if n else indices) if mode == "wrap" else fnp.clip(indices, 0, max(n - 1, 0))  # type: ignore[operator]
    xp = namespace_of(indices)
    ind = xp.asarray(indices)
    if mode == "wrap":
        return ind % n if n else ind
    return xp.clip(ind, 0, max(n - 1, 0))


def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: str = "raise") -> Any:
    """Differentiable ``numpy.take`` (``out=`` is not supported).

    Repeated indices accumulate in the gradient.

    Example::

        fnp.take(x, [2, 0, 2], axis=1)
    """
    if out is not None:
        raise TypeError("take: out= is not supported (funcgrad arrays are never written in place)")
    a = _as_array(a)
    indices = _static_item(indices, unbox_all(a))
    if axis is None:
        flat = fnp.reshape(a, (-1,))
        return getitem(flat, (_mode_indices(indices, shape(flat)[0], mode, "take"),))
    ax = _axis_index(axis, len(shape(a)), "axis", "take")
    ind = _mode_indices(indices, shape(a)[ax], mode, "take")
    return getitem(a, (slice(None),) * ax + (ind,))


def _along_axis_index(arr_shape: tuple[Any, ...], indices: Any, axis: int, fn: str) -> tuple[Any, ...]:
    nd = len(arr_shape)
    if not (isinstance(indices, Box) or hasattr(indices, "dtype")) or dtype(indices).kind not in "iu":
        raise IndexError(f"{fn}: indices must be an integer array, got {type(indices).__name__}")
    ind_nd = len(shape(indices))
    if ind_nd != nd:
        raise ValueError(
            f"{fn}: indices and arr must have the same number of dimensions, got {ind_nd} and {nd}"
        )
    xp = namespace_of(indices)
    idx = []
    for d, n in enumerate(arr_shape):
        if d == axis:
            idx.append(indices)
        else:
            s = [1] * nd
            s[d] = n
            idx.append(xp.reshape(xp.arange(n, dtype=np.intp), tuple(s)))
    return tuple(idx)


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1) -> Any:
    """Differentiable ``numpy.take_along_axis``; repeated indices accumulate in the gradient.

    Example::

        fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1)   # a differentiable sort
    """
    arr = _as_array(arr)
    indices = _static_item(indices, unbox_all(arr))
    if axis is None:
        if len(shape(indices)) != 1:
            raise ValueError("take_along_axis: when axis=None, indices must be one-dimensional")
        arr = fnp.reshape(arr, (-1,))
        axis = 0
    ax = _axis_index(axis, len(shape(arr)), "axis", "take_along_axis")
    return getitem(arr, _along_axis_index(tuple(shape(arr)), indices, ax, "take_along_axis"))


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None, inplace: bool = True) -> Any:
    """``numpy.put_along_axis``; pass ``inplace=False`` for the functional form.

    With ``inplace=True`` (NumPy's behaviour, the default) ``arr`` is written
    in place and None is returned; a traced ``arr`` is rebound to the updated
    value, as ``arr[...] = values`` would be. With ``inplace=False`` a new
    array is returned and ``arr`` is left alone (as in JAX). Differentiable in
    ``arr`` and ``values``; repeated positions keep the last write.

    Example::

        y = fnp.put_along_axis(x, idx, 0.0, axis=1, inplace=False)
    """
    if inplace and not isinstance(arr, Box):
        if isinstance(values, Box):
            raise ValueError(
                "put_along_axis: a plain NumPy array cannot hold traced values; call "
                "put_along_axis(arr, indices, values, axis, inplace=False), which returns the "
                "updated copy (or use fnp.at(arr)[...].set(values))"
            )
        return namespace_of(arr).put_along_axis(arr, indices, values, axis)
    arr = _as_array(arr)
    indices = _static_item(indices, unbox_all(arr))
    xshape = tuple(shape(arr))
    if axis is None:
        if len(shape(indices)) != 1:
            raise ValueError("put_along_axis: when axis=None, indices must be one-dimensional")
        if inplace:
            raise ValueError("put_along_axis: axis=None needs inplace=False on a traced array")
        return fnp.reshape(_update(_index_set, fnp.reshape(arr, (-1,)), (indices,), values), xshape)
    ax = _axis_index(axis, len(xshape), "axis", "put_along_axis")
    idx = _along_axis_index(xshape, indices, ax, "put_along_axis")
    if inplace:  # a traced array: the write rebinds it (see funcgrad.numpy.inplace)
        arr[idx] = values
        return None
    return _update(_index_set, arr, idx, values)


def compress(condition: Any, a: Any, axis: int | None = None, out: None = None) -> Any:
    """Differentiable ``numpy.compress`` (``out=`` is not supported).

    Example::

        fnp.compress([True, False, True], x, axis=0)
    """
    if out is not None:
        raise TypeError("compress: out= is not supported (funcgrad arrays are never written in place)")
    a = _as_array(a)
    cond = _concrete_index(condition, "compress")
    xp = namespace_of(cond) if hasattr(cond, "shape") else np  # a host condition stays on the host
    cond = xp.asarray(cond)
    if cond.ndim != 1:
        raise ValueError("compress: condition must be a 1-d array")
    keep = xp.nonzero(cond)[0]
    if axis is None:
        a = fnp.reshape(a, (-1,))
        axis = 0
    ax = _axis_index(axis, len(shape(a)), "axis", "compress")
    n = shape(a)[ax]
    if cond.shape[0] > n and keep.shape[0] and int(to_numpy(keep[-1])) >= n:
        # NumPy raises only when a True lies past the end; match that.
        raise IndexError(
            f"compress: condition has a True at position {int(to_numpy(keep[-1]))}, past the "
            f"length {n} of axis {ax}"
        )
    return getitem(a, (slice(None),) * ax + (keep,))


def extract(condition: Any, arr: Any) -> Any:
    """Differentiable ``numpy.extract``: ``ravel(arr)[ravel(condition) != 0]``.

    Example::

        fnp.extract(x > 0, x)
    """
    arr = _as_array(arr)
    cond = _concrete_index(condition, "extract")
    xp = namespace_of(cond) if hasattr(cond, "shape") else np  # a host condition stays on the host
    cond = xp.reshape(xp.asarray(cond) != 0, (-1,))
    return getitem(fnp.reshape(arr, (-1,)), (xp.nonzero(cond)[0],))


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Differentiable ``numpy.choose`` (w.r.t. ``choices``; ``out=`` is not supported).

    Example::

        fnp.choose([0, 1, 0], [x, y])   # x[0], y[1], x[2]
    """
    if out is not None:
        raise TypeError("choose: out= is not supported (funcgrad arrays are never written in place)")
    a = _concrete_index(a, "choose")
    if isinstance(choices, Box) or hasattr(choices, "shape"):
        choices = [choices[i] for i in range(shape(choices)[0])]
    choices = [_as_array(c) for c in choices]
    n = len(choices)
    namespace_of(*choices)  # one device (or a clear error)
    xp = namespace_of(a) if hasattr(a, "shape") else np  # a host index stays on the host
    a = xp.asarray(a)
    if np.dtype(a.dtype).kind not in "iub":
        raise TypeError(f"choose: a must be an integer array, got dtype {a.dtype}")
    bshape = np.broadcast_shapes(tuple(a.shape), *[tuple(shape(c)) for c in choices])
    if mode == "raise":
        if a.size and (int(to_numpy(a.min())) < 0 or int(to_numpy(a.max())) >= n):
            raise ValueError("choose: invalid entry in choice array (a must hold values in [0, len(choices)))")
    else:
        a = _mode_indices(a, n, mode, "choose")
    stacked = fnp.stack([fnp.broadcast_to(c, bshape) for c in choices])
    grid = tuple(
        xp.reshape(xp.arange(m, dtype=np.intp), tuple(m if k == d else 1 for k in range(len(bshape))))
        for d, m in enumerate(bshape)
    )
    return getitem(stacked, (xp.broadcast_to(a, bshape),) + grid)


# --------------------------------------------------------------------------
# functions whose values are gathered from (or scattered out of) the input

def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """``numpy.unique``; the unique values are differentiable (each is ``ar`` at its first occurrence).

    The indices, inverse and counts carry no derivative.

    Example::

        fg.grad(lambda x: fnp.unique(x).sum())(fnp.array([2.0, 1.0, 2.0]))   # [1., 1., 0.]
    """
    kwargs: dict[Any, Any] = {}
    if not equal_nan:
        kwargs["equal_nan"] = False
    if not sorted:
        kwargs["sorted"] = False
    if axis is not None:
        kwargs["axis"] = axis
    if not isinstance(ar, Box):
        return namespace_of(ar).unique(ar, return_index=return_index, return_inverse=return_inverse,
                                       return_counts=return_counts, **kwargs)
    raw = _concrete_index(ar, "unique")
    res = namespace_of(raw).unique(raw, return_index=True, return_inverse=return_inverse,
                                   return_counts=return_counts, **kwargs)
    first = res[1]
    values = take(ar, first, axis=axis)
    extra = ((first,) if return_index else ()) + tuple(res[2:])
    return (values,) + extra if extra else values


def _bincount_batch(args: list[Any], dims: list[Any], minlength: int = 0) -> tuple[Any, int]:
    """A batch of bincounts as one: row ``b``'s values are shifted by ``b * length`` (``length``, the
    longest row's count, is the result's width, as vmap needs one shape for every row; the maximum is
    read on the host, as bincount's own output size is)."""
    x, *rest = args
    size = _batch_size(args, dims)
    xs = _front(x, dims[0], size)
    xp = namespace_of(xs)
    length = max(int(minlength), int(xp.max(xs)) + 1 if xs.size else 0)
    shifted = xs + xp.arange(size, dtype=xs.dtype)[:, None] * length
    weights = None if not rest or rest[0] is None else xp.reshape(_front(rest[0], dims[1], size), (-1,))
    flat = xp.bincount(xp.reshape(shifted, (-1,)), weights, minlength=size * length)
    return xp.reshape(flat, (size, length)), 0


_bincount_nondiff = defprimitive(
    lambda x, *args, **kwargs: namespace_of(x).bincount(x, *args, **kwargs), name="bincount",
    differentiable=False, batch=_bincount_batch,
)


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    """``numpy.bincount``; differentiable in ``weights``.

    Unlike NumPy (which always returns float64 for weighted counts) float32
    weights give a float32 result, as everywhere in funcgrad.

    Example::

        fg.grad(lambda w: fnp.bincount(idx, w)[0])(w)
    """
    if not isinstance(weights, Box):
        return _bincount_nondiff(x, weights, minlength=minlength)
    xv = _concrete_index(x, "bincount")
    xp = namespace_of(xv)
    xv = xp.asarray(xv)
    if xv.ndim != 1:
        raise ValueError(f"bincount: x must be one-dimensional, got shape {tuple(xv.shape)}")
    if tuple(shape(weights)) != tuple(xv.shape):
        raise ValueError(
            f"bincount: weights must have the shape of x, {tuple(xv.shape)}, got {tuple(shape(weights))}"
        )
    n = xp.bincount(xv, minlength=minlength).shape[0]  # validates x (non-negative ints)
    w = weights if dtype(weights).kind in "fc" else fnp.astype(weights, np.float64)
    return _unindex(w, (xv,), (n,))


