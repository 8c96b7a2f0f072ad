"""Host-side draws shared by ``ft.multinomial`` and ``Tensor.multinomial``: checked category draws from a
NumPy random generator (the Tensor layer's generators are NumPy ones).

Example::

    multinomial_draws(np.random.default_rng(0), np.array([0.2, 0.8]), 3, True)   # e.g. [1, 1, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["multinomial_draws"]


def multinomial_draws(rng: np.random.Generator, probs: Any, num_samples: int, replacement: bool) -> np.ndarray:
    """``num_samples`` category indices per row of ``probs`` (1-D or 2-D, non-negative weights), int64,
    refused with PyTorch's messages for bad weights or too many draws without replacement."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = p.reshape(-1, p.shape[-1])
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    out = []
    for r in rows:
        s = r.sum()
        if s <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        out.append(rng.choice(len(r), size=num_samples, replace=replacement, p=r / s))
    res = np.asarray(out, dtype=np.int64).reshape(len(rows), num_samples)
    return res[0] if p.ndim == 1 else res
