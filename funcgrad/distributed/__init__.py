"""funcgrad.distributed: data parallelism and differentiable collectives over MPI / NCCL.

Launch one process per core (or per GPU) with MPI; every process runs the same
script::

    pip install "funcgrad[mpi]"
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 4 python train.py

Example (data-parallel training)::

    import funcgrad as fg
    import funcgrad.distributed as dist

    params = dist.broadcast_parameters(params)          # same start on every rank
    opt = fg.optim.chain(dist.sync_gradients(), fg.optim.adam(1e-3))
    state = opt.init(params)
    xb, yb = dist.shard((x, y))                         # this rank's examples
    grads = fg.grad(loss)(params, xb, yb)
    updates, state = opt.update(grads, state, params)   # averaged over ranks first
    params = fg.optim.apply_updates(params, updates)

Host (NumPy) arrays travel over MPI (mpi4py); CuPy arrays over NCCL. Importing
this package imports neither: mpi4py is loaded by the first call that needs it.
Without ``mpiexec`` the world has one rank. See docs/distributed.md for the
gradient convention of the collectives and the rules every rank must follow.
"""

from __future__ import annotations

from .collectives import all_gather, broadcast, pmean, psum, psum_scatter
from .training import (
    DEFAULT_BUCKET_MB, NotReplicatedError, allreduce_gradients, broadcast_parameters, check_replicated, shard,
    shard_size, sync_gradients,
)
from .world import (
    DistributedError, World, barrier, initialize, is_initialized, local_rank, rank, shutdown, size, world,
)

__all__ = [
    "initialize", "is_initialized", "shutdown", "rank", "size", "local_rank", "barrier", "world", "World",
    "DistributedError", "psum", "pmean", "all_gather", "psum_scatter", "broadcast", "allreduce_gradients",
    "broadcast_parameters", "shard", "shard_size", "check_replicated", "NotReplicatedError",
    "sync_gradients", "DEFAULT_BUCKET_MB",
]
