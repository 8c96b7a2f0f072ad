"""The functional tape keeps only what each primitive's ``reads`` declares (arrays big
enough to be dropped): derivatives to second order equal those of saving everything.
(The Tensor layer's counterpart: tests/tensor/test_tensor_saved.py.)"""

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.testing import save_everything

# functions of (a, b), arrays of shape (24, 24): 4.6 kB each, over the tape's drop threshold
CASES = {
    "reshape": lambda a, b: fnp.reshape(a, -1) * fnp.reshape(b, -1),
    "transpose": lambda a, b: fnp.transpose(a) * b, "swapaxes": lambda a, b: fnp.swapaxes(a, 0, 1) * b,
    "moveaxis": lambda a, b: fnp.moveaxis(a, 0, 1) * b,
    "expand_dims": lambda a, b: fnp.expand_dims(a, 0) * b, "squeeze": lambda a, b: fnp.squeeze(a[None]) * b,
    "broadcast_to": lambda a, b: fnp.broadcast_to(a[:1], (24, 24)) * b,
    "flip": lambda a, b: fnp.flip(a, 0) * b, "copy": lambda a, b: fnp.copy(a) * b,
    "astype": lambda a, b: fnp.astype(a, np.float32) * b, "cumsum": lambda a, b: fnp.cumsum(a * b, axis=1),
    "cumsum_flat": lambda a, b: fnp.cumsum(a * b),
    "real": lambda a, b: fnp.real(a * (1 + 1j)) * b, "imag": lambda a, b: fnp.imag(a * (1 + 1j)) * b,
    "imag_of_real": lambda a, b: fnp.imag(a) * b + a * b,
    "conjugate": lambda a, b: fnp.real(fnp.conj(a * 1j) * b),
    "getitem": lambda a, b: a[1:, [0, 2]] * b[1:, :2], "getitem_mask": lambda a, b: a[b > 0] * 2,
    "index_set": lambda a, b: a.at[2:5].set(b[:3] * 2) * b,
    "where": lambda a, b: fnp.where(a > 0, a, b) * b, "dot": lambda a, b: fnp.dot(a, b) * a,
    "dot_vec": lambda a, b: fnp.dot(a[0], b) * a[1],
    "diagonal": lambda a, b: fnp.diagonal(a * b, 1) * fnp.diagonal(b, 1, 1, 0),
    "var": lambda a, b: fnp.var(a * b, axis=0) * b[0] + fnp.var(a, axis=1, ddof=1, keepdims=True) * b,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_declared_reads_match_saving_everything(name):
    rng = np.random.default_rng(1)
    a0, b0 = rng.standard_normal((24, 24)), rng.standard_normal((24, 24))
    f = CASES[name]

    def loss(a, b):
        out = f(a, b)
        return fnp.sum(out * out)

    def second(a, b):
        ga, gb = fg.grad(loss, argnums=(0, 1))(a, b)
        return fnp.sum(ga * ga) + fnp.sum(gb * gb)

    got = [fg.grad(loss, argnums=(0, 1))(a0, b0), fg.grad(second, argnums=(0, 1))(a0, b0)]
    with save_everything():
        want = [fg.grad(loss, argnums=(0, 1))(a0, b0), fg.grad(second, argnums=(0, 1))(a0, b0)]
    for g, w in zip(got, want):
        for gi, wi in zip(g, w):
            np.testing.assert_allclose(gi, wi, rtol=1e-10, atol=1e-12)


def test_reshape_order_A_of_a_fortran_array_after_its_value_is_dropped():
    x = np.asfortranarray(np.arange(1024.0).reshape(32, 32))
    w = np.arange(1024.0)
    g = fg.grad(lambda x: fnp.sum(fnp.reshape(x, -1, order="A") * w))(x)
    np.testing.assert_array_equal(g, np.reshape(w, (32, 32), order="F"))


def test_save_everything_keeps_values_and_restores_on_exit():
    from funcgrad.core.reverse import ArraySpec, ReverseTrace

    x = np.ones(1024)

    def saved_ans():
        with ReverseTrace("t") as trace:
            return fnp.sin(trace.new_input(x))._node.ans  # sin's rule reads x, not its result

    assert isinstance(saved_ans(), ArraySpec)
    with save_everything():
        with save_everything():
            pass
        assert not isinstance(saved_ans(), ArraySpec)  # the inner block left the outer one on
    assert isinstance(saved_ans(), ArraySpec)
