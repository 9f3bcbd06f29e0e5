"""Capture: run a step once on shape-only tensors and record every primitive into one DAG.

The step runs through the ordinary runtime API. While the tracer is active, each primitive call
becomes a graph node instead of a computation (``runtime.ops.dispatch``), and ``backward()``
runs the real engine: dependencies, exec_info pruning and each needed node's backward formula
are what eager mode does, so the backward lands in the same graph as primitives. Writes to state
(in-place ops on parameters, ``.grad``, optimizer buffers) are virtual: the tracer remembers them
as graph values to write back, and nothing outside the tracer changes during a capture.
"""

from __future__ import annotations

import functools
import math
import random
import weakref
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D
from runtime.autograd.grad_mode import _set as set_grad_enabled
from runtime.autograd.grad_mode import is_grad_enabled
from runtime.autograd.node import Node
from runtime.creation import Generator, cpu_default_generator, thread_default_generator
from runtime.ops.dispatch import INT_INPUT_BOUND, stale_weak_view
from runtime.nn.module import _changed as structure_changed
from runtime.ops.registry import Primitive
from runtime.tensor import Tensor
from runtime.tracing import GraphBreak, MetaArray, set_tracer

from . import guards, number_guards
from .graph import new_graph, template_nodes
from .item_outputs import ItemOut, returned_as_is
from .layouts import Layouts
from .number_guards import NumberGuard
from .returned_graphs import (ReturnedState, StoredTensor, path_in, returned_graphs,
                              returned_state)
from .tree import flatten, namedtuple_skeleton


@dataclass
class Slot:
    """Where a tensor the step reads or writes lives outside the step."""

    kind: str  # "input" | "tensor" | "grad" | "opt_state" | "hyper"
    # input index | tensor | owner tensor (grad) | (optimizer, param, key) |
    # (optimizer, group index, key, tuple index or None) (hyper)
    ref: Any
    shape: tuple[int, ...]
    dtype: D.DType
    device: str
    desc: str
    mode: str = "inplace"  # how a write lands: "inplace" into the storage, or "assign" anew
    owner_input: int | None = None  # a grad slot of an argument: resolved per call
    # of a "tensor" slot when captured (the plan depends on it); None where the step sets
    # the flag itself before reading the tensor (not guarded: the flag it starts with is
    # not what the plan depends on)
    requires_grad: bool | None = False
    # of a "tensor" slot: the path (a planner.guards.Path) where the step found the tensor
    # and which it assigns a new one it computes (state carried from call to call,
    # ``self.ema = self.ema * 0.9 + ...``): a replay reads the tensor found there now, guarded
    # by its type, shape, dtype, device and requires_grad, not its identity (``stored_tensors``)
    path: Any = None

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "shape": list(self.shape), "dtype": self.dtype.name,
                "device": self.device, "desc": self.desc, "mode": self.mode}


@dataclass
class Capture:
    """The result of tracing one call: the graph and how it binds to the outside world."""

    graph: nx.DiGraph
    slots: list[Slot]
    generators: list[Generator]
    modules: list[Any] = field(default_factory=list)
    optimizers: list[Any] = field(default_factory=list)
    grad_none: list[tuple[Tensor, bool, int | None]] = field(default_factory=list)
    # state the step created that its plan would be guarded on or would make anew at every
    # replay (optimizer state entries absent when it began, a parameter's .grad it found None
    # without clearing it first), described: the first such call runs eagerly and the step is
    # captured at the next one, with that state in place (CompiledStep._call_flat)
    created_state: list[str] = field(default_factory=list)
    # Python calls the step made that the plan cannot hold (an lr scheduler's step), to run
    # at every replay: (when, call), when "before" the plan or "after" it (Tracer.on_effect)
    effects: list[tuple[str, Any]] = field(default_factory=list)
    # train()/eval() calls the step made, (module, mode): those before any module's forward
    # ran are made again before each replay's guards (a step beginning with model.train(),
    # called after an evaluation, replays); the later ones after each replay, and the modes
    # they changed are guarded as the step found them (``found_modes``: id -> (module, mode))
    modes: list[tuple[Any, bool]] = field(default_factory=list)
    late_modes: list[tuple[Any, bool]] = field(default_factory=list)
    found_modes: dict[int, tuple[Any, bool]] = field(default_factory=dict)
    # the values the step reads and writes by path, as they were before the capture (its
    # guards), and what the capture changed among them, put back (planner.guards.Watch)
    watch: guards.Watch = field(default_factory=lambda: guards.Watch(guards.Accesses()))
    # id(optimizer) -> the (group, key) settings the step assigns from its arguments before
    # the update reads them (Tracer.group_effects): not guarded
    assigned_settings: dict[int, set[tuple[int, str]]] = field(default_factory=dict)
    # id(optimizer) -> the (group, key, index) settings the plan reads at each replay
    # (Tracer.hyper); any other number the step read is a constant of the plan, guarded by
    # value (planner.compile._optimizer_key)
    replayed_settings: dict[int, set[tuple[int, str, int | None]]] = field(
        default_factory=dict)
    # a step returning tensors that require grad without a backward in it: its backward,
    # traced too (planner.aot: the plans' split and CompiledFunctionBackward)
    aot: Any = None
    # (path, mark) of each tensor the step returns that requires grad (a training step's
    # loss): a replay gives it a node of its own, as eager mode's (planner.returned_graphs)
    returned_graphs: tuple[Any, ...] = ()
    # every tensor the step returns was made under inference_mode (the step's own ``with
    # rt.inference_mode():``): a replay returns inference tensors too, as eager mode does
    inference_returns: bool = False
    # the conditions on number arguments the step branched on (Tracer.truth_of)
    number_guards: tuple[NumberGuard, ...] = ()
    # optimizer state made for real while capturing (Optimizer._lazy_state), kept for the
    # plan: (optimizer, parameter, the entries made); a call that runs eagerly instead takes
    # it back (planner.compile._take_back_made_state)
    made_state: list[tuple[Any, Any, dict[str, Any]]] = field(default_factory=list)
    # the handles of the hooks the step registered while captured (Tracer.on_hook), kept
    # for the plan's call; a call that runs eagerly instead removes them (take_back_hooks)
    hooks_made: list[Any] = field(default_factory=list)
    # the tensors from outside the step it reads or writes (parameters, buffers, state): an
    # argument sharing memory with one of them at a later call, where it shared none (or
    # another) when captured, is captured again (planner.guards.shared_memory)
    outside: list[Tensor] = field(default_factory=list)
    # the namedtuples among the returned values (planner.tree.namedtuple_skeleton)
    namedtuples: Any = None
    # the tensors the step leaves at paths it reads or writes (a forward pre-hook's
    # ``module.weight = g * v / ||v||``, ``self.last_input = x``, ``holder.g = w.grad``):
    # stored there after each replay, those it computed outputs of the plan (stored_tensors)
    stored: tuple[StoredTensor, ...] = ()

    def take_back_hooks(self) -> None:
        """Remove the hooks the step registered while captured: the call runs eagerly and
        registers them again."""
        for handle in self.hooks_made:
            handle.remove()


