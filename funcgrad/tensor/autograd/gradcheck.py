"""``ft.autograd.gradcheck``: numerical gradient checks (``torch.autograd.gradcheck``'s import path).

``ft.autograd.gradcheck`` itself is the function, as in PyTorch; this module is
what ``from funcgrad.tensor.autograd.gradcheck import GradcheckError`` reads.
"""

from ..gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]
