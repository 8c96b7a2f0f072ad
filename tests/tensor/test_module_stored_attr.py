"""``stored_attr``: a forward's parameter and buffer reads from their stores give what ``getattr`` gives."""

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.tensor.nn.module import stored_attr


def test_parameters_buffers_and_plain_attributes_read_as_getattr():
    bn = ft.nn.BatchNorm2d(3)
    for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked", "eps", "training"):
        assert stored_attr(bn, name) is getattr(bn, name)
    lin = ft.nn.Linear(2, 3, bias=False)
    assert stored_attr(lin, "bias") is None and stored_attr(lin, "weight") is lin.weight


def test_a_weight_replaced_by_a_plain_tensor_is_read_where_it_now_lives():
    lin = ft.nn.Linear(2, 3)
    del lin.weight  # (as weight-norm style code does: the name leaves the parameters)
    w = ft.ones(3, 2)
    lin.weight = w
    assert stored_attr(lin, "weight") is w
    out = lin(ft.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), 2.0 + lin.bias.detach().numpy()[None])


def test_a_missing_name_raises_as_getattr_does():
    lin = ft.nn.Linear(2, 3)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nothing'"):
        stored_attr(lin, "nothing")


def test_a_subclass_property_is_left_to_getattr():
    class Scaled(ft.nn.Linear):
        @property
        def scale(self):
            return 2.0

    m = Scaled(2, 2)
    assert stored_attr(m, "scale") == 2.0
