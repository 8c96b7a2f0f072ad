"""Pytrees: nested containers of arrays, flattened to a list of leaves and a structure.

A *pytree* is a value built from registered container types (``tuple``, ``list``,
``dict``, ``None``, namedtuples, ``OrderedDict``, ``defaultdict`` and any class
registered here) whose non-container parts are *leaves*. Transforms flatten their
arguments to leaves, work on the leaves, and rebuild the containers afterwards:

>>> leaves, treedef = tree_flatten({'b': (1, 2), 'a': [3, None]})
>>> leaves
[3, 1, 2]
>>> treedef
PyTreeDef({'a': [*, None], 'b': (*, *)})
>>> tree_unflatten(treedef, [30, 10, 20])
{'a': [30, None], 'b': (10, 20)}

Semantics follow ``jax.tree_util``:

* ``None`` is a container with no children (an empty subtree), not a leaf; pass
  ``is_leaf=lambda x: x is None`` to treat it as a leaf.
* ``dict`` (and ``defaultdict``) children are visited in sorted key order;
  ``OrderedDict`` keeps its own order. Keys of mixed, mutually unorderable types
  (``{1: a, 'x': b}``) are ordered by type name first instead of raising as JAX does.
* Only the exact registered type is a container: a subclass of ``list`` or ``dict``
  is a leaf unless registered itself. Namedtuples (any tuple subclass with
  ``_fields``) are detected without registration.
* ``is_leaf(x)`` is called on every subtree before its type is looked at; when it
  returns true the subtree is kept whole as one leaf.

Differences from JAX, on purpose:

* ``tree_map`` with several trees requires them all to have the *same* structure
  (JAX accepts ``tree``'s structure as a prefix of the others), and a mismatch names
  the key path where they first differ.
* Classes registered with :func:`register_dataclass` are rebuilt without calling
  ``__init__``/``__post_init__``, so validating constructors do not run on placeholder
  leaves (``None``, ``object()``, axis specs) that transforms put in a tree.

Structure mismatches raise :class:`TreeStructureError` (a ``ValueError``) carrying
the key path, so callers such as ``vmap`` can word their own message.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict, defaultdict
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar, overload

__all__ = [
    "PyTreeDef",
    "TreeStructureError",
    "SequenceKey",
    "DictKey",
    "GetAttrKey",
    "FlattenedIndexKey",
    "KeyEntry",
    "KeyPath",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "tree_map_with_path",
    "tree_all",
    "tree_reduce",
    "keystr",
    "register_pytree_node",
    "register_pytree_with_keys",
    "register_pytree_node_class",
    "register_dataclass",
]

PyTree = Any
Leaf = Any
IsLeafFn = Callable[[Any], bool]
T = TypeVar("T")
C = TypeVar("C", bound=type)


# --------------------------------------------------------------------------- keys


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Position ``idx`` in a tuple or list; prints as ``[0]``.

    >>> str(SequenceKey(0))
    '[0]'
    """

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Key ``key`` of a dict-like node; prints as ``['w']``.

    >>> str(DictKey('w'))
    "['w']"
    """

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Attribute ``name`` of a namedtuple or dataclass node; prints as ``.bias``.

    >>> str(GetAttrKey('bias'))
    '.bias'
    """

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Child number ``key`` of a custom node registered without key names.

    >>> str(FlattenedIndexKey(1))
    '[<flat index 1>]'
    """

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple[KeyEntry, ...]


def keystr(keys: Sequence[Any], *, simple: bool = False, separator: str = "") -> str:
    """Render a key path as a string, e.g. ``[0]['w'].bias``.

    With ``simple=True`` only the bare key values are printed, joined by ``separator``.

    >>> path = (SequenceKey(0), DictKey('w'), GetAttrKey('bias'))
    >>> keystr(path)
    "[0]['w'].bias"
    >>> keystr(path, simple=True, separator='/')
    '0/w/bias'
    """
    if not simple:
        return separator.join(str(k) for k in keys)
    return separator.join(str(_key_value(k)) for k in keys)


def _key_value(k: Any) -> Any:
    if isinstance(k, SequenceKey):
        return k.idx
    if isinstance(k, DictKey):
        return k.key
    if isinstance(k, GetAttrKey):
        return k.name
    if isinstance(k, FlattenedIndexKey):
        return k.key
    return k


def _where(path: Sequence[Any]) -> str:
    return keystr(path) if path else "the root"


# --------------------------------------------------------------------------- node kinds


class _NodeKind:
    """How one container type is taken apart and rebuilt (one instance per type)."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys", "describe", "fmt")

    def __init__(
        self,
        type_: type,
        flatten: Callable[[Any], tuple[Iterable[Any], Any]],
        unflatten: Callable[[Any, list[Any]], Any],
        flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None,
        describe: Callable[[Any, int], str],
        fmt: Callable[[Any, list[str]], str],
    ) -> None:
        self.type = type_
        self.flatten = flatten
        self.unflatten = unflatten
        if flatten_with_keys is None:

            def flatten_with_keys(x: Any) -> tuple[list[tuple[Any, Any]], Any]:
                children, aux = flatten(x)
                return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux

        self.flatten_with_keys = flatten_with_keys
        self.describe = describe
        self.fmt = fmt

    def __repr__(self) -> str:
        return f"<pytree node kind {self.type.__qualname__}>"

    # Kinds are compared by identity inside structures: copies must be the same object.
    def __copy__(self) -> _NodeKind:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _NodeKind:
        return self


