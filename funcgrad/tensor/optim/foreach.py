"""``foreach=True``: one update over all the parameters of a group per step, as PyTorch's multi-tensor path
(``foreach=None``, the default, takes it for groups of many small parameters; ``foreach=False`` never).

The elementwise optimizers (Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam) apply
their ``funcgrad.optim`` transformation once to the concatenation of the group's gradients and
parameters, instead of once per parameter: a handful of array operations per step whatever the number
of parameters. The state is kept flat, and ``optimizer.state[p]``'s slots are views of their parameter's
part of it (reading them sees the current values; an in-place edit reaches the next step; replacing a
slot, or a change in which parameters have gradients, rebuilds the flat state from the slots). The
arithmetic is the per-parameter path's, element for element, so the two give the same parameters.

Groups that do not flatten (``foreach=False``, or a few large parameters) still take one update per
step: the transformation applied once to the list of the group's parameters (:func:`tree_step`), which
is the per-parameter arithmetic leaf by leaf, without the concatenation's copies.

Example::

    opt = ft.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

(SGD takes neither path: its step is written directly on the arrays, a few in-place operations per
parameter, cheaper than either; its ``foreach`` flag is accepted and changes nothing.)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ... import tree_util
from ...backend import device_of, namespace_of
from ..tensor import Tensor

__all__ = ["flat_step", "flattening_pays", "tree_step"]

# ``foreach=None`` (the default) flattens a group of at least this many parameters averaging at most this
# many elements: there one update over the concatenation beats a loop of small updates; for a few large
# parameters the concatenation costs more than it saves (benchmarks/optim_foreach.py, RESULTS.md).
AUTO_MIN_PARAMS = 8
AUTO_MAX_MEAN_SIZE = 16384


class _Flat:
    """A group's flat functional state: the parameters it covers, their offsets, the slot of each of the
    state's leaves (None: not kept as a slot), and the per-parameter slot tensors handed out last step (to
    notice a replaced slot)."""

    __slots__ = ("params", "offsets", "fstate", "slots", "names", "handed")

    def __init__(self, params: list[Tensor], offsets: list[int], fstate: Any, slots: list[str | None],
                 names: list[str]) -> None:
        self.params, self.offsets, self.fstate, self.slots = params, offsets, fstate, slots
        self.names = names  # the group's slot names when the state was built (its hyperparameters shape it)
        self.handed: list[dict[str, Any]] = []


def _gather(opt: Any, group: dict[Any, Any], tx: Any, params: list[Tensor], flat_p: Any) -> Any:
    """The flat state rebuilt from each parameter's slots (fresh where it has none); None when the
    parameters' shared scalars (their step counts) differ, so one flat state cannot hold them."""
    xp = namespace_of(flat_p)
    template = tx.init(flat_p)
    t_leaves, treedef = tree_util.tree_flatten(template)
    per = [tree_util.tree_leaves(opt._functional_state(p, group, tx)) for p in params]
    total = flat_p.shape[0]
    leaves = []
    for j, t in enumerate(t_leaves):
        if getattr(t, "shape", ()) == (total,):
            leaves.append(xp.concatenate([xp.reshape(row[j], (-1,)) for row in per]).astype(t.dtype, copy=False))
        else:
            first = per[0][j]  # a shared scalar: the step count, which funcgrad.optim keeps on the host
            fx = namespace_of(first)
            if any(not bool(fx.all(row[j] == first)) for row in per[1:]):
                return None
            leaves.append(first)
    return tree_util.tree_unflatten(treedef, leaves)


def flattening_pays(group: dict[Any, Any]) -> bool:
    """Whether ``foreach=None`` takes the flat path for ``group``: many small parameters."""
    params = group["params"]
    if len(params) < AUTO_MIN_PARAMS:
        return False
    return sum(int(p._value.size) for p in params) <= AUTO_MAX_MEAN_SIZE * len(params)


def flat_step(opt: Any, group: dict[Any, Any], tx: Any, lr: float, maximize: bool) -> bool:
    """One ``foreach`` update of ``group``; False (nothing done) where the parameters do not share one
    dtype and device, or their step counts differ: the caller then updates them one by one."""
    params = [p for p in group["params"] if p._grad is not None]
    if not params:
        return True
    first = params[0]._value
    xp = namespace_of(first)
    kind, dtype = type(first), first.dtype
    for p in params:  # one array type (so one namespace) and one dtype; else the loop
        v = p._value
        if type(v) is not kind or v.dtype != dtype or p._grad._value.dtype != dtype:
            return False
    if xp is not np and len({str(device_of(p._value)) for p in params}) > 1:
        return False
    flat_g = xp.concatenate([p._grad._value.reshape(-1) for p in params])
    if maximize:
        flat_g = -flat_g
    flat_p = xp.concatenate([p._value.reshape(-1) for p in params])
    found = opt._flat.get(id(group))
    cache = found if isinstance(found, _Flat) else None
    names = opt._slot_names(group)
    fresh = cache is None or cache.params != params or cache.names != names \
        or not _slots_intact(opt.state, params, cache.handed)
    if fresh:
        offsets, at = [], 0
        for p in params:
            offsets.append(at)
            at += int(p._value.size)
        offsets.append(at)
        fstate = _gather(opt, group, tx, params, flat_p)
        if fstate is None:
            return False
        cache = _Flat(params, offsets, fstate, opt._field_slots(fstate), names)
        opt._flat[id(group)] = cache
    assert cache is not None
    updates, cache.fstate = tx.update(flat_g, cache.fstate, flat_p)
    step = (lr * updates).astype(first.dtype, copy=False)
    _store_views(opt, group, cache, params, step, xp)
    return True


