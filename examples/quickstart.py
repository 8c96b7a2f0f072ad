"""funcgrad quickstart: derivatives of a scientific function, to any order.

Run: python examples/quickstart.py
"""

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp


def lennard_jones_energy(positions):
    """Total Lennard-Jones energy of a small cluster of atoms (epsilon = sigma = 1)."""
    n = positions.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = fnp.sum((positions[i] - positions[j]) ** 2)
            inv6 = 1.0 / r2**3
            energy = energy + 4.0 * (inv6 * inv6 - inv6)
    return energy


def main():
    # A slightly distorted tetrahedron of four atoms.
    pos = np.array([[0.0, 0.0, 0.0], [1.12, 0.0, 0.0], [0.56, 0.97, 0.0], [0.56, 0.32, 0.92]])

    energy = lennard_jones_energy(pos)
    forces = -fg.grad(lennard_jones_energy)(pos)
    print(f"energy             = {energy:.6f}")
    print("forces (-dE/dx)    =\n", np.round(forces, 6))
    print(f"net force (should be ~0) = {np.abs(forces.sum(axis=0)).max():.2e}")

    # The Hessian (forward-over-reverse) gives the cluster's curvature. Translating
    # the whole cluster changes nothing, so three eigenvalues are exactly zero (the
    # three rotations are zero modes too, but only at an equilibrium geometry).
    H = fg.hessian(lennard_jones_energy)(pos).reshape(12, 12)
    eig = np.linalg.eigvalsh(H)
    print("Hessian is symmetric:", np.allclose(H, H.T))
    print("Hessian eigenvalues:", np.round(eig, 4))

    # Jacobian of a vector function, both modes.
    def polar_to_cartesian(rt):
        r, t = rt[0], rt[1]
        return fnp.stack([r * fnp.cos(t), r * fnp.sin(t)])

    rt = np.array([2.0, 0.5])
    J_rev = fg.jacrev(polar_to_cartesian)(rt)
    J_fwd = fg.jacfwd(polar_to_cartesian)(rt)
    print("Jacobian of polar->cartesian:\n", J_rev)
    print(f"det J = {np.linalg.det(J_rev):.6f} (closed form: r = {rt[0]})")
    assert np.allclose(J_rev, J_fwd)

    # Higher order: the third derivative of tanh at 0.3 by nested grad.
    d3 = fg.grad(fg.grad(fg.grad(fnp.tanh)))(0.3)
    t = np.tanh(0.3)
    print(f"tanh'''(0.3) = {d3:.10f}  closed form {-2 * (1 - t**2) * (1 - 3 * t**2):.10f}")

    # Hessian-vector product without building the Hessian.
    v = np.ones_like(pos)
    _, hv = fg.hvp(lennard_jones_energy, (pos,), (v,))
    print("H @ v matches the full Hessian:", np.allclose(hv.ravel(), H @ v.ravel()))


if __name__ == "__main__":
    main()
