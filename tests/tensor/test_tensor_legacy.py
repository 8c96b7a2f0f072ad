"""The legacy typed constructors (``ft.FloatTensor`` ...)."""

import numpy as np
import pytest

import funcgrad.tensor as ft


@pytest.mark.parametrize("cls, dtype, data", [
    (ft.DoubleTensor, np.float64, [0.1, 1e-300, 2]),
    (ft.FloatTensor, np.float32, [0.1, 3]),
    (ft.HalfTensor, np.float16, [0.1, 60000.0]),
    (ft.LongTensor, np.int64, [1.7, -1.7, 3]),
    (ft.ByteTensor, np.uint8, [True, 2]),
])
def test_legacy_constructor_data_in_its_dtype(cls, dtype, data):
    t = cls(data)
    assert t.dtype == dtype and isinstance(t, cls)
    expected = np.array(data, dtype=np.float64).astype(dtype) if np.dtype(dtype).kind == "f" else \
        np.trunc(np.array(data, dtype=np.float64)).astype(dtype)
    np.testing.assert_array_equal(t.numpy(), expected)  # float64 keeps every digit (was rounded through float32)


def test_legacy_constructor_sizes_and_errors():
    assert ft.FloatTensor(2, 3).shape == (2, 3) and ft.LongTensor(ft.Size([4])).shape == (4,)
    assert ft.DoubleTensor().shape == (0,)
    with pytest.raises(TypeError, match="expected sizes"):
        ft.FloatTensor([1.0], [2.0])
