"""``cond``/``switch`` and ``while_loop`` on a predicate staged by ``fg.jit``: primitives.

Eagerly, :mod:`funcgrad.transforms.control` reads the predicate and runs only what it
chooses. Inside ``fg.jit`` the predicate is not known while tracing (a branch read then
would be frozen into every later call), so the choice is recorded as one equation:

- ``switch(index, *operands)`` runs ``funs[index]`` (clamped; for ``cond``, ``funs`` is
  ``[false_fun, true_fun]`` and ``index`` the predicate's truth). Its VJP and JVP are
  switches over the branches' VJPs and JVPs; batched with an unbatched index it is one
  switch of the batched branches.
- ``while(*carry)`` runs ``body`` while ``cond`` holds. Forward mode is a while loop over
  the carry and its tangent; reverse mode needs the trip count when tracing and is
  refused (as JAX does; use ``fori_loop`` or ``scan`` with a fixed length). Batched, it
  runs until every example is done, freezing the finished ones.

Each function works on flat leaves. It is staged into a program first, and traced
values it reads through its closure (arguments of the jitted function, say) become
extra operands of the equation (closure conversion, as JAX does); the equation then
runs the program (:func:`funcgrad.jit.ir.eval_program`), so the replay never calls the
user's function with values of a finished trace. Where a function cannot be staged on
its own (Python decides on a traced value, or it reads a value batched by an enclosing
vmap through its closure), ``cond``/``switch`` run every branch and select, and
``while_loop`` says what to change. While ``fg.jit`` traces the equation, each program
is staged again at its exact operands (:func:`funcgrad.jit.bodies.stage_body`), so the
native tier compiles real branches and loops.

Example::

    f = fg.jit(lambda x: fg.cond(fnp.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x))
    f(fnp.ones(3)), f(-fnp.ones(3))        # both branches right, one program
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..core import defprimitive, get_primitive
from ..core.trace import shape_of
from ..jit.ir import eval_program
from ..jit.bodies import replayed, stage_body, stage_closure, staging_now
from ..jit.loops import Branches, WhileLoop, avals, register_loop

__all__ = ["staged_switch", "staged_while"]

Flat = Callable[..., tuple[Any, ...]]


def _raw(x: Any) -> Any:
    from ..core import unbox_all

    return unbox_all(x)


def _is_float(x: Any) -> bool:
    import numpy as np

    raw = _raw(x)
    d = getattr(raw, "dtype", None)
    return (np.dtype(d) if d is not None else np.result_type(raw)).kind in "fc"


class _Funs:
    """The flat functions of one switch or while equation, and their staged programs."""

    __slots__ = ("funs", "is_cond", "bodies")

    def __init__(self, funs: Sequence[Flat], is_cond: bool = False) -> None:
        self.funs = list(funs)
        self.is_cond = is_cond
        self.bodies: dict[Any, Any] = {}  # operands' avals -> [program per function] (or None)

    def stage(self, leaves: Sequence[Any]) -> None:
        """While fg.jit traces: each function staged at these operands, once per avals."""
        if staging_now():
            key = avals(leaves)
            if key not in self.bodies:
                progs = [stage_body(f, list(leaves), "branch") for f in self.funs]
                self.bodies[key] = None if any(p is None for p in progs) else progs

    def programs(self, ins: Sequence[Any]) -> Any:
        return self.bodies.get(avals(ins))


def _chosen(index: Any, spec: _Funs) -> int:
    if spec.is_cond:
        return 1 if bool(index) else 0
    return min(max(int(index), 0), len(spec.funs) - 1)


# -- switch -------------------------------------------------------------------------------------

def _switch_raw(index: Any, *leaves: Any, spec: _Funs) -> tuple[Any, ...]:
    spec.stage(leaves)
    return tuple(spec.funs[_chosen(index, spec)](*leaves))


def _switch_vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], index: Any, *leaves: Any,
                    spec: _Funs) -> list[Any]:
    import funcgrad.numpy as fnp
    from .custom import _fill, _partial_vjp

    g = _fill(g, ans)
    n = len(leaves)
    diff = [i for i in range(n) if _is_float(leaves[i])]

    def vjp_of(f: Flat) -> Flat:
        def f_vjp(*args: Any) -> tuple[Any, ...]:
            return tuple(_partial_vjp(f, args[:n], diff, tuple(args[n:])))
        return f_vjp

    cts = _switch(index, *leaves, *g, spec=_Funs([vjp_of(f) for f in spec.funs], spec.is_cond))
    by_leaf = dict(zip(diff, cts))
    return [fnp.zeros_like(index) if a == 0 else by_leaf.get(a - 1, fnp.zeros_like(leaves[a - 1])) for a in argnums]


def _switch_jvp_all(tangents: list[Any], ans: tuple[Any, ...], index: Any, *leaves: Any, spec: _Funs) -> tuple[Any, ...]:
    from .custom import _partial_jvp

    n = len(leaves)
    moving = [i for i in range(n) if tangents[i + 1] is not None]

    def jvp_of(f: Flat) -> Flat:
        def f_jvp(*args: Any) -> tuple[Any, ...]:
            full: list[Any] = [None] * n
            for i, t in zip(moving, args[n:]):
                full[i] = t
            return tuple(_partial_jvp(f, args[:n], full))
        return f_jvp

    if not moving:
        import funcgrad.numpy as fnp

        return tuple(fnp.zeros_like(a) for a in ans)
    return tuple(_switch(index, *leaves, *[tangents[i + 1] for i in moving],
                         spec=_Funs([jvp_of(f) for f in spec.funs], spec.is_cond)))


def _moved(args: Sequence[Any], dims: Sequence[Any]) -> list[Any]:
    import funcgrad.numpy as fnp

    return [a if d is None or d == 0 else fnp.moveaxis(a, d, 0) for a, d in zip(args, dims)]


def _switch_batch(args: list[Any], dims: list[Any], spec: _Funs) -> tuple[Any, Any]:
    import funcgrad.numpy as fnp
    from .batching import vmap

    size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
    index, leaves = args[0], _moved(args[1:], dims[1:])
    in_axes = tuple(None if d is None else 0 for d in dims[1:])
    batched = [vmap(f, in_axes=in_axes, axis_size=size) for f in spec.funs]
    if dims[0] is None:
        out = _switch(index, *leaves, spec=_Funs(batched, spec.is_cond))
        return out, (0,) * len(out)
    index = fnp.moveaxis(index, dims[0], 0)
    index = fnp.not_equal(index, 0) if spec.is_cond else fnp.clip(index, 0, len(spec.funs) - 1)
    outs = [f(*leaves) for f in batched]
    result = list(outs[-1])
    for k in range(len(outs) - 2, -1, -1):
        take = fnp.logical_not(index) if spec.is_cond else fnp.equal(index, k)
        result = [fnp.where(fnp.reshape(take, (size,) + (1,) * (len(shape_of(a)) - 1)), a, b)
                  for a, b in zip(outs[k], result)]
    return tuple(result), (0,) * len(result)


_switch = defprimitive(_switch_raw, name="switch", vjp_all=_switch_vjp_all, jvp_all=_switch_jvp_all,
                       batch=_switch_batch, multiple_results=True)


def _switch_branches(e: Any) -> Branches | None:
    spec: _Funs = e.kwargs["spec"]
    progs = spec.programs(e.ins[1:])
    return None if progs is None else Branches(progs, spec.is_cond)


register_loop(get_primitive(_switch), _switch_branches)


def _program_fn(prog: Any, n: int, picks: list[int], passed: int = 0) -> Flat:
    """The staged ``prog`` as a flat function of ``n`` operands and the shared captured values
    (``picks``: which of them ``prog`` reads), returning its results and then the last ``passed``
    arguments unchanged."""
    def run(*args: Any) -> tuple[Any, ...]:
        out = eval_program(prog, *args[:n], *[args[n + j] for j in picks])
        return out + (tuple(args[len(args) - passed:]) if passed else ())
    return run


def _closure_converted(funs: Sequence[Flat], leaves: Sequence[Any], what: Sequence[str]) -> Any:
    """Each function staged at ``leaves`` (traced values read through its closure become extra
    operands): (programs, the captured values shared by all), or None where one cannot be."""
    examples = [_raw(x) for x in leaves]
    made = [stage_closure(f, examples, w) for f, w in zip(funs, what)]
    if any(m is None for m in made):
        return None
    caps: list[Any] = []
    for _, own in made:  # type: ignore[misc]
        for b in own:
            if all(b is not c for c in caps):
                caps.append(b)
    progs = [(prog, [next(j for j, c in enumerate(caps) if c is b) for b in own]) for prog, own in made]  # type: ignore[misc]
    return progs, caps


def staged_switch(index: Any, funs: Sequence[Flat], leaves: Sequence[Any], is_cond: bool) -> tuple[Any, ...] | None:
    """``funs[index](*leaves)`` as one recorded equation (traced values the functions read
    through their closure are passed in as operands too), or None where a function cannot
    be staged on its own."""
    made = _closure_converted(funs, leaves, ["branch"] * len(funs))
    if made is None:
        return None
    progs, caps = made
    shapes = [avals(p.outs) for p, _ in progs]
    for k, s in enumerate(shapes[1:], 1):
        if [_loose(a) for a in s] != [_loose(a) for a in shapes[0]]:
            first, other = ("false_fun", "true_fun") if is_cond else ("branch 0", f"branch {k}")
            raise TypeError(f"{'cond' if is_cond else 'switch'}: {first}'s output and {other}'s output must have "
                            f"the same shapes and dtypes inside fg.jit, but they are {_show(shapes[0])} and {_show(s)}")
    spec = _Funs([_program_fn(p, len(leaves), picks) for p, picks in progs], is_cond)
    out: tuple[Any, ...] = _switch(index, *leaves, *caps, spec=spec)
    return out


_PYTHON_DTYPES = {"int": "int64", "float": "float64", "bool": "bool", "complex": "complex128"}


def _loose(aval: Any) -> tuple[Any, str]:
    """Shape and dtype, a Python number counting as NumPy's default dtype of its kind."""
    return aval[1], _PYTHON_DTYPES.get(aval[2], aval[2])


