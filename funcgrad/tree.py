"""``fg.tree``: the pytree functions under JAX's ``jax.tree`` names (``fg.tree.map`` is
``fg.tree_util.tree_map``, and so on), for code written against ``jax.tree``.

Example::

    import funcgrad as fg

    fg.tree.map(lambda x: 2 * x, {"a": 1.0, "b": (2.0, 3.0)})   # {"a": 2.0, "b": (4.0, 6.0)}
    fg.tree.leaves({"a": 1.0, "b": (2.0, 3.0)})                  # [1.0, 2.0, 3.0]
"""

from __future__ import annotations

from .tree_util import (  # noqa: F401  (the same functions, JAX's short names)
    tree_all as all, tree_flatten as flatten, tree_flatten_with_path as flatten_with_path,
    tree_leaves as leaves, tree_leaves_with_path as leaves_with_path, tree_map as map,
    tree_map_with_path as map_with_path, tree_reduce as reduce, tree_structure as structure,
    tree_unflatten as unflatten,
)

__all__ = ["all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map", "map_with_path", "reduce",
           "structure", "unflatten"]
