"""The replay frees each large temporary after its last use (``del`` in the generated program), as eager
execution does, instead of holding every activation and cotangent until the program returns (issue 26:
that halved the page faults of the jitted 32x32 CNN training step, 5951 -> 2966 a step)."""

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.jit.numpy_replay import RELEASE_BYTES, compile_program


def _f(x, w):
    h = fnp.tanh(x @ w)
    return fnp.sum(fnp.sin(h) * h)


def test_large_temporaries_are_deleted_after_their_last_use_and_results_are_unchanged():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((128, 64)), rng.standard_normal((64, 128))  # 128 KiB temporaries
    prog = fg.make_program(fg.value_and_grad(_f, argnums=(0, 1)))(x, w)
    run = compile_program(prog)
    deleted = [line for line in run.source.splitlines() if line.strip().startswith("del ")]
    assert deleted and x.nbytes >= RELEASE_BYTES
    inputs = {v.name for v in prog.invars}
    outputs = {o.name for o in prog.outs}
    lines = run.source.splitlines()
    for k, line in enumerate(lines):
        if not line.strip().startswith("del "):
            continue
        for name in line.strip()[4:].split(", "):
            assert name not in inputs and name not in outputs
            later = " ".join(lines[k + 1:]).replace("(", " ").replace(")", " ").replace(",", " ").split()
            assert name not in later  # deleted right after its last reader
    value, (gx, gw) = fg.value_and_grad(_f, argnums=(0, 1))(x, w)
    got = run(x, w)
    np.testing.assert_allclose(got[0], value, rtol=1e-12)
    np.testing.assert_allclose(got[1], gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[2], gw, rtol=1e-12, atol=1e-12)
    again = run(x, w)  # the released names are bound afresh at every call
    np.testing.assert_allclose(again[1], gx, rtol=1e-12, atol=1e-12)


def test_small_programs_get_no_release_lines():
    x, w = np.ones((3, 4)), np.ones((4, 2))
    run = compile_program(fg.make_program(fg.grad(_f))(x, w))
    assert "del " not in run.source
