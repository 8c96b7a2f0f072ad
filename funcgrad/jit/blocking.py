"""Blocked (and threaded) execution of a staged program's elementwise regions.

A *region* is a run of elementwise equations (single-result NumPy ufuncs, and
``numpy.where`` with three arguments) whose
results all have one large shape ``S``. Compiled as a region, its equations run
over blocks of rows of ``S`` (``a[s:e]`` along axis 0, about ``BLOCK`` elements
each): the temporaries are block-sized and stay in the cache, and only the
values used after the region are allocated whole. The blocks are independent,
so they may also run on a small thread pool (NumPy's ufuncs release the GIL):
``fg.config.jit_threads`` threads, for regions of at least
``fg.config.jit_parallel_min_size`` elements that call at least one function
beyond arithmetic, comparison and selection (``CHEAP``, a set of primitives:
those are memory-bound).
A region of only cheap calls runs whole below ``BLOCK_MIN_BYTES``. The blocks
are handed out one at a time to whichever thread asks next, the caller included,
so a worker the scheduler starts late costs at most the block it took.

Every element is computed by the same ufunc calls on the same operands as in the
unblocked program, so the results are the same bits; reductions, contractions
and every other non-elementwise call are never part of a region and run whole.
Only host NumPy arrays are blocked; other backends' programs are left as they are.

Example::

    fg.config.jit_threads = 1   # blocks only, no threads
"""

from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .. import numpy as fnp
from ..core.trace import Primitive
from .ir import Const, Eqn, Program, Var
from .kinds import is_host_array, is_ufunc
from .known import WHERE, primitive_of

# compiles a program of elementwise calls to a function (funcgrad.jit.numpy_replay's code generator)
Generate = Callable[[Program, int], Callable[..., tuple[Any, ...]]]

__all__ = ["settings", "Settings", "blocked_program", "default_jit_threads"]

BLOCK = 16384  # elements per block: a few block-sized temporaries fit in L2
BLOCK_MIN_BYTES = 1 << 21  # below this a region of only cheap calls (CHEAP) runs whole on one thread
REGION_MIN_SIZE = 1 << 16  # elements: smaller elementwise calls are never blocked or threaded


