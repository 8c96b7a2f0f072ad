"""funcgrad.distributed in one process: lazy import, errors, the size-1 world, and the
plumbing of every path (MPI buffers, NCCL on the fake device, DDP hooks) through a fake
communicator. The semantics across real ranks are checked by tests/test_distributed_mpi.py.

The fake communicator plays rank 0 of a world of ``n`` ranks in which every other rank
holds ``peer(x)`` where this rank holds ``x`` (by default the same values).
"""

from __future__ import annotations

import subprocess
import sys
import types
from typing import Any, Callable

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.distributed as dist
import funcgrad.numpy as fnp
import funcgrad.tensor as ft
from funcgrad.distributed import nccl as dnccl
from funcgrad.distributed import world as dworld


# ---------------------------------------------------------------- the fake communicator

def _np(x: Any) -> np.ndarray:
    return x._a if isinstance(x, fb.FakeArray) else x


class FakeComm:
    """mpi4py's buffer interface for rank ``rank`` of ``n``; the others hold ``peer(x)``."""

    def __init__(self, n: int = 2, rank: int = 0, peer: Callable[[np.ndarray], np.ndarray] = lambda a: a):
        self.n, self.rank, self.peer = n, rank, peer
        self.calls: list[str] = []

    def Dup(self) -> "FakeComm":
        return FakeComm(self.n, self.rank, self.peer)

    def Free(self) -> None:
        pass

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.n

    def Barrier(self) -> None:
        self.calls.append("Barrier")

    def bcast(self, obj: Any, root: int = 0) -> Any:
        self.calls.append("bcast")
        return obj

    def _sum(self, a: np.ndarray, op: str = "sum") -> np.ndarray:
        if op == "sum":
            return a + (self.n - 1) * self.peer(a)
        return {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[op](a, self.peer(a))

    def Allreduce(self, send: np.ndarray, recv: np.ndarray, op: str = "sum") -> None:
        self.calls.append("Allreduce")
        recv[...] = self._sum(send, op)

    def Iallreduce(self, send: Any, recv: np.ndarray, op: str = "sum") -> Any:
        self.calls.append("Iallreduce")
        assert send is None  # in place
        recv[...] = self._sum(recv.copy(), op)
        return types.SimpleNamespace(Wait=lambda: None, Test=lambda: self.calls.append("Test") or True)

    def Allgather(self, send: np.ndarray, recv: np.ndarray) -> None:
        self.calls.append("Allgather")
        for r in range(self.n):
            recv[r] = send if r == self.rank else self.peer(send)

    def Reduce_scatter_block(self, send: np.ndarray, recv: np.ndarray, op: str = "sum") -> None:
        self.calls.append("Reduce_scatter_block")
        recv[...] = self._sum(send)[self.rank]

    def Bcast(self, buf: np.ndarray, root: int = 0) -> None:
        self.calls.append("Bcast")
        if root != self.rank:
            buf[...] = self.peer(buf)


def times(k: float) -> Callable[[np.ndarray], np.ndarray]:
    """A peer whose floating-point data is ``k`` times ours; integers (the packing-layout codes) as ours."""
    return lambda a: k * a if a.dtype.kind in "fc" else a


@pytest.fixture
def fake_world():
    """A world of 2 ranks on the fake communicator (rank 0; rank 1 holds the same values)."""
    dist.shutdown()
    w = dist.initialize(comm=FakeComm(2))
    yield w
    dist.shutdown()


@pytest.fixture
def solo_world():
    """The real size-1 MPI world (no mpiexec)."""
    pytest.importorskip("mpi4py", reason="the mpi extra is not installed")
    dist.shutdown()
    w = dist.initialize()
    yield w
    dist.shutdown()


# ---------------------------------------------------------------- import and set-up

def test_import_funcgrad_does_not_import_mpi4py() -> None:
    code = ("import sys, funcgrad, funcgrad.distributed, funcgrad.tensor, funcgrad.tensor.nn.parallel; "
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported'; print('clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "clean" in out.stdout, out.stderr


@pytest.mark.parametrize("broken", ["missing", "no-library"])
def test_missing_mpi_names_the_extra(monkeypatch: pytest.MonkeyPatch, broken: str) -> None:
    dist.shutdown()
    if broken == "missing":
        monkeypatch.setitem(sys.modules, "mpi4py", None)  # ImportError
    else:  # mpi4py present, no MPI library: `from mpi4py import MPI` raises RuntimeError
        mod = types.ModuleType("mpi4py")

        def fail(name: str) -> Any:
            raise RuntimeError("cannot load MPI library")

        mod.__getattr__ = fail  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "mpi4py", mod)
        monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    with pytest.raises(dist.DistributedError, match=r'funcgrad\[mpi\]') as err:
        dist.rank()
    assert isinstance(err.value.__cause__, ImportError if broken == "missing" else RuntimeError)
    assert not dist.is_initialized()


def test_each_rank_is_pinned_to_its_local_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[int] = []

    class Device:
        def __init__(self, i: int) -> None:
            self.i = i

        def use(self) -> None:
            used.append(self.i)

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 2), Device=Device)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setenv("MPI_LOCALRANKID", "3")  # the 4th rank on its node
    dist.shutdown()
    try:
        dist.initialize(comm=FakeComm(4, rank=3))
        assert dist.local_rank() == 3 and used == [3 % 2]
    finally:
        dist.shutdown()


