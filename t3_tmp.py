import os
os.environ["FUNCGRAD_CACHE_DIR"]="/tmp/fgcache_s8"
import funcgrad as fg, funcgrad.numpy as fnp, numpy as np
f = fg.jit(lambda x: fg.cond(fnp.sum(x) > 0, lambda x: x*2.0, lambda x: -x, x))
print(f(np.ones(3)), f(-np.ones(3)))
g = fg.jit(lambda x: fg.while_loop(lambda c: c[0] < 10.0, lambda c: c*2.0, x))
print(g(np.ones(3)), g(np.ones(3)*3))
s = fg.jit(lambda x: fg.switch(fnp.astype(x[0],'int64'), [lambda x: x, lambda x: x*2, lambda x: x*3], x))
print(s(np.ones(3)), s(np.zeros(3)), s(np.full(3, 7.0)))
# closure
y = np.ones(3)
h = fg.jit(lambda x: fg.cond(x[0] > 0, lambda: x*2.0, lambda: x*3.0))
print(h(np.ones(3)), h(-np.ones(3)))
# grads
fc = lambda x: fnp.sum(fg.cond(fnp.sum(x) > 0, lambda x: fnp.sin(x)*2.0, lambda x: x**3, x))
for xv in (np.ones(3)*0.3, -np.ones(3)*0.3):
    print(fg.jit(fg.grad(fc))(xv), fg.grad(fc)(xv), fg.jit(fg.hessian(fc))(xv)[0], fg.hessian(fc)(xv)[0])
fw = lambda x: fnp.sum(fg.while_loop(lambda c: c[0] < 10.0, lambda c: c*1.5 + fnp.sin(c), x))
print(fg.jit(fg.jacfwd(fw))(np.ones(3)), fg.jacfwd(fw)(np.ones(3)))
try: fg.jit(fg.grad(fw))(np.ones(3))
except TypeError as e: print("ok:", str(e)[:100])
print(fg.jit(fg.vmap(fw))(np.array([[1.0,2,3],[4,5,6]])), fg.vmap(fw)(np.array([[1.0,2,3],[4,5,6]])))
print(fg.jit(fg.vmap(fc))(np.array([[1.0,2,3],[-4,5,-6]])), fg.vmap(fc)(np.array([[1.0,2,3],[-4,5,-6]])))
for fun, x in ((fc, np.ones(3)*0.3), (fw, np.ones(3)), (fc, -np.ones(3)*0.3)):
    nat = fg.jit(fun, backend="native"); c = nat.lower(x).compile(); print(c, c.lowered, c.left, nat(x), fun(x))
nat = fg.jit(fg.grad(fc), backend="native"); c = nat.lower(x).compile(); print(c, c.lowered, c.left, nat(x), fg.grad(fc)(x))
from tests.test_control_flow import newton_sqrt
ns = fg.jit(newton_sqrt)
print(ns(2.0), ns(9.0), fg.jit(fg.jacfwd(newton_sqrt))(4.0))
a = np.array([1.0, 2.0])
fcl = lambda x, y: fnp.sum(fg.cond(fnp.sum(x) > 0, lambda: fnp.sin(x) * y, lambda: x * y ** 2))
print(fg.jit(fg.grad(fcl, argnums=(0,1)))(a, 3.0), fg.grad(fcl, argnums=(0,1))(a, 3.0))
print(fg.jit(fg.grad(fcl, argnums=(0,1)))(-a, 3.0), fg.grad(fcl, argnums=(0,1))(-a, 3.0))
nat = fg.jit(fg.grad(fcl), backend="native"); c = nat.lower(a, 3.0).compile(); print(c, c.lowered, c.left, nat(a, 3.0), nat(-a, 3.0))
print(fg.make_program(fg.grad(fcl))(a, 3.0))
