"""Differentiable collectives: primitives whose rules are collectives again.

Gradient convention (JAX's): on every rank, the derivative of a collective is
that of the *sum over ranks* of the per-rank outputs. So ``psum`` transposes to
``psum``, ``all_gather`` to ``psum_scatter`` and back, and ``broadcast``'s VJP is
the psum of the cotangents, kept by the root. Each rank then holds the gradient
of the summed objective ``sum_r L_r`` with respect to its own inputs.

The trap: a loss that is already replicated (``L = psum(local_loss)``, equal on
every rank) counts ``size()`` times in that sum, so ``grad`` of it is ``size()``
times too large. Differentiate the *local* loss and reduce the gradients
(``allreduce_gradients``), or divide by ``size()``. mpi4jax chose the opposite
convention (the VJP of its allreduce-sum is the identity: each rank's
derivative of its own copy), so code ported from it changes by that factor.

Every rank must call the same collectives in the same order, with arrays of
the same shape and dtype; derivative rules keep that order (a VJP of a
collective is one collective on every rank).
"""

from __future__ import annotations

from typing import Any, Callable

import funcgrad.numpy as fnp

from ..backend import namespace_of
from ..core import defprimitive
from ..numpy._batching import move_to_front, normalize_axis
from .world import world

__all__ = ["psum", "pmean", "all_gather", "psum_scatter", "broadcast"]


def _array(x: Any) -> Any:
    return namespace_of(x).asarray(x)


def _psum_raw(x: Any) -> Any:
    x = _array(x)
    return world().transport_for(x).allreduce(x)


def _all_gather_raw(x: Any, axis: int = 0, tiled: bool = False) -> Any:
    x = _array(x)
    xp = namespace_of(x)
    w = world()
    if tiled:
        if x.ndim == 0:
            raise ValueError("all_gather(tiled=True) needs an array with at least one axis, got a scalar")
        axis = normalize_axis(axis, x.ndim)
    else:
        axis = normalize_axis(axis, x.ndim + 1)
    g = xp.moveaxis(w.transport_for(x).allgather(x), 0, axis)
    if not tiled:
        return g
    s = x.shape
    return xp.reshape(g, s[:axis] + (w.size * s[axis],) + s[axis + 1:])


def _psum_scatter_raw(x: Any, axis: int = 0, tiled: bool = False) -> Any:
    x = _array(x)
    xp = namespace_of(x)
    w = world()
    if x.ndim == 0:
        raise ValueError("psum_scatter needs an array with at least one axis, got a scalar")
    axis = normalize_axis(axis, x.ndim)
    s = x.shape
    if tiled:
        if s[axis] % w.size:
            raise ValueError(
                f"psum_scatter(tiled=True): axis {axis} has length {s[axis]}, which is not divisible by "
                f"the number of ranks ({w.size})"
            )
        m = s[axis] // w.size
        x = xp.reshape(x, s[:axis] + (w.size, m) + s[axis + 1:])
    elif s[axis] != w.size:
        raise ValueError(
            f"psum_scatter: axis {axis} has length {s[axis]} but there are {w.size} ranks; the scattered "
            f"axis must have one entry per rank (or pass tiled=True to split it into equal blocks)"
        )
    return w.transport_for(x).reduce_scatter(xp.moveaxis(x, axis, 0))


def _broadcast_raw(x: Any, root: int = 0) -> Any:
    x = _array(x)
    w = world()
    if not 0 <= root < w.size:
        raise ValueError(f"broadcast: root {root} is not a rank of a world of size {w.size}")
    return w.transport_for(x).broadcast(x, root)


def _axis_batch(fn: Callable[..., Any], extra_axis: bool) -> Callable[..., tuple[Any, int]]:
    """vmap rule for a collective along ``axis``: batch axis first, ``axis`` shifted past it."""

    def rule(args: list[Any], dims: list[Any], axis: int = 0, tiled: bool = False) -> tuple[Any, int]:
        x = move_to_front(args[0], dims[0])
        per = fnp.ndim(x) - 1
        a = normalize_axis(axis, per + 1 if extra_axis and not tiled else per) + 1
        return fn(x, axis=a, tiled=tiled), 0

    return rule


def _broadcast_vjp(g: Any, ans: Any, x: Any, root: int = 0) -> Any:
    # Every rank joins the psum and keeps it in its graph (a where, not a branch), so a
    # derivative of this rule calls the same collectives on every rank.
    total = psum(g)
    return fnp.where(world().rank == root, total, fnp.zeros_like(total))


psum: Callable[..., Any] = defprimitive(
    _psum_raw,
    name="psum",
    vjp=lambda g, ans, x: psum(g),
    linear=True,
    batch=lambda args, dims: (psum(args[0]), dims[0]),
    reads={0: ()},
    pure=False,
    doc="""The sum of ``x`` over all ranks, on every rank (MPI_Allreduce / ncclAllReduce).

    Differentiable: its VJP is ``psum`` of the cotangent (the derivative of the sum
    over ranks of every rank's output; see the module docstring for the trap this
    sets for an already-replicated loss).

    Example::

        total = dist.psum(fnp.sum(local_losses))   # the same value on every rank
    """,
)

all_gather: Callable[..., Any] = defprimitive(
    _all_gather_raw,
    name="all_gather",
    vjp=lambda g, ans, x, axis=0, tiled=False: psum_scatter(g, axis=axis, tiled=tiled),
    linear=True,
    batch=_axis_batch(lambda x, axis, tiled: all_gather(x, axis=axis, tiled=tiled), True),
    reads={0: ()},
    pure=False,
    doc="""Every rank's ``x`` stacked along a new axis ``axis`` (``tiled=True``: concatenated along ``axis``).

    Differentiable: its VJP is :func:`psum_scatter` of the cotangent.

    Example::

        everyone = dist.all_gather(x)      # shape (dist.size(),) + x.shape
    """,
)

psum_scatter: Callable[..., Any] = defprimitive(
    _psum_scatter_raw,
    name="psum_scatter",
    vjp=lambda g, ans, x, axis=0, tiled=False: all_gather(g, axis=axis, tiled=tiled),
    linear=True,
    batch=_axis_batch(lambda x, axis, tiled: psum_scatter(x, axis=axis, tiled=tiled), False),
    reads={0: ()},
    pure=False,
    doc="""The sum over ranks of ``x``, of which each rank keeps its own part (reduce-scatter).

    ``x.shape[axis]`` equals ``size()`` and rank ``r`` gets entry ``r`` of that axis
    (the axis is removed); with ``tiled=True`` the axis is cut into ``size()``
    equal blocks and rank ``r`` gets block ``r``. Its VJP is :func:`all_gather`.

    Example::

        mine = dist.psum_scatter(x.reshape(dist.size(), -1))
    """,
)

broadcast: Callable[..., Any] = defprimitive(
    _broadcast_raw,
    name="broadcast",
    vjp=_broadcast_vjp,
    linear=True,
    batch=lambda args, dims, root=0: (broadcast(args[0], root=root), dims[0]),
    reads={0: ()},
    pure=False,
    doc="""Rank ``root``'s ``x`` on every rank.

    Differentiable: the root's cotangent is the sum of all ranks' cotangents, the
    other ranks' is zero (every rank's output depends on the root's input only).

    Example::

        params = dist.broadcast(params_leaf, root=0)
    """,
)


def pmean(x: Any) -> Any:
    """The mean of ``x`` over ranks, on every rank: ``psum(x) / size()`` (differentiable).

    Example::

        mean_loss = dist.pmean(local_loss)
    """
    return psum(x) / world().size