def test_initialize_errors(fake_world: Any) -> None:
    with pytest.raises(ValueError, match="unknown backend 'gloo'"):
        dist.initialize("gloo")
    assert dist.initialize() is fake_world  # idempotent
    with pytest.raises(dist.DistributedError, match="already initialized"):
        dist.initialize(comm=FakeComm(3))


def test_world_queries(fake_world: Any) -> None:
    assert dist.is_initialized() and (dist.rank(), dist.size(), dist.local_rank()) == (0, 2, 0)
    dist.barrier()
    assert fake_world.comm.calls[-1] == "Barrier"


def test_solo_world(solo_world: Any) -> None:
    assert (dist.rank(), dist.size()) == (0, 1)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(dist.psum(x), x)
    np.testing.assert_array_equal(dist.all_gather(x), x[None])
    np.testing.assert_array_equal(dist.psum_scatter(x[None]), x)
    params = {"w": x, "b": [np.ones(2, np.float32)]}
    out = dist.allreduce_gradients(params)
    assert out["b"][0].dtype == np.float32
    dist.check_replicated(params)


def test_ddp_in_a_world_of_one_rank_does_not_communicate() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(1))
    try:
        net, plain = _net(0), _net(0)
        model = ft.nn.parallel.DistributedDataParallel(net)
        x = ft.randn(5, 3, dtype=ft.float64)
        model(x).sum().backward()
        plain(x).sum().backward()
        assert "Iallreduce" not in dist.world().comm.calls
        for p, q in zip(net.parameters(), plain.parameters()):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
        net[0](x).sum().backward()  # a parameter left out is still named at the next forward
        with pytest.raises(RuntimeError, match="did not produce gradients"):
            model(x)
    finally:
        dist.shutdown()


SOLO = [  # shapes valid for a world of one rank
    ("psum", lambda x: dist.psum(x), (2, 3)),
    ("pmean", lambda x: dist.pmean(x), (3,)),
    ("all_gather", lambda x: dist.all_gather(x, axis=1), (2, 3)),
    ("all_gather_tiled", lambda x: dist.all_gather(x, axis=-1, tiled=True), (2, 3)),
    ("psum_scatter", lambda x: dist.psum_scatter(x, axis=1), (2, 1)),
    ("psum_scatter_tiled", lambda x: dist.psum_scatter(x, tiled=True), (3, 2)),
    ("broadcast", lambda x: dist.broadcast(x, root=0), (3,)),
]


@pytest.mark.parametrize("name,fn,shape", SOLO, ids=[c[0] for c in SOLO])
def test_solo_world_check_grads(solo_world: Any, name: str, fn: Any, shape: tuple) -> None:
    x = np.random.default_rng(4).standard_normal(shape)
    f = lambda x: fnp.sum(fnp.sin(fn(x)) * fnp.cos(fn(x)))  # noqa: E731
    fg.testing.check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    xb = np.random.default_rng(5).standard_normal((2,) + shape)
    np.testing.assert_allclose(fg.vmap(fg.grad(f))(xb), np.stack([fg.grad(f)(xi) for xi in xb]))


# ---------------------------------------------------------------- collectives: values, rules, batching

COLLECTIVES = [
    ("psum", lambda x: dist.psum(x), (2, 3)),
    ("pmean", lambda x: dist.pmean(x), (3,)),
    ("all_gather", lambda x: dist.all_gather(x), (2, 3)),
    ("all_gather_axis", lambda x: dist.all_gather(x, axis=-1), (2, 3)),
    ("all_gather_tiled", lambda x: dist.all_gather(x, axis=1, tiled=True), (2, 3)),
    ("psum_scatter", lambda x: dist.psum_scatter(x), (2, 3)),
    ("psum_scatter_tiled", lambda x: dist.psum_scatter(x, axis=1, tiled=True), (3, 4)),
    ("broadcast", lambda x: dist.broadcast(x, root=1), (3,)),
]


def _mirror_ref(name: str, x: np.ndarray) -> np.ndarray:
    """The value on rank 0 of 2 ranks that hold the same ``x``."""
    return {
        "psum": lambda: 2 * x, "pmean": lambda: x, "all_gather": lambda: np.stack([x, x]),
        "all_gather_axis": lambda: np.stack([x, x], axis=-1),
        "all_gather_tiled": lambda: np.concatenate([x, x], axis=1), "psum_scatter": lambda: 2 * x[0],
        "psum_scatter_tiled": lambda: 2 * x[:, :2], "broadcast": lambda: x,
    }[name]()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,shape", COLLECTIVES, ids=[c[0] for c in COLLECTIVES])
