"""The replay writes the nn layers' elementwise kernels in place (issue 26): ``relu`` into the layer output
that dies at it, ``positive_part`` (relu's backward) into the cotangent that dies at it. A kernel is declared
an elementwise writer, or a kernel's result fresh, in :mod:`funcgrad.jit.kinds`; the replay then treats it
as a ufunc. The results must be those of the eager step, and nothing still read later may be overwritten."""

import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.jit.kinds import (declare_elementwise_writer, declare_fresh_result, makes_fresh, takes_out, writer_of,
                                writes_out)
from funcgrad.jit.numpy_replay import compile_program
from funcgrad.nn.rectifier import _positive_part_into, _positive_part_raw, _relu_into, _relu_raw

rng = np.random.default_rng(26)


def _source(fn, *args):
    return compile_program(fg.make_program(fn)(*args)).source


def _mlp_loss(p, x):
    h = fnn.relu(fnn.linear(x, p["w1"], p["b1"]))
    return fnp.sum(fnn.linear(h, p["w2"], p["b2"]) ** 2)


def _mlp(dtype):
    p = {"w1": rng.standard_normal((64, 16)), "b1": rng.standard_normal(64),
         "w2": rng.standard_normal((8, 64)), "b2": rng.standard_normal(8)}
    x = rng.standard_normal((4, 32, 16))  # 4 * 32 * 64 floats: above the replay's reuse size
    return {k: v.astype(dtype) for k, v in p.items()}, x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_and_its_backward_run_in_place_with_the_eager_results(dtype):
    p, x = _mlp(dtype)
    src = _source(fg.grad(_mlp_loss), p, x)
    in_place = [m for m in re.finditer(r"= (f\d+)\((v\d+)[^)]*out=(v\d+)\)", src) if m.group(2) == m.group(3)]
    assert len(in_place) >= 2, src  # relu into the dense output, positive_part into the cotangent
    jitted = fg.jit(fg.grad(_mlp_loss), backend="numpy")
    want = fg.grad(_mlp_loss)(p, x)
    for _ in range(3):  # the same buffers at every call: the answers stay right
        got = jitted(p, x)
        for k in want:
            assert got[k].dtype == dtype
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_a_relu_input_read_later_is_not_overwritten():
    x = rng.standard_normal((64, 64))

    def f(x):
        h = x * 2.0
        return fnn.relu(h) + h  # h is read after the relu: writing the relu into it would change the sum

    jitted = fg.jit(f, backend="numpy")
    for _ in range(2):
        np.testing.assert_array_equal(jitted(x), np.maximum(2 * x, 0) + 2 * x)


def test_inputs_of_the_jitted_function_are_never_written():
    x = rng.standard_normal((64, 64))
    keep = x.copy()
    jitted = fg.jit(lambda x: fnn.relu(x), backend="numpy")
    for _ in range(2):
        np.testing.assert_array_equal(jitted(x), np.maximum(keep, 0))
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("nan_passes", [False, True])
def test_the_in_place_variants_match_the_kernels_including_nan_and_inf(nan_passes):
    x = rng.standard_normal((6, 7)).astype(np.float32)
    x[0, :3] = [np.nan, -np.inf, np.inf]
    v = rng.standard_normal((6, 7)).astype(np.float32)
    v[1, :2] = [np.inf, np.nan]
    np.testing.assert_array_equal(_relu_into(x, out=x.copy()), _relu_raw(x))
    want = _positive_part_raw(v, x, nan_passes)
    into_v, into_x = v.copy(), x.copy()  # into the cotangent, or into the array the mask is read from
    np.testing.assert_array_equal(_positive_part_into(into_v, x, nan_passes, out=into_v), want)
    np.testing.assert_array_equal(_positive_part_into(v, into_x, nan_passes, out=into_x), want)
    row = v[:1]  # the generic path: v broadcasts against x
    np.testing.assert_array_equal(_positive_part_into(row, x, nan_passes, out=np.empty_like(x)),
                                  _positive_part_raw(row, x, nan_passes))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 4, 256), (5, 1023), (4096,), (64, 64)])
