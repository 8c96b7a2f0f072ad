"""What nodes save: each primitive's declared ``reads`` is checked against saving
everything; saved-tensor hooks (to disk and back), save_on_cpu."""

import importlib
import os
import pkgutil

import numpy as np
import pytest

import funcgrad.numpy as fnp
import funcgrad.scipy as fsp
import funcgrad.scipy.signal as fsignal
import funcgrad.tensor as ft
from funcgrad.core import get_primitive
from funcgrad.testing import save_everything

# one Tensor-level call per primitive whose declaration says what its rules read
CALLS = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "negative": lambda a, b: -a * b,
    "positive": lambda a, b: a * b, "sum": lambda a, b: (a * b).sum(0), "reshape": lambda a, b: a.reshape(-1) * 2,
    "broadcast_to": lambda a, b: a[:1].expand(3, 4) * b, "expand_dims": lambda a, b: a.unsqueeze(0) * 2,
    "squeeze": lambda a, b: a[:1].squeeze(0) * b[0], "transpose": lambda a, b: a.permute(1, 0) * 2,
    "swapaxes": lambda a, b: a.transpose(0, 1) * 2, "moveaxis": lambda a, b: a.movedim(0, 1) * 2,
    "conjugate": lambda a, b: (a * 1j).conj().real * b, "copy": lambda a, b: a.clone() * b,
    "astype": lambda a, b: a.float().double() * b, "getitem": lambda a, b: a[1:, [0, 2]] * 2,
    "where": lambda a, b: fnp.where(a > 0, a, b),  # the condition is a (non-differentiable) tensor here
    "cumsum": lambda a, b: a.cumsum(1) * b,
    "index_set": lambda a, b: fnp.indexing.IndexUpdateRef(a, [0, 2]).set(b[1:] * 2) * b,
    "flip": lambda a, b: a.flip(0) * b, "real": lambda a, b: (a * (1 + 1j)).real * b,
    "imag": lambda a, b: (a * (1 + 1j)).imag * b, "multiply": lambda a, b: a * b,
    "matmul": lambda a, b: a @ b.t(), "dot": lambda a, b: a[0].dot(b[0]) * a[1], "divide": lambda a, b: a / (b * b + 1),
    "sin": lambda a, b: a.sin() * b, "cos": lambda a, b: a.cos() * b, "log": lambda a, b: (a * a + 1).log() * b,
    "square": lambda a, b: a.square() * b, "log1p": lambda a, b: (a * a).log1p() * b, "exp": lambda a, b: a.exp() * b,
    "tanh": lambda a, b: a.tanh() * b, "sqrt": lambda a, b: (a * a + 1).sqrt() * b,
    "expm1": lambda a, b: a.expm1() * b,
    "arccos": lambda a, b: fnp.arccos(a * 0.3) * b, "arccosh": lambda a, b: fnp.arccosh(a * a + 1.5) * b,
    "arcsin": lambda a, b: fnp.arcsin(a * 0.3) * b, "arcsinh": lambda a, b: fnp.arcsinh(a) * b,
    "arctan": lambda a, b: fnp.arctan(a) * b, "arctanh": lambda a, b: fnp.arctanh(a * 0.3) * b,
    "cbrt": lambda a, b: fnp.cbrt(a * a + 1) * b, "cosh": lambda a, b: fnp.cosh(a) * b,
    "sinh": lambda a, b: fnp.sinh(a) * b, "tan": lambda a, b: fnp.tan(a * 0.3) * b,
    "exp2": lambda a, b: fnp.exp2(a) * b, "log2": lambda a, b: fnp.log2(a * a + 1) * b,
    "log10": lambda a, b: fnp.log10(a * a + 1) * b, "reciprocal": lambda a, b: fnp.reciprocal(a * a + 1) * b,
    "ldexp": lambda a, b: fnp.ldexp(a, 2) * b, "mean": lambda a, b: (a * b).mean(0),
    "var": lambda a, b: (a * b).var(0) + fnp.var(a * b, axis=1, ddof=1).sum(),
    "diagonal": lambda a, b: fnp.diagonal(a * b, 0, 0, 1) * fnp.diagonal(b),
    "sinc": lambda a, b: fnp.sinc(a) * b, "sinc_derivative": lambda a, b: fnp.sinc(a * b),
    "fft_c2c": lambda a, b: fnp.fft.fft(a * (1 + 1j)).real * b,
    "fft_r2c": lambda a, b: fnp.fft.rfft(a).imag[:, :3] * b[:, :3],
    "fft_c2r": lambda a, b: fnp.fft.irfft(a * (1 + 1j), 4) * b,
    "convolve": lambda a, b: fsignal.convolve(a, b, mode="same") * b,
    "concatenate": lambda a, b: ft.cat([a, b * 2, a.double()]) * 3, "stack": lambda a, b: ft.stack([a * b, b], 1) * 2,
}


