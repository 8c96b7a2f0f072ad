"""Modules: dataclass-like containers of parameters that are pytrees.

A :class:`Module` subclass declares its fields with annotations, like a
dataclass. Every instance is a pytree, with no registration by hand:

* a field that holds an array, a sub-module, ``None`` or a container (list,
  tuple, dict, ...) of those is a *child*: its arrays are the leaves that
  ``grad`` differentiates, ``tree_map`` maps and ``fg.save`` writes;
* a field declared with :func:`static_field`, and a field that holds anything
  else (Python or NumPy scalars, strings, functions), is *static*
  configuration: it is kept in the tree structure, never traced. (A trainable
  scalar is a 0-d array, ``np.array(1.0)``, or a field declared
  ``field(static=False)``.)

Which fields are children is decided once, when the instance is built
(``__init__``), so ``tree_map(lambda x: True, model)`` (a filter spec of
booleans) has exactly the structure of ``model``.

Modules are immutable after ``__init__``: change them functionally with
:func:`tree_at` or :meth:`Module.replace`.

Example::

    import numpy as np
    import funcgrad as fg
    import funcgrad.numpy as fnp

    class Affine(fg.nn.Module):
        w: np.ndarray
        b: np.ndarray
        activation: str = fg.nn.static_field(default="tanh")

        def __call__(self, x):
            return fnp.tanh(x @ self.w + self.b)

    m = Affine(np.ones((3, 2)), np.zeros(2))
    g = fg.grad(lambda m, x: fnp.sum(m(x)))(m, np.ones((4, 3)))   # an Affine
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, ClassVar

import numpy as np
from typing_extensions import dataclass_transform

from ..backend import dtype_of
from .. import tree_util
from ..core import Box

__all__ = [
    "Module", "field", "static_field", "tree_at", "partition", "combine", "is_array",
    "is_inexact_array", "count_params", "tree_equal",
]

_MISSING = dataclasses.MISSING


# --------------------------------------------------------------------------- fields


def field(*, static: bool | None = None, default: Any = _MISSING, default_factory: Any = _MISSING,
          init: bool = True, repr: bool = True, metadata: dict[str, Any] | None = None) -> Any:  # noqa: A002
    """Declare a module field (``dataclasses.field`` plus ``static``).

    ``static=True`` makes the field configuration (kept in the tree structure,
    never traced); ``static=False`` makes it a child whatever it holds (e.g. a
    trainable Python float); ``None`` (default) decides from the value when the
    module is built: arrays, modules, ``None`` and containers of arrays or
    modules are children, everything else is static.

    Example::

        class Scale(fg.nn.Module):
            s: float = fg.nn.field(static=False, default=1.0)   # trained
    """
    md = dict(metadata or {})
    if static is not None:
        md["static"] = bool(static)
    kwargs: dict[str, Any] = dict(init=init, repr=repr, metadata=md)
    if default is not _MISSING:
        kwargs["default"] = default
    if default_factory is not _MISSING:
        kwargs["default_factory"] = default_factory
    return dataclasses.field(**kwargs)


def static_field(*, default: Any = _MISSING, default_factory: Any = _MISSING, init: bool = True,
                 repr: bool = True) -> Any:  # noqa: A002
    """Declare a configuration field: part of the tree structure, never a leaf.

    Example::

        class Conv(fg.nn.Module):
            weight: Any
            stride: tuple = fg.nn.static_field(default=(1, 1))
    """
    return field(static=True, default=default, default_factory=default_factory, init=init, repr=repr)


# --------------------------------------------------------------------------- leaf predicates


def is_array(x: Any) -> bool:
    """True for arrays: NumPy/CuPy arrays, NumPy scalars and traced values.

    Example::

        params, static = fg.nn.partition(model, fg.nn.is_array)
    """
    if isinstance(x, (np.ndarray, np.generic, Box)):
        return True
    if isinstance(x, Module):
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, type)


def is_inexact_array(x: Any) -> bool:
    """True for floating-point or complex arrays: the leaves that can be differentiated.

    Example::

        n = fg.nn.count_params(model, fg.nn.is_inexact_array)
    """
    return is_array(x) and dtype_of(x).kind in "fc"


def _is_module_or_array(x: Any) -> bool:
    return isinstance(x, Module) or is_array(x)


def _holds_children(value: Any) -> bool:
    """Should a field holding ``value`` be a child (not static)?"""
    if isinstance(value, np.generic):  # a NumPy scalar is a number: configuration
        return False
    if value is None or isinstance(value, Module) or is_array(value):
        return True
    if tree_util._kind_of(value) is None:  # a leaf that is not an array: configuration
        return False
    return any(_is_module_or_array(leaf) for leaf in tree_util.tree_leaves(value, is_leaf=_is_module_or_array))


# --------------------------------------------------------------------------- static data in a treedef


class _Static:
    """Static field values inside a tree structure: compared by value, always hashable."""

    __slots__ = ("names", "values", "_hash")

    def __init__(self, names: tuple[Any, ...], values: tuple[Any, ...]):
        self.names = names
        self.values = values
        self._hash: int | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return NotImplemented
        if self is other:
            return True
        if self.names != other.names:
            return False
        return all(_static_equal(a, b) for a, b in zip(self.values, other.values))

    def __hash__(self) -> int:
        if self._hash is None:
            parts = []
            for v in self.values:
                try:
                    parts.append(hash(v))
                except TypeError:
                    parts.append(hash(type(v).__qualname__))
            self._hash = hash((self.names, tuple(parts)))
        return self._hash

    def __repr__(self) -> str:
        return ", ".join(f"{n}={_short(v)}" for n, v in zip(self.names, self.values))


def _static_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if is_array(a):
        return _arrays_equal(a, b)
    try:
        return bool(a == b)
    except Exception:  # e.g. containers of arrays: ambiguous truth value
        return False


def _arrays_equal(a: Any, b: Any) -> bool:
    if isinstance(a, Box) or isinstance(b, Box):
        return a is b
    if tuple(a.shape) != tuple(b.shape) or dtype_of(a) != dtype_of(b):
        return False
    from ..backend import namespace_of

    xp = namespace_of(a, b)
    return bool(xp.array_equal(a, b))


# --------------------------------------------------------------------------- Module


# Tells type checkers that subclasses are dataclass-like (fields, generated __init__).
@dataclass_transform(field_specifiers=(dataclasses.field, field, static_field))
class Module:
    """Base class of models and layers: a dataclass-like pytree.

    Subclasses declare fields with annotations. Either let the class generate
    ``__init__`` from the fields (as a dataclass does) or write ``__init__``
    yourself and assign every field with ``self.name = value``; after
    ``__init__`` returns the instance is frozen. Calling a module runs its
    ``__call__`` (define either ``__call__`` or ``forward``).

    Modules compare equal when they have the same type, structure and equal
    leaves (arrays compared by value); they hash by type, structure and leaf
    shapes and dtypes.

    Example::

        class MLP2(fg.nn.Module):
            l1: fg.nn.Linear
            l2: fg.nn.Linear

            def __init__(self, key=0):
                rng = np.random.default_rng(key)
                self.l1 = fg.nn.Linear(4, 8, key=rng)
                self.l2 = fg.nn.Linear(8, 1, key=rng)

            def __call__(self, x):
                return self.l2(fg.nn.relu(self.l1(x)))
    """

    # Set per subclass by __init_subclass__.
    _fg_field_names: ClassVar[tuple[str, ...]] = ()
    _fg_field_static: ClassVar[dict[str, bool | None]] = {}
    _fg_custom_init: ClassVar[bool] = False
    _fg_repr_fields: ClassVar[tuple[str, ...]]  # annotation only: no class attribute

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own_init = "__init__" in cls.__dict__
        custom = own_init or any(getattr(b, "_fg_custom_init", False) for b in cls.__mro__[1:])
        for name, value in list(cls.__dict__.items()):
            # A plain array default would be shared (and unhashable): make it a factory.
            if name in cls.__dict__.get("__annotations__", {}) and is_array(value):
                raise TypeError(
                    f"{cls.__qualname__}.{name}: an array cannot be a class-level default; "
                    f"use fg.nn.field(default_factory=lambda: ...)"
                )
        dataclasses.dataclass(init=not custom, repr=False, eq=False)(cls)
        cls._fg_custom_init = custom
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # a dataclass since the line above
        cls._fg_field_names = tuple(f.name for f in fields)
        cls._fg_field_static = {f.name: f.metadata.get("static") for f in fields}
        cls._fg_repr_fields = tuple(f.name for f in fields if f.repr)
        if "__init__" in cls.__dict__:
            cls.__init__ = _wrap_init(cls.__dict__["__init__"])  # type: ignore[method-assign]
        _register(cls)

    # ---- construction and immutability

    def _fg_finalize(self) -> None:
        d = self.__dict__
        missing = [n for n in self._fg_field_names if n not in d]
        if missing:
            raise TypeError(
                f"{type(self).__name__}.__init__ did not set the field(s) {missing}; every "
                f"declared field must be assigned (self.{missing[0]} = ...)"
            )
        dynamic = []
        for name in self._fg_field_names:
            static = self._fg_field_static.get(name)
            if static is None:
                static = not _holds_children(d[name])
            if not static:
                dynamic.append(name)
        d["_fg_dynamic"] = tuple(dynamic)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_fg_building"):
            if name not in self._fg_field_names and not name.startswith("_"):
                raise AttributeError(
                    f"{type(self).__name__} has no field {name!r}; declare it in the class body "
                    f"({name}: <type>) before assigning it in __init__"
                )
            object.__setattr__(self, name, value)
            return
        raise AttributeError(
            f"cannot set {type(self).__name__}.{name}: modules are immutable after __init__. "
            f"Make a changed copy with module.replace({name}=...) or "
            f"fg.nn.tree_at(lambda m: m.{name}, module, new_value)"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete {type(self).__name__}.{name}: modules are immutable")

    def replace(self, **changes: Any) -> "Module":
        """A copy with some fields replaced (``__init__`` is not called again).

        Example::

            lin2 = lin.replace(bias=None)
        """
        unknown = [n for n in changes if n not in self._fg_field_names]
        if unknown:
            raise TypeError(f"{type(self).__name__}.replace: unknown field(s) {unknown}; fields are "
                            f"{list(self._fg_field_names)}")
        new = object.__new__(type(self))
        d = dict(self.__dict__)
        d.update(changes)
        dyn = set(d["_fg_dynamic"])
        for n in changes:  # a replaced field is re-classified from its new value
            static = self._fg_field_static.get(n)
            if static is None:
                static = not _holds_children(changes[n])
            (dyn.discard if static else dyn.add)(n)
        d["_fg_dynamic"] = tuple(n for n in self._fg_field_names if n in dyn)
        new.__dict__.update(d)
        return new

    # ---- calling

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        forward = getattr(self, "forward", None)
        if forward is None:
            raise TypeError(f"{type(self).__name__} defines neither __call__ nor forward")
        return forward(*args, **kwargs)

    # ---- comparison and printing

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return tree_equal(self, other)

    def __hash__(self) -> int:
        leaves, treedef = tree_util.tree_flatten(self)
        parts: list[Any] = []
        for leaf in leaves:
            if is_array(leaf):
                parts.append((tuple(getattr(leaf, "shape", ())), str(dtype_of(leaf))))
            else:
                try:
                    parts.append(hash(leaf))
                except TypeError:
                    parts.append(type(leaf).__qualname__)
        return hash((treedef, tuple(parts)))

    def __repr__(self) -> str:
        return _pformat(self, 0)


def _wrap_init(init: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(init)
    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        d = self.__dict__
        if d.get("_fg_building"):  # a nested super().__init__ call
            init(self, *args, **kwargs)
            return
        d["_fg_building"] = True
        try:
            init(self, *args, **kwargs)
        finally:
            del d["_fg_building"]
        self._fg_finalize()

    return __init__


def _register(cls: type) -> None:
    names = cls._fg_field_names  # type: ignore[attr-defined]
    keys = {n: tree_util.GetAttrKey(n) for n in names}
    new = object.__new__

    static_names: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # dynamic field names -> static field names

    def flatten(m: Module) -> tuple[list[Any], tuple[Any, ...]]:
        d = m.__dict__
        dyn = d["_fg_dynamic"]
        static = static_names.get(dyn)
        if static is None:
            static = static_names[dyn] = tuple(n for n in names if n not in dyn)
        return [d[n] for n in dyn], (dyn, _Static(static, tuple([d[n] for n in static])))

    def flatten_with_keys(m: Module) -> tuple[list[Any], tuple[Any, ...]]:
        children, aux = flatten(m)
        return [(keys[n], c) for n, c in zip(aux[0], children)], aux

    def unflatten(aux: tuple[Any, ...], children: list[Any]) -> Module:
        dyn, static = aux
        obj: Module = new(cls)
        d = obj.__dict__
        d.update(zip(static.names, static.values))
        d.update(zip(dyn, children))
        d["_fg_dynamic"] = dyn
        return obj

    try:
        tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    except ValueError:  # already registered (a class object re-processed)
        pass


# --------------------------------------------------------------------------- printing


_DTYPE_ABBREV = {"f": "f", "c": "c", "i": "i", "u": "u", "b": "bool"}


def _array_str(x: Any) -> str:
    traced = isinstance(x, Box)
    dt = dtype_of(x)
    shape = x._shape() if traced else tuple(getattr(x, "shape", ()))
    kind = _DTYPE_ABBREV.get(dt.kind, dt.name)
    name = kind if kind == "bool" else f"{kind}{dt.itemsize * 8}"
    s = f"{name}[{','.join(str(n) for n in shape)}]"
    return s + "(traced)" if traced else s


def _short(v: Any) -> str:
    if is_array(v):
        return _array_str(v)
    if isinstance(v, Module):
        return _pformat(v, 0)
    if callable(v) and hasattr(v, "__name__") and not isinstance(v, type):
        return f"<function {v.__name__}>"
    return repr(v)


def _pformat(x: Any, indent: int, width: int = 88) -> str:
    """Readable, indented representation of modules and containers of modules."""
    one_line = _pformat_flat(x)
    if len(one_line) + indent <= width:
        return one_line
    pad = " " * (indent + 2)
    if isinstance(x, Module):
        items = [f"{pad}{n}={_pformat(getattr(x, n), indent + 2, width)}"
                 for n in type(x)._fg_repr_fields]
        return f"{type(x).__name__}(\n" + ",\n".join(items) + f"\n{' ' * indent})"
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        open_, close = ("[", "]") if isinstance(x, list) else ("(", ")")
        items = [f"{pad}{_pformat(v, indent + 2, width)}" for v in x]
        return open_ + "\n" + ",\n".join(items) + f"\n{' ' * indent}" + close
    if isinstance(x, dict):
        items = [f"{pad}{k!r}: {_pformat(v, indent + 2, width)}" for k, v in x.items()]
        return "{\n" + ",\n".join(items) + f"\n{' ' * indent}}}"
    return one_line


def _pformat_flat(x: Any) -> str:
    if isinstance(x, Module):
        inner = ", ".join(f"{n}={_pformat_flat(getattr(x, n))}" for n in type(x)._fg_repr_fields)
        return f"{type(x).__name__}({inner})"
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        inner = ", ".join(_pformat_flat(v) for v in x)
        if isinstance(x, list):
            return f"[{inner}]"
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_pformat_flat(v)}" for k, v in x.items()) + "}"
    return _short(x)


# --------------------------------------------------------------------------- tree helpers


def tree_equal(a: Any, b: Any) -> bool:
    """True when two pytrees have the same structure and equal leaves (arrays by value).

    Example::

        fg.nn.tree_equal(model, fg.load(path, like=model))
    """
    la, ta = tree_util.tree_flatten(a)
    lb, tb = tree_util.tree_flatten(b)
    if ta != tb:
        return False
    for x, y in zip(la, lb):
        if is_array(x) or is_array(y):
            if not (is_array(x) and is_array(y) and _arrays_equal(x, y)):
                return False
        elif not _static_equal(x, y):
            return False
    return True


class _Marker:
    """Stands in for leaf ``i`` while :func:`tree_at` finds what ``where`` selects."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def __repr__(self) -> str:
        return f"<leaf {self.i}>"


