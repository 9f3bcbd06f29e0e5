"""The autograd flags of the tensors a captured training step returns.

Eager mode returns a step's loss with ``requires_grad=True`` and its ``grad_fn`` (the graph
the step's own ``backward()`` ran through, its saved tensors freed). A replayed plan has no
graph: each returned tensor that required grad when the step was captured gets a node of its
own (``ReturnedNode``, named as the eager node was: ``SumBackward0``), so that its
``requires_grad``, ``is_leaf`` and ``grad_fn`` read as eager mode's. A backward reaching
that node raises: PyTorch's "backward through the graph a second time" where eager mode's
graph was freed, else an error saying the graph is not kept (eager mode would have run it
again: a step that used ``retain_graph=True``, or a graph that saves nothing). Never a
gradient the plan cannot give.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from runtime.autograd.node import ERR_BACKWARD_TWICE, NO_GRAD_VIEW, Meta, Node
from runtime.tensor import Tensor
from runtime.tracing import MetaArray

ERR_NOT_KEPT = (
    "the graph of a tensor a compiled step returns is not kept: the step was captured as a plan "
    "and replayed, and the plan holds no autograd graph. Eager mode could backward through it "
    "again ({how}); run the step eagerly to do that, or return it detached")


@dataclass(frozen=True)
class ReturnedGraph:
    """What a returned tensor's grad_fn was at capture: its node's name, and whether a
    backward through it would meet saved tensors the step's backward freed."""

    name: str
    freed: bool
    shape: tuple[int, ...]
    dtype: Any
    device: str


class ReturnedNode(Node):
    """The grad_fn of a tensor a replayed plan returns: no edges; its backward raises."""

    graph: ReturnedGraph

    def name(self) -> str:
        return self.graph.name

    def apply(self, grads: list[Any]) -> list[Any]:
        if self.graph.freed:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        raise RuntimeError(ERR_NOT_KEPT.format(
            how="the step's backward used retain_graph=True, or nothing along it was saved"))


_NODE_CLASSES: dict[str, type[ReturnedNode]] = {}


def _node(graph: ReturnedGraph) -> ReturnedNode:
    """A node whose class bears eager mode's node's name (its repr and type name say it)."""
    cls = _NODE_CLASSES.get(graph.name)
    if cls is None:
        cls = _NODE_CLASSES[graph.name] = type(graph.name, (ReturnedNode,), {})
    # Meta's fields as a tuple (its NamedTuple __new__ is a Python call: 3,000 instructions)
    node = cls([], [tuple.__new__(Meta, (graph.shape, graph.dtype, graph.device))])
    node.graph = graph
    return node


def _node_freed(node: Node) -> bool:
    """Whether ``node``'s backward would read a saved value a backward already freed
    (a primitive's, an autograd.Function's, or the node a CopySlices wraps)."""
    inner = getattr(node, "fn", None)
    if isinstance(inner, Node) and _node_freed(inner):
        return True
    if getattr(node, "_released", False) and (
            getattr(node, "saved", None) or getattr(getattr(node, "prim", None), "saves", ())):
        return True
    saved = getattr(getattr(node, "ctx", None), "_saved", None) or ()
    return any(s is not None and s._vc is None for s in saved)


def graph_freed(fn: Node) -> bool:
    """Whether a backward from ``fn`` meets a node whose saved values were freed."""
    seen: set[int] = set()
    stack = [fn]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if _node_freed(node):
            return True
        stack.extend(e.function for e in node.next_edges if e is not None)
    return False


Path = tuple[Any, ...]


@dataclass(frozen=True)
class ReturnedLeaf:
    """A returned leaf tensor that requires grad: an argument (``argument``: its position)
    or a tensor from outside the step (``outside``: a parameter) as it is, which eager mode
    returns itself; else one the step made (a fresh leaf requiring grad at every call)."""

    argument: int | None = None
    outside: Any = None


