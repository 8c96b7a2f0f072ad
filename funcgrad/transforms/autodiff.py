"""Differentiation transforms: grad, value_and_grad, vjp, jvp, linearize,
jacrev, jacfwd, hessian, hvp, stop_gradient.

Each call opens a fresh trace (so nested transforms never confuse their
perturbations), boxes the leaves of the differentiated arguments, runs the
function, and reads the derivative off the boxes it returns.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Literal, ParamSpec, Sequence, TypeVar, overload

import numpy as np

from ..backend import dtype_of
from ..core.trace import shape_of, unbox_all
from .. import tree_util
from ..backend import namespace_of
from ..core import Box, ForwardTrace, JVPBox, ReverseTrace, VJPBox, backward_pass, defprimitive
from ..core.reverse import VJPNode, forward_order
from ..core.constant import ConstBox
from ..core.forward import output_tangent

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "jacobian",
    "hessian", "hvp", "stop_gradient",
]

P = ParamSpec("P")
T = TypeVar("T")


# --------------------------------------------------------------------------
# shared helpers

def _fname(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _check_differentiable(leaves: list[Any], paths: list[str], transform: str, holomorphic: bool = False) -> None:
    for leaf, path in zip(leaves, paths):
        raw = unbox_all(leaf)
        if getattr(raw, "dtype", None) is None and not isinstance(raw, (int, float, complex, np.generic)):
            raise TypeError(
                f"{transform}: input {path} is a {type(raw).__name__} ({raw!r:.60}); expected a "
                f"floating-point array or scalar (or a pytree of them)"
            )
        kind = dtype_of(leaf).kind
        if kind not in "fc":
            raise TypeError(
                f"{transform}: input {path} has dtype {dtype_of(leaf)}; only floating-point or "
                f"complex inputs can be differentiated (integer and boolean values have no "
                f"derivative). Convert it with x.astype(float), or leave it out of argnums"
            )
        if holomorphic and kind != "c":
            raise TypeError(
                f"{transform} with holomorphic=True requires complex inputs, but input {path} "
                f"has dtype {dtype_of(leaf)}; convert it with x.astype(complex)"
            )


def _argnums_tuple(argnums: Any, transform: str) -> tuple[int, ...]:
    """``argnums`` as a tuple of ints, refusing other types and duplicates."""
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        return (int(argnums),)
    if not isinstance(argnums, (tuple, list)):
        raise TypeError(
            f"{transform}: argnums must be an int or a tuple of ints, got "
            f"{type(argnums).__name__} {argnums!r}"
        )
    for n in argnums:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(
                f"{transform}: argnums must be an int or a tuple of ints, but argnums={argnums!r} "
                f"holds {type(n).__name__} {n!r}"
            )
    return tuple(int(n) for n in argnums)


def _normalize_argnums(argnums: int | Sequence[int], nargs: int, transform: str, fun: Callable[..., Any]) -> tuple[int, ...]:
    nums = _argnums_tuple(argnums, transform)
    if not nums:
        raise ValueError(f"{transform}: argnums must name at least one argument, got {argnums!r}")
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(
                f"{transform}: argnums={argnums!r} is out of range: {_fname(fun)} was called with "
                f"{nargs} positional argument{'s' if nargs != 1 else ''}"
            )
    nums = tuple(n % nargs for n in nums)
    if len(set(nums)) != len(nums):
        # the same argument twice would get its gradient in one place and zeros in the other
        raise ValueError(
            f"{transform}: argnums={argnums!r} names the same argument more than once; "
            f"each argument may be differentiated only once"
        )
    return nums


def _np_scalar(x: Any) -> Any:
    """A Python float or complex input as NumPy's scalar, so that derivative rules meet
    NumPy's arithmetic (``1 / 0.0`` is inf there, a ZeroDivisionError in Python)."""
    t = type(x)
    if t is float:
        return np.float64(x)
    if t is complex:
        return np.complex128(x)
    return x


def _leaf_paths(tree: Any, prefix: str) -> tuple[list[Any], Any, list[str]]:
    pairs, treedef = tree_util.tree_flatten_with_path(tree)
    leaves = [leaf for _, leaf in pairs]
    paths = [prefix + tree_util.keystr(path) for path, _ in pairs]
    return leaves, treedef, paths


