"""Reverse mode: a tape of nodes and the backward pass that walks it.

Each primitive call under a :class:`ReverseTrace` makes a :class:`VJPNode`
that saves what the primitive's VJP rules need (its unboxed arguments and its
result) and points at its parents' nodes. The backward pass visits the nodes
reachable from the outputs once, in reverse topological order, sums
cotangents where a value fans out, and releases each cotangent (and, for
one-shot passes, each node's saved values) as soon as it is consumed.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Any, Iterable, Sequence

from sys import getrefcount

from .constant import ConstBox
from . import trace as _trace
from .hooks import _watchers, zeros_like
from .trace import Box, Primitive, Trace

__all__ = ["VJPNode", "VJPBox", "ReverseTrace", "ArraySpec", "backward_pass", "tape_order", "save_everything",
           "dropped", "Visitor", "DECLINE", "carry_thread_state", "USE_STEPS"]

# Allocation without an __init__ call: the hot path of recording fills the slots inline.
_new_node = object.__new__
_new_box = object.__new__


class VJPNode:
    """The tape's record of one primitive call (or of an input, when ``prim`` is None).

    ``parents[k]`` is the node of positional argument ``argnums[k]``. A node of a
    primitive with several results is followed by one ``out_index`` node per
    result that is used, each with the multi-result node as its only parent.
    """

    __slots__ = ("prim", "parents", "argnums", "args", "kwargs", "ans", "out_index", "versions", "__weakref__")

    def __init__(
        self,
        prim: Primitive | None,
        parents: Sequence[VJPNode],
        argnums: Sequence[int],
        args: list[Any] | None,
        kwargs: dict[str, Any] | None,
        ans: Any,
        out_index: int | None = None,
        versions: list[tuple[int, int]] | None = None,
    ) -> None:
        self.prim: Primitive | None = prim
        self.parents: Sequence[VJPNode] = parents
        self.argnums: Sequence[int] = argnums
        # The saved positional (a list) and keyword (a dict) arguments; None once released.
        # Typed Any so the backward loop reads them with no None checks.
        self.args: Any = args
        self.kwargs: Any = kwargs
        self.ans: Any = ans
        self.out_index: int | None = out_index
        # (position, version) of saved arguments that are boxes of enclosing traces:
        # an in-place write to one of them before this node runs is an error.
        self.versions: list[tuple[int, int]] | None = versions

    def check_versions(self) -> None:
        """Swap in the state each saved box had when this node used it, if it was
        written in place since (the write kept that state in ``box._history``)."""
        for i, version in self.versions or ():
            box = self.args[i]
            if box._version == version:
                continue
            old = (getattr(box, "_history", None) or {}).get(version)
            if old is not None:
                self.args[i] = old
                continue
            name = self.prim.name if self.prim is not None else "input"
            raise RuntimeError(
                    f"a value saved for the backward pass of '{name}' (argument {i}) was "
                    f"modified in place after it was used (version {version}, now {box._version}). "
                    f"Write into a copy instead (b = fnp.copy(a); b[i] = v), or use the functional "
                    f"form a.at[i].set(v)"
                )

    def release(self) -> None:
        """Drop the saved values: the node cannot run again."""
        self.args = self.kwargs = self.ans = None

    def run_rules(self, g: Any, g_all: Any, ans: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The cotangents of ``parents`` by the primitive's VJP rules, one per traced position in
        ``argnums``: ``vjp_all(g_all, ...)`` when the primitive declares one (``g_all`` has None for
        results that got no cotangent), else each position's rule on ``g`` (for a primitive of
        several results, a cotangent for each, zeros filled in). ``ans``, ``args`` and ``kwargs``
        are what the rules read: the saved values (or, in the Tensor layer, what its saved
        tensors unpack to). The one rule dispatch of every walk, core's and the Tensor layer's.

        Example::

            (ct,) = node.run_rules(g, g, node.ans, node.args, node.kwargs)
        """
        prim = self.prim
        assert prim is not None  # (an input node has no rules; the walk files its cotangent)
        if prim.vjp_all is not None:
            return list(prim.vjp_all(g_all, ans, tuple(self.argnums), *args, **kwargs))
        vjps = prim.vjps
        cts = []
        for argnum in self.argnums:
            rule = vjps.get(argnum)
            if rule is None:
                raise prim.missing_rule("VJP", argnum)
            cts.append(rule(g, ans, *args, **kwargs))
        return cts

    def __repr__(self) -> str:
        what = "input" if self.prim is None else self.prim.name
        return f"<VJPNode {what}>"


