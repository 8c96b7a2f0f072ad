import pytest

import funcgrad.tensor as ft


@pytest.fixture(autouse=True)
def _reset_tensor_state():
    """Each test starts with PyTorch's defaults: float32, grad mode on, anomaly off."""
    ft.set_default_dtype(ft.float32)
    ft.manual_seed(0)
    yield
    ft.set_default_dtype(ft.float32)
    ft.autograd.set_detect_anomaly(False)
    assert ft.is_grad_enabled(), "a test left grad mode off"
