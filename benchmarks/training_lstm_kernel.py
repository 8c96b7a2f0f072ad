"""Time the LSTM sequence kernel alone (issue 26): forward, and forward + backward, of ``lstm_sequence``'s raw
functions at the training benchmark's size (T, N, I, H) = (20, 16, 32, 64), float32; min and median CPU time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/training_lstm_kernel.py [TREE] [--repeat 200]

``TREE`` (default: this checkout) is the root of a funcgrad source tree, so two trees can be compared in turn.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    from funcgrad.nn.kernels import recurrent

    T, N, I, H = 20, 16, 32, 64
    rng = np.random.default_rng(0)
    f32 = np.float32
    xs = rng.standard_normal((T, N, I)).astype(f32)
    h0, c0 = np.zeros((N, H), f32), np.zeros((N, H), f32)
    w_ih, w_hh = (0.1 * rng.standard_normal((4 * H, I))).astype(f32), (0.1 * rng.standard_normal((4 * H, H))).astype(f32)
    b_ih, b_hh = (0.1 * rng.standard_normal(4 * H)).astype(f32), (0.1 * rng.standard_normal(4 * H)).astype(f32)
    ghs, gc = rng.standard_normal((T, N, H)).astype(f32), rng.standard_normal((N, H)).astype(f32)
    inputs = (xs, h0, c0, w_ih, w_hh, b_ih, b_hh)

    def forward() -> None:
        recurrent._lstm_sequence_raw(*inputs)

    def forward_backward() -> None:
        recurrent._lstm_sequence_raw(*inputs)
        recurrent._lstm_sequence_backward_raw(*inputs, ghs, gc)

    print(recurrent.__file__)
    for name, fn in (("forward", forward), ("forward + backward", forward_backward)):
        times = []
        for _ in range(args.repeat):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        print(f"{name:20s} min {1e3 * min(times):.3f} ms  median {1e3 * float(np.median(times)):.3f} ms")


if __name__ == "__main__":
    main()
