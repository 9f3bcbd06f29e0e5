"""Compiled forward and backward for a step that returns tensors requiring grad (AOTAutograd's
split, on the planner): ``model = planner.compile(model); loss = f(model(x)); loss.backward()``.

The capture traces the forward as for any step, then, still under the tracer, its backward:
``autograd.grad(outputs, inputs=<every tensor requiring grad the forward read>,
grad_outputs=<one input per output requiring grad>)`` (``trace_backward``). After the usual
passes (and remat) on that joint graph, ``split`` cuts it in two graphs: the forward (the
returned values, the state it writes, and the forward values the backward reads: "saved") and
the backward (inputs: the saved values, then the gradients of the outputs; returns: a gradient
per input). Each is planned, fused and compiled as a step's plan is.

A call replays the forward plan as any binding's (guards, reads, random draws, write-back of
the state it writes such as BatchNorm's running statistics), and hands its outputs back as
tensors whose ``grad_fn`` is one ``CompiledFunctionBackward`` node holding the saved arrays,
with an edge to each input's gradient edge (a parameter's AccumulateGrad, a non-leaf
argument's grad_fn): the engine calls it in the caller's backward as any node, so gradients
accumulate into ``.grad``, hooks fire and ``retain_graph`` holds as in eager mode. Its apply
runs the backward plan. Double backward (``create_graph=True``) through the node raises (the
backward plan records no history): PyTorch's compiled functions raise too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D
from runtime._device import cupy_module, device_guard
from runtime.autograd.grad_mode import is_grad_enabled
from runtime.autograd.node import ERR_BACKWARD_TWICE, Meta, Node, SavedTensor, gradient_edge
from runtime.tensor import Tensor
from runtime.tracing import GraphBreak, MetaArray

from runtime.ops import REGISTRY

from . import plan_cache
from .graph import set_args, template_nodes

ERR_DOUBLE_BACKWARD = (
    "planner.compile: double backward (create_graph=True) through a compiled function is not "
    "supported: its backward runs as a compiled plan that records no autograd history. Call "
    "the function uncompiled where higher-order gradients are needed.")
NODE_NAME = "CompiledFunctionBackward"  # PyTorch's name for torch.compile's backward node


# --- capture ----------------------------------------------------------------------------------
@dataclass
class AotCapture:
    """What ``trace_backward`` adds to a capture."""

    n_args: int  # grad-output inputs are numbered from here (``split`` renumbers them)
    requires: list[bool]  # per returned tensor (template order): does it require grad
    out_metas: list[Meta]  # per output requiring grad: the gradient it takes
    # per gradient: where it goes, ("input", argument index) or ("tensor", tensor)
    inputs: list[tuple[str, Any]]
    grads: list[Any]  # per input: ("node", id) or ("py", None) (unused)


def leaves(value: Any) -> Iterator[Any]:
    """The leaves of a returned value, in the order ``Tracer._template`` visits them."""
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    else:
        yield value


def trace_backward(tracer: Any, result: Any, n_args: int) -> AotCapture | None:
    """Trace the backward of the tensors ``result`` returns that require grad (the tracer is
    active): None where none does, or where the step ran a backward itself (a training step:
    planned whole, as before)."""
    if tracer.seen_backward:
        return None
    tensors = [v for v in leaves(result) if isinstance(v, Tensor)]
    outputs = [t for t in tensors if t._rg]
    if not outputs:
        return None
    for t in outputs:
        if type(t._data) is not MetaArray:
            raise GraphBreak("the step returns a tensor from outside it that requires grad")
        if t._grad_fn is None:  # eager mode returns a leaf, whose .grad the caller reads
            raise GraphBreak("the step returns a leaf tensor it made that requires grad")
        if t._retains_grad:  # its .grad sums what reaches it through the other outputs too
            raise GraphBreak("the step calls retain_grad() on a tensor it returns")
    inputs, tensors_in = _grad_inputs(tracer)
    if not inputs:
        raise GraphBreak("the step returns a tensor that requires grad, but reads no tensor "
                         "requiring grad")
    start = tracer._next_id
    grad_outputs = []
    for j, t in enumerate(outputs):
        device = tracer.device_of(t)
        node = tracer._add("input", [], {}, tuple(t.shape), t.dtype, device, index=n_args + j)
        grad_outputs.append(tracer._meta_tensor(node, tuple(t.shape), t.dtype, device))
    from runtime.autograd import grad

    try:
        with _inputs_cut(tensors_in):
            grads = grad(outputs, tensors_in, grad_outputs, retain_graph=True,
                         allow_unused=True)
    except GraphBreak:
        raise
    except Exception as exc:  # eager mode would raise it at backward() only, if ever
        raise GraphBreak(f"its backward cannot be traced ({type(exc).__name__}: {exc})") from exc
    for v in range(start, tracer._next_id):
        if tracer.g.has_node(v):
            tracer.g.nodes[v]["phase"] = "backward"
    return AotCapture(
        n_args, [t._rg for t in tensors],
        [Meta(tuple(t.shape), t.dtype, tracer.device_of(t)) for t in outputs], inputs,
        [("py", None) if g is None else ("node", tracer.storage_of(g).node) for g in grads])


def _grad_inputs(tracer: Any) -> tuple[list[tuple[str, Any]], list[Tensor]]:
    """The tensors from outside the step the forward read that require grad (arguments,
    parameters, buffers), in slot order: where each gradient goes, and the tensors."""
    found = sorted(((index, keep) for _, index, keep in tracer.cells.values()
                    if isinstance(keep, Tensor) and keep._rg), key=lambda found: found[0])
    where, tensors = [], []
    for index, t in found:
        slot = tracer.slots[index]
        if slot.kind not in ("input", "tensor"):
            continue
        if not t.dtype.is_floating_point and not t.dtype.is_complex:
            continue
        where.append(("input", slot.ref) if slot.kind == "input" else ("tensor", t))
        tensors.append(t)
    return where, tensors


class _inputs_cut:  # noqa: N801 (a context manager used as a statement)
    """While the backward is traced, each input's gradient edge is where it ends: the real
    node there (a parameter's AccumulateGrad, a non-leaf argument's grad_fn, a node of the
    caller's eager graph) keeps no next edges and runs no hooks, so the trace neither enters
    the caller's graph (a compiled RNN cell called in a loop reads its previous output, whose
    history reaches the same parameters) nor runs the caller's hooks on traced values: the
    engine runs them on the real gradients, through CompiledFunctionBackward's edges."""

    def __init__(self, tensors: list[Tensor]) -> None:
        self.tensors = tensors
        self.kept: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> None:
        for t in self.tensors:
            fn = gradient_edge(t).function
            for obj, name, empty in ((fn, "next_edges", [None] * len(fn.next_edges)),
                                     (fn, "_tensor_pre_hooks", None),
                                     (fn, "_retains_grad_hooks", None), (t, "_hooks", None)):
                if name == "next_edges" or getattr(obj, name) is not None:
                    self.kept.append((obj, name, getattr(obj, name)))
                    setattr(obj, name, empty)

    def __exit__(self, *exc: object) -> None:
        for obj, name, value in reversed(self.kept):
            setattr(obj, name, value)


