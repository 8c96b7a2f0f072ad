"""funcgrad.random: functional random numbers with JAX's keys and JAX's streams.

A key is a ``uint32[2]`` array; every draw is a pure function of its key, so
draws compose with every transform: ``vmap`` over a batch of keys equals a
loop, ``fg.jit`` stages the draws (a new key gives new numbers, nothing is
frozen), ``scan``/``fori_loop`` carry keys, and reparameterized samples
differentiate with respect to their parameters (implicitly for ``gamma``,
``beta``, ``dirichlet`` shapes and ``truncated_normal`` bounds).

For the same key, shape and dtype, keys, bits, the integer samplers,
``permutation``, ``choice`` and ``bernoulli`` give exactly JAX's values
(``jax.random`` with its default threefry2x32 and ``jax_enable_x64``); float
samplers agree within a few ulp (see docs/random.md for each bound).

Example::

    import funcgrad.random as fr
    key = fr.PRNGKey(0)
    key, sub = fr.split(key)
    x = fr.normal(sub, (3,))
    fg.grad(lambda a: fr.gamma(sub, a))(2.0)
"""

from .threefry import PRNGKey, key, key_data, wrap_key_data, split, fold_in, bits  # noqa: F401
from .continuous import (  # noqa: F401
    uniform, normal, exponential, laplace, logistic, gumbel, cauchy, truncated_normal, multivariate_normal, orthogonal,
)
from .discrete import randint, bernoulli, rademacher, permutation, choice, categorical, poisson  # noqa: F401
from .gamma import gamma, loggamma, beta, dirichlet, t, chisquare, generalized_normal, ball  # noqa: F401

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
    "uniform", "normal", "exponential", "laplace", "logistic", "gumbel", "cauchy", "truncated_normal",
    "multivariate_normal", "orthogonal", "randint", "bernoulli", "rademacher", "permutation", "choice",
    "categorical", "poisson", "gamma", "loggamma", "beta", "dirichlet", "t", "chisquare",
    "generalized_normal", "ball",
]