def _is_none(x: Any) -> bool:
    return x is None


_NO_VALUE = object()


def tree_at(where: Callable[[Any], Any], tree: Any, replace: Any = _NO_VALUE,
            replace_fn: Callable[[Any], Any] | None = None, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """A copy of ``tree`` with the node(s) chosen by ``where`` replaced (functional update).

    ``where(tree)`` returns one node of the tree (a leaf or a subtree, e.g.
    ``lambda m: m.layers[0].weight``) or a tuple/list of nodes; give either
    ``replace`` (the new value, or a sequence of values when ``where`` returns
    several nodes) or ``replace_fn`` (old node -> new node). The original tree
    is not changed. Fields that are ``None`` can be selected and replaced.

    Example::

        model = fg.nn.tree_at(lambda m: m.layers[-1].bias, model, fnp.zeros(10))
        model = fg.nn.tree_at(lambda m: m.layers[0].weight, model, replace_fn=lambda w: w * 0.5)
    """
    if (replace is _NO_VALUE) == (replace_fn is None):
        raise TypeError("tree_at: give exactly one of replace= and replace_fn=")

    def leafy(x: Any) -> bool:
        return x is None or (is_leaf is not None and is_leaf(x))

    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=leafy)
    markers = [_Marker(i) for i in range(len(leaves))]
    marked = treedef.unflatten(markers)
    selected = where(marked)
    multiple = isinstance(selected, (tuple, list)) and not _is_node_of(selected, marked)
    nodes = list(selected) if multiple else [selected]
    if replace is not _NO_VALUE:
        if multiple:
            if not isinstance(replace, (tuple, list)) or len(replace) != len(nodes):
                raise ValueError(
                    f"tree_at: where selected {len(nodes)} nodes, so replace must be a sequence of "
                    f"{len(nodes)} values"
                )
            values = list(replace)
        else:
            values = [replace]
    else:
        values = None

    leaf_sel: dict[int, int] = {}  # leaf index -> position in nodes
    sub_sel: dict[int, int] = {}  # id of a subtree of `marked` -> position in nodes
    for k, node in enumerate(nodes):
        if isinstance(node, _Marker):
            if node.i in leaf_sel:
                raise ValueError("tree_at: where selected the same node twice")
            leaf_sel[node.i] = k
        else:
            if not _is_node_of(node, marked):
                raise ValueError(
                    f"tree_at: where returned {_short(node)}, which is not a node of the tree; "
                    f"where must select parts of its argument, e.g. lambda m: m.layer.weight"
                )
            sub_sel[id(node)] = k

    found: dict[int, int] = {}

    def is_sel(x: Any) -> bool:
        return x is None or id(x) in sub_sel or (is_leaf is not None and is_leaf(x))

    parts, outer = tree_util.tree_flatten(marked, is_leaf=is_sel)
    new_parts = []
    for part in parts:
        if isinstance(part, _Marker):
            pos = leaf_sel.get(part.i)
            old = leaves[part.i]
            if pos is None:
                new_parts.append(old)
            else:
                new_parts.append(values[pos] if values is not None else replace_fn(old))  # type: ignore[misc]
        elif id(part) in sub_sel:
            k = sub_sel[id(part)]
            if k in found.values():
                raise ValueError("tree_at: a selected subtree occurs more than once in the tree")
            found[id(part)] = k
            inner = tree_util.tree_leaves(part, is_leaf=lambda x: isinstance(x, _Marker))
            if any(m.i in leaf_sel for m in inner if isinstance(m, _Marker)):
                raise ValueError("tree_at: where selected a node and another node inside it")
            if values is not None:
                new_parts.append(values[k])
            else:
                old = tree_util.tree_map(lambda m: leaves[m.i] if isinstance(m, _Marker) else m, part,
                                         is_leaf=lambda x: isinstance(x, _Marker))
                new_parts.append(replace_fn(old))  # type: ignore[misc]
        else:
            new_parts.append(part)
    if len(found) != len(sub_sel):
        raise ValueError("tree_at: could not locate a selected subtree in the tree")
    return outer.unflatten(new_parts)