def test_collective_values_and_vmap(fake_world: Any, name: str, fn: Any, shape: tuple, dtype: Any) -> None:
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    out = fn(x)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, _mirror_ref(name, x), rtol=1e-6)
    xb = np.random.default_rng(1).standard_normal((3,) + shape).astype(dtype)
    loop = np.stack([fn(xi) for xi in xb])
    np.testing.assert_allclose(fg.vmap(fn)(xb), loop, rtol=1e-6)
    np.testing.assert_allclose(fg.vmap(fn, in_axes=1, out_axes=1)(np.moveaxis(xb, 0, 1)),
                               np.moveaxis(loop, 0, 1), rtol=1e-6)


@pytest.mark.parametrize("name,fn,shape", [c for c in COLLECTIVES if c[0] in ("psum", "pmean", "broadcast")],
                         ids=["psum", "pmean", "broadcast"])
def test_check_grads_where_ranks_agree(fake_world: Any, name: str, fn: Any, shape: tuple) -> None:
    # In the mirror world every rank holds the same values, so for these collectives the
    # derivative of the summed objective equals n times the local numerical one; broadcast
    # from rank 1: rank 0's input feeds nothing (zero gradient), and check_grads would
    # see a step in x as a step in everyone's x, so only psum / pmean are checked numerically.
    x = np.random.default_rng(2).standard_normal(shape)
    if name == "broadcast":
        np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fn(x) ** 2))(x), 0 * x)
        return
    n = 2 if name == "psum" else 1
    f = lambda x: fnp.sum(fnp.sin(fn(x))) / n  # noqa: E731
    fg.testing.check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_convention_psum_transposes_to_psum(fake_world: Any) -> None:
    x = np.arange(3.0)
    # rank 0's derivative of the sum over 2 ranks of sum(psum(x)) is 2 (each output counts on both ranks)
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(dist.psum(x)))(x), 2 * np.ones(3))
    _, t = fg.jvp(dist.psum, (x,), (np.ones(3),))
    np.testing.assert_array_equal(t, 2 * np.ones(3))


def test_collectives_are_impure_primitives() -> None:
    for fn in (dist.psum, dist.all_gather, dist.psum_scatter, dist.broadcast):
        prim = fn.primitive
        assert not prim.pure and prim.batch_rule is not None and 0 in prim.vjps and 0 in prim.jvps


def test_collective_errors(fake_world: Any) -> None:
    with pytest.raises(ValueError, match="one entry per rank"):
        dist.psum_scatter(np.ones((3, 2)))
    with pytest.raises(ValueError, match="not divisible by the number of ranks"):
        dist.psum_scatter(np.ones((3, 3)), axis=1, tiled=True)
    with pytest.raises(ValueError, match="scalar"):
        dist.psum_scatter(np.float64(1.0))
    with pytest.raises(ValueError, match="scalar"):
        dist.all_gather(1.0, tiled=True)
    with pytest.raises(ValueError, match="root 5 is not a rank"):
        dist.broadcast(np.ones(2), root=5)
    with pytest.raises(ValueError, match="out of bounds"):
        dist.all_gather(np.ones(2), axis=3)


def test_scalars_stay_0d(fake_world: Any) -> None:
    assert dist.psum(np.float64(1.5)).shape == ()
    assert dist.psum(2.0) == 4.0
    np.testing.assert_array_equal(dist.all_gather(np.float32(3.0)), [3.0, 3.0])


# ---------------------------------------------------------------- training helpers

def test_allreduce_gradients_buckets_and_weights() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=times(3)))
    try:
        tree = {"a": np.ones((4, 5)), "b": [np.full(3, 2.0, np.float32), None], "c": np.arange(7.0)}
        out = dist.allreduce_gradients(tree, bucket_mb=100 / 2**20)  # 100-byte buckets: several
        np.testing.assert_allclose(out["a"], 2 * tree["a"])  # (x + 3x) / 2
        np.testing.assert_allclose(out["c"], 2 * tree["c"])
        assert out["b"][0].dtype == np.float32 and out["b"][1] is None
        w = dist.world()
        # the layout check, then [a] [c] (float64, 100 bytes each at most) and [b]
        assert w.comm.calls.count("Iallreduce") == 4
        again = dist.allreduce_gradients(tree, bucket_mb=100 / 2**20)
        np.testing.assert_allclose(out["a"], 2 * tree["a"])  # a later call leaves earlier results alone
        assert not np.shares_memory(again["a"], out["a"])
        scalar = dist.allreduce_gradients({"s": 1.5})  # a Python scalar leaf: a 0-d array back
        assert scalar["s"].shape == () and float(scalar["s"]) == 3.0
        summed = dist.allreduce_gradients({"g": np.ones(2)}, op="sum")
        np.testing.assert_allclose(summed["g"], 4 * np.ones(2))
    finally:
        dist.shutdown()


