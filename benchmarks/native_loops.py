"""The loop programs of the native tier's benchmark (benchmarks/native_tier.py --loops), for
funcgrad and for JAX (``lax.fori_loop``): the same arithmetic, written once per library.

- an ODE integrator: 1000 RK4 steps of a damped pendulum pair (state of 4) in ``fori_loop``;
- an N-body leapfrog: 32 particles in 3-D, 200 kick-drift-kick steps in ``fori_loop``,
  differentiated with respect to the initial positions and velocities.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

RK4_STEPS, RK4_DT = 1000, 0.01
NBODY_N, NBODY_STEPS, NBODY_DT, NBODY_SOFT = 32, 200, 0.001, 0.01


def rk4_program(np_: Any, fori_loop: Callable[..., Any]) -> Callable[[Any], Any]:
    """x0 (4,) -> sum of the squared final state after RK4_STEPS steps."""
    def rhs(s: Any) -> Any:
        return np_.stack([s[2], s[3], -np_.sin(s[0]) - 0.1 * s[2] + 0.5 * (s[1] - s[0]),
                          -np_.sin(s[1]) - 0.1 * s[3] + 0.5 * (s[0] - s[1])])

    def step(i: Any, s: Any) -> Any:
        k1 = rhs(s)
        k2 = rhs(s + 0.5 * RK4_DT * k1)
        k3 = rhs(s + 0.5 * RK4_DT * k2)
        k4 = rhs(s + RK4_DT * k3)
        return s + RK4_DT / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    def loss(x0: Any) -> Any:
        return np_.sum(fori_loop(0, RK4_STEPS, step, x0) ** 2)
    return loss


def nbody_program(np_: Any, fori_loop: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """(q0, p0), each (N, 3) -> a function of the final state (positions spread plus kinetic energy)."""
    def accel(q: Any) -> Any:
        d = q[:, None, :] - q[None, :, :]
        r2 = np_.sum(d * d, axis=-1) + NBODY_SOFT
        w = r2 ** -1.5
        return -np_.sum(d * w[:, :, None], axis=1) / NBODY_N

    def step(i: Any, state: Any) -> Any:
        q, p = state
        p = p + 0.5 * NBODY_DT * accel(q)
        q = q + NBODY_DT * p
        p = p + 0.5 * NBODY_DT * accel(q)
        return (q, p)

    def loss(q0: Any, p0: Any) -> Any:
        q, p = fori_loop(0, NBODY_STEPS, step, (q0, p0))
        return np_.sum(q * q) + 0.5 * np_.sum(p * p)
    return loss


def nbody_start(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((NBODY_N, 3)), 0.1 * rng.standard_normal((NBODY_N, 3))
