"""backward / autograd.grad semantics, errors, accumulation, higher order, complex, gradcheck of ops."""

import numpy as np
import pytest

import funcgrad.tensor as ft


def _x(*shape, seed=0, dtype=ft.float64):
    g = ft.Generator().manual_seed(seed)
    return ft.randn(*shape, generator=g, dtype=dtype).requires_grad_()


def test_backward_scalar_and_accumulation():
    x = ft.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    g = x.grad
    (x * x).sum().backward()
    assert x.grad is g and g.tolist() == [4.0, 8.0, 12.0]  # accumulated in place
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_backward_errors():
    x = ft.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ft.randn(3).sum().backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(ft.ones(2))
    s = (x.exp()).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        s.backward()
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (x * 1j).sum().backward()


def test_backward_with_gradient_and_retain_graph():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.backward(ft.tensor([1.0, 0.5]), retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * [1.0, 0.5], rtol=1e-6)
    y.backward(ft.tensor([1.0, 0.5]))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]) * [1.0, 0.5], rtol=1e-6)
    # a graph without saved tensors can be run twice (as in PyTorch)
    z = (x + 1).sum()
    z.backward()
    z.backward()


def test_autograd_backward_function_and_inputs():
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    b = ft.tensor([3.0, 4.0], requires_grad=True)
    ft.autograd.backward([(a * b).sum(), (a * a).sum()])
    assert a.grad.tolist() == [5.0, 8.0] and b.grad.tolist() == [1.0, 2.0]
    a.grad = b.grad = None
    (a * b).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None
    h = a * 2
    (h * b).sum().backward(inputs=[h])  # a non-leaf input gets .grad too
    assert h._grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
        (a * b).sum().backward(inputs=[])


def test_autograd_grad():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = ft.tensor([3.0], requires_grad=True)
    out = (x ** 3).sum()
    (gx,) = ft.autograd.grad(out, x, create_graph=True)
    assert gx.tolist() == [3.0, 12.0] and gx.requires_grad
    (hx,) = ft.autograd.grad(gx.sum(), x)
    assert hx.tolist() == [6.0, 12.0] and not hx.requires_grad
    assert x.grad is None  # grad() does not accumulate
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used in the graph"):
        ft.autograd.grad((x * 2).sum(), [x, y])
    gx, gy = ft.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert gy is None
    gx, gy = ft.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
    assert gy.tolist() == [0.0]
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ft.autograd.grad((x * 2).sum(), ft.ones(2))
    mid = x * 2
    (gm,) = ft.autograd.grad((mid * mid).sum(), mid)  # w.r.t. a non-leaf
    assert gm.tolist() == [4.0, 8.0]
    # grad_outputs for vector outputs; batched
    (g,) = ft.autograd.grad(x * x, x, ft.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 40.0]
    (jac,) = ft.autograd.grad(x * x, x, ft.eye(2), is_grads_batched=True)
    assert jac.tolist() == [[2.0, 0.0], [0.0, 4.0]]


def test_create_graph_grad_replaced_and_third_order():
    x = ft.tensor([0.5], requires_grad=True, dtype=ft.float64)
    y = x.tanh()
    y.backward(create_graph=True)
    g1 = x.grad
    assert g1.requires_grad and g1.grad_fn is not None
    t = np.tanh(0.5)
    assert g1.item() == pytest.approx(1 - t ** 2)
    x.grad = None
    (d1,) = ft.autograd.grad(y, x, create_graph=True)
    (d2,) = ft.autograd.grad(d1, x, create_graph=True)
    (d3,) = ft.autograd.grad(d2, x)
    assert d2.item() == pytest.approx(-2 * t * (1 - t ** 2))
    assert d3.item() == pytest.approx(-2 * (1 - t ** 2) * (1 - 3 * t ** 2))
    # .grad is replaced (out of place) when create_graph=True and it already exists
    z = ft.tensor([2.0], requires_grad=True)
    (z * z).backward(create_graph=True)
    first = z.grad
    (z * z).backward(create_graph=True)
    assert z.grad is not first and z.grad.item() == 8.0


