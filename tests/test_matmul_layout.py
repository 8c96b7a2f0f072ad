"""matmul's VJP gives each operand's gradient in that operand's layout: for ``x @ w.T`` (every
Linear layer) the weight's gradient comes back C-ordered like the weight, so the optimizer's
update ``w - lr * g`` does not walk memory across rows (7x slower for a 256x784 float32 weight)."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_weight_gradient_is_c_ordered_and_exact(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7)).astype(dtype)
    w = rng.standard_normal((3, 7)).astype(dtype)
    g = fg.grad(lambda w: fnp.sum(fnp.tanh(fnp.matmul(x, fnp.transpose(w)))))(w)
    assert g.flags.c_contiguous
    d = 1 - np.tanh(x @ w.T) ** 2
    np.testing.assert_allclose(g, d.T @ x, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_column_major_left_operand_gradient_keeps_its_layout():
    rng = np.random.default_rng(1)
    xt = rng.standard_normal((7, 5))  # x = xt.T is column-major
    w = rng.standard_normal((7, 3))
    g = fg.grad(lambda xt: fnp.sum(fnp.sin(fnp.matmul(fnp.transpose(xt), w))))(xt)
    assert g.flags.c_contiguous
    np.testing.assert_allclose(g, (np.cos(xt.T @ w) @ w.T).T, rtol=1e-12)


def test_layout_choice_agrees_with_the_default_to_higher_order():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal((3, 6))
    f = lambda w: fnp.sum(fnp.sin(fnp.matmul(x, fnp.transpose(w))) ** 2)
    fg.testing.check_grads(f, (w,), order=2, modes=("rev", "fwd"))
    h = fg.hessian(f)(w)
    hf = fg.jacfwd(fg.jacfwd(f))(w)
    np.testing.assert_allclose(h, hf, rtol=1e-10, atol=1e-12)


def test_tensor_linear_weight_gradient_is_c_ordered():
    lin = ft.nn.Linear(7, 3)
    lin(ft.randn(5, 7)).sum().backward()
    assert lin.weight.grad.numpy().flags.c_contiguous


# -- a stack of matrices times one matrix (every Linear layer on (batch, tokens, features)) --------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lead", [(4,), (2, 3)])
@pytest.mark.parametrize("transposed", [False, True])
def test_stacked_times_matrix_gradient_is_one_product(dtype, lead, transposed):
    """The weight's gradient of ``x (..., n, k) @ w`` is one product over all rows (no batch of products
    summed afterwards), equal to the old composition, and C-ordered for ``x @ w.T``."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(lead + (5, 7)).astype(dtype)
    w = rng.standard_normal((3, 7) if transposed else (7, 3)).astype(dtype)

    def f(w, x):
        return fnp.sum(fnp.tanh(fnp.matmul(x, fnp.transpose(w) if transposed else w)))

    gw, gx = fg.grad(f, argnums=(0, 1))(w, x)
    d = 1 - np.tanh(x @ (w.T if transposed else w)) ** 2
    old = np.sum(np.swapaxes(x, -1, -2) @ d, axis=tuple(range(len(lead))))  # the old composition
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gw, old.T if transposed else old, rtol=tol, atol=tol)
    np.testing.assert_allclose(gx, d @ (w if transposed else w.T), rtol=tol, atol=tol)
    assert gw.flags.c_contiguous
    prog = fg.make_program(fg.grad(f))(w, x)
    assert not [e for e in prog.eqns if e.prim.name == "sum"]  # no reduction over a batch of products
    if dtype == np.float64:
        fg.testing.check_grads(f, (w, x), order=2, modes=("fwd", "rev"))


def test_jitted_stack_times_matrix_equals_eager():
    """The replay's lowering of ``(..., n, k) @ (k, m)`` to one GEMM over the rows: equal to NumPy's
    batched product, for contiguous and non-contiguous stacks and for a written-into result buffer."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5, 6))
    w = rng.standard_normal((6, 2))

    def f(x, w):
        a = fnp.exp(x @ w)                      # contiguous stack
        b = fnp.swapaxes(x, 1, 2) @ w           # a strided stack
        return fnp.sum(a * 2.0) + fnp.sum(fnp.sin(b))

    with _replay_only():
        jitted = fg.jit(fg.value_and_grad(f, argnums=(0, 1)))
        jitted(x, w)
        got = jitted(x, w)
    want = fg.value_and_grad(f, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_rows_product_writes_into_given_buffers():
    from funcgrad.jit.numpy_replay import _rows_matmul

    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    for out in (np.empty((2, 3, 5)), np.empty((5, 3, 2)).T):  # C-ordered and F-ordered result buffers
        assert _rows_matmul(a, b, out=out) is out
        np.testing.assert_allclose(out, a @ b, rtol=1e-14)
    np.testing.assert_allclose(_rows_matmul(np.swapaxes(a, 0, 1), b), np.swapaxes(a, 0, 1) @ b, rtol=1e-14)


class _replay_only:
    """``fg.config.jit_backend = "numpy"`` for the block (the replay is what these tests check)."""

    def __enter__(self):
        self.old = fg.config.jit_backend
        fg.config.jit_backend = "numpy"

    def __exit__(self, *exc):
        fg.config.jit_backend = self.old


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 0), (0, 4)), ((2, 0, 5), (5, 4)), ((0, 3, 5), (5, 2))])
def test_stacked_times_matrix_with_empty_axes(a_shape, b_shape):
    """Empty stacks and empty inner axes: the rows product has explicit row counts (a -1 is ambiguous there)."""
    a, b = np.ones(a_shape), np.ones(b_shape)
    ga, gb = fg.grad(lambda a, b: fnp.sum(fnp.sin(a @ b)), argnums=(0, 1))(a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_array_equal(gb, np.zeros(b.shape))  # an empty sum of products
    with _replay_only():
        jitted = fg.jit(lambda a, b: fnp.sin(a @ b))
        jitted(a, b)
        assert jitted(a, b).shape == (a @ b).shape
