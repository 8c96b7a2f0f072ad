"""``ft.nn.parallel.DistributedDataParallel``: PyTorch-style data parallelism over MPI / NCCL.

Gradients are averaged over ranks *during* backward: each parameter's
post-accumulate-grad hook marks it ready; a bucket (about ``bucket_cap_mb`` MiB
of parameters, in reverse registration order, which is roughly the order
backward produces them) is packed into a persistent flat buffer (each gradient
in its own memory order: a plain copy) and its allreduce started (non-blocking
over MPI) as soon as all its parameters and all earlier buckets are ready. When
the last bucket has started, the hook waits for all of them and writes the
averaged values back into every ``.grad``, in place.

MPICH (and most MPI libraries) move a non-blocking collective forward only while
the process is inside an MPI call, so later hooks test the started reductions;
on a CPU, where one core per rank does both the compute and the copying, an
early start saves waiting rather than work (see docs/distributed.md). NCCL runs
on its own CUDA stream, so there the overlap is real.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ... import distributed as _dist
from ...distributed import buckets as _b
from ...backend import namespace_of
from ..grad_mode import no_grad
from ..tensor import Tensor
from .data_parallel import DataParallel
from .module import Module

__all__ = ["DistributedDataParallel", "DataParallel"]


class _Bucket:
    """Parameters reduced together, their persistent flat buffer, and how each was packed."""

    __slots__ = ("params", "xp", "dtype", "size", "ready", "buffer", "plan", "orders", "views", "view_orders")

    def __init__(self, params: list[Any]) -> None:
        self.params = params
        self.xp = namespace_of(params[0]._value)
        self.dtype = params[0]._value.dtype
        sizes = [int(p._value.size) for p in params]
        self.size = sum(sizes)
        self.ready: set[int] = set()
        self.buffer: Any = None  # allocated on first use; DDP owns it (every .grad keeps its own memory)
        self.plan = _b.Bucket(self.xp, np.dtype(self.dtype), list(range(len(params))), sizes)
        self.orders: list[str] = ["C"] * len(params)
        # gradient_as_bucket_view: the .grad tensors made over the buffer, and the orders they assume
        self.views: list[Any] = [None] * len(params)
        self.view_orders: list[str] = []


def _plan(params: list[Any], cap_bytes: int) -> list[_Bucket]:
    """Buckets of consecutive parameters (reverse order) of one dtype and device, up to ``cap_bytes``."""
    groups: list[list[Any]] = []
    key: Any = None
    nbytes = 0
    for p in reversed(params):
        v = p._value
        k = (id(namespace_of(v)), np.dtype(v.dtype).str)
        n = int(v.size) * np.dtype(v.dtype).itemsize
        if not groups or k != key or nbytes + n > cap_bytes:
            groups.append([])
            key, nbytes = k, 0
        groups[-1].append(p)
        nbytes += n
    return [_Bucket(g) for g in groups]


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward`` leaves the rank-averaged gradient in every ``.grad``.

    At construction every parameter and buffer is overwritten with rank 0's, so
    all ranks start equal. Every parameter that requires grad must take part in
    every backward (``find_unused_parameters`` is not supported: a parameter
    missing at the next forward raises an error naming it). Inside
    :meth:`no_sync` gradients accumulate locally; the first backward after it
    averages the accumulated sum. ``gradient_as_bucket_view=True`` (as in
    PyTorch) makes every ``.grad`` a view of its bucket's buffer after the first
    synced backward instead of copying the averages back: one pass over the
    gradients less, and no packing copy either when gradients are kept between
    steps (``zero_grad(set_to_none=False)``); each synced backward then
    overwrites those ``.grad`` tensors in place. ``poll_progress`` (default True): every
    gradient hook that starts no bucket tests the started ones, so MPI moves them
    forward during backward (MPICH does so only inside MPI calls).

    Example::

        dist.init_process_group("mpi")
        model = ft.nn.parallel.DistributedDataParallel(Net())
        opt = ft.optim.SGD(model.parameters(), lr=0.1)
        loss = loss_fn(model(x_local), y_local)    # the mean over this rank's examples
        opt.zero_grad(); loss.backward(); opt.step()
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float = 25.0,
                 find_unused_parameters: bool = False, gradient_as_bucket_view: bool = False,
                 **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an ft.nn.Module, got {type(module).__name__}")
        if process_group is not None:
            raise NotImplementedError("DistributedDataParallel: only the default process group is supported")
        if find_unused_parameters:
            raise NotImplementedError(
                "DistributedDataParallel: find_unused_parameters=True is not supported; make every parameter "
                "take part in the loss, or set requires_grad=False on the unused ones"
            )
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self._world = _dist.world()
        self.broadcast_buffers = broadcast_buffers
        self._broadcast_state(params=True)
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets = _plan(params, int(bucket_cap_mb * 2**20))
        self._bucket_of = {id(p): b for b, bucket in enumerate(self._buckets) for p in bucket.params}
        self.require_backward_grad_sync = True
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        # test the started reductions from every later gradient hook (MPI progresses them only then)
        self.poll_progress = True
        self._launched: list[Any] = []
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params]

    # ------------------------------------------------------------ construction
    def _broadcast_state(self, params: bool) -> None:
        tensors: list[Tensor] = list(self.module.parameters()) if params else []
        if self.broadcast_buffers:
            tensors += list(self.module.buffers())
        if not tensors or self._world.size == 1:
            return
        values = _dist.broadcast_parameters([t._value for t in tensors], root=0)
        with no_grad():
            for t, v in zip(tensors, values):
                t.copy_(Tensor._make(v))

    # ------------------------------------------------------------ forward
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self._check_finished()
        if self.broadcast_buffers and self.training and self._world.size > 1 and any(True for _ in self.module.buffers()):
            self._broadcast_state(params=False)
        return self.module(*args, **kwargs)

    def _check_finished(self) -> None:
        started = [b for b in self._buckets if b.ready] or self._launched
        if not started:
            return
        ready = {i for b in self._buckets for i in b.ready}
        missing = [n for n, p in self.module.named_parameters() if id(p) in self._bucket_of and id(p) not in ready]
        self._reset()
        raise RuntimeError(
            f"DistributedDataParallel: the previous backward did not produce gradients for {missing}, so their "
            f"gradients were never averaged across ranks. Every parameter that requires grad must take part in "
            f"the loss on every rank (find_unused_parameters is not supported)"
        )

    def _reset(self) -> None:
        for b in self._buckets:
            b.ready.clear()
        self._launched.clear()

    # ------------------------------------------------------------ backward hooks
    def _on_grad(self, p: Tensor) -> None:
        if not self.require_backward_grad_sync:
            return
        b = self._bucket_of[id(p)]
        bucket = self._buckets[b]
        if id(p) in bucket.ready:
            raise RuntimeError(
                "DistributedDataParallel: a parameter received a gradient twice in one iteration (two backward "
                "passes without a forward in between); accumulate inside no_sync(), or run forward again"
            )
        bucket.ready.add(id(p))
        while len(self._launched) < len(self._buckets):
            nxt = self._buckets[len(self._launched)]
            if len(nxt.ready) < len(nxt.params):
                if self.poll_progress:
                    self._poll()
                return
            self._launched.append(self._start(nxt))
        self._finish()

    def _poll(self) -> None:
        """Let MPI move the started reductions forward (it does so only inside MPI calls)."""
        for started in self._launched:
            if started is not None:
                started[1].test()

    def _start(self, bucket: _Bucket) -> Any:
        if self._world.size == 1:  # the average over one rank is its own gradient: nothing to move
            return None
        xp = bucket.xp
        if bucket.buffer is None:
            bucket.buffer = xp.empty(bucket.size, dtype=bucket.dtype)
        grads = [p.grad._value for p in bucket.params]
        bucket.orders = [_b.order_of(g) for g in grads]
        return self._launch(bucket, grads)

    def _launch(self, bucket: _Bucket, grads: list[Any]) -> tuple[Any, Any, np.ndarray]:
        """Pack ``grads`` in ``bucket.orders`` and start the bucket's allreduce, plus the small
        reduction that tells every rank whether all of them packed in the same layout."""
        code = _b.layout_code(bucket.orders)
        agree = np.array([code, -code], dtype=np.int64)
        check = self._world.transport(np).iallreduce_(agree, "max")
        # each rank sends its gradient over the world size (as allreduce_gradients and PyTorch's DDP do)
        _b.pack(bucket.plan, grads, bucket.orders, bucket.buffer, 1.0 / self._world.size)
        return check, self._world.transport(bucket.xp).iallreduce_(bucket.buffer), agree

    def _finish(self) -> None:
        if self._world.size == 1:
            self._reset()
            return
        with no_grad():
            for bucket, (check, req, agree) in zip(self._buckets, self._launched):
                check.wait()
                req.wait()
                if agree[0] != -agree[1]:  # some rank laid a gradient out differently: all redo in C order
                    bucket.orders = ["C"] * len(bucket.params)
                    _, req, _ = self._launch(bucket, [p.grad._value for p in bucket.params])
                    req.wait()
                buf = bucket.buffer
                out: list[Any] = [None] * len(bucket.params)
                _b.views(bucket.plan, [p._value for p in bucket.params], bucket.orders, buf, out)
                if self.gradient_as_bucket_view:
                    self._bind_views(bucket, out)
                else:
                    for p, v in zip(bucket.params, out):
                        p.grad.copy_(Tensor._make(v))  # same layout as .grad: a plain memory copy
        self._reset()

    @staticmethod
    def _bind_views(bucket: _Bucket, out: list[Any]) -> None:
        """Make each ``.grad`` the bucket's view (no copy back); later backwards that keep the
        gradients (``zero_grad(set_to_none=False)``, ``no_sync``) then accumulate in the bucket and
        pack in place."""
        same = bucket.orders == bucket.view_orders
        for k, (p, v) in enumerate(zip(bucket.params, out)):
            if not same or p.grad is not bucket.views[k]:
                t = Tensor._make(v)
                p.grad = t
                bucket.views[k] = t
        bucket.view_orders = list(bucket.orders)

    # ------------------------------------------------------------ user controls
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside the block, backward accumulates gradients locally without communicating.

        Example::

            with model.no_sync():
                loss_fn(model(x1), y1).backward()     # local only
            loss_fn(model(x2), y2).backward()         # averages the accumulated sum
        """
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    def remove_hooks(self) -> None:
        """Take the gradient hooks off the wrapped module's parameters (to unwrap it)."""
        for h in self._handles:
            h.remove()
        self._handles.clear()
