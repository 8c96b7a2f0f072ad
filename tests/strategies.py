"""Shared hypothesis strategies for the primitive families: shapes, axes, input domains.

One place to draw test cases from, so that a family's spec table only says
which primitives to test and on what domain.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = ["shapes", "axis_for", "DOMAINS", "values"]

# small arrays keep the suite fast
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


@st.composite
def axis_for(draw, nd, allow_tuple=True):
    """None, an int (possibly negative), or a tuple of distinct axes (unsorted, negatives)."""
    kinds = ["none"] + (["int"] if nd else []) + (["tuple"] if allow_tuple else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-nd, nd - 1))
    axes = draw(st.permutations(range(nd)))[: draw(st.integers(0, nd))]
    return tuple(a - nd if draw(st.booleans()) else a for a in axes)


# Input domains by name: where a primitive is smooth (for derivative checks).
DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "unit": lambda rng, shape: rng.uniform(-0.9, 0.9, shape),
    "above_one": lambda rng, shape: rng.uniform(1.1, 3.0, shape),
    "nonzero": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape),
    "small": lambda rng, shape: rng.uniform(-0.4, 0.4, shape),
    "prob": lambda rng, shape: rng.uniform(0.1, 0.9, shape),
    # mod/fmod/remainder: x / y stays away from integers (no jumps)
    "mod_x": lambda rng, shape: rng.choice([-1.0, 1.0], shape) * rng.uniform(2.2, 2.6, shape),
    "near_one": lambda rng, shape: rng.uniform(0.95, 1.05, shape),
    # symmetric positive definite (..., n, n): x @ x.T + n I (cholesky, eigh, slogdet, ...)
    "spd": lambda rng, shape: _spd(rng.standard_normal(shape)),
    # well-conditioned square matrices (inv, solve, det): I * n plus noise
    "square": lambda rng, shape: rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1]),
    # real (..., n, n) with one negative eigenvalue, the others positive: sqrtm/logm/fractional
    # powers have complex values there (the root sits on the branch cut)
    "negative_eigenvalue": lambda rng, shape: _with_eigenvalues(rng, shape, -1.5),
}


def _with_eigenvalues(rng, shape, first):
    n = shape[-1]
    basis = rng.standard_normal(shape) * 0.3 + np.eye(n)
    eigenvalues = np.concatenate([[first], np.linspace(1.0, 2.0, n - 1)])
    return basis @ (eigenvalues[:, None] * np.linalg.inv(basis))


def _spd(x):
    return x @ np.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1])


def values(domain, shape, dtype=np.float64, seed=0):
    """An array of ``shape`` drawn from the named domain, in ``dtype``."""
    return np.asarray(DOMAINS[domain](np.random.default_rng(seed), shape)).astype(dtype)