def _declared_reads() -> set:
    """Names of funcgrad.numpy's and funcgrad.scipy's primitives whose declaration has ``reads``
    (the collectives of funcgrad.distributed, which need a communicator, are tested there)."""
    names = set()
    for pkg in (fnp, fsp):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(info.name)
            for value in vars(mod).values():
                try:
                    prim = get_primitive(value)
                except TypeError:
                    continue
                if prim.reads is not None:
                    names.add(prim.name)
    return names


def test_every_declared_reads_has_a_check():
    declared = _declared_reads()
    assert {"add", "multiply", "getitem", "reshape", "exp"} <= declared
    assert declared <= set(CALLS), sorted(declared - set(CALLS))


def _grads(f, a, b):
    out = f(a, b)
    s = (out * out).sum() if not out.is_complex() else (out * out.conj()).real.sum()
    ga, gb = ft.autograd.grad(s, (a, b), create_graph=True, allow_unused=True, materialize_grads=True)
    hh = ft.autograd.grad((ga * ga).sum() + (gb * gb).sum(), (a, b), allow_unused=True, materialize_grads=True)
    return [g.detach().numpy() for g in (ga, gb) + tuple(hh)]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_saved_table_matches_saving_everything(name):
    """Saving only what the declaration's ``reads`` says gives the same first and second
    derivatives as saving everything."""
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    results = []

    def run():
        for req in ((True, True), (True, False), (False, True)):
            a = ft.tensor(a0, requires_grad=req[0])
            b = ft.tensor(b0, requires_grad=req[1])
            if not (req[0] and req[1]):
                a.requires_grad_(True)
                b.requires_grad_(True)
            results.append(_grads(CALLS[name], a, b))

    run()
    with save_everything():
        run()
    n = len(results) // 2
    for got, want in zip(results[:n], results[n:]):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_add_saves_nothing_so_inplace_on_its_input_is_fine():
    x = ft.randn(3, requires_grad=True)
    a = x * 1
    b = a + 1  # AddBackward0 saves nothing (as in PyTorch)
    a.mul_(2)
    b.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_saved_tensors_hooks_to_disk(tmp_path):
    ft.manual_seed(0)
    x = ft.randn(5, 4, requires_grad=True)
    w = ft.randn(4, 3, requires_grad=True)
    files = []

    def pack(t):
        name = os.path.join(tmp_path, f"{len(files)}.npy")
        np.save(name, t.detach().numpy())
        files.append(name)
        return name

    def unpack(name):
        return ft.from_numpy(np.load(name))

    def loss():
        return ((x @ w).tanh() * (x @ w).sin()).sum()

    loss().backward()
    want = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    with ft.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = loss()
    assert len(files) >= 4  # the matmul inputs, tanh result, sin input, ...
    y.backward()
    assert x.grad.equal(want[0]) and w.grad.equal(want[1])  # identical gradients


def test_saved_tensors_hooks_double_backward_and_nesting():
    x = ft.tensor([1.0, 2.0], requires_grad=True, dtype=ft.float64)
    calls = []
    with ft.autograd.graph.saved_tensors_hooks(lambda t: (calls.append("outer"), t)[1], lambda t: t):
        with ft.autograd.graph.saved_tensors_hooks(lambda t: (calls.append("inner"), t * 1)[1], lambda t: t):
            y = (x * x * x).sum()
    assert calls and set(calls) == {"inner"}
    (g,) = ft.autograd.grad(y, x, create_graph=True)
    (h,) = ft.autograd.grad(g.sum(), x)
    assert g.tolist() == [3.0, 12.0] and h.tolist() == [6.0, 12.0]
    with pytest.raises(TypeError, match="callable"):
        ft.autograd.graph.saved_tensors_hooks(None, lambda t: t)
    with ft.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        z = x.exp().sum()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor"):
        z.backward()
    with ft.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with ft.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


def test_save_on_cpu():
    x = ft.randn(3, requires_grad=True)
    with ft.autograd.graph.save_on_cpu(pin_memory=False):
        y = (x.exp() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), (np.exp(x.detach().numpy()) * (1 + x.detach().numpy())), rtol=1e-6)


def test_version_check_applies_with_hooks():
    x = ft.randn(3, requires_grad=True)
    a = x * 1
    with ft.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        b = a.sin()
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
