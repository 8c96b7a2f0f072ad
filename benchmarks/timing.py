"""Timing helpers: medians of repeated runs after warm-up."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_time(fn: Callable[[], object], repeats: int = 15, warmup: int = 3, min_time: float = 0.02) -> float:
    """Median wall time of one call of ``fn`` in seconds.

    Each sample loops ``fn`` enough times to last about ``min_time`` so that
    timer resolution does not matter for fast workloads.
    """
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(min_time / once))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)