# --- the split --------------------------------------------------------------------------------
@dataclass
class Split:
    forward: nx.DiGraph
    backward: nx.DiGraph
    saved: list[int]  # the forward nodes saved, in the backward's input order
    # saved position -> ("state", slot index) | ("input", argument index): a tensor from
    # outside the step saved as it is, whose version the backward checks
    sources: dict[int, tuple[str, int]] = field(default_factory=dict)


def split(g: nx.DiGraph, n_args: int, input_slots: dict[int, int]) -> Split:
    """Cut the joint graph (after its passes) into forward and backward graphs
    (``input_slots``: argument index -> its slot)."""
    user, grads = g.graph["returns"][1]
    back = {v for v, d in g.nodes(data=True) if _in_backward(d, n_args)}
    for v in g.nodes:
        if v not in back and any(u in back for u in g.predecessors(v)):
            raise GraphBreak("a forward value of the step depends on its backward")
    for _, u in g.graph["writes"]:
        if u in back:
            raise GraphBreak("the step writes state from its backward")
    consts = sorted({u for v in back for u in g.predecessors(v)
                     if u not in back and g.nodes[u]["op"] == "const"})
    saved = sorted({u for v in back for u in g.predecessors(v)
                    if u not in back and g.nodes[u]["op"] != "const"}
                   | {u for u in template_nodes(grads) if u not in back})
    written = {slot for slot, _ in g.graph["writes"]}
    values_written = {u for _, u in g.graph["writes"]}
    sources: dict[int, tuple[str, int]] = {}
    for k, u in enumerate(saved):
        if _viewed(g, u) in values_written:
            # a tensor from outside written in place and read by the backward: the trace
            # cannot tell whether eager mode saved it before the write (its version error)
            # or after: eager mode says
            raise GraphBreak("the backward reads a tensor the step wrote in place")
        d = g.nodes[_viewed(g, u)]
        if d["op"] in ("state", "input"):
            ref = ("state", d["slot"]) if d["op"] == "state" else ("input", d["index"])
            slot = d["slot"] if d["op"] == "state" else input_slots.get(d["index"])
            if slot in written:  # the saved array would hold the value written back
                raise GraphBreak("the backward reads a tensor as it was before the step wrote "
                                 "it in place")
            sources[k] = ref
    return Split(_forward_graph(g, back, user, saved), _backward_graph(g, back, consts, saved,
                                                                       grads, n_args),
                 saved, sources)


