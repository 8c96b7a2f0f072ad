"""ft.nn modules, ft.optim optimizers, ft.save / ft.load, and the PyTorch-style example."""

import os
import pickle

import numpy as np
import pytest

import funcgrad.tensor as ft
from funcgrad.serialization import CheckpointError

nn = ft.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", ft.ones(3))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_module_registration_and_traversal():
    ft.manual_seed(0)
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == ["scale"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(net.children())) == 3
    assert net.fc2.bias is None
    assert repr(net.fc1) == "Linear(in_features=4, out_features=8, bias=True)"
    assert "(fc1): Linear(in_features=4, out_features=8, bias=True)" in repr(net)
    assert repr(nn.Parameter(ft.ones(1))).startswith("Parameter containing:\ntensor([1.], requires_grad=True)")
    bound = 1 / np.sqrt(4)
    assert np.abs(net.fc1.weight.detach().numpy()).max() <= bound  # PyTorch's default init range
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        net.nope
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'weight'"):
        net.fc1.weight = 3


def test_train_eval_zero_grad_freeze():
    ft.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
    x = ft.randn(16, 4)
    assert net.training and net[1].training
    net.eval()
    assert not net[1].training
    a, b = net(x), net(x)
    assert a.equal(b)  # dropout off in eval mode
    net.train()
    assert not net(x).equal(net(x))
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net(x).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in net.parameters())
    # freeze the first layer for fine-tuning
    net.zero_grad()
    net[0].requires_grad_(False)
    net(x).sum().backward()
    assert net[0].weight.grad is None and net[2].weight.grad is not None
    opt = ft.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.1)
    before = net[0].weight.clone()
    opt.step()
    assert net[0].weight.equal(before)


