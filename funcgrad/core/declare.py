"""The one declaration of a primitive: forward function, rules, batching, what rules read.

A primitive is declared once, beside its forward function::

    def _cube(x):
        return x ** 3

    cube = defprimitive(
        _cube,
        vjp=lambda g, ans, x: g * 3 * x ** 2,
        jvp=lambda t, ans, x: t * 3 * x ** 2,
        batch_from=elementwise_rule,  # vmap: align batch axes, call once
        reads={0: {0}},               # the VJP of x reads x, not the result
    )

Every consumer reads that one declaration: the reverse trace keeps on the tape
only what ``reads`` says the VJP rules read; staged execution (``fg.jit``)
drops dead calls only where ``pure`` is true; the Tensor layer exposes the saved
values as ``_saved_*``. The older registration functions (``fg.primitive``
followed by ``fg.defvjp`` / ``fg.defjvp``) fill the same :class:`Primitive`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar, Union, cast

from typing_extensions import ParamSpec

from .trace import Primitive, primitive

__all__ = ["defprimitive", "front_of", "Rules"]

Rule = Callable[..., Any]
P = ParamSpec("P")
R = TypeVar("R")
# One rule (for argument 0), a sequence of rules (argument k; None skips one), or
# a mapping {argnum: rule}.
Rules = Union[Rule, Sequence[Union[Rule, None]], Mapping[int, Rule], None]


def _per_argument(rules: Rules, what: str, name: str) -> dict[int, Rule]:
    if rules is None:
        return {}
    if callable(rules):
        return {0: rules}
    if isinstance(rules, Mapping):
        items: Iterable[tuple[int, Any]] = rules.items()
    elif isinstance(rules, (list, tuple)):
        items = enumerate(rules)
    else:
        raise TypeError(
            f"defprimitive({name!r}): {what} must be a rule, a sequence of rules (one per "
            f"argument, None to skip) or a dict {{argnum: rule}}; got {type(rules).__name__}"
        )
    out: dict[int, Rule] = {}
    for argnum, rule in items:
        if rule is None:
            continue
        if not callable(rule):
            raise TypeError(f"defprimitive({name!r}): {what} rule for argument {argnum} is not callable")
        out[int(argnum)] = rule
    return out


def _reads(reads: Mapping[int, Iterable[Any]] | None) -> dict[int, frozenset[Any]] | None:
    if reads is None:
        return None
    return {int(i): frozenset(r) for i, r in reads.items()}


def linear_jvp(fn: Callable[..., Any]) -> Rule:
    """The JVP of argument 0 of a function linear in it: ``fn`` applied to the tangent."""

    def jvp(t: Any, ans: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(t, *args, **kwargs)

    return jvp


def defprimitive(
    raw: Callable[P, R],
    *,
    name: str | None = None,
    vjp: Rules = None,
    jvp: Rules = None,
    vjp_all: Rule | None = None,
    jvp_all: Rule | None = None,
    linear: bool = False,
    batch: Rule | None = None,
    batch_from: Callable[[Callable[..., Any]], Rule] | None = None,
    reads: Mapping[int, Iterable[Any]] | None = None,
    differentiable: bool = True,
    pure: bool = True,
    multiple_results: bool = False,
    doc: str | None = None,
    check_kwargs: Callable[[tuple[Any, ...], dict[str, Any]], None] | None = None,
    max_args: int | None = None,
) -> Callable[P, R]:
    """Declare a primitive in one place and return the public (traceable) function.

    - ``vjp``: ``rule(g, ans, *args, **kwargs) -> cotangent`` of one positional
      argument; a single rule is argument 0's, a sequence gives argument ``k``'s
      (None skips one), a dict ``{argnum: rule}`` names them.
    - ``jvp``: likewise, ``rule(t, ans, *args, **kwargs) -> output tangent``.
      ``linear=True``: linear in argument 0 (its JVP is the function of the tangent).
    - ``vjp_all(g, ans, argnums, *args, **kwargs)`` / ``jvp_all(tangents, ans, *args,
      **kwargs)``: one rule for every argument at once (they take precedence).
    - ``batch``: the vmap rule ``rule(args, dims, **kwargs) -> (out, out_dim)``;
      ``batch_from``: a builder called with the public function that returns the
      rule (``batch_from=elementwise_rule`` for a broadcasting function).
    - ``reads``: ``{argnum: positions (and "ans") its VJP rule reads}``; the tape
      keeps only shapes and dtypes of the rest. None (default): rules may read all.
    - ``differentiable=False``: a primitive with no derivative (argmax, floor ...):
      differentiating traces pass it through; batching still sees it.
    - ``pure=False``: the call has effects (random draws, communication): staged
      programs never drop or merge it.
    - ``multiple_results``: ``raw`` returns a tuple; rules take and return tuples.
    - ``doc``: the public docstring (default: ``raw``'s).
    - ``check_kwargs(args, kwargs)``: called on traced calls that pass keyword
      arguments or more than ``max_args`` positional ones, to refuse options the
      rules do not handle (untraced calls never see it).

    Rules are written with differentiable operations, so they differentiate again.
    The public function has ``raw``'s signature (type checkers check calls of it).

    Example::

        cube = fg.defprimitive(lambda x: x ** 3, name="cube",
                               vjp=lambda g, ans, x: g * 3 * x ** 2,
                               jvp=lambda t, ans, x: t * 3 * x ** 2)
        fg.grad(cube)(2.0)   # 12.0
    """
    label: str = name or str(getattr(raw, "__name__", repr(raw)))
    fn = primitive(raw, name, multiple_results=multiple_results)
    prim: Primitive = fn.primitive  # type: ignore[attr-defined]
    prim.differentiable = differentiable
    prim.pure = pure
    prim.vjps.update(_per_argument(vjp, "vjp", label))
    prim.jvps.update(_per_argument(jvp, "jvp", label))
    if linear:
        if 0 in prim.jvps:
            raise TypeError(f"defprimitive({label!r}): give either linear=True or a jvp for argument 0, not both")
        prim.jvps[0] = linear_jvp(fn)
    prim.vjp_all = vjp_all
    prim.jvp_all = jvp_all
    if batch is not None and batch_from is not None:
        raise TypeError(f"defprimitive({label!r}): give batch or batch_from, not both")
    prim.batch_rule = batch_from(fn) if batch_from is not None else batch
    prim.reads = _reads(reads)
    prim.drop_cache.clear()
    prim.check_kwargs = check_kwargs
    if max_args is not None:
        prim.max_args = max_args
    if doc is not None:
        fn.__doc__ = doc
    return cast("Callable[P, R]", fn)


def front_of(declared: Callable[..., Any]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: the decorated function is the public face of the primitive ``declared``
    (what :func:`defprimitive` returned): it takes the user's arguments and calls
    ``declared``. Its ``primitive`` is that primitive, so that the layers that look a
    function's primitive up (the Tensor layer's direct recording, ``fg.jit``) find it,
    said at the declaration rather than patched on afterwards.

    Example::

        _sum = defprimitive(_sum_raw, name="sum", vjp=...)

        @front_of(_sum)
        def sum(a, axis=None, keepdims=False):
            return _sum(a, axis, keepdims)
    """
    prim = declared.primitive  # type: ignore[attr-defined]

    def mark(face: Callable[P, R]) -> Callable[P, R]:
        face.primitive = prim  # type: ignore[attr-defined]
        return face

    return mark