@dataclass(frozen=True, eq=False)
class ReturnedState:
    """A returned tensor that is, when the step ends, one living outside it: a buffer or other
    tensor the step reads (``kind`` "tensor", ``ref`` it), a tensor argument (``kind``
    "input", ``owner_input`` its position), a ``.grad`` (``kind`` "grad",
    ``ref`` its owner, or ``owner_input`` the argument owning it) or an optimizer's state
    (``kind`` "opt_state", ``ref`` (optimizer, parameter, key)). Eager mode returns that very
    object, whose later in-place updates (the next ``zero_grad(set_to_none=False)``, the
    next step's update) the caller sees: so does a replay, after its write-back."""

    kind: str
    ref: Any
    owner_input: int | None = None
    # the returned tensor is not that object but one sharing its storage whole (a
    # ``p.detach()``, ``p.data``): a replay returns such a tensor of the object, as eager's
    alias: bool = False
    # the returned tensor is a view of that object's (or, ``alias``, of its detach()): these
    # view ops, taken again of it after each replay (in no_grad mode: ``w[0]`` so taken
    # requires grad as eager's does, ``w.detach()[0]`` does not)
    views: tuple[tuple[Any, dict[str, Any]], ...] = ()

    def live(self, args: tuple[Any, ...]) -> Any:
        """The object now (None where it is gone: the replay's own tensor is returned)."""
        if self.kind == "tensor":
            return self.ref
        if self.kind == "input":
            return args[self.owner_input]
        if self.kind == "grad":
            return (self.ref if self.owner_input is None else args[self.owner_input])._grad
        opt, p, key = self.ref
        found = opt()
        return None if found is None else found.state.get(p, {}).get(key)


Mark = ReturnedGraph | ReturnedLeaf | ReturnedState


@dataclass(frozen=True)
class StoredTensor:
    """A tensor the step computes and leaves at ``path`` (a planner.guards.Path: a forward
    pre-hook's ``module.weight = g * v / ||v||``), stored there anew after each replay, with
    ``mark``'s autograd flags (None: it requires no grad), as a returned tensor's; or the
    tensor argument at position ``argument`` (``self.last_input = x``), stored itself."""

    path: Any
    mark: Mark | None = None
    # where the step returns that very tensor too (``holder.last = loss; return loss``): the
    # path to it in the returned value, whose tensor is stored, one object at both as eager's
    returned: Path | None = None
    argument: int | None = None
    # the tensor is one living outside the step when it ends (``holder.g = w.grad``, an
    # optimizer's state): that object, as a returned one's (``ReturnedState.live``), stored
    # after the write-back that makes it
    live: ReturnedState | None = None
    # the version the computed tensor has when the step ends (its in-place writes after it
    # made it: ``self.ema = self.ema * 0.9; self.ema.add_(m)`` leaves version 1), as eager's
    version: int = 0


def path_in(value: Any, t: Tensor, path: Path = ()) -> Path | None:
    """The path of indices and keys that reaches ``t`` itself in ``value`` (through tuples,
    lists and dicts, as ``returned_graphs`` walks it); None where it is not there."""
    if value is t:
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, (tuple, list)) else ()
    for k, v in items:
        found = path_in(v, t, (*path, k))
        if found is not None:
            return found
    return None


def at_path(value: Any, path: Path) -> Any:
    for k in path:
        value = value[k]
    return value


def returned_graphs(result: Any, device_of: Any, input_of: dict[int, int]
                    ) -> tuple[tuple[Path, Mark], ...]:
    """(path, mark) of each tensor in what the step returns that requires grad, the path
    the indices and keys that reach it through tuples, lists and dicts; ``input_of``: the
    step's tensor arguments' positions by id."""
    found: list[tuple[Path, Mark]] = []
    # a module function, not a closure: a recursive closure and its own cell are a cycle,
    # which held ``device_of`` (a capture's tracer: its graph and tensors, gpt's 16000
    # objects) until a garbage collection
    _walk(result, (), device_of, input_of, found)
    return tuple(found)


