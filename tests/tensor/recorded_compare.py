"""Comparing our results with PyTorch's, recorded (JSON fixtures) or live: one copy of the
tree comparison and of the conversion to JSON-like values the fixture scripts share."""

from __future__ import annotations

from typing import Any

import numpy as np


def close(ours: Any, ref: Any, path: str) -> None:
    """Assert ``ours`` matches ``ref`` (dicts by key, non-numeric lists item by item, numbers and
    numeric lists to 1e-10), naming the first mismatch by its ``path``."""
    if isinstance(ref, dict):
        assert isinstance(ours, dict) and set(ours) == set(ref), path
        for k in ref:
            close(ours[k], ref[k], f"{path}.{k}")
    elif isinstance(ref, (list, tuple)) and not (ref and isinstance(ref[0], (int, float)) and
                                                 not isinstance(ref[0], bool)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(ref), path
        for i, (o, r) in enumerate(zip(ours, ref)):
            close(o, r, f"{path}[{i}]")
    elif isinstance(ref, (list, float, int)) and not isinstance(ref, bool):
        np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(ref, dtype=float), rtol=1e-10,
                                   atol=1e-12, err_msg=path)
    else:
        assert ours == ref, f"{path}: {ours!r} != {ref!r}"


def as_json(v: Any) -> Any:
    """``v`` with tuples as lists and arrays as nested lists (what a JSON fixture holds)."""
    if isinstance(v, dict):
        return {k: as_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [as_json(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v
