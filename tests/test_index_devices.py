"""Functional updates on device arrays under second-order transforms (fake device), and the
message for indexing a plain NumPy array with a batched integer under vmap."""

from __future__ import annotations

import numpy as np
import pytest

import fake_backend as fb
import funcgrad as fg
import funcgrad.numpy as fnp

fb.install()


def f(x):
    y = x.at[1].set(x[0] ** 2)
    y = y.at[np.array([2, 3])].set(x[:2] * 3.0)
    y = y.at[0].add(x[3])
    y = y.at[1:3].mul(x[2])
    y = y.at[np.array([0, 0])].add(x[1:3])
    return fnp.sum(y ** 3)


@pytest.mark.parametrize("how", ["hessian", "jacrev_grad", "hvp"])
def test_second_order_at_updates_on_device(how):
    xh = np.arange(4.0) * 0.5 + 0.25
    x = fb.to_fake(xh)
    if how == "hessian":
        want, run = fg.hessian(f)(xh), lambda: fg.hessian(f)(x)
    elif how == "jacrev_grad":
        want, run = fg.hessian(f)(xh), lambda: fg.jacrev(fg.grad(f))(x)
    else:
        v = np.ones(4)
        want, run = fg.hvp(f, (xh,), (v,))[1], lambda: fg.hvp(f, (x,), (fb.to_fake(v),))[1]
    with fb.no_host_sync():
        got = run()
    assert isinstance(got, fb.FakeArray)
    np.testing.assert_allclose(fb.fake.asnumpy(got), want, rtol=1e-12)


def test_vmap_set_with_repeated_index_on_device():
    from funcgrad.numpy.indexing import _index_set

    z = fb.to_fake(np.zeros(4))
    vs = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = fg.vmap(lambda v: _index_set(z, (np.array([2, 3]),), v))(fb.to_fake(vs))
    np.testing.assert_array_equal(fb.fake.asnumpy(got), [[0, 0, 1, 2], [0, 0, 3, 4]])


def test_vmap_indexing_plain_numpy_array_with_batched_integer():
    Q = np.arange(12.0).reshape(4, 3)
    t = np.array([0, 2, 3])
    with pytest.raises(TypeError, match=r"fnp.take\(Q, t, axis=0\).*fnp.array\(Q\)\[t\]"):
        fg.vmap(lambda t: Q[t])(t)
    np.testing.assert_array_equal(fg.vmap(lambda t: fnp.take(Q, t, axis=0))(t), Q[t])
    np.testing.assert_array_equal(fg.vmap(lambda t: fnp.array(Q)[t])(t), Q[t])
