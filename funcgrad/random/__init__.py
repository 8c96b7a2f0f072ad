"""funcgrad.random: functional random numbers with JAX's keys and JAX's streams."""
from .threefry import PRNGKey, key, key_data, wrap_key_data, split, fold_in, bits  # noqa: F401
from .continuous import (  # noqa: F401
    uniform, normal, exponential, laplace, logistic, gumbel, cauchy, truncated_normal, multivariate_normal, orthogonal,
)
from .discrete import randint, bernoulli, rademacher, permutation, choice, categorical, poisson  # noqa: F401
from .gamma import gamma, loggamma, beta, dirichlet, t, chisquare, generalized_normal, ball  # noqa: F401
