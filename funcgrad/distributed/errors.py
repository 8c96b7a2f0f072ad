"""The one error type of funcgrad.distributed (its own module, so that the world and
its transports both raise it without importing each other)."""

from __future__ import annotations

__all__ = ["DistributedError"]


class DistributedError(RuntimeError):
    """funcgrad.distributed cannot work here (no mpi4py or no MPI library, bad set-up)."""