def _is_node_of(node: Any, tree: Any) -> bool:
    if node is tree:
        return True
    hit = []

    def probe(x: Any) -> bool:
        if x is node:
            hit.append(x)
            return True
        return isinstance(x, _Marker)

    tree_util.tree_flatten(tree, is_leaf=probe)
    return bool(hit)


def _filter_leaf(spec: Any, x: Any) -> bool:
    keep = spec(x) if callable(spec) else spec
    if not isinstance(keep, (bool, np.bool_)):
        raise TypeError(
            f"partition: a filter spec must give a bool for each leaf, got {keep!r}; use a "
            f"predicate such as fg.nn.is_inexact_array or a pytree of True/False"
        )
    return bool(keep)


def partition(tree: Any, filter_spec: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[Any, Any]:
    """Split ``tree`` into two trees of the same structure: (chosen leaves, the rest).

    ``filter_spec`` is a predicate on leaves (e.g. :func:`is_inexact_array`) or a
    pytree of booleans/predicates whose structure is a prefix of ``tree``'s (a
    ``True`` at a sub-module selects all its leaves). Leaves not chosen are
    ``None`` in the first tree, and vice versa. :func:`combine` joins them.

    Example: train only the last layer::

        spec = fg.tree_util.tree_map(lambda _: False, model)
        spec = fg.nn.tree_at(lambda m: m.layers[-1], spec, replace=True)
        params, frozen = fg.nn.partition(model, spec)
        loss = lambda p, x, y: loss_fn(fg.nn.combine(p, frozen), x, y)
        grads = fg.grad(loss)(params, x, y)        # no gradients for frozen leaves
    """
    if callable(filter_spec) and not isinstance(filter_spec, Module):
        leaves, treedef = tree_util.tree_flatten(tree, is_leaf=is_leaf)
        keep = [_filter_leaf(filter_spec, x) for x in leaves]
        return (treedef.unflatten([x if k else None for x, k in zip(leaves, keep)]),
                treedef.unflatten([None if k else x for x, k in zip(leaves, keep)]))
    specs, spec_def = tree_util.tree_flatten(filter_spec)
    try:
        subtrees = spec_def.flatten_up_to(tree)
    except tree_util.TreeStructureError as e:
        raise ValueError(f"partition: the filter spec does not match the tree: {e}") from None
    left, right = [], []
    for spec, sub in zip(specs, subtrees):
        sl, sd = tree_util.tree_flatten(sub, is_leaf=is_leaf)
        keep = [_filter_leaf(spec, x) for x in sl]
        left.append(sd.unflatten([x if k else None for x, k in zip(sl, keep)]))
        right.append(sd.unflatten([None if k else x for x, k in zip(sl, keep)]))
    return spec_def.unflatten(left), spec_def.unflatten(right)


def combine(*trees: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Join trees made by :func:`partition`: each leaf from the first tree where it is not None.

    Example::

        model = fg.nn.combine(params, frozen)
    """
    if not trees:
        raise TypeError("combine needs at least one tree")

    def pick(*xs: Any) -> Any:
        for x in xs:
            if x is not None:
                return x
        return None

    def leafy(x: Any) -> bool:
        return x is None or (is_leaf is not None and is_leaf(x))

    try:
        return tree_util.tree_map(pick, *trees, is_leaf=leafy)
    except tree_util.TreeStructureError as e:
        raise ValueError(f"combine: the trees do not have the same structure: {e}") from None


def count_params(tree: Any, filter_spec: Callable[[Any], bool] = is_inexact_array) -> int:
    """Number of scalar parameters: total size of the leaves that pass ``filter_spec``.

    Example::

        fg.nn.count_params(fg.nn.Linear(3, 4))   # 16
    """
    total = 0
    for leaf in tree_util.tree_leaves(tree):
        if filter_spec(leaf):
            shape = leaf._shape() if isinstance(leaf, Box) else tuple(getattr(leaf, "shape", ()))
            n = 1
            for s in shape:
                n *= int(s)
            total += n
    return total

