"""The CUDA backend: elementwise regions of a device program as CuPy ``ElementwiseKernel`` s.

A program whose arrays live on a device whose namespace has CuPy's
``ElementwiseKernel`` (CuPy itself; the fake device of the tests on request) has its
elementwise equations fused: the native backend's region finder
(:func:`funcgrad.jit.native.plan`, with :func:`funcgrad.jit.cuda_ops.lowers` as what
lowers) finds the maximal runs of them (after :func:`reordered` moves the equations that
do not lower out of the way of a run), each run is split by result shape into
:class:`Region` s (an equation joins the latest region of its shape that comes after the
regions making its operands), and each region of two equations or more becomes one
kernel: its inputs and outputs are typed parameters (CuPy broadcasts them), the values
only read inside it are locals, the values read after it are its outputs. Forward and
derivative programs alike; float32, float64 and complex (see :mod:`funcgrad.jit.cuda_ops`
for what lowers and the C it emits). The rest of the program runs in the NumPy replay
(which calls the backend's own functions, ``cupy.sin`` ...), calling the kernels between.

Kernels are built once per (source, dtypes) and process (:func:`kernel_for`, counted by
:func:`cache_info`); CuPy compiles each on its first launch and keeps the binary in its
own disk cache: :func:`warm` launches each once on tiny arrays when the program is compiled
(on the background compiler's thread), so the caller never waits for CuPy's compiler and a
kernel that does not compile leaves the program on the replay. Arithmetic is compiled without FMA contraction (``--fmad=false``), so
``+ - * /`` round as NumPy's do; the math functions are CUDA's (docs/jit.md states the
bound). Nothing is copied to the host.

Example::

    from funcgrad.jit import cuda
    made = cuda.cuda_program(prog)   # (program calling the kernels, lowered, left), or None
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable

from ..backend import namespace_of_type
from ..core.trace import Primitive
from .ir import Const, Eqn, Program, Var
from .kinds import is_host_array
from .cuda_ops import (C_TYPES, CUDA_COMPARISONS, CUDA_EXPR, CUDA_SELECTIONS, c_literal, lowers)
from .known import WHERE
from .native import Segment, plan
from .native_ops import ASTYPE, dtype_name, is_literal

__all__ = ["device_kind", "kernel_namespace", "Region", "reordered", "regions", "region_source", "kernel_for", "cache_info",
           "clear_cache", "warm", "cuda_program", "MIN_EQUATIONS", "OPTIONS"]

# a region of fewer equations stays one backend call (a kernel would launch as often)
MIN_EQUATIONS = 2
# the compiler options of every kernel: no fused multiply-adds, so arithmetic rounds as NumPy's
OPTIONS = ("--fmad=false",)


# -- is this a device program, and can its namespace make kernels? --------------------------------

def device_kind(prog: Program) -> type | None:
    """The device array type of ``prog``'s inputs or constants (None for a host program)."""
    for v in list(prog.invars) + [type(c.value) for c in prog.consts]:
        kind = v.kind if isinstance(v, Var) else v
        if isinstance(kind, type) and not is_host_array(kind) and getattr(kind, "shape", None) is not None \
                and namespace_of_type(kind).__name__ != "numpy":
            return kind
    return None


def kernel_namespace(prog: Program) -> Any:
    """The namespace (CuPy, ...) whose ``ElementwiseKernel`` runs ``prog``'s regions, or None where
    ``prog`` is a host program or its device has no kernels."""
    kind = device_kind(prog)
    if kind is None:
        return None
    xp = namespace_of_type(kind)
    return xp if getattr(xp, "ElementwiseKernel", None) is not None else None


# -- regions -------------------------------------------------------------------------------------