def _viewed(g: nx.DiGraph, v: int) -> int:
    """The value whose memory ``v`` shows: v, or where v is a view (a weight's transpose),
    the value it was taken from, transitively."""
    while True:
        d = g.nodes[v]
        prim = REGISTRY.get(d["op"])
        if prim is None or not prim.is_view(d["attrs"]):
            return v
        v = next(x for kind, x in d["args"] if kind == "node")


def _in_backward(d: dict[str, Any], n_args: int) -> bool:
    op = d["op"]
    if op == "input":
        return bool(d["index"] >= n_args)  # a gradient of an output
    if op == "rand" and d["phase"] != "forward":
        raise GraphBreak("the step's backward draws random numbers")
    if op in ("state", "rand"):
        return False
    return bool(d["phase"] != "forward")


def _forward_graph(g: nx.DiGraph, back: set[int], user: Any, saved: list[int]) -> nx.DiGraph:
    fg = g.subgraph([v for v in g.nodes if v not in back]).copy()
    returns = ("tuple", [user, ("tuple", [("node", u) for u in saved])])
    writes = list(g.graph["writes"])
    fg.graph.update(returns=returns, writes=writes,
                    outputs=sorted({u for _, u in writes if u >= 0} | set(template_nodes(returns))))
    return fg


def _backward_graph(g: nx.DiGraph, back: set[int], consts: list[int], saved: list[int],
                    grads: Any, n_args: int) -> nx.DiGraph:
    """Ids in topological order (``build_plan`` schedules by id): the saved values as inputs
    0..S-1, the constants the backward reads (copied), then the backward's nodes in order;
    the gradients of the outputs are inputs S, S+1, ..."""
    bg = nx.DiGraph()
    new: dict[int, int] = {}
    for k, u in enumerate(saved):
        d = g.nodes[u]
        bg.add_node(k, op="input", args=[], attrs={}, shape=d["shape"], dtype=d["dtype"],
                    device=d["device"], phase="backward", sequence_nr=None,
                    topological_nr=None, grad_fn=None, index=k)
        new[u] = k
    for u in [*consts, *sorted(back)]:
        d = dict(g.nodes[u])
        if d["op"] == "input":
            d["index"] = len(saved) + d["index"] - n_args
        args = d.pop("args")
        new[u] = v = len(new)
        bg.add_node(v, args=[], **d)
        set_args(bg, v, [(kind, new[x]) if kind == "node" else (kind, x) for kind, x in args])
    returns = ("tuple", [("node", new[x[1]]) if x[0] == "node" else x for x in grads[1]])
    bg.graph.update(returns=returns, writes=[], outputs=sorted(template_nodes(returns)),
                    next_id=len(new))
    return bg


