"""(d) Hessian of f(x) = sum(tanh(A x)^2) + x.x/2 for n = 50, 200, 500, and
its Hessian-vector product at n = 2000.

By hand: with t = tanh(A x) and w = (2 - 6 t^2)(1 - t^2),
H = A^T diag(w) A + I and H v = A^T (w * (A v)) + v.
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table, Target


def _problem(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    return a, rng.standard_normal(n), rng.standard_normal(n)


def _fns(a):
    def f_fg(x):
        t = fnp.tanh(a @ x)
        return fnp.sum(t * t) + 0.5 * (x @ x)

    def hess_np(x):
        t = np.tanh(a @ x)
        w = (2.0 - 6.0 * t * t) * (1.0 - t * t)
        h = a.T @ (w[:, None] * a)
        h[np.diag_indices_from(h)] += 1.0
        return h

    def hvp_np(x, v):
        t = np.tanh(a @ x)
        w = (2.0 - 6.0 * t * t) * (1.0 - t * t)
        return a.T @ (w * (a @ v)) + v

    return f_fg, hess_np, hvp_np


def _peer_fns(a):
    """f written for each peer that is installed: {prefix: f}."""
    out = {}
    ag = peers.autograd()
    if ag is not None:
        anp = ag.np

        def f_ag(x):
            t = anp.tanh(anp.dot(a, x))
            return anp.sum(t * t) + 0.5 * anp.dot(x, x)

        out["autograd"] = (ag, f_ag)
    torch = peers.torch()
    if torch is not None:
        ta = torch.from_numpy(a)

        def f_t(x):
            t = torch.tanh(ta @ x)
            return (t * t).sum() + 0.5 * (x @ x)

        out["torch"] = (torch, f_t)
    j = peers.jax()
    if j is not None:
        jnp = j.np
        ja = jnp.asarray(a)

        def f_j(x):
            t = jnp.tanh(ja @ x)
            return jnp.sum(t * t) + 0.5 * (x @ x)

        out["jax"] = (j, f_j)
    return out


EAGER_PEERS = ("autograd hessian", "torch.autograd.functional.hessian(vectorize=True)", "torch.func.hessian",
               "jax eager hessian")


FT_HESSIAN = "funcgrad.tensor autograd.functional.hessian"
FT_HESSIAN_VEC = "funcgrad.tensor autograd.functional.hessian(vectorize=True)"


def _tensor_rows(a, x, n: int) -> list[Entry]:
    """The same f on Tensors through ``ft.autograd.functional.hessian`` (issue 12): recorded by the
    Tensor layer, differentiated by its backward walk, the n rows of the outer Jacobian in one walk
    batched by fg.vmap (``vectorize=True``, and the default too since the walk runs no user code)."""
    import funcgrad.tensor as ft

    fa, fx = ft.tensor(a), ft.tensor(x)

    def f_ft(t):
        u = ft.tanh(fa @ t)
        return (u * u).sum() + 0.5 * (t @ t)

    hess = ft.autograd.functional.hessian
    return [Entry(FT_HESSIAN, lambda: hess(f_ft, fx), check=lambda h: h.numpy()),
            Entry(FT_HESSIAN_VEC, lambda: hess(f_ft, fx, vectorize=True), check=lambda h: h.numpy())]


def hessian_table(ctx: Context, n: int) -> Table:
    a, x, _ = _problem(n)
    f_fg, hess_np, _ = _fns(a)
    fg_hess = fg.hessian(f_fg)
    rows = [
        Entry("numpy hand hessian", lambda: hess_np(x), check=lambda h: h),
        Entry("funcgrad hessian", lambda: fg_hess(x), check=lambda h: h),
        Entry("funcgrad jacrev(jacrev)", lambda: fg.jacrev(fg.jacrev(f_fg))(x), check=lambda h: h),
    ]
    jit_hess = fg.jit(fg_hess)  # issue 13
    rows += [
        Entry("funcgrad jit(hessian)", lambda: jit_hess(x), check=lambda h: h),
        Entry("funcgrad jit(hessian) first call", lambda: fg.jit(fg.hessian(f_fg))(x), check=lambda h: h),
    ]
    p = _peer_fns(a)
    if "autograd" in p:
        ag, f_ag = p["autograd"]
        h = ag.ag.hessian(f_ag)
        rows.append(Entry("autograd hessian", lambda: h(x), check=lambda h: h))
    if "torch" in p:
        torch, f_t = p["torch"]
        tx = torch.from_numpy(x)
        th = torch.func.hessian(f_t)
        rows += [
            Entry("torch.autograd.functional.hessian(vectorize=True)",
                  lambda: torch.autograd.functional.hessian(f_t, tx, vectorize=True), check=lambda h: h),
            Entry("torch.func.hessian", lambda: th(tx), check=lambda h: h),
        ]
    if "jax" in p:
        j, f_j = p["jax"]
        jx = j.np.asarray(x)
        jh = j.jax.hessian(f_j)
        jjh = j.jax.jit(jh)
        rows += [
            Entry("jax eager hessian", lambda: jh(jx).block_until_ready(), check=lambda h: h),
            Entry("jax jit hessian", lambda: jjh(jx).block_until_ready(), check=lambda h: h),
        ]
    rows += _tensor_rows(a, x, n)
    targets = []
    if n == 200 or ctx.smoke:
        targets.append(Target(f"ft.autograd.functional.hessian n={n} <= 1.5x funcgrad hessian",
                              FT_HESSIAN, ("funcgrad hessian",), 1.5, issue="12"))
        targets.append(Target(f"(d) Hessian n={n} <= 0.5x the best eager peer", "funcgrad hessian",
                              EAGER_PEERS, 0.5))
        targets.append(Target(f"jit(hessian) n={n} <= 0.5x the best eager peer", "funcgrad jit(hessian)",
                              EAGER_PEERS, 0.5, issue="13"))
    return Table(
        f"hessian{n}", f"(d) Hessian of sum(tanh(A x)^2) + x.x/2, n = {n}", rows, hess_np(x), rtol=1e-9,
        unit="ms", baselines=("numpy hand hessian",), targets=targets,
        notes=["funcgrad hessian is jacfwd(jacrev(f)) (forward-over-reverse, vectorized); 'best eager peer' is "
               "the fastest of autograd, torch.autograd.functional.hessian(vectorize=True), torch.func.hessian "
               "and JAX without jit."] if targets else [],
    )


def hvp_table(ctx: Context) -> Table:
    n = ctx.pick(2000, smoke=30)
    a, x, v = _problem(n, seed=1)
    f_fg, _, hvp_np = _fns(a)
    rows = [
        Entry("numpy hand hvp", lambda: hvp_np(x, v), check=lambda r: r),
        Entry("funcgrad hvp", lambda: fg.hvp(f_fg, (x,), (v,)), check=lambda r: r[1]),
    ]

    def fg_hvp(x, v):
        return fg.hvp(f_fg, (x,), (v,))[1]

    jit_hvp = fg.jit(fg_hvp)  # issue 13
    rows += [
        Entry("funcgrad jit(hvp)", lambda: jit_hvp(x, v), check=lambda r: r),
        Entry("funcgrad jit(hvp) first call", lambda: fg.jit(fg_hvp)(x, v), check=lambda r: r),
    ]
    p = _peer_fns(a)
    if "autograd" in p:
        ag, f_ag = p["autograd"]
        hv = ag.ag.hessian_vector_product(f_ag)
        rows.append(Entry("autograd hessian_vector_product", lambda: hv(x, v), check=lambda r: r))
    if "torch" in p:
        torch, f_t = p["torch"]
        tx, tv = torch.from_numpy(x), torch.from_numpy(v)
        tg = torch.func.grad(f_t)
        rows += [
            Entry("torch.func jvp(grad)", lambda: torch.func.jvp(tg, (tx,), (tv,)), check=lambda r: r[1]),
            Entry("torch.autograd.functional.hvp", lambda: torch.autograd.functional.hvp(f_t, tx, tv),
                  check=lambda r: r[1]),
        ]
    if "jax" in p:
        j, f_j = p["jax"]
        jx, jv = j.np.asarray(x), j.np.asarray(v)
        jg = j.jax.grad(f_j)

        def jhvp(x, v):
            return j.jax.jvp(jg, (x,), (v,))[1]

        jj = j.jax.jit(jhvp)
        rows += [
            Entry("jax eager jvp(grad)", lambda: jhvp(jx, jv).block_until_ready(), check=lambda r: r),
            Entry("jax jit jvp(grad)", lambda: jj(jx, jv).block_until_ready(), check=lambda r: r),
        ]
    return Table(
        "hvp", f"(d) Hessian-vector product of the same f, n = {n}", rows, hvp_np(x, v), rtol=1e-9, unit="ms",
        baselines=("numpy hand hvp",),
        targets=[Target(f"(d) HVP n={n} <= 1.3x hand NumPy", "funcgrad hvp", ("numpy hand hvp",), 1.3),
                 Target(f"jit(hvp) n={n} <= 1.1x hand NumPy", "funcgrad jit(hvp)", ("numpy hand hvp",), 1.1,
                        issue="13")],
        notes=["The hand HVP computes only H v (three matrix-vector products); fg.hvp also returns the gradient "
               "(forward-over-reverse: four). autograd's is reverse-over-reverse; torch.autograd.functional.hvp "
               "uses the double-backward trick."],
    )


def build(ctx: Context) -> list[Table]:
    sizes = ctx.pick((50, 200, 500), quick=(200,), smoke=(6,))
    return [hessian_table(ctx, n) for n in sizes] + [hvp_table(ctx)]
