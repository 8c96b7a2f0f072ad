"""Staged execution: ``fg.jit`` and ``fg.make_program``, the user-facing transform.

The first call of a jitted function for an input signature runs it once under
a :class:`~funcgrad.core.staging.StagingTrace`, which records every primitive
call into a :class:`funcgrad.jit.ir.Program` (transforms opened inside the
function record their derivative and batching computations too). Later calls
with the same signature run the program compiled by :mod:`funcgrad.jit`.
See docs/jit.md.
"""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .. import tree_util
from ..backend import namespace_of
from ..config import config
from ..core import Box, ReverseTrace, defprimitive
from ..core.batching import BatchBox, BatchTrace
from ..core.constant import ConstantTrace
from ..core.forward import ForwardTrace
from ..core.staging import OuterTraceError, StagedValueError, StagingBox, StagingTrace
from ..jit.ir import Program, Var, eval_program
from ..jit.numpy_replay import direct_call
from ..jit.passes import optimize, split_program
from ..jit.tiered import Tiered, check_backend

__all__ = ["jit", "make_program", "Lowered", "Compiled"]

log = logging.getLogger("funcgrad.jit")

_SCALARS = (bool, int, float, complex)


def _fname(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__


def _leaf_key(leaf: Any, path: str, fname: str) -> Any:
    t = type(leaf)
    if t is bool:  # a flag: traced as its value (each value traces once), never an error
        return (t, leaf)
    if t in _SCALARS or isinstance(leaf, np.generic):
        return (t,)
    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(leaf, type):
        if t is np.ndarray:
            return (t, tuple(shape), dtype)
        return (t, tuple(shape), dtype, str(getattr(leaf, "device", "")))
    try:  # not an array (a function, a string ...): static, keyed by its value
        hash(leaf)
    except TypeError:
        raise TypeError(
            f"fg.jit({fname}): argument {path} is a {t.__name__}, not an array or number, so it "
            f"cannot be traced, and it is not hashable, so it cannot be a static value either. "
            f"Convert it to an array, or to a hashable value (a tuple, a frozen dataclass) and mark "
            f"it static (fg.jit(f, static_argnums=...) or static_argnames=...)"
        ) from None
    return (t, "static", leaf)


def _describe(key: Any) -> str:
    if key[0] is bool:
        return f"the Python bool {key[1]}"
    if len(key) == 1:
        return f"a Python {key[0].__name__}"
    if key[1] == "static":
        return f"the value {key[2]!r}"
    return f"{key[0].__name__} of shape {key[1]} and dtype {key[2]}" + (f" on {key[3]}" if len(key) > 3 and key[3] else "")


def _random_states(fun: Callable[..., Any], statics: Sequence[Any]) -> list[tuple[Any, Any]]:
    """NumPy random states the function could draw from, with their current state."""
    found: list[Any] = [np.random.mtrand._rand]
    cands: list[Any] = list(statics)
    f = inspect.unwrap(fun) if callable(fun) else fun
    while isinstance(f, functools.partial):
        cands.extend(f.args)
        cands.extend(f.keywords.values())
        f = f.func
    code = getattr(f, "__code__", None)
    for cell in getattr(f, "__closure__", None) or ():
        try:
            cands.append(cell.cell_contents)
        except ValueError:
            pass
    glb = getattr(f, "__globals__", {})
    for name in getattr(code, "co_names", ()):
        if name in glb:
            cands.append(glb[name])
    self_obj = getattr(f, "__self__", None)
    if self_obj is not None:
        cands.append(self_obj)
        cands.extend(getattr(self_obj, "__dict__", {}).values())
    for c in cands:
        if isinstance(c, (np.random.Generator, np.random.RandomState)) and all(c is not g for g in found):
            found.append(c)
    return [(g, _state_sig(g)) for g in found]


def _state_sig(g: Any) -> Any:
    """A comparable snapshot of a generator's state (arrays as bytes: no repr of big keys)."""
    if isinstance(g, np.random.Generator):
        return _freeze(g.bit_generator.state)
    return _freeze(g.get_state(legacy=False))


def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return tuple((k, _freeze(v)) for k, v in x.items())
    if isinstance(x, np.ndarray):
        return x.tobytes()
    return x


def _check_random(before: list[tuple[Any, Any]], fname: str) -> None:
    for g, sig in before:
        if _state_sig(g) != sig:
            which = "NumPy's global random state (np.random.*)" if g is np.random.mtrand._rand else f"the random generator {g!r}"
            raise RuntimeError(
                f"fg.jit({fname}): {which} advanced while the function was traced, so its random "
                f"draws would be frozen into constants and repeat on every call. Pass randomness in "
                f"instead: draw the random arrays outside the jitted function and pass them as "
                f"arguments (e.g. noise = rng.standard_normal(shape); f(x, noise)), or do not jit "
                f"this function"
            )


# --------------------------------------------------------------------------
# a staged program called on values traced by enclosing transforms: one primitive

def _is_float(x: Any) -> bool:
    while isinstance(x, Box):
        x = x._value
    d = getattr(x, "dtype", None)
    if d is None:
        return isinstance(x, (float, complex))
    return np.dtype(d).kind in "fc"


class Staged:
    """A compiled program plus its derived programs (built on first need): the
    forward-with-residuals and backward pair for reverse mode, a JVP program per
    pattern of tangents, a batched program per pattern of batch axes. Each derived
    program is again a :class:`Staged`, so derivatives of derivatives stay staged."""

    def __init__(self, program: Program, name: str, backend: str | None = None):
        self.program = program
        self.name = name
        self.backend = backend
        self.tier = Tiered(program, name, backend)
        self.run: Callable[..., Any] = self.tier.run
        self.tier.hold(self)  # the native version replaces run when it is ready
        self.n_out = len(program.outs)
        self.n_res = 0
        self.splits: dict[tuple[int, ...], Any] = {}  # traced float leaves -> forward (or False)
        self.bwd: Staged | None = None  # set on a forward-with-residuals program
        self.diff: list[int] = []
        self.float_outs: list[int] = []
        self.derived: dict[Any, Any] = {}
        self.packed: Staged | None = None  # the same forward, residuals in one opaque output
        self.pack = False

    def packed_version(self) -> "Staged":
        """This forward-with-residuals program returning ``outs + (residual pack,)``: for a
        single level of reverse mode, where nothing differentiates the residuals, so they
        need no tape entries of their own."""
        if self.packed is None:
            p = self.packed = Staged.__new__(Staged)
            p.__dict__.update(self.__dict__)
            p.pack, p.packed, p.derived = True, None, {}
            self.tier.hold(p)
        return self.packed

    def __repr__(self) -> str:
        return f"<staged {self.name}>"

    def fn(self, *leaves: Any) -> tuple[Any, ...]:
        """The program as a function of traced values (each equation a primitive call)."""
        return eval_program(self.program, *leaves)

    def reverse(self, leaves: Sequence[Any]) -> Any:
        """The forward-with-residuals program (its ``bwd`` the backward) for the traced
        float leaves, or False where none can be made."""
        diff = tuple(i for i, x in enumerate(leaves) if isinstance(x, Box) and _is_float(x))
        found = self.splits.get(diff)
        if found is None:
            found = self.splits[diff] = False
            if diff and self._float_outs():
                try:
                    found = self.splits[diff] = self._split(list(leaves), list(diff))
                except OuterTraceError:
                    pass
        return found

    def _float_outs(self) -> list[int]:
        """Positions of the outputs that carry derivatives (float values the program computes)."""
        return [k for k, o in enumerate(self.program.outs)
                if isinstance(o, Var) and hasattr(o.dtype, "kind") and o.dtype.kind in "fc"]

    def _split(self, leaves: list[Any], diff: list[int]) -> Any:
        from .autodiff import vjp

        raw = [_example(x) for x in leaves]
        n = len(raw)
        float_outs = self._float_outs()
        joint = Program(function_for=direct_call)
        trace = StagingTrace(joint, "jit", self.name + " (vjp)")
        with trace:
            xs = [trace.new_input(x) for x in raw]
            out_vals = self.run(*raw)
            cts = [trace.new_input(namespace_of(out_vals[k]).ones_like(out_vals[k])
                                   if hasattr(out_vals[k], "shape") else 1.0) for k in float_outs]

            def part(*d: Any) -> tuple[Any, ...]:
                full = list(xs)
                for i, v in zip(diff, d):
                    full[i] = v
                outs = self.fn(*full)
                return tuple(outs[k] for k in float_outs)

            all_outs = self.fn(*xs)  # integer / constant outputs too (CSE merges the repeat)
            _, pull = vjp(part, *[xs[i] for i in diff])
            grads = pull(tuple(cts))
            trace.program.outs = [trace.output(o) for o in list(all_outs) + list(grads)]
        fwd_p, bwd_p = split_program(joint, n, self.n_out)
        fwd = Staged(fwd_p, self.name + " (forward)", self.backend)
        fwd.n_res = len(fwd_p.outs) - self.n_out
        fwd.n_out = self.n_out
        fwd.bwd = Staged(bwd_p, self.name + " (backward)", self.backend)
        fwd.diff = diff
        fwd.float_outs = float_outs
        return fwd

    def jvp_staged(self, mask: tuple[bool, ...]) -> Any:
        key = ("jvp", mask)
        found = self.derived.get(key)
        if found is None:
            from .autodiff import jvp

            idx = [i for i, m in enumerate(mask) if m]

            def f_jvp(leaves: list[Any], tangents: list[Any]) -> Any:
                def part(*d: Any) -> tuple[Any, ...]:
                    full = list(leaves)
                    for i, v in zip(idx, d):
                        full[i] = v
                    return self.fn(*full)

                return jvp(part, tuple(leaves[i] for i in idx), tuple(tangents))[1]

            found = self.derived[key] = jit(f_jvp, backend=self.backend)
        return found

    def batch_staged(self, dims: tuple[Any, ...]) -> Any:
        key = ("vmap", dims)
        found = self.derived.get(key)
        if found is None:
            from .batching import vmap

            found = self.derived[key] = jit(vmap(self.fn, in_axes=dims, out_axes=0), backend=self.backend)
        return found


def _unbox(x: Any) -> Any:
    while isinstance(x, Box):
        x = x._value
    return x


def _example(x: Any) -> Any:
    """A plain value with the shape ``x`` shows user code: one example of each vmap batch."""
    if not isinstance(x, Box):
        return x
    inner = _example(x._value)
    if isinstance(x, BatchBox):
        return namespace_of(inner).take(inner, 0, axis=x._bdim)
    return inner


class _Residuals:
    """The residuals of a forward program, carried as one opaque value to its backward."""

    __slots__ = ("values",)

    def __init__(self, values: tuple[Any, ...]):
        self.values = values


def _staged_raw(*leaves: Any, staged: Staged) -> tuple[Any, ...]:
    outs: tuple[Any, ...] = staged.run(*leaves)
    if staged.pack:
        n = staged.n_out
        return outs[:n] + (_Residuals(outs[n:]),)
    return tuple(outs)


def _staged_vjp(g: tuple[Any, ...], ans: tuple[Any, ...], argnums: Sequence[int], *leaves: Any, staged: Staged) -> list[Any]:
    from .autodiff import vjp
    import funcgrad.numpy as fnp

    n = staged.n_out
    bwd = staged.bwd
    if bwd is not None and (staged.pack or all(x is None for x in g[n:])):
        cts = [fnp.zeros_like(ans[k]) if g[k] is None else g[k] for k in staged.float_outs]
        residuals = list(ans[n].values) if staged.pack else list(ans[n:])
        grads = call_staged(bwd, residuals + cts)
        by_leaf = dict(zip(staged.diff, grads))
        return [by_leaf.get(i) for i in argnums]
    # cotangents for residuals too (a derivative of a derivative): differentiate the
    # forward program itself, equation by equation
    # (a bool or integer output, such as a `where` condition kept as a residual, takes a float zero)
    cts = [(x if x is not None else fnp.zeros_like(a)) if _is_float(a) else fnp.zeros(fnp.shape(a))
           for x, a in zip(g, ans)]
    nums = [i for i in argnums]

    def part(*d: Any) -> tuple[Any, ...]:
        full = list(leaves)
        for i, v in zip(nums, d):
            full[i] = v
        return staged.fn(*full)

    _, pull = vjp(part, *[leaves[i] for i in nums])
    return list(pull(tuple(cts)))


def _staged_jvp(tangents: list[Any], ans: tuple[Any, ...], *leaves: Any, staged: Staged) -> tuple[Any, ...]:
    # (a bool or integer input, such as a `where` condition kept for the backward program, has
    # no derivative: its tangent, a zero made by an enclosing transform, is dropped)
    tangents = [t if t is not None and _is_float(x) else None for t, x in zip(tangents, leaves)]
    mask = tuple(t is not None for t in tangents)
    f_jvp = staged.jvp_staged(mask)
    return tuple(f_jvp(list(leaves), [t for t in tangents if t is not None]))


def _staged_batch(args: list[Any], dims: list[Any], staged: Staged) -> tuple[Any, Any]:
    out = staged.batch_staged(tuple(dims))(*args)
    return tuple(out), (0,) * len(out)


_staged_call = defprimitive(
    _staged_raw, name="jit_call", vjp_all=_staged_vjp, jvp_all=_staged_jvp, batch=_staged_batch,
    multiple_results=True, doc="A program staged by fg.jit, called on values traced by enclosing transforms.",
)


def _has_reverse(x: Any) -> bool:
    """Is ``x`` traced by a trace that may run a backward pass over this call? (Reverse
    mode, and traces this module does not know, such as the Tensor layer's graph.)"""
    while isinstance(x, Box):
        if not isinstance(x._trace, (ForwardTrace, BatchTrace, ConstantTrace)):
            return True
        x = x._value
    return False


def _one_reverse_level(leaves: list[Any]) -> bool:
    """Are the traced leaves all boxes of one reverse trace, over plain values?"""
    trace = None
    for x in leaves:
        if isinstance(x, Box):
            if not (isinstance(x._trace, ReverseTrace) and x._trace.opaque_results) or isinstance(x._value, Box):
                return False
            if trace is not None and x._trace is not trace:
                return False
            trace = x._trace
    return True


def call_staged(staged: Staged, leaves: list[Any]) -> list[Any]:
    """Run ``staged`` on ``leaves``: straight away when nothing is traced, else as one
    ``jit_call`` primitive whose rules are staged programs too."""
    if not any(isinstance(x, Box) for x in leaves):
        return list(staged.run(*leaves))
    if any(_has_reverse(x) for x in leaves):
        fwd = staged.reverse(leaves)
        if fwd:
            if _one_reverse_level(leaves):
                fwd = fwd.packed_version()  # residuals as one value: no tape entries of their own
            outs = _staged_call(*leaves, staged=fwd)
            return list(outs[: staged.n_out])
    return list(_staged_call(*leaves, staged=staged))


def _closure_reads(fun: Callable[..., Any]) -> tuple[tuple[Any, ...], tuple[tuple[dict[str, Any], str], ...]]:
    """The closure cells and the module-level names (not modules, functions or classes) that
    ``fun``'s own code reads: where a value of an enclosing transform can reach it other than
    through its arguments."""
    f: Any = inspect.unwrap(fun) if callable(fun) else fun
    while isinstance(f, functools.partial):
        f = f.func
    code = getattr(f, "__code__", None)
    cells = tuple(getattr(f, "__closure__", None) or ())
    glb = getattr(f, "__globals__", None)
    names: list[tuple[dict[str, Any], str]] = []
    if code is not None and glb is not None:
        for name in code.co_names:
            v = glb.get(name)
            if name in glb and not (inspect.ismodule(v) or callable(v)):
                names.append((glb, name))
    return cells, tuple(names)


def _traced_closure_value(cells: tuple[Any, ...], names: tuple[tuple[dict[str, Any], str], ...]) -> Box | None:
    """A value of an active transform (not the Tensor layer's level-0 trace) in one of the
    places :func:`_closure_reads` found, or None."""
    for cell in cells:
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(v, Box) and v._trace.level > 0 and v._trace.active:
            return v
    for glb, name in names:
        v = glb.get(name)
        if isinstance(v, Box) and v._trace.level > 0 and v._trace.active:
            return v
    return None


class _Entry:
    __slots__ = ("program", "run", "out_def", "staged", "single", "captures")

    def __init__(self, program: Program, staged: Staged, out_def: Any):
        self.program = program
        self.staged = staged
        self.run: Callable[..., Any] = staged.run
        staged.tier.hold(self)  # the native version replaces run when it is ready
        self.out_def = out_def
        # the output is one leaf (an array or number): no tree to rebuild
        self.single = out_def == tree_util.tree_structure(0)
        self.captures: list[Any] = []  # implicit inputs of one call (closure values of enclosing transforms)


_FAST_SCALARS = (float, int, complex, np.float64, np.float32)


def _fast_key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The cache key of positional arguments that are all plain arrays or numbers, else None."""
    key: list[Any] = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif t in _FAST_SCALARS:
            key.append(t)
        else:
            return None
    return tuple(key)


class _Jitted:
    """The object ``fg.jit`` returns: call it like the function."""

    def __init__(self, fun: Callable[..., Any], static_argnums: Sequence[int], static_argnames: Sequence[str],
                 backend: str | None = None):
        # name and docstring only: copying fun's __dict__ would copy another jit's state
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.backend = backend
        self.fname = _fname(fun)
        self.static_argnums = tuple(static_argnums)
        self.static_argnames = tuple(static_argnames)
        try:
            self.signature: inspect.Signature | None = inspect.signature(fun)
        except (TypeError, ValueError):
            self.signature = None
        # static_argnames given by position (and argnums given by name) are matched up
        if self.signature is not None:
            params = list(self.signature.parameters.values())
            names = set(self.static_argnames)
            nums = set(self.static_argnums)
            for i, p in enumerate(params):
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    if p.name in names:
                        nums.add(i)
                    if i in nums:
                        names.add(p.name)
            self.static_argnums = tuple(sorted(nums))
            self.static_argnames = tuple(sorted(names))
        self.cache: dict[Any, _Entry] = {}
        self.fast_cache: dict[Any, _Entry] = {}
        self.keys: list[Any] = []
        self.traces = 0
        self.warned = False
        # where a value of an enclosing transform can reach fun other than as an argument: a
        # cached program must not run then (it would hold the plain value it was traced with)
        self.closure_reads = _closure_reads(fun)
        self.reads_outside = bool(self.closure_reads[0] or self.closure_reads[1])

    # -- arguments -------------------------------------------------------------------
    def _split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any], tuple[Any, ...]]:
        nargs = len(args)
        statics: list[tuple[str, Any, Any]] = []
        for n in self.static_argnums:
            if n < nargs:
                statics.append(("arg", n, args[n]))
        for name in self.static_argnames:
            if name in kwargs:
                statics.append(("kw", name, kwargs[name]))
        for kind, where, value in statics:
            try:
                hash(value)
            except TypeError:
                label = f"argument {where}" if kind == "arg" else f"argument {where!r}"
                raise TypeError(
                    f"fg.jit({self.fname}): static {label} must be hashable (its value is part of the "
                    f"cache key), got an unhashable {type(value).__name__}. Pass a tuple instead of a "
                    f"list (or a frozen dataclass), or make it a traced (non-static) argument"
                ) from None
        dyn_args = [a for i, a in enumerate(args) if i not in self.static_argnums]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return dyn_args, dyn_kwargs, tuple((kind, where, value) for kind, where, value in statics)

    def _rebuild(self, args: tuple[Any, ...], kwargs: dict[str, Any], dyn: tuple[list[Any], dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
        dyn_args, dyn_kwargs = dyn
        it = iter(dyn_args)
        new_args = [a if i in self.static_argnums else next(it) for i, a in enumerate(args)]
        new_kwargs = {k: (v if k in self.static_argnames else dyn_kwargs[k]) for k, v in kwargs.items()}
        return new_args, new_kwargs

    # -- the call ---------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.reads_outside:
            outer = _traced_closure_value(*self.closure_reads)
            if outer is not None:
                return self._closure_traced_call(args, kwargs, outer)
        if not kwargs and not self.static_argnums:
            fast = self.fast_cache.get(_fast_key(args))  # plain arrays and numbers: one lookup
            if fast is not None:
                out = fast.run(*args)
                return out[0] if fast.single else fast.out_def.unflatten(out)
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        for leaf in leaves:
            if isinstance(leaf, Box):
                return self._traced_call(args, kwargs, leaves, treedef, statics)
        key = self._key(leaves, treedef, statics)
        entry = self.cache.get(key)
        if entry is not None:
            return entry.out_def.unflatten(entry.run(*leaves))
        built = self._trace(key, args, kwargs, leaves, treedef, statics)
        if built is None:
            return self.fun(*args, **kwargs)
        entry, values = built
        if entry.captures:
            return entry.out_def.unflatten(call_staged(entry.staged, list(leaves) + entry.captures))
        if not kwargs and not statics:
            fk = _fast_key(args)
            if fk is not None:
                self.fast_cache[fk] = entry
        return entry.out_def.unflatten(values)

    def _key(self, leaves: list[Any], treedef: Any, statics: tuple[Any, ...]) -> Any:
        try:
            return (treedef, tuple(_leaf_key(x, "", self.fname) if type(x) is not np.ndarray else (np.ndarray, x.shape, x.dtype)
                                   for x in leaves), statics)
        except TypeError:
            for i, leaf in enumerate(leaves):  # again, naming the argument
                _leaf_key(leaf, self._path(treedef, i), self.fname)
            raise

    def _closure_traced_call(self, args: tuple[Any, ...], kwargs: dict[str, Any], outer: Box) -> Any:
        """Called while ``fun``'s closure (or a module-level name it reads) holds a value of an
        enclosing transform: trace for this call only, that value an implicit input (never a
        cached program, which would hold the plain value of an earlier trace)."""
        if isinstance(outer, StagingBox):
            return self.fun(*args, **kwargs)  # inside another jit: recorded into its program
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        for leaf in leaves:
            x = leaf
            while isinstance(x, Box):
                if isinstance(x, StagingBox):
                    return self.fun(*args, **kwargs)
                x = x._value
        raw = [_example(x) for x in leaves]
        key = self._key(raw, treedef, statics)
        built = self._trace(key, args, kwargs, raw, treedef, statics, cache=False)
        if built is None:
            return self.fun(*args, **kwargs)
        entry = built[0]
        return entry.out_def.unflatten(call_staged(entry.staged, list(leaves) + entry.captures))

    def _traced_call(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any], treedef: Any,
                     statics: tuple[Any, ...]) -> Any:
        """Called on values traced by enclosing transforms (grad(jit(f)), vmap(jit(f)) ...)."""
        # Tensors of funcgrad.tensor take this path too: their graph records one node whose
        # backward runs the staged backward program (hooks and .grad stay the graph's business).
        for leaf in leaves:
            x = leaf
            while isinstance(x, Box):
                if isinstance(x, StagingBox):
                    # inside another jit: record f's operations into that program (inlined)
                    return self.fun(*args, **kwargs)
                x = x._value
        raw = [_example(x) for x in leaves]
        key = self._key(raw, treedef, statics)
        entry = self.cache.get(key)
        if entry is None:
            built = self._trace(key, args, kwargs, raw, treedef, statics)
            if built is None:
                return self.fun(*args, **kwargs)
            entry = built[0]
        return entry.out_def.unflatten(call_staged(entry.staged, list(leaves) + entry.captures))

    def _trace(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any], treedef: Any,
               statics: tuple[Any, ...], cache: bool = True) -> tuple[_Entry, list[Any]] | None:
        self._log_retrace(key)
        recorded = Program(function_for=direct_call)
        trace = StagingTrace(recorded, "jit", self.fname, example=_example)
        before = _random_states(self.fun, [s[2] for s in statics])
        try:
            with trace:
                boxes = [trace.static_input(x) if k[0] is bool or k[1:2] == ("static",) else trace.new_input(x)
                         for x, k in zip(leaves, key[1])]
                # the inputs' values before the call: an input written in place (``x += 1``) is rebound to a
                # new value, and must not be mistaken for the input returned as it is (below)
                originals = {id(b._value): x for b, x in zip(boxes, leaves) if isinstance(b, StagingBox)}
                dyn_args, dyn_kwargs = treedef.unflatten(boxes)
                new_args, new_kwargs = self._rebuild(args, kwargs, (dyn_args, dyn_kwargs))
                out = self.fun(*new_args, **new_kwargs)
                out_leaves, out_def = tree_util.tree_flatten(out)
                trace.program.outs = [trace.output(x) for x in out_leaves]
        except OuterTraceError:
            # the function reads a value of an enclosing transform that cannot be an input
            # (passed as a keyword to a primitive, say): run it eagerly
            return None
        except StagedValueError:
            if trace.captures:  # Python code decided on a captured value: eagerly, it is concrete
                return None
            raise
        _check_random(before, self.fname)
        program = optimize(recorded)
        entry = _Entry(program, Staged(program, self.fname, self.backend), out_def)
        if trace.captures or not cache:
            # values read through f's closure from enclosing transforms (as in
            # grad(lambda y: jit(lambda x: x * y)(2.0))) are implicit inputs after the explicit
            # ones; they belong to this call only, so the program is not cached
            entry.captures = trace.captures
            return entry, []
        self.cache[key] = entry
        # an input returned as it is (not written in place) comes back as the caller's own object, as in later calls
        values = []
        for x in out_leaves:
            if isinstance(x, StagingBox) and x._trace is trace and id(x._value) in originals:
                values.append(originals[id(x._value)])
            else:
                values.append(_unbox(x))
        return entry, values

    def _path(self, treedef: Any, i: int) -> str:
        try:
            paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(treedef.unflatten(list(range(treedef.num_leaves))))[0]]
            return "(args, kwargs)" + paths[i]
        except Exception:
            return f"leaf {i}"

    def _log_retrace(self, key: Any) -> None:
        self.traces += 1
        reason = "first call" if not self.keys else self._reason(self.keys[-1], key)
        self.keys.append(key)
        if config.jit_log_compiles:
            log.warning("fg.jit: tracing %s (trace %d): %s", self.fname, self.traces, reason)
        limit = config.jit_retrace_warn
        if self.traces > limit and not self.warned:
            self.warned = True
            warnings.warn(
                f"fg.jit({self.fname}) has been traced {self.traces} times (last change: {reason}). "
                f"Each new signature (shapes, dtypes, static argument values) traces again; pad shapes "
                f"to a few sizes, make changing Python values traced arrays instead of static, or "
                f"set fg.config.jit_log_compiles = True to see every reason",
                RuntimeWarning,
                stacklevel=4,
            )

    def _reason(self, old: Any, new: Any) -> str:
        (otree, oleaves, ostat), (ntree, nleaves, nstat) = old, new
        if otree != ntree:
            return f"the argument structure changed from {otree} to {ntree}"
        if ostat != nstat:
            for a, b in zip(ostat, nstat):
                if a != b:
                    return f"static argument {a[1]!r} changed from {a[2]!r} to {b[2]!r}"
            return "the static arguments changed"
        for i, (a, b) in enumerate(zip(oleaves, nleaves)):
            if a != b:
                return f"argument {self._path(ntree, i)} changed from {_describe(a)} to {_describe(b)}"
        if old == new:
            return ("the same signature: the last trace was not cached (the function read a value of an "
                    "enclosing transform through its closure; pass it as an argument to trace once)")
        return "a new signature"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """As a method decorator: bind ``self`` (then static via its hash, or traced if a pytree)."""
        return self if obj is None else functools.partial(self, obj)

    def cache_size(self) -> int:
        """How many signatures have been traced and are cached."""
        return len(self.cache)

    def _entry(self, what: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Entry:
        dyn_args, dyn_kwargs, statics = self._split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        key = (treedef, tuple(_leaf_key(x, "", self.fname) for x in leaves), statics)
        if key not in self.cache:
            self(*args, **kwargs)
        entry = self.cache.get(key)
        if entry is None:
            raise TypeError(f"{what}({self.fname}): the arguments are traced by an enclosing transform "
                            f"(or the function read one through its closure), so there is no program of its own")
        return entry

    def program(self, *args: Any, **kwargs: Any) -> Program:
        """The optimized program this function runs for these arguments (traced if needed)."""
        return self._entry("fg.make_program", args, kwargs).program

    def lower(self, *args: Any, **kwargs: Any) -> "Lowered":
        """The program for these arguments (traced if needed, as by a call), ready to compile.

        Example::

            compiled = fg.jit(f).lower(x).compile()   # blocks until native code is in use
            compiled(x)
        """
        return Lowered(self, self._entry("fg.jit(...).lower", args, kwargs))


class Compiled:
    """A jitted function whose program for one signature has been compiled (``lower(...).compile()``).

    Call it like the function. ``backend`` says what runs: ``"native"`` (numba-compiled code, or
    CUDA kernels for a program on CuPy arrays) or ``"numpy"`` (the replay; ``why`` says why, e.g. numba is not installed or no equation
    lowers); ``lowered``/``left`` count the equations in compiled code and in the replay."""

    def __init__(self, jitted: "_Jitted", entry: _Entry):
        self._jitted = jitted
        tier = entry.staged.tier
        self.backend = "native" if tier.state == "native" else "numpy"
        self.why = "" if tier.state == "native" else tier.state
        self.lowered, self.left = tier.lowered, tier.left
        self.compile_seconds = tier.compile_seconds
        self.program = entry.program

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._jitted(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<compiled {self._jitted.fname}: {self.backend}{' (' + self.why + ')' if self.why else ''}>"


class Lowered:
    """The program of a jitted function for one signature (``fg.jit(f).lower(*args)``)."""

    def __init__(self, jitted: "_Jitted", entry: _Entry):
        self._jitted = jitted
        self._entry = entry
        self.program = entry.program

    def compile(self) -> Compiled:
        """Block until native code runs this program (compiling it now unless the background
        compiler already is), or until it is known that the replay stays (backend ``"numpy"``,
        numba missing, nothing lowers): see ``Compiled.backend`` / ``Compiled.why``."""
        self._entry.staged.tier.wait()
        return Compiled(self._jitted, self._entry)


def jit(fun: Callable[..., Any], static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        backend: str | None = None) -> Any:
    """Trace ``fun`` once per input signature and replay the recorded program.

    The signature is the pytree structure of the arguments, each leaf's type,
    shape, dtype and device, and the values of the static arguments (which
    must be hashable). Transforms used inside ``fun`` are recorded too, so
    ``fg.jit(fg.grad(f))`` replays forward and backward pass as one straight-line
    program of backend calls. Python control flow on traced values raises (use
    ``static_argnums``, ``fnp.where`` or ``fg.scan``/``fg.fori_loop``); arrays
    captured from the enclosing scope are frozen at trace time. See docs/jit.md.

    ``backend``: ``"numpy"`` replays the program as NumPy calls; ``"native"`` compiles
    it with numba on a background thread and switches to that code when it is ready;
    ``"auto"`` does so for programs called ``fg.config.jit_native_after`` times; ``None``
    (default) follows ``fg.config.jit_backend``. Without numba every backend is the replay.
    On CuPy arrays, "native" and "auto" run the program's elementwise regions as CUDA kernels
    (``cupy.ElementwiseKernel``; numba is not needed), "numpy" the replay.

    Example::

        step = fg.jit(fg.grad(lambda w, x: fnp.sum(fnp.tanh(x @ w) ** 2)))
        g = step(w, x)      # traces, then runs
        g = step(w, x2)     # same shapes: replays the program
    """
    if not callable(fun):
        raise TypeError(f"fg.jit expects a function, got {type(fun).__name__}")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    for n in nums:
        if not isinstance(n, int) or n < 0:
            raise TypeError(f"fg.jit: static_argnums must be non-negative ints, got {n!r}")
    if backend is not None:
        check_backend(backend, "fg.jit: backend")
    return _Jitted(fun, nums, names, backend)


def make_program(fun: Callable[..., Any], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = ()) -> Callable[..., Program]:
    """``make_program(f)(*args)``: the program ``fg.jit(f)`` records for these arguments.

    Printing it shows inputs, one equation per primitive call, constants and outputs.

    Example::

        print(fg.make_program(lambda x: fnp.sin(x) * 2)(fnp.ones(3)))
    """
    jitted = fun if isinstance(fun, _Jitted) else jit(fun, static_argnums, static_argnames)

    def build(*args: Any, **kwargs: Any) -> Program:
        return jitted.program(*args, **kwargs)

    return build
