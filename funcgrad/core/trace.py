"""Traces, boxes and primitives: how a value becomes traced.

A *trace* is one activation of a transform (one call of ``grad``, ``jvp``,
``vmap`` ...). Each trace has a ``level``; a later (inner) trace has a higher
level. A value traced by a trace is wrapped in a :class:`Box` subclass that
belongs to that trace: ``VJPBox`` carries a tape node, ``JVPBox`` a tangent.

A *primitive* is a raw function (say ``numpy.sin``) wrapped so that when any
argument is boxed, the wrapper

1. picks the boxed arguments of the highest-level trace,
2. unboxes them (lower-level boxes stay boxed: the recursive call handles
   them, so nested transforms never confuse their perturbations), and
3. asks that trace to record the call (``Trace.process``).

With nothing boxed, the wrapper costs one scan of the positional arguments
before the raw call: the fast path.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Protocol, Sequence

__all__ = [
    "Box",
    "Trace",
    "Primitive",
    "primitive",
    "nondiff_primitive",
    "unbox_all",
    "shape_of",
    "contains_box",
    "is_traced",
    "LeakedTraceError",
    "current_traces",
]

_levels = itertools.count(1)

# Debugging hook (fg.debug_nans): when set, ``result_hook(prim, value, kind)`` sees every
# primitive's result ("forward", untraced or traced) and what its derivative rules
# return ("vjp" in the backward pass, "jvp" in forward mode), and returns the value or
# raises. None: no cost beyond one global lookup on the fast path.
result_hook: Callable[["Primitive", Any, str], Any] | None = None
# Registered by funcgrad.numpy: turns a (nested) list or tuple holding traced values,
# passed where an array is expected, into one traced array (NumPy's array_like).
pack_sequence: Callable[[Any], Any] | None = None
_local = threading.local()
_get_ident = threading.get_ident


def current_traces() -> list["Trace"]:
    """The traces open in this thread, innermost last."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class LeakedTraceError(RuntimeError):
    """A traced value was used after the transform that traced it returned."""


class Trace:
    """One activation of a transform. Subclasses implement ``process``.

    Used as a context manager: entering opens the trace (it becomes the
    innermost in this thread), leaving closes it for good.
    """

    __slots__ = ("level", "name", "active", "thread")

    def __init__(self, name: str, level: int | None = None) -> None:
        self.level = next(_levels) if level is None else level
        self.name = name
        self.active = False
        # The thread that opened the trace (None: usable from any thread, as the
        # always-open tensor and constant traces). Its values belong to that thread.
        self.thread: int | None = None

    def __enter__(self) -> "Trace":
        self.active = True
        self.thread = _get_ident()
        current_traces().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.active = False
        stack = current_traces()
        # Traces normally close innermost-first; tolerate odd orders.
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            stack.remove(self)

    def process(self, prim: "Primitive", args: list[Any], kwargs: dict[str, Any], argnums: list[int]) -> Any:
        """Record ``prim(*args, **kwargs)``; ``args[i]`` for i in argnums are our boxes."""
        raise NotImplementedError

    def leaked(self) -> LeakedTraceError:
        return LeakedTraceError(
            f"a value traced by {self.name} (trace level {self.level}) was used after "
            f"{self.name} returned. Traced values must not escape the function being "
            f"transformed: return them as outputs (or has_aux=True auxiliary data) instead "
            f"of storing them in globals, closures or object attributes."
        )

    def foreign_thread(self) -> LeakedTraceError:
        return LeakedTraceError(
            f"a value traced by {self.name} (trace level {self.level}) was used from another "
            f"thread while {self.name} is still running in the thread that created it. Traced "
            f"values belong to their transform's thread: pass plain arrays to other threads "
            f"and let each thread run its own transform"
        )

    def __repr__(self) -> str:
        state = "open" if self.active else "closed"
        return f"<{type(self).__name__} {self.name} level={self.level} {state}>"


class TapeNode(Protocol):
    """What a box of a reverse trace points at (``core.reverse.VJPNode`` is one): the
    recorded call, its parents' nodes, the positions they fill, and what it saved.
    A protocol, so that this module needs no import of ``reverse.py``."""

    prim: Primitive | None
    parents: Sequence[Any]
    argnums: Sequence[int]
    args: Any
    kwargs: Any
    ans: Any
    out_index: int | None


