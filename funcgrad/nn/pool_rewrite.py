"""``fg.jit`` rewrite: max pooling of a relu becomes a relu of the max pooling.

``max_pool(relu(x))`` (every CNN block: conv, norm, relu, pool) finds each window's maximum of
``relu(x)``; since relu is monotone, that is ``relu`` of each window's maximum of ``x``. In a
compiled program the rewrite runs the relu, and in the backward the relu's mask
(``positive_part``), on the pooled arrays (a quarter of the size for 2x2 windows) instead of the
full ones:

    r = relu(x); i = window_argmax(r); p = window_gather(r, i)        ... dx = positive_part(window_scatter(g, i), r)
    i = window_argmax(x); p = relu(window_gather(x, i))               ... dx = window_scatter(positive_part(g, p), i)

The results are the same, bit for bit: where a window's maximum is positive the two argmaxes
agree (relu changes no positive value, and the non-positive ones stay below it), and the mask at
the argmax is the pooled value's sign (``r`` at the window's argmax is ``p``); where it is not
positive, both give the window a zero gradient (``p`` is 0, so the mask is off); a NaN is the
maximum in both, with the same position; padding reads ``pad_value <= 0``, below every relu
output. Taken only where ``r`` has no other reader (and is no output) and the backward's scatter
feeds only that mask.

Example::

    step = fg.jit(fg.grad(loss))    # loss: conv -> batch_norm -> relu -> max_pool2d ...
    fg.make_program(fg.grad(loss))(params, x, y)   # shows relu after window_gather
"""

from __future__ import annotations

import math
from typing import Any

from ..core import get_primitive
from ..jit.ir import Eqn, Program, Var
from ..jit.passes import register_rewrite
from .kernels.pooling import window_argmax, window_gather, window_scatter
from .rectifier import positive_part, relu

__all__ = ["pool_before_relu"]

_RELU, _MASK = get_primitive(relu), get_primitive(positive_part)
_ARGMAX, _GATHER, _SCATTER = get_primitive(window_argmax), get_primitive(window_gather), get_primitive(window_scatter)


def _like(prog: Program, v: Var) -> Var:
    """A new value of ``v``'s shape, dtype and array type."""
    new = prog.new_var(None)
    new.shape, new.dtype, new.kind, new.nbytes = v.shape, v.dtype, v.kind, v.nbytes
    return new


def _pad_at_most_zero(pad: Any) -> bool:
    return isinstance(pad, (int, float)) and not isinstance(pad, bool) and not math.isnan(pad) and pad <= 0


def _match(prog: Program, k: int, readers: dict[Var, set[int]], made_by: dict[Var, int],
           outputs: set[Var]) -> tuple[int, list[int], list[tuple[int, int]]] | None:
    """For the relu at equation ``k``: (its argmax, its gathers, its (scatter, mask) pairs), when the
    pattern holds exactly; else None."""
    eqns = prog.eqns
    relu_eqn = eqns[k]
    if len(relu_eqn.ins) != 1 or not isinstance(relu_eqn.ins[0], Var) or set(relu_eqn.kwargs) - {"nan_passes"}:
        return None
    r = relu_eqn.outs[0]
    if r in outputs:
        return None
    users = sorted(readers.get(r, ()))
    argmaxes = [j for j in users if eqns[j].prim is _ARGMAX]
    if len(argmaxes) != 1:
        return None
    a = eqns[argmaxes[0]]
    if len(a.ins) != 5 or a.kwargs or a.ins[0] is not r or any(x is r for x in a.ins[1:]):
        return None
    index, geometry = a.outs[0], tuple(a.ins[1:5])
    gathers, pairs = [], []
    for j in users:
        e = eqns[j]
        if j == argmaxes[0]:
            continue
        if e.prim is _GATHER:
            if (len(e.ins) != 7 or e.kwargs or e.ins[0] is not r or e.ins[1] is not index
                    or tuple(e.ins[2:6]) != geometry or not _pad_at_most_zero(e.ins[6])):
                return None
            gathers.append(j)
        elif e.prim is _MASK:
            if len(e.ins) != 2 or set(e.kwargs) - {"nan_passes"} or e.ins[1] is not r or e.ins[0] is r:
                return None
            v = e.ins[0]
            s = made_by.get(v) if isinstance(v, Var) else None
            if s is None or v in outputs or readers.get(v) != {j}:
                return None
            scatter = eqns[s]
            if (scatter.prim is not _SCATTER or len(scatter.ins) != 7 or scatter.kwargs or scatter.ins[1] is not index
                    or tuple(scatter.ins[3:7]) != geometry or not isinstance(scatter.ins[0], Var)):
                return None
            pairs.append((s, j))
        else:
            return None
    if pairs and (not gathers or any(s < gathers[0] or eqns[s].ins[0].shape != eqns[gathers[0]].outs[0].shape
                                     for s, _ in pairs)):
        return None  # the mask needs the pooled relu, made before the backward's scatter, of the cotangent's shape
    return argmaxes[0], gathers, pairs


@register_rewrite
def pool_before_relu(prog: Program) -> None:
    """Rewrite every ``max_pool(relu(x))`` of ``prog`` to ``relu(max_pool(x))`` (module docstring)."""
    if not any(e.prim is _RELU for e in prog.eqns) or not any(e.prim is _ARGMAX for e in prog.eqns):
        return
    while True:  # one relu at a time: each rewrite changes the readers
        readers = prog.readers()
        made_by = {o: k for k, e in enumerate(prog.eqns) for o in e.outs}
        outputs = prog.output_vars()
        for k, e in enumerate(prog.eqns):
            if e.prim is _RELU:
                found = _match(prog, k, readers, made_by, outputs)
                if found is not None:
                    _rewrite(prog, k, *found)
                    break
        else:
            return


def _rewrite(prog: Program, k: int, argmax: int, gathers: list[int], pairs: list[tuple[int, int]]) -> None:
    eqns = prog.eqns
    relu_eqn = eqns[k]
    x = relu_eqn.ins[0]
    a = eqns[argmax]
    replaced: dict[int, list[Eqn]] = {k: [], argmax: [Eqn(a.prim, [x] + a.ins[1:], {}, a.outs, a.fn)]}
    pooled = None
    for j in gathers:
        g = eqns[j]
        values = _like(prog, g.outs[0])
        pooled = pooled or g.outs[0]
        replaced[j] = [Eqn(g.prim, [x] + g.ins[1:], {}, [values], g.fn),
                       Eqn(relu_eqn.prim, [values], dict(relu_eqn.kwargs), g.outs, relu_eqn.fn)]
    for s, m in pairs:
        scatter, mask = eqns[s], eqns[m]
        cotangent = scatter.ins[0]
        masked = _like(prog, cotangent)
        replaced[s] = [Eqn(mask.prim, [cotangent, pooled], dict(mask.kwargs), [masked], mask.fn),
                       Eqn(scatter.prim, [masked] + scatter.ins[1:], {}, mask.outs, scatter.fn)]
        replaced[m] = []
    prog.eqns = [new for j, e in enumerate(eqns) for new in replaced.get(j, [e])]
