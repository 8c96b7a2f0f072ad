import sys
if sys.argv[1:] == ["torch"]:
    import torch
else:
    import funcgrad.tensor as torch
x = torch.randn(3, 2, requires_grad=True)
outs = x.unbind(0)
order = []
for i, o in enumerate(outs):
    o.register_hook(lambda g, i=i: order.append((i, g is None)))
(outs[2].sum() + outs[1].sum()).backward()
print("unbind order", order)
x = torch.randn(3, 4, requires_grad=True)
v, m = torch.var_mean(x, 1)
order=[]
v.register_hook(lambda g: order.append(("v", g is None)))
m.register_hook(lambda g: order.append(("m", g is None)) or g*2)
m.sum().backward(); print("var_mean", order, x.grad[0])
order.clear()
g, = torch.autograd.grad((m*3).sum(), [m]); print("capture", order, g)
order.clear()
m.retain_grad()
(m*3).sum().backward(); print("retain", order, m.grad)