def test_state_dict_round_trip_and_errors():
    ft.manual_seed(0)
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]  # PyTorch: own tensors, then children
    assert not sd["fc1.weight"].requires_grad
    b.load_state_dict(sd)
    x = ft.randn(2, 4)
    assert a(x).equal(b(x))
    bad = dict(sd)
    bad.pop("fc1.bias")
    bad["extra"] = ft.ones(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc1.bias"'):
        b.load_state_dict(bad)
    res = b.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra"]
    wrong = dict(sd)
    wrong["fc1.weight"] = ft.ones(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        b.load_state_dict(wrong)


def test_losses_match_formulas():
    logits = ft.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], requires_grad=True)
    target = ft.tensor([0, 1])
    loss = nn.CrossEntropyLoss()(logits, target)
    z = logits.detach().numpy()
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    assert loss.item() == pytest.approx(-(logp[0, 0] + logp[1, 1]) / 2, rel=1e-6)
    loss.backward()
    p = np.exp(logp)
    onehot = np.eye(3)[[0, 1]]
    np.testing.assert_allclose(logits.grad.numpy(), (p - onehot) / 2, rtol=1e-5)
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert nn.MSELoss()(ft.tensor([1.0, 3.0]), ft.tensor([0.0, 0.0])).item() == 5.0
    assert nn.MSELoss(reduction="sum")(ft.tensor([1.0, 3.0]), ft.tensor([0.0, 0.0])).item() == 10.0
    assert nn.L1Loss()(ft.tensor([1.0, -3.0]), ft.tensor([0.0, 0.0])).item() == 2.0
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")
    act = ft.tensor([-1.0, 0.0, 2.0])
    assert nn.LeakyReLU(0.1)(act).tolist() == pytest.approx([-0.1, 0.0, 2.0])
    np.testing.assert_allclose(nn.GELU()(act).numpy(), [-0.158655, 0.0, 1.954500], rtol=1e-4)
    np.testing.assert_allclose(nn.Softmax(dim=0)(act).sum().item(), 1.0, rtol=1e-6)
    assert repr(nn.LeakyReLU(0.2, True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.LogSoftmax(1)) == "LogSoftmax(dim=1)"
    with pytest.raises(TypeError, match=r"Softmax\(\) takes the arguments.*keywords \['dm'\]"):
        nn.Softmax(dm=1)
    with pytest.raises(TypeError, match="3 positional"):
        nn.ELU(1.0, False, 2)


@pytest.mark.parametrize("make", [lambda ps: ft.optim.SGD(ps, lr=0.1), lambda ps: ft.optim.Adam(ps, lr=0.1)])
def test_step_with_closure_returns_loss_and_updates(make):
    # step(closure) evaluates the loss with gradients enabled (it used to fail importing grad_mode)
    w = nn.Parameter(ft.tensor([1.0, -2.0]))
    opt = make([w])
    ref = nn.Parameter(ft.tensor([1.0, -2.0]))
    ref_opt = make([ref])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == pytest.approx(5.0)
    ref_opt.zero_grad()
    (ref * ref).sum().backward()
    ref_opt.step()
    np.testing.assert_allclose(w.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert not np.allclose(w.detach().numpy(), [1.0, -2.0])


def test_sgd_matches_closed_form():
    w = nn.Parameter(ft.tensor([1.0, -2.0]))
    opt = ft.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=0.01)
    buf = np.zeros(2)
    wv = np.array([1.0, -2.0])
    for _ in range(3):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        g = 2 * wv + 0.01 * wv
        buf = 0.9 * buf + g
        wv = wv - 0.1 * buf
    np.testing.assert_allclose(w.detach().numpy(), wv, rtol=1e-6)
    assert w.is_leaf and w.requires_grad
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ft.optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        ft.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        ft.optim.Adam([], lr=0.1)


def test_adam_param_groups_and_state_dict():
    ft.manual_seed(0)
    net = nn.Linear(3, 2)
    opt = ft.optim.Adam([{"params": [net.weight]}, {"params": [net.bias], "lr": 0.0}], lr=0.01)
    x = ft.randn(4, 3)
    b0 = net.bias.clone()
    for _ in range(3):
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        opt.step()
    assert net.bias.equal(b0)  # lr 0 in its group
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"] and sd["state"][0]["step"] == 3
    assert [g["lr"] for g in sd["param_groups"]] == [0.01, 0.0]
    opt2 = ft.optim.Adam([{"params": [net.weight]}, {"params": [net.bias], "lr": 0.0}], lr=0.01)
    opt2.load_state_dict(sd)
    w_a = net.weight.clone()
    # the same step from both optimizers gives the same parameters
    for o in (opt, opt2):
        with ft.no_grad():
            net.weight.copy_(w_a)
        o.zero_grad()
        net(x).pow(2).sum().backward()
        o.step()
        if o is opt:
            after = net.weight.clone()
    assert net.weight.equal(after)


def test_save_load_tensors_and_nested_state(tmp_path):
    ft.manual_seed(0)
    net = Net()
    opt = ft.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(ft.randn(2, 4)).sum().backward()
    opt.step()
    obj = {"model": net.state_dict(), "optim": opt.state_dict(), "epoch": 7, "note": "hi", "lr": 0.5,
           "t": ft.tensor([1, 2]), "c": ft.tensor([1 + 2j]), "nested": [(1, None), {"x": ft.ones(2, requires_grad=True)}],
           "dtype": ft.float64}
    path = tmp_path / "ckpt.ft"
    ft.save(obj, path)
    back = ft.load(path)
    assert back["epoch"] == 7 and back["note"] == "hi" and back["lr"] == 0.5 and back["dtype"] is ft.float64
    assert back["t"].dtype is ft.int64 and back["t"].tolist() == [1, 2] and back["c"].dtype is ft.complex64
    assert back["nested"][0] == (1, None) and back["nested"][1]["x"].requires_grad
    fresh = Net()
    fresh.load_state_dict(back["model"])
    x = ft.randn(3, 4)
    assert fresh(x).equal(net(x))
    opt2 = ft.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9)
    opt2.load_state_dict(back["optim"])
    assert list(back["optim"]["state"][0]) == ["momentum_buffer"]
    t = ft.randn(3, 3)
    ft.save(t, tmp_path / "t.ft")
    assert ft.load(tmp_path / "t.ft").equal(t)


def test_save_refuses_what_it_cannot_hold(tmp_path):
    with pytest.raises(TypeError, match="ft.save cannot store the Net at \\['model'\\]"):
        ft.save({"model": Net()}, tmp_path / "x.ft")
    with pytest.raises(TypeError, match="cannot store the function"):
        ft.save([lambda: 0], tmp_path / "y.ft")
    with pytest.raises(TypeError, match="dict key"):
        ft.save({(1, 2): ft.ones(1)}, tmp_path / "z.ft")
    assert not os.path.exists(tmp_path / "x.ft")


class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {_Evil.marker}",))


def test_load_never_runs_code_from_a_crafted_file(tmp_path):
    marker = tmp_path / "pwned"
    _Evil.marker = marker
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump({"state": _Evil()}, f)
    with pytest.raises(CheckpointError, match="pickle"):
        ft.load(path)
    assert not marker.exists()
    # a zip archive holding a pickled object array is refused too
    np.savez(tmp_path / "obj.npz", structure=np.array([_Evil()], dtype=object))
    with pytest.raises(CheckpointError):
        ft.load(tmp_path / "obj.npz")
    assert not marker.exists()


# (examples/pytorch_style_training.py in its fast mode, accuracy >= 0.93 and the checkpoint round
# trip: tests/test_examples.py::test_example_runs, which runs every example)
