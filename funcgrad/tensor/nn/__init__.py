"""``ft.nn``: PyTorch-style (mutable, stateful) modules over Tensors.

``Module`` registers ``Parameter`` attributes and sub-modules automatically,
as ``torch.nn.Module`` does. Activations and losses reuse the maths of
``funcgrad.nn`` (the functional layer): the Tensors are handed to it as
recorded NumPy-semantics boxes, so its functions record on the tensor graph
and the formulas live in one place. Initialisation follows PyTorch's
defaults (``funcgrad.nn.init.torch_default``) drawn from ``ft``'s generator,
so ``ft.manual_seed`` makes models reproducible.

Example::

    model = ft.nn.Sequential(ft.nn.Linear(64, 32), ft.nn.ReLU(), ft.nn.Linear(32, 10))
    loss = ft.nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
"""

from __future__ import annotations

from .parameter import Parameter
from .module import Module, RemovableHandle
from .layers import GELU, Flatten, Identity, Linear, ReLU, Sequential
from . import functional, init, utils  # noqa: F401  (modules: import funcgrad.tensor.nn.functional as F)
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList
from .data_parallel import DataParallel
from .sync_batchnorm import SyncBatchNorm
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss
from .activation import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .sparse import Embedding, EmbeddingBag
from .rnn import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .window_layers import *  # noqa: F401,F403
from .transformer_decoder import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .ranking_loss_layers import *  # noqa: F401,F403
from . import activation, conv, dropout, loss, misc, norm, pooling, rnn, transformer
from . import lazy, ranking_loss_layers, transformer_decoder, window_layers
from . import parallel  # noqa: F401  (ft.nn.parallel.DistributedDataParallel)

__all__ = [
    "Parameter", "Module", "Linear", "Sequential", "ModuleList", "ModuleDict", "Identity", "Flatten", "ReLU",
    "GELU", "Embedding", "EmbeddingBag",
    "functional", "init", "utils",
]
__all__ += ["ParameterList", "ParameterDict", "RemovableHandle", "Container", "DataParallel", "SyncBatchNorm",
            "AdaptiveLogSoftmaxWithLoss"]
for _layers in (activation, conv, pooling, norm, dropout, rnn, transformer, loss, misc, window_layers,
                ranking_loss_layers, transformer_decoder, lazy):
    __all__ += _layers.__all__