class VJPBox(Box):
    """A value traced by reverse mode: the value and the node that made it."""

    __slots__ = ()
    _node: VJPNode

    def __init__(self, value: Any, trace: Trace, node: VJPNode):
        self._value = value
        self._trace = trace
        self._node = node
        self._view = None
        self._version = 0


class ArraySpec:
    """What a node keeps of an argument (or result) whose values its VJP rules never
    read: the shape and dtype, so that e.g. broadcasting can still be undone."""

    __slots__ = ("shape", "dtype", "f_order")

    def __init__(self, x: Any):
        self.f_order = False  # Fortran- and not C-ordered (what reshape's order="A" resolves by)
        if isinstance(x, Box):
            self.shape = x._shape()
            v = x._value
            while isinstance(v, Box):
                v = v._value
            # a Python scalar has no dtype; its type stands in (numpy.dtype(float) works)
            self.dtype = getattr(v, "dtype", type(v))
        else:
            self.shape = tuple(x.shape)
            self.dtype = x.dtype
            flags = getattr(x, "flags", None)
            if flags is not None:
                self.f_order = bool(flags.f_contiguous and not flags.c_contiguous)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"ArraySpec(shape={self.shape}, dtype={self.dtype})"


USE_STEPS = object()  # what a trace kind's ``record_one`` returns for a call it leaves to the steps
_NO_KWARGS: dict[str, Any] = {}  # the keyword arguments of a recorded call with none (never written to)
_KEEP_ALL: tuple[tuple[int, ...], bool] = ((), False)  # what a call drops when it keeps everything

# Smaller arrays are kept as they are: replacing them saves less than it costs.
_MIN_DROP_BYTES = 4096


class _SaveEverything:
    on = False


_save_everything = _SaveEverything()


class save_everything:
    """Within it, recorded calls keep every argument and result, whatever their
    primitives' ``reads`` declare: a way to check a declaration, by comparing
    derivatives (to any order) computed with and without it.

    Applies to reverse traces begun inside it (``fg.grad`` ...) and to Tensor
    operations recorded inside it (``funcgrad.tensor``). Process-wide.

    Example::

        with fg.testing.save_everything():
            want = fg.grad(fg.grad(f))(x)
        assert np.allclose(fg.grad(fg.grad(f))(x), want)
    """

    def __enter__(self) -> "save_everything":
        self._prev = _save_everything.on
        _save_everything.on = True
        return self

    def __exit__(self, *exc: Any) -> None:
        _save_everything.on = self._prev


def dropped(prim: Primitive, argnums: list[int], nargs: int) -> tuple[tuple[int, ...], bool] | None:
    """What a call of ``prim`` differentiated in ``argnums`` need not keep: (positions, the
    result?) per its ``reads`` declaration; None when it keeps everything (no declaration,
    or inside :class:`save_everything`)."""
    if prim.reads is None or _save_everything.on:
        return None
    return _drops(prim, argnums, nargs)


def _drops(prim: Primitive, argnums: list[int], nargs: int) -> tuple[tuple[int, ...], bool]:
    """Positions (and whether the result) no VJP rule of the traced ``argnums`` reads."""
    key = (nargs, *argnums)
    found = prim.drop_cache.get(key)
    if found is None:
        reads = prim.reads or {}
        read: set[Any] = set()
        for i in argnums:
            read |= reads.get(i, frozenset(range(nargs)) | {"ans"})
        drop = tuple(j for j in range(nargs) if j not in read)
        found = prim.drop_cache[key] = (drop, "ans" not in read)
    return found


