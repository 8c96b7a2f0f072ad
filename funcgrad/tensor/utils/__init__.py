"""``ft.utils``: ``ft.utils.data`` (datasets and the DataLoader).

Example::

    from funcgrad.tensor.utils.data import DataLoader, TensorDataset
"""

from . import data  # noqa: F401

__all__ = ["data"]
