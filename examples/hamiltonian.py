"""Hamiltonian dynamics from the gradient of an energy: a Kepler orbit.

The equations of motion ``dq/dt = dH/dp``, ``dp/dt = -dH/dq`` come from
``fg.grad`` of the Hamiltonian ``H(q, p) = |p|^2 / 2 - 1 / |q|`` (a planet
around a sun, units with G M = 1); nothing is differentiated by hand. The
symplectic leapfrog (velocity Verlet) integrator keeps the energy error
bounded: as large in the last orbit as in the first, however many orbits,
and conserves angular momentum to rounding error. Non-symplectic methods
drift: explicit Euler fast, RK4 (more accurate per step) slowly but without
bound. The example checks these facts and exits with an error if they fail.

Run: python examples/hamiltonian.py [--orbits 30] [--steps-per-orbit 200] [--fast]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


def kinetic(p):
    return 0.5 * fnp.sum(p * p)


def potential(q):
    return -1.0 / fnp.sqrt(fnp.sum(q * q))


def hamiltonian(q, p):
    return kinetic(p) + potential(q)


dH_dq = fg.grad(hamiltonian, argnums=0)
dH_dp = fg.grad(hamiltonian, argnums=1)


def vector_field(q, p):
    """(dq/dt, dp/dt) from the Hamiltonian's gradient."""
    return dH_dp(q, p), -dH_dq(q, p)


def leapfrog(q, p, dt, n):
    """Velocity Verlet: symplectic and time-reversible (one force evaluation per step)."""
    force = -dH_dq(q, p)
    for _ in range(n):
        p = p + 0.5 * dt * force
        q = q + dt * dH_dp(q, p)
        force = -dH_dq(q, p)
        p = p + 0.5 * dt * force
        yield q, p


def euler(q, p, dt, n):
    for _ in range(n):
        dq, dp = vector_field(q, p)
        q, p = q + dt * dq, p + dt * dp
        yield q, p


def rk4(q, p, dt, n):
    for _ in range(n):
        k1 = vector_field(q, p)
        k2 = vector_field(q + 0.5 * dt * k1[0], p + 0.5 * dt * k1[1])
        k3 = vector_field(q + 0.5 * dt * k2[0], p + 0.5 * dt * k2[1])
        k4 = vector_field(q + dt * k3[0], p + dt * k3[1])
        q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        p = p + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        yield q, p


def angular_momentum(q, p):
    return q[0] * p[1] - q[1] * p[0]


def simulate(integrator, q0, p0, dt, n, steps_per_orbit):
    """Final state, max relative energy error in the first and in the last orbit, max angular momentum error."""
    E0, L0 = float(hamiltonian(q0, p0)), angular_momentum(q0, p0)
    first_dE, last_dE, max_dL = 0.0, 0.0, 0.0
    q, p = q0, p0
    for i, (q, p) in enumerate(integrator(q0, p0, dt, n)):
        dE = abs(float(hamiltonian(q, p)) - E0) / abs(E0)
        if i < steps_per_orbit:
            first_dE = max(first_dE, dE)
        if i >= n - steps_per_orbit:
            last_dE = max(last_dE, dE)
        max_dL = max(max_dL, abs(angular_momentum(q, p) - L0) / abs(L0))
    return q, p, first_dE, last_dE, max_dL


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orbits", type=int, default=30)
    parser.add_argument("--steps-per-orbit", type=int, default=200)
    parser.add_argument("--eccentricity", type=float, default=0.5)
    parser.add_argument("--fast", action="store_true", help="a short run (also FUNCGRAD_EXAMPLE_FAST=1)")
    args = parser.parse_args(argv)
    fast = args.fast or os.environ.get("FUNCGRAD_EXAMPLE_FAST") == "1"
    orbits = 5 if fast else args.orbits

    # Start at perihelion of an orbit with semi-major axis 1 (period 2 pi).
    e = args.eccentricity
    q0 = np.array([1.0 - e, 0.0])
    p0 = np.array([0.0, math.sqrt((1.0 + e) / (1.0 - e))])
    period = 2 * math.pi
    dt = period / args.steps_per_orbit
    n = orbits * args.steps_per_orbit
    print(f"Kepler orbit, eccentricity {e}, energy {float(hamiltonian(q0, p0)):.6f} (exact: -0.5), "
          f"{orbits} orbits, {n} steps of dt = {dt:.4f}")

    results = {}
    for name, integrator in [("leapfrog (symplectic)", leapfrog), ("RK4", rk4), ("explicit Euler", euler)]:
        t = time.perf_counter()
        q, p, dE1, dEn, dL = simulate(integrator, q0, p0, dt, n, args.steps_per_orbit)
        results[name] = (dE1, dEn, dL, q)
        print(f"  {name:22s} relative energy error: first orbit {dE1:.2e}, last orbit {dEn:.2e};  "
              f"angular momentum error {dL:.1e};  {time.perf_counter() - t:.1f} s")

    lf1, lfn, lf_dL, q_lf = results["leapfrog (symplectic)"]
    rk1, rkn, _, _ = results["RK4"]
    eu1, eun, _, _ = results["explicit Euler"]
    checks = {
        "leapfrog energy error stays bounded (last orbit <= 1.5 x first, < 1%)": lfn <= 1.5 * lf1 and lfn < 1e-2,
        "leapfrog conserves angular momentum to rounding": lf_dL < 1e-10,
        "leapfrog stays on a bound orbit (distance between perihelion and aphelion)":
            0.95 * (1 - e) <= float(np.hypot(*q_lf)) <= 1.05 * (1 + e),
        "RK4 drifts: its energy error grows orbit after orbit": rkn > 2 * rk1,
        "explicit Euler drifts far more": eun > 10 * lfn,
    }
    for what, good in checks.items():
        print(f"  {'OK    ' if good else 'FAILED'} {what}")
    ok = all(checks.values())
    if not ok:
        raise SystemExit(1)
    return results


if __name__ == "__main__":
    main()
