"""Static typing (issue 8, part 3): the package ships ``py.typed`` and ``mypy --strict``
passes on the whole package (the ``files`` list of ``mypy.ini``).

The mypy checks are skipped when mypy is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import background_checks
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG = ROOT / "mypy.ini"

# What mypy.ini's `files` checks: the whole package (keep in step with mypy.ini).
TYPED = ["funcgrad"]

needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")


def _mypy_command(cache_dir: pathlib.Path, *targets: str) -> list[str]:
    return [sys.executable, "-m", "mypy", "--strict", "--config-file", str(CONFIG),
            "--cache-dir", str(cache_dir), "--no-pretty", "--no-error-summary", *targets]


# The whole package's check (about 20 s) starts with the session and runs beside the other tests
# (tests/background_checks.py); its folder is the mypy cache the later, incremental runs reuse.
STRICT = background_checks.register(
    "mypy strict", lambda folder: _mypy_command(folder, *TYPED), cwd=ROOT, timeout=300,
    wanted_by=[(__file__, "*")] if importlib.util.find_spec("mypy") is not None else [])


@pytest.fixture(scope="module")
def strict_run(background: background_checks.Runner) -> background_checks.Finished:
    return background.result(STRICT)


@pytest.fixture(scope="module")
def cache_dir(strict_run: background_checks.Finished) -> pathlib.Path:
    # One cache for the module's runs (the later runs are incremental); never in the repo.
    return strict_run.folder


def _mypy(cache_dir: pathlib.Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_mypy_command(cache_dir, *targets), cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_py_typed_marker_is_shipped() -> None:
    assert (ROOT / "funcgrad" / "py.typed").is_file()


def test_config_lists_exactly_the_typed_modules() -> None:
    import configparser

    cp = configparser.ConfigParser()
    cp.read(CONFIG)
    files = [f.strip() for f in cp["mypy"]["files"].split(",") if f.strip()]
    assert files == TYPED
    for f in files:
        assert (ROOT / f).exists(), f


@needs_mypy
def test_mypy_strict_passes_on_typed_modules(strict_run: background_checks.Finished) -> None:
    res = strict_run.process
    assert res.returncode == 0, "mypy --strict failed:\n" + res.stdout + res.stderr


# User code against the public API: correct uses must type-check, and the mistakes marked
# with `type: ignore[...]` must be caught (under --strict an ignore that is not needed is
# itself an error, so a signature that stops catching a mistake fails this test).
_USER_CODE = '''
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
import funcgrad.tensor as ft


def loss(w: np.ndarray, x: np.ndarray, *, scale: float = 1.0) -> Any:
    return fnp.sum(fnp.tanh(x @ w) ** 2) * scale


w = np.ones((3, 2))
x = np.ones((4, 3))
g = fg.grad(loss)(w, x, scale=2.0)
value, g2 = fg.value_and_grad(loss, argnums=(0, 1))(w, x)
J = fg.jacrev(loss)(w, x)
H = fg.hessian(loss)(w, x)
per_example = fg.vmap(loss, in_axes=(None, 0))(w, x[:, None, :])
fg.grad(loss)(w)  # type: ignore[call-arg]
fg.jacfwd(loss)(w, x, scal=2.0)  # type: ignore[call-arg]

out, f_vjp = fg.vjp(fnp.sin, w)
cts: tuple[Any, ...] = f_vjp(fnp.ones_like(out))
out2, f_vjp2, aux = fg.vjp(lambda a: (fnp.sin(a), 1), w, has_aux=True)
y, dy = fg.jvp(fnp.sin, (w,), (w,))
y3, dy3, aux3 = fg.jvp(lambda a: (fnp.sin(a), 1), (w,), (w,), has_aux=True)
y4, dy4, aux4 = fg.jvp(fnp.sin, (w,), (w,))  # type: ignore[misc]
grad_val, hvp_val = fg.hvp(lambda a: fnp.sum(a ** 3), (w,), (w,))
lin_out, f_jvp = fg.linearize(fnp.sin, w)
kept: np.ndarray = fg.stop_gradient(w)
carry, ys = fg.scan(lambda c, xi: (c + xi, c), np.zeros(3), x)
halved: float = fg.fori_loop(0, 3, lambda i, v: v * 0.5, 1.0)


@fg.custom_jvp
def f(a: np.ndarray) -> np.ndarray:
    return a


@f.defjvp
def f_jvp_rule(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
    return primals[0], tangents[0]


fa: np.ndarray = f(w)
fb: str = f(w)  # type: ignore[assignment]
layer: Callable[..., Any] = fg.checkpoint(loss)


class Affine(fg.nn.Module):
    w: np.ndarray
    b: np.ndarray
    act: str = fg.nn.static_field(default="tanh")

    def __call__(self, x: np.ndarray) -> Any:
        return fnp.tanh(x @ self.w + self.b)


m = Affine(np.ones((3, 2)), np.zeros(2), act="relu")
Affine(np.ones((3, 2)))  # type: ignore[call-arg]
lin = fg.nn.Linear(3, 4)
opt = fg.optim.chain(fg.optim.clip_by_global_norm(1.0), fg.optim.adam(1e-3))
state = opt.init(m)
grads = fg.grad(lambda m, x: fnp.sum(m(x)))(m, x)
updates, state = opt.update(grads, state, m)
m = fg.optim.apply_updates(m, updates)
leaves, treedef = fg.tree_util.tree_flatten({"a": 1})
n: int = treedef.num_leaves
fg.testing.check_grads(fnp.sin, (w,), order=1)
dot: str = fg.make_graph(loss)(w, x).to_dot()

# funcgrad.numpy: annotated functions check their arguments
total = fnp.sum(w, axis=(0, 1), keepdims=True) + fnp.mean(w, axis=-1)
fnp.sum(w, axis="rows")  # type: ignore[arg-type]
fnp.mean(w, keepdims=True, wher=None)  # type: ignore[call-arg]


# a primitive declared with fg.defprimitive keeps its forward function's signature
def _cube(x: float) -> float:
    return x ** 3


cube = fg.defprimitive(_cube, vjp=lambda g, ans, x: g * 3 * x ** 2, jvp=lambda t, ans, x: t * 3 * x ** 2)
c: float = cube(2.0)
cube(2.0, 3.0)  # type: ignore[call-arg]
cube("two")  # type: ignore[arg-type]
fnp.zeros((2, 3), dtype=np.float32)
fnp.zeros((2, 3), dtyp=np.float32)  # type: ignore[call-arg]
fnp.eye(3, k=1)
fnp.eye(3, kk=1)  # type: ignore[call-arg]

# the typed funcgrad.numpy modules: shapes, axes and options are checked
r: np.ndarray = fnp.reshape(w, (2, 3))
fnp.reshape(w, "2, 3")  # type: ignore[arg-type]
fnp.transpose(w, axes=(1, 0))
fnp.squeeze(w, axis="0")  # type: ignore[arg-type]
fnp.zeros("3")  # type: ignore[arg-type]
fnp.sin(w, out=None)
fnp.add(w)  # type: ignore[call-arg]
fnp.max(w, axis=0, keepdims=True)
fnp.var(w, ddof=1, correction=1.0)
fnp.var(w, ddof="1")  # type: ignore[arg-type]
fnp.fft.fft(w, norm="ortho")
fnp.fft.fft(w, norm=2)  # type: ignore[arg-type]
fnp.fft.fft(w, norm="unitary")  # type: ignore[arg-type]
fnp.sinn(w)  # type: ignore[attr-defined]
half_pi: float = fnp.pi / 2

# funcgrad.tensor: sizes, dims and options of the PyTorch-style layer are checked as well
t = ft.zeros(2, 3, requires_grad=True)
t2: ft.Tensor = (t * ft.ones((2, 3))).sum(dim=1, keepdim=True)
t3: ft.Tensor = ft.exp(t).reshape(3, 2) + t.reshape((3, 2))
t.sum(dim=(0, 1)).mean().backward(retain_graph=True)
nd: int = t.dim()
lin_t = ft.nn.Linear(3, 4)
sgd = ft.optim.SGD(lin_t.parameters(), lr=0.1)
sgd.zero_grad()
ft.zeros("3")  # type: ignore[arg-type]
t.sum(dim="a")  # type: ignore[arg-type]
t.reshape("3, 2")  # type: ignore[arg-type]
bad_nd: str = t.dim()  # type: ignore[assignment]
ft.tensor([1.0], requires_grad="yes")  # type: ignore[arg-type]
t.backward(retain_graph="no")  # type: ignore[arg-type]
ft.nn.Linear("3", 4)  # type: ignore[arg-type]
ft.expp(t)  # type: ignore[attr-defined]
'''


@needs_mypy
def test_public_api_types_for_user_code(cache_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    user = tmp_path / "user_code.py"
    user.write_text(textwrap.dedent(_USER_CODE))
    res = _mypy(cache_dir, str(user))
    assert res.returncode == 0, "mypy --strict on user code failed:\n" + res.stdout + res.stderr


# What users see of the Tensor layer's results. The method mixins and the helpers below tensor.py are
# generic in the Tensor class (tensor_type.TensorT) instead of importing it: each of these must still
# be typed `Tensor`, for a Parameter argument too (never `Any`, never the Parameter subclass).
_TENSOR_RESULTS = [
    "ft.zeros(2)", "ft.tensor([1.0])", "ft.cat([x])", "ft.linalg.inv(x)", "ft.linalg.inv(p)", "ft.bernoulli(x)",
    "x.reshape(2)", "p.reshape(2)", "x + 1", "1 + x", "p * x", "-x", "x[0]", "x.T", "x.clone()", "x.float()",
    "x.to('cpu')", "x.new_zeros(2)", "x.sum()", "x.abs()", "x.exp()", "x.erf()", "x.lgamma()", "x.xlogy(x)",
    "x.inverse()", "x.bernoulli()", "x.index_add(0, x, x)", "x.kron(x)", "x.logcumsumexp(0)", "x.scatter(0, x, x)",
]


@needs_mypy
def test_tensor_results_are_typed_tensor(cache_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    user = tmp_path / "tensor_results.py"
    user.write_text("import funcgrad.tensor as ft\n\nx = ft.zeros(2)\np = ft.nn.Parameter(ft.ones(2))\n"
                    + "".join(f"reveal_type({expr})\n" for expr in _TENSOR_RESULTS))
    res = _mypy(cache_dir, str(user))
    revealed = [line.split("Revealed type is ", 1)[1] for line in res.stdout.splitlines() if "Revealed type is" in line]
    assert len(revealed) == len(_TENSOR_RESULTS), res.stdout + res.stderr
    wrong = [f"{expr}: {got}" for expr, got in zip(_TENSOR_RESULTS, revealed) if got != '"funcgrad.tensor.tensor.Tensor"']
    assert not wrong, "not typed Tensor:\n" + "\n".join(wrong)
