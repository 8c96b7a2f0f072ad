"""The compiler of staged programs (what ``fg.jit`` runs).

``fg.jit`` records a function into a :class:`~funcgrad.jit.ir.Program` through the
core's staging trace; this package does the rest:

- :mod:`~funcgrad.jit.ir`: the program IR (values, equations, programs);
- :mod:`~funcgrad.jit.passes`: constant folding, CSE, dead code, bit-for-bit rewrites,
  and the split of a joint program into forward and backward programs;
- :mod:`~funcgrad.jit.numpy_replay`: the NumPy replay backend (straight-line Python
  calling the backend's functions), with :mod:`~funcgrad.jit.blocking` (elementwise
  regions of large host arrays in cache-sized blocks, on threads) and
  :mod:`~funcgrad.jit.python_floats` (programs of float scalars on Python floats);
- :mod:`~funcgrad.jit.native`: the native backend (numba loops fusing elementwise work,
  reductions, views, contractions; segments called from the replay where not everything
  lowers), imported only when used, with :mod:`~funcgrad.jit.native_ops` (what lowers,
  per primitive) and :mod:`~funcgrad.jit.native_source` (the generated source);
- :mod:`~funcgrad.jit.cuda`: the CUDA backend for programs on CuPy arrays (each elementwise
  region one ``cupy.ElementwiseKernel``), with :mod:`~funcgrad.jit.cuda_ops` (each lowered
  primitive's CUDA C spelling);
- :mod:`~funcgrad.jit.tiered`: the replay first, native code swapped in when compiled;
- :mod:`~funcgrad.jit.loops` (what a loop or branch equation runs, registered by
  ``fg.scan``/``cond``/``switch``/``while_loop``) and :mod:`~funcgrad.jit.bodies` (their
  bodies staged into programs while ``fg.jit`` traces).

What a backend needs to know about a primitive lives in that backend's table keyed by the
primitive object (:data:`funcgrad.jit.numpy_replay.LOWERINGS`,
:data:`funcgrad.jit.python_floats.SCALAR_EXPR`, :data:`funcgrad.jit.blocking.CHEAP`,
:data:`funcgrad.jit.native_ops.NATIVE_EXPR` and the other tables there,
:data:`funcgrad.jit.cuda_ops.CUDA_EXPR`);
:mod:`~funcgrad.jit.known` names the funcgrad.numpy primitives they use.

Layering: ``core <- numpy <- jit <- transforms``. The core records (it knows nothing of
compiling); the compiler knows funcgrad.numpy's primitives; ``fg.jit`` (in
``funcgrad.transforms``) puts the two together.

Example::

    from funcgrad.jit import compile_program, optimize
    prog = fg.make_program(lambda x: fnp.sin(x) * 2)(fnp.ones(3))
    compile_program(prog)(fnp.ones(3))
"""

from __future__ import annotations

from .ir import Const, Eqn, Program, Var, eval_program
from .numpy_replay import compile_program
from .passes import optimize, split_program

__all__ = ["Var", "Const", "Eqn", "Program", "eval_program", "optimize", "split_program", "compile_program"]