# --- the plans and their replay ---------------------------------------------------------------
@dataclass
class AotPlans:
    """The backward half of an AOT binding (the forward plan is the binding's plan)."""

    backward: Any  # Plan
    info: AotCapture
    n_saved: int
    sources: dict[int, tuple[str, int]]
    slots: list[Any]
    # positions among info.inputs whose gradient the backward computes (the node's edges)
    used: list[int] = field(init=False)
    devices: list[str] = field(init=False)  # of each input's gradient

    def __post_init__(self) -> None:
        self.used = [i for i, g in enumerate(self.info.grads) if g[0] == "node"]
        self.devices = [str(self.slots[_input_slot(self.slots, ref)].device if kind == "input"
                            else ref.device) for kind, ref in self.info.inputs]

    def replay(self, binding: Any, args: tuple[Any, ...], run: Any) -> Any:
        """``run(binding, args)`` replays the forward plan (returning (user value, saved
        tensors)); its tensors requiring grad get one CompiledFunctionBackward."""
        user, saved = run(binding, args)
        info = self.info
        inputs = info.inputs
        edges = []
        for i in self.used:
            kind, ref = inputs[i]
            edges.append(gradient_edge(args[ref] if kind == "input" else ref))
        versions = []
        for k, (kind, ref) in self.sources.items():
            t = args[ref] if kind == "input" else self.slots[ref].ref
            if isinstance(t, Tensor):  # (not a Python float the plan reads as an input)
                versions.append((k, t, t._vc.v, False))
        arrays = [t._data for t in saved]
        node = CompiledFunctionBackward(edges, info.out_metas, self, arrays, versions)
        requires = iter(info.requires)
        nr = 0
        outputs: dict[int, Tensor] = {}
        for t in leaves(user):
            if isinstance(t, Tensor):
                outputs[id(_root(t._data))] = t
                if next(requires):
                    t._grad_fn = node
                    t.output_nr = nr
                    t._rg = True
                    nr += 1
        # a saved value in an output's memory (the output itself, a reshape of it): an
        # in-place change of the output would change what the backward reads, so the
        # backward checks the output's version, as eager mode's saved output would be checked
        for k, a in enumerate(arrays):
            t = outputs.get(id(_root(a)))
            if t is not None:
                versions.append((k, t, t._vc.v, True))
        return user

    def run_backward(self, saved: list[Any], grads: list[Any]) -> list[Any]:
        """The gradients of the inputs the backward reaches, as arrays (None: no gradient)."""
        arrays = list(saved)
        for g, meta in zip(grads, self.info.out_metas):
            arrays.append(_zeros(meta) if g is None else g._data)
        result, _ = self.backward.run(arrays, {}, [], False)
        ids = {id(_root(a)) for a in arrays}
        out = []
        for i in self.used:
            kind, body = result[1][i]
            if kind != "array":
                out.append(None)
                continue
            out.append(Tensor._make(_owned(body, ids), D.from_numpy_dtype(body.dtype),
                                    self.devices[i]))
        return out


def _zeros(meta: Meta) -> Any:
    """The gradient of an output the caller's backward gave none (PyTorch's compiled
    function materializes it too)."""
    xp = np if meta.device == "cpu" else cupy_module()
    with device_guard(meta.device):
        return xp.zeros(meta.shape, meta.dtype.np)


