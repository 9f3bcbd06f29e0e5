"""Plan: an ordered list of typed steps over named buffers, its schedule, and how it runs.

A Plan is data. It knows nothing of the live objects a step touched: it reads its inputs and
state as arrays in slot order and returns the arrays to write back, so it can be printed,
serialized, re-loaded and run again. Its schedule (planner.schedule: liveness, dependencies,
metas, in-place reuse, costs, peak memory) is computed once when it is built or loaded. It runs
as one generated Python function (planner.program), built on first use in its ``executable``
(planner.executable), the one place that holds what a run derives; never its data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import networkx as nx
import numpy as np

from runtime import _quiet
from runtime.autograd.engine import name_in_note

from . import inspect, serialize
from .executable import COMMITS, Commit, CommitOutput, Executable, materialize
from .parallel import Execution, choose
from .schedule import Schedule, compute, needed_buffers, schedule_from_state, schedule_state
from .steps import (
    CommitStep,
    ConstStep,
    InputStep,
    KernelInfo,
    KernelStep,
    PrimitiveStep,
    RandStep,
    StateStep,
    Step,
    primitive_step,
)

__all__ = ["COMMITS", "Commit", "CommitOutput", "Plan", "build_plan", "materialize"]


@dataclass(eq=False)
class Plan:
    steps: list[Step]
    writes: list[tuple[int, int]]  # (slot, buffer or -1 for None)
    # template: ("node", buffer) | ("tuple"|"list", [...]) | ("dict", [...]) |
    # ("item", ("node", buffer)) (Tensor.item() returned) | ("copy", ("node", buffer)) (a
    # constant returned: copied) | ("py", v)
    returns: Any
    slots: list[dict[str, Any]]  # descriptions of the slots, for printing and serialization
    graph: nx.DiGraph
    stats: dict[str, Any]
    device: str
    kernels: list[Any] = field(default_factory=list)
    # whether its CPU matmuls may run as generated products (planner.products): set by the
    # fusion pass (the LLVM backend); an interpreter plan runs numpy's matmul
    products: bool = False
    schedule: Schedule = field(init=False, repr=False)  # derived once, from the above
    executable: Executable = field(init=False, repr=False)  # what runs derive; never pickled
    # how it runs (planner.parallel): set by ``configure``, the straight-line program until then
    execution: Execution = field(init=False, repr=False)
    # whether a run calls numpy on values (a primitive step: a numpy floating-point warning
    # could come out, which ``run`` keeps in: runtime._quiet); a plan of kernels and views
    # alone does not pay for it (one_op: 0.3 of its 4.7 us). Derived, as the schedule
    numpy_steps: bool = field(init=False, repr=False, default=False)

    def __post_init__(self, schedule: Schedule | None = None) -> None:
        if schedule is None:
            outputs = self.graph.graph.get("outputs", ()) if self.graph is not None else ()
            schedule = compute(self.steps, needed_buffers(
                self.steps, self.writes, self.returns, outputs))
        self.schedule = schedule
        self.executable = Executable(self)
        self.execution = Execution("program", 1, "not configured (Plan.configure)")
        self.numpy_steps = any(isinstance(s, PrimitiveStep) and not s.is_view
                               for s in self.steps)

    def configure(self, workers: int | None = 1, executor: str = "auto") -> Execution:
        """Choose how the plan runs (planner.parallel.choose): with ``workers`` CPU threads
        (None: one per core), on the straight-line program or the runtime's executor, as the
        cost model decides (``executor="auto"``) or as asked ("program", "parallel")."""
        self.execution = choose(self, workers, executor)
        return self.execution

    def __getstate__(self) -> dict[str, Any]:
        """The plan's data only: a copy or unpickled plan computes its schedule again (as a
        loaded one does) and gets an executable of its own."""
        state = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        return {**state, "execution": self.execution}

    def kept_state(self) -> dict[str, Any]:
        """``__getstate__`` plus the schedule as plain data: a kept plan (planner.plan_cache)
        loads it instead of computing it again."""
        return {**self.__getstate__(), "schedule": schedule_state(self.schedule)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        execution = state.pop("execution", None)
        schedule = state.pop("schedule", None)
        self.__dict__.update(state)
        self.__post_init__(None if schedule is None else schedule_from_state(schedule))
        if execution is not None:
            self.execution = execution

    def __getattr__(self, name: str) -> Any:
        """``graph`` of a plan loaded from the plan cache: unpickled on first use (a run
        never asks; planner.plan_cache._lazy_graph), then kept."""
        if name == "graph":
            loader = self.__dict__.get("_graph_loader")
            if loader is not None:
                graph = self.__dict__["graph"] = loader()
                self.__dict__.pop("_graph_loader", None)
                return graph
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- the source steps, by kind ------------------------------------------------------------
    @property
    def inputs(self) -> list[tuple[int, int]]:
        """(argument index, buffer) of each input step."""
        return [(s.index, s.out) for s in self.steps if isinstance(s, InputStep)]

    @property
    def reads(self) -> list[tuple[int, int]]:
        """(state slot, buffer) of each state step."""
        return [(s.slot, s.out) for s in self.steps if isinstance(s, StateStep)]

    @property
    def consts(self) -> dict[int, np.ndarray]:
        return {s.out: s.value for s in self.steps if isinstance(s, ConstStep)}

    @property
    def rands(self) -> dict[int, tuple[str, int]]:
        """buffer -> (kind, generator index) of each random draw."""
        return {s.out: (s.kind, s.generator) for s in self.steps if isinstance(s, RandStep)}

    # --- running ----------------------------------------------------------------------------
    def run(self, args: list[Any], state: dict[int, Any], generators: list[Any],
            in_place: bool = False) -> tuple[Any, list[tuple[int, Any]]]:
        """Execute on arrays: ``args`` by argument index, ``state`` by slot, each of its
        planned shape and dtype (else a ValueError naming the argument or slot, expected and
        given). Returns the return template filled with arrays, and (slot, value) pairs to
        write back: an array, None, or a ``CommitOutput`` (a state update to run in place:
        ``materialize`` gives its array). How it runs is ``execution`` (``configure``); an
        exception a step raises carries a note naming that step. With ``in_place``, an update
        may be stored into the state's own array during the run (returned as that array),
        where nothing after it can fail: for a caller that writes every value back."""
        execution = self.execution
        # numpy's floating-point warnings: eager mode gives none
        numpy_steps = self.numpy_steps
        quiet = _quiet.current()
        try:
            if numpy_steps:
                _quiet.ignore()
            if execution.executor == "parallel":
                return self.executable.runner(execution.workers).run(args, state, generators)
            graphs = self.executable.graph_runner() if self.device != "cpu" else None
            if graphs is not None:  # a CUDA graph from its second call (planner.cuda_graph)
                return graphs.run(args, state, generators, in_place)
            return self.executable.program(False, in_place)(self, args, state, generators)
        except BaseException as exc:
            i = self.executable.failing_step(exc)
            if i is not None and execution.executor != "parallel":
                name_in_note(exc, self.schedule.names[i])
            raise
        finally:
            if numpy_steps:
                _quiet.restore(quiet)

    def fresh_writes(self) -> set[int]:
        """The slots written a buffer the plan makes new on every call, on every path it runs
        by, and written to no other slot: a kernel's output stored in an array of its own
        (not through an input), a matrix product's result."""
        made: set[int] = set()
        for s in self.steps:
            if isinstance(s, KernelStep) and not isinstance(s, CommitStep):
                made.update(b for b, out in zip(s.outs, s.kernel.outputs) if out.into is None)
            elif isinstance(s, PrimitiveStep) and s.name in ("matmul", "matmul_add") \
                    and s.shape:
                made.add(s.out)
        counts = Counter(b for _, b in self.writes)
        return {slot for slot, b in self.writes if b in made and counts[b] == 1}

    def kernel_signature(self, step: KernelStep) -> Any:
        """The signature a kernel step's kernel is called with (Executable.kernel_signature)."""
        return self.executable.kernel_signature(step)

    def kernel_call(self, step: KernelStep) -> Any:
        """``call(*args) -> outputs`` for a kernel step (Executable.kernel_call)."""
        return self.executable.kernel_call(step)

    # --- inspection -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"<Plan {len(self.steps)} steps, {len(self.inputs)} inputs, "
                f"{len(self.reads)} state reads, {len(self.writes)} writes>")

    def listing(self) -> str:
        """One line a step: the schedule as text."""
        lines = []
        for i, s in enumerate(self.steps):
            args = ", ".join(f"%{v}" if k == "buf" else repr(v) for k, v in s.args)
            attrs = "".join(f", {k}={v!r}" for k, v in s.shown().items())
            lines.append(f"{i:4d}  %{s.out} = {s.op}({args}{attrs})  "
                         f"{list(s.shape)} {s.dtype.name} [{s.phase}]")
        return "\n".join(lines)

    def summary(self) -> str:
        """A text table: nodes, steps, FLOPs, bytes, peak memory, op counts (planner.inspect)."""
        return inspect.summary(self)

    def to_dot(self, colour_by: str = "phase") -> str:
        """Graphviz text of the plan's step DAG, filled by "phase" or "device"
        (planner.inspect)."""
        return inspect.to_dot(self, colour_by)

    @property
    def flops(self) -> int:
        """Estimated floating-point operations of one run (the schedule's)."""
        return sum(self.schedule.flops)

    def dumps(self) -> str:
        """The plan as JSON text (planner.serialize)."""
        return serialize.dumps(self)

    @staticmethod
    def loads(text: str) -> Plan:
        """A plan from ``Plan.dumps`` text, every field checked (planner.serialize)."""
        data = serialize.loads(text)
        kernels = [KernelInfo(s.kernel, s.device) for s in data["steps"]
                   if isinstance(s, KernelStep)]
        return Plan(**data, kernels=kernels)


