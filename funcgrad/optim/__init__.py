"""funcgrad.optim: optimizers as pure functions over pytrees (optax-style).

An optimizer is a :class:`GradientTransformation` ``(init, update)``; its
state is a pytree (save it with ``fg.save``). Build your own with
:func:`chain` from the transformations here.

Example::

    import funcgrad as fg
    opt = fg.optim.adam(1e-3)
    state = opt.init(params)
    for x, y in batches:
        grads = fg.grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        params = fg.optim.apply_updates(params, updates)
"""

from __future__ import annotations

from .base import (  # noqa: F401
    EmptyState, GradientTransformation, apply_updates, chain, global_norm, identity, stateless, tree_vdot,
)
from .transforms import (  # noqa: F401
    MaskedState, ScaleByAdamState, ScaleByRmsState, ScaleByRssState, ScaleByScheduleState, ScaleState,
    TraceState, add_decayed_weights, clip, clip_by_global_norm, masked, scale, scale_by_adam,
    scale_by_learning_rate, scale_by_rms, scale_by_rss, scale_by_schedule, trace,
)
from .schedules import (  # noqa: F401
    Schedule, constant_schedule, cosine_decay_schedule, exponential_decay, join_schedules, linear_schedule,
    piecewise_constant_schedule, warmup_cosine_decay_schedule, warmup_exponential_decay_schedule,
    warmup_schedule,
)
from .adaptive import (  # noqa: F401
    MomentumState, ScaleByAdadeltaState, ScaleByAdamaxState, ScaleByAmsgradState, momentum, scale_by_adadelta,
    scale_by_adamax, scale_by_amsgrad, scale_by_nadam, scale_by_radam,
)
from .aliases import adagrad, adam, adamw, rmsprop, sgd  # noqa: F401
from .lbfgs import LbfgsState, MinimizeInfo, lbfgs, minimize_lbfgs  # noqa: F401

__all__ = [
    "GradientTransformation", "EmptyState", "identity", "stateless", "chain", "apply_updates",
    "global_norm", "tree_vdot",
    "scale", "scale_by_schedule", "scale_by_learning_rate", "trace", "scale_by_adam", "scale_by_rms",
    "scale_by_rss", "add_decayed_weights", "clip_by_global_norm", "clip", "masked",
    "ScaleState", "ScaleByScheduleState", "TraceState", "ScaleByAdamState", "ScaleByRmsState",
    "ScaleByRssState", "MaskedState",
    "Schedule", "constant_schedule", "linear_schedule", "cosine_decay_schedule", "exponential_decay",
    "warmup_schedule", "warmup_cosine_decay_schedule", "warmup_exponential_decay_schedule",
    "piecewise_constant_schedule", "join_schedules",
    "scale_by_amsgrad", "scale_by_adamax", "scale_by_nadam", "scale_by_radam", "scale_by_adadelta", "momentum",
    "ScaleByAmsgradState", "ScaleByAdamaxState", "ScaleByAdadeltaState", "MomentumState",
    "sgd", "adam", "adamw", "rmsprop", "adagrad", "lbfgs", "minimize_lbfgs", "LbfgsState", "MinimizeInfo",
]