def _strip(trace: Any, x: Any) -> Any:
    """Remove ``trace``'s boxing (and constant boxes) from ``x``; lower traces' boxes stay."""
    if isinstance(x, Box) and x._trace is trace:
        x = x._value
    return _unconst(x)


def _unconst(x: Any) -> Any:
    """A constant box (an array made inside a transform) becomes its plain array."""
    return x._value if type(x) is ConstBox else x


def _zeros_like(x: Any) -> Any:
    """Zeros of ``x``'s (per-example) shape and dtype, untraced, on ``x``'s device."""
    return namespace_of(unbox_all(x)).zeros(shape_of(x), dtype=dtype_of(x))


def _ones_like(x: Any) -> Any:
    return namespace_of(unbox_all(x)).ones(shape_of(x), dtype=dtype_of(x))


def _match_dtype(g: Any, like: Any) -> Any:
    """Cotangents and tangents keep the dtype of the value they belong to."""
    from .. import numpy as fnp

    g = _unconst(g)
    want = dtype_of(like)
    have = dtype_of(g)
    if have == want:
        return g
    if have.kind == "c" and want.kind != "c":
        g = fnp.real(g)
    return fnp.astype(g, want)


# --------------------------------------------------------------------------
# reverse mode

class _Tape:
    """What a reverse-mode call leaves behind: input and output nodes."""

    __slots__ = ("input_nodes", "inputs", "outputs", "out_nodes")

    def __init__(
        self, input_nodes: list[VJPNode], inputs: list[Any], outputs: list[Any], out_nodes: list[VJPNode | None]
    ) -> None:
        self.input_nodes = input_nodes
        self.inputs = inputs
        self.outputs = outputs
        self.out_nodes = out_nodes

    def pullback(self, cts: list[Any], release: bool = False) -> list[Any]:
        seeds = [(n, ct) for n, ct in zip(self.out_nodes, cts) if n is not None and ct is not None]
        got = backward_pass(seeds, release=release) if seeds else {}
        result = []
        for node, x in zip(self.input_nodes, self.inputs):
            g = got.get(node)
            result.append(_zeros_like(x) if g is None else _match_dtype(g, x))
        return result


def _record(
    fun: Callable[..., Any], leaves: list[Any], rebuild: Callable[..., Any], name: str, has_aux: bool, keep_all: bool = False
) -> tuple[_Tape, list[Any], tree_util.PyTreeDef, Any]:
    """Run ``fun`` on boxed ``leaves`` under a new reverse trace."""
    trace = ReverseTrace(name, keep_all=keep_all)
    with trace:
        boxes = [trace.new_input(x) for x in leaves]
        input_nodes = [b._node for b in boxes]  # before fun runs: it may rebind a box in place
        out = rebuild(boxes)
        if has_aux:
            out, aux = _split_aux(out, name)
        else:
            aux = None
    out_leaves, out_def = tree_util.tree_flatten(out)
    out_nodes: list[VJPNode | None] = []
    values = []
    for leaf in out_leaves:
        if isinstance(leaf, VJPBox) and leaf._trace is trace:
            out_nodes.append(leaf._node)
            values.append(_unconst(leaf._value))
        else:
            out_nodes.append(None)
            values.append(_unconst(leaf))
    if aux is not None:
        aux = tree_util.tree_map(lambda a: _strip(trace, a), aux)
    tape = _Tape(input_nodes, leaves, values, out_nodes)
    return tape, values, out_def, aux


def _split_aux(out: Any, name: str) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"{name} with has_aux=True expects the function to return a pair (output, aux), "
            f"got {type(out).__name__}"
            + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
        )
    return out[0], out[1]


