"""The one-declaration API: fg.defprimitive."""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.core.reverse import ArraySpec, ReverseTrace
from funcgrad.numpy._batching import elementwise_rule


def _cube_raw(x):
    return x ** 3


cube = fg.defprimitive(
    _cube_raw,
    name="cube",
    vjp=lambda g, ans, x: g * 3 * x ** 2,
    jvp=lambda t, ans, x: t * 3 * x ** 2,
    batch_from=elementwise_rule,
    reads={0: {0}},
    doc="x cubed.",
)


def test_rules_and_docstring():
    x = np.array([1.0, -2.0, 0.5])
    assert cube.__doc__ == "x cubed."
    np.testing.assert_allclose(fg.grad(lambda x: fnp.sum(cube(x)))(x), 3 * x ** 2)
    fg.testing.check_grads(cube, (x,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(fg.vmap(cube)(x.reshape(3, 1)), (x ** 3).reshape(3, 1))


def test_reads_keeps_only_what_the_rule_reads():
    x = np.ones(4096)
    with ReverseTrace("t") as trace:
        out = cube(trace.new_input(x))
    assert isinstance(out._node.ans, ArraySpec)  # the result is not read: only its spec is kept
    assert out._node.args[0] is x


def test_linear_and_per_argument_rules():
    scale = fg.defprimitive(lambda x, c: x * c, name="scale", linear=True,
                            jvp={1: lambda t, ans, x, c: x * t},
                            vjp={0: lambda g, ans, x, c: g * c, 1: lambda g, ans, x, c: fnp.sum(g * x)})
    x = np.array([1.0, 2.0])
    fg.testing.check_grads(lambda x, c: scale(x, c), (x, 3.0), order=2, modes=("fwd", "rev"))
    assert scale.primitive.pure


def test_bad_rules_are_refused():
    with pytest.raises(TypeError, match="not callable"):
        fg.defprimitive(lambda x: x, vjp=[1])
    with pytest.raises(TypeError, match="not both"):
        fg.defprimitive(lambda x: x, linear=True, jvp=lambda t, a, x: t)
