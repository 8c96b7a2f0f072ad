"""``ft.optim``: PyTorch-style optimizers on ``funcgrad.optim``'s maths, ``LBFGS``, and ``lr_scheduler``.

Example::

    opt = ft.optim.AdamW(model.parameters(), lr=1e-3)
    sched = ft.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        sched.step()
"""

from __future__ import annotations

from .optimizer import (  # noqa: F401
    SGD, Adadelta, Adagrad, Adam, Adamax, AdamW, NAdam, Optimizer, RAdam, RMSprop,
)
from .lbfgs import LBFGS  # noqa: F401
from .direct import ASGD, Rprop  # noqa: F401
from .matrix_optimizers import Adafactor, Muon, SparseAdam  # noqa: F401
from . import lr_scheduler  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
           "Rprop", "ASGD", "Adafactor", "Muon", "SparseAdam", "lr_scheduler"]
