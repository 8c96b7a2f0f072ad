"""How much of PyTorch's API ``funcgrad.tensor`` offers, from tests/fixtures/torch_api.json (names
recorded from torch by tests/fixtures/make_torch_api.py), and docs/tensor.md kept true to it.

``python tests/tensor/test_tensor_api_coverage.py`` prints the coverage table and the lists of
missing names that docs/tensor.md carries.
"""

from __future__ import annotations

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import funcgrad.tensor as ft  # noqa: E402

SPACES = {
    "torch": lambda: ft, "Tensor": lambda: ft.Tensor, "nn": lambda: ft.nn,
    "nn.functional": lambda: ft.nn.functional, "optim": lambda: ft.optim,
    "optim.lr_scheduler": lambda: ft.optim.lr_scheduler,
}


def coverage() -> dict:
    with open(os.path.join(ROOT, "tests", "fixtures", "torch_api.json")) as f:
        api = json.load(f)["api"]
    out = {}
    for space, names in api.items():
        ours = SPACES[space]()
        missing = [n for n in names if not hasattr(ours, n)]
        out[space] = (len(names) - len(missing), len(names), missing)
    return out


def report() -> str:
    lines = ["| namespace | ft has | torch has |", "|---|---|---|"]
    cov = coverage()
    for space, (have, total, _) in cov.items():
        lines.append(f"| `{space}` | {have} | {total} |")
    for space, (_, _, missing) in cov.items():
        lines.append("")
        lines.append(f"Missing from `{space}` ({len(missing)}): " + ", ".join(f"`{n}`" for n in missing))
    return "\n".join(lines)


def test_docs_carry_the_current_coverage():
    with open(os.path.join(ROOT, "docs", "tensor.md")) as f:
        doc = f.read()
    for space, (have, total, missing) in coverage().items():
        assert f"| `{space}` | {have} | {total} |" in doc, f"docs/tensor.md: coverage of {space} is out of date " \
            f"(run python tests/tensor/test_tensor_api_coverage.py)"
        m = re.search(rf"Missing from `{re.escape(space)}` \((\d+)\)", doc)
        assert m and int(m.group(1)) == len(missing), space


def test_the_names_tutorials_use_are_there():
    for name in ("set_default_device", "get_default_device", "manual_seed", "no_grad", "tensor", "randn", "cat",
                 "stack", "argmax", "softmax", "multinomial", "save", "load", "from_numpy", "compile"):
        assert hasattr(ft, name), name
    for name in ("Conv2d", "BatchNorm2d", "MaxPool2d", "Dropout", "LSTM", "GRU", "MultiheadAttention",
                 "TransformerEncoderLayer", "CrossEntropyLoss", "ModuleList", "ParameterDict", "LayerNorm"):
        assert hasattr(ft.nn, name), name
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"):
        assert hasattr(ft.optim, name), name


if __name__ == "__main__":
    print(report())
