"""``ft.nn.init`` (``import funcgrad.tensor.nn.init``): in-place initialisers."""

from . import _Init as _I

uniform_ = _I.uniform_
normal_ = _I.normal_
zeros_ = _I.zeros_
ones_ = _I.ones_
constant_ = _I.constant_
xavier_uniform_ = _I.xavier_uniform_
xavier_normal_ = _I.xavier_normal_
kaiming_uniform_ = _I.kaiming_uniform_
kaiming_normal_ = _I.kaiming_normal_

__all__ = ["uniform_", "normal_", "zeros_", "ones_", "constant_", "xavier_uniform_", "xavier_normal_",
           "kaiming_uniform_", "kaiming_normal_"]
