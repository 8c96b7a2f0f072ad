"""(e) Jacobian of a map R^300 -> R^300 in both modes, and issue 3's ratio of
the vectorized jacfwd / jacrev over a Python loop of jvp / vjp ("before").

g(x) = x * tanh(W x) + sin(x); by hand
J = diag(x (1 - t^2)) W + diag(t + cos x) with t = tanh(W x).
"""

from __future__ import annotations

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp

from .. import peers
from . import Context, Entry, Table, Target


def build(ctx: Context) -> list[Table]:
    n = ctx.pick(300, smoke=8)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    eye = np.eye(n)

    def jac_np(x):
        t = np.tanh(w @ x)
        jac = (x * (1.0 - t * t))[:, None] * w
        jac[np.diag_indices(n)] += t + np.cos(x)
        return jac

    def g(x):
        return x * fnp.tanh(w @ x) + fnp.sin(x)

    def jacfwd_loop():
        """One jvp per input direction: what jacfwd did before issue 3."""
        return np.stack([fg.jvp(g, (x,), (e,))[1] for e in eye], axis=1)

    def jacrev_loop():
        """One forward pass, one vjp per output direction: jacrev before issue 3."""
        _, pull = fg.vjp(g, x)
        return np.stack([pull(e)[0] for e in eye])

    fwd, rev = fg.jacfwd(g), fg.jacrev(g)
    rows = [
        Entry("numpy hand jacobian", lambda: jac_np(x), check=lambda j: j, group="hand"),
        Entry("funcgrad jacfwd", lambda: fwd(x), check=lambda j: j, group="jacfwd"),
        Entry("funcgrad jacrev", lambda: rev(x), check=lambda j: j, group="jacrev"),
        Entry("funcgrad loop of jvp", jacfwd_loop, check=lambda j: j, group="loop-fwd"),
        Entry("funcgrad loop of vjp", jacrev_loop, check=lambda j: j, group="loop-rev"),
    ]
    jit_rev = fg.jit(rev)  # issue 13
    rows += [
        Entry("funcgrad jit(jacrev)", lambda: jit_rev(x), check=lambda j: j, group="jacrev"),
        Entry("funcgrad jit(jacrev) first call", lambda: fg.jit(fg.jacrev(g))(x), check=lambda j: j, group="jacrev"),
    ]
    a = peers.autograd()
    if a is not None:
        anp = a.np

        def g_ag(x):
            return x * anp.tanh(anp.dot(w, x)) + anp.sin(x)

        ajac = a.ag.jacobian(g_ag)
        rows.append(Entry("autograd jacobian (loop of vjp)", lambda: ajac(x), check=lambda j: j, group="jacrev"))
    torch = peers.torch()
    if torch is not None:
        tw, tx = torch.from_numpy(w), torch.from_numpy(x)

        def g_t(x):
            return x * torch.tanh(tw @ x) + torch.sin(x)

        tf, tr = torch.func.jacfwd(g_t), torch.func.jacrev(g_t)
        rows += [
            Entry("torch.func.jacfwd", lambda: tf(tx), check=lambda j: j, group="jacfwd"),
            Entry("torch.func.jacrev", lambda: tr(tx), check=lambda j: j, group="jacrev"),
            Entry("torch.autograd.functional.jacobian(vectorize=True)",
                  lambda: torch.autograd.functional.jacobian(g_t, tx, vectorize=True), check=lambda j: j,
                  group="jacrev"),
        ]
    j = peers.jax()
    if j is not None:
        jnp = j.np
        jw, jx = jnp.asarray(w), jnp.asarray(x)

        def g_j(x):
            return x * jnp.tanh(jw @ x) + jnp.sin(x)

        jf, jr = j.jax.jacfwd(g_j), j.jax.jacrev(g_j)
        jjf, jjr = j.jax.jit(jf), j.jax.jit(jr)
        rows += [
            Entry("jax eager jacfwd", lambda: jf(jx).block_until_ready(), check=lambda j: j, group="jacfwd"),
            Entry("jax eager jacrev", lambda: jr(jx).block_until_ready(), check=lambda j: j, group="jacrev"),
            Entry("jax jit jacfwd", lambda: jjf(jx).block_until_ready(), check=lambda j: j, group="jacfwd"),
            Entry("jax jit jacrev", lambda: jjr(jx).block_until_ready(), check=lambda j: j, group="jacrev"),
        ]
    return [Table(
        "jacobian", f"(e) Jacobian of g(x) = x * tanh(W x) + sin(x), R^{n} -> R^{n}, both modes", rows, jac_np(x),
        rtol=1e-9, unit="ms", baselines=("numpy hand jacobian",),
        targets=[
            Target("(e) jacfwd no slower than torch.func.jacfwd", "funcgrad jacfwd", ("torch.func.jacfwd",), 1.0),
            Target("(e) jacrev no slower than torch.func.jacrev", "funcgrad jacrev", ("torch.func.jacrev",), 1.0),
            Target("jit(jacrev) R^300 <= 0.5x torch.func.jacrev", "funcgrad jit(jacrev)", ("torch.func.jacrev",), 0.5,
                   issue="13"),
            Target("jacfwd >= 5x faster than a loop of jvp (<= 0.2x)", "funcgrad jacfwd",
                   ("funcgrad loop of jvp",), 0.2, issue="3"),
            Target("jacrev >= 5x faster than a loop of vjp (<= 0.2x)", "funcgrad jacrev",
                   ("funcgrad loop of vjp",), 0.2, issue="3"),
        ],
        notes=["'funcgrad/this' compares funcgrad's row of the same mode (jacfwd rows with funcgrad jacfwd, "
               "jacrev rows with funcgrad jacrev).",
               "The loops are issue 3's 'before': one jvp per input basis vector, or one recorded forward "
               "pass and one vjp per output basis vector."],
    )]
