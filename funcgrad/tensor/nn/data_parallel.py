"""``ft.nn.DataParallel``: PyTorch's single-process wrapper, for code that wraps its model in it.

On one device (the CPU, or a single GPU) PyTorch's ``DataParallel`` calls the wrapped module directly,
and so does this one: the output and gradients are the module's, and the ``state_dict`` keys carry
the ``module.`` prefix, so checkpoints saved from a wrapped torch model load. Splitting a batch over
several GPUs in one process is not offered: ``ft.nn.parallel.DistributedDataParallel`` (one process
per device) is the way to use several devices.

Example::

    model = ft.nn.DataParallel(Net())
    loss = model(x).sum(); loss.backward()
    model.module.fc.weight.grad
"""

from __future__ import annotations

from typing import Any

from .module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Calls ``module`` on the inputs (one device); several ``device_ids`` are refused with the alternative.

    Example: ``ft.nn.DataParallel(ft.nn.Linear(4, 2))(x)``.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        ids = list(device_ids) if device_ids is not None else []
        if len(ids) > 1:
            raise NotImplementedError(f"DataParallel over several devices ({ids}) in one process is not supported by "
                                      f"funcgrad.tensor; use ft.nn.parallel.DistributedDataParallel with one process "
                                      f"per device")
        self.module = module
        self.device_ids, self.output_device, self.dim = ids, output_device, dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
