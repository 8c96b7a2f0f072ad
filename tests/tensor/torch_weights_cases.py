"""What tests/tensor/test_torch_weights.py and tests/fixtures/make_torch_weights.py share: the
object ``ft.save`` writes (deterministic values, every kind of leaf), built with ``ft`` given."""

from __future__ import annotations

import collections

import numpy as np


def ft_saved_object(ft):
    w = ft.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
    return collections.OrderedDict([
        ("w", w), ("wt", w.t()), ("p", ft.nn.Parameter(ft.tensor([0.5, -1.0]))),
        ("frozen", ft.nn.Parameter(ft.tensor([2.0]), requires_grad=False)),
        ("grad", ft.tensor([1.0, 2.0], requires_grad=True)),
        ("f64", ft.tensor([1.25], dtype=ft.float64)), ("f16", ft.tensor([0.5, 65504.0], dtype=ft.float16)),
        ("i64", ft.tensor([-(2**40), 3])), ("i32", ft.tensor([7], dtype=ft.int32)),
        ("i16", ft.tensor([-3], dtype=ft.int16)), ("i8", ft.tensor([-128], dtype=ft.int8)),
        ("u8", ft.tensor([255], dtype=ft.uint8)), ("b", ft.tensor([True, False])),
        ("c64", ft.tensor([1 + 2j], dtype=ft.complex64)), ("c128", ft.tensor([3 - 1j], dtype=ft.complex128)),
        ("scalar", ft.tensor(2.5)), ("empty", ft.zeros(0, 3)),
        ("meta", [1, 2**40, -5, 2.5, None, "text", True, (3, "x"), ft.Size([2, 3]), ft.float16, {0: "int key"},
                  1 + 2j]),
        ("plain", {"epoch": 3, "lr": 0.1}),
    ])


def safetensors_object(ft):
    return {"w": ft.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), "wt": ft.tensor([[1.0, 2.0]]).t(),
            "h": ft.tensor([0.25], dtype=ft.float16), "i": ft.tensor([-(2**40)]), "b": ft.tensor([True]),
            "c": ft.tensor([1 + 1j], dtype=ft.complex64), "s": ft.tensor(2.0, dtype=ft.float64),
            "e": ft.zeros(0, 2)}
