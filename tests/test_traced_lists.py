"""Functions that take array-likes accept (nested) Python lists holding traced values, as
NumPy and HIPS autograd do (issue 31: ravel, concatenate and append raised TypeError)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

CASES = {
 "ravel": lambda b: fnp.ravel([1.0, b]),
 "concatenate": lambda b: fnp.concatenate([[1.0], [b, b]]),
 "concatenate_none": lambda b: fnp.concatenate([[[1.0]], [[b]]], axis=None),
 "append": lambda b: fnp.append([1.0], [b, b]),
 "append2": lambda b: fnp.append([1.0, b], 3.0),
 "hstack": lambda b: fnp.hstack([[1.0], [b]]),
 "vstack": lambda b: fnp.vstack([[1.0, 2.0], [b, b]]),
 "column_stack": lambda b: fnp.column_stack([[1.0, 2.0], [b, b]]),
 "dstack": lambda b: fnp.dstack([[1.0, 2.0], [b, b]]),
 "stack": lambda b: fnp.stack([[1.0], [b]]),
 "transpose": lambda b: fnp.transpose([[1.0, b]]),
 "squeeze": lambda b: fnp.squeeze([[1.0, b]]),
 "expand_dims": lambda b: fnp.expand_dims([1.0, b], 0),
 "flip": lambda b: fnp.flip([1.0, b]),
 "diff": lambda b: fnp.diff([1.0, b, 3.0]),
 "cumsum": lambda b: fnp.cumsum([1.0, b]),
 "sort": lambda b: fnp.sort([3.0, b]),
 "where": lambda b: fnp.where([True, False], [1.0, b], [b, 2.0]),
 "clip": lambda b: fnp.clip([1.0, b], 0, 10),
 "dot": lambda b: fnp.dot([1.0, b], [b, 2.0]),
 "matmul": lambda b: fnp.matmul([1.0, b], [b, 2.0]),
 "outer": lambda b: fnp.outer([1.0, b], [1.0, 2.0]),
 "mean": lambda b: fnp.mean([1.0, b]),
 "max": lambda b: fnp.max([1.0, b]),
 "norm": lambda b: fnp.linalg.norm([1.0, b]),
 "tile": lambda b: fnp.tile([1.0, b], 2),
 "repeat": lambda b: fnp.repeat([1.0, b], 2),
 "roll": lambda b: fnp.roll([1.0, b], 1),
 "pad": lambda b: fnp.pad([1.0, b], 1),
 "atleast_2d": lambda b: fnp.atleast_2d([1.0, b]),
 "swapaxes": lambda b: fnp.swapaxes([[1.0, b]], 0, 1),
 "moveaxis": lambda b: fnp.moveaxis([[1.0, b]], 0, 1),
 "broadcast_to": lambda b: fnp.broadcast_to([1.0, b], (2, 2)),
 "reshape": lambda b: fnp.reshape([1.0, b], (2, 1)),
 "take": lambda b: fnp.take([1.0, b], [1]),
 "trace": lambda b: fnp.trace([[1.0, b], [b, 1.0]]),
 "diag": lambda b: fnp.diag([1.0, b]),
 "diagonal": lambda b: fnp.diagonal([[1.0, b], [b, 1.0]]),
 "triu": lambda b: fnp.triu([[1.0, b], [b, 1.0]]),
 "einsum": lambda b: fnp.einsum("i,i", [1.0, b], [b, 1.0]),
 "inv": lambda b: fnp.linalg.inv([[2.0, b], [0.0, 1.0]]),
 "interp": lambda b: fnp.interp(0.5, [0.0, 1.0], [1.0, b]),
 "convolve": lambda b: fnp.convolve([1.0, b], [1.0, 1.0]),
 "polyval": lambda b: fnp.polyval([1.0, b], 2.0),
 "prod": lambda b: fnp.prod([2.0, b]),
 "average": lambda b: fnp.average([2.0, b]),
 "var": lambda b: fnp.var([2.0, b]),
 "linspace": lambda b: fnp.linspace(0.0, b, 3),
 "flatten_meth": lambda b: fnp.asarray([1.0, b]).flatten(),
 "real": lambda b: fnp.real([1.0, b]),
 "abs": lambda b: fnp.abs([1.0, b]),
 "copy": lambda b: fnp.copy([1.0, b]),
 "nan_to_num": lambda b: fnp.nan_to_num([1.0, b]),
 "rot90": lambda b: fnp.rot90([[1.0, b]]),
 "kron": lambda b: fnp.kron([1.0, b], [1.0, 1.0]),
 "cross": lambda b: fnp.cross([1.0, b, 0.0], [0.0, 1.0, 0.0]),
 "fft": lambda b: fnp.real(fnp.fft.fft([1.0, b])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_list_holding_a_traced_value(name):
    f = CASES[name]
    got = fg.grad(lambda b: fnp.sum(f(b)))(2.0)
    h = 1e-6
    numeric = (np.sum(f(2.0 + h)) - np.sum(f(2.0 - h))) / (2 * h)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_the_issue_example():
    assert fg.grad(lambda b: fnp.sum(fnp.ravel([1.0, b])))(2.0) == 1.0
    np.testing.assert_allclose(fg.jacfwd(lambda b: fnp.append([1.0], [b, 2 * b]))(2.0), [0.0, 1.0, 2.0])
