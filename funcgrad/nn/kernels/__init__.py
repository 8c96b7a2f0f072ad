"""Layer kernels: the primitives behind funcgrad.nn's convolution, pooling, normalization,
recurrent and attention layers, one module per family.

Each kernel is a primitive declared once with its VJP, JVP and batching rule; rules are
written with primitives (the kernels' own transposes or funcgrad.numpy), so every kernel
differentiates again. ``funcgrad.nn`` builds its layers on them and ``funcgrad.tensor.nn``
reaches them through ``funcgrad.nn``.
"""
