"""Timing: medians of repeated runs after warm-up, with their spread.

The machine these run on is shared and small, so every number is a median
of several samples, each sample long enough (``min_time``) that the timer's
resolution does not matter, and the spread (interquartile range over the
median) is reported beside it so that a noisy number can be recognised.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Budget:
    """How hard to try per timed entry."""

    repeats: int = 15       # samples per entry (fewer when one call is slow)
    warmup: int = 3         # untimed calls first (JIT compiles, caches)
    min_time: float = 0.05  # seconds per sample: fast calls loop inside one sample
    max_time: float = 6.0   # rough cap on the seconds spent timing one entry
    min_repeats: int = 3


FULL = Budget()
QUICK = Budget(repeats=5, warmup=1, min_time=0.005, max_time=0.4, min_repeats=3)
SMOKE = Budget(repeats=1, warmup=0, min_time=0.0, max_time=0.05, min_repeats=1)


@dataclass(frozen=True)
class Stats:
    median: float  # seconds per call (divided by the entry's ``per``)
    q1: float
    q3: float
    best: float
    samples: int
    inner: int     # calls per sample

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (0.05 = 5 %)."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else 0.0

    def scaled(self, per: float) -> "Stats":
        return Stats(self.median / per, self.q1 / per, self.q3 / per, self.best / per, self.samples, self.inner)

    def as_dict(self) -> dict[str, Any]:
        return {"median": self.median, "q1": self.q1, "q3": self.q3, "best": self.best,
                "samples": self.samples, "inner": self.inner}


def measure(fn: Callable[[], object], budget: Budget = FULL) -> Stats:
    """Time one call of ``fn``: median (and quartiles) over ``budget.repeats`` samples.

    Garbage is collected before each sample, so one library's garbage does
    not bill the next, but the collector stays on while timing (unlike
    ``timeit``): a tape that makes reference cycles pays for them here as it
    would in a user's program.
    """
    for _ in range(budget.warmup):
        fn()
    gc.collect()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(budget.min_time / once))
    per_sample = once * inner
    repeats = int(min(budget.repeats, max(budget.min_repeats, budget.max_time / per_sample)))
    samples = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return _stats(samples, inner)


def measure_many(fns: dict[str, Callable[[], object]], budget: Budget = FULL) -> dict[str, dict[str, Stats]]:
    """Time several calls interleaved: round after round, one sample of each.

    On a shared machine the load changes while a table is measured; taking
    the samples of all rows in turns, rather than row after row, exposes
    every row to the same load, so the ratios between rows stay meaningful
    even when the absolute times drift. Each row gets its own repeat count
    (fewer when one call is slow, as in :func:`measure`).

    Returns, per name, ``{"wall": Stats, "cpu": Stats}``: wall-clock time
    and the process's CPU time (all its threads) over the same samples. With
    every library pinned to one thread the two agree on an idle machine; on
    a loaded one the CPU time leaves out the time spent waiting for a core.
    """
    plan = {}
    for name, fn in fns.items():
        for _ in range(budget.warmup):
            fn()
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-7)
        inner = max(1, int(budget.min_time / once))
        repeats = int(min(budget.repeats, max(budget.min_repeats, budget.max_time / (once * inner))))
        plan[name] = (inner, repeats)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(max((p[1] for p in plan.values()), default=0)):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            inner, repeats = plan[name]
            if r >= repeats:
                continue
            fn = fns[name]
            gc.collect()
            c0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - t0) / inner)
            cpu[name].append((time.process_time() - c0) / inner)
    return {name: {"wall": _stats(samples[name], plan[name][0]), "cpu": _stats(cpu[name], plan[name][0])}
            for name in names}


def _stats(samples: list[float], inner: int) -> Stats:
    if len(samples) >= 4:
        q1, _, q3 = statistics.quantiles(samples, n=4)
    else:
        q1, q3 = min(samples), max(samples)
    return Stats(statistics.median(samples), q1, q3, min(samples), len(samples), inner)


def median_time(fn: Callable[[], object], repeats: int = 15, warmup: int = 3, min_time: float = 0.02) -> float:
    """Median wall time of one call of ``fn`` in seconds (kept for old callers)."""
    return measure(fn, Budget(repeats=repeats, warmup=warmup, min_time=min_time)).median