def default_jit_threads() -> int:
    """The usable cores (the process's affinity), at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


class Settings:
    """Read by every call of a blocked region (``fg.config`` sets them)."""

    def __init__(self) -> None:
        env = os.environ.get("FUNCGRAD_JIT_THREADS", "").strip()
        value: Any = default_jit_threads()
        if env:
            value = int(env) if env.lstrip("-").isdigit() else env
        self.threads = check_threads(value, "FUNCGRAD_JIT_THREADS")
        self.min_size = 1 << 17


def check_threads(value: Any, name: str = "jit_threads") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1 (1 runs compiled programs on the calling "
                         f"thread only), got {value!r}")
    return value


settings = Settings()

_pool: ThreadPoolExecutor | None = None
_pool_key: tuple[int, int] = (0, 0)  # (pid, workers): a forked child or a new setting gets a new pool
_pool_lock = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_key
    key = (os.getpid(), workers)
    if _pool is None or _pool_key != key:
        with _pool_lock:
            if _pool is None or _pool_key != key:
                # the old pool is not shut down: a call on another thread may still be using it;
                # its idle workers exit once nothing refers to it
                _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="funcgrad-jit")
                _pool_key = key
    return _pool


# Arithmetic, comparisons and selections: memory-bound, so a region of only these gains little
# from a second thread and can lose more (the handoff) on a busy machine; it stays on one.
CHEAP: frozenset[Primitive] = frozenset(primitive_of(f) for f in (
    fnp.add, fnp.subtract, fnp.multiply, fnp.negative, fnp.positive, fnp.absolute, fnp.fabs, fnp.square,
    fnp.sign, fnp.maximum, fnp.minimum, fnp.fmax, fnp.fmin, fnp.copysign, fnp.greater, fnp.greater_equal,
    fnp.less, fnp.less_equal, fnp.equal, fnp.not_equal, fnp.logical_and, fnp.logical_or, fnp.logical_not,
    fnp.logical_xor, WHERE, fnp.isnan, fnp.isinf, fnp.isfinite, fnp.signbit, fnp.conjugate, fnp.real,
    fnp.imag,
))


def _is_where(e: Any) -> bool:
    """``where`` run by NumPy's own three-argument function: elementwise (a selection) though
    not a ufunc; derivative programs are full of it."""
    import numpy as np

    return e.prim is WHERE and len(e.ins) == 3 and e.fn is np.where


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _region_shape(e: Any, min_size: int) -> tuple[int, ...] | None:
    """The shape ``S`` if equation ``e`` can join a region of that shape, else None: a
    ufunc on host arrays with a result of ``S``, each operand either varying along axis 0
    like ``S`` (it is sliced) or constant along it (broadcast whole to every block)."""
    if len(e.outs) != 1:
        return None
    out = e.outs[0]
    shape: tuple[int, ...] = tuple(out.shape)
    if len(shape) < 1 or shape[0] < 2 or _size(shape) < min_size:  # most equations stop here
        return None
    if not (is_ufunc(e.fn) or _is_where(e)) or e.kwargs or e.multiple or not is_host_array(out.kind):
        return None
    for a in e.ins:
        if isinstance(a, Var):
            if not (is_host_array(a.kind) or a.kind in (int, float, complex)
                    or (a.shape == () and getattr(a.kind, "__module__", "") == "numpy")):
                return None
        elif isinstance(a, Const):
            v = a.value
            if not (is_host_array(type(v)) or getattr(v, "shape", None) == () or isinstance(v, (int, float, complex))):
                return None
        elif not isinstance(a, (int, float, complex)) and getattr(a, "shape", None) != ():
            return None
    return shape


def _sliced(a: Any, shape: tuple[int, ...]) -> bool:
    """Does operand ``a`` vary along axis 0 of a region of ``shape`` (then it is sliced)?"""
    if isinstance(a, Var):
        s = a.shape
    elif isinstance(a, Const):
        s = tuple(getattr(a.value, "shape", ()))
    else:
        return False
    return len(s) == len(shape) and s[0] == shape[0]


_REGION = Primitive(lambda *a: a, name="elementwise_blocks", multiple_results=True)


def blocked_program(prog: Any, generate: Generate, reuse_bytes: int = 1 << 16, min_size: int | None = None) -> Any:
    """``prog`` with each elementwise region replaced by one call that runs it block by block
    (a new program sharing ``prog``'s variables; ``prog`` itself is unchanged), or ``prog``
    itself where no region is found. ``generate(program, reuse_bytes)`` compiles a region's
    equations to the function each block runs. Pure equations between a region's equations
    that do not read the region's values are moved before it."""
    if min_size is None:
        min_size = REGION_MIN_SIZE
    # (a result has at least as many bytes as elements: most equations stop at this test)
    if not any(len(e.outs) == 1 and e.outs[0].nbytes >= min_size and _region_shape(e, min_size) for e in prog.eqns):
        return prog
    users = prog.readers()
    final = prog.output_vars()
    eqns: list[Any] = []
    region: list[int] = []
    region_shape: tuple[int, ...] | None = None
    made: set[Var] = set()  # values the open region computes
    hoisted: list[int] = []

    def flush() -> None:
        nonlocal region, region_shape, made, hoisted
        members = [prog.eqns[k] for k in region]
        if region and _worth_a_region(members):
            eqns.extend(prog.eqns[k] for k in hoisted)
            eqns.append(_region_eqn(prog, members, set(region), users, final, generate, reuse_bytes))
        else:  # as recorded: the program's own buffer reuse does better
            eqns.extend(prog.eqns[k] for k in sorted(region + hoisted))
        region, region_shape, made, hoisted = [], None, set(), []

    for k, e in enumerate(prog.eqns):
        shape = _region_shape(e, min_size)
        if shape is not None:
            if region and shape != region_shape:
                flush()
            region.append(k)
            region_shape = shape
            made.update(e.outs)
            continue
        if region and e.prim.pure and not any(isinstance(a, Var) and a in made for a in e.ins):
            hoisted.append(k)
            continue
        flush()
        eqns.append(e)
    flush()
    new = prog.derived()
    new.invars, new.consts, new.outs, new.eqns = prog.invars, prog.consts, prog.outs, eqns
    return new


def _heavy(members: list[Any]) -> bool:
    return any(e.prim not in CHEAP for e in members)


def _worth_a_region(members: list[Any]) -> bool:
    """Blocks pay for a run of calls with a heavier one among them (cache), or for cheap calls
    on more than BLOCK_MIN_BYTES; threads pay for heavier calls. One call alone gains only
    from threads (the knob as it is now, at compile time)."""
    heavy = _heavy(members)
    if len(members) == 1:
        return heavy and settings.threads > 1 and _size(members[0].outs[0].shape) >= settings.min_size
    if heavy:
        return True
    out = members[0].outs[0]
    return _size(out.shape) * getattr(out.dtype, "itemsize", 8) >= BLOCK_MIN_BYTES


def _region_eqn(prog: Any, members: list[Any], member_ids: set[int], users: dict[Any, set[int]],
                final: set[Any], generate: Generate, reuse_bytes: int) -> Any:
    """One equation running ``members`` blocked: its inputs are the values they read from
    outside, its outputs the values read after them."""
    shape = members[0].outs[0].shape
    made = {o for e in members for o in e.outs}
    ins: list[Any] = []
    for e in members:
        for a in e.ins:
            if isinstance(a, (Var, Const)) and a not in made and a not in ins:
                ins.append(a)
    outs = [o for e in members for o in e.outs
            if o in final or any(k not in member_ids for k in users.get(o, ()))]
    sub = prog.derived()
    sub.eqns = list(members)
    sub.outs = outs
    sub.invars = []
    for a in ins:  # constants become inputs too, so that they can be sliced
        if isinstance(a, Var):
            sub.invars.append(a)
        else:
            v = sub.new_var(a.value)
            sub.invars.append(v)
            sub.eqns = [_replace_in(e, a, v) for e in sub.eqns]
    fn = generate(sub, reuse_bytes)
    runner = _runner(fn, shape, [_sliced(a, shape) for a in ins], [o.dtype for o in outs], _heavy(members))
    runner.source = fn.source  # type: ignore[attr-defined]
    region = Eqn(_REGION, ins, {}, outs, runner)
    for o in outs:
        o.fresh = True  # allocated by the runner: owned, may be written into later
    return region


def _replace_in(e: Any, old: Any, new: Any) -> Any:
    if not any(a is old for a in e.ins):
        return e
    return Eqn(e.prim, [new if a is old else a for a in e.ins], e.kwargs, e.outs, e.fn)


class _Job:
    """The blocks of one region call, handed out one at a time to whichever thread asks next
    (the caller too): a worker the scheduler starts late finds them all taken, so the caller
    never waits for a thread that has not begun, only for blocks in progress."""

    __slots__ = ("fn", "ins", "res", "sliced", "starts", "step", "rows", "left", "lock", "finished", "error")

    def __init__(self, fn: Callable[..., tuple[Any, ...]], ins: tuple[Any, ...], res: list[Any],
                 sliced: list[bool], starts: Any, step: int, rows: int) -> None:
        self.fn, self.ins, self.res, self.sliced = fn, ins, res, sliced
        self.starts, self.step, self.rows = starts, step, rows
        self.left = -(-rows // step)  # blocks not yet finished
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.error: BaseException | None = None

    def work(self) -> None:
        fn, step, rows = self.fn, self.step, self.rows
        for s in self.starts:  # next() on a range iterator is atomic: each block goes to one thread
            try:
                ins, res = self.ins, self.res
                e = s + step if s + step < rows else rows
                part = fn(*[a[s:e] if cut else a for a, cut in zip(ins, self.sliced)])
                for r, p in zip(res, part):
                    r[s:e] = p
            except BaseException as exc:  # noqa: BLE001 - raised by the caller
                self.error = self.error or exc
            finally:
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.finished.set()


def _runner(fn: Callable[..., tuple[Any, ...]], shape: tuple[int, ...], sliced: list[bool],
            dtypes: list[Any], heavy: bool = True) -> Callable[..., tuple[Any, ...]]:
    import numpy as np

    empty = np.empty
    rows, size = shape[0], _size(shape)
    row_size = _size(shape[1:])
    step = max(1, BLOCK // max(row_size, 1))
    nbytes = size * max((getattr(d, "itemsize", 8) for d in dtypes), default=8)
    first = sliced.index(True) if True in sliced else -1
    cfg = settings

    def run_blocks(ins: tuple[Any, ...], res: list[Any], lo: int, hi: int) -> None:
        for s in range(lo, hi, step):
            e = s + step if s + step < hi else hi
            part = fn(*[a[s:e] if cut else a for a, cut in zip(ins, sliced)])
            for r, p in zip(res, part):
                r[s:e] = p

    def blocks(*ins: Any) -> tuple[Any, ...]:
        threads = cfg.threads
        parallel = heavy and threads > 1 and rows > step and size >= cfg.min_size
        if first < 0 or (not parallel and not heavy and nbytes < BLOCK_MIN_BYTES):
            return fn(*ins)
        for a, cut in zip(ins, sliced):  # blocks of a strided view could take other loops
            if cut and (a.shape[0] != rows or not a.flags.c_contiguous):
                return fn(*ins)
        res = [empty(shape, dt) for dt in dtypes]
        if not parallel:
            run_blocks(ins, res, 0, rows)
            return tuple(res)
        job = _Job(fn, ins, res, sliced, iter(range(0, rows, step)), step, rows)
        pool = _executor(threads - 1)
        for _ in range(min(threads, job.left) - 1):
            try:
                pool.submit(contextvars.copy_context().run, job.work)  # NumPy's errstate is a context variable
            except RuntimeError:  # the interpreter is shutting down: no new threads
                break
        job.work()
        job.finished.wait()  # blocks other threads took are done (not threads that never started)
        job.ins, job.res = (), []  # a late worker finds the blocks gone, and holds no array
        if job.error is not None:
            raise job.error
        return tuple(res)
    return blocks
