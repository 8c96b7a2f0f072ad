"""``ft.distributed``: PyTorch's ``torch.distributed`` names over funcgrad.distributed (MPI / NCCL).

Launch with ``mpiexec -n 4 python train.py``; every process runs the script::

    import funcgrad.tensor as ft
    import funcgrad.tensor.distributed as dist

    dist.init_process_group("mpi")
    t = ft.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(t)                   # in place: the sum over ranks

Like PyTorch's, these collectives act in place on the tensors' values and are
not recorded by autograd; for gradients, wrap the model in
``ft.nn.parallel.DistributedDataParallel``. Only the default group exists
(``group=None``). mpi4py is loaded by the first call, never on import.
"""

from __future__ import annotations

import importlib.util
from typing import Any, cast

from .. import distributed as _dist
from .grad_mode import no_grad
from .tensor import Tensor

__all__ = [
    "ReduceOp", "init_process_group", "is_initialized", "is_available", "is_mpi_available", "is_nccl_available",
    "destroy_process_group", "get_rank", "get_world_size", "all_reduce", "broadcast", "all_gather",
    "barrier", "Work",
]


class ReduceOp:
    """Reductions for :func:`all_reduce` (PyTorch's names)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "prod"
    MIN = "min"
    MAX = "max"


class Work:
    """What ``async_op=True`` returns; the collective has already completed."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def is_available() -> bool:
    """True: the distributed package is always importable (MPI is loaded on use)."""
    return True


def is_mpi_available() -> bool:
    """True when mpi4py is installed (``pip install "funcgrad[mpi]"``)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """True when CuPy is installed (NCCL comes through ``cupy.cuda.nccl``)."""
    return importlib.util.find_spec("cupy") is not None


def init_process_group(backend: str = "mpi", init_method: Any = None, world_size: int = -1, rank: int = -1,
                       **kwargs: Any) -> None:
    """Join the MPI world (``backend`` "mpi", or "nccl": host tensors then go over MPI, CuPy ones over NCCL).

    ``world_size`` and ``rank``, if given, must agree with the MPI launch; the
    launcher (``mpiexec``), not ``init_method``, decides who is who.

    Example::

        dist.init_process_group("mpi")
    """
    if backend not in ("mpi", "nccl"):
        raise ValueError(
            f"init_process_group: backend {backend!r} is not supported; funcgrad runs over MPI: use 'mpi' "
            f"(or 'nccl', the same world with CuPy tensors on NCCL) and launch with mpiexec"
        )
    w = _dist.initialize("mpi")
    if world_size not in (-1, None) and world_size != w.size:
        raise ValueError(f"init_process_group: world_size={world_size} but mpiexec started {w.size} processes")
    if rank not in (-1, None) and rank != w.rank:
        raise ValueError(f"init_process_group: rank={rank} but MPI gave this process rank {w.rank}")


def is_initialized() -> bool:
    """True after :func:`init_process_group`. Example: ``dist.is_initialized()``."""
    return _dist.is_initialized()


def destroy_process_group(group: Any = None) -> None:
    """Leave the group (frees funcgrad's communicators). Example: ``dist.destroy_process_group()``."""
    _check_group(group)
    _dist.shutdown()


def _check_group(group: Any) -> None:
    if group is not None:
        raise NotImplementedError("only the default process group is supported (group=None)")


def _world(group: Any = None) -> Any:
    _check_group(group)
    if not _dist.is_initialized():
        raise RuntimeError(
            "Default process group has not been initialized, please make sure to call init_process_group."
        )
    return _dist.world()


def get_rank(group: Any = None) -> int:
    """This process's rank. Example: ``if dist.get_rank() == 0: print(loss.item())``."""
    return cast("int", _world(group).rank)


def get_world_size(group: Any = None) -> int:
    """The number of processes. Example: ``dist.get_world_size()``."""
    return cast("int", _world(group).size)


def _need_tensor(t: Any, fn: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(t).__name__}")
    return t


def _write(t: Tensor, value: Any) -> None:
    with no_grad():
        t.copy_(Tensor._make(value))


def _done(async_op: bool) -> Work | None:
    return Work() if async_op else None


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over ranks, in place (``op``: ReduceOp.SUM, AVG, PRODUCT, MIN, MAX).

    Example::

        dist.all_reduce(loss_sum)                      # now the total on every rank
    """
    w = _world(group)
    t = _need_tensor(tensor, "all_reduce")
    if op not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX):
        raise ValueError(f"all_reduce: unknown op {op!r}; use a dist.ReduceOp member")
    out = w.transport_for(t._value).allreduce(t._value, "sum" if op == ReduceOp.AVG else op)
    if op == ReduceOp.AVG:
        out = out / w.size
    _write(t, out)
    return _done(async_op)


def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False) -> Work | None:
    """Overwrite ``tensor`` with rank ``src``'s, in place. Example: ``dist.broadcast(seed, src=0)``."""
    w = _world(group)
    t = _need_tensor(tensor, "broadcast")
    if not 0 <= src < w.size:
        raise ValueError(f"broadcast: src {src} is not a rank of a world of size {w.size}")
    _write(t, w.transport_for(t._value).broadcast(t._value, src))
    return _done(async_op)


def all_gather(tensor_list: list[Any], tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """Fill ``tensor_list[r]`` with rank ``r``'s ``tensor`` (each entry the same shape).

    Example::

        parts = [ft.zeros(3) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, t)
    """
    w = _world(group)
    t = _need_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, list) or len(tensor_list) != w.size:
        raise ValueError(
            f"all_gather: tensor_list must be a list of {w.size} tensors (one per rank), got "
            f"{len(tensor_list) if isinstance(tensor_list, list) else type(tensor_list).__name__}"
        )
    gathered = w.transport_for(t._value).allgather(t._value)
    for r, dst in enumerate(tensor_list):
        _write(_need_tensor(dst, "all_gather"), gathered[r])
    return _done(async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait for every rank. Example: ``dist.barrier()``."""
    _world(group).comm.Barrier()
    return _done(async_op)