def test_retain_grad_and_tensor_hooks():
    x = ft.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    z = (y * y).sum()
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        (x * 3).grad
    z.backward()
    assert y.grad.tolist() == [4.0, 8.0]
    a = ft.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h1 = a.register_hook(lambda g: seen.append(g.tolist()))
    a.register_hook(lambda g: g * 100)  # replaces the gradient
    (a * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and a.grad.tolist() == [300.0, 300.0]
    h1.remove()
    b = a * 1
    b.register_hook(lambda g: g + 1)
    b.retain_grad()
    a.grad = None
    b.sum().backward()
    assert b.grad.tolist() == [2.0, 2.0]  # retain_grad sees the hooked gradient
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ft.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ft.ones(2).retain_grad()
    post = []
    a.register_post_accumulate_grad_hook(lambda t: post.append(t.grad.tolist()))
    (a * 1).sum().backward()
    assert post


def test_grad_setter_checks():
    x = ft.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[2\\]' to a tensor of size '\\[3\\]'"):
        x.grad = ft.ones(2)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'"):
        x.grad = ft.ones(3, dtype=ft.float64)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = [1, 2, 3]
    x.grad = ft.zeros(3)
    del x.grad
    assert x.grad is None


def test_gradients_keep_dtype():
    x = ft.randn(3, requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype is ft.float32
    y = ft.randn(3, dtype=ft.float64, requires_grad=True)
    (y * ft.ones(3)).sum().backward()  # float32 operand promoted, gradient still float64
    assert y.grad.dtype is ft.float64


GRADCHECK_CASES = {
    "arith": (lambda a, b: (a * b + a / (b * b + 1) - b ** 2 + 2.0 - a).sum(), [(3, 4), (4,)]),
    "pow": (lambda a, b: (a.abs() + 1).pow(b).sum() + (a.abs() + 1) ** 2.5, [(3,), (3,)]),
    "unary": (lambda a: (a.sin() + a.cos() + a.tanh() + a.sigmoid() + a.exp() + (a * a + 1).log()
                         + (a * a + 1).sqrt() + a.atan() + a.abs() * 0 + a.relu() * a).sum(), [(5,)]),
    "reductions": (lambda a: a.sum(0).prod() + a.mean(1).sum() + a.var() + a.std(0).sum() + a.norm()
                   + a.logsumexp(1).sum() + a.max() + a.amax(0).sum() + a.max(1).values.sum(), [(3, 4)]),
    "softmax": (lambda a: (a.softmax(-1) * ft.arange(4.0, dtype=ft.float64)).sum() + a.log_softmax(0).sum() * 0.1,
                [(3, 4)]),
    "matmul": (lambda a, b: (a @ b).tanh().sum() + a.mm(b).sum() + ft.einsum("ij,jk->ik", a, b).sum(),
               [(3, 4), (4, 2)]),
    "bmm": (lambda a, b: a.bmm(b).sum() + (a @ b[0]).sum(), [(2, 3, 4), (2, 4, 3)]),
    "shape": (lambda a: (a.reshape(4, 3).t() * a).sum() + a.transpose(0, 1).sum() + a.permute(1, 0)[1:].sum()
              + a.unsqueeze(0).expand(2, 3, 4).sum() + a.flatten()[::2].sum() + a.repeat(2, 1).sum(), [(3, 4)]),
    "indexing": (lambda a: a[0].sum() + a[:, [0, 0, 2]].sum() * 2 + a[a.detach() > 0].sum()
                 + a.gather(1, ft.tensor([[0], [1], [3]])).sum() + a.index_select(1, ft.tensor([1, 1])).sum(),
                 [(3, 4)]),
    "cat_stack_where": (lambda a, b: ft.cat([a, b], 0).pow(2).sum() + ft.stack([a, b]).sum()
                        + ft.where(a > b, a, b).sum() + a.clamp(-0.5, 0.5).sum() + a.masked_fill(a > 0, 1.0).sum(),
                        [(3,), (3,)]),
    "cumsum": (lambda a: (a.cumsum(0) ** 2).sum() + a.flip(0)[0], [(4,)]),
    "linalg": (lambda a: ft.linalg.det(a) + ft.linalg.inv(a).sum() + (a @ a.mT + ft.eye(3, dtype=ft.float64)).logdet() + ft.linalg.solve(a, a[0]).sum()
               + ft.linalg.slogdet(a).logabsdet, [(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradcheck_ops(name):
    f, shapes = GRADCHECK_CASES[name]
    inputs = [_x(*s, seed=i) for i, s in enumerate(shapes)]
    assert ft.autograd.gradcheck(f, inputs)
    assert ft.autograd.gradgradcheck(f, inputs)


def test_relu_clamp_max_subgradients_like_pytorch():
    x = ft.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    x.relu().sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    x.grad = None
    x.clamp(0.0, 1.0).sum().backward()  # number bounds excluded (PyTorch 2.15)
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    x.grad = None
    x.clamp(-2.0, 2.0).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    y = ft.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    y.max(1).values.sum().backward()  # the gradient goes to the reported index
    assert y.grad.tolist() == [[0.0, 1.0, 0.0]]


def test_complex_autograd_pytorch_convention():
    z = ft.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.array([1 + 1j, 2 - 1j]), rtol=1e-6)  # 2z, not 2 conj(z)
    w = ft.tensor([1.0 + 2.0j], dtype=ft.complex128, requires_grad=True)
    (g,) = ft.autograd.grad((w * w).real.sum(), w)
    # L = Re(w^2) = x^2 - y^2: dL/dx + i dL/dy = 2x - 2iy = 2 conj(w)
    np.testing.assert_allclose(g.numpy(), 2 * np.conj([1.0 + 2.0j]))
    (gv,) = ft.autograd.grad(w * w, w, ft.tensor([1.0 + 0j], dtype=ft.complex128))
    # holomorphic f: vjp(v) = v * conj(f'(w))
    np.testing.assert_allclose(gv.numpy(), np.conj(2 * np.array([1.0 + 2.0j])))
    a = ft.randn(3, dtype=ft.complex128, requires_grad=True)
    b = ft.randn(3, dtype=ft.complex128, requires_grad=True)
    assert ft.autograd.gradcheck(lambda p, q: p * q.conj() + p.exp(), (a, b))
    assert ft.autograd.gradcheck(lambda p: (p * p.conj()).real.sum() + p.abs().sum(), (a,))