def _dyn_args(
    fun: Callable[..., Any], args: tuple[Any, ...], argnums: tuple[int, ...], transform: str, holomorphic: bool = False
) -> tuple[list[Any], Callable[[list[Any]], list[Any]], Callable[[dict[str, Any]], Callable[[list[Any]], Any]]]:
    """Flatten the differentiated arguments; return leaves and a rebuild function."""
    leaves: list[Any] = []
    treedefs, counts = [], []
    for n in argnums:
        lv, td, paths = _leaf_paths(args[n], f"argument {n}")
        _check_differentiable(lv, paths, transform, holomorphic)
        leaves.extend(_np_scalar(x) for x in lv)
        treedefs.append(td)
        counts.append(len(lv))

    def split(flat: list[Any]) -> list[Any]:
        parts, i = [], 0
        for td, c in zip(treedefs, counts):
            parts.append(tree_util.tree_unflatten(td, flat[i:i + c]))
            i += c
        return parts

    def call_with(kwargs: dict[str, Any]) -> Callable[..., Any]:
        def rebuild(flat: list[Any]) -> Any:
            full = list(args)
            for n, part in zip(argnums, split(flat)):
                full[n] = part
            return fun(*full, **kwargs)
        return rebuild

    return leaves, split, call_with


@overload
def vjp(
    fun: Callable[..., Any], *primals: Any, has_aux: Literal[False] = False
) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]: ...


@overload
def vjp(
    fun: Callable[..., Any], *primals: Any, has_aux: Literal[True]
) -> tuple[Any, Callable[[Any], tuple[Any, ...]], Any]: ...


@overload
def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool) -> tuple[Any, ...]: ...


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Evaluate ``fun(*primals)`` and return ``(out, f_vjp)`` (plus ``aux``).

    ``f_vjp(ct)`` maps an output cotangent (same structure, shapes and dtypes
    as ``out``) to a tuple with one cotangent per primal. It may be called
    many times.

    Example::

        out, f_vjp = fg.vjp(fnp.sin, x)
        (ct_x,) = f_vjp(fnp.ones_like(out))      # = cos(x)
    """
    if not primals:
        raise TypeError("vjp: give at least one primal argument: vjp(fun, *primals)")
    argnums = tuple(range(len(primals)))
    leaves, split, call_with = _dyn_args(fun, primals, argnums, "vjp")
    tape, values, out_def, aux = _record(fun, leaves, call_with({}), "vjp", has_aux)
    out = tree_util.tree_unflatten(out_def, values)

    def f_vjp(ct: Any) -> tuple[Any, ...]:
        ct_leaves = _check_cotangent(ct, out_def, values)
        return tuple(split(tape.pullback(ct_leaves)))

    f_vjp.__name__ = f"vjp_of_{_fname(fun)}"
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def _check_cotangent(ct: Any, out_def: Any, values: list[Any]) -> list[Any]:
    ct_leaves, ct_def = tree_util.tree_flatten(ct)
    if ct_def != out_def:
        raise ValueError(
            f"vjp: the cotangent's structure {ct_def} does not match the output's structure {out_def}"
        )
    for i, (c, v) in enumerate(zip(ct_leaves, values)):
        if shape_of(c) != shape_of(v):
            raise ValueError(
                f"vjp: cotangent leaf {i} has shape {shape_of(c)} but the output it belongs to has "
                f"shape {shape_of(v)}"
            )
        have, want = dtype_of(c).kind, dtype_of(v).kind
        if have not in "fc" or (have == "c" and want != "c"):
            # an integer cotangent is no tangent-space value; a complex one for a real
            # output would lose its imaginary part
            raise TypeError(
                f"vjp: cotangent leaf {i} has dtype {dtype_of(c)} but the output it belongs to has "
                f"dtype {dtype_of(v)}; give a cotangent of the output's dtype (a floating-point "
                f"cotangent for a real output, a complex one only for a complex output)"
            )
    return ct_leaves


def value_and_grad(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
) -> Callable[P, tuple[Any, Any]]:
    """Like :func:`grad`, but the new function returns ``(value, gradient)``.

    With ``has_aux=True`` it returns ``((value, aux), gradient)``.

    Example::

        loss, g = fg.value_and_grad(lambda w: fnp.sum(w ** 2))(fnp.ones(3))
    """
    _argnums_tuple(argnums, "grad")  # refuse a bad argnums now, not at the first call

    @functools.wraps(fun)
    def value_and_grad_f(*args: P.args, **kwargs: P.kwargs) -> tuple[Any, Any]:
        nums = _normalize_argnums(argnums, len(args), "grad", fun)
        leaves, split, call_with = _dyn_args(fun, args, nums, "grad", holomorphic)
        tape, values, out_def, aux = _record(fun, leaves, call_with(kwargs), "grad", has_aux)
        if len(values) != 1 or shape_of(values[0]) != ():
            shape = shape_of(values[0]) if len(values) == 1 else f"a pytree with {len(values)} leaves"
            raise TypeError(
                f"grad requires a scalar output, but {_fname(fun)} returned an array of shape "
                f"{shape}; use jacrev, or vjp with a cotangent"
            )
        (value,) = values
        kind = dtype_of(value).kind
        if kind == "c" and not holomorphic:
            raise TypeError(
                f"grad requires a real-valued output, but {_fname(fun)} returned dtype "
                f"{dtype_of(value)}; take .real or abs(...), or pass holomorphic=True for a "
                f"holomorphic function"
            )
        if kind not in "fc":
            raise TypeError(
                f"grad requires a floating-point output, but {_fname(fun)} returned dtype "
                f"{dtype_of(value)}"
            )
        grads = split(tape.pullback([_ones_like(value)], release=True))
        g = grads[0] if isinstance(argnums, (int, np.integer)) else tuple(grads)
        return ((value, aux), g) if has_aux else (value, g)

    return value_and_grad_f


def grad(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic: bool = False
) -> Callable[P, Any]:
    """The gradient of scalar-valued ``fun`` with respect to argument(s) ``argnums``.

    The gradient has the structure (pytree), shapes and dtypes of the
    differentiated arguments; a tuple of them when ``argnums`` is a tuple.
    With ``has_aux=True``, ``fun`` returns ``(output, aux)`` and the new
    function returns ``(gradient, aux)``.

    Example::

        df = fg.grad(lambda x: fnp.sin(x) * x)
        df(1.0)                       # cos(1) + sin(1)
        fg.grad(fg.grad(fnp.tanh))(0.5)   # second derivative
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic)

    @functools.wraps(fun)
    def grad_f(*args: P.args, **kwargs: P.kwargs) -> Any:
        (value_aux, g) = vg(*args, **kwargs)
        return (g, value_aux[1]) if has_aux else g

    return grad_f