# Exact type -> kind. Looked up with type(x) first on every subtree (the fast path);
# namedtuples are found afterwards by duck typing.
_registry: dict[type, _NodeKind] = {}
_registry_get = _registry.get


def _sorted_keys(d: Iterable[Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(d))
    except TypeError:
        pass
    try:  # mixed key types: order by type first, then by value
        return tuple(sorted(d, key=lambda k: (type(k).__module__, type(k).__qualname__, k)))
    except TypeError:
        raise TypeError(
            f"pytree dict keys must be sortable to give a deterministic order; "
            f"could not sort keys {list(d)!r}. Use an OrderedDict to fix the order."
        ) from None


def _fmt_dict_items(keys: Sequence[Any], children: list[str]) -> str:
    return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(keys, children)) + "}"


def _fmt_tuple(aux: Any, children: list[str]) -> str:
    return "(" + children[0] + ",)" if len(children) == 1 else "(" + ", ".join(children) + ")"


def _factory_name(factory: Any) -> str:
    return getattr(factory, "__name__", None) or repr(factory)


def _flatten_dict(x: dict[Any, Any]) -> tuple[list[Any], tuple[Any, ...]]:
    keys = _sorted_keys(x)
    return [x[k] for k in keys], keys


def _flatten_defaultdict(x: defaultdict[Any, Any]) -> tuple[list[Any], tuple[Any, ...]]:
    keys = _sorted_keys(x)
    return [x[k] for k in keys], (x.default_factory, keys)


def _unflatten_defaultdict(aux: tuple[Any, ...], children: list[Any]) -> defaultdict[Any, Any]:
    factory, keys = aux
    return defaultdict(factory, zip(keys, children))