class ReverseTrace(Trace):
    """Records primitive calls on a tape for a later backward pass.

    Nodes keep only what the VJP rules read (see ``Primitive.reads``), unless
    ``keep_all`` is set: ``linearize`` replays JVP rules on the tape, which read more.
    :meth:`process` is the one recording path of every reverse trace; a kind of reverse
    trace (the Tensor layer's, ``funcgrad.visualize``'s) overrides its steps.
    """

    __slots__ = ("keep_all", "min_drop_bytes")
    # the tape may hold results that are not arrays (fg.jit's residuals packed as one value)
    opaque_results = True

    def __init__(self, name: str, keep_all: bool = False, min_drop_bytes: int = _MIN_DROP_BYTES):
        super().__init__(name)
        self.keep_all = keep_all or _save_everything.on
        self.min_drop_bytes = min_drop_bytes

    def new_input(self, value: Any) -> VJPBox:
        return VJPBox(value, self, VJPNode(None, (), (), None, None, value))

    # the steps of :meth:`process`, which a kind of reverse trace overrides (never the skeleton)
    STEPS = ("link", "run", "save_and_box")
    # record_one(prim, args, argnums): a kind of reverse trace may record the commonest calls (boxes of
    # its own, no keyword arguments) in one frame, or return USE_STEPS (the Tensor trace does)
    record_one: Any = None

    def process(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        """Record one call of ``prim``: the one recording path of reverse mode, for ``fg.grad``'s
        tape and for the Tensor layer's graph alike. A fixed skeleton; a kind of reverse trace
        overrides its three steps, never the skeleton:

        1. :meth:`link`: this trace's boxes in ``args`` become their values, and the tape node
           is made, linked to their nodes (None: nothing to record);
        2. :meth:`run`: the primitive's raw function on the values;
        3. the declaration's ``reads``: an argument no VJP rule of the node's traced positions
           reads is kept as its :class:`ArraySpec` when big enough to matter;
        4. :meth:`save_and_box`: what the node keeps (arguments and result), and the result's boxes.

        Before them, a trace kind's ``record_one`` (when it has one) may record the call in one
        frame, exactly as the steps would, or leave it to them (:data:`USE_STEPS`).
        """
        if self.record_one is not None and not kwargs:
            out = self.record_one(prim, args, argnums)
            if out is not USE_STEPS:
                return out
        node, links = self.link(prim, args, kwargs, argnums)
        ans = self.run(prim, args, kwargs)
        drop = _KEEP_ALL
        if node is not None and prim.reads is not None and not (self.keep_all or _save_everything.on):
            live = node.argnums  # (``_drops``, its cached case inline)
            found = prim.drop_cache.get((len(args), live[0]) if len(live) == 1 else (len(args), *live))
            drop = found if found is not None else _drops(prim, live, len(args))
            least = self.min_drop_bytes
            for j in drop[0]:
                a = args[j]
                if getattr(a, "nbytes", -1) >= least and not isinstance(a, Box):
                    args[j] = ArraySpec(a)
        return self.save_and_box(prim, ans, node, links, args, kwargs, argnums, drop)

    # -- the steps of ``process`` (a kind of reverse trace overrides these)

    def link(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        """Replace this trace's boxes in ``args`` (at ``argnums``) by their values, and make the
        tape node of the call, linked to their nodes (None when the call is not recorded: here, a
        primitive with no derivative). Returns (the node, what :meth:`save_and_box` needs besides:
        here the versions of the enclosing boxes that stay in ``args``)."""
        parents: list[Any] = []
        versions: list[tuple[int, int]] | None = None
        for i, a in enumerate(args):
            if not isinstance(a, Box):
                continue
            if a._trace is self:
                parents.append(a._node)
                a = args[i] = a._value
                if not isinstance(a, Box):
                    continue
            # A box of an enclosing trace (or a constant box) is saved by reference:
            # a later in-place write to it must not change what this node saved.
            if type(a) is ConstBox:
                args[i] = a._value
            else:
                if versions is None:
                    versions = []
                versions.append((i, a._version))
        if not prim.differentiable:
            return None, versions
        node = _new_node(VJPNode)
        node.prim = prim
        node.parents = parents
        node.argnums = argnums
        node.kwargs = kwargs or _NO_KWARGS
        node.out_index = None
        return node, versions

    def run(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """The primitive on the unboxed arguments (straight to its fast path on plain arrays)."""
        fast = prim.fast_types
        for a in args:
            if type(a) not in fast:
                return prim.call(*args, **kwargs)  # lower-level boxes or another backend
        return prim.fast_fn(*args, **kwargs)

    def save_and_box(self, prim: Primitive, ans: Any, node: Any, links: Any, args: list[Any],
                     kwargs: dict[str, Any], argnums: list[int], drop: tuple[tuple[int, ...], bool]) -> Any:
        """Keep the arguments and the result on ``node`` (``drop``: the positions, already replaced
        by their specs where big, and whether the result, that no rule reads), with the versions of
        the enclosing boxes kept (``links``); returns the result's boxes (the raw result when
        ``node`` is None)."""
        if node is None:
            return ans
        drop_args, drop_ans = drop
        if links is not None and drop_args:
            links = [(i, v) for i, v in links if isinstance(args[i], Box)] or None
        node.args = args
        node.versions = links
        if drop_ans and getattr(ans, "nbytes", -1) >= self.min_drop_bytes and not isinstance(ans, Box):
            node.ans = ArraySpec(ans)
        else:
            node.ans = ans
        if prim.multiple_results:
            return tuple(
                VJPBox(a, self, VJPNode(None, (node,), (0,), None, None, a, k)) for k, a in enumerate(ans)
            )
        box = _new_box(VJPBox)
        box._value = ans
        box._trace = self
        box._node = node
        box._view = None
        box._version = 0
        return box


def _accumulate(prev: Any, ct: Any) -> Any:
    """``prev + ct``, written into ``prev`` when nothing else can see ``prev``.

    A cotangent that only the pass's dictionary holds (its reference count says so:
    no node saved it, no other parent shares it, the caller does not hold it) and that
    owns its memory is updated in place, saving an allocation of its size.
    """
    if (
        type(prev) is type(ct)
        and getattr(prev, "base", 0) is None
        and getrefcount(prev) <= _SOLE_REFS
        and prev.shape == ct.shape
        and prev.dtype == ct.dtype
    ):
        prev += ct
        return prev
    return prev + ct


def _count_sole_refs() -> int:
    """The reference count _accumulate sees for a value held only by the pass's dictionary."""
    seen = []

    class Probe:
        base = None

    def probe(prev: Any, ct: Any) -> Any:
        seen.append(getrefcount(prev))
        return prev

    grads = {0: Probe()}
    prev = grads.get(0)
    grads[0] = probe(prev, None)
    return seen[0]


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def tape_order(out_nodes: Iterable[VJPNode]) -> dict[VJPNode, int]:
    """Count, for each node reachable from ``out_nodes``, its uses by other reachable nodes."""
    counts: dict[VJPNode, int] = {}
    stack = []
    for n in out_nodes:
        if n not in counts:
            counts[n] = 0
            stack.append(n)
    while stack:
        node = stack.pop()
        for p in node.parents:
            c = counts.get(p)
            if c is None:
                counts[p] = 1
                stack.append(p)
            else:
                counts[p] = c + 1
    return counts


def forward_order(out_nodes: Iterable[VJPNode]) -> list[VJPNode]:
    """Every node reachable from ``out_nodes``, each after its parents: the reverse of
    the order in which :func:`backward_pass` runs them (a forward replay, ``linearize``)."""
    roots = list(dict.fromkeys(out_nodes))
    counts = tape_order(roots)
    ready = [n for n in roots if counts[n] == 0]
    order: list[VJPNode] = []
    while ready:
        node = ready.pop()
        order.append(node)
        for p in node.parents:
            c = counts[p] - 1
            counts[p] = c
            if c == 0:
                ready.append(p)
    order.reverse()
    return order


_SOLE_REFS = _count_sole_refs()


class Visitor:
    """What a layer on the engine adds to :func:`backward_pass`, node by node.

    Given a visitor, the pass hands it each node's own work: ``visit(node, g, live)``
    gets the node and its summed cotangent (None when none arrived; for a node of
    several results the list of per-result cotangents) and returns the cotangents
    of ``node.parents`` (a sequence in the same order; None for none), or, for a
    node with ``out_index`` set, that result's cotangent. ``live`` is False when
    no parent of the node leads to a target of a pruned pass (the node then needs
    no running, only what happens on the way in: hooks, capture). The pass itself
    keeps the schedule: dependency counts, summing where values fan out, filing
    the results of multi-result nodes. The Tensor layer's visitor
    (``funcgrad.tensor.backward``) runs hooks, anomaly checks and ``.grad``
    accumulation there.

    ``step``, when set (a pass with no ``targets`` only), is tried first for a node
    of one parent that got a cotangent: ``step(node, g)`` does the node's whole work
    and returns its parent's cotangent (None for none), or :data:`DECLINE` when the
    node needs a full ``visit``. It exists for speed: the walk files that one
    cotangent itself (the common node of a chain, with no per-node sequence to build).
    """

    step: Any = None

    def visit(self, node: VJPNode, g: Any, live: bool) -> Any:
        raise NotImplementedError


DECLINE = object()  # what Visitor.step returns for a node it leaves to Visitor.visit


def _needed_order(roots: list[VJPNode], targets: Iterable[VJPNode]) -> dict[VJPNode, int]:
    """:func:`tape_order` restricted to the nodes from which some node of ``targets`` is reachable."""
    want = set(targets)
    needed: set[VJPNode] = set()
    for node in forward_order(roots):  # parents first: a node is needed when it or a parent is
        if node in want or any(p in needed for p in node.parents):
            needed.add(node)
    counts = dict.fromkeys(needed, 0)
    for node in needed:
        for p in node.parents:
            if p in needed:
                counts[p] += 1
    return counts


class _Reentry(threading.local):
    depth = 0  # backward passes running in this thread (more than one: a node's rule started one)


_reentry = _Reentry()
_carried: list[Any] = [_trace._local, _watchers]  # thread-local state a pass moved to a fresh thread takes


def carry_thread_state(*locals_: Any) -> None:
    """Register ``threading.local`` objects (a layer's per-thread modes) whose state a nested
    backward pass takes along when it moves to a fresh thread (see :func:`backward_pass`)."""
    _carried.extend(locals_)


def _stack_depth() -> int:
    n = 0
    f: Any = sys._getframe()
    while f is not None:
        n += 1
        f = f.f_back
    return n


def _on_fresh_thread(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` on a new thread that starts with this thread's carried state and context
    variables; its result, or its error raised here."""
    state = [(loc, dict(vars(loc))) for loc in _carried]
    ctx = contextvars.copy_context()
    result: list[Any] = []

    def work() -> None:
        for loc, values in state:
            vars(loc).update(values)
        try:
            result.append((True, ctx.run(fn, *args)))
        except BaseException as err:  # noqa: BLE001 - re-raised in the calling thread
            result.append((False, err))

    worker = threading.Thread(target=work, name="funcgrad-reentrant-backward")
    worker.start()
    worker.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def backward_pass(outputs: list[tuple[VJPNode, Any]], release: bool = False, visitor: Visitor | None = None,
                  targets: Iterable[VJPNode] | None = None) -> dict[VJPNode, Any]:
    """Propagate output cotangents to the input nodes; returns {input node: cotangent}.

    ``outputs`` pairs each output's node with its cotangent. With ``release``,
    each node's saved values are dropped once it has run (one-shot passes such
    as ``grad``), so memory falls as the pass proceeds. With ``targets``, only
    the nodes that lead to one of them run. A ``visitor`` (:class:`Visitor`)
    does each node's own work in place of the primitive's VJP rules; the walk,
    with its order and its sums, is this one for every layer.

    A pass started inside another's node (reentrant: a custom rule or Function
    whose backward differentiates) that finds the stack deep (a third of Python's
    recursion limit) goes on on a fresh thread, whose stack starts empty, with
    this thread's modes (:func:`carry_thread_state`): nesting thousands deep works.
    """
    if _reentry.depth and _stack_depth() > sys.getrecursionlimit() // 3:
        return _on_fresh_thread(backward_pass, outputs, release, visitor, targets)  # type: ignore[no-any-return]
    _reentry.depth += 1
    try:
        return _walk(outputs, release, visitor, targets)
    finally:
        _reentry.depth -= 1


def _walk(outputs: list[tuple[VJPNode, Any]], release: bool, visitor: Visitor | None,
          targets: Iterable[VJPNode] | None) -> dict[VJPNode, Any]:
    roots = [n for n, _ in outputs]
    counts = tape_order(roots) if targets is None else _needed_order(roots, targets)
    grads: dict[VJPNode, Any] = {}
    for node, g in outputs:
        if node in counts:
            grads[node] = _add(grads.get(node), g)
    ready = [n for n in grads if counts[n] == 0]
    inputs: dict[VJPNode, Any] = {}
    visit = visitor.visit if visitor is not None else None
    step = visitor.step if visitor is not None and targets is None else None
    while ready:
        node = ready.pop()
        g = grads.pop(node, None)
        prim = node.prim
        parents = node.parents
        if visit is not None:
            if step is not None and g is not None and len(parents) == 1:
                ct = step(node, g)
                if ct is not DECLINE:
                    parent = parents[0]
                    if ct is not None:
                        prev = grads.get(parent)
                        grads[parent] = ct if prev is None else _accumulate(prev, ct)
                    left = counts[parent] - 1
                    counts[parent] = left
                    if left == 0:
                        ready.append(parent)
                    ct = g = None  # hold no cotangent the next visit may find its sole owner of
                    continue
            if targets is None:
                g = visit(node, g, True)
            else:
                g = visit(node, g, any(p in counts for p in parents))
            if node.out_index is None:
                if g is None:
                    g = ()
                for parent, ct in zip(parents, g):
                    c = counts.get(parent)
                    if c is None:
                        continue  # pruned: leads to no target
                    if ct is not None:
                        prev = grads.get(parent)
                        grads[parent] = ct if prev is None else _accumulate(prev, ct)
                    counts[parent] = c - 1
                    if c == 1:
                        ready.append(parent)
                ct = g = None  # hold no cotangent the next visit may find its sole owner of
                continue
            prim = None  # file the result's cotangent below
        if prim is None:
            if node.out_index is None:
                inputs[node] = g
            else:
                # One result of a multi-result primitive: file its cotangent in the
                # parent's tuple.
                parent = parents[0]
                c = counts.get(parent)
                if c is None:
                    continue  # pruned: the node itself was the target
                slot = grads.get(parent)
                if slot is None:
                    slot = grads[parent] = [None] * len(parent.ans)
                slot[node.out_index] = _add(slot[node.out_index], g)
                counts[parent] = c - 1
                if c == 1:
                    ready.append(parent)
            continue
        if g is not None:
            if node.versions:
                node.check_versions()
            args, kwargs, ans = node.args, node.kwargs, node.ans
            if len(parents) == 1 and prim.vjp_all is None and not prim.multiple_results:
                # the common case, one traced argument: no lists, no zip
                parent = parents[0]
                rule = prim.vjps.get(node.argnums[0])
                if rule is None:
                    raise prim.missing_rule("VJP", node.argnums[0])
                ct = rule(g, ans, *args, **kwargs)
                if _trace.result_hook is not None:  # fg.debug_nans
                    _trace.result_hook(prim, ct, "vjp")
                if ct is not None:
                    prev = grads.get(parent)
                    grads[parent] = ct if prev is None else _accumulate(prev, ct)
                c = counts[parent] - 1
                counts[parent] = c
                if c == 0:
                    ready.append(parent)
                if release:
                    node.args = node.kwargs = node.ans = None
                continue
            if prim.multiple_results:
                # vjp_all sees None for unused results; the per-argument rules get zeros there
                g_all = tuple(g)
                if prim.vjp_all is None:
                    g = tuple(zeros_like(a) if gk is None else gk for gk, a in zip(g, ans))
            else:
                g_all = g
            cts = node.run_rules(g, g_all, ans, args, kwargs)
            if _trace.result_hook is not None:  # fg.debug_nans
                _trace.result_hook(prim, tuple(c for c in cts if c is not None), "vjp")
            for parent, ct in zip(parents, cts):
                if ct is not None:
                    prev = grads.get(parent)
                    grads[parent] = ct if prev is None else _accumulate(prev, ct)
                c = counts[parent] - 1
                counts[parent] = c
                if c == 0:
                    ready.append(parent)
        else:
            for parent in parents:
                c = counts[parent] - 1
                counts[parent] = c
                if c == 0:
                    ready.append(parent)
        if release:
            node.args = node.kwargs = node.ans = None
    return inputs