def _store_views(opt: Any, group: dict[Any, Any], cache: _Flat, params: list[Tensor], step: Any, xp: Any) -> None:
    """Apply ``step`` and hand out PyTorch's slots of each parameter: views of the flat state (``step`` and
    the slots derived from it, such as NAdam's ``mu_product``, as 0-d float32 host tensors)."""
    leaves = tree_util.tree_leaves(cache.fstate)
    total = int(step.shape[0])
    by_slot = {slot: leaf for slot, leaf in zip(cache.slots, leaves) if slot is not None}
    count = int(np.asarray(by_slot["step"])) if "step" in by_slot else None
    offsets = cache.offsets
    for p, lo, hi in zip(params, offsets, offsets[1:]):
        v = p._value
        v += step[lo:hi].reshape(v.shape)  # in place: views of the parameter see it
        p._version_counter[0] += 1

    def slot_values(name: str) -> list[Any]:
        leaf = by_slot[name]
        if getattr(leaf, "shape", ()) != (total,):
            return [leaf] * len(params)
        return [leaf[lo:hi].reshape(p._value.shape) for p, lo, hi in zip(params, offsets, offsets[1:])]

    _hand_out_slots(opt, group, cache, params, count, slot_values)


# --------------------------------------------------------------------------- one update over the list of parameters


class _Tree:
    """A group's functional state over the list of its parameters (a state field that is per parameter
    holds a list, one array each; the step count is shared), and the slot tensors handed out last step.
    ``layout`` reads the fields off the state's leaves: the state's structure, and per field whether it
    holds one leaf per parameter (the structure stays from step to step, so no ``is_leaf`` walk is needed)."""

    __slots__ = ("params", "fstate", "slots", "names", "handed", "layout")

    def __init__(self, params: list[Tensor], fstate: Any, slots: list[str | None], names: list[str]) -> None:
        self.params, self.fstate, self.slots = params, fstate, slots  # slots: each field's slot name (or None)
        self.names = names  # the group's slot names when the state was built (its hyperparameters shape it)
        self.handed: list[dict[str, Any]] = []
        fields = tree_util.tree_leaves(fstate, is_leaf=_per_parameter([p._value for p in params]))
        per_param = [type(f) is list for f in fields]
        self.layout = (tree_util.tree_structure(fstate), per_param)

    def fields(self) -> list[Any]:
        """The state's fields (a list of one array per parameter, or a shared value), in the state's order."""
        leaves, treedef = tree_util.tree_flatten(self.fstate)
        structure, per_param = self.layout
        if treedef != structure:  # (a transformation whose state changed shape: walk it again)
            values = [p._value for p in self.params]
            return tree_util.tree_leaves(self.fstate, is_leaf=_per_parameter(values))
        n = len(self.params)
        out: list[Any] = []
        at = 0
        for many in per_param:
            if many:
                out.append(leaves[at:at + n])
                at += n
            else:
                out.append(leaves[at])
                at += 1
        return out


def _per_parameter(values: list[Any]) -> Any:
    """``is_leaf`` for a list state: True at a field holding one array per parameter of ``values``."""
    shapes = [v.shape for v in values]

    def is_field(node: Any) -> bool:
        return type(node) is list and len(node) == len(shapes) and all(
            getattr(a, "shape", None) == s for a, s in zip(node, shapes))

    return is_field


