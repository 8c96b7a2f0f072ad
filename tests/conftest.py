"""Shared fixtures for the whole suite (see tests/factories.py and tests/strategies.py)."""

from __future__ import annotations

import pytest
from factories import no_fallback


@pytest.fixture
def no_batching_fallback():
    """The :func:`factories.no_fallback` context manager: no vmap loop fallback inside."""
    return no_fallback
