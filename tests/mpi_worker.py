"""Run by tests/test_distributed_mpi.py as ``mpiexec -n 2 python -m mpi4py tests/mpi_worker.py``.

Every rank checks, against a single-process reference computed in the same
process (no communication), that

* gradients, JVPs, Hessian-vector products and vmap through every collective equal
  those of the summed objective ``sum_r L_r`` (JAX's convention);
* data-parallel training (functional: shard + sync_gradients + adam; Tensor:
  DistributedDataParallel + SGD) equals full-batch training after 20 steps, and the
  parameters stay bitwise replicated;
* the Tensor-side collectives and the training helpers give the right values.

Any failed assertion raises; ``-m mpi4py`` then aborts every rank.
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.distributed as dist
import funcgrad.numpy as fnp
import funcgrad.tensor as ft

dist.initialize()
R, N = dist.rank(), dist.size()
assert N >= 2, "run with at least 2 ranks"
TOL = dict(rtol=1e-11, atol=1e-12)


def close(a, b, what):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), err_msg=f"rank {R}: {what}", **TOL)


# ---------------------------------------------------------------- collectives vs the summed objective
# Every rank builds every rank's inputs (seeded), so it can compute the reference.

def per_rank(shape, seed):
    return np.stack([np.random.default_rng(seed + 101 * r).standard_normal(shape) for r in range(N)])


M = 3
CASES = {
    # name: (rank-local input shape, the collective, its reference on the stacked inputs X -> rank r's output)
    "psum": ((2, 3), lambda x: dist.psum(x), lambda X, r: fnp.sum(X, axis=0)),
    "pmean": ((4,), lambda x: dist.pmean(x), lambda X, r: fnp.sum(X, axis=0) / N),
    "all_gather": ((2, 3), lambda x: dist.all_gather(x), lambda X, r: X),
    "all_gather_axis1": ((2, 3), lambda x: dist.all_gather(x, axis=1), lambda X, r: fnp.moveaxis(X, 0, 1)),
    "all_gather_tiled": (
        (2, 3), lambda x: dist.all_gather(x, axis=-1, tiled=True), lambda X, r: fnp.concatenate(list(X), axis=-1)
    ),
    "psum_scatter": ((N, 3), lambda x: dist.psum_scatter(x), lambda X, r: fnp.sum(X, axis=0)[r]),
    "psum_scatter_tiled": (
        (2, N * M), lambda x: dist.psum_scatter(x, axis=1, tiled=True),
        lambda X, r: fnp.sum(X, axis=0)[:, r * M:(r + 1) * M],
    ),
    "broadcast": ((3,), lambda x: dist.broadcast(x, root=1), lambda X, r: X[1]),
}

for k, (name, (shape, coll, ref)) in enumerate(CASES.items()):
    X = per_rank(shape, 10 * k)
    T = per_rank(shape, 10 * k + 1)
    out_shape = np.shape(ref(X, 0))
    C = per_rank(out_shape, 10 * k + 2)

    def local(x, coll=coll, c=C[R]):
        return fnp.sum(c * fnp.sin(coll(x))) + 0.1 * fnp.sum(x ** 3)

    def total(X, ref=ref, C=C):
        return sum(fnp.sum(C[r] * fnp.sin(ref(X, r))) + 0.1 * fnp.sum(X[r] ** 3) for r in range(N))

    def local_ref(X, r, ref=ref, C=C):
        return fnp.sum(C[r] * fnp.sin(ref(X, r))) + 0.1 * fnp.sum(X[r] ** 3)

    close(coll(X[R]), ref(X, R), f"{name} forward")
    close(fg.grad(local)(X[R]), fg.grad(total)(X)[R], f"{name} grad")
    _, t_out = fg.jvp(local, (X[R],), (T[R],))
    _, t_ref = fg.jvp(lambda X: local_ref(X, R), (X,), (T,))
    close(t_out, t_ref, f"{name} jvp")
    g, hv = fg.hvp(local, (X[R],), (T[R],))
    g_ref, hv_ref = fg.hvp(total, (X,), (T,))
    close(g, g_ref[R], f"{name} hvp (gradient part)")
    close(hv, hv_ref[R], f"{name} hvp")
    # hessian = jacfwd(jacrev): every rank pushes the same basis vector at once (SPMD), so column i
    # is the HVP of the summed objective with e_i as every rank's tangent
    H = fg.hessian(local)(X[R])
    shp = X.shape[1:]
    for idx in np.ndindex(*shp):
        E = np.zeros_like(X)
        E[(slice(None),) + idx] = 1.0
        close(H[(Ellipsis,) + idx], fg.hvp(total, (X,), (E,))[1][R], f"{name} hessian column {idx}")
    # reverse over reverse: the gradient of <grad, t>
    close(fg.grad(lambda x: fnp.sum(fg.grad(local)(x) * T[R]))(X[R]),
          fg.grad(lambda X: fnp.sum(fg.grad(total)(X) * T))(X)[R], f"{name} grad of grad")
    # vmap: a batch of 3 per rank; the batch axis is not a rank axis
    XB = np.stack([per_rank(shape, 1000 + 10 * k + b) for b in range(3)], axis=1)  # (N, 3, ...)
    close(fg.vmap(coll)(XB[R]), np.stack([np.asarray(ref(XB[:, b], R)) for b in range(3)]), f"{name} vmap")
    close(fg.vmap(fg.grad(local))(XB[R]),
          np.stack([np.asarray(fg.grad(total)(XB[:, b])[R]) for b in range(3)]), f"{name} vmap of grad")
    # fg.jit sees through the collective: staged forward, jit(grad), grad(jit) (collectives are impure,
    # so the staged program keeps, orders and never folds or merges them)
    close(fg.jit(coll)(X[R]), ref(X, R), f"{name} jit forward")
    close(fg.jit(fg.grad(local))(X[R]), fg.grad(total)(X)[R], f"{name} jit(grad)")
    close(fg.grad(fg.jit(local))(X[R]), fg.grad(total)(X)[R], f"{name} grad(jit)")
    close(fg.vmap(coll, in_axes=1, out_axes=1)(np.moveaxis(XB[R], 0, 1)),
          np.moveaxis(np.stack([np.asarray(ref(XB[:, b], R)) for b in range(3)]), 0, 1), f"{name} vmap axis 1")

# the trap, documented: grad of an already-replicated loss is N times the gradient of the total
xs = per_rank((3,), 77)
f_rep = lambda x: dist.psum(fnp.sum(fnp.sin(x)))  # noqa: E731
close(fg.grad(f_rep)(xs[R]), N * np.cos(xs[R]), "replicated-loss trap")
close(dist.all_gather(np.float32(R)), np.arange(N, dtype=np.float32), "scalar all_gather")
assert dist.psum(np.ones(2, np.float32)).dtype == np.float32


# ---------------------------------------------------------------- functional data-parallel training

def mlp_init(seed):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((5, 16)) * 0.5, "b1": np.zeros(16),
        "w2": rng.standard_normal((16, 1)) * 0.5, "b2": np.zeros(1),
    }


def mse(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


data_rng = np.random.default_rng(0)
xs_all = data_rng.standard_normal((64, 5))
ys_all = np.sin(xs_all.sum(axis=1, keepdims=True))

ref = mlp_init(0)
opt = fg.optim.adam(1e-2)
st = opt.init(ref)
for _ in range(20):
    upd, st = opt.update(fg.grad(mse)(ref, xs_all, ys_all), st, ref)
    ref = fg.optim.apply_updates(ref, upd)

params = dist.broadcast_parameters(mlp_init(R))  # ranks start apart; rank 0's wins
dist.check_replicated(params, "params")
dopt = fg.optim.chain(dist.sync_gradients(), fg.optim.adam(1e-2))
dst = dopt.init(params)
xb, yb = dist.shard((xs_all, ys_all))
assert xb.shape[0] == 64 // N
for _ in range(20):
    upd, dst = dopt.update(fg.grad(mse)(params, xb, yb), dst, params)
    params = fg.optim.apply_updates(params, upd)
for key in ref:
    close(params[key], ref[key], f"functional training {key}")
dist.check_replicated(params, "params")

# uneven shards: weighted averaging gives the full-batch gradient
x63, y63 = xs_all[:63], ys_all[:63]
xb, yb = dist.shard((x63, y63))
assert xb.shape[0] == dist.shard_size(63)
g = dist.allreduce_gradients(fg.grad(mse)(ref, xb, yb), weight=xb.shape[0], bucket_mb=1e-3)  # several buckets
g_ref = fg.grad(mse)(ref, x63, y63)
for key in ref:
    close(g[key], g_ref[key], f"weighted allreduce {key}")
g_sum = dist.allreduce_gradients({"a": np.full(3, R + 1.0, np.float32), "b": None}, op="sum")
assert g_sum["b"] is None and g_sum["a"].dtype == np.float32
close(g_sum["a"], np.full(3, N * (N + 1) / 2), "allreduce sum")

# check_replicated names the leaf that drifted
drift = dict(params, b2=params["b2"] + (R == 1))
try:
    dist.check_replicated(drift, "params")
except dist.NotReplicatedError as err:
    assert "['b2']" in str(err) and "rank(s) [1]" in str(err), str(err)
else:
    raise AssertionError("check_replicated missed a difference")


# ---------------------------------------------------------------- Tensor front end
ft.distributed.init_process_group("mpi")
assert ft.distributed.get_rank() == R and ft.distributed.get_world_size() == N
t = ft.tensor([1.0, 2.0]) * (R + 1)
ft.distributed.all_reduce(t)
close(t.detach().numpy(), np.array([1.0, 2.0]) * N * (N + 1) / 2, "ft all_reduce")
t = ft.tensor([float(R)])
ft.distributed.all_reduce(t, op=ft.distributed.ReduceOp.MAX)
assert t.item() == N - 1
t = ft.tensor([float(R), 7.0])
ft.distributed.broadcast(t, src=1)
close(t.detach().numpy(), [1.0, 7.0], "ft broadcast")
parts = [ft.zeros(2) for _ in range(N)]
ft.distributed.all_gather(parts, ft.tensor([float(R), -1.0]))
close(np.stack([p.detach().numpy() for p in parts]), [[r, -1.0] for r in range(N)], "ft all_gather")
ft.distributed.barrier()


def net(seed):
    ft.manual_seed(seed)
    return ft.nn.Sequential(ft.nn.Linear(5, 16), ft.nn.Tanh(), ft.nn.Linear(16, 1)).double()


X, Y = ft.tensor(xs_all), ft.tensor(ys_all)
ref_net = net(0)
ropt = ft.optim.SGD(ref_net.parameters(), lr=0.1, momentum=0.9)
for _ in range(20):
    ropt.zero_grad()
    ft.nn.functional.mse_loss(ref_net(X), Y).backward()
    ropt.step()

model = ft.nn.parallel.DistributedDataParallel(net(R), bucket_cap_mb=4e-4)  # several buckets
assert len(model._buckets) > 1
mopt = ft.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
xb, yb = (ft.tensor(a) for a in dist.shard((xs_all, ys_all)))
half = xb.shape[0] // 2
for step in range(20):
    mopt.zero_grad()
    if step % 2:  # gradient accumulation: two micro-batches, communication on the second only
        with model.no_sync():
            (ft.nn.functional.mse_loss(model(xb[:half]), yb[:half]) / 2).backward()
        (ft.nn.functional.mse_loss(model(xb[half:]), yb[half:]) / 2).backward()
    else:
        ft.nn.functional.mse_loss(model(xb), yb).backward()
    mopt.step()
for (name, p), q in zip(model.module.named_parameters(), ref_net.parameters()):
    close(p.detach().numpy(), q.detach().numpy(), f"DDP training {name}")
dist.check_replicated([p.detach().numpy() for p in model.parameters()], "DDP params")

# the same training with every .grad a view of its bucket and gradients kept between steps
# (accumulated and packed in place): bitwise the same parameters
vmodel = ft.nn.parallel.DistributedDataParallel(net(R), bucket_cap_mb=4e-4, gradient_as_bucket_view=True)
vopt = ft.optim.SGD(vmodel.parameters(), lr=0.1, momentum=0.9)
for step in range(20):
    vopt.zero_grad(set_to_none=False)
    if step % 2:
        with vmodel.no_sync():
            (ft.nn.functional.mse_loss(vmodel(xb[:half]), yb[:half]) / 2).backward()
        (ft.nn.functional.mse_loss(vmodel(xb[half:]), yb[half:]) / 2).backward()
    else:
        ft.nn.functional.mse_loss(vmodel(xb), yb).backward()
    vopt.step()
for (name, p), q in zip(vmodel.module.named_parameters(), model.module.parameters()):
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=f"rank {R}: bucket views {name}")
    assert any(np.shares_memory(p.grad.numpy(), b.buffer) for b in vmodel._buckets)


# ---------------------------------------------------------------- bucket packing, layouts, overlap
# Leaves are packed in their own memory order; a Fortran-ordered leaf on one rank and a C-ordered
# one on another must still pair the same elements (the layout check makes both redo in C order).
G = per_rank((6, 5), 500)  # every rank's gradient
mean_ref = np.sum(G, axis=0) / N
layouts = {
    "all C": lambda a: np.ascontiguousarray(a),
    "all Fortran": lambda a: np.asfortranarray(a),
    "rank 0 Fortran, others C": lambda a: np.asfortranarray(a) if R == 0 else np.ascontiguousarray(a),
}
results = {}
for name, lay in layouts.items():
    tree = {"w": lay(G[R]), "b": G[R][0].copy(), "h": np.float32(R)}
    results[name] = dist.allreduce_gradients(tree)
    close(results[name]["w"], mean_ref, f"allreduce_gradients, {name}")
    assert results[name]["h"].dtype == np.float32
np.testing.assert_array_equal(results["all C"]["w"], results["all Fortran"]["w"])
np.testing.assert_array_equal(results["all C"]["w"], results["rank 0 Fortran, others C"]["w"])
assert results["all Fortran"]["w"].flags.f_contiguous  # no transposition on the way
first = dist.allreduce_gradients({"w": G[R]})
kept = first["w"].copy()
dist.allreduce_gradients({"w": 2 * G[R]})
np.testing.assert_array_equal(first["w"], kept)  # a later call never changes earlier results
dist.check_replicated([r["w"] for r in results.values()], "reduced gradients")

# bitwise: many small buckets (reduced while others are packed) == one bucket, functional and DDP
local_grads = fg.grad(mse)(ref, *dist.shard((xs_all, ys_all)))
one = dist.allreduce_gradients(local_grads)
many = dist.allreduce_gradients(local_grads, bucket_mb=1e-4)
for key in one:
    np.testing.assert_array_equal(one[key], many[key], err_msg=f"rank {R}: bucketing changed {key}")


def ddp_grads(cap):
    m = ft.nn.parallel.DistributedDataParallel(net(0), bucket_cap_mb=cap)
    xr, yr = (ft.tensor(a) for a in dist.shard((xs_all, ys_all)))
    ft.nn.functional.mse_loss(m(xr), yr).backward()
    return m, [p.grad.numpy().copy() for p in m.parameters()]


m_one, g_one = ddp_grads(25.0)
m_many, g_many = ddp_grads(4e-4)
assert len(m_one._buckets) == 1 and len(m_many._buckets) > 1
plain = net(0)
xr, yr = (ft.tensor(a) for a in dist.shard((xs_all, ys_all)))
ft.nn.functional.mse_loss(plain(xr), yr).backward()
g_fun = dist.allreduce_gradients([p.grad.numpy() for p in plain.parameters()])
for a, b, c in zip(g_one, g_many, g_fun):
    np.testing.assert_array_equal(a, b, err_msg=f"rank {R}: DDP bucketing changed a gradient")
    np.testing.assert_array_equal(a, c, err_msg=f"rank {R}: DDP differs from allreduce_gradients")
dist.check_replicated(g_many, "DDP gradients")

print(f"rank {R} OK", flush=True)
