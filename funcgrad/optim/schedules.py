"""Learning-rate schedules: functions ``step -> value`` (step counts from 0).

Every optimizer accepts a float or a schedule as its learning rate.

Example::

    lr = fg.optim.warmup_cosine_decay_schedule(0.0, 1e-3, warmup_steps=100, decay_steps=1000)
    opt = fg.optim.adam(lr)
    [lr(s) for s in (0, 100, 1000)]        # [0.0, 0.001, 0.0]
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

__all__ = [
    "Schedule", "constant_schedule", "linear_schedule", "cosine_decay_schedule", "exponential_decay",
    "warmup_schedule", "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule",
    "piecewise_constant_schedule", "join_schedules",
]

Schedule = Callable[[int], float]


def _step(count: Any) -> int:
    return int(count)


def constant_schedule(value: float) -> Schedule:
    """Always ``value``. Example: ``fg.optim.constant_schedule(1e-3)(10)`` -> 0.001."""
    value = float(value)
    return lambda count: value


def linear_schedule(init_value: float, end_value: float, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """Linear from ``init_value`` to ``end_value`` over ``transition_steps``, then constant.

    Example::

        fg.optim.linear_schedule(1.0, 0.0, 10)(5)    # 0.5
    """
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count: int) -> float:
        t = min(max(_step(count) - transition_begin, 0), transition_steps) / transition_steps
        return float(init_value + (end_value - init_value) * t)

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0) -> Schedule:
    """Cosine decay from ``init_value`` to ``alpha * init_value`` over ``decay_steps``.

    Example::

        fg.optim.cosine_decay_schedule(1.0, 100)(50)    # 0.5
    """
    if decay_steps <= 0:
        raise ValueError(f"cosine_decay_schedule: decay_steps must be positive, got {decay_steps}")

    def schedule(count: int) -> float:
        t = min(_step(count), decay_steps) / decay_steps
        cos = 0.5 * (1.0 + math.cos(math.pi * t))
        return float(init_value * ((1.0 - alpha) * cos ** exponent + alpha))

    return schedule


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value: float | None = None) -> Schedule:
    """``init_value * decay_rate ** ((step - begin) / transition_steps)``, optionally stepped and clipped.

    Example::

        fg.optim.exponential_decay(1.0, 10, 0.5)(20)     # 0.25
    """
    if transition_steps <= 0:
        raise ValueError(f"exponential_decay: transition_steps must be positive, got {transition_steps}")

    def schedule(count: int) -> float:
        p = max(_step(count) - transition_begin, 0) / transition_steps
        if staircase:
            p = math.floor(p)
        v = init_value * decay_rate ** p
        if end_value is not None:
            v = max(v, end_value) if decay_rate < 1 else min(v, end_value)
        return float(v)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Use ``schedules[i]`` between ``boundaries[i-1]`` and ``boundaries[i]``; each restarts its count at 0.

    Example::

        lr = fg.optim.join_schedules([fg.optim.linear_schedule(0, 1, 10), fg.optim.constant_schedule(1)], [10])
    """
    if len(boundaries) != len(schedules) - 1:
        raise ValueError("join_schedules: need exactly one boundary between consecutive schedules")

    def schedule(count: int) -> float:
        c = _step(count)
        start = 0
        for s, b in zip(schedules, boundaries):
            if c < b:
                return s(c - start)
            start = b
        return schedules[-1](c - start)

    return schedule


def warmup_schedule(peak_value: float, warmup_steps: int, init_value: float = 0.0,
                    after: Schedule | None = None) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value``, then ``after`` (default: constant peak).

    Example::

        fg.optim.warmup_schedule(1e-3, 100)(50)     # 5e-4
    """
    after = after or constant_schedule(peak_value)
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps), after], [warmup_steps])


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                                 end_value: float = 0.0) -> Schedule:
    """Linear warmup to ``peak_value``, then cosine decay to ``end_value`` at step ``decay_steps`` (total).

    Example::

        lr = fg.optim.warmup_cosine_decay_schedule(0.0, 1e-3, 100, 1000)
    """
    if decay_steps <= warmup_steps:
        raise ValueError("warmup_cosine_decay_schedule: decay_steps (the total) must exceed warmup_steps")
    alpha = end_value / peak_value if peak_value else 0.0
    return warmup_schedule(peak_value, warmup_steps, init_value,
                           cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha))


def warmup_exponential_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                      transition_steps: int, decay_rate: float, staircase: bool = False,
                                      end_value: float | None = None) -> Schedule:
    """Linear warmup to ``peak_value``, then exponential decay.

    Example::

        lr = fg.optim.warmup_exponential_decay_schedule(0.0, 1e-3, 100, 1000, 0.5)
    """
    return warmup_schedule(peak_value, warmup_steps, init_value,
                           exponential_decay(peak_value, transition_steps, decay_rate, staircase=staircase,
                                             end_value=end_value))


def piecewise_constant_schedule(init_value: float, boundaries_and_scales: dict[int, float] | None = None) -> Schedule:
    """Start at ``init_value``; at each boundary step multiply by its scale.

    Example::

        lr = fg.optim.piecewise_constant_schedule(0.1, {100: 0.1, 200: 0.1})    # 0.1, 0.01, 0.001
    """
    items = sorted((boundaries_and_scales or {}).items())

    def schedule(count: int) -> float:
        c = _step(count)
        v = float(init_value)
        for b, s in items:
            if c >= b:
                v *= s
        return v

    return schedule
