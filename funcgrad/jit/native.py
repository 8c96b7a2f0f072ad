"""The native backend: a staged program as numba-compiled loops.

A *segment* is a run of equations this backend can lower on host float32/float64
values (:func:`funcgrad.jit.native_ops.kind_of`: elementwise functions with
broadcasting, comparisons, ``where``/``maximum``/``minimum``, reductions over any
axes, views, basic and advanced indexing, contractions and einsum, concatenation,
scatters, LAPACK calls). Each segment becomes one numba function (:mod:`funcgrad.jit.native_source`
writes its source): elementwise work of one shape runs as one loop nest that computes
every value element by element, so a chain of elementwise calls, forward or
derivative, makes no temporaries: only the values read after the loop are stored.
Where every equation lowers, the whole program is one compiled call; otherwise the
replay (:mod:`funcgrad.jit.numpy_replay`) runs the rest and calls the compiled
segments.

Results: every elementwise result is computed in its recorded dtype from the same
operands, by LLVM's / libm's functions rather than NumPy's loops, so values may
differ from the replay's in the last few bits (docs/jit.md states the bound);
NaN and inf come out as NumPy's (no floating-point warnings are issued).

numba is optional (``pip install funcgrad[native]``); nothing here imports it
until a program is compiled. :func:`available` says whether the tier is on and,
if not, why.

Example::

    from funcgrad.jit import native
    made = native.native_program(prog)   # (program calling compiled segments, lowered, left), or None
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import math
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from ..core.trace import Primitive
from .compile_worker import CompileWorker
from .ir import Const, Eqn, Program, Var
from .kinds import is_host_array
from .known import TENSORDOT
from .native_ops import COMPARISONS, DOT, MATMUL, NATIVE_EXPR, contraction, is_literal as _is_literal, kind_of, reads_of
from .native_source import BLAS_MIN_WORK, segment_source

__all__ = ["NATIVE_EXPR", "COMPARISONS", "available", "installed", "status", "cache_dir", "lowerable", "Segment", "plan",
           "segment_source", "NJIT_OPTIONS", "kernel_module_text", "versions", "cache_key", "compile_segment",
           "native_program"]


# -- is numba there? ----------------------------------------------------------------------

_numba: Any = None
_why_off: str | None = None


def _load_numba() -> Any:
    global _numba, _why_off
    if _numba is None and _why_off is None:
        try:
            import numba
        except Exception as exc:  # noqa: BLE001 - any failure means: no native tier
            _why_off = (f"the native tier of fg.jit is off: numba cannot be imported ({exc}); "
                        f"install it with `pip install funcgrad[native]`")
        else:
            _numba = numba
    return _numba


def available() -> bool:
    """Can programs be compiled to native code here (is numba importable)? Imports numba."""
    return _load_numba() is not None


_installed: bool | None = None


def installed() -> bool:
    """Is numba installed (found without importing it: cheap enough for a first call)?"""
    global _installed
    if _installed is None:
        try:
            _installed = sys.modules.get("numba", 0) is not None and importlib.util.find_spec("numba") is not None
        except (ImportError, ValueError):
            _installed = False
    return _installed


def status() -> str:
    """One line on the native tier: on (with numba's version) or off, and why."""
    if available():
        return f"the native tier of fg.jit is on (numba {_numba.__version__}); kernels cached in {cache_dir()}"
    return _why_off or "the native tier of fg.jit is off"


def cache_dir() -> str:
    """Where compiled kernels are kept between processes (env ``FUNCGRAD_CACHE_DIR``)."""
    base = os.environ.get("FUNCGRAD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "funcgrad")
    return os.path.join(base, "native")


# -- what lowers ------------------------------------------------------------------------

def lowerable(e: Eqn) -> bool:
    """Does this backend lower equation ``e`` (see :func:`funcgrad.jit.native_ops.kind_of`)? A contraction
    of at least ``native_source.BLAS_MIN_WORK`` multiply-adds that the native code would write as loops (one
    that is not a product of two matrices, e.g. a stack of matrices times a matrix) does not: it stays with
    the replay's BLAS call, many times faster there (a training step's layer products ran 10x slower as
    compiled loops)."""
    kind = kind_of(e)
    if kind == "block" and e.prim in (MATMUL, DOT, TENSORDOT):
        made = contraction(e)
        if (made is not None and (made.a_order is None or made.b_order is None)
                and math.prod(e.outs[0].shape) * math.prod(made.sizes) >= BLAS_MIN_WORK):
            return False
    return kind is not None


class Segment:
    """A run of lowerable equations compiled as one function: ``ins`` the values it reads
    from outside, ``outs`` the values read after it."""

    def __init__(self, eqns: list[Eqn], ins: list[Any], outs: list[Var]):
        self.eqns, self.ins, self.outs = eqns, ins, outs


def plan(prog: Program, lowers: Callable[[Eqn], bool] = lowerable) -> list[Any]:
    """``prog``'s equations with each maximal run of lowerable ones replaced by a :class:`Segment`
    (``lowers``: which equations a backend lowers; this backend's by default, the CUDA
    backend's for device programs)."""
    users = prog.readers()
    final = prog.output_vars()
    items: list[Any] = []
    run: list[int] = []

    def flush() -> None:
        if run and all(kind_of(prog.eqns[k]) == "view" for k in run):
            items.extend(prog.eqns[k] for k in run)  # views alone: NumPy's are free, a copy is not
            run.clear()
        if run:
            members = [prog.eqns[k] for k in run]
            inside = set(run)
            made = {o for e in members for o in e.outs}
            ins: list[Any] = []
            const_names: set[str] = set()
            for e in members:
                for a in reads_of(e):
                    if (isinstance(a, Var) or (isinstance(a, Const) and not _is_literal(a.value))) \
                            and a not in made and a not in ins and not (isinstance(a, Const) and a.name in const_names):
                        ins.append(a)
                        if isinstance(a, Const):
                            const_names.add(a.name)  # (index constants are named by value: one argument each)
            outs = [o for e in members for o in e.outs
                    if o in final or any(k not in inside for k in users.get(o, ()))]
            items.append(Segment(members, ins, outs))
            run.clear()

    for k, e in enumerate(prog.eqns):
        if lowers(e):
            run.append(k)
        else:
            flush()
            items.append(e)
    flush()
    return items


# -- compiling, with an on-disk cache ------------------------------------------------------

_import_lock = threading.Lock()

#: The options of every compiled function's ``@numba.njit(...)`` line: part of the cache key.
NJIT_OPTIONS = "cache=True, error_model='numpy', nogil=True"


def kernel_module_text(src: str, options: str | None = None) -> str:
    """The module written to the cache folder for ``src``: numba's imports, then each of its
    functions (a loop's body is one) under ``@numba.njit(<options>)`` (:data:`NJIT_OPTIONS`),
    except those with a decorator of their own (the math helpers of
    :mod:`funcgrad.jit.native_math`)."""
    decorator = f"@numba.njit({NJIT_OPTIONS if options is None else options})"
    lines = src.split("\n")
    out = []
    for j, line in enumerate(lines):
        if line.startswith("def ") and not (j and lines[j - 1].startswith("@")):
            out.append(decorator)
        out.append(line)
    return "import numpy as np\nimport numba\n\n\n" + "\n".join(out)


def versions() -> str:
    """The versions a compiled kernel depends on besides its text: funcgrad, numba, llvmlite,
    NumPy and Python, and numba's process-wide code settings (``NUMBA_OPT``,
    ``NUMBA_BOUNDSCHECK``), which numba's own cache does not tell apart (part of the cache key)."""
    import llvmlite

    version = getattr(sys.modules.get("funcgrad"), "__version__", "?")  # (the package, loaded: no import upwards)
    numba = _load_numba()
    return (f"funcgrad {version}, numba {numba.__version__}, llvmlite {llvmlite.__version__}, "
            f"numpy {np.__version__}, python {sys.version}, "
            f"opt {int(numba.config.OPT)}, boundscheck {numba.config.BOUNDSCHECK}")


def cache_key(text: str, signature: tuple[Any, ...]) -> str:
    """The name under which ``text`` (:func:`kernel_module_text`: the source and its decorator
    lines) compiled for ``signature`` is cached: a hash of both and of :func:`versions`."""
    return hashlib.sha256("\0".join((text, repr(signature), versions())).encode()).hexdigest()[:24]


def _module_file(text: str, mod_name: str) -> str:
    """The path of ``mod_name`` holding ``text`` in the cache directory, written if absent."""
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, mod_name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return path


def _in_disk_cache(mod_name: str, name: str) -> bool:
    """Has numba's cache an index for function ``name`` of module ``mod_name`` (written by an
    earlier compile: loading it here is quicker than asking the compiler process)?"""
    return bool(glob.glob(os.path.join(cache_dir(), "__pycache__", glob.escape(f"{mod_name}.{name}-") + "*.nbi")))


def _kernel(src: str, name: str, signature: tuple[Any, ...], signature_text: str = "",
            worker: "CompileWorker | None" = None) -> Any:
    """The numba dispatcher of ``src``'s function ``name`` compiled for ``signature`` (and only
    for it), from a module written to the cache directory (numba caches the machine code next
    to it, so a new process reuses it). The module's name is its :func:`cache_key`: a change of
    source, decorator options or versions is a new module, compiled afresh. With ``worker``
    (:class:`funcgrad.jit.compile_worker.CompileWorker`) numba compiles it in the worker process
    (``signature_text``: ``signature`` as a numba type expression) and this process loads the
    machine code from the cache."""
    text = kernel_module_text(src)
    mod_name = f"funcgrad_native_{cache_key(text, signature)}"
    if worker is not None and mod_name not in sys.modules and not _in_disk_cache(mod_name, name):
        worker.compile(_module_file(text, mod_name), mod_name, name, signature_text)
    with _import_lock:
        mod = sys.modules.get(mod_name)
        if mod is None:
            spec = importlib.util.spec_from_file_location(mod_name, _module_file(text, mod_name))
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = mod  # (numba's cache finds the function's module by name)
            try:
                spec.loader.exec_module(mod)
                kernel = getattr(mod, name)
                kernel.compile(signature)
                kernel.disable_compile()  # never compile on the caller's thread: other types raise TypeError
            except BaseException:
                del sys.modules[mod_name]
                raise
    return getattr(mod, name)


def _signature_text(ins: list[Any]) -> str:
    """The numba types of :func:`_numba_type` for ``ins`` as a Python expression (for the worker)."""
    parts = []
    for a in ins:
        if isinstance(a, Var):
            kind, dtype, shape = a.kind, a.dtype, a.shape
        else:
            kind, dtype, shape = type(a.value), getattr(a.value, "dtype", None), tuple(getattr(a.value, "shape", ()))
        scalar = f"numba.from_dtype(np.dtype({np.dtype(dtype if dtype is not None else 'float64').str!r}))"
        parts.append(f"numba.types.Array({scalar}, {len(shape)}, 'A', readonly=True)" if is_host_array(kind)
                     else scalar)
    return "(" + "".join(p + ", " for p in parts) + ")"


def _numba_type(a: Any) -> Any:
    numba = _load_numba()
    if isinstance(a, Var):
        kind, dtype, shape = a.kind, a.dtype, a.shape
    else:
        kind, dtype, shape = type(a.value), getattr(a.value, "dtype", None), tuple(getattr(a.value, "shape", ()))
    if is_host_array(kind):
        return numba.types.Array(numba.from_dtype(np.dtype(dtype)), len(shape), "A", readonly=True)  # any array
    return numba.from_dtype(np.dtype(dtype if dtype is not None else "float64"))


def compile_segment(seg: Segment, worker: "CompileWorker | None" = None) -> Callable[..., tuple[Any, ...]]:
    """``seg`` compiled (by numba in ``worker``'s process, if given): a function of ``seg.ins``'
    values returning ``seg.outs``' values, with the kinds the replay gives them (NumPy scalars
    stay NumPy scalars)."""
    src = segment_source(seg.eqns, seg.ins, seg.outs, "segment")
    kernel = _kernel(src, "segment", tuple(_numba_type(a) for a in seg.ins), _signature_text(seg.ins), worker)
    convert = [None if (o.shape and is_host_array(o.kind)) else (np.asarray if is_host_array(o.kind) else o.kind)
               for o in seg.outs]
    if all(c is None or c is float for c in convert):
        def run(*args: Any) -> tuple[Any, ...]:
            return kernel(*args)  # type: ignore[no-any-return]
    else:
        def run(*args: Any) -> tuple[Any, ...]:
            outs = kernel(*args)
            return tuple(v if c is None else c(v) for v, c in zip(outs, convert))
    run.source = src  # type: ignore[attr-defined]
    return run


_NATIVE = Primitive(lambda *a: a, name="native_segment", multiple_results=True)


class Stopped(RuntimeError):
    """Compiling was given up between two segments (the process is exiting)."""


def native_program(prog: Program, stop: Callable[[], bool] | None = None,
                   worker: "CompileWorker | None" = None) -> tuple[Program, int, int] | None:
    """``prog`` with each segment replaced by one call of its compiled function, the number
    of equations lowered and of those left to the replay; None where nothing lowers.
    ``stop``, asked before each segment is compiled, gives up (:class:`Stopped`) when true;
    ``worker``: numba compiles in that process (:mod:`funcgrad.jit.compile_worker`), this one
    loads the machine code from the disk cache."""
    if not available():
        return None
    items = plan(prog)
    segments = [it for it in items if isinstance(it, Segment)]
    if not segments:
        return None
    new = prog.derived()
    new.invars, new.consts, new.outs = prog.invars, prog.consts, prog.outs
    lowered = left = 0
    for it in items:
        if isinstance(it, Segment):
            if stop is not None and stop():
                raise Stopped("the process is exiting")
            fn = compile_segment(it, worker)
            lowered += len(it.eqns)
            for o in it.outs:
                o.fresh = False  # made by compiled code: never written into by the replay
            new.eqns.append(Eqn(_NATIVE, list(it.ins), {}, list(it.outs), fn))
        else:
            left += 1
            new.eqns.append(it)
    return new, lowered, left
