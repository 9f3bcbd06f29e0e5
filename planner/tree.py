"""Flatten a step's arguments (nested tuples, namedtuples, lists and dicts) into leaves and
back."""

from __future__ import annotations

from typing import Any

# a tree spec: ("leaf",) | ("tuple"|"list", [specs]) | ("dict", [(key, spec)]) |
# ("namedtuple", its class, [specs]): a batch made anew at every call (a namedtuple of tensors
# a loader yields) is its tensors, as PyTorch's pytree takes it, not one object keyed by id
Spec = tuple[Any, ...]


def flatten(tree: Any) -> tuple[list[Any], Spec]:
    leaves: list[Any] = []

    def walk(x: Any) -> Spec:
        if isinstance(x, tuple):
            if hasattr(x, "_fields"):
                return ("namedtuple", type(x), [walk(v) for v in x])
            return ("tuple", [walk(v) for v in x])
        if isinstance(x, list):
            return ("list", [walk(v) for v in x])
        if isinstance(x, dict):
            return ("dict", [(k, walk(v)) for k, v in x.items()])
        leaves.append(x)
        return ("leaf",)

    return leaves, walk(tree)


def unflatten(spec: Spec, leaves: list[Any]) -> Any:
    it = iter(leaves)

    def build(s: Spec) -> Any:
        kind = s[0]
        if kind == "leaf":
            return next(it)
        if kind == "tuple":
            return tuple(build(c) for c in s[1])
        if kind == "list":
            return [build(c) for c in s[1]]
        if kind == "namedtuple":
            return s[1](*(build(c) for c in s[2]))
        return {k: build(c) for k, c in s[1]}

    return build(spec)


def freeze(spec: Spec) -> Any:
    """A hashable form of a spec, for guard keys."""
    kind = spec[0]
    if kind == "leaf":
        return "leaf"
    if kind == "dict":
        return ("dict", tuple((k, freeze(c)) for k, c in spec[1]))
    if kind == "namedtuple":
        return (kind, spec[1], tuple(freeze(c) for c in spec[2]))
    return (kind, tuple(freeze(c) for c in spec[1]))


def namedtuple_skeleton(value: Any) -> Any:
    """Where ``value`` (a step's result) holds namedtuples: None where it holds none, else
    (container class, [inner skeletons]) (a dict's as (dict, [(key, skeleton)])), each
    namedtuple's class its own. A plan returns plain tuples (its templates hold no classes):
    ``with_namedtuples`` gives a replay's result eager mode's types."""
    if isinstance(value, (tuple, list)):
        inner = [namedtuple_skeleton(v) for v in value]
        if hasattr(value, "_fields"):
            return (type(value), inner)
        return None if all(s is None for s in inner) else (type(value), inner)
    if isinstance(value, dict):
        pairs = [(k, namedtuple_skeleton(v)) for k, v in value.items()]
        return None if all(s is None for _, s in pairs) else (dict, pairs)
    return None


def with_namedtuples(value: Any, skeleton: Any) -> Any:
    """``value`` with the namedtuples ``skeleton`` (``namedtuple_skeleton``) says it had."""
    if skeleton is None:
        return value
    cls, inner = skeleton
    if cls is dict:
        return {k: with_namedtuples(value[k], s) for k, s in inner}
    items = [with_namedtuples(v, s) for v, s in zip(value, inner, strict=True)]
    if cls is list:
        return items
    return cls(*items) if hasattr(cls, "_fields") else tuple(items)
