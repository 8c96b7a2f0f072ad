import numpy as np, scipy.sparse as ssp
import funcgrad as fg, funcgrad.numpy as fnp
from funcgrad.scipy import sparse as fs
from funcgrad.scipy.sparse import linalg as fsl
import sys; sys.path.insert(0,'tests')
from test_sparse import _hermitian_case
z, herm = _hermitian_case()
f = lambda z: fnp.sum(fnp.abs(fsl.eigsh(herm(z), k=2, which="LA")[1])**4)
g = fg.grad(f)(z)
gj = fg.jit(fg.grad(f))(z)
z2 = z * np.exp(0.3j) * 1.1
print(np.abs(g-gj).max(), np.abs(fg.jit(fg.grad(f))(z2) - fg.grad(f)(z2)).max())