# --------------------------------------------------------------------------
# forward mode

def _check_tangents(
    primals: Sequence[Any], tangents: Sequence[Any], transform: str
) -> tuple[list[Any], list[Any], tree_util.PyTreeDef]:
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"{transform}: primals and tangents must be tuples (or lists) of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}; e.g. {transform}(f, (x,), (v,))"
        )
    if len(primals) != len(tangents):
        raise ValueError(
            f"{transform}: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per primal"
        )
    p_leaves, p_def, paths = _leaf_paths(tuple(primals), "primals")
    t_leaves, t_def = tree_util.tree_flatten(tuple(tangents))
    if p_def != t_def:
        raise ValueError(
            f"{transform}: the tangents' structure {t_def} does not match the primals' structure {p_def}"
        )
    _check_differentiable(p_leaves, paths, transform)
    p_leaves = [_np_scalar(p) for p in p_leaves]
    fixed = []
    for p, t, path in zip(p_leaves, t_leaves, paths):
        if shape_of(p) != shape_of(t):
            raise ValueError(
                f"{transform}: the tangent for {path} has shape {shape_of(t)} but the primal has "
                f"shape {shape_of(p)}; they must match"
            )
        if isinstance(t, (int, float, complex)) and not isinstance(t, bool):
            t = namespace_of(unbox_all(p)).asarray(t, dtype=dtype_of(p))  # on the primal's device
        elif dtype_of(t) != dtype_of(p):
            raise TypeError(
                f"{transform}: the tangent for {path} has dtype {dtype_of(t)} but the primal has "
                f"dtype {dtype_of(p)}; they must match"
            )
        fixed.append(t)
    return p_leaves, fixed, p_def


@overload
def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: Literal[False] = False
) -> tuple[Any, Any]: ...


@overload
def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: Literal[True]
) -> tuple[Any, Any, Any]: ...