def _root(array: Any) -> Any:
    """The array that owns ``array``'s memory."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def _input_slot(slots: list[Any], index: int) -> int:
    return next(k for k, s in enumerate(slots) if s.kind == "input" and s.ref == index)


def _owned(array: Any, inputs: set[int]) -> Any:
    """An array the gradient may own: copied where it shares the memory of one the backward
    read (a saved value, an output's gradient: ``inputs`` holds their roots' ids), or is
    read-only or a partial view (a broadcast)."""
    base = getattr(array, "base", None)
    if id(_root(array)) in inputs:
        return array.copy()
    flags = array.flags
    if not getattr(flags, "writeable", True) or (base is not None and not (
            flags.c_contiguous and getattr(base, "size", -1) == array.size)):
        return array.copy()
    return array


class CompiledFunctionBackward(Node):
    """The backward of one compiled call: takes the gradients of its outputs that require
    grad, returns those of the inputs it reads (its edges), by running the backward plan on
    the arrays the forward saved."""

    __slots__ = ("plans", "saved", "versions")

    def __init__(self, next_edges: list[Any], metas: list[Meta], plans: AotPlans,
                 saved: list[Any], versions: list[tuple[int, Tensor, int, bool]]) -> None:
        super().__init__(next_edges, metas)
        self.plans = plans
        self.saved: list[Any] | None = saved
        self.versions = versions

    def name(self) -> str:
        return NODE_NAME

    def apply(self, grads: list[Any]) -> list[Any]:
        saved = self.saved
        if saved is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if is_grad_enabled():
            raise RuntimeError(ERR_DOUBLE_BACKWARD)
        for _, t, version, output in self.versions:
            if t._vc.v != version:  # an input saved, or an output (named as this node's)
                found = SavedTensor(t, output)
                found._version = version
                raise RuntimeError(found._modified_error(self))
        return self.plans.run_backward(saved, grads)

    def release_variables(self) -> None:
        self.saved = None
        self.versions = []


def plan(step: Any, cap: Any, slots: list[dict[str, Any]], device: str, build: bool
         ) -> tuple[Any, AotPlans]:
    """The forward plan and the backward half of ``cap``'s binding: the joint graph through
    the default passes (and remat, which decides what the backward recomputes), split, each
    half planned and fused as ``CompiledStep`` plans a step, and compiled now (no background
    build). The pair is kept in the plan cache under the joint capture's key, as a step's
    plan is (planner.plan_cache), and found there by a later capture of the same graph."""
    from .distributed import ddp_modules

    if ddp_modules(cap.modules):
        raise GraphBreak("a DistributedDataParallel module's gradients are averaged by its "
                         "own backward, which a compiled function's backward does not hold")
    key = plan_cache.key(cap.graph, slots, device, step.backend)  # before the passes
    code = build or device == "cpu"
    found = None if key is None else _kept(step, key, cap, code)
    if found is None:
        found = _planned(step, cap, slots, device, code)
        if key is not None and found[2]:
            plan_cache.store(key, found[0], step.cache_dir)
            plan_cache.store(_backward_key(key), found[1], step.cache_dir)
    forward, backward = found[0], found[1]
    backward.configure(step.workers, step.executor)
    sources = {k: (kind, ref) for k, kind, ref in forward.stats["aot_sources"]}
    n_saved = len(forward.returns[1][1][1])
    return forward, AotPlans(backward, cap.aot, n_saved, sources, cap.slots)


def _backward_key(key: str) -> str:
    return hashlib.sha256(f"{key}/aot backward".encode()).hexdigest()


def _kept(step: Any, key: str, cap: Any, code: bool) -> tuple[Any, Any, bool] | None:
    """The forward and backward plans kept under ``key``, their code built; None where either
    is missing or does not load or build (planned again then, as ``CompiledStep._stored``)."""
    plans = []
    for k in (key, _backward_key(key)):
        try:
            kept = plan_cache.load(k, cap.graph, step.cache_dir)
            if kept is not None and code:
                step._build(kept)
        except Exception:
            return None
        if kept is None or "aot_sources" not in kept.stats and k == key:
            return None
        plans.append(kept)
    step.plans_loaded += 1
    return plans[0], plans[1], True


def _planned(step: Any, cap: Any, slots: list[dict[str, Any]], device: str, code: bool
             ) -> tuple[Any, Any, bool]:
    """Plan the pair; the flag: whether it may be kept (its code built where it was asked)."""
    from .passes import hoist_source_views, run_default_passes
    from .plan import build_plan
    from .remat import rematerialize

    g = cap.graph
    captured = g.number_of_nodes()
    run_default_passes(g, copy_leaves=False)  # split below: returned constants as steps
    if step.backend != "interpreter":
        rematerialize(g)
        hoist_source_views(g)
    parts = split(g, cap.aot.n_args, {s.ref: k for k, s in enumerate(cap.slots)
                                      if s.kind == "input"})
    forward = build_plan(parts.forward, slots, device, captured)
    forward.stats["aot_sources"] = [(k, kind, ref) for k, (kind, ref) in parts.sources.items()]
    backward_slots = [{"kind": "input", "shape": list(g.nodes[u]["shape"]),
                       "dtype": g.nodes[u]["dtype"].name, "device": g.nodes[u]["device"],
                       "desc": f"saved{k}", "mode": "inplace"} for k, u in enumerate(parts.saved)]
    backward_slots += [{"kind": "input", "shape": list(m.shape), "dtype": m.dtype.name,
                        "device": m.device, "desc": f"grad_output{j}", "mode": "inplace"}
                       for j, m in enumerate(cap.aot.out_metas)]
    backward = build_plan(parts.backward, backward_slots, device,
                          parts.backward.number_of_nodes())
    if step.backend == "interpreter":
        return forward, backward, True
    fused = step._fused(forward, code), step._fused(backward, code)
    # a plan whose code failed to build (a warning said so) is not kept
    return fused[0], fused[1], fused[0] is not forward and fused[1] is not backward
