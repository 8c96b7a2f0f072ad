"""The thread setting of a benchmark run: ``--threads one`` (the default), ``default`` or ``both``.

- ``one``: every library pinned to one thread (:mod:`benchmarks.peers`), the setting the targets are for.
- ``default``: every library keeps its own default (NumPy's BLAS and torch's intra-op pool use the cores,
  ``fg.jit`` its ``jit_threads``); nothing is pinned.
- ``both``: each table is timed twice in the same run, first with one thread, then with the defaults, and a
  third table puts the medians side by side. Switching at run time needs threadpoolctl (NumPy's BLAS reads
  its thread variables only when it loads) and no JAX (XLA reads ``XLA_FLAGS`` once).

Threaded rows are timed with the wall clock: the CPU time of the process adds up its threads.

Example::

    python -m benchmarks --only training --peers torch --threads both --quick
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterator, Sequence
from contextlib import contextmanager

from . import peers

MODES = ("one", "default", "both")


def mode_from_argv(argv: Sequence[str]) -> str:
    """The ``--threads`` value of a command line, read before anything imports NumPy (``__main__``).

    Example: ``mode_from_argv(["--threads", "both"]) == "both"``; an absent or unknown value gives ``"one"``
    (argparse reports an unknown one later, with the choices).
    """
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        else:
            continue
        return value if value in MODES else "one"
    return "one"


def check_mode(mode: str, chosen_peers: set[str], clock: str | None) -> str | None:
    """Why ``mode`` cannot run with these peers and this clock (None: it can)."""
    if mode == "one":
        return None
    if clock == "cpu":
        return (f"--threads {mode} times threaded rows with the wall clock (the process's CPU time adds up its "
                f"threads); drop --clock cpu")
    if mode == "both":
        if "jax" in chosen_peers:
            return ("--threads both cannot switch JAX's threads during the run (XLA reads XLA_FLAGS once); "
                    "choose --peers without jax (e.g. --peers torch), or run --threads one and --threads default")
        try:
            import threadpoolctl  # noqa: F401
        except ImportError:
            return ("--threads both switches NumPy's BLAS threads during the run, which needs threadpoolctl "
                    "(pip install threadpoolctl); without it, run --threads one and --threads default")
    return None


def _funcgrad_config() -> Any:
    return getattr(sys.modules.get("funcgrad.config"), "config", None)


class Switch:
    """Switches the loaded libraries between one thread and their own defaults (``--threads both``)."""

    def __init__(self) -> None:
        import threadpoolctl

        self._threadpoolctl = threadpoolctl
        config = _funcgrad_config()
        self.jit_threads = config.jit_threads if config is not None else None
        torch = peers.torch()
        self.torch_threads = torch.get_num_threads() if torch is not None else None

    @contextmanager
    def one(self) -> Iterator[None]:
        """Every loaded library on one thread for the block."""
        torch, config = peers.torch(), _funcgrad_config()
        with self._threadpoolctl.threadpool_limits(limits=1):
            if torch is not None:
                torch.set_num_threads(1)
            if config is not None:
                config.jit_threads = 1
            try:
                yield
            finally:
                self.restore()

    def restore(self) -> None:
        """Each library back to its default thread count."""
        torch, config = peers.torch(), _funcgrad_config()
        if torch is not None and self.torch_threads is not None:
            torch.set_num_threads(self.torch_threads)
        if config is not None and self.jit_threads is not None:
            config.jit_threads = self.jit_threads


def describe_defaults() -> str:
    """What each library runs with when left alone: BLAS and OpenMP pools, torch, fg.jit, the cores."""
    import funcgrad.config  # noqa: F401  (its jit_threads)

    torch = peers.torch()  # loaded first: its OpenMP pool is then among the pools listed
    try:
        import threadpoolctl

        blas = ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpoolctl.threadpool_info())
    except ImportError:
        blas = "BLAS threads unknown (threadpoolctl not installed)"
    config = _funcgrad_config()
    return (f"default threads: pools {blas}; torch {torch.get_num_threads() if torch is not None else '-'}; "
            f"fg.jit {config.jit_threads if config is not None else '-'}; {os.cpu_count()} CPUs")


def side_by_side(one: dict[str, Any], default: dict[str, Any], note: str) -> dict[str, Any]:
    """One result table (``run.table_lines`` shape) of the medians of the same rows at both settings."""
    scale = {"us": 1e6, "ms": 1e3, "s": 1.0}.get(one["unit"], 1.0)
    rows: dict[str, dict[str, Any]] = {}
    for name, row in one["rows"].items():
        threaded = default["rows"].get(name, {})
        if "median" not in row or "median" not in threaded:
            rows[name] = {"value": None, "status": row.get("status") or threaded.get("status") or "not timed"}
            continue
        rows[name] = {"value": row["median"] * scale,
                      "columns": {f"default threads ({one['unit']})": threaded["median"] * scale,
                                  "one / default": row["median"] / threaded["median"]}}
    return {"name": f"{one['name']}_threads", "title": f"{one['title']}: one thread vs default threads",
            "unit": f"one thread ({one['unit']})", "rows": rows, "targets": [], "notes": [note],
            "threads": "both"}
