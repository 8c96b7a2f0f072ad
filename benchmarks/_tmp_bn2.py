import numpy as np, time
from funcgrad.nn.kernels import normalization as N
def t(f,n=60):
    f(); ts=[]
    for _ in range(n):
        a=time.process_time(); f(); ts.append(time.process_time()-a)
    return np.median(ts)*1e3
shape=(32,16,32,32)
x=np.random.randn(*shape).astype(np.float32)*2+1
ax=(0,2,3); c=16
m=N._sum_over(x,ax)/x.size*c
print("sum_over", t(lambda: N._sum_over(x,ax)))
print("x-m", t(lambda: x-m))
xc=x-m
print("sop", t(lambda: N._sum_of_products(xc,xc,ax)))
print("mul", t(lambda: np.multiply(xc,m,out=xc)))
print("add", t(lambda: np.add(xc,m,out=xc)))
print("sub into", t(lambda: np.subtract(x,m,out=xc)))
y=np.empty_like(x)
print("mul fresh-ish", t(lambda: np.multiply(x,m,out=y)))
