"""Semantics of the transforms: nesting, pytrees, argnums, aux, errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from jit_modes import jit_mode  # noqa: F401  (every test runs eager and under fg.jit)


def f_scalar(x):
    return fnp.sum(fnp.tanh(x) * fnp.sin(x))


X = np.array([0.3, -0.7, 1.1])


# --- closed forms and nesting ------------------------------------------------

def test_grad_closed_form():
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sin(x) * x)(1.3), np.cos(1.3) * 1.3 + np.sin(1.3))


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_third_order_nested_grad():
    d3 = fg.grad(fg.grad(fg.grad(fnp.sin)))
    np.testing.assert_allclose(d3(0.7), -np.cos(0.7))
    d3tanh = fg.grad(fg.grad(fg.grad(fnp.tanh)))(0.4)
    t = np.tanh(0.4)
    np.testing.assert_allclose(d3tanh, -2 * (1 - t**2) * (1 - 3 * t**2))


@pytest.mark.parametrize("outer", [fg.jacfwd, fg.jacrev])
@pytest.mark.parametrize("inner", [fg.jacfwd, fg.jacrev])
def test_jacobian_of_jacobian_every_mode_pairing(outer, inner):
    # f(x) = sum(exp(x) * x): Hessian diag((x + 2) e^x)
    f = lambda x: fnp.sum(fnp.exp(x) * x)
    np.testing.assert_allclose(outer(inner(f))(X), np.diag((X + 2) * np.exp(X)), rtol=1e-12)


def test_perturbation_confusion_closure_over_outer_value():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1 (a confused implementation gives 2)
    f = lambda x: x * fg.grad(lambda y: x + y)(1.0)
    np.testing.assert_allclose(fg.grad(f)(2.0), 1.0)
    # d/dx [ d/dy (x * y) ] at y = 3 = d/dx x = 1
    np.testing.assert_allclose(fg.grad(lambda x: fg.grad(lambda y: x * y)(3.0))(5.0), 1.0)
    # forward over reverse and reverse over forward mix the same way
    g = lambda x: fg.jvp(lambda y: x * y, (2.0,), (1.0,))[1]
    np.testing.assert_allclose(fg.grad(g)(5.0), 1.0)


def test_grad_of_function_closing_over_outer_traced_value():
    def outer(a):
        inner = lambda x: fnp.sum(fnp.sin(a * x))
        return fnp.sum(fg.grad(inner)(X))  # sum_i a cos(a x_i)

    a = 0.8
    expected = np.sum(np.cos(a * X) - a * X * np.sin(a * X))
    np.testing.assert_allclose(fg.grad(outer)(a), expected)


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_hessian_equals_jacrev_jacrev_and_is_symmetric():
    H = fg.hessian(f_scalar)(X)
    np.testing.assert_allclose(H, fg.jacrev(fg.jacrev(f_scalar))(X), atol=1e-12)
    np.testing.assert_allclose(H, H.T, atol=1e-12)


def test_hvp_equals_hessian_times_vector():
    v = np.array([0.5, -1.0, 2.0])
    g, hv = fg.hvp(f_scalar, (X,), (v,))
    np.testing.assert_allclose(g, fg.grad(f_scalar)(X))
    np.testing.assert_allclose(hv, fg.hessian(f_scalar)(X) @ v, atol=1e-12)


@pytest.mark.native  # also run on native code (tests/jit_modes.py)
def test_jacobians_shapes_and_values():
    A = np.arange(6.0).reshape(2, 3) / 10
    f = lambda x: fnp.tanh(fnp.matmul(A, x)) if hasattr(fnp, "matmul") else None
    x = np.array([0.1, 0.2, 0.3])
    expected = (1 - np.tanh(A @ x) ** 2)[:, None] * A
    for jac in (fg.jacrev, fg.jacfwd, fg.jacobian):
        J = jac(f)(x)
        assert J.shape == (2, 3)
        np.testing.assert_allclose(J, expected, atol=1e-12)


def test_jacobian_of_matrix_input_has_out_then_in_shape():
    x = np.arange(6.0).reshape(2, 3)
    J = fg.jacrev(lambda x: fnp.sin(x))(x)
    assert J.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(J.reshape(6, 6), np.diag(np.cos(x).ravel()))
    np.testing.assert_allclose(fg.jacfwd(lambda x: fnp.sin(x))(x), J)


# --- pytrees, argnums, aux --------------------------------------------------

def test_grad_pytree_in_and_out_structure():
    params = {"w": np.array([1.0, 2.0]), "b": (np.array(0.5), [np.array([3.0])])}

    def loss(p):
        return fnp.sum(p["w"] * p["w"]) + p["b"][0] * fnp.sum(p["b"][1][0])

    g = fg.grad(loss)(params)
    assert isinstance(g, dict) and isinstance(g["b"], tuple) and isinstance(g["b"][1], list)
    np.testing.assert_allclose(g["w"], [2.0, 4.0])
    np.testing.assert_allclose(g["b"][0], 3.0)
    np.testing.assert_allclose(g["b"][1][0], [0.5])


def test_namedtuple_params():
    P = collections.namedtuple("P", "a b")
    g = fg.grad(lambda p: p.a * p.b)(P(2.0, 3.0))
    assert isinstance(g, P) and np.allclose(g.a, 3.0) and np.allclose(g.b, 2.0)


def test_argnums_tuple_and_negative():
    f = lambda x, y, z: x * y * z
    gx, gz = fg.grad(f, argnums=(0, 2))(2.0, 3.0, 4.0)
    np.testing.assert_allclose([gx, gz], [12.0, 6.0])
    np.testing.assert_allclose(fg.grad(f, argnums=-1)(2.0, 3.0, 4.0), 6.0)


def test_has_aux_and_value_and_grad():
    f = lambda x: (fnp.sum(x * x), {"mean": fnp.sum(x) / 3})
    (val, aux), g = fg.value_and_grad(f, has_aux=True)(X)
    np.testing.assert_allclose(val, np.sum(X**2))
    np.testing.assert_allclose(aux["mean"], X.mean())
    assert not fg.core.is_traced(aux["mean"])
    g2, aux2 = fg.grad(f, has_aux=True)(X)
    np.testing.assert_allclose(g2, 2 * X)


def test_kwargs_are_passed_but_not_differentiated():
    f = lambda x, scale=1.0: fnp.sum(x * scale)
    np.testing.assert_allclose(fg.grad(f)(X, scale=3.0), [3.0] * 3)


def test_vjp_callable_many_times_and_tuple_outputs():
    out, f_vjp = fg.vjp(lambda x, y: (x * y, fnp.sin(x)), X, 2.0)
    ct1 = f_vjp((np.ones(3), np.zeros(3)))
    ct2 = f_vjp((np.zeros(3), np.ones(3)))
    np.testing.assert_allclose(ct1[0], [2.0] * 3)
    np.testing.assert_allclose(ct1[1], X.sum())
    np.testing.assert_allclose(ct2[0], np.cos(X))
    np.testing.assert_allclose(ct2[1], 0.0)


def test_jvp_and_linearize_agree():
    v = np.array([1.0, 0.5, -2.0])
    y, t = fg.jvp(f_scalar, (X,), (v,))
    y2, f_jvp = fg.linearize(f_scalar, X)
    np.testing.assert_allclose(y, y2)
    np.testing.assert_allclose(t, f_jvp(v))
    np.testing.assert_allclose(t, fg.grad(f_scalar)(X) @ v)


def test_output_independent_of_input_gives_zeros():
    g = fg.grad(lambda x, y: fnp.sin(y), argnums=0)(X, 1.0)
    np.testing.assert_array_equal(g, np.zeros(3))
    _, t = fg.jvp(lambda x: fnp.ones(3), (X,), (X,))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_stop_gradient():
    np.testing.assert_allclose(fg.grad(lambda x: x * fg.stop_gradient(x))(3.0), 3.0)
    np.testing.assert_allclose(fg.jvp(lambda x: x * fg.stop_gradient(x), (3.0,), (1.0,))[1], 3.0)


def test_stop_gradient_under_vmap_stops_the_enclosing_transforms():
    # the batching rule once passed the inner value through unstopped: the outer grad saw through it
    x = np.array([1.0, 2.0])
    f = fg.vmap(lambda t: fg.stop_gradient(t) * t)
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(f(x)))(x), x)
    np.testing.assert_allclose(fg.jacfwd(f)(x), np.diag(x))
    np.testing.assert_allclose(fg.jacrev(f)(x), np.diag(x))
    np.testing.assert_allclose(f(x), x * x)


# --- dtypes -----------------------------------------------------------------

@pytest.mark.native  # also run on native code (tests/jit_modes.py)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_keep_input_dtype(dtype):
    x = X.astype(dtype)
    assert fg.grad(f_scalar)(x).dtype == dtype
    assert fg.jvp(f_scalar, (x,), (np.ones_like(x),))[1].dtype == dtype
    assert fg.jacrev(fnp.sin)(x).dtype == dtype
    assert fg.jacfwd(fnp.sin)(x).dtype == dtype
    assert fg.hessian(f_scalar)(x).dtype == dtype
    # a float64 constant does not leak into a float32 gradient
    assert fg.grad(lambda x: fnp.sum(x * np.float64(2.0)))(x).dtype == dtype


def test_complex_grad_follows_jax_convention():
    # grad of |z|^2 = z conj(z) is 2 conj(z) in JAX's convention
    z = np.array(1.0 + 2.0j)
    g = fg.grad(lambda z: fnp.real(z * fnp.conj(z)))(z)
    np.testing.assert_allclose(g, 2 * np.conj(z))
    # holomorphic: derivative of z^2 is 2z
    np.testing.assert_allclose(fg.grad(lambda z: z * z, holomorphic=True)(z), 2 * z)
    np.testing.assert_allclose(fg.jacfwd(lambda z: z * z, holomorphic=True)(np.array([z])), [[2 * z]])
    np.testing.assert_allclose(fg.jacrev(lambda z: z * z, holomorphic=True)(np.array([z])), [[2 * z]])


# --- errors -----------------------------------------------------------------

def test_error_grad_of_non_scalar():
    with pytest.raises(TypeError, match=r"scalar output.*shape \(3,\).*jacrev"):
        fg.grad(fnp.sin)(X)


def test_error_integer_and_boolean_inputs():
    with pytest.raises(TypeError, match=r"argument 0.*int.*floating"):
        fg.grad(lambda x: x * 1.0)(3)
    with pytest.raises(TypeError, match=r"bool"):
        fg.grad(lambda x: fnp.sum(x * 1.0))(np.array([True, False]))
    with pytest.raises(TypeError, match=r"argument 0\['n'\].*int"):
        fg.grad(lambda p: p["x"] * 1.0)({"x": 1.0, "n": np.arange(3)})


def test_error_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"argnums=2 is out of range.*2 positional"):
        fg.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_error_complex_output_to_grad():
    with pytest.raises(TypeError, match="real-valued output.*holomorphic"):
        fg.grad(lambda z: z * z)(np.array(1.0 + 1.0j))


def test_error_tangent_mismatches():
    with pytest.raises(ValueError, match="structure"):
        fg.jvp(lambda p: p["a"], ({"a": 1.0},), ({"b": 1.0},))
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(3,\)"):
        fg.jvp(fnp.sin, (X,), (np.ones(2),))
    with pytest.raises(TypeError, match="dtype float32.*dtype float64"):
        fg.jvp(fnp.sin, (X,), (np.ones(3, np.float32),))
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        fg.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="tuples"):
        fg.jvp(fnp.sin, X, X)


def test_error_cotangent_mismatch():
    _, f_vjp = fg.vjp(fnp.sin, X)
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(3,\)"):
        f_vjp(np.ones(2))


@pytest.mark.eager_only("of_jit")  # the leaked value is traced by jit, not grad
def test_error_leaked_traced_value():
    leaked = []

    def f(x):
        leaked.append(x)
        return fnp.sin(x)

    fg.grad(f)(1.0)
    with pytest.raises(fg.LeakedTraceError, match="traced by grad.*escape"):
        fnp.sin(leaked[0])


def test_error_unsupported_numpy_function_names_it():
    with pytest.raises(TypeError, match=r"numpy\.[\w.]+ is not supported on traced values.*fg.primitive"):
        fg.grad(lambda x: np.sum(np.lib.stride_tricks.sliding_window_view(x, 2)))(X)


@pytest.mark.eager_only  # under fg.jit: StagedValueError, tests/test_jit.py
def test_error_float_of_traced_value():
    with pytest.raises(TypeError, match="drop its derivative"):
        fg.grad(lambda x: float(x) * x)(1.0)
    with pytest.raises(TypeError, match="complex.*drop its derivative"):
        fg.grad(lambda x: complex(x).real * x)(1.0)


def test_plain_numpy_ufuncs_dispatch_on_traced_values():
    np.testing.assert_allclose(fg.grad(lambda x: np.sin(x) * np.float64(2.0))(0.5), 2 * np.cos(0.5))
    np.testing.assert_allclose(fg.grad(lambda x: np.sum(np.exp(x)))(X), np.exp(X))


def test_user_primitive_with_rules():
    @fg.primitive
    def cube(x):
        return x * x * x

    fg.defvjp(cube, lambda g, ans, x: g * 3 * x * x)
    fg.defjvp(cube, lambda t, ans, x: t * 3 * x * x)
    np.testing.assert_allclose(fg.grad(cube)(2.0), 12.0)
    np.testing.assert_allclose(fg.grad(fg.grad(cube))(2.0), 12.0)
    fg.testing.check_grads(cube, (X,), order=2)


def test_missing_rule_error_names_primitive():
    @fg.primitive
    def mystery(x):
        return x * 2

    with pytest.raises(NotImplementedError, match="VJP of argument 0 of primitive 'mystery'"):
        fg.grad(mystery)(1.0)
    with pytest.raises(NotImplementedError, match="JVP of argument 0 of primitive 'mystery'"):
        fg.jvp(mystery, (1.0,), (1.0,))


def test_check_grads_catches_a_wrong_rule():
    @fg.primitive
    def wrong(x):
        return fnp.sin(x)

    fg.defvjp(wrong, lambda g, ans, x: g * fnp.sin(x))
    fg.defjvp(wrong, lambda t, ans, x: t * fnp.sin(x))
    with pytest.raises(AssertionError):
        fg.testing.check_grads(wrong, (X,), order=1)


def test_tape_keeps_only_what_rules_read():
    from funcgrad.core import ReverseTrace
    from funcgrad.core.reverse import ArraySpec

    x = np.linspace(0.1, 1.0, 1000)  # big enough for the tape to drop it
    with ReverseTrace("t") as trace:
        b = trace.new_input(x)
        y = fnp.tanh(0.9 * b + 0.1)
    tanh_node = y._node
    add_node = tanh_node.parents[0]
    mul_node = add_node.parents[0]
    assert isinstance(tanh_node.args[0], ArraySpec) and not isinstance(tanh_node.ans, ArraySpec)
    assert isinstance(add_node.args[0], ArraySpec) and isinstance(add_node.ans, ArraySpec)
    assert isinstance(mul_node.args[1], ArraySpec) and mul_node.args[0] == 0.9
    # linearize replays JVP rules on its tape, which read more: it keeps everything
    _, f_jvp = fg.linearize(lambda x: fnp.tanh(0.9 * x + 0.1), x)
    np.testing.assert_allclose(f_jvp(np.ones(1000)), 0.9 * (1 - np.tanh(0.9 * x + 0.1) ** 2))


def test_threads_differentiate_at_the_same_time():
    import threading

    results: dict = {}

    def work(k: int) -> None:
        a = 0.5 + k
        f = lambda x: fnp.sum(fnp.sin(a * x) * x)
        x = np.linspace(0.1, 1.0, 50)
        for _ in range(30):
            g = fg.grad(f)(x)
            h = fg.hvp(f, (x,), (np.ones(50),))[1]
        results[k] = (g, h, a, x)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (g, h, a, x) in results.items():
        np.testing.assert_allclose(g, np.sin(a * x) + a * x * np.cos(a * x), rtol=1e-12)
        np.testing.assert_allclose(h, 2 * a * np.cos(a * x) - a * a * x * np.sin(a * x), rtol=1e-10)