class Tracer:
    def __init__(self, target_device: str | None = None) -> None:
        self.g = new_graph(outputs=[], writes=[], returns=None)
        self.target_device = target_device
        self._next_id = 0
        self.slots: list[Slot] = []
        self.cells: dict[int, tuple[MetaArray, int, Any]] = {}  # id(array) -> (cell, slot, keep)
        self.source: dict[int, int] = {}  # slot index -> its source node
        self.input_of: dict[int, int] = {}  # id(argument tensor) -> its index
        self.arguments: list[tuple[int, MetaArray, Any]] = []  # (index, cell, array)
        # id(cell) -> what a write to it names, of an argument whose memory overlaps another
        # argument's (views of one tensor: ``step(tokens[:, :-1], tokens[:, 1:])``) or a
        # tensor's from outside the step (``_note_argument_overlap``): a capture reads each as
        # its own value, exact until the step writes one in place
        self.overlapping: dict[int, str] = {}
        # tensors from outside the step that hold an argument's very array (a parameter and
        # ``param.detach()`` passed as an argument): one value of the plan, the argument's
        self.sharing_inputs: list[Tensor] = []
        # slot index -> the array of a view of a tensor from outside the step (nanoGPT's
        # causal mask buffer, ``tril(ones(T, T)).view(1, 1, T, T)``): read as a state of its
        # own, exact while the step writes neither it nor memory it shares (``finish``)
        self.outside_views: dict[int, Any] = {}
        # slot index -> the array of a tensor from outside the step whose array is a numpy view
        # (``_check_shared_arrays``)
        self.array_views: dict[int, Any] = {}
        self.layouts = Layouts()  # which reshapes are views, as eager mode's (copies cut)
        # id(view cell) -> (cell, the node of the view op that made it): a view read after
        # its base was written is made again from the base (``_refresh``)
        self.view_nodes: dict[int, tuple[MetaArray, int]] = {}
        self.laid_out: dict[int, MetaArray] = {}  # node -> the view cell annotate() laid out
        self.grad_shadow: dict[int, tuple[Tensor, Tensor | None]] = {}
        self.grad_fresh: dict[int, bool] = {}
        self.grad_cleared: set[int] = set()  # owners whose .grad the step set before reading
        # tensors the step made that share the memory of one from outside (``x.detach()`` of
        # an argument, ``p.data``): a leaf made so (``x.detach().requires_grad_()``, a gradient
        # penalty's input) gets its .grad from backward, and is gone after the call
        self.aliases: dict[int, Tensor] = {}
        # ids of the tensors from outside the step whose value it read (``storage_of``): a
        # tensor at a path the step assigns anew, read first, is state carried from call to
        # call (``stored_tensors``)
        self.outside_read: set[int] = set()
        self.generators: list[Generator] = []
        # the state of each generator the capture met, when it met it (the default one from
        # the start): a step that seeds one (``rt.manual_seed(0)`` before its dropout) changes
        # it, which the plan's draws, continuing from the state at each call, do not repeat
        self.generator_states: dict[int, tuple[Generator, Tensor]] = {}
        self.generators_kept = False  # finish() found each in the state it was met in
        self._note_generator(thread_default_generator)
        self.modules: dict[int, Any] = {}
        self.optimizers: dict[int, tuple[Any, dict[Any, dict[str, Any]]]] = {}
        self.node_stack: list[Node] = []
        self.hypers: dict[tuple[int, int, str, int | None], Tensor] = {}
        self.seen_backward = False
        self.effects: list[tuple[str, Any]] = []
        self._effect_on: dict[int, str] = {}  # id(optimizer) -> an "after" effect's name
        self._effect_opts: dict[int, tuple[Any, str]] = {}  # id(optimizer) -> (it, a name)
        self._deferred_owners: set[int] = set()  # ids of the effects' schedulers (deferred)
        # the paths the step's code reads, and their values before it ran (``capture``)
        self.watch = guards.Watch(guards.Accesses())
        self.modes: list[tuple[Any, bool]] = []
        self.late_modes: list[tuple[Any, bool]] = []
        self.found_modes: dict[int, tuple[Any, bool]] = {}
        # id -> (tensor, requires_grad when the step began) of the tensors from outside the
        # step (parameters, buffers) whose flag the step changed (``requires_grad_changes``)
        self.flags_before: dict[int, tuple[Tensor, bool]] = {}
        # id(version counter) -> (it, its version when the step began) of the tensors from
        # outside the step it wrote in place (``bump_version``)
        self.versions_before: dict[int, tuple[Any, int]] = {}
        # ids of the optimizers whose ``.state`` the step's own code reaches (may_make_state)
        self.own_state: set[int] = set()
        self.made_state: list[tuple[Any, Any]] = []  # (optimizer, parameter): on_state_made
        self.hooks_made: list[Any] = []  # the handles of the hooks registered (on_hook)
        # id(optimizer) -> its groups' settings (all but "params") when the step began, with
        # the optimizer, and when its step() began; the step's arguments (group_effects)
        self.groups_at_start: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
        self.groups_at_step: dict[int, list[dict[str, Any]]] = {}
        self.args: tuple[Any, ...] = ()
        self.assigned_settings: dict[int, set[tuple[int, str]]] = {}
        # graph nodes that stand for Python numbers (add_scalar_input, and arithmetic among
        # them only), their kind by their dtype (float64: a float, int64: an int, bool): promoted
        # as those numbers (runtime.ops.dispatch)
        self.weak_nodes: set[int] = set()
        # a bound on the magnitude of each int among them (runtime.ops.dispatch)
        self.weak_bounds: dict[int, int] = {}
        # x[n] indexed by an int argument, or by a 0-d integer tensor (functional.getitem:
        # the root of x's storage then): its cell's id -> (x's cell, x's node then)
        self.weak_views: dict[int, tuple[MetaArray, int]] = {}
        # the number arguments' nodes (add_scalar_input) -> their positions, the call's
        # arguments, and the conditions on them the step branched on (truth_of)
        self.number_nodes: dict[int, int] = {}
        self.number_args: tuple[Any, ...] = ()
        self.number_guards: list[NumberGuard] = []
        self.aot: Any = None  # planner.aot.AotCapture: the backward of the returned tensors
        # the code of the function that calls the step (its returns: item_of), and how many
        # Tensor.item() values the step returns
        self.entry: Any = None
        self.items = 0

    # --- graph values -----------------------------------------------------------------------
    def _add(self, op: str, args: list[tuple[str, Any]], attrs: dict[str, Any],
             shape: tuple[int, ...], dtype: D.DType, device: str, **extra: Any) -> int:
        v = self._next_id
        self._next_id += 1
        if self.node_stack:
            fn = self.node_stack[-1]
            phase, seq, topo, name = ("backward", fn._seq_nr, fn.topological_nr, fn.name())
        else:
            phase = "update" if self.seen_backward else "forward"
            seq = topo = name = None
        # networkx's own dicts, as add_node and add_edge fill them (their checks and views
        # took 4 us a node of the capture; v is new, its arguments' nodes exist, and the
        # graph's cache is cleared once the capture ends: Capture's graph)
        g = self.g
        # a literal, its keys in this order (plan_cache.key pickles each node's dict as it is)
        data = {"op": op, "args": args, "attrs": attrs,
                "shape": shape if type(shape) is tuple else tuple(shape), "dtype": dtype,
                "device": device, "phase": phase, "sequence_nr": seq, "topological_nr": topo,
                "grad_fn": name}
        if extra:
            data.update(extra)
        g._node[v] = data
        succ, pred = g._succ, g._pred
        succ[v] = {}
        into = pred[v] = {}
        for pos, (kind, u) in enumerate(args):
            if kind == "node":
                edge = into.get(u)
                if edge is not None:
                    edge["pos"].append(pos)
                else:
                    into[u] = succ[u][v] = {"pos": [pos]}
        return v

    def add_op(self, prim: Primitive, args: tuple[Any, ...], attrs: dict[str, Any],
               shape: tuple[int, ...], dtype: D.DType, device: str) -> int:
        # one pass over the arguments, by index (a comprehension is a frame of its own), each
        # tensor's cell found once for its node and for the layouts
        spec: list[tuple[str, Any]] = list(args)
        cells: list[MetaArray] = []
        i = 0
        for a in args:
            if isinstance(a, Tensor):
                cell = a._data  # storage_of's answer for a value of the step's, without a call
                if type(cell) is not MetaArray:
                    cell = self.storage_of(a)
                if cell.view_of is not None and _stale(cell):
                    self._refresh(cell)
                spec[i] = ("node", cell.node)
                if len(cell.shape) >= 2:
                    cells.append(cell)
            else:
                spec[i] = ("scalar", a)
            i += 1
        node = self._add(prim.name, spec, dict(attrs), shape, dtype, device)
        # the ops whose result's order follows their operands' (planner.layouts.computed),
        # where an operand may be out of C order
        if (prim.elementwise or prim.reduction) and self.layouts.probes:
            self.layouts.operands(node, cells)
        return node

    def _read(self, t: Tensor) -> int:
        cell = self.storage_of(t)
        if _stale(cell):
            self._refresh(cell)
        return cell.node

    def _refresh(self, cell: MetaArray) -> None:
        """A view read after a storage it was taken from was written in place shows the
        written values, as eager mode's view does: its value is taken again, by the view op
        that made it, from its base's value now (the base refreshed first). A view whose op
        is not known (one from outside the step, read as a state of its own) breaks the
        graph, as before."""
        base = cell.view_of
        assert base is not None
        if _stale(base):
            self._refresh(base)
        if base.node == cell.base_node:
            return
        made = self.view_nodes.get(id(cell))
        if made is None or made[0] is not cell:
            raise GraphBreak("a view is read after its base was written in place")
        data = self.g.nodes[made[1]]
        args = [("node", base.node), *data["args"][1:]]
        cell.node = self._add(data["op"], args, dict(data["attrs"]), data["shape"],
                              data["dtype"], data["device"])
        cell.base_node = base.node

    def annotate(self, node: int, t: Tensor) -> None:
        """A forward op that made an autograd node carries that node's numbers."""
        fn = t._grad_fn
        data = self.g._node[node]  # networkx's own dict (its NodeView checks cost a lookup)
        if fn is not None and data["phase"] != "backward":
            # keys _add made: assigned in place, their order kept
            data["sequence_nr"] = fn._seq_nr
            data["topological_nr"] = fn.topological_nr
            data["grad_fn"] = fn.name()
        cell = t._data
        if type(cell) is MetaArray and cell.node == node:  # which reshapes are views
            if cell.view_of is not None:
                # once a view: named() annotates an op's result again, with its node renamed
                # (a transpose's), and the layout of the view it made is what it was
                if self.laid_out.get(node) is not cell:
                    self.laid_out[node] = cell
                    self.view_nodes[id(cell)] = (cell, node)
                    self.layouts.view_made(cell, data["op"], data["attrs"])
            elif node in self.layouts.mixed:
                self.layouts.computed(cell, node, data["op"])

    def eager_view(self, cell: MetaArray) -> bool:
        """Whether the view op that made ``cell`` gives a view in eager mode too: not a
        reshape that copies there (``Layouts.view_made`` cut it from its base), nor one of a
        value whose layout is not followed (``Layouts.unknown_reshape``)."""
        return cell.view_of is not None and not self.layouts.unknown_reshape(cell)

    def _meta_tensor(self, node: int, shape: tuple[int, ...], dtype: D.DType,
                     device: str) -> Tensor:
        return Tensor._make(MetaArray(shape, dtype.np, node), dtype, device)

    def constant(self, value: np.ndarray, dtype: D.DType, device: str) -> Tensor:
        device = self.target_device or device
        node = self._add("const", [], {}, value.shape, dtype, device, value=value)
        return self._meta_tensor(node, value.shape, dtype, device)

    def random(self, kind: str, shape: tuple[int, ...], dtype: D.DType, device: str,
               generator: Generator) -> Tensor:
        device = self.target_device or device
        if generator is cpu_default_generator():
            # the calling thread's default: replayed, the plan draws from the default of the
            # thread that calls it (a DataLoader worker's own), as eager mode does
            generator = thread_default_generator
        if generator not in self.generators:
            self.generators.append(generator)
            self._note_generator(generator)
        node = self._add("rand", [], {"kind": kind, "generator": self.generators.index(generator)},
                         shape, dtype, device)
        return self._meta_tensor(node, shape, dtype, device)

    def _note_generator(self, generator: Generator) -> None:
        self.generator_states.setdefault(id(generator), (generator, generator.get_state()))

    # --- state ------------------------------------------------------------------------------
    def device_of(self, t: Tensor) -> str:
        if self.target_device is not None and type(t._data) is not MetaArray:
            return self.target_device
        return t.device

    def _new_slot(self, slot: Slot, array: Any, keep: Any) -> MetaArray:
        index = len(self.slots)
        self.slots.append(slot)
        op = "input" if slot.kind == "input" else "state"
        attrs = {"index": slot.ref} if slot.kind == "input" else {"slot": index}
        node = self._add(op, [], {}, slot.shape, slot.dtype, slot.device, **attrs)
        self.source[index] = node
        cell = MetaArray(slot.shape, slot.dtype.np, node)
        self.cells[id(array)] = (cell, index, keep)
        self.layouts.outside(cell, array)
        return cell

    def add_scalar_input(self, index: int, integer: bool = False) -> Tensor:
        """A float (``integer``: an int) argument as an input of the plan, a float64 (int64)
        scalar read from the call's argument at every replay, standing for the Python number
        it is: arithmetic with a tensor promotes as that number does (runtime.ops.dispatch,
        ``weak_nodes``), and any use that needs its value in Python (``if lr > 0``,
        ``float(lr)``, ``range(n)``, a shape) is a GraphBreak, on which planner.compile
        captures with the value as a constant instead."""
        device = self.target_device or "cpu"
        dtype = D.int64 if integer else D.float64
        placeholder = np.zeros((), dtype.np)  # kept by the cell: its id is the key
        cell = self._new_slot(Slot("input", index, (), dtype, device, f"arg{index}"),
                              placeholder, placeholder)
        self.weak_nodes.add(cell.node)
        self.number_nodes[cell.node] = index
        if integer:
            self.weak_bounds[cell.node] = INT_INPUT_BOUND
        return Tensor._make(cell, dtype, device)

    def add_input(self, index: int, t: Tensor) -> None:
        if t._vc.inference:  # PyTorch checks each use of one: the call runs eagerly
            raise GraphBreak(f"argument {index} is an inference tensor (made under "
                             "inference_mode)")
        if id(t._data) in self.cells:
            raise GraphBreak(f"argument {index} shares storage with another argument")
        cell = self._new_slot(Slot("input", index, tuple(t.shape), t.dtype, self.device_of(t),
                                   f"arg{index}"), t._data, t)
        self.input_of[id(t)] = index
        for other, other_cell, array in self.arguments:
            if type(array) is np.ndarray and type(t._data) is np.ndarray \
                    and np.may_share_memory(array, t._data):
                self.overlapping[id(cell)] = \
                    f"argument {index}, whose memory overlaps another argument's"
                self.overlapping[id(other_cell)] = \
                    f"argument {other}, whose memory overlaps another argument's"
        self.arguments.append((index, cell, t._data))

    def _note_argument_overlap(self, cell: MetaArray, data: Any, desc: str) -> None:
        """A tensor from outside the step (a parameter, a buffer, optimizer state) whose
        memory overlaps an argument's (``step(model, w=model.weight.detach()[0])``): each is
        its own value of the plan, exact until the step writes either (``_check_aliased_write``:
        eager mode's reads after an optimizer's update see it through the other)."""
        if type(data) is not np.ndarray:
            return
        for index, other_cell, array in self.arguments:
            if type(array) is np.ndarray and np.may_share_memory(array, data):
                what = f"argument {index} or {desc}, which share memory"
                self.overlapping[id(cell)] = self.overlapping[id(other_cell)] = what

    def _check_weak_view_write(self, cell: MetaArray) -> None:
        if id(cell) in self.weak_views:
            raise GraphBreak("an in-place write to a tensor indexed by an int argument or a "
                             "0-d integer tensor (a view in eager mode, a copy in the plan)")

    def _check_aliased_write(self, cell: MetaArray) -> None:
        what = self.overlapping.get(id(cell))
        if what is not None:
            raise GraphBreak(f"an in-place write to {what}")

    def storage_of(self, t: Tensor) -> MetaArray:
        """The cell holding ``t``'s current graph value (a state read for outside tensors)."""
        data = t._data
        if type(data) is MetaArray:
            return data
        self.outside_read.add(id(t))
        hit = self.cells.get(id(data))
        if hit is not None:
            if hit[2] is not t and self.slots[hit[1]].kind == "input" \
                    and id(t) not in self.input_of and id(t) not in self.aliases:
                self.sharing_inputs.append(t)  # read and written as the argument (Capture)
            return hit[0]
        desc = f"tensor{list(t.shape)}" if t._base is None else \
            f"a view tensor{list(t.shape)} of a tensor from outside the step"
        # guarded as the step found it, but where the step set the flag before this read (a
        # GAN's ``requires_grad_(True)`` on its discriminator at the start of the step): not
        # guarded then, and set as the step leaves it after each replay
        before = self.flags_before.get(id(t))
        cell = self._new_slot(Slot("tensor", t, tuple(t.shape), t.dtype, self.device_of(t), desc,
                                   requires_grad=t._rg if before is None else None), data, t)
        self._note_argument_overlap(cell, data, desc)
        if t._base is not None:
            self.outside_views[len(self.slots) - 1] = data
        elif type(data) is np.ndarray and data.base is not None:
            # a tensor over part of another's memory without being its view (``b.data =
            # a.data.t()``, tied weights): another slot, exact while the step writes neither
            self.array_views[len(self.slots) - 1] = data
        return cell

    def strides(self, t: Tensor) -> tuple[int, ...] | None:
        """The strides (in elements) ``t`` would have eagerly, as far as the capture follows
        layouts (planner.layouts): None where it does not know them."""
        data = t._data
        if type(data) is not MetaArray:
            return tuple(s // data.itemsize for s in data.strides)
        probe = self.layouts.probe(data)
        if probe is None:
            return None
        return tuple(s // probe.itemsize for s in probe.strides)

    def write(self, t: Tensor, value: Tensor) -> None:
        """An in-place write: ``t``'s storage now holds ``value``'s graph value."""
        cell = self.storage_of(t)
        self._check_aliased_write(cell)
        self._check_weak_view_write(cell)
        cell.node = self.storage_of(value).node

    def write_view(self, t: Tensor, value: Tensor, what: str, history: bool = False) -> None:
        """An in-place write into a view, functionalized: the view holds ``value``, and each
        storage the view chain was taken from, up to the base, the value that shows it: the
        inverse view of the new value where the view shows every element once (the
        transposed .grad of a Linear weight), a copy with the view's elements replaced
        (index_put, exact) where it is a basic-index one (slices, ints: ``x[1:3]``,
        ``x[:, 0]``) or a diagonal (diagonal_scatter); any other partial view breaks the graph
        naming the tensor.
        ``history``: the op records autograd history, and so do these ops, on the tensors the
        chain was taken from, which take it, as eager mode's CopySlices gives it (a view of a
        leaf that requires grad raises eager mode's error)."""
        from runtime.ops import functional as F
        from runtime.ops.inplace import ERR_VIEW_OF_LEAF_INPLACE, view_inverse
        from runtime.ops.torch_names import diagonal_scatter

        chain = []  # (view cell, the tensor its new base is computed from, its step), view first
        cell, here = self.storage_of(t), t
        if _stale(cell):  # a write that does not read the view first (fill_, copy_)
            self._refresh(cell)
        while cell.view_of is not None:
            self._check_weak_view_write(cell)
            base = cell.view_of
            # a tensor over the base's storage that records no history: what the base's new
            # value is computed from without history, and what messages name at that level
            holder = Tensor._make(base, t.dtype, self.device_of(t))
            src = cell.view_src if history else holder
            if base.node != cell.base_node or (history and (
                    src is None or self.storage_of(src) is not base)):
                raise GraphBreak(f"{what} on {self.describe(here)}, a view whose base was "
                                 "written in place since it was taken")
            if history and src._rg and src._grad_fn is None:
                raise RuntimeError(ERR_VIEW_OF_LEAF_INPLACE)  # eager mode's error
            if history and type(src._data) is not MetaArray:
                # as a write to the tensor itself (runtime.ops.inplace): the history would
                # be set on the caller's tensor, outside the plan
                raise GraphBreak(f"{what} recording history on a tensor from outside the "
                                 "step")
            if self.layouts.unknown_reshape(cell):
                raise GraphBreak(f"{what} on {self.describe(here)}, a reshape of a value whose "
                                 "memory layout decides whether eager mode's is a view")
            chain.append((cell, src, self.view_step(cell, here, what)))
            cell, here = base, holder
        self._check_aliased_write(cell)
        self._check_weak_view_write(cell)
        new = value
        for cell, src, step in chain:
            cell.node = self.storage_of(new).node
            new = (view_inverse(step[:-1], new) if not step[-1]
                   else F.index_put(src, new, key=step[1]["key"]) if step[0].name == "getitem"
                   else diagonal_scatter(src, new, **step[1]))
            cell.view_of.node = self.storage_of(new).node
            cell.base_node = cell.view_of.node
            if history:
                src._grad_fn, src.output_nr, src._rg = new._grad_fn, 0, new._rg

    def view_step(self, cell: MetaArray, t: Tensor, what: str) -> tuple[Any, ...]:
        """(prim, attrs, base shape, view shape, dtype, partial) of the view op that made
        ``cell``, read from the graph at the first in-place write (the cell's node is the
        view op's then); a partial view other than a basic-index one or a diagonal (written
        back by diagonal_scatter) breaks the graph."""
        from runtime.ops.prims import is_basic_key
        from runtime.ops.registry import REGISTRY

        step = cell.view_step
        if step is None:
            base = cell.view_of
            assert base is not None
            data = self.g.nodes[cell.node]
            prim = REGISTRY[data["op"]]
            partial = int(np.prod(base.shape)) != int(np.prod(cell.shape))
            if not prim.view or (partial and not prim.name == "diagonal" and not (
                    prim.name == "getitem" and is_basic_key(data["attrs"]["key"]))):
                raise GraphBreak(f"{what} on {self.describe(t)}, a partial view of its base")
            step = cell.view_step = (prim, data["attrs"], base.shape, cell.shape, t.dtype,
                                     partial)
        return step

    def describe(self, t: Tensor) -> str:
        """How a fallback names ``t``: the .grad of a module's parameter (or a view of it)
        where it is one, by its name in the outermost module the step called."""
        cell = self.storage_of(t)
        for owner, value in self.grad_shadow.values():
            if value is None or type(value._data) is not MetaArray:
                continue
            grad_cell, prefix = self.storage_of(value), "the"
            walk: MetaArray | None = cell
            while walk is not None and walk is not grad_cell:
                walk, prefix = walk.view_of, "a view of the"
            if walk is None:
                continue
            names = [n for m in self.modules.values() for n, p in m.named_parameters()
                     if p is owner]
            name = max(names, key=len) if names else f"tensor{list(owner.shape)}"
            return f"{prefix} .grad of {name}"
        return f"a view tensor{list(t.shape)}"

    def own_storage(self, t: Tensor) -> Tensor:
        """``t`` (its value, history and layout) in a storage of its own: eager mode's copy of
        it, or a buffer only the result holds, where ``t``'s storage may be another tensor's
        too (AccumulateGrad's first .grad)."""
        cell = self.storage_of(t)
        own = MetaArray(tuple(t.shape), t.dtype.np, cell.node)
        self.layouts.same_layout(own, cell)
        out = Tensor._make(own, t.dtype, self.device_of(t), t._grad_fn, t.output_nr)
        out._rg = t._rg
        return out

    def made_alias(self, t: Tensor) -> None:
        if type(t._data) is not MetaArray:
            self.aliases[id(t)] = t  # (held: its id names it until the capture ends)

    def read_grad(self, owner: Tensor) -> Tensor | None:
        if type(owner._data) is MetaArray:
            return owner._grad
        hit = self.grad_shadow.get(id(owner))
        if hit is not None:
            return hit[1]
        real = owner._grad
        if real is not None and id(real._data) not in self.cells:
            self._new_slot(Slot("grad", owner, real.shape, real.dtype, self.device_of(real),
                                f"grad of tensor{list(owner.shape)}",
                                owner_input=self.input_of.get(id(owner))), real._data, real)
        self.grad_shadow[id(owner)] = (owner, real)
        return real

    def write_grad(self, owner: Tensor, value: Tensor | None) -> None:
        if type(owner._data) is MetaArray:
            owner._grad = value
            return
        if value is not None and type(value._data) is MetaArray and _broadcast(value._data):
            # eager mode's AccumulateGrad keeps a copy of a gradient that is not memory of
            # its own (a sum's gradient, expanded): so does the plan, where an in-place write
            # to the .grad (clip_grad_norm_) broke the graph on a view showing one element
            # many times (eager mode raises at such a write to one a step assigned itself)
            value = value.clone()
        if id(owner) not in self.grad_shadow:
            # cleared (zero_grad(set_to_none=True)) or assigned before the step read it: the
            # plan does not depend on whether it was set, so that is not guarded
            self.grad_cleared.add(id(owner))
            self.grad_fresh[id(owner)] = True
            self.grad_shadow[id(owner)] = (owner, value)
            return
        before = self.read_grad(owner)
        if before is None or value is None:
            self.grad_fresh[id(owner)] = True
        self.grad_shadow[id(owner)] = (owner, value)

    # --- hooks from nn, optim and the engine ------------------------------------------------
    def on_module(self, module: Any) -> None:
        self.modules.setdefault(id(module), module)

    def state_nodes(self) -> dict[int, int]:
        """The graph value each tensor of the outside state (not an argument, not a .grad)
        written in place so far holds now: what another in-place write changes
        (runtime.utils.checkpoint)."""
        return {index: cell.node for cell, index, _ in self.cells.values()
                if self.slots[index].kind == "tensor" and cell.node != self.source[index]}

    def on_hook(self, handle: Any) -> None:
        """The step registered a hook (``handle``: its RemovableHandle) for real: kept where
        the plan runs this call, removed where the call runs eagerly (Capture.hooks_made)."""
        self.hooks_made.append(handle)

    def on_mode(self, module: Any, mode: bool) -> None:
        """``module.train(mode)`` is about to run (Capture.modes)."""
        if not self.modules:
            self.modes.append((module, mode))
            return
        self.late_modes.append((module, mode))
        for m in module.modules():
            self.found_modes.setdefault(id(m), (m, m.training))

    def requires_grad_changes(self, t: Tensor) -> None:
        """``t.requires_grad_`` is about to set its flag (runtime.tensor): for a tensor
        from outside the step that is no argument of it, the flag it had when the step began
        is kept (a slot read before the step set the flag is guarded on it; one read after,
        not) and its flag at the end is set after every replay
        (``flag_effects``); the capture puts the flag back (``restore_flags``). An argument's
        flag is the caller's: its slot was made before the step ran."""
        if type(t._data) is MetaArray or id(t) in self.input_of or id(t) in self.flags_before:
            return
        self.flags_before[id(t)] = (t, t._rg)

    def flag_effects(self) -> list[tuple[str, Any]]:
        """What sets each flag the step changed as the step left it, after a replay (also
        where it ends as it began: a tensor whose flag the step set before reading it is not
        guarded on it, so a call may begin with another)."""
        return [("after", functools.partial(_set_flag, t, t._rg))
                for t, _ in self.flags_before.values()]

    def restore_modes(self) -> None:
        """Put back the training modes that a train()/eval() after a module's forward changed
        (``found_modes``; the capture ran the step's Python on the real modules): the call
        then runs eagerly from the modes it met (a step calling model.eval() after its
        forward ran that forward in eval mode), or the replay's "after" effects make them
        again. Those the step set before any forward it sets again itself, eager or replayed
        (``Binding.check``)."""
        changed = [(m, mode) for m, mode in self.found_modes.values() if m.training != mode]
        for m, mode in changed:
            object.__setattr__(m, "training", mode)  # this module only, as it was
        if changed:
            structure_changed()

    def bump_version(self, t: Tensor) -> None:
        """An in-place write to a tensor from outside the step (an argument, a parameter): its
        version moves on while the capture runs, as eager mode's does, so a backward that
        unpacks it saved before the write raises eager mode's error (``x`` saved by a Linear,
        then ``x.add_(1)``, then ``loss.backward()``: the plan computed a gradient instead);
        put back after the capture (``restore_versions``: the replay's write-back moves it)."""
        vc = t._vc
        self.versions_before.setdefault(id(vc), (vc, vc.v))
        vc.v += 1

    def restore_versions(self) -> None:
        for vc, before in self.versions_before.values():
            vc.v = before

    def restore_flags(self) -> None:
        """Put back the flags the step changed (the capture ran its Python on the real
        tensors): the call then runs eagerly, or the replay's effects set them, from the
        flags it met."""
        for t, before in self.flags_before.values():
            t._rg = before

    def on_optimizer(self, opt: Any) -> None:
        if id(opt) not in self.optimizers:
            snapshot = {p: dict(st) for p, st in opt.state.items()}
            self.optimizers[id(opt)] = (opt, snapshot)
            self.groups_at_step[id(opt)] = _group_settings(opt)

    def note_groups(self, args: tuple[Any, ...]) -> None:
        """Before the step runs: every live optimizer's group settings, and the arguments
        (``group_effects`` tells an argument assigned to a setting by identity)."""
        from runtime.optim.optimizer import live_optimizers

        self.args = args
        self.groups_at_start = {id(o): (o, _group_settings(o)) for o in live_optimizers()}

    def group_effects(self) -> list[tuple[str, Any]]:
        """What the step assigns to its optimizers' group settings (``g["lr"] = lr`` in a loop
        over ``opt.param_groups``), as effects of every replay: a replay's plan reads each
        hyperparameter from its group, so the value must be there, as eager mode puts it,
        before the update reads it (an effect before the plan) or after (after it). Only an
        argument of the step assigned as it is can be replayed (set from that call's
        argument); another value the step computes in Python could not: GraphBreak."""
        effects: list[tuple[str, Any]] = []
        for opt, start in self.groups_at_start.values():
            end = _group_settings(opt)
            if len(end) != len(start):
                raise GraphBreak(f"the step adds a parameter group to {type(opt).__name__}, "
                                 "which a replayed plan would not do")
            at_step = self.groups_at_step.get(id(opt))
            for i, (was, now) in enumerate(zip(start, end)):
                for key in was.keys() | now.keys():
                    value = now.get(key, guards.MISSING)
                    if _same(was.get(key, guards.MISSING), value):
                        continue
                    where = f"{type(opt).__name__}.param_groups[{i}][{key!r}]"
                    arg = next((j for j, a in enumerate(self.args) if a is value), None)
                    if arg is None:
                        raise GraphBreak(f"the step sets {where} to a value it computes, which "
                                         "a replayed plan would not do (pass the value as an "
                                         "argument, or use an lr_scheduler)")
                    before = at_step is not None and not _same(
                        was.get(key, guards.MISSING), at_step[i].get(key, guards.MISSING))
                    if before and not _same(at_step[i].get(key, guards.MISSING), value):
                        raise GraphBreak(f"the step sets {where} twice, before and after the "
                                         "update reads it")
                    when = "before" if before or at_step is None else "after"
                    effects.append((when, _GroupSetting(opt, i, key, arg)))
                    if when == "before":
                        self.assigned_settings.setdefault(id(opt), set()).add((i, key))
        return effects

    def restore_groups(self) -> None:
        """Put every group setting back as the step met it (a replay's effects, or the call
        run eagerly, set them), and drop the groups it added (``opt.add_param_group``: the
        call runs eagerly, adding them again)."""
        for opt, start in self.groups_at_start.values():
            del opt.param_groups[len(start):]
            for group, settings in zip(opt.param_groups, start):
                for key in [k for k in group if k != "params" and k not in settings]:
                    del group[key]
                group.update(settings)

    def may_make_state(self, opt: Any) -> bool:
        """Whether ``opt`` may make a parameter's state for real within this capture
        (``Optimizer._lazy_state``): not where the step's own code reaches ``opt.state``
        (``opt.state.clear()`` every call: a replay would keep the state the capture made,
        where the eager step starts it anew), which then makes it in the trace as before."""
        return id(opt) not in self.own_state

    def on_state_made(self, opt: Any, p: Any) -> None:
        """``opt`` made ``p``'s state for real, outside the trace (``Optimizer._lazy_state``):
        the state the step met, kept when the capture ends and read by the plan as state,
        not state the capture created."""
        entry = self.optimizers.get(id(opt))
        if entry is None:  # a step() not through Optimizer.step: met now
            self.on_optimizer(opt)
            entry = self.optimizers[id(opt)]
        entry[1][p] = dict(opt.state[p])
        self.made_state.append((opt, p))

    def on_effect(self, opt: Any, call: Any, name: str, owner: Any = None) -> None:
        """``call`` (``name``: an lr scheduler's step of ``opt``; ``owner``: the scheduler),
        not run now, runs at every replay: before the plan where no hyperparameter of ``opt``
        was read yet (the update reads the values it sets, as in eager mode), else after it.
        A hyperparameter read after such a call cannot be planned (it would need the value in
        between), nor can what ``owner`` holds (``deferred``)."""
        read = any(where[0] == id(opt) for where in self.hypers)
        when = "after" if read else "before"
        self._effect_opts.setdefault(id(opt), (opt, name))
        if read:
            self._effect_on[id(opt)] = name
        self.effects.append((when, call))
        if owner is not None:
            self._deferred_owners.add(id(owner))

    def deferred(self, owner: Any) -> bool:
        """Whether a call of ``owner``'s (an lr scheduler's step) runs at each replay instead
        of in this capture (``on_effect``): what it holds now is from before that call."""
        return id(owner) in self._deferred_owners

    def hyper(self, opt: Any, group: int, key: str, index: int | None, device: str) -> Tensor:
        """A hyperparameter ``opt.param_groups[group][key]`` (element ``index`` of a tuple
        such as betas) as a float64 scalar the plan reads at each replay: a schedule that
        changes it replays the plan instead of capturing again. It lives on ``device``
        (the group's parameters'), as the step's other values do."""
        if id(opt) in self._effect_on:
            raise GraphBreak(f"{type(opt).__name__} steps again after "
                             f"{self._effect_on[id(opt)]} in the same call")
        where = (id(opt), group, key, index)
        found = self.hypers.get(where)
        if found is None:
            desc = f"{type(opt).__name__} {key}" + ("" if index is None else f"[{index}]")
            slot = Slot("hyper", (weakref.ref(opt), group, key, index), (), D.float64,
                        self.target_device or device, desc)
            found = self.hypers[where] = Tensor._make(self._new_slot(slot, slot, slot),
                                                      D.float64, slot.device)
        return found

    def enter_backward_node(self, fn: Node) -> None:
        self.node_stack.append(fn)
        self.seen_backward = True

    def exit_backward_node(self) -> None:
        self.node_stack.pop()

    # --- finishing --------------------------------------------------------------------------
    def _check_outside_views(self, writes: list[tuple[int, int]]) -> None:
        """A view of a tensor from outside the step is its own state slot: exact unless the
        step writes it, or a state or argument sharing its memory (the plan would not see one
        through the other)."""
        if not self.outside_views:
            return
        written = {index for index, _ in writes}
        arrays = {index: keep._data for _, index, keep in self.cells.values()
                  if isinstance(keep, Tensor)}
        for index, view in self.outside_views.items():
            for other in written:
                if other == index or (other in arrays and type(view) is np.ndarray
                                      and np.may_share_memory(view, arrays[other])):
                    raise GraphBreak(f"{self.slots[index].desc} is used, and the step writes "
                                     f"{'it' if other == index else 'memory it shares'} in "
                                     "place")

    def _check_shared_arrays(self, writes: list[tuple[int, int]]) -> None:
        """Two tensors from outside the step over one memory (one's array a view of the
        other's, ``b.weight.data = a.weight.data.t()``), read as two slots: a write to one
        (an optimizer's update) is not seen through the other, as eager mode sees it (each
        update applied after the other's), and the later write-back undid the first."""
        if not self.array_views:
            return
        written = {index for index, _ in writes}
        arrays = {index: keep._data for _, index, keep in self.cells.values()
                  if isinstance(keep, Tensor) and self.slots[index].kind == "tensor"
                  and type(keep._data) is np.ndarray}
        for index, view in self.array_views.items():
            for other, array in arrays.items():
                if other != index and (index in written or other in written) \
                        and np.may_share_memory(view, array):
                    raise GraphBreak(f"{self.slots[index].desc} and {self.slots[other].desc} "
                                     "share memory, and the step writes one in place")

    def finish(self, result: Any,
               stored: list[tuple[guards.Path, Tensor, int | None]] | None = None) -> Capture:
        """Collect the writes and outputs and undo Python-side state changes; ``stored``: the
        tensors the step left at paths (``stored_tensors``), those it computed outputs of the
        plan after the returned value."""
        for generator, state in self.generator_states.values():
            if not np.array_equal(generator.get_state()._data, state._data):
                raise GraphBreak("the step seeds a random generator (manual_seed or "
                                 "set_state), which a replayed plan would not do")
        self.generators_kept = True  # nothing to put back (restore_generators)
        writes: list[tuple[int, int]] = []
        for cell, index, _ in self.cells.values():
            if self.slots[index].kind == "hyper" and cell.node != self.source[index]:
                raise GraphBreak(f"the step writes the hyperparameter "
                                 f"{self.slots[index].desc} in place")
            if self.slots[index].kind != "grad" and cell.node != self.source[index]:
                writes.append((index, cell.node))
        self._check_outside_views(writes)
        self._check_shared_arrays(writes)
        grad_none: list[tuple[Tensor, bool, int | None]] = []
        created: list[str] = []
        returned = {id(t) for t in _tensors_in(result)}
        for key, (owner, value) in self.grad_shadow.items():
            if key in self.aliases and key not in returned:
                # a tensor of the step's own, not returned: its .grad is gone with it after the
                # call (neither state of the plan, nor guarded, nor made anew at each call)
                continue
            original = owner._grad
            cleared = key in self.grad_cleared
            if not cleared:
                grad_none.append((owner, original is None, self.input_of.get(key)))
                if original is None and value is not None and key not in self.input_of:
                    # guarded as None, left set: the next call would not fit this capture
                    created.append(f"the .grad of tensor{list(owner.shape)}")
            if value is original and not cleared:
                if value is not None:
                    cell, index, _ = self.cells[id(value._data)]
                    if cell.node != self.source[index]:
                        writes.append((index, cell.node))  # written in place, e.g. zero_()
                continue
            mode = "assign" if self.grad_fresh.get(key) else "inplace"
            self.slots.append(Slot("grad", owner, tuple(owner.shape), owner.dtype,
                                   self.device_of(owner), f"grad of tensor{list(owner.shape)}",
                                   mode=mode, owner_input=self.input_of.get(key)))
            writes.append((len(self.slots) - 1,
                           -1 if value is None else self.storage_of(value).node))
        for opt, snapshot in self.optimizers.values():
            writes.extend(self._optimizer_writes(opt, snapshot))
            created.extend(f"{type(opt).__name__} state {key!r} of a parameter "
                           f"{list(p.shape)}" for p, st in opt.state.items()
                           for key in st if key not in snapshot.get(p, {}))
        # before _template, whose reads of returned tensors add slots
        live = self._live(returned) if self.aot is None else {}
        self._check_returned_settings(result)
        template = self._template(result)
        if self.aot is not None:  # the returned value, and the gradients (planner.aot.split)
            template = ("tuple", [template, ("tuple", self.aot.grads)])
        # the stored tensors with the live object each is, if any (the plan outputs the others)
        held = [(path, t, argument, None if argument is not None else
                 live.get(id(t)) or live.get(("data", id(t._data))))
                for path, t, argument in stored or []]
        computed = [t for _, t, argument, mark in held if argument is None and mark is None]
        for path, t, argument, mark in held:
            if argument is None and mark is None and t._data.view_of is not None:
                raise GraphBreak(f"the step assigns {path} a view of another tensor, which a "
                                 "replayed plan would store as a tensor of its own")
        if stored:  # the returned value, and the tensors to store (planner.compile._Replayer)
            if self.aot is not None:
                raise GraphBreak(f"the step assigns {stored[0][0]} a tensor and returns tensors "
                                 "that require grad without calling backward(), which a plan "
                                 "with its own backward does not store")
            template = ("tuple", [template, ("tuple", [("node", self._read(t))
                                                       for t in computed])])
        outputs = sorted({n for _, n in writes if n >= 0} | set(template_nodes(template)))
        self.g.graph.update(outputs=outputs, writes=writes, returns=template)
        nx._clear_cache(self.g)  # filled through its dicts (_add)
        effects = self.effects + self.flag_effects() + self.group_effects()
        found = Capture(self.g, self.slots, self.generators, list(self.modules.values()),
                        [o for o, _ in self.optimizers.values()], grad_none, created, effects,
                        self.modes, self.late_modes, self.found_modes)
        found.assigned_settings = self.assigned_settings
        for opt_id, *where in self.hypers:
            found.replayed_settings.setdefault(opt_id, set()).add(tuple(where))
        found.outside = [s.ref for s in self.slots if s.kind == "tensor"] + self.sharing_inputs
        found.namedtuples = namedtuple_skeleton(result)
        if self.aot is None:  # a training step's returned loss: requires_grad as eager's
            found.returned_graphs = (returned_graphs(result, self.device_of, self.input_of)
                                     + returned_state(result, live))
        self._check_carried_kept([mark for _, mark in found.returned_graphs]
                                 + [mark for *_, mark in held])
        # each computed stored tensor's autograd flags, as a returned one's: marks by position
        marks = iter(_marks_by_position(computed, self.device_of, self.input_of))
        found.stored = tuple(StoredTensor(path, argument=argument) if argument is not None
                             else StoredTensor(path, live=mark) if mark is not None
                             else StoredTensor(path, next(marks), path_in(result, t),
                                               version=t._version)
                             for path, t, argument, mark in held)
        return found

    def _check_carried_kept(self, marks: list[Any]) -> None:
        """GraphBreak where the step returns or keeps the tensor it found at a path it then
        assigns a new one (``old = self.h; self.h = f(old); return old``), or a view of it:
        a replay's would be the tensor it was captured with (``Slot.path``)."""
        carried = {id(slot.ref): slot.path for slot in self.slots if slot.path is not None}
        for mark in marks:
            if isinstance(mark, ReturnedState) and mark.kind == "tensor" \
                    and id(mark.ref) in carried:
                raise GraphBreak(f"the step returns the tensor {carried[id(mark.ref)]} held "
                                 "before it assigned it a new one (or a view of it), which a "
                                 "replayed plan would give as the tensor it was captured with")

    def _live(self, returned: set[int]) -> dict[Any, ReturnedState]:
        """The tensors living outside the step when it ends, by id (what a returned one is):
        those it reads, its tensor arguments, the .grads it leaves (not those of its own
        tensors it does not return: ``finish``) and its optimizers' state; and by
        ``("data", id)`` of their storage, marked ``alias`` (a returned ``p.detach()``)."""
        live: dict[Any, ReturnedState] = {}
        storage: dict[Any, ReturnedState] = {}

        def add(t: Any, mark: ReturnedState) -> None:
            live[id(t)] = mark
            key = ("data", id(t._data))
            if key not in storage:  # made once a storage (dataclasses.replace is slow)
                storage[key] = ReturnedState(mark.kind, mark.ref, mark.owner_input, True)

        for slot in self.slots:
            if slot.kind == "tensor" and isinstance(slot.ref, Tensor):
                add(slot.ref, ReturnedState("tensor", slot.ref))
        live.update((key, ReturnedState("input", None, index))
                    for key, index in self.input_of.items())
        storage.update((("data", id(data)), ReturnedState("input", None, index, alias=True))
                       for index, _, data in self.arguments)
        for key, (owner, value) in self.grad_shadow.items():
            if value is not None and (key not in self.aliases or key in returned):
                add(value, ReturnedState("grad", owner if key not in self.input_of else None,
                                         self.input_of.get(key)))
        for opt, _ in self.optimizers.values():
            for p, st in opt.state.items():
                for k, value in st.items():
                    if isinstance(value, Tensor):
                        add(value, ReturnedState("opt_state", (weakref.ref(opt), p, k)))
        return {**storage, **live}

    def restore_generators(self) -> None:
        """Undo a seeding the capture ran: the call then runs eagerly from the state it met.
        Where ``finish`` found every generator as the capture met it, none is set again."""
        if self.generators_kept:
            return
        for generator, state in self.generator_states.values():
            generator.set_state(state)

    def restore_optimizers(self, keep_made: bool = True) -> None:
        """Put the optimizers' state back as the step met it; the state made outside the
        trace (``on_state_made``) stays where the capture succeeded (``keep_made``): a
        capture that fails leaves every optimizer as it was (``fullgraph=True`` raises
        with nothing changed), and the eager call makes that state itself."""
        if not keep_made:
            for opt, p in self.made_state:
                self.optimizers[id(opt)][1].pop(p, None)
        for opt, snapshot in self.optimizers.values():
            opt.state.clear()
            for p, st in snapshot.items():
                opt.state[p] = st

    def _optimizer_writes(self, opt: Any, snapshot: dict[Any, dict[str, Any]]
                          ) -> list[tuple[int, int]]:
        writes = []
        for p, st in opt.state.items():
            before = snapshot.get(p, {})
            for key, value in st.items():
                if key in before and before[key] is value:
                    continue
                if not isinstance(value, Tensor):
                    raise GraphBreak(f"optimizer state {key!r} holds a Python value that "
                                     "changes each step")
                slot = Slot("opt_state", (weakref.ref(opt), p, key), tuple(value.shape),
                            value.dtype, self.device_of(value), f"{type(opt).__name__} {key}",
                            mode="assign")
                self.slots.append(slot)
                writes.append((len(self.slots) - 1, self.storage_of(value).node))
        return writes

    def truth_of(self, t: Tensor) -> bool:
        """``bool(t)`` where the step branches on ``t``: for a value computed from number
        arguments only (``(it + 1) % k == 0``), its truth for this call's numbers, recorded as
        a guard of the plan (planner.number_guards); any other tensor's value is not known
        while capturing: GraphBreak."""
        data = t._data
        if type(data) is not MetaArray or data.node not in self.weak_nodes or \
                not self.number_nodes:
            raise GraphBreak("Tensor.bool() reads a tensor's value")
        if data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        guard = number_guards.record(self.g, data.node, self.number_nodes, self.number_args)
        self.number_guards.append(guard)
        return guard.truth

    def item_of(self, t: Tensor, frame: Any) -> Any:
        """``t.item()`` called by the step's frame ``frame``: an ``ItemOut`` where the step
        returns it as it is (planner.item_outputs), else the capture stops."""
        if t.numel() != 1:
            raise RuntimeError(f"a Tensor with {t.numel()} elements cannot be converted to "
                               "Scalar")
        if self.entry is None or frame.f_back is None or frame.f_back.f_code is not \
                self.entry or not returned_as_is(frame):
            raise GraphBreak("Tensor.item() reads a tensor's value")
        self.items += 1
        return ItemOut(self._read(t))

    def _check_returned_settings(self, result: Any) -> None:
        """A returned number that is a group setting of an optimizer whose lr scheduler steps
        in the step (``return loss, opt.param_groups[0]["lr"]``, ``sched.get_last_lr()``):
        the capture did not run that step (it runs at each replay, ``on_effect``), so the
        value is the one before it, and a plan would return it at every call: GraphBreak."""
        if not self._effect_opts:
            return
        settings = {id(e): name for opt, name in self._effect_opts.values()
                    for group in opt.param_groups for v in group.values()
                    for _, e in _elements(v) if type(e) in (float, int)}
        for value in _numbers_in(result):
            if id(value) in settings:
                raise GraphBreak(f"the step returns a group setting of an optimizer that "
                                 f"{settings[id(value)]} changes at each call (read it from "
                                 "the optimizer after the call)")

    def _read_as_a_constant(self, value: float) -> bool:
        """Whether the step's code reads ``value`` (that float object) at a path that goes
        through no optimizer or lr scheduler (``BASE_LR``, ``cfg["lr"]``, ``args.lr``): the
        number an optimizer was made with, which eager mode returns as it is where a schedule
        has changed the group's lr since. Where the step reads param groups or a scheduler
        too (``opt.param_groups[0]["lr"]``), the float could be either: GraphBreak."""
        from runtime.optim.lr_scheduler import LRScheduler
        from runtime.optim.optimizer import Optimizer

        owners = (Optimizer, LRScheduler)
        before = self.watch.before.values()
        if not any(found is value and not any(issubclass(t, owners) for t in types)
                   for found, types in before):
            return False
        if any(isinstance(found, LRScheduler) for found, _ in before) or any(
                key == "param_groups" for path in self.watch.found.paths()
                for _, key in path.steps):
            raise GraphBreak("the step returns a float that is an optimizer's setting and a "
                             "value it reads elsewhere (a plan cannot tell which it returns)")
        return True

    def _returned_setting(self, value: float) -> Any:
        """A returned float that is a group setting of a live optimizer (``return loss,
        opt.param_groups[0]["lr"]``, ``sched.get_last_lr()[0]``): the template of its value
        read at each replay (a schedule stepped between calls changes it; a plan returned
        the value met at capture), else None (the value met at capture, as before): also
        for a float object that settings of several groups the step steps hold (one float
        set into two groups), which cannot be told apart, for a setting of an optimizer the
        step does not step, and for one the step reads elsewhere (``_read_as_a_constant``)."""
        found = [(opt, i, key, index) for opt, _ in self.groups_at_start.values()
                 for i, group in enumerate(opt.param_groups)
                 for key, v in group.items() if key != "params"
                 for index, element in _elements(v) if element is value]
        used = [f for f in found if id(f[0]) in self.optimizers]
        if not used or len({(id(o), g) for o, g, _, _ in used}) > 1 or \
                self._read_as_a_constant(value):
            return None
        # settings are floats of their own (runtime.optim.optimizer.own_float), but one the
        # user set to another's float is that float: the "lr" it is, then
        opt, i, key, index = min(used, key=lambda f: f[2] != "lr")
        params = opt.param_groups[i].get("params") or ()
        device = params[0].device if params else "cpu"
        return ("item", ("node", self._read(self.hyper(opt, i, key, index, device))))

    def _template(self, value: Any) -> Any:
        if type(value) is ItemOut:  # planner.item_outputs: read at each replay
            return ("item", ("node", value.node))
        if isinstance(value, Tensor):
            if type(value._data) is MetaArray and value._data.node in self.weak_nodes:
                # a number computed from number arguments (``return loss, n + 1``): the plan
                # returns it as the Python number it is at every replay, as ``.item()``
                return ("item", ("node", self._read(value)))
            if value._rg and not self.seen_backward:
                # the caller will differentiate it: a replayed plan has no graph to offer
                raise GraphBreak("the step returns a tensor that requires grad without "
                                 "calling backward() inside the step")
            if self.weak_views and type(value._data) is MetaArray:
                stale_weak_view(self, value._data)
            return ("node", self._read(value))
        if isinstance(value, tuple):
            return ("tuple", [self._template(v) for v in value])
        if isinstance(value, list):
            return ("list", [self._template(v) for v in value])
        if isinstance(value, dict):
            return ("dict", [(k, self._template(v)) for k, v in value.items()])
        if type(value) is float and (setting := self._returned_setting(value)) is not None:
            return setting
        if value is None or isinstance(value, (bool, int, float, str, np.generic)):
            # a numpy scalar is a constant too: one the step computed from a tensor's data
            # broke the capture there (an argument's is keyed by its value)
            return ("py", value)
        raise GraphBreak(f"the step returns a {type(value).__name__}, which a plan cannot "
                         "rebuild")


def _elements(setting: Any) -> list[tuple[int | None, Any]]:
    """A group setting as (index, value) pairs: a tuple's elements (Adam's betas, which
    OneCycleLR cycles), else the setting itself (index None)."""
    if type(setting) is tuple:
        return list(enumerate(setting))
    return [(None, setting)]


def _numbers_in(value: Any) -> list[Any]:
    """The Python floats and ints of a step's returned value (in its tuples, lists, dicts)."""
    if type(value) in (float, int):
        return [value]
    if isinstance(value, (tuple, list)):
        return [n for v in value for n in _numbers_in(v)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers_in(v)]
    return []


def _tensors_in(value: Any) -> list[Tensor]:
    """The tensors of a step's returned value (in its tuples, lists and dicts)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


def _broadcast(cell: MetaArray) -> bool:
    """Whether the view ``cell`` (or a view it was taken from) shows an element of its base
    more than once (an expand)."""
    while cell.view_of is not None:
        if math.prod(cell.shape) > math.prod(cell.view_of.shape):
            return True
        cell = cell.view_of
    return False


def _stale(cell: MetaArray) -> bool:
    """Whether a storage the view ``cell`` was taken from (its base, or the base's base) was
    written in place since: the view's node holds the values before the write, where eager
    mode's view shows the written ones."""
    while cell.view_of is not None:
        if cell.view_of.node != cell.base_node:
            return True
        cell = cell.view_of
    return False


# builtins whose answer for a number argument differs for the tensor standing for it in a
# capture (Tracer.add_scalar_input): a step calling one and naming a number type (its
# globals) reads its numbers as constants; ``isinstance(out, tuple)`` names none
_TYPE_CHECKS = frozenset(("isinstance", "type", "issubclass"))
# builtins whose answer for a number's stand-in is the tensor's own (its id)
_IDENTITY = frozenset(("hash", "id"))
_NUMBER_TYPES = frozenset(("int", "float", "bool", "complex", "str", "numbers", "Number",
                           "Real", "Integral", "Rational", "Complex", "np", "numpy"))


def capture(fn: Any, args: tuple[Any, ...], target_device: str | None = None,
            scalars: Any = (), eager_writes: frozenset[guards.Path] = frozenset()) -> Capture:
    """Trace ``fn(*args)``; raises GraphBreak where the step cannot be captured. The Python
    values the step changes at the paths its code reads and writes are put back as they were
    (``Capture.watch`` says which), as are its optimizers' state and random generators: a
    capture that falls back leaves the call to run eagerly from the state it met. The float
    arguments at positions ``scalars`` are inputs of the plan, read at every replay
    (``Tracer.add_scalar_input``), not constants. ``eager_writes``: the paths an eager run
    of this call just before left holding one of its tensor arguments (``stored_tensors``)."""
    tracer = Tracer(target_device)
    tracer.entry = getattr(fn, "__code__", None)
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            tracer.add_input(i, a)
    watch = guards.Watch(guards.call_accesses(fn, args))
    if watch.found.stateful:  # before the step runs: a capture would make the call once
        raise GraphBreak(f"the step calls {watch.found.stateful[0]}, which a replayed plan "
                         f"would not (its Python does not run): pass the batch as an argument")
    if scalars:
        tracer.number_args = args
        names = {p.name for p in watch.found.reads if p.kind == "global" and not p.steps}
        if names & _TYPE_CHECKS and names & _NUMBER_TYPES:
            # ``isinstance(n, int)``, ``type(lr) is float``: False for the number's stand-in
            # (a tensor), where the step's Python would branch on it
            raise GraphBreak(f"the step calls {min(names & _TYPE_CHECKS)}() and names "
                             f"{min(names & _NUMBER_TYPES)}, which its number arguments' "
                             "stand-ins would not pass")
        if names & _IDENTITY:  # a stand-in's hash is its id, not the number's
            raise GraphBreak(f"the step calls {min(names & _IDENTITY)}(), which its number "
                             "arguments' stand-ins would answer for themselves")
        args = tuple(a if i not in scalars else guards.Unread(i) if isinstance(a, str)
                     else tracer.add_scalar_input(i, type(a) is int) for i, a in enumerate(args))
    tracer.own_state = _optimizers_with_state_read(watch.found)
    tracer.watch = watch
    tracer.note_groups(args)
    grad_mode = is_grad_enabled()
    draws = _PythonDraws()
    prev = set_tracer(tracer)
    captured = False
    try:
        try:
            result = fn(*args)
        except GraphBreak as e:
            # the conditions on number arguments met before it: the branch that breaks
            # (planner.compile's _EagerBranch), where another branch may be captured
            e.number_guards = tuple(tracer.number_guards)  # type: ignore[attr-defined]
            raise
        if is_grad_enabled() == grad_mode:  # else the GraphBreak below
            from .aot import trace_backward

            tracer.aot = trace_backward(tracer, result, len(args))
            if tracer.aot is not None and tracer.items:
                raise GraphBreak("a compiled module's forward returns Tensor.item()")
        set_tracer(prev)
        if is_grad_enabled() != grad_mode:
            raise GraphBreak("the step changed the grad mode and did not restore it")
        draws.check()
        found = tracer.finish(result, stored_tensors(watch, tracer, eager_writes))
        found.watch = watch
        found.aot = tracer.aot
        found.made_state = [(opt, p, dict(opt.state[p])) for opt, p in tracer.made_state]
        found.hooks_made = tracer.hooks_made
        returned = [t for t in flatten(result)[0] if isinstance(t, Tensor)]
        found.inference_returns = bool(returned) and all(t.is_inference() for t in returned)
        found.number_guards = tuple(tracer.number_guards)
        captured = True
        return found
    finally:
        set_tracer(prev)
        set_grad_enabled(grad_mode)
        tracer.restore_optimizers(keep_made=captured)
        tracer.restore_groups()
        tracer.restore_generators()
        tracer.restore_flags()
        tracer.restore_versions()
        tracer.restore_modes()
        draws.restore()
        if not captured:
            for handle in tracer.hooks_made:
                handle.remove()
        watch.settle()
        if captured and watch.stored_unread is not None:
            raise GraphBreak(f"the step keeps its string argument at {watch.stored_unread}")


def stored_tensors(watch: guards.Watch, tracer: Tracer,
                   eager_writes: frozenset[guards.Path] = frozenset()
                   ) -> list[tuple[guards.Path, Tensor, int | None]]:
    """The paths the step leaves holding a tensor it computed (a node of the capture) or one
    of its tensor arguments, with that tensor and the argument's position (None: computed):
    the old weight_norm, spectral_norm and pruning hooks' ``module.weight = ...`` before
    every forward, a step's ``self.last_input = x``. A replay runs none of the step's Python,
    so the plan returns each computed one and the replay stores it there, or the call's
    argument (planner.compile._Replayer); the value it replaces is guarded by type only, as
    the step never reads it (a module's buffer too: planner.compile._module_params). Where
    the step does read it first (state carried from call to call, ``self.h = f(self.h,
    x)``), the slot reading it reads the tensor at the path at each replay (``_carry``, which
    says when it cannot); where the tensor is a view (eager mode's shares its base's
    memory), GraphBreak (``Tracer.finish``). Any other value the step
    leaves at a path it reads is planner.compile's to judge (``_changed_by_capture``). A
    path of ``eager_writes`` that holds the argument this capture met there (an eager run of
    the call just before stored it: the warm-up of a step that creates its .grads) is the
    argument's too. Which of these tensors are live objects (a .grad) ``Tracer.finish``
    finds."""
    found = []
    left = watch.tensors_left()
    for path in eager_writes - {path for path, _, _ in left}:
        held = watch.before.get(path, (None,))[0]
        argument = tracer.input_of.get(id(held))
        if argument is not None:
            found.append((path, held, argument))
    for path, old, now in left:
        argument = tracer.input_of.get(id(now))
        computed = type(now._data) is MetaArray
        if not computed and argument is None:
            continue
        if _read_through(old, tracer):
            _carry(path, old, now, watch, tracer)
        found.append((path, now, argument))
    return found


def _carry(path: guards.Path, old: Tensor, now: Tensor, watch: guards.Watch,
           tracer: Tracer) -> None:
    """The step read the tensor ``old`` at ``path`` and assigns ``now`` there (state carried
    from call to call: ``self.ema = self.ema * 0.9 + ...``, a truncated-BPTT hidden state
    ``holder.h = cell(x, holder.h).detach()``): the slot that reads ``old`` reads the tensor
    found at ``path`` at each replay (``Slot.path``), which stores ``now`` there after it.
    Where the plan could not stand for what eager mode does, GraphBreak, naming why: either
    requires grad (a backward through the carried tensor reaches the graph of the call
    before, which a plan does not keep); ``now`` is not computed (an argument: a replay's
    next read would be the argument itself); ``old`` is out of C order or shares memory
    with another tensor the step reads (its guard, guards.carried_misfit, asks neither of
    the tensor found there later); the step writes ``old`` in place (a replay would write
    the tensor it was captured with), or reads it through another path too (the tensor
    found there is not the one at ``path`` after a call)."""
    if old._rg or now._rg:
        raise GraphBreak(f"the step reads {path} before it assigns it a tensor it computes, "
                         "and one of them requires grad (state carried from call to call "
                         "with its autograd graph: a backward through it reaches the graph of "
                         "the call before, which a replayed plan does not keep); detach() "
                         "the new value to carry its value only")
    if type(now._data) is not MetaArray:
        raise GraphBreak(f"the step reads {path} before it assigns it one of its tensor "
                         "arguments, which a replayed plan would read from the tensor it was "
                         "captured with")
    cell, index, _ = tracer.cells[id(old._data)]
    slot = tracer.slots[index]
    root = guards.memory_root(old._data)
    if not old._data.flags.c_contiguous or any(
            guards.memory_root(array) == root for array in
            [*(s.ref._data for s in tracer.slots if s.kind == "tensor" and s.ref is not old),
             *(t._data for t in tracer.sharing_inputs), *(a for _, _, a in tracer.arguments)]):
        raise GraphBreak(f"the step reads {path} before it assigns it a tensor it computes, and "
                         "the tensor there is not contiguous or shares memory with another "
                         "the step reads, which a plan reading the tensor found there at each "
                         "call does not follow")
    if cell.node != tracer.source[index]:
        raise GraphBreak(f"the step writes {path} in place, then assigns it a new tensor, "
                         "which a replayed plan would write into the tensor it was captured "
                         "with")
    others = [str(p) for p, (value, _) in watch.before.items() if value is old and p != path]
    if slot.kind != "tensor" or slot.ref is not old or others or slot.path is not None:
        where = others[0] if others else "another path"
        raise GraphBreak(f"the step reads the tensor at {path} through {where} too, then "
                         f"assigns {path} a new one, which a replayed plan would read from "
                         "one place only")
    slot.path = path


def _read_through(old: Any, tracer: Tracer) -> bool:
    """Whether the step read the tensor ``old`` as the object it is (a slot of the plan bound
    to it), not as a .grad, an optimizer's state or an argument, which a plan finds anew at
    each call (``holder.g = w.grad`` after a ``zero_grad(set_to_none=False)`` read it)."""
    if id(old) not in tracer.outside_read or id(old) in tracer.input_of:
        return False
    if any(owner._grad is old for owner, _ in tracer.grad_shadow.values()):
        return False
    return not any(value is old for _, snapshot in tracer.optimizers.values()
                   for state in snapshot.values() for value in state.values())


def _marks_by_position(tensors: list[Tensor], device_of: Any, input_of: dict[int, int]
                       ) -> list[Any]:
    """The returned-graph mark of each of ``tensors`` (None: it requires no grad)."""
    marks = dict(returned_graphs(tuple(tensors), device_of, input_of))
    return [marks.get((i,)) for i in range(len(tensors))]


def _group_settings(opt: Any) -> list[dict[str, Any]]:
    return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


def _same(a: Any, b: Any) -> bool:
    """Whether a group setting is unchanged: the same object, or an equal plain value."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and type(a) is not Tensor and bool(a == b)
    except Exception:
        return False


class _GroupSetting:
    """A replay's effect: ``opt.param_groups[group][key]`` set to the call's argument
    ``arg``, as the step assigns it (Tracer.group_effects)."""

    takes_args = True

    def __init__(self, opt: Any, group: int, key: str, arg: int) -> None:
        self.opt, self.group, self.key, self.arg = weakref.ref(opt), group, key, arg

    def __call__(self, args: tuple[Any, ...]) -> None:
        opt = self.opt()
        if opt is not None:
            opt.param_groups[self.group][self.key] = args[self.arg]


def _optimizers_with_state_read(found: guards.Accesses) -> set[int]:
    """The ids of the optimizers whose ``state`` attribute a path the step reads or writes
    goes through."""
    from runtime.optim.optimizer import Optimizer

    ids = set()
    for path in found.paths():
        for i, step in enumerate(path.steps):
            if step == (True, "state"):
                owner = path.prefix(i + 1).owner()
                if isinstance(owner, Optimizer):
                    ids.add(id(owner))
    return ids


class _PythonDraws:
    """The states of Python's ``random`` and numpy's global generator when a capture began: a
    step that draws from either (``random.random()``, ``np.random.rand()``) would have its
    numbers baked into the plan, the same at every replay, so the call runs eagerly instead
    (``check``); the capture puts both back (``restore``), so that the eager run draws what
    an eager call draws."""

    def __init__(self) -> None:
        self.python = random.getstate()
        self.numpy = np.random.get_state(legacy=False)
        self.kept = False  # check() found both as they were: nothing to put back

    def check(self) -> None:
        if random.getstate() != self.python:
            raise GraphBreak("the step draws from Python's random module, whose numbers a "
                             "replayed plan would repeat")
        now = np.random.get_state(legacy=False)
        if now["state"]["pos"] != self.numpy["state"]["pos"] or not np.array_equal(
                now["state"]["key"], self.numpy["state"]["key"]) or \
                now["has_gauss"] != self.numpy["has_gauss"]:
            raise GraphBreak("the step draws from numpy's global random generator, whose "
                             "numbers a replayed plan would repeat")
        self.kept = True

    def restore(self) -> None:
        if self.kept:
            return
        random.setstate(self.python)
        np.random.set_state(self.numpy)


def _set_flag(t: Tensor, flag: bool) -> None:
    """A replay's effect: ``t.requires_grad`` as the step left it."""
    t._rg = flag
