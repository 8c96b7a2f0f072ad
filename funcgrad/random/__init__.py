"""funcgrad.random: functional random numbers with JAX's keys and JAX's streams.

A key is a typed key array (``key(seed)``, shape ``()``) or its raw
``uint32[2]`` data (``PRNGKey(seed)``); every draw is a pure function of its key, so
draws compose with every transform: ``vmap`` over a batch of keys equals a
loop, ``fg.jit`` stages the draws (a new key gives new numbers, nothing is
frozen), ``scan``/``fori_loop`` carry keys, and reparameterized samples
differentiate with respect to their parameters (implicitly for ``gamma``,
``beta``, ``dirichlet`` shapes and ``truncated_normal`` bounds).

For the same key, shape and dtype, keys, bits, the integer samplers,
``permutation``, ``choice`` and ``bernoulli`` give exactly JAX's values
(``jax.random`` with its default threefry2x32 and ``jax_enable_x64``); float
samplers agree within 2 ulp, several exactly (see docs/random.md for each bound).

Example::

    import funcgrad.random as fr
    key = fr.PRNGKey(0)
    key, sub = fr.split(key)
    x = fr.normal(sub, (3,))
    fg.grad(lambda a: fr.gamma(sub, a))(2.0)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .continuous import (  # noqa: F401
        cauchy, exponential, gumbel, laplace, logistic, multivariate_normal, normal, orthogonal, truncated_normal,
        uniform,
    )
    from .counts import binomial, multinomial  # noqa: F401
    from .discrete import bernoulli, categorical, choice, permutation, poisson, rademacher, randint  # noqa: F401
    from .gamma_family import ball, beta, chisquare, dirichlet, gamma, generalized_normal, loggamma, t  # noqa: F401
    from .derived import (  # noqa: F401
        double_sided_maxwell, f, geometric, lognormal, maxwell, pareto, rayleigh, triangular, wald, weibull_min,
    )
    from .key_array import PRNGKeyArray, issubdtype, prng_key  # noqa: F401
    from .threefry import PRNGKey, bits, fold_in, key, key_data, key_impl, split, wrap_key_data  # noqa: F401

# Each public name and the module defining it: the modules load on first use, so that
# ``import funcgrad`` stays fast (funcgrad.nn only needs ``threefry.is_key`` up front).
_HOME = {
    **dict.fromkeys(["PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "split", "fold_in", "bits"],
                    "threefry"),
    **dict.fromkeys(["PRNGKeyArray", "prng_key", "issubdtype"], "key_array"),
    **dict.fromkeys(["uniform", "normal", "exponential", "laplace", "logistic", "gumbel", "cauchy",
                     "truncated_normal", "multivariate_normal", "orthogonal"], "continuous"),
    **dict.fromkeys(["randint", "bernoulli", "rademacher", "permutation", "choice", "categorical", "poisson"],
                    "discrete"),
    **dict.fromkeys(["binomial", "multinomial"], "counts"),
    **dict.fromkeys(["gamma", "loggamma", "beta", "dirichlet", "t", "chisquare", "generalized_normal", "ball"],
                    "gamma_family"),
    **dict.fromkeys(["pareto", "f", "maxwell", "double_sided_maxwell", "weibull_min", "rayleigh", "wald",
                     "geometric", "triangular", "lognormal"], "derived"),
}

__all__ = list(_HOME)


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'funcgrad.random' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
