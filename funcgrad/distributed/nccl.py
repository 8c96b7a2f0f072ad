"""Moving CuPy arrays between ranks with NCCL (``cupy.cuda.nccl``); no host round trip.

Rank 0 makes the NCCL id and MPI carries it to the others; each rank drives the
GPU it was pinned to at :func:`~funcgrad.distributed.initialize` (``local_rank %
n_gpus``). Calls go on CuPy's current stream, so later kernels on that stream see
the results without a host synchronization.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from .transport import Done
from .errors import DistributedError

__all__ = ["NcclTransport"]


def _nccl_module(xp: Any) -> Any:
    nccl = getattr(getattr(xp, "cuda", None), "nccl", None)
    if nccl is None:
        try:
            nccl = importlib.import_module(f"{xp.__name__}.cuda.nccl")
        except ImportError as err:
            raise DistributedError(
                f"collectives on {xp.__name__} arrays need NCCL through cupy.cuda.nccl, which is not "
                f"available ({err}); install CuPy with NCCL, or move the arrays to the host "
                f"(fg.to_numpy) to use MPI"
            ) from err
    if getattr(nccl, "available", True) is False:
        raise DistributedError(
            "cupy.cuda.nccl is not available in this CuPy build; install NCCL (pip install "
            "nvidia-nccl-cu12), or move the arrays to the host (fg.to_numpy) to use MPI"
        )
    return nccl


class NcclTransport:
    """The collectives of :class:`~funcgrad.distributed.transport.MPITransport` on device arrays."""

    def __init__(self, world: Any, xp: Any) -> None:
        self.xp = xp
        self.size = world.size
        self.rank = world.rank
        nccl = self.nccl = _nccl_module(xp)
        uid = nccl.get_unique_id() if world.rank == 0 else None
        uid = world.comm.bcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(world.size, uid, world.rank)
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN, "prod": nccl.NCCL_PROD}
        self._types = {
            np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
            np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int8): nccl.NCCL_INT8,
            np.dtype(np.uint8): nccl.NCCL_UINT8, np.dtype(np.int32): nccl.NCCL_INT32,
            np.dtype(np.int64): nccl.NCCL_INT64,
        }

    # how a buffer and the stream are named to NCCL (tests substitute a fake device)
    @staticmethod
    def pointer(a: Any) -> Any:
        return a.data.ptr

    def stream(self) -> Any:
        return self.xp.cuda.get_current_stream().ptr

    def _typed(self, a: Any, op: str = "sum") -> tuple[Any, int, Any]:
        """(array to send, element count, NCCL type); complex travels as pairs of reals."""
        a = a.reshape(-1)  # contiguous here: a view
        dt = np.dtype(a.dtype)
        if dt.kind == "c":
            if op != "sum":
                raise ValueError(f"reduction {op!r} is not defined for complex arrays")
            a = a.view(np.dtype(f"f{dt.itemsize // 2}"))
            dt = np.dtype(a.dtype)
        if dt.kind == "b":
            raise TypeError("NCCL collectives do not take boolean arrays; cast to an integer type first")
        t = self._types.get(dt)
        if t is None:
            raise TypeError(f"NCCL collectives do not take dtype {dt}; expected one of {sorted(map(str, self._types))}")
        return a, int(a.size), t

    def _op(self, op: str) -> Any:
        try:
            return self._ops[op]
        except KeyError:
            raise ValueError(f"unknown reduction {op!r}; expected one of {sorted(self._ops)}") from None

    def allreduce(self, x: Any, op: str = "sum") -> Any:
        x = self.xp.asarray(x, order="C")
        out = self.xp.empty_like(x)
        s, n, t = self._typed(x, op)
        r, _, _ = self._typed(out, op)
        self.comm.allReduce(self.pointer(s), self.pointer(r), n, t, self._op(op), self.stream())
        return out

    def iallreduce_(self, buf: Any, op: str = "sum") -> Done:
        s, n, t = self._typed(buf, op)
        self.comm.allReduce(self.pointer(s), self.pointer(s), n, t, self._op(op), self.stream())
        return Done()  # stream-ordered: later kernels on the stream see the result

    def allgather(self, x: Any) -> Any:
        x = self.xp.asarray(x, order="C")
        out = self.xp.empty((self.size,) + tuple(x.shape), dtype=x.dtype)
        s, n, t = self._typed(x)
        r, _, _ = self._typed(out)
        self.comm.allGather(self.pointer(s), self.pointer(r), n, t, self.stream())
        return out

    def reduce_scatter(self, x: Any) -> Any:
        x = self.xp.asarray(x, order="C")
        out = self.xp.empty(tuple(x.shape[1:]), dtype=x.dtype)
        s, _, t = self._typed(x)
        r, n, _ = self._typed(out)
        self.comm.reduceScatter(self.pointer(s), self.pointer(r), n, t, self._ops["sum"], self.stream())
        return out

    def broadcast(self, x: Any, root: int) -> Any:
        buf = self.xp.array(x, copy=True, order="C")
        self.broadcast_(buf, root)
        return buf

    def broadcast_(self, buf: Any, root: int) -> None:
        s, n, t = self._typed(buf)
        self.comm.broadcast(self.pointer(s), self.pointer(s), n, t, root, self.stream())

    def close(self) -> None:
        destroy = getattr(self.comm, "destroy", None)
        if destroy is not None:
            destroy()
