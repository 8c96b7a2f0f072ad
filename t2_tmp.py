import os, time
os.environ["FUNCGRAD_CACHE_DIR"]="/tmp/fgcache_s8"
import numpy as np, funcgrad as fg, funcgrad.numpy as fnp
from funcgrad.testing import check_grads
def f(x):
    c,ys = fg.scan(lambda c, t: ((fnp.sin(c[0])*1.1+t*c[1], c[1]*fnp.cos(c[0])), c[0]*c[1]), (x, x*0.5), fnp.linspace(0,1,5))
    return fnp.sum(c[0])+fnp.sum(ys**2)
x = np.linspace(0.1,1,3)
check_grads(f, (x,), order=3, modes=("fwd","rev"))
print("check ok")
h = fg.hessian(f)(x)
for fun in (fg.hessian(f), fg.jacfwd(fg.grad(f))):
    nat = fg.jit(fun, backend="native"); t=time.time(); c = nat.lower(x).compile(); print("compile", time.time()-t, c, c.lowered, c.left)
    print(np.abs(nat(x)-h).max(), np.abs(fg.jit(fun, backend="numpy")(x)-h).max())
print(fg.make_program(fg.hessian(f))(x))