@overload
def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool) -> tuple[Any, ...]: ...


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> tuple[Any, ...]:
    """Forward mode: ``(fun(*primals), J @ tangents)`` in one pass.

    Example::

        y, dy = fg.jvp(fnp.sin, (x,), (v,))     # dy = cos(x) * v
    """
    p_leaves, t_leaves, p_def = _check_tangents(primals, tangents, "jvp")
    values, t_out, out_def, aux = _jvp_flat(
        lambda boxes: fun(*tree_util.tree_unflatten(p_def, boxes)), p_leaves, t_leaves, has_aux, "jvp"
    )
    result = (tree_util.tree_unflatten(out_def, values), tree_util.tree_unflatten(out_def, t_out))
    return result + (aux,) if has_aux else result


def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """Evaluate ``fun`` once and return ``(out, f_jvp)``; ``f_jvp(*tangents)``
    pushes tangents through the recorded computation without re-running ``fun``.

    Example::

        y, f_jvp = fg.linearize(fnp.sin, x)
        f_jvp(v)                                  # = cos(x) * v
    """
    if not primals:
        raise TypeError("linearize: give at least one primal argument")
    argnums = tuple(range(len(primals)))
    leaves, split, call_with = _dyn_args(fun, primals, argnums, "linearize")
    tape, values, out_def, _ = _record(fun, leaves, call_with({}), "linearize", False, keep_all=True)
    out = tree_util.tree_unflatten(out_def, values)
    order = forward_order(n for n in tape.out_nodes if n is not None)

    def f_jvp(*tangents: Any) -> Any:
        _, t_leaves, _ = _check_tangents(primals, tangents, "linearize")
        known = dict(zip(tape.input_nodes, t_leaves))
        for node in order:
            if node in known:
                continue
            if node.prim is None:  # one result of a multi-result primitive
                parent_t = known.get(node.parents[0])
                known[node] = None if parent_t is None else parent_t[node.out_index]
                continue
            if not node.prim.differentiable:
                known[node] = None
                continue
            argnums = [a for p, a in zip(node.parents, node.argnums) if known.get(p) is not None]
            t_in = [known[p] for p in node.parents if known.get(p) is not None]
            t_out = output_tangent(node.prim, node.ans, node.args, node.kwargs, argnums, t_in) if t_in else None
            known[node] = t_out
        t_vals = []
        for out_node, v in zip(tape.out_nodes, values):
            t = None if out_node is None else known.get(out_node)
            t_vals.append(_zeros_like(v) if t is None else _match_dtype(t, v))
        return tree_util.tree_unflatten(out_def, t_vals)

    return out, f_jvp


# --------------------------------------------------------------------------
# Jacobians and Hessians

def _sizes(leaves: list[Any]) -> list[int]:
    return [int(np.prod(shape_of(x), dtype=int)) for x in leaves]


def _basis_rows(leaves: list[Any], sizes: list[int], start: int, stop: int) -> list[Any]:
    """Rows ``start:stop`` of the identity over all leaves' elements, one batch per leaf.

    Leaf ``j`` gets an array of shape ``(stop - start,) + leaf_j.shape``.
    """
    total = sum(sizes)
    out, offset = [], 0
    for x, n in zip(leaves, sizes):
        v = unbox_all(x)
        xp = namespace_of(v)
        eye = xp.eye(total, dtype=dtype_of(x))[start:stop, offset:offset + n]
        out.append(eye.reshape((stop - start,) + shape_of(x)))
        offset += n
    return out


def _chunks(total: int, chunk_size: int | None) -> list[tuple[int, int]]:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}")
    step = total if not chunk_size else chunk_size
    return [(a, min(a + step, total)) for a in range(0, total, max(step, 1))]


def _concat_rows(parts: list[Any]) -> Any:
    from .. import numpy as fnp

    return parts[0] if len(parts) == 1 else fnp.concatenate(parts, axis=0)