class Box:
    """A value traced by one trace. Array behaviour is added by funcgrad.numpy."""

    # Every kind of box shares one layout (subclasses add no slots), so a box can
    # be rebound in place to a value of another trace: that is how ``a[i] = v``
    # works on traced arrays. Each trace uses the slots it needs.
    # ``_view`` (None, or how this box views another, see funcgrad.numpy.inplace)
    # and ``_version`` (bumped by each in-place write) serve in-place updates.
    # ``_history`` keeps the states a box had before in-place writes, by version, for
    # tape nodes that saved it earlier (set only by a write; see reverse.VJPNode).
    __slots__ = ("_value", "_trace", "_node", "_tangent", "_bdim", "_view", "_version", "_history", "__weakref__")
    # Let NumPy defer to our reflected operators (ndarray + Box -> Box.__radd__).
    __array_priority__ = 1000.0

    # Slot types, for type checkers only (no runtime effect).
    _value: Any
    _trace: Trace
    _node: TapeNode  # reverse mode
    _tangent: Any  # forward mode
    _bdim: int  # batching
    _view: Any
    _version: int
    _history: dict[int, Any]

    def __init__(self, value: Any, trace: Trace) -> None:
        self._value = value
        self._trace = trace
        self._view = None
        self._version = 0

    def _shape(self) -> tuple[Any, ...]:
        """The shape user code sees (a batching box hides its batch axis)."""
        v = self._value
        return v._shape() if isinstance(v, Box) else tuple(getattr(v, "shape", ()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._value!r}, trace={self._trace.name})"


class Primitive:
    """A raw function plus its derivative rules; calling it traces.

    ``vjps[i](g, ans, *args, **kwargs)`` returns the cotangent of positional
    argument ``i`` given the output cotangent ``g``; ``jvps[i](t, ans, *args,
    **kwargs)`` returns the output tangent contributed by a tangent ``t`` of
    argument ``i``. Rules are written with differentiable operations, so they
    can be traced again for higher derivatives. ``vjp_all``/``jvp_all``, when
    set, take precedence and see all arguments at once.
    """

    __slots__ = (
        "raw", "name", "vjps", "jvps", "vjp_all", "jvp_all", "batch_rule", "multiple_results",
        "differentiable", "pure", "check_kwargs", "max_args", "reads", "drop_cache", "fast_types", "fast_fn", "call",
    )

    def __init__(self, raw: Callable[..., Any], name: str | None = None, multiple_results: bool = False):
        self.raw = raw
        self.multiple_results = multiple_results
        self.differentiable = True
        raw_name: str = getattr(raw, "__name__", repr(raw))
        self.name = name or raw_name
        self.vjps: dict[int, Callable[..., Any]] = {}
        self.jvps: dict[int, Callable[..., Any]] = {}
        # Optional rules that handle every argument in one call (custom rules,
        # or where sharing work between arguments pays):
        # vjp_all(g, ans, argnums, *args, **kwargs) -> one cotangent per argnum (None = zero);
        # jvp_all(tangents, ans, *args, **kwargs), tangents[i] None where args[i] is not traced.
        self.vjp_all: Callable[..., Any] | None = None
        self.jvp_all: Callable[..., Any] | None = None
        self.batch_rule: Callable[..., Any] | None = None
        # check_kwargs(args, kwargs) may refuse options that the rules do not handle
        # (keyword arguments, or more than max_args positional ones) when the call is
        # traced; untraced calls never see it.
        self.check_kwargs: Callable[..., Any] | None = None
        self.max_args = 1 << 30
        # reads[argnum]: what the VJP rule of ``argnum`` reads (argument positions, and
        # "ans" for the result), as declared by defprimitive; the tape keeps only the
        # shape and dtype of the rest. None: the rules may read everything.
        self.reads: dict[int, frozenset[Any]] | None = None
        # False for calls with effects (random draws, communication): never dropped or merged
        self.pure = True
        self.drop_cache: dict[tuple[int, ...], tuple[tuple[int, ...], bool]] = {}
        # the untraced fast path (see primitive()): traces use it for fully unboxed calls
        self.fast_types: frozenset[type] = frozenset()
        self.fast_fn: Callable[..., Any] = raw
        self.call: Callable[..., Any] = raw  # replaced by the traced entry point

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"

    def missing_rule(self, kind: str, argnum: int) -> NotImplementedError:
        return NotImplementedError(
            f"{kind} of argument {argnum} of primitive '{self.name}' is not defined: "
            f"register it with fg.def{kind.lower()}({self.name}, ...) or wrap the call in "
            f"fg.stop_gradient if no derivative is wanted"
        )


