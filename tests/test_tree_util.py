"""Tests for funcgrad.tree_util: round trips, key paths, mismatch errors, registration."""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict, defaultdict, namedtuple
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from funcgrad import tree_util as tu
from funcgrad.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    PyTreeDef,
    SequenceKey,
    TreeStructureError,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_unflatten,
)

Point = namedtuple("Point", ["x", "y"])


class Pair(NamedTuple):
    first: Any
    second: Any


# --------------------------------------------------------------------------- helpers


def same(a: Any, b: Any) -> bool:
    """Structural equality that also checks container types (== says (1,) != [1] but
    {'a': 1} == OrderedDict(a=1) and Point(1, 2) == (1, 2))."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if set(a) != set(b):
            return False
        if isinstance(a, OrderedDict) and list(a) != list(b):
            return False
        if isinstance(a, defaultdict) and a.default_factory is not b.default_factory:
            return False
        return all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def get_path(tree: Any, path: tuple) -> Any:
    for k in path:
        if isinstance(k, SequenceKey):
            tree = tree[k.idx]
        elif isinstance(k, DictKey):
            tree = tree[k.key]
        elif isinstance(k, GetAttrKey):
            tree = getattr(tree, k.name)
        else:
            raise AssertionError(f"unexpected key {k!r}")
    return tree


def count_ints(tree: Any) -> int:
    if isinstance(tree, dict):
        return sum(count_ints(v) for v in tree.values())
    if isinstance(tree, (tuple, list)):
        return sum(count_ints(v) for v in tree)
    return 0 if tree is None else 1


keys = st.text(alphabet="abcdef", min_size=1, max_size=3)


def containers(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(children, children),
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3),
        st.dictionaries(keys, children, max_size=3),
        st.builds(Point, children, children),
        st.builds(Pair, children, children),
        st.dictionaries(keys, children, max_size=3).map(OrderedDict),
        st.dictionaries(keys, children, max_size=3).map(lambda d: defaultdict(list, d)),
    )


pytrees = st.recursive(st.integers(-100, 100) | st.none(), containers, max_leaves=12)


# --------------------------------------------------------------------------- properties


@given(pytrees)
@settings(max_examples=300)
def test_round_trip(tree):
    leaves, treedef = tree_flatten(tree)
    assert all(isinstance(x, int) for x in leaves)
    assert len(leaves) == treedef.num_leaves == count_ints(tree)
    rebuilt = tree_unflatten(treedef, leaves)
    assert same(rebuilt, tree)
    again = tree_structure(rebuilt)
    assert again == treedef and hash(again) == hash(treedef)
    assert tree_leaves(rebuilt) == leaves


_REPR_NAMES = {"PyTreeDef": lambda x: x, "Point": Point, "Pair": Pair,
               "OrderedDict": OrderedDict, "defaultdict": defaultdict, "list": list}


@given(pytrees)
def test_repr_reads_back(tree):
    # The repr is Python-like: with leaves written as 0 it evaluates to an equal structure.
    treedef = tree_structure(tree)
    rebuilt = eval(repr(treedef).replace("*", "0"), {}, _REPR_NAMES)
    assert tree_structure(rebuilt) == treedef


@given(pytrees)
def test_flatten_with_path_matches_flatten(tree):
    pairs, treedef = tree_flatten_with_path(tree)
    leaves, treedef2 = tree_flatten(tree)
    assert treedef == treedef2
    assert [x for _, x in pairs] == leaves
    for path, leaf in pairs:
        assert get_path(tree, path) == leaf
    assert tree_leaves_with_path(tree) == pairs


@given(pytrees)
def test_tree_map_multiple_trees(tree):
    neg = tree_map(lambda x: -x, tree)
    assert tree_structure(neg) == tree_structure(tree)
    total = tree_map(lambda a, b, c: a + b + c, tree, neg, tree)
    assert same(total, tree)
    with_path = tree_map_with_path(lambda p, a, b: get_path(tree, p) == a and a == -b, tree, neg)
    assert tree_all(with_path)


@given(pytrees)
def test_flatten_up_to_own_structure_and_prefix(tree):
    treedef = tree_structure(tree)
    assert treedef.flatten_up_to(tree) == tree_leaves(tree)
    # Replace each direct child by one leaf: a prefix whose items are the children.
    children = treedef.children()
    if not children:
        return
    prefix = treedef.unflatten([0] * treedef.num_leaves)
    prefix_def = tree_structure(
        tree_map(lambda _: 0, prefix, is_leaf=lambda x: x is not prefix)
    )
    assert prefix_def.num_leaves == len(children)
    subtrees = prefix_def.flatten_up_to(tree)
    assert [tree_structure(s) for s in subtrees] == children


@given(pytrees, pytrees)
def test_mismatch_path_points_at_the_difference(a, b):
    if tree_structure(a) == tree_structure(b):
        assert same(tree_map(lambda x, y: y, a, b), tree_map(lambda y: y, b))
        return
    with pytest.raises(TreeStructureError) as info:
        tree_map(lambda x, y: x, a, b)
    path = info.value.path
    sub_a, sub_b = get_path(a, path), get_path(b, path)  # the path exists in both trees
    assert tree_structure(sub_a) != tree_structure(sub_b)
    assert keystr(path) in str(info.value) and info.value.expected != info.value.got


# --------------------------------------------------------------------------- node types


def test_none_is_an_empty_subtree_unless_is_leaf():
    assert tree_leaves([None, 1, (None,)]) == [1]
    assert tree_structure(None) == tree_structure(None)
    assert repr(tree_structure(None)) == "PyTreeDef(None)"
    assert tree_map(lambda x: x + 1, (None, 1)) == (None, 2)
    leaves, treedef = tree_flatten([None, 1], is_leaf=lambda x: x is None)
    assert leaves == [None, 1]
    assert tree_unflatten(treedef, ["a", "b"]) == ["a", "b"]


def test_dict_keys_are_sorted_and_mixed_keys_work():
    assert tree_leaves({"b": 1, "a": 2, "c": 3}) == [2, 1, 3]
    assert tree_structure({"b": 1, "a": 2}) == tree_structure({"a": 1, "b": 2})
    mixed = {"x": 1, 2: 2, 1: 3}
    leaves, treedef = tree_flatten(mixed)
    assert leaves == [3, 2, 1]  # ints (by type name) before strs
    assert tree_unflatten(treedef, leaves) == mixed


def test_ordereddict_keeps_order_and_defaultdict_its_factory():
    od = OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tree_flatten(od)
    assert leaves == [1, 2]
    assert list(tree_unflatten(treedef, leaves)) == ["b", "a"]
    assert treedef != tree_structure(OrderedDict([("a", 1), ("b", 2)]))
    assert treedef != tree_structure({"b": 1, "a": 2})

    dd = defaultdict(list, {"b": 1, "a": 2})
    out = tree_map(lambda x: x * 10, dd)
    assert type(out) is defaultdict and out.default_factory is list
    assert dict(out) == {"a": 20, "b": 10}
    assert tree_structure(dd) != tree_structure(defaultdict(set, {"b": 1, "a": 2}))


def test_namedtuples_are_rebuilt_as_themselves():
    p = Point(1, (2, Pair(3, 4)))
    out = tree_map(str, p)
    assert type(out) is Point and type(out.y[1]) is Pair
    assert out == Point("1", ("2", Pair("3", "4")))
    assert tree_structure(Point(1, 2)) != tree_structure((1, 2))
    assert tree_structure(Point(1, 2)) != tree_structure(Pair(1, 2))
    assert [keystr(p) for p, _ in tree_leaves_with_path(p)] == [".x", ".y[0]", ".y[1].first", ".y[1].second"]


def test_unregistered_subclasses_are_leaves():
    class MyList(list):
        pass

    class MyTuple(tuple):
        pass

    assert tree_leaves([MyList([1, 2]), MyTuple((3,))]) == [MyList([1, 2]), MyTuple((3,))]


def test_is_leaf_stops_descent():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves = tree_leaves(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    out = tree_map(lambda x: sum(x) if isinstance(x, tuple) else x, tree,
                   is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"a": 3, "b": [3, 9]}


# --------------------------------------------------------------------------- treedef


def test_treedef_repr():
    assert repr(tree_structure((1, {"a": 2}))) == "PyTreeDef((*, {'a': *}))"
    assert repr(tree_structure(1)) == "PyTreeDef(*)"
    assert repr(tree_structure((1,))) == "PyTreeDef((*,))"
    assert repr(tree_structure([])) == "PyTreeDef([])"
    assert repr(tree_structure(Point(1, None))) == "PyTreeDef(Point(x=*, y=None))"
    assert repr(tree_structure(OrderedDict(b=1, a=2))) == "PyTreeDef(OrderedDict({'b': *, 'a': *}))"
    assert repr(tree_structure(defaultdict(list, a=1))) == "PyTreeDef(defaultdict(list, {'a': *}))"


def test_treedef_eq_hash():
    a = tree_structure({"w": [1, 2], "b": None})
    b = tree_structure({"b": None, "w": ["x", "y"]})
    c = tree_structure({"w": (1, 2), "b": None})
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    assert a != "not a treedef"
    assert tree_structure([1, 2]) != tree_structure([1, 2, 3])
    assert tree_structure(1) != tree_structure(None)


def test_treedef_survives_deepcopy():
    treedef = tree_structure({"a": (1, [2]), "b": Point(3, None)})
    for copied in (copy.copy(treedef), copy.deepcopy(treedef), copy.deepcopy([treedef])[0]):
        assert copied == treedef
        assert copied.unflatten([1, 2, 3]) == {"a": (1, [2]), "b": Point(3, None)}


def test_treedef_methods():
    treedef = tree_structure((1, [2, None], {"a": 3}))
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 7
    assert treedef.children() == [tree_structure(0), tree_structure([0, None]), tree_structure({"a": 0})]
    assert not treedef.is_leaf() and tree_structure(5).is_leaf()
    assert treedef.unflatten(iter("xyz")) == ("x", ["y", None], {"a": "z"})
    assert tree_unflatten(tree_structure(5), [7]) == 7
    with pytest.raises(ValueError, match="3 leaves, but 2 were given"):
        treedef.unflatten([1, 2])


# --------------------------------------------------------------------------- errors


def test_tree_map_mismatch_names_key_path():
    with pytest.raises(ValueError) as info:
        tree_map(lambda a, b: a, {"w": [0, (1, 2)]}, {"w": [0, [1, 2, 3]]})
    msg = str(info.value)
    assert "tree_map: structures differ at ['w'][1]" in msg
    assert "expected a tuple of length 2, got a list of length 3" in msg
    assert isinstance(info.value, TreeStructureError)
    assert info.value.path == (DictKey("w"), SequenceKey(1))


@pytest.mark.parametrize(
    "a, b, words",
    [
        ({"a": 1, "b": 2}, {"a": 1, "c": 2}, ["at the root", "keys ['a', 'b']", "keys ['a', 'c']"]),
        ([1, (2, 3)], [1, 2], ["at [1]", "expected a tuple of length 2", "got a leaf of type int"]),
        ([1, 2], [1, (2, 3)], ["at [1]", "expected a leaf", "got a tuple of length 2"]),
        ((None, 1), (1, 1), ["at [0]", "expected None", "got a leaf of type int"]),
        (Point(1, 2), (1, 2), ["at the root", "Point namedtuple", "tuple of length 2"]),
        ({"p": Point(1, [2])}, {"p": Point(1, [2, 3])}, ["at ['p'].y", "list of length 1", "list of length 2"]),
        (OrderedDict(a=1, b=2), OrderedDict(b=2, a=1), ["OrderedDict with keys ['a', 'b']", "['b', 'a']"]),
    ],
)
def test_tree_map_mismatch_messages(a, b, words):
    with pytest.raises(ValueError) as info:
        tree_map(lambda *xs: xs, a, b)
    for w in words:
        assert w in str(info.value)


def test_tree_map_mismatch_names_which_tree():
    with pytest.raises(ValueError, match=r"tree argument 3") as info:
        tree_map(lambda *xs: 0, (1, 2), (1, 2), (1, 2, 3))
    assert "at the root" in str(info.value)
    with pytest.raises(ValueError, match=r"tree_map_with_path: structures differ at \[0\]"):
        tree_map_with_path(lambda p, *xs: 0, ([1],), ([1, 2],))


def test_flatten_up_to():
    axes = tree_structure((0, None), is_leaf=lambda x: x is None)
    args = ([1, 2], {"w": 3})
    assert axes.flatten_up_to(args) == [[1, 2], {"w": 3}]
    nested = tree_structure((0, {"w": 0, "b": 0}))
    assert nested.flatten_up_to(([1], {"b": (2,), "w": 3})) == [[1], (2,), 3]

    with pytest.raises(ValueError) as info:
        nested.flatten_up_to(([1], {"b": 2}))
    assert info.value.path == (SequenceKey(1),)
    assert "flatten_up_to: structures differ at [1]" in str(info.value)
    assert "keys ['b', 'w']" in str(info.value)

    with pytest.raises(TreeStructureError) as info:
        tree_structure({"p": [0, (0, 0)]}).flatten_up_to({"p": [1, [2, 3, 4]]})
    assert "at ['p'][1]: expected a tuple of length 2, got a list of length 3" in str(info.value)

    with pytest.raises(TreeStructureError, match="got a leaf of type int"):
        tree_structure([0, 0]).flatten_up_to(5)


# --------------------------------------------------------------------------- registration


class Affine:
    def __init__(self, w: Any, b: Any, name: str) -> None:
        self.w, self.b, self.name = w, b, name


register_pytree_node(Affine, lambda a: ((a.w, a.b), a.name), lambda name, ch: Affine(*ch, name))


def test_register_custom_class():
    a = Affine([1, 2], 3, "layer")
    leaves, treedef = tree_flatten({"a": a})
    assert leaves == [1, 2, 3]
    out = tree_unflatten(treedef, [10, 20, 30])["a"]
    assert type(out) is Affine and out.w == [10, 20] and out.b == 30 and out.name == "layer"
    assert tree_structure(Affine(1, 2, "x")) != tree_structure(Affine(1, 2, "y"))
    assert repr(tree_structure(Affine(1, 2, "x"))) == "PyTreeDef(CustomNode(Affine['x'], [*, *]))"
    paths = [keystr(p) for p, _ in tree_leaves_with_path(a)]
    assert paths == ["[<flat index 0>][0]", "[<flat index 0>][1]", "[<flat index 1>]"]
    with pytest.raises(ValueError, match="aux data 'x'"):
        tree_map(lambda *xs: 0, Affine(1, 2, "x"), Affine(1, 2, "y"))


def test_register_with_keys_and_node_class():
    class Box:
        def __init__(self, v: Any) -> None:
            self.v = v

    register_pytree_with_keys(Box, lambda b: ([(GetAttrKey("v"), b.v)], None), lambda _, ch: Box(*ch))
    assert tree_leaves(Box((1, 2))) == [1, 2]
    assert [keystr(p) for p, _ in tree_leaves_with_path([Box((1, 2))])] == ["[0].v[0]", "[0].v[1]"]

    class Module:
        """Base class whose subclasses become pytrees automatically (like funcgrad.nn)."""

        def __init_subclass__(cls, **kw: Any) -> None:
            super().__init_subclass__(**kw)
            register_pytree_node_class(cls)

        def tree_flatten(self):
            return (self.weight,), self.size

        @classmethod
        def tree_unflatten(cls, size, children):
            obj = cls.__new__(cls)
            obj.weight, obj.size = children[0], size
            return obj

    class Dense(Module):
        def __init__(self, weight: Any, size: int) -> None:
            self.weight, self.size = weight, size

    d = tree_map(lambda x: x + 1, [Dense(1, 4)])[0]
    assert type(d) is Dense and d.weight == 2 and d.size == 4


def test_register_dataclass_static_fields():
    @register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Linear:
        w: Any
        b: Any
        features: int = dataclasses.field(default=3, metadata={"static": True})

        def __post_init__(self) -> None:
            if self.w is None:
                raise ValueError("w required")

    lin = Linear([1.0, 2.0], 0.5, features=2)
    leaves, treedef = tree_flatten(lin)
    assert leaves == [1.0, 2.0, 0.5]
    assert repr(treedef) == "PyTreeDef(Linear(w=[*, *], b=*; features=2))"
    assert treedef != tree_structure(Linear([1.0, 2.0], 0.5, features=3))
    # Rebuilding skips __post_init__, so placeholder leaves are allowed.
    out = tree_map(lambda _: None, lin, is_leaf=lambda x: isinstance(x, list))
    assert type(out) is Linear and out.w is None and out.features == 2
    assert [keystr(p) for p, _ in tree_leaves_with_path(lin)] == [".w[0]", ".w[1]", ".b"]
    with pytest.raises(ValueError, match=r"at \.b: expected a leaf, got a tuple"):
        tree_map(lambda *xs: 0, lin, Linear([1.0, 2.0], (0.5, 1.0), features=2))
    with pytest.raises(ValueError, match="static fields"):
        tree_map(lambda *xs: 0, lin, Linear([1.0, 2.0], 0.5, features=5))


def test_register_dataclass_explicit_fields_and_errors():
    @register_dataclass(meta_fields=["act"])
    @dataclasses.dataclass
    class Layer:
        w: Any
        act: str

    assert tree_leaves(Layer(1, "relu")) == [1]

    @dataclasses.dataclass
    class Two:
        a: Any
        b: Any

    with pytest.raises(ValueError, match="missing: \\['b'\\]"):
        register_dataclass(Two, data_fields=["a"], meta_fields=[])
    with pytest.raises(ValueError, match="unknown: \\['c'\\]"):
        register_dataclass(Two, data_fields=["a", "b", "c"], meta_fields=[])
    register_dataclass(Two, data_fields=["a", "b"], meta_fields=[])
    assert tree_leaves(Two(1, (2,))) == [1, 2]

    class Plain:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        register_dataclass(Plain, data_fields=["x"])


def test_duplicate_registration_raises():
    class Node:
        pass

    register_pytree_node(Node, lambda n: ((), None), lambda aux, ch: Node())
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Node, lambda n: ((), None), lambda aux, ch: Node())
    with pytest.raises(ValueError, match="already registered"):
        register_dataclass(Node, data_fields=[], meta_fields=[])
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(tuple, lambda t: (t, None), lambda aux, ch: tuple(ch))


# --------------------------------------------------------------------------- keys and reductions


def test_keystr():
    path = (SequenceKey(0), DictKey("w"), GetAttrKey("bias"))
    assert keystr(path) == "[0]['w'].bias"
    assert keystr(path, simple=True, separator="/") == "0/w/bias"
    assert keystr(()) == ""
    assert keystr((FlattenedIndexKey(2), DictKey(1))) == "[<flat index 2>][1]"
    pairs, _ = tree_flatten_with_path([{"w": (5,)}])
    assert keystr(pairs[0][0]) == "[0]['w'][0]"


def test_tree_reduce_and_all():
    assert tree_reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}) == 6
    assert tree_reduce(lambda a, b: a + b, {"a": 1}, initializer=10) == 11
    assert tree_reduce(max, [None], initializer=-1) == -1
    with pytest.raises(TypeError, match="initializer"):
        tree_reduce(max, [])
    assert tree_all([True, (1, "x")]) and not tree_all({"a": 0, "b": 1}) and tree_all(None)


def test_public_names():
    for name in tu.__all__:
        assert hasattr(tu, name), name
    assert isinstance(tree_structure(1), PyTreeDef)
