"""The process group: who we are (rank, size, local rank) and how we talk (transports).

:func:`initialize` duplicates ``MPI.COMM_WORLD`` (or the communicator given), so our
messages never match the user's own MPI traffic. Started without ``mpiexec`` the
world has one process and every collective is the identity. mpi4py is imported
here, on first use, never when funcgrad (or this package) is imported.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from typing import Any

import numpy as np

from ..backend import namespace_of
from .errors import DistributedError

__all__ = [
    "DistributedError", "World", "initialize", "is_initialized", "shutdown", "world", "rank", "size",
    "local_rank", "barrier",
]

_EXTRA_HINT = 'install the mpi extra: pip install "funcgrad[mpi]" (mpi4py plus the mpich wheel)'


def import_mpi() -> Any:
    """``mpi4py.MPI``, or one clear error naming the ``mpi`` extra.

    ``from mpi4py import MPI`` raises ImportError without mpi4py and RuntimeError
    when mpi4py is there but no MPI library can be loaded: both end here.
    """
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError) as err:
        raise DistributedError(
            f"funcgrad.distributed needs mpi4py and an MPI library, and loading them failed "
            f"({type(err).__name__}: {err}); {_EXTRA_HINT}"
        ) from err
    return MPI


def _local_rank(comm: Any, MPI: Any, rank: int) -> int:
    for var in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"):
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    split = getattr(comm, "Split_type", None)
    if split is None or MPI is None:
        return rank
    node = split(MPI.COMM_TYPE_SHARED, key=rank)
    try:
        return int(node.Get_rank())
    finally:
        node.Free()


def _pin_gpu(local: int) -> None:
    """Make GPU ``local % count`` current for CuPy, when CuPy is installed and sees a GPU."""
    if "cupy" not in sys.modules and importlib.util.find_spec("cupy") is None:
        return
    try:
        cupy = importlib.import_module("cupy")
        count = cupy.cuda.runtime.getDeviceCount()
        if count:
            cupy.cuda.Device(local % count).use()
    except Exception:  # noqa: BLE001 - no driver or no device: host-only world
        return


class World:
    """One process group: a private communicator plus a transport per array namespace.

    ``comm`` is an mpi4py communicator (already private to us); host (NumPy)
    arrays travel through it. Device arrays (CuPy) travel through NCCL, whose
    communicator is created on the first device collective (every rank reaches
    it in the same order, by the collective-order rule).
    """

    def __init__(self, comm: Any, MPI: Any) -> None:
        self.comm = comm
        self.MPI = MPI
        self.rank = int(comm.Get_rank())
        self.size = int(comm.Get_size())
        self.local_rank = _local_rank(comm, MPI, self.rank)
        self._transports: dict[int, Any] = {}

    def transport(self, xp: Any) -> Any:
        """The transport for arrays of namespace ``xp`` (MPI for NumPy, NCCL for CuPy)."""
        t = self._transports.get(id(xp))
        if t is None:
            if xp is np:
                from .transport import MPITransport

                t = MPITransport(self)
            else:
                from .nccl import NcclTransport

                t = NcclTransport(self, xp)
            self._transports[id(xp)] = t
        return t

    def transport_for(self, x: Any) -> Any:
        return self.transport(namespace_of(x))

    def free(self) -> None:
        for t in self._transports.values():
            close = getattr(t, "close", None)
            if close is not None:
                close()
        self._transports.clear()
        free = getattr(self.comm, "Free", None)
        if free is not None:
            free()


_lock = threading.Lock()
_world: list[World] = []


def initialize(backend: str = "mpi", comm: Any = None) -> World:
    """Join the process group (idempotent); returns the :class:`World`.

    ``backend="mpi"``: host arrays go through MPI (mpi4py); CuPy arrays through
    NCCL, bootstrapped over MPI, each rank on GPU ``local_rank() % n_gpus``.
    ``comm``: an mpi4py communicator to use instead of ``MPI.COMM_WORLD``; it is
    duplicated either way, so funcgrad's messages never mix with the caller's.
    Run without ``mpiexec``, the world has one rank. Collectives call this
    on first use, so calling it yourself is only needed to pass ``comm``.

    Example::

        import funcgrad.distributed as dist
        dist.initialize()
        print(dist.rank(), "of", dist.size())
    """
    if backend not in ("mpi", "nccl"):
        raise ValueError(
            f"initialize: unknown backend {backend!r}; expected 'mpi' (CuPy arrays then use NCCL, "
            f"'nccl' is accepted as the same)"
        )
    with _lock:
        if _world:
            if comm is None or comm is _world[0].comm:
                return _world[0]
            raise DistributedError(
                "initialize: already initialized with another communicator; call "
                "funcgrad.distributed.shutdown() first"
            )
        MPI: Any = None
        if comm is None or type(comm).__module__.startswith("mpi4py"):
            MPI = import_mpi()
        if comm is None:
            comm = MPI.COMM_WORLD
        w = World(comm.Dup(), MPI)
        _pin_gpu(w.local_rank)
        _world.append(w)
        return w


def is_initialized() -> bool:
    """True once :func:`initialize` ran (explicitly or through a first collective)."""
    return bool(_world)


def shutdown() -> None:
    """Free funcgrad's communicators (MPI itself stays up for the process)."""
    with _lock:
        while _world:
            _world.pop().free()


def world() -> World:
    """The current world, initializing with defaults on first use."""
    return _world[0] if _world else initialize()


def rank() -> int:
    """This process's index in the world (0 without mpiexec). Example: ``if dist.rank() == 0: print(loss)``."""
    return world().rank


def size() -> int:
    """The number of processes in the world (1 without mpiexec). Example: ``lr * dist.size()``."""
    return world().size


def local_rank() -> int:
    """This process's index among the ranks on its node (picks its GPU). Example: ``dist.local_rank()``."""
    return world().local_rank


def barrier() -> None:
    """Wait until every rank got here. Example: ``dist.barrier()`` before timing a step."""
    world().comm.Barrier()