class Region:
    """Elementwise equations of one result shape run as one kernel: ``ins`` the values it reads
    from outside (parameters), ``outs`` those read after it (outputs)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.eqns: list[Eqn] = []
        self.ins: list[Any] = []
        self.outs: list[Var] = []


def regions(seg: Segment) -> list[Region]:
    """``seg``'s equations (a run the region finder found) as regions of one shape each, in an
    order that runs every region after those making its operands."""
    found: list[Region] = []
    region_of: dict[Var, int] = {}
    for e in seg.eqns:
        shape = tuple(e.outs[0].shape)
        after = max((region_of[a] for a in e.ins if isinstance(a, Var) and a in region_of), default=0)
        target = next((j for j in range(len(found) - 1, after - 1, -1) if found[j].shape == shape), None)
        if target is None:
            found.append(Region(shape))
            target = len(found) - 1
        found[target].eqns.append(e)
        region_of[e.outs[0]] = target
    wanted = set(seg.outs)
    for j, r in enumerate(found):
        made = {e.outs[0] for e in r.eqns}
        for e in r.eqns:
            for a in e.ins:
                if (isinstance(a, Var) or (isinstance(a, Const) and not is_literal(a.value))) \
                        and a not in made and a not in r.ins:
                    r.ins.append(a)
        later = {a for other in found[j + 1:] for e in other.eqns for a in e.ins if isinstance(a, Var)}
        r.outs = [e.outs[0] for e in r.eqns if e.outs[0] in wanted or e.outs[0] in later]
    return found


def reordered(prog: Program, lowers: Callable[[Eqn], bool]) -> Program:
    """``prog`` with its pure equations that do not lower moved out of the way of the run of
    lowering ones around them: ahead of the run where they read nothing it makes, after it
    (until a lowering equation reads them) where they do. An indexing or a reduction between
    two elementwise chains then does not split their region."""
    order: list[Eqn] = []
    run: list[Eqn] = []
    later: list[Eqn] = []  # equations that read the run, deferred until it ends
    made: set[Var] = set()
    waiting: set[Var] = set()

    def flush() -> None:
        order.extend(run)
        order.extend(later)
        for pending in (run, later, made, waiting):
            pending.clear()

    for e in prog.eqns:
        reads = {a for a in e.ins if isinstance(a, Var)}
        if lowers(e):
            if reads & waiting:
                flush()
            run.append(e)
            made.update(e.outs)
        elif not e.prim.pure:
            flush()
            order.append(e)
        elif reads & (made | waiting):
            later.append(e)
            waiting.update(e.outs)
        else:
            order.append(e)
    flush()
    if order == prog.eqns:
        return prog
    new = prog.derived()
    new.invars, new.consts, new.outs, new.eqns = prog.invars, prog.consts, prog.outs, order
    return new


def _shape_of(a: Any) -> tuple[int, ...]:
    return tuple(a.shape) if isinstance(a, Var) else tuple(getattr(a.value, "shape", ()))


def _broadcasts_to_region(r: Region, device: type) -> bool:
    """Do the region's array inputs broadcast to its shape (so the kernel's outputs have it)?"""
    shapes = [_shape_of(a) for a in r.ins if (a.kind if isinstance(a, Var) else type(a.value)) is device]
    ndim = max((len(s) for s in shapes), default=-1)
    if ndim != len(r.shape):
        return False
    return all(max((s[len(s) - ndim + d] for s in shapes if len(s) - ndim + d >= 0), default=1) == n
               for d, n in enumerate(r.shape))


# -- source --------------------------------------------------------------------------------------

def region_source(r: Region) -> tuple[str, str, str]:
    """``(in_params, out_params, operation)`` of ``r``'s kernel (the C subset of
    :mod:`funcgrad.jit.cuda_ops`)."""
    outs = set(r.outs)

    def read(a: Any, ctype: str, dt: str) -> str:
        if isinstance(a, Const) and is_literal(a.value):
            a = a.value
        if not isinstance(a, (Var, Const)):
            return c_literal(a, ctype)
        return a.name if dtype_name(a) == dt else f"{ctype}({a.name})"

    lines = []
    for e in r.eqns:
        o = e.outs[0]
        dt = dtype_name(o)
        ctype = C_TYPES[dt]
        if e.prim in CUDA_COMPARISONS:
            arg_dt = next(dtype_name(a) for a in e.ins if isinstance(a, Var)
                          or (isinstance(a, Const) and not is_literal(a.value)))
            expr = CUDA_COMPARISONS[e.prim].format(*(read(a, C_TYPES[arg_dt], arg_dt) for a in e.ins))
        elif e.prim is ASTYPE:
            expr = read(e.ins[0], ctype, dt)
        elif e.prim is WHERE:
            c, x, y = e.ins
            expr = f"({read(c, 'bool', 'bool')} ? {read(x, ctype, dt)} : {read(y, ctype, dt)})"
        else:
            table = CUDA_SELECTIONS if e.prim in CUDA_SELECTIONS else CUDA_EXPR
            expr = table[e.prim].format(*(read(a, ctype, dt) for a in e.ins), t=ctype)
        lines.append(f"{o.name} = {expr};" if o in outs else f"{ctype} {o.name} = {expr};")
    in_params = ", ".join(f"{dtype_name(a)} {a.name}" for a in r.ins)
    out_params = ", ".join(f"{dtype_name(o)} {o.name}" for o in r.outs)
    return in_params, out_params, "\n".join(lines)


# -- kernels, cached per (source, dtypes) ----------------------------------------------------------

_kernels: dict[tuple[int, str, str, str], Any] = {}
_stats = {"built": 0, "hits": 0}
_lock = threading.Lock()


def kernel_for(xp: Any, in_params: str, out_params: str, operation: str) -> Any:
    """The ``xp.ElementwiseKernel`` of this source (typed parameters: the dtypes are part of the
    source), built once per namespace and process."""
    key = (id(xp), in_params, out_params, operation)
    with _lock:
        k = _kernels.get(key)
        if k is not None:
            _stats["hits"] += 1
            return k
        digest = hashlib.sha256("\0".join(key[1:]).encode()).hexdigest()[:16]
        k = _kernels[key] = xp.ElementwiseKernel(in_params, out_params, operation, f"funcgrad_region_{digest}",
                                                 return_tuple=True, options=OPTIONS)
        _stats["built"] += 1
    return k


def cache_info() -> dict[str, int]:
    """``{"built": kernels made, "hits": kernels found in the cache, "size": kernels kept}``."""
    with _lock:
        return {**_stats, "size": len(_kernels)}


def clear_cache() -> None:
    """Forget the kernels made so far (CuPy keeps its compiled binaries on disk regardless)."""
    with _lock:
        _kernels.clear()
        _stats.update(built=0, hits=0)


def warm(xp: Any, kernel: Any, r: Region, device: type) -> None:
    """Launch ``kernel`` once on tiny arrays of its inputs' dtypes and broadcasting pattern (each
    axis of length 1 or 2), so that CuPy compiles it here (the background compiler's thread) and
    a source it cannot compile is found before the program swaps it in."""
    args: list[Any] = []
    for a in r.ins:
        if (a.kind if isinstance(a, Var) else type(a.value)) is device:
            args.append(xp.zeros(tuple(1 if d == 1 else 2 for d in _shape_of(a)), dtype=dtype_name(a)))
        else:
            args.append(0.0)
    kernel(*args)


def _region_function(xp: Any, r: Region, device: type) -> Callable[..., tuple[Any, ...]]:
    in_params, out_params, operation = region_source(r)
    kernel = kernel_for(xp, in_params, out_params, operation)
    warm(xp, kernel, r, device)

    def region(*args: Any) -> tuple[Any, ...]:
        return kernel(*args)  # type: ignore[no-any-return]

    region.source = (f"// in: {in_params}\n// out: {out_params}\n{operation}\n")  # type: ignore[attr-defined]
    region.kernel = kernel  # type: ignore[attr-defined]
    return region


_CUDA = Primitive(lambda *a: a, name="cuda_region", multiple_results=True)


def cuda_program(prog: Program) -> tuple[Program, int, int] | None:
    """``prog`` with each elementwise region of its device arrays replaced by one kernel call,
    the number of equations in kernels and of those left to the replay; None where nothing
    fuses (a host program, a device without kernels, no region of :data:`MIN_EQUATIONS`)."""
    xp = kernel_namespace(prog)
    if xp is None:
        return None
    device = device_kind(prog)
    assert device is not None
    items: list[Any] = []
    fuses: Callable[[Eqn], bool] = lambda e: lowers(e, device)  # noqa: E731
    for it in plan(reordered(prog, fuses), fuses):
        if not isinstance(it, Segment):
            items.append(it)
            continue
        for r in regions(it):
            if len(r.eqns) >= MIN_EQUATIONS and r.outs and _broadcasts_to_region(r, device):
                items.append(r)
            else:
                items.extend(r.eqns)
    if not any(isinstance(it, Region) for it in items):
        return None
    new = prog.derived()
    new.invars, new.consts, new.outs = prog.invars, prog.consts, prog.outs
    lowered = left = 0
    for it in items:
        if isinstance(it, Region):
            lowered += len(it.eqns)
            for o in it.outs:
                o.fresh = False  # made by a kernel: never written into by the replay
            new.eqns.append(Eqn(_CUDA, list(it.ins), {}, list(it.outs), _region_function(xp, it, device)))
        else:
            left += 1
            new.eqns.append(it)
    return new, lowered, left
