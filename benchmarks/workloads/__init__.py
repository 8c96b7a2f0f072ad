"""The workloads: each written side by side for funcgrad, NumPy and the peers.

A workload module defines a ``build(ctx)`` function that returns one or more
:class:`Table` objects. A table is a list of :class:`Entry` rows (a name, a
callable to time, and how to read the gradient out of its result), the
reference value every checked row must agree with, the baselines its ratios
are taken against, and the targets of issue 7 / issue 3 that it decides.

Workloads (names for ``--only``)::

    per_op       (a)+(h) per-operation overhead, chain of 200 ops on 3 elements
    mlp32/mlp64  (b)+(h) MLP 784-256-256-10 gradient, float32 / float64
    elementwise  (c) grad / forward of a 10^7-element elementwise function
    elementwise_1e6  the same at 10^6 elements (issue 13's jit(grad) target)
    hessian      (d) Hessian n = 50, 200, 500 and HVP at n = 2000
    jacobian     (e) Jacobian of R^300 -> R^300, both modes (and issue 3's loop ratio)
    nested       (f) third derivative by nested grad
    memory       (g) peak memory of grad through a 50-layer chain; checkpoint; leaks
    per_example  issue 3: per-example gradients, vmap(grad) vs a Python loop, batch 256
    training     issue 19: Conv2d+BatchNorm2d and LSTM training steps, ft.nn vs fg.nn vs torch eager
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..timing import FULL, QUICK, SMOKE, Budget


@dataclass(frozen=True)
class Context:
    """Run settings every workload sees."""

    quick: bool = False
    smoke: bool = False  # tiny sizes and one sample: the harness's self-test; numbers meaningless
    clock: str = "cpu"   # "cpu" (process CPU time) or "wall": which samples the tables show

    @property
    def budget(self) -> Budget:
        return SMOKE if self.smoke else QUICK if self.quick else FULL

    def pick(self, full: Any, quick: Any = None, smoke: Any = None) -> Any:
        """A size for this mode: ``smoke`` < ``quick`` < ``full``."""
        if self.smoke and smoke is not None:
            return smoke
        if (self.quick or self.smoke) and quick is not None:
            return quick
        return full


@dataclass
class Entry:
    """One timed row."""

    name: str                                   # "funcgrad grad", "torch.func jacrev", ...
    fn: Callable[[], Any]                       # the call that is timed
    check: Callable[[Any], Any] | None = None   # fn's result -> value compared with the reference
    group: str = "grad"                         # funcgrad/this compares rows of the same group
    own_forward: str | None = None              # this library's forward row: prints grad / own forward
    per: float = 1.0                            # divide the time by this (ops in a chain, ...)
    expect: Any = None                          # compare with this instead of the table's reference


@dataclass
class Target:
    """``num / min(den...) <= limit``, a goal from the issues decided by this run."""

    label: str
    num: str
    den: tuple[str, ...]
    limit: float
    issue: str = "7"

    def evaluate(self, values: dict[str, float], best: dict[str, float] | None = None) -> dict[str, Any]:
        """Ratio (of medians), whether it is met, and by how much it misses.

        ``best``: the rows' fastest samples; their ratio is reported beside
        (``ratio_of_min``) as a check on noise, but does not decide.
        """
        out: dict[str, Any] = {"label": self.label, "issue": self.issue, "limit": self.limit}
        dens = [(values[d], d) for d in self.den if d in values]
        if self.num not in values or not dens:
            missing = [n for n in (self.num, *self.den) if n not in values]
            out.update(status="not measured", why="missing: " + ", ".join(missing))
            return out
        den, den_name = min(dens)
        ratio = values[self.num] / den if den else float("inf")
        out.update(ratio=ratio, against=den_name, met=ratio <= self.limit,
                   status="met" if ratio <= self.limit else f"missed by {ratio / self.limit:.2f}x")
        if best and self.num in best and den_name in best and best[den_name]:
            out["ratio_of_min"] = best[self.num] / best[den_name]
        return out


@dataclass
class Table:
    """One results table (a workload may produce several)."""

    name: str
    title: str
    entries: list[Entry] = field(default_factory=list)
    reference: Any = None
    rtol: float = 1e-6
    unit: str = "ms"                      # "us", "ms" or "MB"
    baselines: tuple[str, ...] = ()       # extra columns: time / that row
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # a table that is not timed (memory) supplies its own rows:
    # run(ctx) -> {row name: {"value": float, "columns": {...}, "note": str}}
    run: Callable[[Context], dict[str, dict[str, Any]]] | None = None


_MODULES = {
    "per_op": ("chain", ()),
    "mlp32": ("mlp", ("float32",)),
    "mlp64": ("mlp", ("float64",)),
    "elementwise": ("elementwise", ()),
    "elementwise_1e6": ("elementwise", (10**6,)),
    "hessian": ("hessian", ()),
    "jacobian": ("jacobian", ()),
    "nested": ("nested", ()),
    "memory": ("memory", ()),
    "per_example": ("per_example", ()),
    "gpu": ("gpu", ()),  # CuPy vs PyTorch CUDA; no tables without a GPU
    "training": ("training", ()),  # issue 19: Conv2d+BatchNorm and LSTM training steps, ft vs fg.nn vs torch
}
NAMES = tuple(_MODULES)


def build(name: str, ctx: Context) -> list[Table]:
    """The tables of workload ``name`` (its module is imported only now)."""
    import importlib

    module, extra = _MODULES[name]
    return importlib.import_module(f"{__name__}.{module}").build(ctx, *extra)