def test_relu_of_large_arrays_has_the_bits_of_maximum_with_zero(dtype, shape):
    # large contiguous host arrays go row by row against a row of zeros (NumPy's vector loop), the others
    # against the scalar: the same bits either way, -0.0, NaN of either sign and infinities included
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:6] = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf]
    want = np.maximum(x, 0).tobytes()
    in_place = x.copy()
    assert _relu_into(in_place, out=in_place) is in_place and in_place.tobytes() == want
    assert _relu_raw(x).tobytes() == want and _relu_raw(x).shape == x.shape
    assert _relu_into(x, out=np.empty_like(x)).tobytes() == want
    strided = x[..., ::2]  # not contiguous
    assert _relu_raw(strided).tobytes() == np.maximum(strided, 0).tobytes()
    out = np.empty(shape[::-1], dtype).T  # a non-contiguous result buffer
    assert _relu_into(x, out=out) is out and np.ascontiguousarray(out).tobytes() == want


def _ff_backward_order(p, x):
    prog = fg.make_program(fg.grad(_mlp_loss))(p, x)
    names = [e.prim.name for e in prog.eqns]
    return prog, names


def test_relu_mask_runs_right_after_the_product_that_makes_its_cotangent():
    # the elementwise last reader of a large host product moves up to it (its rows still in cache); the
    # results are the eager step's, bit for bit as the unmoved program's
    p, x = _mlp(np.float32)
    p = {k: np.repeat(v, 8, axis=0) if k in ("w1", "b1") else v for k, v in p.items()}  # 512 hidden units
    p["w2"] = np.repeat(p["w2"], 8, axis=1)
    prog, names = _ff_backward_order(p, x)
    mask = names.index("positive_part")
    product = prog.eqns[mask - 1]
    assert product.prim.name == "matmul" and prog.eqns[mask].ins[0] is product.outs[0], names
    want = fg.grad(_mlp_loss)(p, x)
    got = fg.jit(fg.grad(_mlp_loss), backend="numpy")(p, x)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-4)


def test_calls_that_read_later_values_or_small_products_stay_in_place():
    from funcgrad.jit import passes

    x = rng.standard_normal((256, 256))

    def f(x):
        a = x @ x  # large product
        b = fnp.sin(x)  # made after the product
        return fnp.sum(a * b) + fnp.sum(x @ x[:4].T + 1.0)  # a * b needs b; the small product keeps its place

    prog = fg.make_program(f)(x)
    order = [e.prim.name for e in prog.eqns]
    assert order.index("multiply") > order.index("sin")
    before = fg.make_program(f)(x)
    saved = passes.PRODUCT_BYTES
    try:
        passes.PRODUCT_BYTES = 1 << 62
        unmoved = fg.jit(f, backend="numpy")(x)
    finally:
        passes.PRODUCT_BYTES = saved
    assert fg.jit(f, backend="numpy")(x) == unmoved and len(before.eqns) == len(prog.eqns)


@pytest.fixture
def kinds_restored():
    import importlib

    kinds = importlib.import_module("funcgrad.jit.kinds")
    saved = [(table, table.copy()) for table in (kinds._ELEMENTWISE, kinds._FRESH, kinds._INTO)]
    yield
    for table, copy in saved:
        table.clear()
        table.update(copy)


def test_declarations_say_what_the_replay_may_assume(kinds_restored):
    assert writes_out(np.add) and not writes_out(np.add, {"where": True}) and not writes_out(np.matmul)
    assert writes_out(_relu_raw) and writes_out(_relu_raw, {"nan_passes": True})
    assert not writes_out(_relu_raw, {"out": None}) and writer_of(_relu_raw) is _relu_into
    assert writer_of(np.add) is np.add and makes_fresh(np.matmul) and makes_fresh(_relu_raw)

    def scale(x):
        return x * 3.0

    assert not makes_fresh(scale) and not writes_out(scale) and not takes_out(scale)
    assert declare_fresh_result(scale) is scale and makes_fresh(scale) and not writes_out(scale)
    assert not takes_out(scale) and writer_of(scale) is scale

    def scale_into(x, out):
        return np.multiply(x, 3.0, out=out)

    declare_fresh_result(scale, into=scale_into)  # a variant into out=, never an argument: not elementwise
    assert takes_out(scale) and writer_of(scale) is scale_into and not writes_out(scale)
    assert takes_out(np.matmul) and not takes_out(np.matmul, {"axes": None}) and takes_out(_relu_raw)

    def shift(x):
        return x + 1.0

    assert declare_elementwise_writer(shift, into=lambda x, out: np.add(x, 1.0, out=out)) is shift
    assert writes_out(shift) and makes_fresh(shift)
