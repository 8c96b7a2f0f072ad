"""The Tensor methods of the torch-breadth work on shapes, indexing, linear algebra, dtypes and sampling
(issue 29, part B), gathered in one mixin so that ``Tensor``'s class statement names them once.

Example::

    ft.zeros(3).index_add(0, ft.tensor([0, 0]), ft.ones(2))     # _ScatterMixin
    ft.eye(2).kron(ft.ones(2, 2))                                # _ReshapingMixin
"""

from __future__ import annotations

from ._tensor_linalg import _LinalgMixin
from ._tensor_properties import _PropertiesMixin
from ._tensor_reshaping import _ReshapingMixin
from ._tensor_scatter import _ScatterMixin
from ._tensor_sets import _SetsMixin
from .tensor_type import TensorT


class _BreadthMixinB(_ScatterMixin[TensorT], _ReshapingMixin[TensorT], _LinalgMixin[TensorT], _PropertiesMixin[TensorT],
                     _SetsMixin[TensorT]):
    __slots__ = ()
