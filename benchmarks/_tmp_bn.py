import numpy as np, time
from funcgrad.nn.kernels import normalization as N
def t(f,n=60):
    f(); ts=[]
    for _ in range(n):
        a=time.process_time(); f(); ts.append(time.process_time()-a)
    return np.median(ts)*1e3
for shape in [(32,16,32,32),(32,32,16,16)]:
    x=np.random.randn(*shape).astype(np.float32)*2+1; g=np.random.randn(*shape).astype(np.float32)
    c=shape[1]; w=np.random.rand(1,c,1,1).astype(np.float32)+.5; b=np.random.rand(1,c,1,1).astype(np.float32)
    ax=(0,2,3)
    print(shape, "fwd", t(lambda: N._affine_raw(x,w,b,ax,1e-5)))
    def fb():
        N._affine_raw(x,w,b,ax,1e-5); return N._affine_backward_raw(g,x,w,ax,1e-5)
    print(shape, "fwd+bwd", t(fb))
    xc=x-x.mean(ax,keepdims=True)
    print(" einsum", t(lambda: N._sum_of_products(g,xc,ax)))
    r=shape[0],c,-1
    print(" vecdot", t(lambda: np.vecdot(g.reshape(r),xc.reshape(r)).sum(0)))
