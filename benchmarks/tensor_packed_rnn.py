"""An LSTM/GRU on a ``PackedSequence`` (step by step, states frozen past each length) against the same
module on the padded tensor (issue 29, session 8).

Run: ``python benchmarks/tensor_packed_rnn.py``. Batch 16, 50 steps, 32 inputs, 64 hidden, float32,
lengths 10..50; the minimum over 5 repeats of forward + ``sum().backward()``, in milliseconds of wall
time and of this process's CPU time (``time.process_time``: steadier on a shared machine; run with
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` so the two measure the same work).
"""
import os
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import funcgrad.tensor as ft  # noqa: E402
from funcgrad.tensor.nn.utils.rnn import pack_padded_sequence  # noqa: E402


def main() -> None:
    ft.manual_seed(0)
    x = ft.randn(16, 50, 32, requires_grad=True)
    lengths = np.linspace(10, 50, 16).astype(int)
    for mode in ("LSTM", "GRU"):
        module = getattr(ft.nn, mode)(32, 64, batch_first=True)

        def padded() -> None:
            module(x)[0].sum().backward()

        def packed() -> None:
            module(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))[0].data.sum().backward()

        for name, step in (("padded tensor", padded), ("PackedSequence", packed)):
            best = min(timeit.repeat(step, number=1, repeat=5))
            cpu = min(timeit.repeat(step, number=1, repeat=5, timer=time.process_time))
            print(f"{mode} {name}: {best * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms CPU")


if __name__ == "__main__":
    main()