def test_allreduce_gradients_packs_in_memory_order_and_returns_owned_views() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=times(3)))
    try:
        w_f = np.asfortranarray(np.arange(12.0).reshape(3, 4))  # a transposed gradient, as x.T @ g gives
        tree = {"w": w_f, "b": np.ones(4), "s": np.arange(6.0).reshape(2, 3)[:, ::2]}  # s: not contiguous
        out = dist.allreduce_gradients(tree)
        for k in tree:
            np.testing.assert_array_equal(out[k], 2 * tree[k])  # (x + 3x) / 2, exactly
        assert out["w"].flags.f_contiguous and not out["w"].flags.c_contiguous  # its own order, no transpose
        assert out["s"].flags.c_contiguous
        # one flat buffer for the bucket, new for this call: never the input's memory, never a later call's
        assert np.shares_memory(out["w"].base, out["b"]) and not np.shares_memory(out["w"], w_f)
        again = dist.allreduce_gradients({"w": 5 * w_f, "b": np.zeros(4), "s": tree["s"]})
        np.testing.assert_array_equal(out["w"], 2 * w_f)
        assert not np.shares_memory(again["w"], out["w"])
        np.testing.assert_array_equal(again["w"], 10 * w_f)
    finally:
        dist.shutdown()


def test_allreduce_gradients_falls_back_to_c_order_when_layouts_differ() -> None:
    # the peer holds the same (3, 4) gradient C-ordered while ours is Fortran-ordered: its flat
    # buffer pairs other elements with ours, and its layout code (0: all C) differs from ours
    w_f = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    floats = []

    def peer(a: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "i":
            return np.zeros_like(a)  # the peer packed everything in C order
        floats.append(a.size)
        # its buffer, packed in C order, while we packed in Fortran order; after the redo both are C
        return a.reshape(4, 3).T.reshape(-1) if len(floats) == 1 else a

    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=peer))
    try:
        out = dist.allreduce_gradients({"w": w_f}, op="sum")
        np.testing.assert_array_equal(out["w"], 2 * w_f)  # a silent mismatch would scramble the sum
        assert floats == [12, 12]  # reduced once in each rank's own order, then again in C order
        assert dist.world().comm.calls.count("Iallreduce") == 3
    finally:
        dist.shutdown()


def test_allreduce_gradients_integer_leaves_average_to_floats() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=lambda a: a if a.dtype.kind == "i" and a.size == 2 else 3 * a))
    try:
        out = dist.allreduce_gradients({"n": np.array([1, 2, 3]), "x": np.ones(2, np.float32)})
        assert out["n"].dtype == np.float64 and out["x"].dtype == np.float32
        np.testing.assert_array_equal(out["n"], [2.0, 4.0, 6.0])
        out = dist.allreduce_gradients({"n": np.array([1, 2, 3])}, op="sum")
        assert out["n"].dtype == np.int64
        np.testing.assert_array_equal(out["n"], [4, 8, 12])
    finally:
        dist.shutdown()


def test_allreduce_gradients_weights() -> None:
    dist.shutdown()
    # we: weight 1, gradient 2; the peer: weight 2, gradient 1.5. Each rank sends its gradient times
    # weight / total weight: the peer's share is 1.5 * 2 / 3 = 1
    peer = lambda a: a + 1 if a.ndim == 0 else (a if a.dtype.kind == "i" else np.ones_like(a))  # noqa: E731
    dist.initialize(comm=FakeComm(2, peer=peer))
    try:
        out = dist.allreduce_gradients({"g": np.full(2, 2.0)}, weight=1)
        np.testing.assert_allclose(out["g"], (1 * 2 + 2 * 1.5) / 3 * np.ones(2), rtol=1e-15)
        out = dist.allreduce_gradients({"g": np.full(2, 2.0)}, weight=1, op="sum")  # size() times the mean
        np.testing.assert_allclose(out["g"], 2 * 2 / 3 + 1 * np.ones(2), rtol=1e-15)
        with pytest.raises(ValueError, match="positive total"):
            dist.allreduce_gradients({"g": np.ones(2)}, weight=-0.5)
    finally:
        dist.shutdown()


def test_training_helper_errors(fake_world: Any) -> None:
    with pytest.raises(ValueError, match="op must be 'mean' or 'sum'"):
        dist.allreduce_gradients({"a": np.ones(2)}, op="max")
    with pytest.raises(TypeError, match="psum / pmean"):
        fg.grad(lambda x: fnp.sum(dist.allreduce_gradients({"x": x})["x"]))(np.ones(2))
    with pytest.raises(ValueError, match="same length along axis 0"):
        dist.shard((np.ones(4), np.ones(5)))
    with pytest.raises(ValueError, match="root 3 is not a rank"):
        dist.broadcast_parameters({"a": np.ones(2)}, root=3)
    with pytest.raises(ValueError, match="op must be"):
        dist.sync_gradients("median")


@pytest.mark.parametrize("n,rank,total,expect", [(2, 0, 5, (0, 3)), (2, 1, 5, (3, 5)), (3, 2, 7, (5, 7)),
                                                  (4, 3, 2, (2, 2))])
