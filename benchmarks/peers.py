"""The peer libraries, loaded lazily, each pinned to one thread, each optional.

``python -m benchmarks`` compares funcgrad with HIPS autograd, JAX (eager and
``jit``) and PyTorch (eager and ``torch.func``). A peer that is not installed,
or that fails to import, is skipped; ``--peers`` picks a subset.

Every library runs single-threaded: the thread variables below are set
before any of them is imported (``benchmarks/__main__.py`` calls
:func:`pin_thread_env` first thing), the BLAS that NumPy already loaded is
limited with threadpoolctl when it is installed, and PyTorch gets
``torch.set_num_threads(1)``.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from types import SimpleNamespace
from typing import Any

ALL = ("autograd", "torch", "jax")

THREAD_ENV = {
    "FUNCGRAD_JIT_THREADS": "1",  # fg.jit's thread pool for large elementwise regions
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

_enabled: set[str] = set(ALL)
_loaded: dict[str, Any] = {}
_pinned = True  # False under ``--threads default|both``: peers load with their own thread counts


def pin_thread_env() -> dict[str, str | None]:
    """Ask every library loaded from now on for one thread (env variables).

    Returns the previous values, for :func:`restore_env`.
    """
    previous = {key: os.environ.get(key) for key in (*THREAD_ENV, "XLA_FLAGS")}
    for key, value in THREAD_ENV.items():
        os.environ.setdefault(key, value)
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " " + XLA_ONE_THREAD).strip()
    return previous


def restore_env(previous: dict[str, str | None]) -> None:
    """Put back the variables :func:`pin_thread_env` changed."""
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


_limiter = None
_funcgrad_threads: int | None = None


def pin_threads_now() -> str:
    """Limit already-loaded thread pools (NumPy's BLAS, fg.jit's) to one thread; say how."""
    global _limiter, _funcgrad_threads
    fg_config = getattr(sys.modules.get("funcgrad.config"), "config", None)
    if fg_config is not None and _funcgrad_threads is None:  # imported before the env variable was set
        _funcgrad_threads = fg_config.jit_threads
        fg_config.jit_threads = 1
    try:
        import threadpoolctl
    except ImportError:
        return "env variables only (threadpoolctl not installed)"
    if _limiter is None:
        _limiter = threadpoolctl.threadpool_limits(limits=1)
    return "env variables + threadpoolctl.threadpool_limits(1)"


def unpin_threads() -> None:
    """Undo :func:`pin_threads_now`'s threadpoolctl limit (the env variables stay)."""
    global _limiter, _funcgrad_threads
    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    if _funcgrad_threads is not None:
        sys.modules["funcgrad.config"].config.jit_threads = _funcgrad_threads
        _funcgrad_threads = None


def set_pinned(pinned: bool) -> None:
    """Whether peers loaded from now on are pinned to one thread (True, the default) or keep their own."""
    global _pinned
    _pinned = pinned


def set_enabled(names: set[str] | None) -> None:
    """Use only these peers (None: all that import)."""
    global _enabled
    _enabled = set(ALL) if names is None else set(names)


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # not installed, or a broken install: skip that peer
        return None


def autograd() -> Any:
    """``SimpleNamespace(ag=autograd, np=autograd.numpy)`` or None."""
    if "autograd" not in _enabled:
        return None
    if "autograd" not in _loaded:
        ag = _import("autograd")
        _loaded["autograd"] = None if ag is None else SimpleNamespace(ag=ag, np=importlib.import_module("autograd.numpy"))
    return _loaded["autograd"]


def torch() -> Any:
    """The ``torch`` module (one thread unless :func:`set_pinned` said otherwise), or None."""
    if "torch" not in _enabled:
        return None
    if "torch" not in _loaded:
        if _pinned:
            pin_thread_env()
        t = _import("torch")
        if t is not None and _pinned:
            t.set_num_threads(1)
            try:
                t.set_num_interop_threads(1)
            except RuntimeError:  # only allowed before any parallel work started
                pass
            _import("torch.func")
        _loaded["torch"] = t
    return _loaded["torch"]


def jax() -> Any:
    """``SimpleNamespace(jax=jax, np=jax.numpy)`` with float64 enabled, or None."""
    if "jax" not in _enabled:
        return None
    if "jax" not in _loaded:
        if _pinned:
            pin_thread_env()
        j = _import("jax")
        if j is not None:
            j.config.update("jax_enable_x64", True)
            j.config.update("jax_platforms", "cpu")
            j = SimpleNamespace(jax=j, np=importlib.import_module("jax.numpy"))
        _loaded["jax"] = j
    return _loaded["jax"]


def versions() -> dict[str, str]:
    """Versions of NumPy, funcgrad and every enabled peer that imports."""
    import numpy as np

    import funcgrad

    out = {"python": sys.version.split()[0], "numpy": np.__version__, "funcgrad": funcgrad.__version__}
    a = autograd()
    if a is not None:
        out["autograd"] = getattr(a.ag, "__version__", None) or _dist_version("autograd")
    t = torch()
    if t is not None:
        out["torch"] = t.__version__
    j = jax()
    if j is not None:
        import jaxlib

        out["jax"] = j.jax.__version__
        out["jaxlib"] = jaxlib.__version__
    return out


def source_state() -> str:
    """The git commit funcgrad was measured at, and whether funcgrad/ had uncommitted changes."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "funcgrad"], cwd=root, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"
    if not head:
        return "unknown (not a git checkout)"
    return head + (" + uncommitted changes in funcgrad/" if dirty else "")


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


def machine() -> dict[str, Any]:
    """What this machine is: CPU, cores, BLAS kernel, thread settings, load."""
    info: dict[str, Any] = {"platform": platform.platform(), "machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as fh:
            info["memory_gib"] = round(int(fh.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    info["blas"] = blas_info()
    info["openblas_env"] = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    info["thread_env"] = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS")}
    if hasattr(os, "getloadavg"):
        info["loadavg"] = [round(v, 2) for v in os.getloadavg()]
    return info


def blas_info() -> list[dict[str, Any]]:
    """threadpoolctl's view of the loaded BLAS / OpenMP pools (kernel, threads)."""
    try:
        import threadpoolctl
    except ImportError:
        return [{"note": "threadpoolctl not installed: BLAS kernel unknown"}]
    keep = ("internal_api", "architecture", "num_threads", "version", "prefix")
    return [{k: p.get(k) for k in keep if p.get(k) is not None} for p in threadpoolctl.threadpool_info()]
