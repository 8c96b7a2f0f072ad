"""User-defined derivative rules (custom_jvp, custom_vjp) and checkpointing.

Each decorated function becomes one primitive of the engine whose arguments
are the leaves of the function's (non-static) arguments and whose results are
the leaves of its output. The engine then treats it like any other
primitive: its rules run at every trace level, so custom rules hold under
nesting, and are themselves differentiated for higher orders.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Generic, Sequence, TypeVar

from ..core.trace import shape_of
from .. import tree_util
from ..core import Box, defprimitive, get_primitive
from ..numpy._batching import fallback

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "remat"]

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class _Spec:
    """Static description of one call: how leaves become arguments and back."""

    __slots__ = ("in_def", "static", "nargs", "out_def", "res_def", "n_out", "min_level", "what")

    def __init__(self, in_def: Any, static: dict[int, Any], nargs: int) -> None:
        self.in_def = in_def
        self.static = static
        self.nargs = nargs
        # PyTreeDefs of the output and residuals, set by the raw call (None before it).
        self.out_def: Any = None
        self.res_def: Any = None
        self.n_out = 0
        self.min_level = 0
        self.what = ""

    def check_closure(self, leaves: Sequence[Any]) -> None:
        """Refuse results traced at the level of our own arguments: the function
        closed over a traced value that the engine cannot see as an input."""
        for x in leaves:
            if isinstance(x, Box) and x._trace.level >= self.min_level:
                raise TypeError(
                    f"{self.what} closes over a value traced by {x._trace.name}; such values must "
                    f"be passed to it as arguments (e.g. fg.checkpoint(lambda w, x: ...)(w, x), or in "
                    f"the carry or xs of fg.scan) so that their derivative can be taken"
                )

    def args(self, leaves: Sequence[Any]) -> list[Any]:
        """The full positional argument list from dynamic leaves and static args."""
        dyn = list(tree_util.tree_unflatten(self.in_def, list(leaves)))
        full = []
        for i in range(self.nargs):
            full.append(self.static[i] if i in self.static else dyn.pop(0))
        return full

    def dyn(self, leaves: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(tree_util.tree_unflatten(self.in_def, list(leaves)))


def _split(args: tuple[Any, ...], nondiff_argnums: tuple[int, ...], what: str = "") -> tuple[list[Any], _Spec]:
    static = {i % len(args): args[i] for i in nondiff_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    leaves, in_def = tree_util.tree_flatten(tuple(dyn))
    spec = _Spec(in_def, static, len(args))
    levels = [x._trace.level for x in leaves if isinstance(x, Box)]
    spec.min_level = min(levels) if levels else 0
    spec.what = what
    return leaves, spec


# custom_vjp functions whose fwd rule is being differentiated in this thread: a call of
# the function inside its own fwd (JAX's idiom ``def fwd(x): return f(x), res``) then
# runs the function's body, instead of recursing into the rule being computed.
_in_fwd = threading.local()


def _fwd_active() -> set[int]:
    active: set[int] | None = getattr(_in_fwd, "ids", None)
    if active is None:
        active = _in_fwd.ids = set()
    return active


def _traced(leaves: list[Any]) -> bool:
    return any(isinstance(x, Box) for x in leaves)


def _zeros_like(x: Any) -> Any:
    import funcgrad.numpy as fnp

    return fnp.zeros_like(x)


def _fill(cts: Sequence[Any], likes: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_zeros_like(a) if c is None else c for c, a in zip(cts, likes))


def _partial_vjp(fn: Callable[..., Any], leaves: Sequence[Any], argnums: Sequence[int], cts: tuple[Any, ...]) -> list[Any]:
    """Cotangents of ``leaves[argnums]`` for ``fn(*leaves) -> tuple`` at cotangent ``cts``."""
    from .autodiff import vjp

    def of_dyn(*dyn: Any) -> tuple[Any, ...]:
        full = list(leaves)
        for i, d in zip(argnums, dyn):
            full[i] = d
        return tuple(fn(*full))

    _, f_vjp = vjp(of_dyn, *[leaves[i] for i in argnums])
    return list(f_vjp(cts))


def _partial_jvp(fn: Callable[..., Any], leaves: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, ...]:
    """Output tangents of ``fn(*leaves) -> tuple`` for the given tangents (None = zero)."""
    from .autodiff import jvp

    idx = [i for i, t in enumerate(tangents) if t is not None]

    def of_dyn(*dyn: Any) -> tuple[Any, ...]:
        full = list(leaves)
        for i, d in zip(idx, dyn):
            full[i] = d
        return tuple(fn(*full))

    t_out: tuple[Any, ...] = jvp(of_dyn, tuple(leaves[i] for i in idx), tuple(tangents[i] for i in idx))[1]
    return t_out


def _check_out_structure(kind: str, name: str, got: Any, want: Any) -> None:
    if got != want:
        raise TypeError(
            f"{kind} rule of {name} must return a value with the structure of the function's "
            f"output, {want}, but returned {got}"
        )


def _check_leaf_types(rule: str, kind: str, got: Sequence[Any], like: Sequence[Any], where: Sequence[str]) -> None:
    """Each returned tangent/cotangent must have the shape of the value it belongs to,
    and a floating-point dtype (complex only where that value is complex)."""
    for leaf, ref, at in zip(got, like, where):
        if leaf is None:
            continue
        if shape_of(leaf) != shape_of(ref):
            raise ValueError(
                f"{rule} returned a {kind} of shape {shape_of(leaf)} for {at}, which has shape "
                f"{shape_of(ref)}; the shapes must match"
            )
        have, want = _kind(leaf), _kind(ref)
        if want not in "fc":
            continue  # an integer or boolean value has no derivative: whatever is returned is unused
        if have not in "fc" or (have == "c" and want != "c"):
            raise TypeError(
                f"{rule} returned a {kind} of dtype {_dtype_name(leaf)} for {at}, which has dtype "
                f"{_dtype_name(ref)}; expected a floating-point {kind} (complex only for a complex value)"
            )


def _dtype_name(x: Any) -> Any:
    import numpy as np

    while isinstance(x, Box):
        x = x._value
    d = getattr(x, "dtype", None)
    return np.dtype(d) if d is not None else np.result_type(x)


def _kind(x: Any) -> str:
    kind: str = _dtype_name(x).kind
    return kind


# --------------------------------------------------------------------------

class custom_jvp(Generic[R]):
    """A function with a user-defined JVP rule (JAX semantics).

    Reverse mode transposes the (linear) tangent computation of the rule, so
    one rule serves both modes.

    Example::

        @fg.custom_jvp
        def log1pexp(x):
            return fnp.log1p(fnp.exp(x))

        @log1pexp.defjvp
        def _(primals, tangents):
            (x,), (t,) = primals, tangents
            return log1pexp(x), t * fg.scipy.special.expit(x)
    """

    __name__: str  # set by functools.update_wrapper

    def __init__(self, fun: Callable[..., R], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp_rule: Callable[..., Any] | None = None
        name = getattr(fun, "__name__", "fun")
        self._call = defprimitive(
            self._raw, name=f"custom_jvp[{name}]", jvp_all=self._jvp_all, vjp_all=self._vjp_all,
            batch=self._batch, multiple_results=True,
        )

    def defjvp(self, rule: F) -> F:
        """Set the rule ``rule(primals, tangents) -> (primal_out, tangent_out)``;
        with ``nondiff_argnums``, ``rule(*static_args, primals, tangents)``."""
        self.jvp_rule = rule
        return rule

    def defjvps(self, *rules: Callable[..., Any] | None) -> None:
        """One JVP rule per differentiable argument (JAX's ``defjvps``):
        ``rule_i(t_i, primal_out, *args)`` returns the output tangent that a
        tangent ``t_i`` of argument ``i`` contributes; None for an argument
        with no derivative. The contributions are summed.

        Example::

            @fg.custom_jvp
            def f(x, y):
                return fnp.sin(x) * y

            f.defjvps(lambda tx, out, x, y: fnp.cos(x) * tx * y,
                      lambda ty, out, x, y: fnp.sin(x) * ty)
        """
        ndyn_static = sorted(self.nondiff_argnums)

        def rule(*args: Any) -> tuple[Any, Any]:
            static, (primals, tangents) = args[:-2], args[-2:]
            if len(rules) != len(primals):
                raise TypeError(
                    f"defjvps of custom_jvp function {self.__name__}: got {len(rules)} rules for "
                    f"{len(primals)} differentiable arguments; give one per argument (None for none)"
                )
            full, dyn, st = [], iter(primals), iter(static)
            for i in range(len(primals) + len(static)):
                full.append(next(st) if i in ndyn_static else next(dyn))
            out = self(*full)
            total: Any = None
            for r, t in zip(rules, tangents):
                if r is None:
                    continue
                contrib = r(t, out, *full)
                total = contrib if total is None else tree_util.tree_map(lambda a, b: a + b, total, contrib)
            if total is None:
                total = tree_util.tree_map(_zeros_like, out)
            return out, total

        self.jvp_rule = rule

    def __call__(self, *args: Any) -> R:
        if self.jvp_rule is None:
            raise AttributeError(f"no JVP rule defined for custom_jvp function {self.__name__}; use .defjvp")
        leaves, spec = _split(args, self.nondiff_argnums, f"custom_jvp function {self.__name__}")
        if not _traced(leaves):
            return self.fun(*args)
        outs = self._call(*leaves, spec=spec)
        result: R = tree_util.tree_unflatten(spec.out_def, list(outs))
        return result

    def _raw(self, *leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        out_leaves, spec.out_def = tree_util.tree_flatten(self.fun(*spec.args(leaves)))
        spec.check_closure(out_leaves)
        return tuple(out_leaves)

    def _tangent_out(self, leaves: Sequence[Any], tangents: Sequence[Any], spec: _Spec, ans: Sequence[Any]) -> tuple[Any, ...]:
        primals = spec.dyn(leaves)
        t_full = spec.dyn(_fill(tangents, leaves))
        static = [spec.static[i] for i in sorted(spec.static)]
        rule = self.jvp_rule
        assert rule is not None  # checked by __call__
        result = rule(*static, primals, t_full)
        what = f"the JVP rule of custom_jvp function {self.__name__}"
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(
                f"{what} must return a pair (primal_out, tangent_out), but returned "
                f"{type(result).__name__}" + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
            )
        t_leaves, t_def = tree_util.tree_flatten(result[1])
        _check_out_structure("the custom JVP", self.__name__, t_def, spec.out_def)
        paths = [f"output{tree_util.keystr(p)}" for p, _ in tree_util.tree_flatten_with_path(
            tree_util.tree_unflatten(spec.out_def, list(ans)))[0]]
        _check_leaf_types(what, "tangent", t_leaves, ans, paths)
        return tuple(t_leaves)

    def _jvp_all(self, tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        return self._tangent_out(leaves, tangents, spec, ans)

    def _vjp_all(self, g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _Spec) -> list[Any]:
        # The tangent map is linear: its VJP is the transpose the rule implies.
        zero_t = [_zeros_like(x) for x in leaves]

        def tangent_map(*ts: Any) -> tuple[Any, ...]:
            return self._tangent_out(leaves, ts, spec, ans)

        return _partial_vjp(tangent_map, zero_t, argnums, _fill(g, ans))

    def _batch(self, args: list[Any], dims: list[Any], spec: _Spec) -> tuple[Any, ...]:
        size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
        batched: tuple[Any, ...] = fallback(get_primitive(self._call), args, dims, size, {"spec": spec})
        return batched


class custom_vjp(Generic[R]):
    """A function with a user-defined VJP (JAX semantics): ``f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(residuals, g) -> tuple`` with one
    cotangent (or None) per argument not in ``nondiff_argnums``. Forward mode
    differentiates ``fwd`` itself (JAX refuses here; funcgrad makes
    ``jacfwd(jacrev(f))`` and Hessians of such functions work).

    Example::

        @fg.custom_vjp
        def clip_gradient(x):
            return x

        clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (fnp.clip(g, -1, 1),))
    """

    __name__: str  # set by functools.update_wrapper

    def __init__(self, fun: Callable[..., R], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        name = getattr(fun, "__name__", "fun")
        self._call = defprimitive(
            self._raw, name=f"custom_vjp[{name}]", jvp_all=self._jvp_all, vjp_all=self._vjp_all,
            batch=self._batch, multiple_results=True,
        )

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward ``fwd(*args) -> (out, res)`` and backward ``bwd(res, g)`` rules."""
        self.fwd = fwd
        self.bwd = bwd

    def __call__(self, *args: Any) -> R:
        if self.fwd is None:
            raise AttributeError(f"no VJP rules defined for custom_vjp function {self.__name__}; use .defvjp")
        leaves, spec = _split(args, self.nondiff_argnums, f"custom_vjp function {self.__name__}")
        if not _traced(leaves) or id(self) in _fwd_active():
            return self.fun(*args)
        outs = self._call(*leaves, spec=spec)
        result: R = tree_util.tree_unflatten(spec.out_def, list(outs[: spec.n_out]))
        return result

    def _fwd_leaves(self, leaves: Sequence[Any], spec: _Spec) -> tuple[Any, ...]:
        fwd = self.fwd
        assert fwd is not None  # checked by __call__
        result = fwd(*spec.args(leaves))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"the fwd rule of custom_vjp function {self.__name__} must return a pair (out, residuals)")
        out, res = result
        out_leaves, spec.out_def = tree_util.tree_flatten(out)
        res_leaves, spec.res_def = tree_util.tree_flatten(res)
        spec.n_out = len(out_leaves)
        return tuple(out_leaves) + tuple(res_leaves)

    def _raw(self, *leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        out = self._fwd_leaves(leaves, spec)
        spec.check_closure(out)
        return out

    def _jvp_all(self, tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        # Forward mode differentiates fwd; a call of this function inside fwd runs its body.
        active = _fwd_active()
        nested = id(self) in active
        active.add(id(self))
        try:
            return _partial_jvp(lambda *ls: self._fwd_leaves(ls, spec), leaves, tangents)
        finally:
            if not nested:
                active.discard(id(self))

    def _vjp_all(self, g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _Spec) -> list[Any]:
        n = spec.n_out
        res = tree_util.tree_unflatten(spec.res_def, list(ans[n:]))
        g_out = tree_util.tree_unflatten(spec.out_def, list(_fill(g[:n], ans[:n])))
        static = [spec.static[i] for i in sorted(spec.static)]
        bwd = self.bwd
        assert bwd is not None  # set with fwd by defvjp
        cts = bwd(*static, res, g_out)
        ndyn = spec.nargs - len(spec.static)
        if not isinstance(cts, (tuple, list)) or len(cts) != ndyn:
            raise TypeError(
                f"the bwd rule of custom_vjp function {self.__name__} must return a tuple with one "
                f"cotangent per differentiable argument ({ndyn}), got {type(cts).__name__}"
                + (f" of length {len(cts)}" if isinstance(cts, (tuple, list)) else "")
            )
        dyn = spec.dyn(leaves)
        ct_leaves: list[Any] = []
        for k, (c, a) in enumerate(zip(cts, dyn)):
            a_leaves, a_def = tree_util.tree_flatten(a)
            if c is None:
                ct_leaves.extend([None] * len(a_leaves))
                continue
            c_leaves, c_def = tree_util.tree_flatten(c)
            if c_def != a_def:
                raise TypeError(
                    f"the bwd rule of custom_vjp function {self.__name__} returned a cotangent for "
                    f"argument {k} with structure {c_def}, but the argument has structure {a_def}"
                )
            _check_leaf_types(
                f"the bwd rule of custom_vjp function {self.__name__}", "cotangent", c_leaves, a_leaves,
                [f"argument {k}{tree_util.keystr(p)}" for p, _ in tree_util.tree_flatten_with_path(a)[0]],
            )
            ct_leaves.extend(c_leaves)
        result = [ct_leaves[i] for i in argnums]
        if any(gk is not None for gk in g[n:]):
            # Residuals were used by an inner derivative: differentiate fwd for them.
            res_cts = _partial_vjp(lambda *ls: self._fwd_leaves(ls, spec)[n:], leaves, argnums,
                                   _fill(g[n:], ans[n:]))
            result = [r if c is None else (c if r is None else r + c) for r, c in zip(result, res_cts)]
        return result

    def _batch(self, args: list[Any], dims: list[Any], spec: _Spec) -> tuple[Any, ...]:
        size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
        batched: tuple[Any, ...] = fallback(get_primitive(self._call), args, dims, size, {"spec": spec})
        return batched


# --------------------------------------------------------------------------

def checkpoint(fun: Callable[..., R], static_argnums: Sequence[int] = ()) -> Callable[..., R]:
    """Rematerialization: ``fun``'s intermediate values are not stored for the
    backward pass; they are recomputed from its inputs when needed.

    Trades compute for memory: only the inputs of each checkpointed call are
    kept on the tape.

    Example::

        layer = fg.checkpoint(lambda w, x: fnp.tanh(x @ w))
        fg.grad(lambda w: fnp.sum(layer(w, x)))(w)
    """
    name = getattr(fun, "__name__", "fun")

    def raw(*leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        out_leaves, spec.out_def = tree_util.tree_flatten(fun(*spec.args(leaves)))
        spec.check_closure(out_leaves)
        return tuple(out_leaves)

    def call_leaves(leaves: Sequence[Any], spec: _Spec) -> tuple[Any, ...]:
        return tuple(tree_util.tree_leaves(fun(*spec.args(leaves))))

    def vjp_all(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, spec: _Spec) -> list[Any]:
        return _partial_vjp(lambda *ls: call_leaves(ls, spec), leaves, argnums, _fill(g, ans))

    def jvp_all(tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, spec: _Spec) -> tuple[Any, ...]:
        return _partial_jvp(lambda *ls: call_leaves(ls, spec), leaves, tangents)

    def batch(args: list[Any], dims: list[Any], spec: _Spec) -> tuple[Any, ...]:
        size = next(shape_of(a)[d] for a, d in zip(args, dims) if d is not None)
        batched: tuple[Any, ...] = fallback(get_primitive(call), args, dims, size, {"spec": spec})
        return batched

    call = defprimitive(raw, name=f"checkpoint[{name}]", vjp_all=vjp_all, jvp_all=jvp_all, batch=batch,
                        multiple_results=True)

    @functools.wraps(fun)
    def checkpointed(*args: Any) -> R:
        leaves, spec = _split(args, tuple(static_argnums), f"checkpointed function {name}")
        if not _traced(leaves):
            return fun(*args)
        outs = call(*leaves, spec=spec)
        result: R = tree_util.tree_unflatten(spec.out_def, list(outs))
        return result

    return checkpointed


remat = checkpoint
