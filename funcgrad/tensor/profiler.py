"""A small profiler: ``ft.autograd.profiler.profile`` and ``record_function``.

Inside ``profile()``, every recorded primitive call (``aten::``-style names
taken from the funcgrad primitive, e.g. ``mul``), every backward node
(``MulBackward0``) and every ``record_function`` block is counted and timed
(CPU wall time). ``prof.key_averages().table(sort_by="cpu_time_total")``
prints a table like PyTorch's.

Example::

    with ft.autograd.profiler.profile() as prof:
        loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .grad_mode import _DecoratorContextManager
from .debug_modes import profiling as _profiling

__all__ = ["profile", "record_function", "FunctionEvent", "EventList", "FunctionEventAvg"]

_lock = threading.Lock()


class FunctionEvent:
    """One timed event: ``name``, ``cpu_time`` (microseconds), ``thread``."""

    __slots__ = ("name", "cpu_time", "thread", "start")

    def __init__(self, name: str, cpu_time_us: float, thread: int, start: float):
        self.name = name
        self.cpu_time = cpu_time_us
        self.thread = thread
        self.start = start

    @property
    def cpu_time_total(self) -> float:
        return self.cpu_time

    def __repr__(self) -> str:
        return f"<FunctionEvent {self.name} cpu_time={self.cpu_time:.3f}us>"


class FunctionEventAvg:
    """Events with one name, aggregated: ``key``, ``count``, ``cpu_time_total``, ``cpu_time`` (average)."""

    def __init__(self, key: str):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def add(self, ev: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += ev.cpu_time

    def __repr__(self) -> str:
        return f"<FunctionEventAvg key={self.key} count={self.count} cpu_time_total={self.cpu_time_total:.3f}us>"


def _fmt_us(us: float) -> str:
    for scale, unit in ((1e6, "s"), (1e3, "ms")):
        if us >= scale:
            return f"{us / scale:.3f}{unit}"
    return f"{us:.3f}us"


class EventList(list[Any]):
    """A list of events with ``key_averages()`` and ``table()``, as in PyTorch."""

    def key_averages(self, group_by_input_shape: bool = False) -> "EventList":
        groups: dict[Any, Any] = {}
        for ev in self:
            if isinstance(ev, FunctionEventAvg):
                return self
            groups.setdefault(ev.name, FunctionEventAvg(ev.name)).add(ev)
        return EventList(groups.values())

    @property
    def self_cpu_time_total(self) -> float:
        return sum(getattr(e, "cpu_time_total", 0.0) for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_: Any) -> str:
        rows = list(self.key_averages())
        if sort_by:
            key = sort_by.replace("self_", "")
            if key in ("cpu_time_total", "cpu_time", "count"):
                rows.sort(key=lambda r: getattr(r, key), reverse=True)
        rows = rows[:row_limit] if row_limit and row_limit > 0 else rows
        total = sum(r.cpu_time_total for r in rows) or 1.0
        name_w = max([len("Name")] + [len(r.key) for r in rows]) + 2
        header = f"{'Name':<{name_w}}{'CPU total %':>14}{'CPU total':>14}{'CPU time avg':>14}{'# of Calls':>12}"
        sep = "-" * len(header)
        lines = [f"{r.key:<{name_w}}{100.0 * r.cpu_time_total / total:>13.2f}%{_fmt_us(r.cpu_time_total):>14}"
                 f"{_fmt_us(r.cpu_time):>14}{r.count:>12}" for r in rows]
        return "\n".join([sep, header, sep, *lines, sep,
                          f"Self CPU time total: {_fmt_us(sum(r.cpu_time_total for r in rows))}"]) + "\n"

    def __str__(self) -> str:
        return self.table()


def record_event(name: str, seconds: float) -> None:
    ev = FunctionEvent(name, seconds * 1e6, threading.get_ident(), time.perf_counter())
    with _lock:
        for p in _profiling.active:
            p._events.append(ev)


class profile:
    """Profile recorded operations and backward nodes (``torch.autograd.profiler.profile``).

    ``enabled=False`` makes it a no-op; the other PyTorch arguments are accepted and ignored.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False, **_: Any):
        self.enabled = enabled
        self._events: EventList = EventList()
        self._running = False

    def __enter__(self) -> "profile":
        if self.enabled:
            if self._running:
                raise RuntimeError("Profiler context manager is not reentrant")
            self._running = True
            with _lock:
                _profiling.active = _profiling.active + [self]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled and self._running:
            with _lock:
                _profiling.active = [p for p in _profiling.active if p is not self]
            self._running = False

    def events(self) -> EventList:
        return self._events

    @property
    def function_events(self) -> EventList:
        return self._events

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        return self._events.key_averages()

    def table(self, **kwargs: Any) -> str:
        return self._events.table(**kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return self._events.self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


class record_function(_DecoratorContextManager):
    """Label a block of code in the profile (context manager or decorator).

    Example::

        with ft.autograd.profiler.record_function("my_block"):
            y = x * 2
    """

    def __init__(self, name: str = "record_function", args: str | None = None) -> None:
        self.name = name

    def __enter__(self) -> "record_function":
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        if _profiling.active:
            record_event(self.name, time.perf_counter() - self.t0)

    def clone(self) -> "record_function":
        return record_function(self.name)
