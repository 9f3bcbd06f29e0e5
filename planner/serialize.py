"""A Plan as JSON text, and back: ``dumps(plan)`` / ``loads(text)``."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import networkx as nx
import numpy as np

from runtime import _dtype as D

FORMAT = "planner.plan"
VERSION = 1


def encode(v: Any) -> Any:
    """A JSON-ready value; tuples, slices, Ellipsis, DTypes and arrays are tagged."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, float)) and type(v) in (int, float):
        return v
    if isinstance(v, D.DType):
        return {"$dtype": v.name}
    if isinstance(v, tuple):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {"$dict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, slice):
        return {"$slice": [encode(v.start), encode(v.stop), encode(v.step)]}
    if v is Ellipsis:
        return {"$ellipsis": True}
    if isinstance(v, np.ndarray):
        arr = np.ascontiguousarray(v)
        return {"$array": {"dtype": arr.dtype.str, "shape": list(arr.shape),
                           "data": base64.b64encode(arr.tobytes()).decode("ascii")}}
    if isinstance(v, np.generic):
        return {"$scalar": {"dtype": v.dtype.str, "value": v.item()}}
    if hasattr(v, "__array__") and hasattr(v, "shape"):  # a device array
        return encode(np.asarray(v.get() if hasattr(v, "get") else v))
    name = type(v).__name__
    if dataclasses.is_dataclass(v) and _DATACLASSES().get(name) is type(v):
        # index placeholders and kernel IR: frozen dataclasses, field by field
        return {"$dataclass": [name, {f.name: encode(getattr(v, f.name))
                                      for f in dataclasses.fields(v)}]}
    raise TypeError(f"a plan attribute of type {type(v).__name__} has no serialized form")


def decode(v: Any) -> Any:
    if isinstance(v, list):
        return [decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, body), = v.items()
    if tag == "$dtype":
        return D.as_dtype(body)
    if tag == "$tuple":
        return tuple(decode(x) for x in body)
    if tag == "$dict":
        return {_key(decode(k)): decode(x) for k, x in body}
    if tag == "$slice":
        return slice(*(decode(x) for x in body))
    if tag == "$ellipsis":
        return Ellipsis
    if tag == "$array":
        data = base64.b64decode(body["data"])
        return np.frombuffer(data, dtype=np.dtype(body["dtype"])).reshape(body["shape"]).copy()
    if tag == "$scalar":
        return np.dtype(body["dtype"]).type(body["value"])
    if tag == "$dataclass":
        name, fields = body
        cls = _DATACLASSES().get(name)
        if cls is None:
            raise ValueError(f"unknown class {name!r} in a serialized plan")
        return cls(**{k: decode(x) for k, x in fields.items()})
    raise ValueError(f"unknown tag {tag!r} in a serialized plan")


def _DATACLASSES() -> dict[str, type]:  # noqa: N802 - a constant, built on first use
    """The only classes a serialized plan may name (never arbitrary code, unlike pickle)."""
    from codegen import ir as kir
    from runtime.ops.prims import IndexArg

    classes = [IndexArg, kir.Input, kir.Load, kir.Const, kir.Unary, kir.Binary, kir.Where,
               kir.Cast, kir.Reduce, kir.Output, kir.Kernel]
    return {c.__name__: c for c in classes}


def _key(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


def dumps(plan: Any) -> str:
    graph = nx.node_link_data(plan.graph, edges="links")
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "device": plan.device,
        "steps": [{"out": s.out, "op": s.op, "args": encode(s.args), "attrs": encode(s.attrs),
                   "shape": list(s.shape), "dtype": s.dtype.name, "device": s.device,
                   "phase": s.phase, "free": list(s.free)} for s in plan.steps],
        "inputs": encode(plan.inputs),
        "reads": encode(plan.reads),
        "consts": [[k, encode(a)] for k, a in plan.consts.items()],
        "rands": [[k, encode(r)] for k, r in plan.rands.items()],
        "writes": encode(plan.writes),
        "returns": encode(plan.returns),
        "slots": encode(plan.slots),
        "stats": encode(plan.stats),
        "graph": encode(graph),
    }
    return json.dumps(doc)


def loads(text: str) -> Any:
    from .plan import Plan, PlanStep

    doc = json.loads(text)
    if doc.get("format") != FORMAT:
        raise ValueError("not a serialized planner Plan")
    if doc.get("version") != VERSION:
        raise ValueError(f"serialized plan version {doc.get('version')} is not {VERSION}")
    steps = [PlanStep(s["out"], s["op"], decode(s["args"]), decode(s["attrs"]), tuple(s["shape"]),
                      D.as_dtype(s["dtype"]), s["device"], s["phase"], list(s["free"]))
             for s in doc["steps"]]
    graph = nx.node_link_graph(decode(doc["graph"]), directed=True, multigraph=False,
                               edges="links")
    return Plan(steps, decode(doc["inputs"]), decode(doc["reads"]),
                {k: decode(a) for k, a in doc["consts"]},
                {k: decode(r) for k, r in doc["rands"]}, decode(doc["writes"]),
                decode(doc["returns"]), decode(doc["slots"]), graph, decode(doc["stats"]),
                doc["device"])
