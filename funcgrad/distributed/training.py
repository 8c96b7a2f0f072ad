"""Data-parallel training helpers, outside autodiff: reduce gradients, sync parameters.

Gradients (any pytree of arrays) are packed into flat buckets (buckets.py), one
in-place collective per bucket, and handed back as views of the bucket: a step
allocates one flat buffer per bucket and nothing per leaf.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from .. import tree_util
from ..backend import namespace_of
from ..core import Box
from ..optim.base import EmptyState, GradientTransformation
from . import buckets as _b
from .world import world

__all__ = [
    "allreduce_gradients", "broadcast_parameters", "shard", "shard_size", "check_replicated",
    "NotReplicatedError", "sync_gradients", "DEFAULT_BUCKET_MB",
]

DEFAULT_BUCKET_MB = 25.0


class NotReplicatedError(AssertionError):
    """Ranks hold different values for something that should be the same everywhere."""


def _array_leaves(tree: Any, what: str) -> tuple[list[Any], Any]:
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=lambda x: x is None)
    for x in leaves:
        if isinstance(x, Box):
            raise TypeError(
                f"{what} works on concrete arrays, outside the transforms; inside a function being "
                f"differentiated or vmapped use funcgrad.distributed.psum / pmean (differentiable)"
            )
    # Python scalars travel as 0-d arrays
    return [x if x is None or hasattr(x, "dtype") else np.asarray(x) for x in leaves], treedef


def _start(buckets: list[_b.Bucket], leaves: list[Any], orders: list[Any], factor: float | None) -> list[Any]:
    """Pack each bucket into a new flat buffer (floating-point ones times ``factor``) and start its
    in-place allreduce: [(request, buffer)]."""
    w = world()
    started = []
    for bucket in buckets:
        buf = bucket.xp.empty(bucket.total, dtype=bucket.dtype)
        _b.pack(bucket, leaves, orders, buf, factor if bucket.dtype.kind in "fc" else None)
        started.append((w.transport(bucket.xp).iallreduce_(buf), buf))
    return started


def allreduce_gradients(tree: Any, op: str = "mean", *, weight: Any = None, bucket_mb: float = DEFAULT_BUCKET_MB) -> Any:
    """Sum (``op="sum"``) or average (``op="mean"``) every leaf of ``tree`` over ranks.

    Leaves are packed into flat buckets of at most ``bucket_mb`` MiB per dtype and
    device, one in-place non-blocking allreduce each. ``weight``: this rank's share,
    usually its number of examples when shards differ in size; the result is then
    ``sum_r w_r g_r / sum_r w_r`` (for per-shard mean gradients this is the
    full-batch mean; ``op="sum"`` gives ``size()`` times that). ``None`` leaves stay
    None.

    The returned leaves are new arrays that the caller owns (later calls never
    change them); the leaves of one bucket are views of one flat buffer, made for
    this call, so they cost no copy beyond packing (and keep that buffer alive
    while any of them lives).

    Example::

        grads = fg.grad(loss)(params, *dist.shard((x, y)))
        grads = dist.allreduce_gradients(grads)            # the full-batch gradient
    """
    if op not in ("mean", "sum"):
        raise ValueError(f"allreduce_gradients: op must be 'mean' or 'sum', got {op!r}")
    leaves, treedef = _array_leaves(tree, "allreduce_gradients")
    w = world()
    if w.size == 1:  # one rank: its (weighted) mean or sum is its own gradient; nothing to pack
        if weight is not None and float(weight) <= 0:
            raise ValueError(f"allreduce_gradients: the weights sum to {float(weight)} over ranks; "
                             f"expected a positive total")
        return tree
    # each rank scales its own share while packing (sum_r c g_r, one pass less than scaling the sum
    # afterwards, and exact for power-of-two world sizes), as PyTorch's DDP pre-divides
    if weight is not None:
        total = float(w.transport(np).allreduce(np.asarray(float(weight), dtype=np.float64)))
        if total <= 0:
            raise ValueError(f"allreduce_gradients: the weights sum to {total} over ranks; expected a positive total")
        factor: float | None = float(weight) * (1.0 / total if op == "mean" else w.size / total)
        # integer leaves become floating point when weighted (as ``x * weight`` would)
        leaves = [x * 1.0 if x is not None and np.dtype(x.dtype).kind not in "fc" else x for x in leaves]
    else:
        factor = 1.0 / w.size if op == "mean" else None
    buckets = _b.plan(leaves, int(bucket_mb * 2**20))
    orders = [None if x is None else _b.order_of(x) for x in leaves]
    # every rank must lay out every leaf alike: one small MAX-reduction of [code, -code] tells
    # all ranks at once (started first; its latency hides behind the buckets')
    code = _b.layout_code(orders)
    agree = np.array([code, -code], dtype=np.int64)
    check = w.transport(np).iallreduce_(agree, "max")
    started = _start(buckets, leaves, orders, factor)
    check.wait()
    if agree[0] != -agree[1]:  # the ranks disagree: all of them redo every bucket in C order
        for req, _ in started:
            req.wait()
        orders = [None if x is None else "C" for x in leaves]
        started = _start(buckets, leaves, orders, factor)
    out: list[Any] = list(leaves)
    for bucket, (req, buf) in zip(buckets, started):
        req.wait()
        _b.views(bucket, leaves, orders, buf, out)
        if factor is not None and bucket.dtype.kind not in "fc":  # integers: summed exactly, then averaged
            for i in bucket.idx:
                out[i] = out[i] * factor
    return tree_util.tree_unflatten(treedef, out)


def broadcast_parameters(tree: Any, root: int = 0, *, bucket_mb: float = DEFAULT_BUCKET_MB) -> Any:
    """Rank ``root``'s values of every leaf of ``tree``, on every rank (call once after init).

    The leaves come back C-ordered, as views of one new flat buffer per bucket.

    Example::

        params = dist.broadcast_parameters(model.init(key))   # same start everywhere
    """
    leaves, treedef = _array_leaves(tree, "broadcast_parameters")
    w = world()
    if not 0 <= root < w.size:
        raise ValueError(f"broadcast_parameters: root {root} is not a rank of a world of size {w.size}")
    out: list[Any] = list(leaves)
    orders = [None if x is None else "C" for x in leaves]  # root's layout is unknown elsewhere: C on all
    for bucket in _b.plan(leaves, int(bucket_mb * 2**20)):
        buf = bucket.xp.empty(bucket.total, dtype=bucket.dtype)
        _b.pack(bucket, leaves, orders, buf)
        w.transport(bucket.xp).broadcast_(buf, root)
        _b.views(bucket, leaves, orders, buf, out)
    return tree_util.tree_unflatten(treedef, out)


def _split(n: int, parts: int, r: int) -> tuple[int, int]:
    base, extra = divmod(n, parts)
    lo = r * base + min(r, extra)
    return lo, lo + base + (r < extra)


def shard(batch: Any, axis: int = 0) -> Any:
    """This rank's contiguous slice of every leaf of ``batch`` along ``axis``.

    Shards differ by at most one example when the batch does not divide evenly
    (pass ``weight=shard_size(...)`` to :func:`allreduce_gradients` then).

    Example::

        x_local, y_local = dist.shard((x, y))
    """
    leaves, treedef = tree_util.tree_flatten(batch)
    if not leaves:
        return batch
    lengths = [int(x.shape[axis]) if getattr(x, "ndim", 0) else None for x in leaves]
    sizes = set(lengths)
    if len(sizes) != 1 or None in sizes:
        raise ValueError(
            f"shard: every leaf needs the same length along axis {axis} (scalars cannot be split); "
            f"got {lengths}"
        )
    w = world()
    lo, hi = _split(int(lengths[0] or 0), w.size, w.rank)
    sl = (slice(None),) * (axis % leaves[0].ndim) + (slice(lo, hi),)
    return tree_util.tree_unflatten(treedef, [x[sl] for x in leaves])


def shard_size(n: int) -> int:
    """How many of ``n`` examples :func:`shard` gives this rank. Example: ``dist.shard_size(len(x))``."""
    w = world()
    lo, hi = _split(int(n), w.size, w.rank)
    return hi - lo


def _digest(x: Any) -> int:
    xp = namespace_of(x)
    if xp is np:
        data = np.ascontiguousarray(x).tobytes()
    else:  # hash on the device, then bring back 8 bytes rather than the array
        v = xp.asarray(x, order="C").reshape(-1).view(xp.uint8).astype(xp.uint64)
        pos = xp.arange(v.size, dtype=xp.uint64) % xp.uint64(65521) + xp.uint64(1)
        data = np.asarray(xp.asnumpy(xp.stack([v.sum(), (v * pos).sum()]))).tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=7).digest(), "little")


def check_replicated(tree: Any, what: str = "tree") -> None:
    """Raise :class:`NotReplicatedError` naming the first leaf that differs between ranks.

    Compares a 56-bit hash per leaf (one small allgather), so it is cheap enough to
    call every few hundred steps.

    Example::

        dist.check_replicated(params, "params")
    """
    pairs, _ = tree_util.tree_flatten_with_path(tree)
    hashes = np.array([_digest(x) if x is not None else 0 for _, x in pairs] + [len(pairs)], dtype=np.int64)
    w = world()
    counts = w.transport(np).allgather(np.array([hashes.size], dtype=np.int64))[:, 0]
    if (counts != counts[0]).any():
        raise NotReplicatedError(
            f"check_replicated: {what} has a different number of leaves on different ranks: "
            f"{dict(enumerate(counts.tolist()))}"
        )
    table = w.transport(np).allgather(hashes)
    bad = np.nonzero((table != table[0]).any(axis=0))[0]
    if bad.size:
        i = int(bad[0])
        ranks = np.nonzero(table[:, i] != table[0, i])[0].tolist()
        name = tree_util.keystr(pairs[i][0]) if i < len(pairs) else "(structure)"
        raise NotReplicatedError(
            f"check_replicated: {what}{name} differs between rank 0 and rank(s) {ranks}"
            f"{f' ({bad.size} leaves differ in all)' if bad.size > 1 else ''}; parameters drift apart when "
            f"ranks apply different updates: reduce gradients with allreduce_gradients / sync_gradients "
            f"and start from broadcast_parameters"
        )


def sync_gradients(op: str = "mean", *, bucket_mb: float = DEFAULT_BUCKET_MB) -> GradientTransformation:
    """An optimizer transformation that averages (or sums) the updates over ranks.

    Chain it before any ``fg.optim`` optimizer, which then sees the full-batch
    gradient on every rank.

    Example::

        opt = fg.optim.chain(dist.sync_gradients(), fg.optim.adam(1e-3))
    """
    if op not in ("mean", "sum"):
        raise ValueError(f"sync_gradients: op must be 'mean' or 'sum', got {op!r}")

    def init(params: Any) -> EmptyState:
        return EmptyState()

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> tuple[Any, Any]:
        return allreduce_gradients(updates, op, bucket_mb=bucket_mb), state

    return GradientTransformation(init, update)

