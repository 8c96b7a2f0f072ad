"""The replay keeps its large temporaries in a per-thread workspace from call to call (issue 26: the
Transformer step's two 2 MiB feed-forward products faulted in all their pages at every step). Nothing the
caller receives may live there: no output, no view of a temporary that is returned, nothing written into
such a buffer; and no two running calls may share one (threads, a call while another holds them)."""

import threading

import numpy as np

import funcgrad as fg
import funcgrad.nn as fnn
import funcgrad.numpy as fnp
from funcgrad.jit.numpy_replay import compile_program
import pytest

from funcgrad.jit import workspace
from funcgrad.jit.workspace import HUGE_PAGE, WORKSPACE_BYTES, Workspace, make_buffers, reachable_from_outputs

rng = np.random.default_rng(11)
ROWS, WIDE = 32, 2048  # a (32, 2048) float32 temporary: 256 KiB, WORKSPACE_BYTES


def _ff_loss(p, x):
    h = fnn.relu(fnn.linear(x, p["w1"], p["b1"]))
    return fnp.sum(fnn.linear(h, p["w2"], p["b2"]) ** 2)


def _ff():
    p = {"w1": 0.1 * rng.standard_normal((WIDE, 16)), "b1": rng.standard_normal(WIDE),
         "w2": 0.1 * rng.standard_normal((8, WIDE)), "b2": rng.standard_normal(8)}
    x = rng.standard_normal((2, ROWS // 2, 16))
    return {k: v.astype(np.float32) for k, v in p.items()}, x.astype(np.float32)


def _compiled(fn, *args):
    return compile_program(fg.make_program(fn)(*args))


def test_the_feed_forward_products_live_in_the_workspace_and_the_gradients_are_right():
    p, x = _ff()
    assert ROWS * WIDE * 4 >= WORKSPACE_BYTES
    run = _compiled(fg.grad(_ff_loss), p, x)
    assert run.source.count("out=_w[") >= 2, run.source  # the dense output and the cotangent g @ w2
    want = fg.grad(_ff_loss)(p, x)
    jitted = fg.jit(fg.grad(_ff_loss), backend="numpy")
    first = jitted(p, x)
    kept = {k: v.copy() for k, v in first.items()}
    p2, x2 = _ff()
    second = jitted(p2, x2)  # the same buffers again: the first call's results must not change
    for k in want:
        np.testing.assert_allclose(first[k], want[k], rtol=2e-5, atol=1e-5)
        np.testing.assert_array_equal(first[k], kept[k])
        assert not np.shares_memory(first[k], second[k])
    want2 = fg.grad(_ff_loss)(p2, x2)
    for k in want2:
        np.testing.assert_allclose(second[k], want2[k], rtol=2e-5, atol=1e-5)


def test_outputs_and_views_of_temporaries_never_live_in_the_workspace():
    x = rng.standard_normal((ROWS, 16)).astype(np.float32)
    w = rng.standard_normal((WIDE, 16)).astype(np.float32)

    def returns_the_product(x, w):
        return fnn.relu(fnn.linear(x, w, None))

    def returns_a_view(x, w):
        h = fnn.relu(fnn.linear(x, w, None))
        return fnp.reshape(h, (-1,))[::2], fnp.sum(h)

    for f in (returns_the_product, returns_a_view):
        assert "_w[" not in _compiled(f, x, w).source
        jitted = fg.jit(f, backend="numpy")
        a = jitted(x, w)
        keep = [np.array(v) for v in fg.tree_util.tree_leaves(a)]
        jitted(2 * x, w)
        for v, k in zip(fg.tree_util.tree_leaves(a), keep):
            np.testing.assert_array_equal(v, k)


def test_threads_each_get_their_own_buffers():
    p, x = _ff()
    jitted = fg.jit(fg.grad(_ff_loss), backend="numpy")
    jitted(p, x)
    inputs = [(p, (x * (1 + i)).astype(np.float32)) for i in range(3)]
    wants = [fg.grad(_ff_loss)(pi, xi) for pi, xi in inputs]
    got: dict[int, list] = {}

    def work(i):
        got[i] = [jitted(*inputs[i]) for _ in range(3)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, want in enumerate(wants):
        for g in got[i]:
            for k in want:
                np.testing.assert_allclose(g[k], want[k], rtol=2e-5, atol=1e-4)


def test_a_call_while_the_buffers_are_taken_makes_new_ones():
    ws = Workspace([((3, 4), np.dtype("float32")), ((5,), np.dtype("float64"))])
    a = ws.take()
    b = ws.take()  # (a nested call, or one after a call that raised)
    assert [x.shape for x in a] == [(3, 4), (5,)] and a[1].dtype == np.float64
    assert not any(np.shares_memory(u, v) for u, v in zip(a, b))
    ws.give(a)
    other: list = []
    worker = threading.Thread(target=lambda: other.append(ws.take()))  # another thread: its own buffers
    worker.start()
    worker.join()
    assert other[0] is not a and not np.shares_memory(other[0][0], a[0])
    assert ws.take() is a  # this thread's, handed back
    assert ws.take() is not a  # taken: a second call makes new ones
    assert ws.nbytes == 3 * 4 * 4 + 5 * 8


@pytest.mark.parametrize("huge", [True, False])
def test_buffers_filling_a_huge_page_share_one_aligned_mapping_and_never_overlap(monkeypatch, huge):
    monkeypatch.setattr(workspace, "HUGE_PAGES", huge)
    slots = [((256, 2048), np.dtype("float32")), ((3,), np.dtype("float64")), ((8, 32, 2048), np.dtype("float32")),
             ((5, 7), np.dtype("int16"))]
    bufs = make_buffers(slots)
    for b, (shape, dtype) in zip(bufs, slots):
        assert b.shape == shape and b.dtype == dtype and b.flags.c_contiguous and b.flags.writeable
        assert b.ctypes.data % (64 if huge and workspace.HUGE_PAGES else b.dtype.alignment) == 0
    assert not any(np.shares_memory(u, v) for i, u in enumerate(bufs) for v in bufs[i + 1:])
    for k, b in enumerate(bufs):
        b[...] = k + 1
    assert [int(b.reshape(-1)[-1]) for b in bufs] == [1, 2, 3, 4] and bufs[0].sum() == 256 * 2048
    if huge and workspace.HUGE_PAGES:  # (one mapping, starting on a huge page)
        assert bufs[0].ctypes.data % HUGE_PAGE == 0 and bufs[2].base is not None
    small = make_buffers([((4, 4), np.dtype("float32"))])  # below a huge page: a plain array
    assert small[0].base is None and small[0].shape == (4, 4)


def test_a_mapping_that_fails_gives_plain_arrays(monkeypatch):
    monkeypatch.setattr(workspace, "HUGE_PAGES", True)
    monkeypatch.setattr(workspace, "_huge_page_region", lambda nbytes: None)
    bufs = make_buffers([((512, 1024), np.dtype("float32"))])
    assert bufs[0].base is None and bufs[0].shape == (512, 1024) and bufs[0].flags.writeable


def test_reachable_from_outputs_follows_views_and_in_place_writes_but_not_products():
    x = rng.standard_normal((8, 8))

    def f(x):
        t = fnp.tanh(x)  # an elementwise call may write into its argument: t is shared with u
        u = fnp.sin(t)
        m = t @ t  # a product: a new array
        return fnp.reshape(u, (-1,)), m

    prog = fg.make_program(f)(x)
    shared = reachable_from_outputs(prog, lambda e: e.prim.name == "matmul")
    by_prim = {e.prim.name: e.outs[0] for e in prog.eqns}
    assert id(by_prim["tanh"]) in shared and id(by_prim["sin"]) in shared
    assert id(prog.invars[0]) in shared
    nothing = reachable_from_outputs(prog, lambda e: True)
    assert id(by_prim["tanh"]) not in nothing
