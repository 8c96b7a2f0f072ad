"""Library-wide settings: ``fg.config``.

Example::

    fg.config.jit_log_compiles = True   # log each fg.jit (re)trace and why
    fg.config.jit_retrace_warn = 8      # warn when one function is traced more often
"""

from __future__ import annotations

import os

__all__ = ["config", "Config"]


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


class Config:
    """Settings read at the moment they matter (changing them takes effect at once).

    - ``jit_log_compiles`` (env ``FUNCGRAD_LOG_COMPILES=1``): log every trace of a
      ``fg.jit`` function, with the argument that changed, to the ``funcgrad.jit`` logger.
    - ``jit_retrace_warn``: warn once when one jitted function has been traced more
      than this many times (a sign that a changing value should be static, or not).
    """

    def __init__(self) -> None:
        self.jit_log_compiles: bool = _env_flag("FUNCGRAD_LOG_COMPILES")
        self.jit_retrace_warn: int = int(os.environ.get("FUNCGRAD_JIT_RETRACE_WARN", "10"))

    def __repr__(self) -> str:
        return f"Config(jit_log_compiles={self.jit_log_compiles}, jit_retrace_warn={self.jit_retrace_warn})"


config = Config()