def _show(vals: Sequence[Any]) -> str:
    return "(" + ", ".join(f"{dt}{list(shape)}" for _, shape, dt in vals) + ")"


# -- while ----------------------------------------------------------------------------------------

def _truth(x: Any) -> bool:
    return bool(_raw(x))


def _while_raw(*leaves: Any, spec: _Funs) -> tuple[Any, ...]:
    spec.stage(leaves)
    progs = spec.programs(leaves) if staging_now() else None
    if progs is not None:  # while fg.jit traces: the bodies' replays, no tracing per iteration
        return replayed(WhileLoop(progs[0], progs[1]))(*leaves)
    cond, body = spec.funs
    while _truth(cond(*leaves)[0]):
        leaves = tuple(body(*leaves))
    return tuple(leaves)


def _while_vjp_all(g: Any, ans: Any, argnums: Any, *leaves: Any, spec: _Funs) -> list[Any]:
    raise TypeError(
        "while_loop: reverse-mode differentiation of a while_loop inside fg.jit is not supported: "
        "its number of steps is not known while tracing, so the backward pass cannot be recorded. "
        "Use fg.fori_loop or fg.scan with a fixed number of steps, forward mode (fg.jvp, fg.jacfwd), "
        "or take the gradient outside fg.jit"
    )


