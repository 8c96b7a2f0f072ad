"""Functions the native tier's generated code calls: float64 ``exp`` and ``tanh`` written as
arithmetic LLVM can inline, and a matrix times two vectors in one pass over the matrix.

numba calls the C library for ``np.exp``/``np.tanh`` on one float at a time (no SVML in
the llvmlite wheels): 5.5 and 19.5 ns per element on the benchmark machine, where NumPy's
own SIMD loops take 1.5 ns. These versions are a few multiply-adds and a division, with no
call, so a fused loop nest runs them inline (2.8 and 3.0 ns alone, less inside a nest).
They are plain ``numba.njit`` functions that LLVM inlines into the segment calling them, not
``inline='always'`` (numba's own inlining, at its IR level, re-typed them at every call:
compiling ``jit(grad)`` of the 200-op chain took 42.8 s of CPU that way and takes 3.7 s now,
with the same call times: 22 us per call, and 21 ms for the 1e6-element row).

Both reduce ``y = k ln2 + r`` (|r| <= ln2 / 2, ln2 split in two so that ``k * LN2_HI`` is
exact, as in fdlibm) and sum the Taylor series of ``expm1(r)`` to r^13/13! (truncation
below 1e-17 relative); ``2^k`` is built from its bits. Measured against NumPy's (and the
C library's) on 10^6 points of each range in tests/test_jit_native_math.py: ``exp``
within 1 ulp, ``tanh`` within 3 ulp, the 4 ulp of docs/jit.md; NaN, inf, signed zeros,
overflow and subnormal results as NumPy's.

- ``exp64(y)``: ``2^k (1 + expm1(r))``, scaled in two halves so that results down to the
  smallest subnormal come out (rounded twice there: within 1 ulp of the subnormal);
- ``tanh64(x)``: ``E / (E + 2)`` with ``E = expm1(2|x|) = 2^k expm1(r) + (2^k - 1)``,
  which has no cancellation at any ``x`` (tiny ``x`` is its own tanh, and ``|x| > 22``
  gives 1, as in double precision).

float32 keeps the C library's ``expf``/``tanhf`` (fast already).

``matvec_pair(A, x, v)`` is ``(A @ x, A @ v)`` reading ``A`` once (a Hessian-vector product
needs both; a large ``A`` is read from memory, so one pass is 3.1 ms where two BLAS calls
take 4.6 ms at n=2000). Its sums may be reordered (``fastmath`` reassociation, so that LLVM
vectorizes them): within the n * eps bound of any contraction (docs/jit.md).

Example::

    SOURCE   # the functions' source, put before a segment that calls them
"""

from __future__ import annotations

__all__ = ["SOURCE", "EXP64", "TANH64", "MATVEC_PAIR", "uses"]

EXP64, TANH64, MATVEC_PAIR = "exp64", "tanh64", "matvec_pair"

_SERIES = "1.0 / 6227020800.0"
for _f in (479001600, 39916800, 3628800, 362880, 40320, 5040, 720, 120, 24, 6):  # 12! down to 3!
    _SERIES = f"1.0 / {_f}.0 + r * ({_SERIES})"

_HELPER = "@numba.njit(error_model='numpy')"

SOURCE = f'''{_HELPER}
def pow2_64(k):
    return np.int64((np.int64(k) + 1023) << 52).view(np.float64)


{_HELPER}
def expm1_reduced(y):
    k = np.rint(y * 1.4426950408889634)
    r = (y - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10
    return k, r + r * r * (0.5 + r * ({_SERIES}))


{_HELPER}
def {EXP64}(y):
    z = min(max(y, -745.2), 709.8)
    k, q = expm1_reduced(z)
    half = np.floor(k * 0.5)
    out = (pow2_64(half) * (1.0 + q)) * pow2_64(k - half)
    return out if y == y else y


{_HELPER}
def {TANH64}(x):
    if x != x:
        return x
    a = min(abs(x), 22.0)
    k, q = expm1_reduced(2.0 * a)
    s = pow2_64(k)
    e = s * q + (s - 1.0)
    t = e / (e + 2.0)
    if a < 1e-9:
        return x
    return t if x > 0 else -t


@numba.njit(fastmath={{'reassoc', 'contract'}}, error_model='numpy', nogil=True)
def {MATVEC_PAIR}(a, x, v):
    m, k = a.shape
    ax = np.empty(m, a.dtype)
    av = np.empty(m, a.dtype)
    for i in range(m):
        sx = 0.0
        sv = 0.0
        for j in range(k):
            w = a[i, j]
            sx += w * x[j]
            sv += w * v[j]
        ax[i] = sx
        av[i] = sv
    return ax, av
'''


def uses(source: str) -> bool:
    """Does generated code ``source`` call these functions?"""
    return any(f"{name}(" in source for name in (EXP64, TANH64, MATVEC_PAIR))