def test_shard_splits(n: int, rank: int, total: int, expect: tuple) -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(n, rank))
    try:
        x = np.arange(total * 2).reshape(total, 2)
        xs, ys = dist.shard((x, np.arange(total)))
        np.testing.assert_array_equal(ys, np.arange(*expect))
        assert xs.shape == (expect[1] - expect[0], 2) and dist.shard_size(total) == expect[1] - expect[0]
        np.testing.assert_array_equal(dist.shard(x.T, axis=1), x.T[:, expect[0]:expect[1]])
    finally:
        dist.shutdown()


def test_broadcast_parameters_takes_roots_values() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=lambda a: a + 10))
    try:
        out = dist.broadcast_parameters({"w": np.zeros(3), "b": np.zeros(2, np.float32)}, root=1)
        np.testing.assert_array_equal(out["w"], np.full(3, 10.0))
        assert out["b"].dtype == np.float32
    finally:
        dist.shutdown()


def test_check_replicated_names_the_leaf() -> None:
    dist.shutdown()
    # the peer's hash of leaf 1 differs: the second leaf in flattening order
    dist.initialize(comm=FakeComm(2, peer=lambda a: a + (np.arange(a.size) == 1) if a.size > 1 else a))
    try:
        with pytest.raises(dist.NotReplicatedError, match=r"params\['b'\]\[0\] differs between rank 0 and rank\(s\) \[1\]"):
            dist.check_replicated({"a": np.ones(2), "b": [np.ones(3)], "c": np.zeros(1)}, "params")
    finally:
        dist.shutdown()
    dist.initialize(comm=FakeComm(2))
    try:
        dist.check_replicated({"a": np.ones(2)})
    finally:
        dist.shutdown()


def test_sync_gradients_chains_before_an_optimizer() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=times(3)))
    try:
        params = {"w": np.ones(3)}
        opt = fg.optim.chain(dist.sync_gradients(), fg.optim.sgd(0.5))
        state = opt.init(params)
        upd, state = opt.update({"w": np.ones(3)}, state, params)
        np.testing.assert_allclose(upd["w"], -0.5 * 2 * np.ones(3))  # mean of 1 and 3, then sgd
    finally:
        dist.shutdown()


# ---------------------------------------------------------------- NCCL on the fake device

class FakeNccl:
    """cupy.cuda.nccl's surface; a communicator of rank 0 whose peers hold ``peer(x)``."""

    NCCL_SUM, NCCL_MAX, NCCL_MIN, NCCL_PROD = "sum", "max", "min", "prod"
    NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64 = np.dtype("f2"), np.dtype("f4"), np.dtype("f8")
    NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_INT64 = np.dtype("i1"), np.dtype("u1"), np.dtype("i4"), np.dtype("i8")
    calls: list = []
    peer: Callable[[np.ndarray], np.ndarray] = staticmethod(lambda a: a)  # type: ignore[assignment]

    @staticmethod
    def get_unique_id() -> tuple:
        return (1, 2, 3)

    class NcclCommunicator:
        def __init__(self, n: int, uid: tuple, rank: int) -> None:
            assert uid == (1, 2, 3)
            self.n, self.rank = n, rank

        def _check(self, buf: Any, count: int, dtype: Any) -> np.ndarray:
            assert isinstance(buf, fb.FakeArray), type(buf)  # device memory, never a host copy
            a = buf._a
            assert a.size == count and a.dtype == dtype, (a.size, count, a.dtype, dtype)
            return a

        def allReduce(self, send: Any, recv: Any, count: int, dtype: Any, op: str, stream: int) -> None:
            FakeNccl.calls.append("allReduce")
            s, r = self._check(send, count, dtype), self._check(recv, count, dtype)
            p = FakeNccl.peer(s)
            r[...] = s + (self.n - 1) * p if op == "sum" else {"max": np.maximum, "min": np.minimum}[op](s, p)

        def allGather(self, send: Any, recv: Any, count: int, dtype: Any, stream: int) -> None:
            FakeNccl.calls.append("allGather")
            s, r = self._check(send, count, dtype), self._check(recv, count * self.n, dtype)
            rows = r.reshape(self.n, -1)
            for k in range(self.n):
                rows[k] = s if k == self.rank else FakeNccl.peer(s)

        def reduceScatter(self, send: Any, recv: Any, count: int, dtype: Any, op: str, stream: int) -> None:
            FakeNccl.calls.append("reduceScatter")
            s, r = self._check(send, count * self.n, dtype), self._check(recv, count, dtype)
            r[...] = (s + (self.n - 1) * FakeNccl.peer(s)).reshape(self.n, -1)[self.rank]

        def broadcast(self, send: Any, recv: Any, count: int, dtype: Any, root: int, stream: int) -> None:
            FakeNccl.calls.append("broadcast")
            s = self._check(send, count, dtype)
            if root != self.rank:
                s[...] = FakeNccl.peer(s)

        def destroy(self) -> None:
            FakeNccl.calls.append("destroy")