def _while_jvp_all(tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, spec: _Funs) -> tuple[Any, ...]:
    import funcgrad.numpy as fnp
    from .autodiff import jvp

    n = len(leaves)
    floats = [i for i in range(n) if _is_float(leaves[i])]
    cond, body = spec.funs

    def cond_both(*args: Any) -> tuple[Any, ...]:
        return tuple(cond(*args[:n]))

    def body_both(*args: Any) -> tuple[Any, ...]:
        point = list(args[:n])

        def of_floats(*d: Any) -> tuple[Any, ...]:
            full = list(point)
            for i, v in zip(floats, d):
                full[i] = v
            return tuple(body(*full))
        out, t_out = jvp(of_floats, tuple(point[i] for i in floats), tuple(args[n:]))
        return tuple(out) + tuple(t_out[i] for i in floats)

    t_in = [tangents[i] if tangents[i] is not None else fnp.zeros_like(leaves[i]) for i in floats]
    both = _while(*leaves, *t_in, spec=_Funs([cond_both, body_both]))
    by_leaf = dict(zip(floats, both[n:]))
    return tuple(by_leaf[i] if i in by_leaf else fnp.zeros_like(ans[i]) for i in range(n))


def _while_batch(args: list[Any], dims: list[Any], spec: _Funs) -> tuple[Any, Any]:
    import funcgrad.numpy as fnp
    from .batching import vmap

    size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
    carry = [a if d == 0 else fnp.moveaxis(a, d, 0) if d is not None else fnp.broadcast_to(a, (size,) + tuple(shape_of(a)))
             for a, d in zip(args, dims)]
    cond, body = (vmap(f, axis_size=size) for f in spec.funs)

    def any_going(*c: Any) -> tuple[Any, ...]:
        return (fnp.any(cond(*c)[0]),)

    def step_going(*c: Any) -> tuple[Any, ...]:
        going = cond(*c)[0]
        new = body(*c)
        return tuple(fnp.where(fnp.reshape(going, (size,) + (1,) * (len(shape_of(a)) - 1)), a, b)
                     for a, b in zip(new, c))

    out = _while(*carry, spec=_Funs([any_going, step_going]))
    return out, (0,) * len(out)