def _same_params(a: list[Tensor], b: list[Tensor]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _tree_gather(opt: Any, group: dict[Any, Any], tx: Any, params: list[Tensor], values: list[Any]) -> Any:
    """The list state rebuilt from each parameter's slots (fresh where it has none); None when their shared
    scalars (the step counts) differ."""
    fields, treedef = tree_util.tree_flatten(tx.init(values), is_leaf=_per_parameter(values))
    per = [tree_util.tree_leaves(opt._functional_state(p, group, tx)) for p in params]
    if any(len(row) != len(fields) for row in per):
        return None
    is_field = _per_parameter(values)
    new: list[Any] = []
    for j, field in enumerate(fields):
        if is_field(field):
            new.append([row[j] for row in per])
            continue
        first = per[0][j]  # a shared scalar: the step count, which funcgrad.optim keeps on the host
        fx = namespace_of(first)
        if any(not bool(fx.all(row[j] == first)) for row in per[1:]):
            return None
        new.append(first)
    return tree_util.tree_unflatten(treedef, new)


def tree_step(opt: Any, group: dict[Any, Any], tx: Any, lr: float, maximize: bool) -> bool:
    """One update of ``group``: ``tx`` applied once to the list of its parameters that have gradients,
    each written in place; False (nothing done) where their step counts differ: the caller then updates
    them one by one."""
    params = [p for p in group["params"] if p._grad is not None]
    if not params:
        return True
    values = [p._value for p in params]
    grads = [-p._grad._value for p in params] if maximize else [p._grad._value for p in params]
    found = opt._flat.get(id(group))
    cache = found if isinstance(found, _Tree) else None
    names = opt._slot_names(group)
    if cache is None or not _same_params(cache.params, params) or cache.names != names \
            or not _slots_intact(opt.state, params, cache.handed):
        fstate = _tree_gather(opt, group, tx, params, values)
        if fstate is None:
            return False
        cache = _Tree(params, fstate, opt._field_slots(tx.init(values[0])), names)
        opt._flat[id(group)] = cache
    updates, cache.fstate = tx.update(grads, cache.fstate, values)
    for p, u in zip(params, updates):
        p._value += (lr * u).astype(p._value.dtype, copy=False)  # in place: views of the parameter see it
        p._version_counter[0] += 1
    by_slot = {slot: f for slot, f in zip(cache.slots, cache.fields()) if slot is not None}
    count = int(np.asarray(by_slot["step"])) if "step" in by_slot else None
    _hand_out_slots(opt, group, cache, params, count,
                    lambda name: by_slot[name] if type(by_slot[name]) is list else [by_slot[name]] * len(params))
    return True


def _slots_intact(state: Any, params: list[Tensor], handed: list[dict[str, Any]]) -> bool:
    """Whether every slot tensor handed out last step is still in its parameter's state (none replaced)."""
    for p, slots in zip(params, handed):
        st = state[p]
        for k, v in slots.items():
            if st.get(k) is not v:
                return False
    return True


def _hand_out_slots(opt: Any, group: dict[Any, Any], cache: Any, params: list[Tensor], count: int | None,
                    slot_values: Callable[[str], list[Any]]) -> None:
    """Hand out PyTorch's slots of each parameter after a joint update: ``step`` and the slots derived
    from it (such as NAdam's ``mu_product``) as 0-d float32 host tensors, the others as Tensors over
    ``slot_values(name)[i]`` (the updated state of ``params[i]``, not a copy), kept in ``cache.handed``. A
    slot tensor handed out last step and still in the state is the one updated (its value now the new
    state, its version one more), as PyTorch updates its buffers in place: a reference a user holds sees
    the step (a view taken of it before the step does not: the new state is new memory, not written into
    the old). ``count``: the step count of every parameter (None: each one's ``step`` slot says)."""
    names = cache.names
    derived_names = opt._derived_slots(group, 1)
    scalars = [name for name in names if name == "step" or name in derived_names]
    functional = opt._functional
    if functional:
        for p in params:
            functional.pop(p, None)  # (the loop path rebuilds from the slots if it takes over)
    state = opt.state
    shared = opt._derived_slots(group, count) if count is not None and derived_names else None
    arrays = [name for name in names if name not in scalars]
    kept = cache.handed
    steady = len(kept) == len(params)
    if steady:
        # the tensors handed out last step, all still in the state (the step began by checking so:
        # _slots_intact), each updated in place
        for name in arrays:
            for handed, value in zip(kept, slot_values(name)):
                t = handed[name]
                t._value = value
                t._version_counter[0] += 1
        if not scalars:
            return
    else:
        cache.handed = kept = [{} for _ in params]
    columns = {name: slot_values(name) for name in arrays} if not steady else {}
    for i, p in enumerate(params):
        st = state[p]
        n = count if count is not None else int(np.asarray(st["step"]._value)) + 1 if "step" in st else 1
        derived = shared if shared is not None else opt._derived_slots(group, n) if derived_names else _NO_SLOTS
        for name in names:  # (in PyTorch's order: the state's keys keep it)
            if name in scalars:
                _set_scalar(st, name, n if name == "step" else derived[name])
            elif not steady:
                st[name] = kept[i][name] = Tensor._make(columns[name][i])


_NO_SLOTS: dict[str, float] = {}  # (no derived slots: never written to)


def _set_scalar(st: dict[str, Any], name: str, value: Any) -> None:
    """Slot ``name`` of a parameter's state: a 0-d float32 host tensor, updated in place when it is one."""
    old = st.get(name)
    if isinstance(old, Tensor) and old._value.shape == ():
        old._value[...] = np.array(value, dtype=np.float32)
    else:
        st[name] = Tensor._make(np.array(value, dtype=np.float32))