@pytest.fixture
def device_world(fake_world: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    fb.install()
    monkeypatch.setattr(fb.fake.cuda, "nccl", FakeNccl, raising=False)
    monkeypatch.setattr(fb.fake.cuda, "get_current_stream", lambda: types.SimpleNamespace(ptr=0), raising=False)
    monkeypatch.setattr(dnccl.NcclTransport, "pointer", staticmethod(lambda a: a))
    FakeNccl.calls.clear()
    yield fake_world


@pytest.mark.parametrize("name,fn,shape", COLLECTIVES, ids=[c[0] for c in COLLECTIVES])
def test_device_collectives_go_through_nccl(device_world: Any, name: str, fn: Any, shape: tuple) -> None:
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    dx = fb.to_fake(x)
    with fb.no_host_sync():
        out = fn(dx)
        g = fg.grad(lambda x: fnp.sum(fnp.sin(fn(x))))(dx)
        vb = fg.vmap(fn)(fb.to_fake(np.stack([x, 2 * x])))
    assert isinstance(out, fb.FakeArray) and isinstance(g, fb.FakeArray) and isinstance(vb, fb.FakeArray)
    assert FakeNccl.calls and "Allreduce" not in device_world.comm.calls  # no MPI for device data
    assert device_world.comm.calls.count("bcast") == 1  # the NCCL id, once
    np.testing.assert_allclose(out.get(), _mirror_ref(name, x), rtol=1e-6)
    np.testing.assert_allclose(g.get(), fg.grad(lambda x: fnp.sum(fnp.sin(fn(x))))(x), rtol=1e-5)
    np.testing.assert_allclose(vb.get(), np.stack([fn(x), fn(2 * x)]), rtol=1e-6)


@pytest.mark.parametrize("name,fn,shape", COLLECTIVES, ids=[c[0] for c in COLLECTIVES])
def test_device_path_equals_host_path(device_world: Any, monkeypatch: pytest.MonkeyPatch, name: str, fn: Any,
                                      shape: tuple) -> None:
    # ranks that hold different values (the peer has 3x ours): NCCL on the device and MPI on the
    # host must agree on every value and derivative
    triple = staticmethod(lambda a: 3 * a)
    monkeypatch.setattr(FakeNccl, "peer", triple)
    monkeypatch.setattr(device_world.comm, "peer", lambda a: 3 * a)
    x = np.random.default_rng(6).standard_normal(shape)
    f = lambda x: fnp.sum(fn(x) * fnp.sin(fn(x)))  # noqa: E731
    dx = fb.to_fake(x)
    with fb.no_host_sync():
        out, g = fn(dx), fg.grad(f)(dx)
    np.testing.assert_allclose(out.get(), fn(x), rtol=1e-12)
    np.testing.assert_allclose(g.get(), fg.grad(f)(x), rtol=1e-12)


def test_device_training_helpers(device_world: Any) -> None:
    w_f = np.asfortranarray(np.arange(6.0).reshape(3, 2))
    tree = {"w": fb.to_fake(np.ones((3, 2))), "b": fb.to_fake(np.arange(3, dtype=np.float32)),
            "z": fb.to_fake(np.ones(2, np.complex128)), "f": fb.FakeArray(w_f)}
    with fb.no_host_sync():
        out = dist.allreduce_gradients(tree)
        again = dist.broadcast_parameters(tree)
    assert all(isinstance(v, fb.FakeArray) for v in list(out.values()) + list(again.values()))
    np.testing.assert_allclose(out["w"].get(), np.ones((3, 2)))
    np.testing.assert_array_equal(out["f"].get(), w_f)  # packed in Fortran order on the device
    assert out["f"].flags.f_contiguous and not out["f"].flags.c_contiguous
    np.testing.assert_array_equal(again["f"].get(), w_f)
    np.testing.assert_allclose(out["z"].get(), np.ones(2))
    assert out["b"].dtype == np.float32 and out["z"].dtype == np.complex128
    dist.check_replicated(tree)  # hashes on the device, 16 bytes per leaf come back
    with pytest.raises(TypeError, match="boolean"):
        dist.psum(fb.to_fake(np.ones(2, bool)))
    dist.shutdown()
    assert "destroy" in FakeNccl.calls


def test_missing_nccl_is_a_clear_error(fake_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fb.install()
    monkeypatch.setattr(fb.fake.cuda, "nccl", types.SimpleNamespace(available=False), raising=False)
    with pytest.raises(dist.DistributedError, match="cupy.cuda.nccl is not available"):
        dist.psum(fb.to_fake(np.ones(2)))


# ---------------------------------------------------------------- the Tensor layer

def _net(seed: int) -> Any:
    ft.manual_seed(seed)
    return ft.nn.Sequential(ft.nn.Linear(3, 4), ft.nn.Tanh(), ft.nn.Linear(4, 1)).double()


def test_ft_distributed_api() -> None:
    td = ft.distributed
    dist.shutdown()
    with pytest.raises(RuntimeError, match="init_process_group"):
        td.get_rank()
    with pytest.raises(ValueError, match="backend 'gloo' is not supported"):
        td.init_process_group("gloo")
    dist.initialize(comm=FakeComm(2, peer=lambda a: a + 1))
    try:
        td.init_process_group("mpi")
        assert td.is_initialized() and td.get_rank() == 0 and td.get_world_size() == 2
        with pytest.raises(ValueError, match="world_size=4"):
            td.init_process_group("mpi", world_size=4)
        t = ft.tensor([1.0, 2.0], requires_grad=True)
        td.all_reduce(t)
        np.testing.assert_array_equal(t.detach().numpy(), [3.0, 5.0])
        assert t.requires_grad
        t = ft.tensor([1.0])
        td.all_reduce(t, op=td.ReduceOp.AVG)
        np.testing.assert_array_equal(t.numpy(), [1.5])
        t = ft.tensor([1.0])
        td.all_reduce(t, op=td.ReduceOp.MAX)
        np.testing.assert_array_equal(t.numpy(), [2.0])
        t = ft.tensor([1.0, 2.0])
        assert td.broadcast(t, src=1, async_op=True).wait()
        np.testing.assert_array_equal(t.numpy(), [2.0, 3.0])
        parts = [ft.zeros(2), ft.zeros(2)]
        td.all_gather(parts, ft.tensor([1.0, 2.0]))
        np.testing.assert_array_equal(parts[1].numpy(), [2.0, 3.0])
        with pytest.raises(ValueError, match="list of 2 tensors"):
            td.all_gather([ft.zeros(2)], ft.zeros(2))
        with pytest.raises(TypeError, match="expected a Tensor"):
            td.all_reduce(np.ones(2))
        with pytest.raises(NotImplementedError, match="default process group"):
            td.barrier(group="sub")
        td.barrier()
        td.destroy_process_group()
        assert not td.is_initialized()
    finally:
        dist.shutdown()


def test_ddp_broadcasts_buckets_and_averages() -> None:
    dist.shutdown()
    # we are rank 1; rank 0 holds 3x our values (and gradients)
    dist.initialize(comm=FakeComm(2, rank=1, peer=times(3)))
    try:
        base = _net(0)
        ref = [p.detach().numpy().copy() for p in base.parameters()]
        model = ft.nn.parallel.DistributedDataParallel(base, bucket_cap_mb=40 / 2**20)  # tiny buckets
        # broadcast from rank 0: every parameter became 3x
        for p, r in zip(model.parameters(), ref):
            np.testing.assert_allclose(p.detach().numpy(), 3 * r)
        assert len(model._buckets) > 1
        assert list(dict(model.state_dict()))[0].startswith("module.")
        x = ft.randn(5, 3, dtype=ft.float64)
        plain = _net(1)
        for p, q in zip(plain.parameters(), model.parameters()):
            with ft.no_grad():
                p.copy_(q)
        plain(x).sum().backward()
        w = dist.world()
        before = w.comm.calls.count("Iallreduce")
        seen: list[int] = []  # launched allreduces when backward reaches the first layer's bias
        h = model.module[0].bias.register_post_accumulate_grad_hook(
            lambda p: seen.append(w.comm.calls.count("Iallreduce") - before))
        model(x).sum().backward()
        h.remove()
        # per bucket: its data and the check that every rank packed it in the same layout
        assert w.comm.calls.count("Iallreduce") - before == 2 * len(model._buckets)
        assert 0 < seen[0] < 2 * len(model._buckets)  # earlier buckets went out while backward was running
        for p, q in zip(model.parameters(), plain.parameters()):  # (g + 3 g) / 2
            np.testing.assert_allclose(p.grad.numpy(), 2 * q.grad.numpy(), rtol=1e-12)
        # no_sync: no communication; the next synced backward averages the accumulated sum
        for p in model.parameters():
            p.grad = None
        before = w.comm.calls.count("Iallreduce")
        with model.no_sync():
            model(x).sum().backward()
        assert w.comm.calls.count("Iallreduce") == before
        model(x).sum().backward()
        for p, q in zip(model.parameters(), plain.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), 2 * 2 * q.grad.numpy(), rtol=1e-12)
    finally:
        dist.shutdown()


def _record_reductions(comm: FakeComm) -> list[tuple[str, int]]:
    """Wrap ``comm.Iallreduce`` to log (dtype kind, size) of every buffer it reduces."""
    log: list[tuple[str, int]] = []
    inner = comm.Iallreduce

    def Iallreduce(send: Any, recv: np.ndarray, op: str = "sum") -> Any:
        log.append((recv.dtype.kind, int(recv.size)))
        return inner(send, recv, op)

    comm.Iallreduce = Iallreduce  # type: ignore[method-assign]
    return log


def test_ddp_buckets_follow_reverse_parameter_order() -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=times(3)))
    try:
        net = _net(0)  # 0.weight (12), 0.bias (4), 2.weight (4), 2.bias (1): float64
        model = ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=40 / 2**20)  # 5 float64 a bucket
        ids = [id(p) for p in net.parameters()]
        assert [[ids.index(id(p)) for p in b.params] for b in model._buckets] == [[3, 2], [1], [0]]
        log = _record_reductions(dist.world().comm)
        model(ft.randn(5, 3, dtype=ft.float64)).sum().backward()
        # started in bucket order, each with its layout check (int64 [code, -code]) just before
        assert log == [("i", 2), ("f", 5), ("i", 2), ("f", 4), ("i", 2), ("f", 12)]
        # hooks that start nothing test the started reductions (MPI progresses them only in MPI calls)
        calls = dist.world().comm.calls
        assert calls.count("Test") > 0
        model.poll_progress = False
        n_tests = calls.count("Test")
        model(ft.randn(5, 3, dtype=ft.float64)).sum().backward()
        assert calls.count("Test") == n_tests
    finally:
        dist.shutdown()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_ddp_gradient_as_bucket_view(set_to_none: bool) -> None:
    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=times(3)))
    try:
        x = ft.randn(5, 3, dtype=ft.float64)
        models = {}
        for as_view in (False, True):
            net = _net(0)
            model = ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=40 / 2**20,
                                                           gradient_as_bucket_view=as_view)
            opt = ft.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            grads = []
            for step in range(3):
                opt.zero_grad(set_to_none=set_to_none)
                model(x).pow(2).sum().backward()
                grads.append([p.grad.numpy().copy() for p in net.parameters()])
                opt.step()
            models[as_view] = (model, grads)
        (_, copied), (model, viewed) = models[False], models[True]
        for a, b in zip(copied, viewed):
            for u, v in zip(a, b):
                np.testing.assert_array_equal(u, v)  # bitwise the same training
        for bucket in model._buckets:  # every .grad lives in its bucket's buffer
            for p in bucket.params:
                assert np.shares_memory(p.grad.numpy(), bucket.buffer)
    finally:
        dist.shutdown()


