"""Loop nests of the native tier that differ only by size-1 axes are one nest
(funcgrad/jit/native_source.py): a (1, n) value is made in the (n,) nest, an (n, 1, n) one in
the (n, n) nest, an (n, 1) one in the outer loop of the (n, n) nest before its inner loop opens
(a keepdims reduction's follow-up work included). Each test reads the generated source (nests
and temporaries counted) and checks the compiled result against the NumPy replay within the
bound of docs/jit.md. The source tests need no numba; the compiled ones skip without it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit import native
from funcgrad.jit.native_source import _placement, segment_source
from test_jit_native_lowerings import assert_within_bound, grid

needs_numba = pytest.mark.skipif(not native.available(), reason="the native extra (numba) is not installed")


def source(f, *args):
    """The generated source of the one native segment of fg.jit(f) at ``args`` (no compile)."""
    segments = [it for it in native.plan(fg.jit(f).program(*args)) if isinstance(it, native.Segment)]
    assert len(segments) == 1
    src = segment_source(segments[0].eqns, segments[0].ins, segments[0].outs)
    return src[src.index("def segment("):]


def nests(src):
    """Loop nests at the segment's top level (elementwise nests count with ``i0``)."""
    return len(re.findall(r"^    for i0 in range", src, re.M))


def temporaries(src, shape):
    return src.count(f"np.empty({shape!r}") + src.count(f"np.full({shape!r}")


def depths(src, text):
    """The loop depths (0: outside every loop) of the lines of ``src`` containing ``text``."""
    return [(len(ln) - len(ln.lstrip(" "))) // 4 - 1 for ln in src.splitlines() if text in ln]


def depth_of(src, text):
    return depths(src, text)[0]


@pytest.mark.parametrize("s, nest, want", [
    ((6, 6), (6, 6), ["i0", "i1"]),
    ((6, 1, 6), (6, 6), ["i0", "0", "i1"]),      # the same elements, a unit axis between
    ((6, 6), (6, 1, 6), ["i0", "i2"]),
    ((1, 6), (6,), ["0", "i0"]),
    ((6, 1), (6, 6), ["i0", "0"]),               # made in the outer loop
    ((), (6, 6), []),                            # before the loops
    ((1, 1), (6, 6), ["0", "0"]),
    ((6,), (6, 6), None),                        # would be made again in every row
    ((1, 6), (6, 6), None),
    ((6, 1), (6, 1, 6), None),                   # broadcasts against the last two axes: (6, 6) ones
    ((3,), (6, 6), None),
    ((6, 6, 6), (6, 6), None),
])
def test_placement_makes_each_element_once(s, nest, want):
    assert _placement(s, nest) == want


def hessian_problem(n):
    a = grid(n, n) / n + np.eye(n) * 0.5

    def f(x):
        t = fnp.tanh(a @ x)
        return fnp.sum(t * t) + 0.5 * (x @ x)

    def closed_form(x):  # H = A^T diag((2 - 6 t^2)(1 - t^2)) A + I
        t = np.tanh(a @ x)
        w = (2.0 - 6.0 * t * t) * (1.0 - t * t)
        return a.T @ (w[:, None] * a) + np.eye(n)
    return f, closed_form


def test_hessian_nests_over_n_by_n_and_n_by_1_by_n_are_one():
    n = 5
    f, _ = hessian_problem(n)
    src = source(fg.hessian(f), grid(n))
    # the (n, n) work and the (n, 1, n) work: one nest, one temporary for its result (was two
    # nests and three temporaries); the (1, n) work joins the (n,) nest of tanh
    assert nests(src) == 4, src  # (n,) work, (n, n) work, the product's + eye, the copy out
    assert temporaries(src, (n, n)) + temporaries(src, (n, 1, n)) == 4, src  # was 6
    assert temporaries(src, (1, n)) == 1 and "[0, i0]" in src, src


def test_a_column_is_made_in_the_outer_loop_and_a_keepdims_sum_feeds_one_nest():
    x, c = grid(4, 3), grid(4, 1, lo=0.0, hi=1.0)

    def f(x, c):
        r = 1.0 / (fnp.sum(x * x, axis=1, keepdims=True) + 1.0)
        return x * r + fnp.sin(x) * (fnp.exp(c) * 2.0)

    src = source(f, x, c)
    assert nests(src) == 2, src  # the sum, then one nest for all the rest
    assert depth_of(src, "exp64(") == 1 and depth_of(src, "np.sin(") == 2, src
    assert temporaries(src, (4, 1)) == 1, src  # the sum's accumulator: 1 / (s + 1), exp(c) * 2 are locals
    grad_src = source(fg.grad(lambda x, c: fnp.sum(f(x, c) ** 2), argnums=(0, 1)), x, c)
    assert depth_of(grad_src, "exp64(") == 1, grad_src


def test_values_read_across_rows_stay_apart():
    # sin(v) (n,) broadcast against (n, n) is read along the rows: not made in the (n, n) nest
    # (each would be computed n times), and m.T read in the nest that makes m is another element
    v, m = grid(4), grid(4, 4)
    src = source(lambda v, m: m * fnp.sin(v) + fnp.cos(m).T, v, m)
    assert depth_of(src, "np.sin(") == 1 and "a_" in src[src.index("np.sin("):], src
    assert nests(src) == 3, src  # sin(v); cos(m); the sum reading cos(m) transposed


def unit_axes(v, m):
    """(1, n) work beside (n,) work, (n, 1, n) beside (n, n), (n, 1) beside (n, n), a keepdims
    reduction, a reshape through a unit axis: the patterns above in one program."""
    row = fnp.reshape(fnp.tanh(v), (1, -1)) * 2.0 + fnp.exp(v)[None, :]            # (1, n) with (n,)
    cube = fnp.reshape(fnp.sin(m), (4, 1, 4)) * fnp.cos(m)[:, None, :]             # (n, 1, n) with (n, n)
    col = fnp.max(m, axis=1, keepdims=True)                                        # (n, 1)
    scaled = (m - col) * fnp.exp(-col) + row                                       # (n, 1) with (n, n)
    return fnp.sum(cube, axis=1) * scaled + fnp.sum(row * row)


@needs_numba
def test_merged_nests_equal_the_replay_and_their_gradients_too(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCGRAD_CACHE_DIR", str(tmp_path / "cache"))
    v, m = grid(4), grid(4, 4, lo=-2.0, hi=1.0)
    n = 5
    f, closed_form = hessian_problem(n)
    x = grid(n, lo=-0.5, hi=0.7)

    def program(v, m, x):
        value = unit_axes(v, m)
        g_v, g_m = fg.grad(lambda v, m: fnp.sum(unit_axes(v, m) ** 2), argnums=(0, 1))(v, m)
        return value, g_v, g_m, fg.hessian(f)(x)

    nat = fg.jit(program, backend="native")
    compiled = nat.lower(v, m, x).compile()
    assert compiled.backend == "native" and compiled.left == 0, compiled.why
    got, want = nat(v, m, x), fg.jit(program, backend="numpy")(v, m, x)
    for g, w in zip(got, want):
        assert_within_bound(g, w, 16)
    np.testing.assert_allclose(got[3], closed_form(x), rtol=1e-12, atol=1e-13)
    src = source(lambda v, m: unit_axes(v, m), v, m)
    # merged as in the tests above: exp(v) in the (n,) nest, exp(-col) in the outer loop of the (n, n) one
    assert "[0, i0]" in src and depths(src, "exp64(") == [1, 1] and temporaries(src, (4, 1)) == 1, src
