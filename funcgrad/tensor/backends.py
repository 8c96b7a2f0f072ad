"""``ft.backends``: the flags scripts query (``ft.backends.mps.is_available()`` is False;
``cudnn`` flags are accepted and have no effect).

Example::

    use_mps = ft.backends.mps.is_available()
"""

from __future__ import annotations

from types import SimpleNamespace

__all__ = ["mps", "cudnn"]

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, is_available=lambda: False)