_TUPLE = _NodeKind(
    tuple,
    lambda x: (x, None),
    lambda aux, ch: tuple(ch),
    lambda x: ([(SequenceKey(i), c) for i, c in enumerate(x)], None),
    lambda aux, n: f"a tuple of length {n}",
    _fmt_tuple,
)
_LIST = _NodeKind(
    list,
    lambda x: (x, None),
    lambda aux, ch: list(ch),
    lambda x: ([(SequenceKey(i), c) for i, c in enumerate(x)], None),
    lambda aux, n: f"a list of length {n}",
    lambda aux, ch: "[" + ", ".join(ch) + "]",
)
_DICT = _NodeKind(
    dict,
    _flatten_dict,
    lambda keys, ch: dict(zip(keys, ch)),
    lambda x: ([(DictKey(k), x[k]) for k in _sorted_keys(x)], _sorted_keys(x)),
    lambda keys, n: f"a dict with keys {list(keys)!r}",
    _fmt_dict_items,
)
_NONE = _NodeKind(
    type(None),
    lambda x: ((), None),
    lambda aux, ch: None,
    lambda x: ((), None),
    lambda aux, n: "None",
    lambda aux, ch: "None",
)
_ORDEREDDICT = _NodeKind(
    OrderedDict,
    lambda x: (list(x.values()), tuple(x)),
    lambda keys, ch: OrderedDict(zip(keys, ch)),
    lambda x: ([(DictKey(k), v) for k, v in x.items()], tuple(x)),
    lambda keys, n: f"an OrderedDict with keys {list(keys)!r}",
    lambda keys, ch: f"OrderedDict({_fmt_dict_items(keys, ch)})",
)
_DEFAULTDICT = _NodeKind(
    defaultdict,
    _flatten_defaultdict,
    _unflatten_defaultdict,
    lambda x: ([(DictKey(k), x[k]) for k in _sorted_keys(x)], (x.default_factory, _sorted_keys(x))),
    lambda aux, n: f"a defaultdict({_factory_name(aux[0])}) with keys {list(aux[1])!r}",
    lambda aux, ch: f"defaultdict({_factory_name(aux[0])}, {_fmt_dict_items(aux[1], ch)})",
)
# Namedtuples are not in the registry (any tuple subclass with _fields is one);
# their aux data is the namedtuple class itself.
_NAMEDTUPLE = _NodeKind(
    tuple,
    lambda x: (x, type(x)),
    lambda cls, ch: cls(*ch),
    lambda x: ([(GetAttrKey(f), c) for f, c in zip(x._fields, x)], type(x)),
    lambda cls, n: f"a {cls.__name__} namedtuple",
    lambda cls, ch: f"{cls.__name__}(" + ", ".join(f"{f}={c}" for f, c in zip(cls._fields, ch)) + ")",
)

for _kind in (_TUPLE, _LIST, _DICT, _NONE, _ORDEREDDICT, _DEFAULTDICT):
    _registry[_kind.type] = _kind
del _kind


def _kind_of(x: Any) -> _NodeKind | None:
    """The node kind of ``x``, or None when ``x`` is a leaf (is_leaf not considered)."""
    kind = _registry_get(type(x))
    if kind is None and isinstance(x, tuple) and hasattr(x, "_fields"):
        return _NAMEDTUPLE
    return kind


def _describe_leaf(x: Any) -> str:
    return f"a leaf of type {type(x).__name__}"


# --------------------------------------------------------------------------- registration


def _check_unregistered(cls: type) -> None:
    if not isinstance(cls, type):
        raise TypeError(f"pytree node type must be a class, got {cls!r}")
    if cls in _registry:
        raise ValueError(
            f"{cls.__module__}.{cls.__qualname__} is already registered as a pytree node type; "
            f"a type can be registered only once"
        )


def _custom_kind(
    cls: type,
    flatten: Callable[[Any], tuple[Iterable[Any], Any]],
    unflatten: Callable[[Any, list[Any]], Any],
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None,
) -> _NodeKind:
    name = cls.__name__
    return _NodeKind(
        cls,
        flatten,
        unflatten,
        flatten_with_keys,
        lambda aux, n: f"a {name} node with {n} children and aux data {aux!r}",
        lambda aux, ch: f"CustomNode({name}[{aux!r}], [{', '.join(ch)}])",
    )


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]],
    unflatten_func: Callable[[Any, list[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Any]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree container.

    ``flatten_func(x) -> (children, aux_data)`` and ``unflatten_func(aux_data, children)
    -> x``. ``aux_data`` is the static part: it is compared (``==``) and hashed as part
    of the tree structure, so it should be hashable. Without ``flatten_with_keys_func``
    the children's key paths are ``FlattenedIndexKey(i)``. Registering a type twice
    raises ``ValueError``.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))
    >>> tree_leaves(Pair(1, (2, 3)))
    [1, 2, 3]
    """
    _check_unregistered(nodetype)
    _registry[nodetype] = _custom_kind(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Any]],
    unflatten_func: Callable[[Any, list[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Any]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree container whose children have named key paths.

    ``flatten_with_keys(x) -> ([(key, child), ...], aux_data)``; ``flatten_func`` is
    derived from it when not given (give it when a faster one exists).

    >>> class Box:
    ...     def __init__(self, v): self.v = v
    >>> register_pytree_with_keys(
    ...     Box, lambda b: ([(GetAttrKey('v'), b.v)], None), lambda aux, ch: Box(*ch))
    >>> [keystr(p) for p, _ in tree_flatten_with_path([Box(1)])[0]]
    ['[0].v']
    """
    if flatten_func is None:

        def flatten_func(x: T) -> tuple[list[Any], Any]:
            keyed, aux = flatten_with_keys(x)
            return [c for _, c in keyed], aux

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: C) -> C:
    """Class decorator: register a class that defines its own flattening.

    The class defines ``tree_flatten(self) -> (children, aux_data)`` and a classmethod
    ``tree_unflatten(cls, aux_data, children)``; optionally
    ``tree_flatten_with_keys(self) -> ([(key, child), ...], aux_data)``. Base classes
    (e.g. ``funcgrad.nn.Module``) can call this from ``__init_subclass__`` so that every
    subclass is a pytree.

    >>> @register_pytree_node_class
    ... class Scaled:
    ...     def __init__(self, x, k): self.x, self.k = x, k
    ...     def tree_flatten(self): return (self.x,), self.k
    ...     @classmethod
    ...     def tree_unflatten(cls, k, children): return cls(children[0], k)
    >>> tree_structure(Scaled(1.0, 3))
    PyTreeDef(CustomNode(Scaled[3], [*]))
    """
    with_keys = getattr(cls, "tree_flatten_with_keys", None)
    register_pytree_node(
        cls,
        cls.tree_flatten,  # type: ignore[attr-defined]
        cls.tree_unflatten,  # type: ignore[attr-defined]
        with_keys,
    )
    return cls


