import os, time, sys
os.environ["FUNCGRAD_CACHE_DIR"]="/tmp/fgcache_s8"
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from benchmarks.native_loops import *
from funcgrad.jit import native
from funcgrad.jit.native_ops import kind_of
from funcgrad.jit.loops import loop_of
rk = rk4_program(fnp, fg.fori_loop)
nb = nbody_program(fnp, fg.fori_loop)
q0, p0 = nbody_start()
x0 = np.array([1.0, 0.5, 0.0, 0.0])
for f, args in ((rk, (x0,)), (fg.grad(rk), (x0,)), (nb, (q0, p0)), (fg.grad(nb, argnums=(0, 1)), (q0, p0))):
    prog = fg.jit(f).program(*args)
    for e in prog.eqns:
        lp = loop_of(e)
        if lp is not None:
            for b in lp.body.eqns:
                if kind_of(b) is None: print("NO", b)
    t = time.time(); nat = fg.jit(f, backend="native"); c = nat.lower(*args).compile(); print(c, c.lowered, c.left, time.time()-t)
