"""``ft.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp."""

from ..functional import hessian, hvp, jacobian, jvp, vhp, vjp  # noqa: F401

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]