def build_plan(graph: nx.DiGraph, slots: list[dict[str, Any]], device: str,
               captured: int) -> Plan:
    """Schedule a (pruned, simplified) graph: creation order is a topological order, which
    also keeps random draws in the order eager mode makes them."""
    order = sorted(graph.nodes)
    steps: list[Step] = []
    for v in order:
        data = graph.nodes[v]
        op, attrs = data["op"], data["attrs"]
        common = {"out": v, "shape": tuple(data["shape"]), "dtype": data["dtype"],
                  "device": data["device"], "phase": data["phase"]}
        if op == "input":
            steps.append(InputStep(index=data["index"], args=[], **common))
        elif op == "state":
            steps.append(StateStep(slot=data["slot"], args=[], **common))
        elif op == "const":
            steps.append(ConstStep(value=data["value"], args=[], **common))
        elif op == "rand":
            steps.append(RandStep(kind=attrs["kind"], generator=attrs["generator"], args=[],
                                  **common))
        else:
            args = [("buf", u) if kind == "node" else ("scalar", u) for kind, u in data["args"]]
            steps.append(primitive_step(op, args=args, attrs=dict(attrs), **common))
    stats = {"captured": captured, "kept": len(order), "pruned": captured - len(order)}
    return Plan(steps, list(graph.graph["writes"]), graph.graph["returns"], slots, graph, stats,
                device)
