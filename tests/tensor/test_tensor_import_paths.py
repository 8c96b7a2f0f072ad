"""The import paths PyTorch code uses (torch.autograd.function, .gradcheck, .grad_mode, .graph)."""

import subprocess
import sys

import funcgrad.tensor as ft


def test_autograd_submodules_and_names():
    from funcgrad.tensor.autograd.function import Function, InplaceFunction, once_differentiable
    from funcgrad.tensor.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
    from funcgrad.tensor.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
    from funcgrad.tensor.autograd.graph import Node, saved_tensors_hooks

    assert Function is ft.autograd.Function and InplaceFunction is ft.autograd.InplaceFunction
    assert once_differentiable is ft.autograd.once_differentiable
    assert no_grad is ft.no_grad and enable_grad is ft.enable_grad and set_grad_enabled is ft.set_grad_enabled
    assert inference_mode is ft.inference_mode
    assert gradcheck is ft.autograd.gradcheck and gradgradcheck is ft.autograd.gradgradcheck
    assert issubclass(GradcheckError, RuntimeError) and GradcheckError is ft.autograd.GradcheckError
    assert Node is ft.autograd.graph.Node and saved_tensors_hooks is ft.autograd.graph.saved_tensors_hooks
    assert ft.autograd.function.Function is Function and ft.autograd.grad_mode.no_grad is no_grad


def test_gradcheck_stays_the_function_whatever_the_import_order():
    code = (
        "import sys, types\n"
        "import funcgrad.tensor.autograd.gradcheck\n"
        "from funcgrad.tensor.autograd.gradcheck import GradcheckError\n"
        "import funcgrad.tensor as ft\n"
        "assert isinstance(sys.modules['funcgrad.tensor.autograd.gradcheck'], types.ModuleType)\n"
        "assert callable(ft.autograd.gradcheck) and not isinstance(ft.autograd.gradcheck, types.ModuleType)\n"
        "x = ft.tensor([0.5, 1.0], dtype=ft.float64, requires_grad=True)\n"
        "assert ft.autograd.gradcheck(lambda t: t.exp(), (x,))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=None)
