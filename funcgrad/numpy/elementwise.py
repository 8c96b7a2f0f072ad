"""Elementwise primitives and their rules: a table of derivatives.

Each primitive is defined once, with its VJP per argument and its JVP next to
it, all written in funcgrad.numpy so they differentiate again.
"""

from __future__ import annotations

import numpy as np

import funcgrad.numpy as fnp

from ..core import def_linear, defjvp, defvjp, primitive
from ._util import backend_function, unbroadcast

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive",
    "sin", "cos", "tan", "exp", "log", "tanh", "sqrt", "square", "real", "imag", "conj", "conjugate",
]


def _unary(name: str):
    return primitive(backend_function(name), name)


def _binary(name: str):
    return primitive(backend_function(name, 2), name)


# --- arithmetic -----------------------------------------------------------

add = _binary("add")
defvjp(add, lambda g, ans, x, y: unbroadcast(g, x), lambda g, ans, x, y: unbroadcast(g, y))
defjvp(add, lambda t, ans, x, y: fnp.broadcast_to(t, fnp.shape(ans)), lambda t, ans, x, y: fnp.broadcast_to(t, fnp.shape(ans)))

subtract = _binary("subtract")
defvjp(subtract, lambda g, ans, x, y: unbroadcast(g, x), lambda g, ans, x, y: -unbroadcast(g, y))
defjvp(subtract, lambda t, ans, x, y: fnp.broadcast_to(t, fnp.shape(ans)), lambda t, ans, x, y: fnp.broadcast_to(-t, fnp.shape(ans)))

multiply = _binary("multiply")
defvjp(multiply, lambda g, ans, x, y: unbroadcast(g * y, x), lambda g, ans, x, y: unbroadcast(x * g, y))
defjvp(multiply, lambda t, ans, x, y: t * y, lambda t, ans, x, y: x * t)

divide = _binary("divide")
defvjp(divide, lambda g, ans, x, y: unbroadcast(g / y, x), lambda g, ans, x, y: unbroadcast(-g * ans / y, y))
defjvp(divide, lambda t, ans, x, y: t / y, lambda t, ans, x, y: -t * ans / y)
true_divide = divide

negative = _unary("negative")
defvjp(negative, lambda g, ans, x: -g)
def_linear(negative)

positive = _unary("positive")
defvjp(positive, lambda g, ans, x: g)
def_linear(positive)

# --- unary math -----------------------------------------------------------

sin = _unary("sin")
defvjp(sin, lambda g, ans, x: g * fnp.cos(x))
defjvp(sin, lambda t, ans, x: t * fnp.cos(x))

cos = _unary("cos")
defvjp(cos, lambda g, ans, x: -g * fnp.sin(x))
defjvp(cos, lambda t, ans, x: -t * fnp.sin(x))

tan = _unary("tan")
defvjp(tan, lambda g, ans, x: g * (1 + ans * ans))
defjvp(tan, lambda t, ans, x: t * (1 + ans * ans))

exp = _unary("exp")
defvjp(exp, lambda g, ans, x: g * ans)
defjvp(exp, lambda t, ans, x: t * ans)

log = _unary("log")
defvjp(log, lambda g, ans, x: g / x)
defjvp(log, lambda t, ans, x: t / x)

tanh = _unary("tanh")
defvjp(tanh, lambda g, ans, x: g * (1 - ans * ans))
defjvp(tanh, lambda t, ans, x: t * (1 - ans * ans))

sqrt = _unary("sqrt")
defvjp(sqrt, lambda g, ans, x: g * 0.5 / ans)
defjvp(sqrt, lambda t, ans, x: t * 0.5 / ans)

square = _unary("square")
defvjp(square, lambda g, ans, x: g * 2 * x)
defjvp(square, lambda t, ans, x: t * 2 * x)

# --- complex parts --------------------------------------------------------

real = _unary("real")
defvjp(real, lambda g, ans, x: fnp.real(g) if not fnp.iscomplexobj(x) else fnp.real(g) + 0j)
def_linear(real)

imag = _unary("imag")
defvjp(imag, lambda g, ans, x: -1j * fnp.real(g) if fnp.iscomplexobj(x) else fnp.zeros_like(x))
def_linear(imag)

conj = _unary("conjugate")
defvjp(conj, lambda g, ans, x: fnp.conj(g))
def_linear(conj)
conjugate = conj