def returned_state(result: Any, live: dict[Any, ReturnedState]) -> tuple[tuple[Path, Mark], ...]:
    """(path, mark) of each tensor in what the step returns that is, when the step ends, a
    tensor living outside it, or one sharing such a tensor's storage whole (``live``: those
    tensors' marks by id, and ``("data", id)`` of their storage, marked ``alias``), and
    requires no grad (a parameter that does is a ``ReturnedLeaf``)."""
    found: list[tuple[Path, Mark]] = []
    _walk_state(result, (), live, found)
    return tuple(found)


def _walk_state(value: Any, path: Path, live: dict[Any, ReturnedState],
                found: list[tuple[Path, Mark]]) -> None:
    if isinstance(value, Tensor):
        mark = live.get(id(value))
        if mark is None:  # one sharing a live tensor's storage whole: its detach()
            mark = live.get(("data", id(value._data)))
        if mark is None and value._grad_fn is None:
            mark = _view_of_live(value, live)
        if mark is not None and value._grad_fn is None and (
                not value._rg or value._creation == NO_GRAD_VIEW and mark.views):
            found.append((path, mark))
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _walk_state(v, (*path, i), live, found)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_state(v, (*path, k), live, found)


def _view_of_live(value: Tensor, live: dict[Any, ReturnedState]) -> ReturnedState | None:
    """The mark of ``value`` where it is a chain of view ops of a live tensor (or of its
    detach()), with those ops; else None."""
    steps = []
    data = value._data
    while type(data) is MetaArray and data.made_by is not None and data.view_src is not None:
        steps.append(data.made_by)
        src = data.view_src
        mark = live.get(id(src)) or live.get(("data", id(src._data)))
        if mark is not None:
            # taken of the object itself where it requires grad as the view does (in no_grad
            # mode), else of its detach()
            alias = not (value._rg and src._rg)
            return dataclasses.replace(mark, alias=alias, views=tuple(reversed(steps)))
        data = src._data
    return None


def _walk(value: Any, path: Path, device_of: Any, input_of: dict[int, int],
          found: list[tuple[Path, Mark]]) -> None:
    if isinstance(value, Tensor):
        fn = value._grad_fn
        if fn is not None:
            found.append((path, ReturnedGraph(fn.name(), graph_freed(fn), tuple(value.shape),
                                              value.dtype, device_of(value))))
        elif value._rg:
            found.append((path, ReturnedLeaf(input_of.get(id(value)), None if type(
                value._data) is MetaArray or id(value) in input_of else value)))
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _walk(v, (*path, i), device_of, input_of, found)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, (*path, k), device_of, input_of, found)


def attach(result: Any, marks: dict[Path, Mark], args: tuple[Any, ...]) -> Any:
    """``result`` (a replay's rebuilt return value) with each tensor at a path of ``marks``
    as eager mode returns it: given its node (requires_grad, not a leaf), or the argument or
    outside tensor itself, or made a leaf requiring grad."""
    return _fill(result, (), marks, args)  # a module function: no cycle holding the call


def _taken_again(t: Tensor, views: tuple[tuple[Any, dict[str, Any]], ...]) -> Tensor:
    from runtime.autograd.grad_mode import no_grad
    from runtime.ops.dispatch import apply

    with no_grad():
        for prim, attrs in views:
            t = apply(prim, t, **attrs)
    return t


def _fill(value: Any, path: Path, marks: dict[Path, Mark], args: tuple[Any, ...]) -> Any:
    mark = marks.get(path)
    if isinstance(mark, ReturnedState):
        live = mark.live(args)
        if live is None:
            return value
        live = live.detach() if mark.alias else live
        return _taken_again(live, mark.views) if mark.views else live
    if isinstance(mark, ReturnedGraph):
        value._grad_fn = _node(mark)
        value._rg = True
    elif isinstance(mark, ReturnedLeaf):
        if mark.argument is not None:
            return args[mark.argument]
        if mark.outside is not None:
            return mark.outside
        value._rg = True
    elif isinstance(value, tuple):
        return tuple(_fill(v, (*path, i), marks, args) for i, v in enumerate(value))
    elif isinstance(value, list):
        return [_fill(v, (*path, i), marks, args) for i, v in enumerate(value)]
    elif isinstance(value, dict):
        return {k: _fill(v, (*path, k), marks, args) for k, v in value.items()}
    return value
