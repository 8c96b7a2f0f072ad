"""The native tier leaves large contractions that it would write as loops (a stack of matrices times a
matrix) to the replay's BLAS call (issue 26: a training step's layer products compiled as loops made the
jitted Transformer step 10x slower than its replay); products of two matrices lower (numba's np.dot is
BLAS). Planning needs no numba: these tests run everywhere."""

import numpy as np
import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native
from funcgrad.jit.native_source import BLAS_MIN_WORK


def _contractions(f, *args):
    prog = fg.make_program(f)(*args)
    return [e for e in prog.eqns if e.prim.name in ("matmul", "dot", "tensordot")]


def test_large_stacked_products_stay_with_blas_matrix_products_and_small_ones_lower():
    rng = np.random.default_rng(0)
    stack, w = rng.standard_normal((8, 32, 64)), rng.standard_normal((64, 128))
    (stacked,) = _contractions(lambda x, w: fnp.tanh(x @ w), stack, w)
    (matrix,) = _contractions(lambda x, w: fnp.tanh(x @ w), stack[0], w)
    (small,) = _contractions(lambda x, w: fnp.tanh(x @ w), stack[:2, :4, :8], w[:8, :3])
    assert not native.lowerable(stacked)      # 8*32*64*128 multiply-adds as loops: BLAS in the replay
    assert native.lowerable(matrix)           # two matrices: numba's np.dot, BLAS too
    assert native.lowerable(small)            # 2*4*8*3: one compiled loop with its neighbours
    assert 2 * 4 * 8 * 3 < BLAS_MIN_WORK <= 8 * 32 * 64 * 128


def test_plan_cuts_segments_at_a_large_product():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 64, 64)), rng.standard_normal((64, 64))
    items = native.plan(fg.make_program(lambda x, w: fnp.sum(fnp.exp(fnp.tanh(x) @ w) * 2.0))(x, w))
    products = [it for it in items if not isinstance(it, native.Segment) and it.prim.name == "matmul"]
    assert len(products) == 1  # the product is the replay's call, between compiled segments
    assert any(isinstance(it, native.Segment) for it in items)
