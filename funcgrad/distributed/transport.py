"""Moving host (NumPy) arrays between ranks with MPI's buffer interface.

A transport does the five collectives funcgrad needs on plain arrays, one MPI
call each; the NCCL transport (nccl.py) has the same methods for CuPy arrays.
Shapes and dtypes must agree on every rank (MPI does not check them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MPITransport", "Done"]


class Done:
    """A finished (or stream-ordered) request: ``wait()`` does nothing, ``test()`` is True."""

    def wait(self) -> None:
        return None

    def test(self) -> bool:
        return True


class _Request:
    def __init__(self, req: Any) -> None:
        self._req = req

    def wait(self) -> None:
        self._req.Wait()

    def test(self) -> bool:
        """Progress the operation without blocking; True once it is complete."""
        return bool(self._req.Test())


def _contig(x: Any) -> np.ndarray:
    out: np.ndarray = np.asarray(x, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    return out


class MPITransport:
    """Collectives on host arrays over the world's (duplicated) MPI communicator."""

    def __init__(self, world: Any) -> None:
        self.comm = world.comm
        self.size = world.size
        self.rank = world.rank
        MPI = world.MPI
        if MPI is None:  # a communicator that is not mpi4py's (tests): reductions by name
            self._ops: dict[str, Any] = {k: k for k in ("sum", "max", "min", "prod")}
            self._in_place: Any = None
        else:
            self._ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}
            self._in_place = MPI.IN_PLACE

    def _op(self, op: str) -> Any:
        try:
            return self._ops[op]
        except KeyError:
            raise ValueError(f"unknown reduction {op!r}; expected one of {sorted(self._ops)}") from None

    def allreduce(self, x: Any, op: str = "sum") -> np.ndarray:
        """The elementwise reduction over ranks (a new array, same shape and dtype)."""
        x = _contig(x)
        out: np.ndarray = np.empty_like(x)
        self.comm.Allreduce(x, out, op=self._op(op))
        return out

    def iallreduce_(self, buf: np.ndarray, op: str = "sum") -> Any:
        """Start reducing contiguous ``buf`` in place; ``.wait()`` on the result finishes it."""
        return _Request(self.comm.Iallreduce(self._in_place, buf, op=self._op(op)))

    def allgather(self, x: Any) -> np.ndarray:
        """Every rank's ``x`` stacked on a new leading axis of length ``size``."""
        x = _contig(x)
        out = np.empty((self.size,) + x.shape, dtype=x.dtype)
        self.comm.Allgather(x, out)
        return out

    def reduce_scatter(self, x: Any) -> np.ndarray:
        """``x`` has a leading axis of length ``size``: row ``rank`` of the sum over ranks."""
        x = _contig(x)
        out = np.empty(x.shape[1:], dtype=x.dtype)
        self.comm.Reduce_scatter_block(x, out, op=self._ops["sum"])
        return out

    def broadcast(self, x: Any, root: int) -> np.ndarray:
        """Rank ``root``'s ``x`` on every rank (a new array)."""
        buf = np.array(x, copy=True, order="C")
        self.comm.Bcast(buf, root=root)
        return buf

    def broadcast_(self, buf: np.ndarray, root: int) -> None:
        """Overwrite contiguous ``buf`` with rank ``root``'s, in place."""
        self.comm.Bcast(buf, root=root)