def primitive(raw: Callable[..., Any], name: str | None = None, *, multiple_results: bool = False) -> Callable[..., Any]:
    """Wrap ``raw`` as a differentiable primitive; add rules with defvjp/defjvp.

    Example::

        @fg.primitive
        def cube(x):
            return x ** 3
        fg.defvjp(cube, lambda g, ans, x: g * 3 * x ** 2)
        fg.defjvp(cube, lambda t, ans, x: t * 3 * x ** 2)

    With ``multiple_results=True`` the raw function returns a tuple of arrays;
    rules then take and return tuples (a cotangent tuple has zeros filled in
    for outputs that were not used).
    """
    prim = Primitive(raw, name, multiple_results)
    # ``raw.fast_path = (types, fn)``: when every positional argument's type is
    # one of ``types`` (plain host arrays and scalars), call ``fn`` at once.
    fast_types, fast_fn = getattr(raw, "fast_path", (frozenset(), raw))
    out_ok = frozenset(fast_types) | {type(None)}
    prim.fast_types, prim.fast_fn = frozenset(fast_types), fast_fn

    def traced_call(*args: Any, **kwargs: Any) -> Any:
        for a in args:
            if type(a) not in fast_types:
                break
        else:  # the fast path: one type check per argument, then the raw call
            if not kwargs or type(kwargs.get("out")) in out_ok:
                if result_hook is None:
                    return fast_fn(*args, **kwargs)
                return result_hook(prim, fast_fn(*args, **kwargs), "forward")
        if kwargs and kwargs.get("out") is not None:
            return call_with_out(traced_call, raw, args, kwargs)
        top = None
        argnums: list[int] = []  # positions boxed by the highest-level trace
        i = 0
        for a in args:
            if isinstance(a, Box):
                if a._view is not None:
                    a._view.sync(a)  # a view whose base was written in place
                t = a._trace
                if top is None or t.level > top.level:
                    top = t
                    argnums = [i]
                elif t is top:
                    argnums.append(i)
            i += 1
        if top is None:  # nothing traced (e.g. another backend's arrays)
            if pack_sequence is not None and any(type(a) in (list, tuple) and _holds_box(a) for a in args):
                # array-likes holding traced values (fnp.mean([x, x + 2])): make them arrays first
                return traced_call(*[pack_sequence(a) if type(a) in (list, tuple) and _holds_box(a) else a
                                     for a in args], **kwargs)
            if result_hook is not None:
                return result_hook(prim, raw(*args, **kwargs), "forward")
            return raw(*args, **kwargs)
        if not top.active:
            raise top.leaked()
        if top.thread is not None and top.thread != _get_ident():
            raise top.foreign_thread()
        if prim.check_kwargs is not None and (kwargs or len(args) > prim.max_args):
            prim.check_kwargs(args, kwargs)
        if result_hook is not None:
            return result_hook(prim, top.process(prim, list(args), kwargs, argnums), "forward")
        return top.process(prim, list(args), kwargs, argnums)

    traced_call.__name__ = prim.name
    traced_call.__qualname__ = prim.name
    traced_call.__doc__ = getattr(raw, "__doc__", None)
    traced_call.__wrapped__ = raw  # type: ignore[attr-defined]
    traced_call.primitive = prim  # type: ignore[attr-defined]
    prim.call = traced_call  # the traced entry point, used by traces to recurse
    return traced_call


def _holds_box(seq: Any) -> bool:
    for v in seq:
        if isinstance(v, Box) or (type(v) in (list, tuple) and _holds_box(v)):
            return True
    return False


def call_with_out(traced: Callable[..., Any], raw: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``f(..., out=o)``: NumPy's own call when nothing is traced; otherwise the
    result is computed functionally and written into ``o`` (which must then be
    an array that can hold traced values, see funcgrad.numpy.inplace)."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, Box) and not any(isinstance(a, Box) for a in args):
        return raw(*args, out=out, **kwargs)
    if kwargs.get("where", True) is not True:
        raise TypeError(
            "out= together with where= is not supported on traced values (the entries where= "
            "leaves alone cannot be tracked); use fnp.where(mask, f(x), out) instead"
        )
    result = traced(*args, **kwargs)
    write = getattr(out, "_write_all", None)
    if write is None and not isinstance(result, Box):
        out[...] = result  # an untraced result (no derivative) into a plain array
        return out
    if write is None:
        raise TypeError(
            "out= is a plain array but the result is traced: it cannot hold a derivative. Create "
            "the output array with funcgrad.numpy (fnp.zeros, fnp.empty ...) inside the "
            "transformed function, or use the return value instead of out="
        )
    write(result)
    return out


def unbox_all(x: Any) -> Any:
    """Strip every level of boxing from ``x``."""
    while isinstance(x, Box):
        x = x._value
    return x


def shape_of(x: Any) -> tuple[Any, ...]:
    """The shape user code sees: a box's (a batching box hides its batch axis), an
    array's, or () for a scalar."""
    if isinstance(x, Box):
        return x._shape()
    return tuple(getattr(x, "shape", ()))


def contains_box(obj: Any) -> bool:
    """True when ``obj`` is a traced value or nested lists/tuples hold one."""
    if isinstance(obj, Box):
        return True
    if isinstance(obj, (list, tuple)):
        return any(contains_box(o) for o in obj)
    return False


def is_traced(x: Any) -> bool:
    """True when ``x`` is a value traced by some transform."""
    return isinstance(x, Box)


def nondiff_primitive(raw: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """Wrap ``raw`` as a primitive with no derivative (argmax, comparisons, floor ...).

    Differentiating traces pass it through: the result is not traced, so it
    carries a zero derivative. Other traces (batching) still see the call.
    """
    fn = primitive(raw, name)
    fn.primitive.differentiable = False  # type: ignore[attr-defined]
    return fn