def test_ddp_redoes_a_bucket_whose_layout_differs_between_ranks() -> None:
    floats: list[int] = []

    def peer(a: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "i":
            return np.zeros_like(a)  # the peer packed every gradient in C order
        floats.append(a.size)
        if a.size == 12 and floats.count(12) == 1:  # 0.weight's (4, 3) gradient: ours Fortran, its C
            return a.reshape(3, 4).T.reshape(-1)
        return a

    dist.shutdown()
    dist.initialize(comm=FakeComm(2, peer=peer))
    try:
        net, plain = _net(0), _net(0)
        for m in (net, plain):  # a column-major weight: its gradient comes back column-major too
            m[0].weight.data = ft.from_numpy(np.asfortranarray(m[0].weight.detach().numpy()))
        model = ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=40 / 2**20)
        x = ft.randn(5, 3, dtype=ft.float64)
        model(x).sum().backward()
        plain(x).sum().backward()
        assert not net[0].weight.grad.numpy().flags.c_contiguous  # the case being tested
        assert floats.count(12) == 2  # the Fortran-packed bucket went again, in C order
        for p, q in zip(net.parameters(), plain.parameters()):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())  # (g + g) / 2
    finally:
        dist.shutdown()


def test_ddp_errors(fake_world: Any) -> None:
    net = _net(0)
    with pytest.raises(TypeError, match="ft.nn.Module"):
        ft.nn.parallel.DistributedDataParallel(lambda x: x)
    with pytest.raises(NotImplementedError, match="find_unused_parameters"):
        ft.nn.parallel.DistributedDataParallel(net, find_unused_parameters=True)
    with pytest.raises(ValueError, match="bucket_cap_mb"):
        ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0)
    model = ft.nn.parallel.DistributedDataParallel(net)
    x = ft.randn(2, 3, dtype=ft.float64)
    # a loss that leaves the last layer's bias out: the next forward names it
    h = model.module[0](x).sum()
    h.backward()
    with pytest.raises(RuntimeError, match=r"did not produce gradients for \['2.weight', '2.bias'\]"):
        model(x)
    model(x).sum().backward()  # recovered
    model.module[0](x).sum().backward()
    with pytest.raises(RuntimeError, match="twice in one iteration"):
        model.module[0](x).sum().backward()
    with pytest.raises(RuntimeError, match="did not produce gradients"):
        model(x)
    loss = model(x).sum()  # a complete backward may run twice: the second reduces the accumulated sum
    loss.backward(retain_graph=True)
    loss.backward()


def test_ddp_on_the_device(device_world: Any) -> None:
    with fb.as_cuda():
        net = _net(0)
        host = _net(0)
        net.cuda()
        model = ft.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=40 / 2**20)
        x = ft.randn(5, 3, dtype=ft.float64)
        xd = x.cuda()
        with fb.no_host_sync():
            model(xd).sum().backward()
        host(x).sum().backward()
        assert FakeNccl.calls.count("allReduce") == len(model._buckets) > 1
        for p, q in zip(model.parameters(), host.parameters()):
            assert isinstance(p.grad._value, fb.FakeArray)
            np.testing.assert_allclose(p.grad._value.get(), q.grad.numpy(), rtol=1e-12)  # mirror: (g + g) / 2
