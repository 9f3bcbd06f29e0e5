"""The pytrees of ``torch.utils._pytree`` that the transforms take and return: tuples, lists,
dicts (keys in insertion order), ``OrderedDict`` and namedtuples are nodes, anything else
(tensors, numbers, None) is a leaf. ``TreeSpec``'s repr is PyTorch's, as the transforms'
error messages print it."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["LEAF", "TreeSpec", "broadcast_to_and_flatten", "tree_flatten", "tree_leaves",
           "tree_map", "tree_unflatten"]


class TreeSpec:
    """The structure of a pytree: a node's type, its context (dict keys, a namedtuple's
    class) and its children's specs; a leaf is ``LEAF``."""

    __slots__ = ("type", "context", "children")

    def __init__(self, type_: type | None, context: Any, children: list[TreeSpec]) -> None:
        self.type = type_
        self.context = context
        self.children = children

    @property
    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf else sum(child.num_leaves for child in self.children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.type, repr(self.context), len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        if self.is_leaf:
            return "*"
        name = "namedtuple" if _is_namedtuple(self.type) else self.type.__name__
        inner = ""
        if self.children:
            indent += 2
            inner = ("," + "\n" + " " * indent).join(c.__repr__(indent) for c in self.children)
        return f"TreeSpec({name}, {self.context}, [{inner}])"


LEAF = TreeSpec(None, None, [])


def _is_namedtuple(kind: type | None) -> bool:
    return kind is not None and issubclass(kind, tuple) and hasattr(kind, "_fields")


def _children(tree: Any) -> tuple[type | None, Any, list[Any]]:
    """A node's (type, context, children); (None, None, []) for a leaf."""
    kind = type(tree)
    if kind is tuple or kind is list:
        return kind, None, list(tree)
    if _is_namedtuple(kind):
        return kind, kind, list(tree)
    if kind is dict or kind is OrderedDict:
        keys = list(tree)
        return kind, keys, [tree[k] for k in keys]
    return None, None, []


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` left to right, and its structure."""
    leaves: list[Any] = []

    def walk(node: Any) -> TreeSpec:
        kind, context, children = _children(node)
        if kind is None:
            leaves.append(node)
            return LEAF
        return TreeSpec(kind, context, [walk(child) for child in children])

    return leaves, walk(tree)


def tree_leaves(tree: Any) -> list[Any]:
    return tree_flatten(tree)[0]


def tree_unflatten(leaves: list[Any], spec: TreeSpec) -> Any:
    """The pytree of structure ``spec`` holding ``leaves``."""
    it = iter(leaves)

    def build(node: TreeSpec) -> Any:
        if node.is_leaf:
            return next(it)
        children = [build(child) for child in node.children]
        if node.type is tuple or node.type is list:
            return node.type(children)
        if _is_namedtuple(node.type):
            return node.type(*children)
        return node.type(zip(node.context, children))

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_to_and_flatten(prefix: Any, spec: TreeSpec) -> list[Any] | None:
    """``prefix``'s leaves, each repeated over the leaves of the subtree of ``spec`` it
    stands at (``in_dims=(0, None)`` against ``(x, {"a": y, "b": z})``); None where
    ``prefix`` is not a prefix of ``spec``'s structure."""
    out: list[Any] = []

    def walk(node: Any, full: TreeSpec) -> bool:
        kind, context, children = _children(node)
        if kind is None:
            out.extend([node] * full.num_leaves)
            return True
        if full.is_leaf or kind is not full.type or len(children) != len(full.children):
            return False
        if context is not None and not _is_namedtuple(kind):  # dict keys, any order
            if set(context) != set(full.context):
                return False
            by_key = dict(zip(context, children))
            children = [by_key[k] for k in full.context]
        return all(walk(c, f) for c, f in zip(children, full.children))

    return out if walk(prefix, spec) else None
