"""Plan: an ordered schedule of primitive steps over named buffers, and its reference interpreter.

A Plan is data. It knows nothing of the live objects a step touched: it reads its inputs and
state as arrays in slot order and returns the arrays to write back, so it can be printed,
serialized, re-loaded and run again. The interpreter is the oracle for codegen and the fallback
for any segment codegen cannot lower. It runs the steps as one generated Python function
(planner.program), built on first use and cached beside the plan's data, never in it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D

from .program import buffer_metas, program_for


@dataclass
class Commit:
    """A parameter update left to the write-back: the plan returns this instead of the new
    value, and writing it runs the kernel on the parameter's own storage. It runs once every
    step of the plan has succeeded, so a failing replay still leaves the parameter untouched,
    and the parameter is never held twice."""

    launch: Any  # CompiledModule.launcher of a kernel whose one output has ``into``
    args: list[Any]  # the kernel's arguments; args[into] is the parameter's array as read
    into: int

    def apply(self, dest: Any) -> None:
        """Update ``dest`` (the parameter's array) in place."""
        args = list(self.args)
        if args[self.into] is dest and dest.flags.c_contiguous:
            self.launch([*(np.asarray(a, order="C") for a in args), dest])
            return
        # the parameter's storage changed since the plan read it, or is not dense: update a
        # dense copy, then write that back
        work = np.array(args[self.into], order="C", copy=True)
        args[self.into] = work
        self.launch([*(np.asarray(a, order="C") for a in args), work])
        dest[...] = work.reshape(dest.shape)

    def result(self) -> Any:
        """The updated value as a new array, the parameter left as it is."""
        dest = np.array(self.args[self.into], order="C", copy=True)
        self.apply(dest)
        return dest


def materialize(value: Any) -> Any:
    """A value a plan writes back, as an array (a Commit's result)."""
    return value.result() if isinstance(value, Commit) else value


@dataclass
class PlanStep:
    out: int  # the buffer this step writes (its graph node id)
    op: str
    args: list[tuple[str, Any]]  # ("buf", id) | ("scalar", value)
    attrs: dict[str, Any]
    shape: tuple[int, ...]
    dtype: D.DType
    device: str
    phase: str
    free: list[int] = field(default_factory=list)  # buffers dead after this step


@dataclass
class Plan:
    steps: list[PlanStep]
    inputs: list[tuple[int, int]]  # (argument index, buffer)
    reads: list[tuple[int, int]]  # (state slot, buffer)
    consts: dict[int, np.ndarray]
    rands: dict[int, tuple[str, int]]  # buffer -> (kind, generator index)
    writes: list[tuple[int, int]]  # (slot, buffer or -1 for None)
    returns: Any  # template: ("node", buffer) | ("tuple"|"list", [...]) | ("dict", [...]) | ("py", v)
    slots: list[dict[str, Any]]  # descriptions of the slots, for printing and serialization
    graph: nx.DiGraph
    stats: dict[str, Any]
    device: str
    kernels: list[Any] = field(default_factory=list)

    def __getstate__(self) -> dict[str, Any]:
        """The plan's data only: what it derives and caches on first use (its program, the
        compiled kernel module, inspection indexes; all ``_``-named) is rebuilt on demand."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    # --- running ----------------------------------------------------------------------------
    def run(self, args: list[Any], state: dict[int, Any], generators: list[Any]
            ) -> tuple[Any, list[tuple[int, Any]]]:
        """Execute on arrays: ``args`` by argument index, ``state`` by slot, each of its
        planned shape and dtype (else a ValueError naming the argument or slot, expected and
        given). Returns the return template filled with arrays, and (slot, value) pairs to
        write back: an array, None, or a ``Commit`` (a parameter update to run in place:
        ``materialize`` gives its array)."""
        return self._program()(self, args, state, generators)

    def kernel_signature(self, step: PlanStep) -> Any:
        """(shape, dtype) of every array a kernel step hands its kernel (its arguments as
        planned, then its outputs), shown to hold every element the kernel's IR addresses
        (``CompiledModule.check_signature``: a ValueError otherwise). A Commit's one output
        is the parameter's own array, of its argument's shape."""
        metas = buffer_metas(self)
        ins = [metas[v] for _, v in step.args]
        commit = step.attrs.get("commit")
        outs = [ins[commit]] if commit is not None else [
            (tuple(shape), np.dtype(dtype)) for shape, dtype, _ in step.attrs["out_specs"]]
        return self._module().check_signature(step.attrs["kernel"], ins + outs)

    def kernel_call(self, step: PlanStep) -> Any:
        """``call(*args) -> outputs`` for a kernel step (built once per step, kept outside
        the plan's data): C-contiguous arguments, fresh outputs of the kernel's shapes, the
        module's launcher (which checks every call against ``kernel_signature``), outputs
        reshaped to the plan's shapes (a per-row output may carry keepdim ones)."""
        cache = self.__dict__.setdefault("_kernel_calls", {})
        found = cache.get(id(step))
        if found is not None and found[0] is step:
            return found[1]
        attrs = step.attrs
        launch = self._module().launcher(attrs["kernel"], self.kernel_signature(step))
        specs = [(tuple(shape), np.dtype(dtype), tuple(plan_shape))
                 for shape, dtype, plan_shape in attrs["out_specs"]]
        if attrs.get("commit") is not None:
            def defer(*args: Any) -> list[Any]:
                return [Commit(launch, list(args), attrs["commit"])]

            cache[id(step)] = (step, defer)
            return defer
        empty, asarray, ndarray = np.empty, np.asarray, np.ndarray

        def call(*args: Any) -> list[Any]:
            # asarray keeps a 0-d array 0-d (ascontiguousarray makes it 1-d)
            ins = [a if a.__class__ is ndarray and a.flags.c_contiguous else asarray(a, None, "C")
                   for a in args]
            outs = [empty(shape, dtype) for shape, dtype, _ in specs]
            launch(ins + outs)
            return [o if o.shape == plan_shape else o.reshape(plan_shape)
                    for o, (_, _, plan_shape) in zip(outs, specs)]

        cache[id(step)] = (step, call)
        return call

    def _module(self, cache_dir: str | os.PathLike[str] | None = None) -> Any:
        """The compiled module of every kernel of this plan (built on first use, cached), from
        and into the compiled-code cache ``cache_dir`` (``codegen.cache.cache_dir()`` if None)
        on that first use."""
        module = self.__dict__.get("_module_cache")
        if module is None:
            from codegen.cache import get_compiled

            kernels = [s.attrs["kernel"] for s in self.steps if s.op == "kernel"]
            module = self.__dict__["_module_cache"] = get_compiled(kernels, cache_dir)
        return module

    def _program(self) -> Any:
        """The steps as one generated Python function (planner.program; built once per plan
        and kept out of the plan's data, which stays plain and serializable)."""
        return program_for(self)

    # --- inspection -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"<Plan {len(self.steps)} steps, {len(self.inputs)} inputs, "
                f"{len(self.reads)} state reads, {len(self.writes)} writes>")

    def listing(self) -> str:
        """One line a step: the schedule as text."""
        lines = []
        for i, s in enumerate(self.steps):
            args = ", ".join(f"%{v}" if k == "buf" else repr(v) for k, v in s.args)
            shown = {"kernel": s.attrs["kernel"].name, "fused": s.attrs["fused"],
                     "outs": s.attrs["outs"]} if s.op == "kernel" else s.attrs
            if s.op == "kernel" and s.attrs.get("commit") is not None:
                # runs at write-back, storing into this argument (a parameter): plan.Commit
                shown = {**shown, "in_place_at_commit": f"%{s.args[s.attrs['commit']][1]}"}
            attrs = "".join(f", {k}={v!r}" for k, v in shown.items())
            lines.append(f"{i:4d}  %{s.out} = {s.op}({args}{attrs})  "
                         f"{list(s.shape)} {s.dtype.name} [{s.phase}]")
        return "\n".join(lines)

    def summary(self) -> str:
        """A text table: nodes, steps, FLOPs, bytes, peak memory, op counts (planner.inspect)."""
        from .inspect import summary

        return summary(self)

    def to_dot(self) -> str:
        """Graphviz text of the plan's graph (planner.inspect)."""
        from .inspect import to_dot

        return to_dot(self)

    @property
    def flops(self) -> int:
        """Estimated floating-point operations of one run (planner.inspect)."""
        from .inspect import flops

        return flops(self)

    def dumps(self) -> str:
        """The plan as JSON text (planner.serialize)."""
        from .serialize import dumps

        return dumps(self)

    @staticmethod
    def loads(text: str) -> Plan:
        """A plan from ``Plan.dumps`` text (planner.serialize)."""
        from .serialize import loads

        return loads(text)


def _draw(generator: Any, kind: str, step: PlanStep) -> Any:
    rng = generator._rng
    if kind == "randn":
        arr = rng.standard_normal(step.shape, dtype=step.dtype.np)
    else:
        arr = rng.random(step.shape, dtype=step.dtype.np)
    if step.device != "cpu":
        from runtime._device import move_array

        arr = move_array(arr, step.device)
    return arr


def build_plan(graph: nx.DiGraph, slots: list[dict[str, Any]], device: str,
               captured: int) -> Plan:
    """Schedule a (pruned, simplified) graph: creation order is a topological order, which
    also keeps random draws in the order eager mode makes them."""
    order = sorted(graph.nodes)
    outputs = set(graph.graph["outputs"])
    last_use: dict[int, int] = {}
    for i, v in enumerate(order):
        for kind, u in graph.nodes[v]["args"]:
            if kind == "node":
                last_use[u] = i
    steps: list[PlanStep] = []
    inputs, reads, rands = [], [], {}
    consts: dict[int, np.ndarray] = {}
    for i, v in enumerate(order):
        data = graph.nodes[v]
        op = data["op"]
        if op == "input":
            inputs.append((data["index"], v))
        elif op == "state":
            reads.append((data["slot"], v))
        elif op == "const":
            consts[v] = data["value"]
        elif op == "rand":
            rands[v] = (data["attrs"]["kind"], data["attrs"]["generator"])
        args = [("buf", u) if kind == "node" else ("scalar", u) for kind, u in data["args"]]
        steps.append(PlanStep(v, op, args, dict(data["attrs"]), tuple(data["shape"]),
                              data["dtype"], data["device"], data["phase"]))
    for v, i in last_use.items():
        if v not in outputs:
            steps[i].free.append(v)
    stats = {"captured": captured, "kept": len(order), "pruned": captured - len(order)}
    return Plan(steps, inputs, reads, consts, rands, list(graph.graph["writes"]),
                graph.graph["returns"], slots, graph, stats, device)
