"""Plan: an ordered schedule of primitive steps over named buffers, and its reference interpreter.

A Plan is data. It knows nothing of the live objects a step touched: it reads its inputs and
state as arrays in slot order and returns the arrays to write back, so it can be printed,
serialized, re-loaded and run again. The interpreter is the oracle for codegen and the fallback
for any segment codegen cannot lower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D
from runtime._device import array_module
from runtime.ops.registry import REGISTRY


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

    # --- running ----------------------------------------------------------------------------
    def run(self, args: list[Any], state: dict[int, Any], generators: list[Any]
            ) -> tuple[Any, list[tuple[int, Any]]]:
        """Execute on arrays: ``args`` by argument index, ``state`` by slot. Returns the return
        template filled with arrays, and (slot, array or None) pairs to write back."""
        env: dict[int, Any] = {}
        for index, buf in self.inputs:
            env[buf] = args[index]
        for slot, buf in self.reads:
            env[buf] = state[slot]
        env.update(self.consts)
        xp = np if self.device == "cpu" else array_module(self.device)
        registry = REGISTRY
        for out, op, spec, attrs, dtype, free, step in self._program():
            if op is None:
                if step is not None:  # a random draw
                    kind, gen = self.rands[out]
                    env[out] = _draw(generators[gen], kind, step)
            elif op == "kernel":
                self._run_kernel(attrs, [env[v] for _, v in spec], env)
            else:
                # looked up per run: the registry stays the one source of each primitive
                value = registry[op].impl(xp, *[env[v] if is_buf else v for is_buf, v in spec],
                                          **attrs)
                if type(value) is not np.ndarray and xp is np:
                    value = np.asarray(value)
                if value.dtype != dtype:
                    value = value.astype(dtype)
                env[out] = value
            for buf in free:
                del env[buf]
        writes = [(slot, None if buf < 0 else env[buf]) for slot, buf in self.writes]
        return _fill(self.returns, env), writes

    def _run_kernel(self, attrs: dict[str, Any], args: list[Any], env: dict[int, Any]) -> None:
        """A fused segment: one compiled kernel call over C-contiguous arrays."""
        ins = [np.ascontiguousarray(a) for a in args]
        outs = [np.empty(shape, dtype=dtype) for shape, dtype, _ in attrs["out_specs"]]
        self._module().run(attrs["kernel"], ins, outs)
        for buf, arr, (_, _, plan_shape) in zip(attrs["outs"], outs, attrs["out_specs"]):
            env[buf] = arr.reshape(plan_shape)  # a per-row output may carry keepdim ones

    def _module(self) -> Any:
        """The compiled module of every kernel of this plan (built on first use, cached)."""
        module = self.__dict__.get("_module_cache")
        if module is None:
            from codegen.cache import get_compiled

            kernels = [s.attrs["kernel"] for s in self.steps if s.op == "kernel"]
            module = self.__dict__["_module_cache"] = get_compiled(kernels)
        return module

    def _program(self) -> list[tuple[Any, ...]]:
        """The steps as flat tuples for the interpreter loop (built once per plan)."""
        program = self.__dict__.get("_program_cache")
        if program is None:
            program = []
            for s in self.steps:
                is_source = s.op in ("input", "state", "const", "rand")
                spec = [(kind == "buf", v) for kind, v in s.args]
                program.append((s.out, None if is_source else s.op, spec, s.attrs, s.dtype.np,
                                s.free,
                                s if s.op == "rand" else None))
            self.__dict__["_program_cache"] = program
        return program

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


def _fill(template: Any, env: dict[int, Any]) -> Any:
    kind, body = template
    if kind == "node":
        return ("array", env[body])
    if kind in ("tuple", "list"):
        return (kind, [_fill(t, env) for t in body])
    if kind == "dict":
        return (kind, [(k, _fill(t, env)) for k, t in body])
    return template


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
