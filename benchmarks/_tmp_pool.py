import numpy as np, time
from funcgrad.nn.kernels import pooling as P
def t(f,n=40):
    f(); ts=[]
    for _ in range(n):
        a=time.process_time(); f(); ts.append(time.process_time()-a)
    return np.median(ts)*1e3
x=np.random.randn(32,16,32,32).astype(np.float32)
k=(2,2); s=(2,2); pads=((0,0),(0,0)); d=(1,1)
print("argmax raw", t(lambda: P._window_argmax_raw(x,k,s,pads,d)))
st=P._window_stack(x,k,s,pads,d,(16,16),-np.inf)
print("first_max", t(lambda: P._first_maximum(st)))
def mx():
    b=np.maximum(st[0],st[1]); np.maximum(b,st[2],out=b); np.maximum(b,st[3],out=b); return b
print(" 3 max", t(mx))
x6=x.reshape(32,16,16,2,16,2)
def colfirst():
    cm=np.maximum(x6[:,:,:,0],x6[:,:,:,1]); return np.maximum(cm[...,0],cm[...,1])
print(" colfirst", t(colfirst))
assert (colfirst()==mx()).all()
b=mx()
print(" isnan any", t(lambda: np.isnan(b).any()))
def horner():
    o=np.not_equal(st[2],b).astype(np.uint8)
    for j in (1,0):
        o+=1; o*=np.not_equal(st[j],b)
    return o.astype(np.int32)
print(" horner", t(horner))
print("stack", t(lambda: P._window_stack(x,k,s,pads,d,(16,16),-np.inf)))
views=[x6[:,:,:,i,:,j] for i in (0,1) for j in (0,1)]
def direct():
    b=np.maximum(views[0],views[1]); np.maximum(b,views[2],out=b); np.maximum(b,views[3],out=b)
    o=np.not_equal(views[2],b).astype(np.uint8)
    for j in (1,0):
        o+=1; o*=np.not_equal(views[j],b)
    return b, o.astype(np.int32)
print("direct strided", t(direct))
b1,i1=direct(); b2,i2=P._first_maximum(st)
assert (b1==b2).all() and (i1==i2).all()
def direct2():
    cm=np.maximum(x6[:,:,:,0],x6[:,:,:,1]); b=np.maximum(cm[...,0],cm[...,1])
    o=np.not_equal(views[2],b).astype(np.uint8)
    for j in (1,0):
        o+=1; o*=np.not_equal(views[j],b)
    return b, o.astype(np.int32)
print("direct colfirst", t(direct2))
xt=x.reshape(32,16,16,2,16,2).transpose(0,1,2,4,3,5)
print("transpose to (..,Ho,Wo,2,2) copy", t(lambda: np.ascontiguousarray(xt)))
