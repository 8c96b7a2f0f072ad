"""The native tier leaves large contractions to the replay's BLAS call (issue 26: a training step's layer
products compiled as loops made the jitted Transformer step 10x slower than its replay). Planning needs no
numba: these tests run everywhere."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native


def _contractions(f, *args):
    prog = fg.make_program(f)(*args)
    return [e for e in prog.eqns if e.prim.name in ("matmul", "dot", "tensordot")]


@pytest.mark.parametrize("lead", [(), (8,)])
def test_large_products_stay_with_blas_small_ones_lower(lead):
    rng = np.random.default_rng(0)
    big_x, big_w = rng.standard_normal(lead + (32, 64)), rng.standard_normal((64, 128))
    small_x, small_w = rng.standard_normal((4, 8)), rng.standard_normal((8, 3))
    (big,) = _contractions(lambda x, w: fnp.tanh(x @ w), big_x, big_w)
    (small,) = _contractions(lambda x, w: fnp.tanh(x @ w), small_x, small_w)
    assert not native.lowerable(big)          # 32*64*128 (x 8) multiply-adds: BLAS
    assert native.lowerable(small)            # 4*8*3: one compiled loop with its neighbours
    assert 4 * 8 * 3 < native.BLAS_MIN_PRODUCTS <= 32 * 64 * 128


def test_plan_cuts_segments_at_a_large_product():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    items = native.plan(fg.make_program(lambda x, w: fnp.sum(fnp.exp(fnp.tanh(x) @ w) * 2.0))(x, w))
    products = [it for it in items if not isinstance(it, native.Segment) and it.prim.name == "matmul"]
    assert len(products) == 1  # the product is the replay's call, between compiled segments
    assert any(isinstance(it, native.Segment) for it in items)