def jacrev(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
) -> Callable[P, Any]:
    """The Jacobian of ``fun`` by reverse mode: one forward pass, then all VJPs
    at once (the basis cotangents pushed through one batched backward pass).

    For an output of shape ``S`` and an input of shape ``T`` the Jacobian has
    shape ``S + T``; pytrees nest as (output structure, then input structure).
    ``chunk_size`` caps how many basis vectors go through one pass (memory).

    Example::

        fg.jacrev(lambda x: fnp.sin(x) * x)(fnp.arange(3.0))   # a 3x3 diagonal matrix
    """
    from .batching import vmap

    _argnums_tuple(argnums, "jacrev")

    @functools.wraps(fun)
    def jacfun(*args: P.args, **kwargs: P.kwargs) -> Any:
        from .. import numpy as fnp

        nums = _normalize_argnums(argnums, len(args), "jacrev", fun)
        leaves, split, call_with = _dyn_args(fun, args, nums, "jacrev", holomorphic)
        _check_real_for_jacobian(leaves, holomorphic, "jacrev")
        tape, values, out_def, aux = _record(fun, leaves, call_with(kwargs), "jacrev", has_aux)
        if not holomorphic:
            for v in values:
                if dtype_of(v).kind == "c":
                    raise TypeError(
                        "jacrev of a complex-valued output requires holomorphic=True (or split the "
                        "output into real and imaginary parts)"
                    )
        sizes = _sizes(values)
        total = sum(sizes)
        pull = vmap(lambda *cts: tuple(tape.pullback(list(cts))))
        # rows[j]: cotangents of input leaf j for every output element, shape (total,) + in_shape
        if total:
            parts = [pull(*_basis_rows(values, sizes, a, b)) for a, b in _chunks(total, chunk_size)]
            rows = [_concat_rows([p[j] for p in parts]) for j in range(len(leaves))]
        per_out, offset = [], 0
        for v, n in zip(values, sizes):
            per_in = []
            for j, x in enumerate(leaves):
                if total:
                    block = rows[j][offset:offset + n]
                    per_in.append(fnp.reshape(block, shape_of(v) + shape_of(x)))
                else:
                    per_in.append(_empty_jac(v, x))
            per_out.append(_arrange_inputs(split(per_in), argnums))
            offset += n
        jac = tree_util.tree_unflatten(out_def, per_out)
        return (jac, aux) if has_aux else jac

    return jacfun


def _empty_jac(out: Any, x: Any) -> Any:
    v = unbox_all(x)
    return namespace_of(v).zeros(shape_of(out) + shape_of(x), dtype=dtype_of(x))


def _arrange_inputs(parts: list[Any], argnums: int | Sequence[int]) -> Any:
    return parts[0] if isinstance(argnums, (int, np.integer)) else tuple(parts)


def _check_real_for_jacobian(leaves: list[Any], holomorphic: bool, name: str) -> None:
    if holomorphic:
        return
    for x in leaves:
        if dtype_of(x).kind == "c":
            raise TypeError(
                f"{name} of a function of complex inputs requires holomorphic=True (JAX's "
                f"convention); for a non-holomorphic function, differentiate real and "
                f"imaginary parts separately"
            )