@overload
def register_dataclass(
    nodetype: C, data_fields: Sequence[str] | None = None, meta_fields: Sequence[str] | None = None
) -> C: ...


@overload
def register_dataclass(
    nodetype: None = None, data_fields: Sequence[str] | None = None, meta_fields: Sequence[str] | None = None
) -> Callable[[C], C]: ...


def register_dataclass(
    nodetype: C | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
) -> Any:
    """Register a dataclass as a pytree; usable as a plain or a parameterised decorator.

    ``data_fields`` are children (traced, differentiated); ``meta_fields`` are static
    configuration stored in the tree structure (must be hashable). When neither is
    given, every dataclass field is data unless declared with
    ``dataclasses.field(metadata={'static': True})``; when only one is given, the
    other is every remaining field. Rebuilding does not call ``__init__`` or
    ``__post_init__`` (fields are set directly, frozen dataclasses included).

    >>> @register_dataclass
    ... @dataclasses.dataclass(frozen=True)
    ... class Linear:
    ...     w: Any
    ...     b: Any
    ...     act: str = dataclasses.field(default='relu', metadata={'static': True})
    >>> tree_flatten(Linear(1.0, 2.0))
    ([1.0, 2.0], PyTreeDef(Linear(w=*, b=*; act='relu')))
    """
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields, meta_fields=meta_fields)
    cls = nodetype
    _check_unregistered(cls)
    if dataclasses.is_dataclass(cls):
        all_fields = [f.name for f in dataclasses.fields(cls)]
        if data_fields is None and meta_fields is None:
            meta = [f.name for f in dataclasses.fields(cls) if f.metadata.get("static", False)]
            data = [n for n in all_fields if n not in meta]
        elif data_fields is None:
            meta = list(meta_fields)  # type: ignore[arg-type]
            data = [n for n in all_fields if n not in meta]
        elif meta_fields is None:
            data = list(data_fields)
            meta = [n for n in all_fields if n not in data]
        else:
            data, meta = list(data_fields), list(meta_fields)
        unknown = [n for n in data + meta if n not in all_fields]
        missing = [n for n in all_fields if n not in data and n not in meta]
        if unknown or missing:
            raise ValueError(
                f"register_dataclass({cls.__qualname__}): data_fields and meta_fields must "
                f"name each field of the dataclass once; unknown: {unknown}, missing: {missing}"
            )
    elif data_fields is None or meta_fields is None:
        raise TypeError(
            f"register_dataclass({cls.__qualname__}): not a dataclass, so both data_fields "
            f"and meta_fields must be given"
        )
    else:
        data, meta = list(data_fields), list(meta_fields)
    both = set(data) & set(meta)
    if both or len(set(data)) != len(data) or len(set(meta)) != len(meta):
        raise ValueError(
            f"register_dataclass({cls.__qualname__}): a field is listed twice "
            f"(data_fields={data}, meta_fields={meta})"
        )

    data_t, meta_t = tuple(data), tuple(meta)
    keys = tuple(GetAttrKey(n) for n in data_t)
    new = object.__new__
    setattr_ = object.__setattr__

    def flatten(x: Any) -> tuple[list[Any], tuple[Any, ...]]:
        return [getattr(x, n) for n in data_t], tuple(getattr(x, n) for n in meta_t)

    def flatten_with_keys(x: Any) -> tuple[list[Any], tuple[Any, ...]]:
        return [(k, getattr(x, n)) for k, n in zip(keys, data_t)], tuple(getattr(x, n) for n in meta_t)

    def unflatten(aux: tuple[Any, ...], children: list[Any]) -> Any:
        obj: Any = new(cls)
        for n, v in zip(meta_t, aux):
            setattr_(obj, n, v)
        for n, v in zip(data_t, children):
            setattr_(obj, n, v)
        return obj

    name = cls.__name__

    def describe(aux: tuple[Any, ...], n: int) -> str:
        static = ", ".join(f"{k}={v!r}" for k, v in zip(meta_t, aux))
        return f"a {name} dataclass" + (f" with static fields ({static})" if static else "")

    def fmt(aux: tuple[Any, ...], ch: list[str]) -> str:
        parts = ", ".join(f"{k}={c}" for k, c in zip(data_t, ch))
        static = ", ".join(f"{k}={v!r}" for k, v in zip(meta_t, aux))
        return f"{name}({parts}; {static})" if static else f"{name}({parts})"

    _registry[cls] = _NodeKind(cls, flatten, unflatten, flatten_with_keys, describe, fmt)
    return cls


