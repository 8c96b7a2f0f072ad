"""``ft.nn.SyncBatchNorm``: batch normalization whose statistics are those of the whole global batch.

In one process the global batch is the local one, so it is ``BatchNorm`` of any rank (inputs
``(N, C, *)``) and trains and evaluates exactly so; ``convert_sync_batchnorm`` swaps a model's batch norms
for it, keeping their parameters and buffers, as in PyTorch. Across several processes
(``ft.distributed`` initialized with more than one rank) the statistics would have to be reduced over the
ranks during training; that is not offered, and a training step there says so rather than normalize with
the local statistics.

Example::

    model = ft.nn.SyncBatchNorm.convert_sync_batchnorm(model)
"""

from __future__ import annotations

from typing import Any

from .. import distributed as _dist
from ..tensor import Tensor
from .module import Module
from .norm import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over ``(N, C, *)`` with the global batch's statistics (one process: the local batch).

    Example: ``ft.nn.SyncBatchNorm(16)(x)``.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, x: Tensor) -> None:
        if x.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {x.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        if self.training and _dist.is_initialized() and _dist.get_world_size(self.process_group) > 1:
            raise NotImplementedError("SyncBatchNorm across several processes (reducing the batch statistics over "
                                      "the ranks) is not supported by funcgrad.tensor; use BatchNorm (per-rank "
                                      "statistics) or train with one process")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` replaced by a ``SyncBatchNorm`` holding its parameters and buffers.

        Example: ``model = ft.nn.SyncBatchNorm.convert_sync_batchnorm(model)``.
        """
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            for name in ("weight", "bias"):
                if getattr(module, name, None) is not None:
                    setattr(out, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out.register_buffer(name, getattr(module, name))
            out.train(module.training)
        for name, child in list(module._modules.items()):
            if child is not None:
                out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