def jacfwd(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
) -> Callable[P, Any]:
    """The Jacobian of ``fun`` by forward mode: all basis tangents pushed
    through one batched forward pass (``vmap`` of ``jvp``).

    Same layout as :func:`jacrev`: output shape followed by input shape.
    ``chunk_size`` caps how many basis vectors go through one pass.

    Example::

        fg.jacfwd(lambda x: fnp.sin(x) * x)(fnp.arange(3.0))
    """
    from .batching import vmap

    _argnums_tuple(argnums, "jacfwd")

    @functools.wraps(fun)
    def jacfun(*args: P.args, **kwargs: P.kwargs) -> Any:
        from .. import numpy as fnp

        nums = _normalize_argnums(argnums, len(args), "jacfwd", fun)
        leaves, split, call_with = _dyn_args(fun, args, nums, "jacfwd", holomorphic)
        _check_real_for_jacobian(leaves, holomorphic, "jacfwd")
        rebuild = call_with(kwargs)
        sizes = _sizes(leaves)
        total = sum(sizes)
        primal: dict[str, Any] = {}

        def push(*tangents: Any) -> tuple[Any, ...]:
            values, t_out, out_def, aux = _jvp_flat(rebuild, leaves, list(tangents), has_aux)
            primal.update(values=values, out_def=out_def, aux=aux)  # unbatched: safe to keep
            return tuple(t_out)

        if total:
            parts = [vmap(push)(*_basis_rows(leaves, sizes, a, b)) for a, b in _chunks(total, chunk_size)]
            cols = [_concat_rows([p[i] for p in parts]) for i in range(len(parts[0]))]
        else:  # no input elements: evaluate once for the outputs' shapes
            push(*[_zeros_like(x) for x in leaves])
        values, out_def, aux = primal["values"], primal["out_def"], primal["aux"]
        per_out = []
        for i, v in enumerate(values):
            per_in, offset = [], 0
            for x, n in zip(leaves, sizes):
                if total:
                    block = fnp.moveaxis(cols[i][offset:offset + n], 0, -1)  # out_shape + (n,)
                    per_in.append(fnp.reshape(block, shape_of(v) + shape_of(x)))
                else:
                    per_in.append(_empty_jac(v, x))
                offset += n
            per_out.append(_arrange_inputs(split(per_in), argnums))
        jac = tree_util.tree_unflatten(out_def, per_out)
        return (jac, aux) if has_aux else jac

    return jacfun


def _jvp_flat(
    rebuild: Callable[..., Any], leaves: list[Any], tangents: list[Any], has_aux: bool, name: str = "jacfwd"
) -> tuple[list[Any], list[Any], tree_util.PyTreeDef, Any]:
    """Run ``rebuild`` on the leaves boxed with their tangents under a new forward trace:
    (output values, output tangents, output treedef, aux with this trace stripped)."""
    trace = ForwardTrace(name)
    with trace:
        boxes = [trace.new_input(p, t) for p, t in zip(leaves, tangents)]
        out = rebuild(boxes)
        aux = None
        if has_aux:
            out, aux = _split_aux(out, name)
    out_leaves, out_def = tree_util.tree_flatten(out)
    values, t_out = [], []
    for leaf in out_leaves:
        if isinstance(leaf, JVPBox) and leaf._trace is trace:
            values.append(_unconst(leaf._value))
            t_out.append(_match_dtype(leaf._tangent, leaf._value))
        else:
            values.append(_unconst(leaf))
            t_out.append(_zeros_like(leaf))
    if aux is not None:
        aux = tree_util.tree_map(lambda a: _strip(trace, a), aux)
    return values, t_out, out_def, aux


jacobian = jacrev


def hessian(
    fun: Callable[P, Any],
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
    chunk_size: int | None = None,
) -> Callable[P, Any]:
    """The Hessian of scalar ``fun``, forward-over-reverse (``jacfwd(jacrev(fun))``).

    Example::

        fg.hessian(lambda x: fnp.sum(x ** 3))(fnp.ones(2))   # diag(6, 6)
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic, chunk_size)


def hvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Hessian-vector product without forming the Hessian: forward-over-reverse.

    Returns ``(grad(fun)(*primals), H @ tangents)``, both shaped like the
    primals (tuples when ``fun`` takes several arguments).

    Example::

        g, Hv = fg.hvp(lambda x: fnp.sum(x ** 3), (x,), (v,))   # Hv = 6 x v
    """
    primals = tuple(primals)
    argnums = tuple(range(len(primals)))
    g = grad(fun, argnums=argnums if len(primals) > 1 else 0)
    return jvp(g, primals, tuple(tangents))


def _stop_raw(x: Any) -> Any:
    return x


def _stop_batch(args: list[Any], dims: list[Any]) -> tuple[Any, Any]:
    # the inner value may still be traced by an enclosing transform, which must see the stop too
    return _stop_gradient(args[0]), dims[0]


_stop_gradient = defprimitive(_stop_raw, name="stop_gradient", differentiable=False, batch=_stop_batch)


def stop_gradient(x: T) -> T:
    """The value of ``x`` (any pytree) with no derivative flowing through it.

    Example::

        fg.grad(lambda x: x * fg.stop_gradient(x))(3.0)   # 3.0, not 6.0
    """
    out: T = tree_util.tree_map(_stop_gradient, x)
    return out