# --------------------------------------------------------------------------- structure


class _Leaf:
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"

    def __copy__(self) -> _Leaf:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Leaf:
        return self


# A structure node is either _LEAF or a tuple (kind, aux_data, children_nodes).
# Plain tuples make equality and hashing of whole structures native and fast.
_LEAF = _Leaf()


class TreeStructureError(ValueError):
    """Two pytree structures differ; ``path`` is the key path of the first difference.

    ``expected`` and ``got`` describe the two sides in words ("a tuple of length 2").
    """

    def __init__(self, prefix: str, path: Iterable[KeyEntry], expected: str, got: str, note: str = "") -> None:
        self.path: KeyPath = tuple(path)
        self.expected = expected
        self.got = got
        msg = f"{prefix}: structures differ at {_where(self.path)}: expected {expected}, got {got}"
        super().__init__(msg + note)


class PyTreeDef:
    """The structure of a pytree: its containers, with the leaves left out.

    Equal structures compare equal and hash alike; ``repr`` shows ``*`` for leaves.

    >>> treedef = tree_structure((1, {'a': 2}))
    >>> treedef
    PyTreeDef((*, {'a': *}))
    >>> treedef.num_leaves, treedef.unflatten(['x', 'y'])
    (2, ('x', {'a': 'y'}))
    """

    __slots__ = ("_node", "num_leaves", "_hash")

    def __init__(self, node: Any, num_leaves: int) -> None:
        self._node = node
        self.num_leaves = num_leaves
        self._hash: int | None = None

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild a tree of this structure from ``leaves`` (in flattening order).

        >>> tree_structure([1, (2, 3)]).unflatten([4, 5, 6])
        [4, (5, 6)]
        """
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"unflatten: the structure {self!r} has {self.num_leaves} leaves, "
                f"but {len(leaves)} were given"
            )
        node = self._node
        if node is _LEAF:
            return leaves[0]
        return _build(node, iter(leaves))

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """Flatten ``tree`` only as deep as this structure goes.

        This structure must be a prefix of ``tree``'s: each leaf here matches a whole
        subtree there, which is returned as one item (this is how ``vmap`` matches an
        ``in_axes`` spec against its arguments). A mismatch raises
        :class:`TreeStructureError` naming the key path.

        >>> tree_structure((0, 0)).flatten_up_to(([1, 2], {'a': 3}))
        [[1, 2], {'a': 3}]
        >>> try:
        ...     tree_structure((0, {'w': 0})).flatten_up_to((1, {'w': 2, 'b': 3}))
        ... except TreeStructureError as e:
        ...     print(keystr(e.path), '|', e)
        [1] | flatten_up_to: structures differ at [1]: expected a dict with keys ['w'], got a dict with keys ['b', 'w']
        """
        out: list[PyTree] = []
        _flatten_up_to(self._node, tree, out, [])
        return out

    @property
    def num_nodes(self) -> int:
        """Number of nodes, leaves included.

        >>> tree_structure((1, [2, None])).num_nodes
        5
        """
        return _count_nodes(self._node)

    def children(self) -> list[PyTreeDef]:
        """Structures of the direct children (empty for a leaf).

        >>> tree_structure((1, [2, 3])).children()
        [PyTreeDef(*), PyTreeDef([*, *])]
        """
        if self._node is _LEAF:
            return []
        return [PyTreeDef(c, _count_leaves(c)) for c in self._node[2]]

    def is_leaf(self) -> bool:
        """True for the structure of a single leaf.

        >>> tree_structure(1.0).is_leaf(), tree_structure(None).is_leaf()
        (True, False)
        """
        return self._node is _LEAF

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return self is other or self._node == other._node

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self._node)
        return h

    def __repr__(self) -> str:
        return f"PyTreeDef({_fmt(self._node)})"

    # Immutable: copying (e.g. deepcopy of a state that holds a treedef) returns itself.
    def __copy__(self) -> PyTreeDef:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PyTreeDef:
        return self


def _fmt(node: Any) -> str:
    if node is _LEAF:
        return "*"
    kind: _NodeKind
    kind, aux, children = node
    return kind.fmt(aux, [_fmt(c) for c in children])


def _count_leaves(node: Any) -> int:
    if node is _LEAF:
        return 1
    return sum(_count_leaves(c) for c in node[2])


def _count_nodes(node: Any) -> int:
    if node is _LEAF:
        return 1
    return 1 + sum(_count_nodes(c) for c in node[2])


# --------------------------------------------------------------------------- flatten / unflatten


def _flatten(x: Any, leaves: list[Any], is_leaf: IsLeafFn | None) -> Any:
    """Append the leaves of ``x`` to ``leaves`` and return its structure node."""
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    kind = _registry_get(type(x))
    if kind is None:
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            kind = _NAMEDTUPLE
        else:
            leaves.append(x)
            return _LEAF
    if kind is _TUPLE or kind is _LIST:
        children, aux = x, None
    else:
        children, aux = kind.flatten(x)
    nodes: list[Any] = []
    append = nodes.append
    for c in children:
        # Inline the common case (a plain leaf, no is_leaf) to skip a call per leaf.
        if is_leaf is None and type(c) not in _registry and not isinstance(c, tuple):
            leaves.append(c)
            append(_LEAF)
        else:
            append(_flatten(c, leaves, is_leaf))
    return (kind, aux, tuple(nodes))


def _build(node: Any, it: Any) -> Any:
    kind, aux, children = node
    values = [next(it) if c is _LEAF else _build(c, it) for c in children]
    if kind is _TUPLE:
        return tuple(values)
    if kind is _LIST:
        return values
    return kind.unflatten(aux, values)


def tree_flatten(tree: PyTree, is_leaf: IsLeafFn | None = None) -> tuple[list[Leaf], PyTreeDef]:
    """Flatten ``tree`` into its leaves and its structure.

    >>> tree_flatten((1, {'b': 2, 'a': None}))
    ([1, 2], PyTreeDef((*, {'a': None, 'b': *})))
    >>> tree_flatten([None, 1], is_leaf=lambda x: x is None)[0]
    [None, 1]
    """
    leaves: list[Any] = []
    node = _flatten(tree, leaves, is_leaf)
    return leaves, PyTreeDef(node, len(leaves))


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> PyTree:
    """Rebuild a tree from its structure and leaves (inverse of :func:`tree_flatten`).

    >>> leaves, treedef = tree_flatten([1, (2, 3)])
    >>> tree_unflatten(treedef, [x * 10 for x in leaves])
    [10, (20, 30)]
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: IsLeafFn | None = None) -> list[Leaf]:
    """The leaves of ``tree`` in flattening order.

    >>> tree_leaves({'b': [1, 2], 'a': 3})
    [3, 1, 2]
    """
    leaves: list[Any] = []
    _flatten(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree: PyTree, is_leaf: IsLeafFn | None = None) -> PyTreeDef:
    """The structure of ``tree``.

    >>> tree_structure({'a': 1, 'b': (2, None)})
    PyTreeDef({'a': *, 'b': (*, None)})
    """
    return tree_flatten(tree, is_leaf)[1]