_while = defprimitive(_while_raw, name="while", vjp_all=_while_vjp_all, jvp_all=_while_jvp_all,
                      batch=_while_batch, multiple_results=True)


def _while_loop(e: Any) -> WhileLoop | None:
    spec: _Funs = e.kwargs["spec"]
    progs = spec.programs(e.ins)
    return None if progs is None else WhileLoop(progs[0], progs[1])


register_loop(get_primitive(_while), _while_loop)


def staged_while(cond: Flat, body: Flat, leaves: Sequence[Any]) -> tuple[Any, ...]:
    """The loop as one recorded equation (traced values the functions read through their
    closure ride along in the carry, unchanged); a clear error where one cannot be staged."""
    made = _closure_converted([cond, body], leaves, ["cond_fun", "body_fun"])
    if made is None:
        raise TypeError(
            "while_loop inside fg.jit: cond_fun or body_fun could not be staged on its own: it must "
            "decide with array operations (fnp.where), not Python `if` on traced values, and not read "
            "values batched by an enclosing vmap through its closure (pass them in the carry)"
        )
    (cond_prog, cond_picks), (body_prog, body_picks) = made[0]
    caps = made[1]
    before, after = avals([_raw(x) for x in leaves]), avals(body_prog.outs)
    if [_loose(a) for a in before] != [_loose(a) for a in after]:
        raise TypeError(f"while_loop: body_fun must return a carry with the shapes and dtypes of init_val, "
                        f"{_show(before)}, but returned {_show(after)}")
    n = len(leaves)
    spec = _Funs([_program_fn(cond_prog, n, cond_picks), _program_fn(body_prog, n, body_picks, len(caps))])
    out: tuple[Any, ...] = _while(*leaves, *caps, spec=spec)
    return out[:n]
