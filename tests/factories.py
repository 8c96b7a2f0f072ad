"""Shared test factories for the primitive families.

``no_fallback``: fail when a primitive takes vmap's loop fallback (it has no
batching rule) inside the block; warnings there are errors. It watches the engine
through the core's public hook (``funcgrad.core.hooks.watch_batching_fallback``),
not private state.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Iterable, Iterator

from funcgrad.core.hooks import watch_batching_fallback

__all__ = ["no_fallback"]


@contextlib.contextmanager
def no_fallback(allow: Iterable[str] = ()) -> Iterator[list[str]]:
    """Inside: warnings are errors; on exit, no primitive (other than those in ``allow``)
    may have taken vmap's loop fallback. Yields the list of those that did."""
    allowed = set(allow)
    with watch_batching_fallback() as seen, warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in allowed:
            warnings.filterwarnings("ignore", message=f"vmap: primitive '{name}' has no batching rule")
        yield seen
    bad = sorted(set(seen) - allowed)
    assert not bad, f"vmap fell back to a Python loop for {bad} (no batching rule)"


# --------------------------------------------------------------------------
# one spec per primitive drives every standard check


class Spec:
    """How to test one primitive: ``fn`` (the funcgrad function), ``ref`` (the NumPy/SciPy
    reference), the domain of each argument (see strategies.DOMAINS), the argument shapes,
    and tolerances. ``out32``: the result dtype for float32 inputs (float_power gives float64).
    ``skip``: {check: reason} for a check that does not apply (the reason is shown).
    Add a primitive's tests by adding one Spec to a family's table."""

    def __init__(self, name, fn, ref, domains, shapes=((3,),), rtol=1e-10, atol=1e-12, order=2,
                 out32="float32", skip=None):
        self.name, self.fn, self.ref, self.domains = name, fn, ref, tuple(domains)
        self.shapes = tuple(shapes) if len(shapes) == len(self.domains) else tuple(shapes) * len(self.domains)
        self.rtol, self.atol, self.order = rtol, atol, order
        self.out32, self.skip = out32, dict(skip or {})

    def args(self, dtype=None, seed=0):
        import numpy as np

        from strategies import values

        return [values(d, s, dtype or np.float64, seed + i) for i, (d, s) in enumerate(zip(self.domains, self.shapes))]

    def __repr__(self):
        return self.name


CHECKS = ("forward", "grads", "vmap", "float32", "device")


def check_spec(spec, check):
    """Run one of the standard checks (see CHECKS) of ``spec``."""
    import numpy as np

    import funcgrad as fg

    if check in spec.skip:
        import pytest

        pytest.skip(f"{spec.name}: {spec.skip[check]}")
    args = spec.args()
    if check == "forward":
        np.testing.assert_allclose(spec.fn(*args), spec.ref(*args), rtol=spec.rtol, atol=spec.atol)
    elif check == "grads":
        fg.testing.check_grads(spec.fn, tuple(args), order=spec.order, modes=("fwd", "rev"))
    elif check == "vmap":
        examples = [spec.args(seed=s) for s in (0, 7, 9)]
        batch = [np.stack([ex[i] for ex in examples]) for i in range(len(args))]
        with no_fallback():
            got = fg.vmap(spec.fn)(*batch)
        want = np.stack([spec.fn(*[b[k] for b in batch]) for k in range(3)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    elif check == "float32":
        a32 = spec.args(np.float32)
        out = spec.fn(*a32)
        assert np.asarray(out).dtype == spec.out32, f"{spec.name}: float32 in, {np.asarray(out).dtype} out"
        g = fg.grad(lambda *xs: fg.numpy.sum(spec.fn(*xs)), argnums=tuple(range(len(a32))))(*a32)
        assert all(np.asarray(gi).dtype == np.float32 for gi in g), f"{spec.name}: gradient not float32"
        np.testing.assert_allclose(out, spec.ref(*args), rtol=2e-5, atol=2e-6)
    elif check == "device":
        import fake_backend as fb
        from device_suite import check_case

        fb.install()
        check_case(spec.fn, args, put=fb.to_fake, xp=fb.fake, no_sync=fb.no_host_sync,
                   uploads=lambda: fb.STATS["h2d"], what=spec.name)
    else:  # pragma: no cover
        raise ValueError(check)