# --------------------------------------------------------------------------- key paths


def _flatten_with_path(x: Any, path: KeyPath, out: list[Any], is_leaf: IsLeafFn | None) -> Any:
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return _LEAF
    kind = _kind_of(x)
    if kind is None:
        out.append((path, x))
        return _LEAF
    keyed, aux = kind.flatten_with_keys(x)
    nodes = tuple(_flatten_with_path(c, path + (k,), out, is_leaf) for k, c in keyed)
    return (kind, aux, nodes)


def tree_flatten_with_path(
    tree: PyTree, is_leaf: IsLeafFn | None = None
) -> tuple[list[tuple[KeyPath, Leaf]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes with its key path.

    >>> pairs, _ = tree_flatten_with_path({'w': [1, 2]})
    >>> [(keystr(p), x) for p, x in pairs]
    [("['w'][0]", 1), ("['w'][1]", 2)]
    """
    out: list[Any] = []
    node = _flatten_with_path(tree, (), out, is_leaf)
    return out, PyTreeDef(node, len(out))


def tree_leaves_with_path(tree: PyTree, is_leaf: IsLeafFn | None = None) -> list[tuple[KeyPath, Leaf]]:
    """The ``(key_path, leaf)`` pairs of ``tree``.

    >>> [keystr(p) for p, _ in tree_leaves_with_path((1, [2]))]
    ['[0]', '[1][0]']
    """
    return tree_flatten_with_path(tree, is_leaf)[0]


# --------------------------------------------------------------------------- mismatches


def _first_difference(a: Any, b: Any, is_leaf: IsLeafFn | None, path: list[Any]) -> tuple[list[Any], str, str] | None:
    """Walk two trees side by side; return (path, expected, got) at the first difference."""
    a_leaf = (is_leaf is not None and is_leaf(a)) or _kind_of(a) is None
    b_leaf = (is_leaf is not None and is_leaf(b)) or _kind_of(b) is None
    if a_leaf and b_leaf:
        return None
    if a_leaf:
        kb = _kind_of(b)
        children_b, aux_b = kb.flatten(b)  # type: ignore[union-attr]
        return path, "a leaf", kb.describe(aux_b, len(list(children_b)))  # type: ignore[union-attr]
    ka = _kind_of(a)
    keyed_a, aux_a = ka.flatten_with_keys(a)  # type: ignore[union-attr]
    keyed_a = list(keyed_a)
    expected = ka.describe(aux_a, len(keyed_a))  # type: ignore[union-attr]
    if b_leaf:
        return path, expected, _describe_leaf(b)
    kb = _kind_of(b)
    children_b, aux_b = kb.flatten(b)  # type: ignore[union-attr]
    children_b = list(children_b)
    got = kb.describe(aux_b, len(children_b))  # type: ignore[union-attr]
    if kb is not ka or aux_a != aux_b or len(keyed_a) != len(children_b):
        if expected == got:  # same words, different aux data (e.g. unequal custom aux)
            got += " (unequal aux data)"
        return path, expected, got
    for (k, ca), cb in zip(keyed_a, children_b):
        found = _first_difference(ca, cb, is_leaf, path + [k])
        if found is not None:
            return found
    return None


def _flatten_up_to(node: Any, x: Any, out: list[Any], path: list[Any]) -> None:
    if node is _LEAF:
        out.append(x)
        return
    kind, aux, children = node
    expected = kind.describe(aux, len(children))
    kx = _kind_of(x)
    if kx is None:
        raise TreeStructureError("flatten_up_to", path, expected, _describe_leaf(x))
    keyed_x, aux_x = kx.flatten_with_keys(x)
    keyed_x = list(keyed_x)
    if kx is not kind:
        raise TreeStructureError("flatten_up_to", path, expected, kx.describe(aux_x, len(keyed_x)))
    if kind is _DICT or kind is _ORDEREDDICT or kind is _DEFAULTDICT:
        # Match dict-like children by key, not by position.
        keys = aux[1] if kind is _DEFAULTDICT else aux
        keys_x = aux_x[1] if kind is _DEFAULTDICT else aux_x
        if set(keys) != set(keys_x):
            got = kx.describe(aux_x, len(keyed_x))
            raise TreeStructureError("flatten_up_to", path, expected, got)
        for k, c in zip(keys, children):
            _flatten_up_to(c, x[k], out, path + [DictKey(k)])
        return
    if aux != aux_x or len(keyed_x) != len(children):
        got = kx.describe(aux_x, len(keyed_x))
        if got == expected:
            got += " (unequal aux data)"
        raise TreeStructureError("flatten_up_to", path, expected, got)
    for c, (k, cx) in zip(children, keyed_x):
        _flatten_up_to(c, cx, out, path + [k])


# --------------------------------------------------------------------------- map / reduce


def tree_map(f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeafFn | None = None) -> PyTree:
    """Apply ``f`` to each leaf (or to corresponding leaves of several trees).

    All trees must have the same structure; otherwise a :class:`TreeStructureError`
    (a ``ValueError``) names the key path where they first differ.

    >>> tree_map(lambda x: x * 2, {'a': 1, 'b': (2, None)})
    {'a': 2, 'b': (4, None)}
    >>> tree_map(lambda x, y: x + y, [1, 2], [10, 20])
    [11, 22]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    all_leaves = [leaves]
    for i, other in enumerate(rest):
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            _raise_mismatch("tree_map", tree, other, i, treedef, other_def, is_leaf)
        all_leaves.append(other_leaves)
    return treedef.unflatten([f(*xs) for xs in zip(*all_leaves)])


def tree_map_with_path(
    f: Callable[..., Any], tree: PyTree, *rest: PyTree, is_leaf: IsLeafFn | None = None
) -> PyTree:
    """Like :func:`tree_map`, but ``f(key_path, leaf, *other_leaves)`` also gets the path.

    >>> tree_map_with_path(lambda p, x: keystr(p), {'w': (0, 0)})
    {'w': ("['w'][0]", "['w'][1]")}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(p, x) for p, x in pairs])
    all_leaves = []
    for i, other in enumerate(rest):
        other_leaves, other_def = tree_flatten(other, is_leaf)
        if other_def != treedef:
            _raise_mismatch("tree_map_with_path", tree, other, i, treedef, other_def, is_leaf)
        all_leaves.append(other_leaves)
    return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *all_leaves)])


def _raise_mismatch(
    name: str, tree: PyTree, other: PyTree, i: int, treedef: PyTreeDef, other_def: PyTreeDef,
    is_leaf: IsLeafFn | None,
) -> None:
    note = f" (tree argument {i + 2} compared with the first)"
    found = _first_difference(tree, other, is_leaf, [])
    if found is None:  # unreachable unless a flatten function is inconsistent
        raise TreeStructureError(name, [], repr(treedef), repr(other_def), note)
    path, expected, got = found
    raise TreeStructureError(name, path, expected, got, note)


_NO_INITIALIZER = object()


def tree_reduce(
    function: Callable[[T, Any], T],
    tree: PyTree,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: IsLeafFn | None = None,
) -> T:
    """Fold ``function`` over the leaves, like ``functools.reduce``.

    >>> tree_reduce(lambda acc, x: acc + x, {'a': 1, 'b': [2, 3]})
    6
    >>> tree_reduce(max, [], initializer=0)
    0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise TypeError("tree_reduce of a tree with no leaves needs an initializer")
        result: T = functools.reduce(function, leaves)
        return result
    result = functools.reduce(function, leaves, initializer)
    return result


def tree_all(tree: PyTree, *, is_leaf: IsLeafFn | None = None) -> bool:
    """True when every leaf is truthy (and for a tree without leaves).

    >>> tree_all((True, [1, 'x'])), tree_all({'a': 0})
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))
