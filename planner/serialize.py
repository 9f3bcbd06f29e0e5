"""A Plan as JSON text, and back: ``dumps(plan)`` / ``loads(text)``."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, NoReturn

import networkx as nx
import numpy as np

from runtime import _dtype as D
from runtime.autograd.node import Meta
from runtime.ops.registry import REGISTRY

from .steps import (
    SOURCE_KINDS,
    CommitStep,
    ConstStep,
    InputStep,
    KernelStep,
    PrimitiveStep,
    RandStep,
    StateStep,
    Step,
    primitive_step,
)

FORMAT = "planner.plan"
VERSION = 3  # 2: no per-step free lists (the schedule computes liveness on load); 3: products


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
        arr = np.ascontiguousarray(v).reshape(v.shape)  # numpy's makes a 0-d array 1-d
        return {"$array": {"dtype": _dtype_text(arr.dtype), "shape": list(arr.shape),
                           "data": base64.b64encode(arr.tobytes()).decode("ascii")}}
    if isinstance(v, np.generic):
        return {"$scalar": {"dtype": _dtype_text(v.dtype), "value": v.item()}}
    if hasattr(v, "__array__") and hasattr(v, "shape"):  # a device array
        return encode(np.asarray(v.get() if hasattr(v, "get") else v))
    name = type(v).__name__
    if dataclasses.is_dataclass(v) and _DATACLASSES().get(name) is type(v):
        # index placeholders and kernel IR: frozen dataclasses, field by field
        return {"$dataclass": [name, {f.name: encode(getattr(v, f.name))
                                      for f in dataclasses.fields(v)}]}
    raise TypeError(f"a plan attribute of type {type(v).__name__} has no serialized form")


def decode(v: Any, path: Path = "value", kernels: bool = True) -> Any:
    """The value ``encode`` made ``v`` from; a ValueError naming ``path`` for anything else
    (an unknown tag or class, a field of the wrong type, an array of an unknown dtype).
    Without ``kernels`` the only class it builds is IndexArg: the value is plain data."""
    return _decode(v, path, 0, kernels)


_SCALARS = frozenset({bool, int, float, str, type(None)})


def _decode(v: Any, path: Path, depth: int, kernels: bool) -> Any:
    if depth > MAX_DEPTH:
        _fail(path, f"nested deeper than {MAX_DEPTH}")
    cls = type(v)
    if cls in _SCALARS:
        return v
    if cls is list:  # scalars inline: most of a plan's nodes are
        return [x if type(x) in _SCALARS else _decode(x, (path, i), depth + 1, kernels)
                for i, x in enumerate(v)]
    if cls is not dict or len(v) != 1:
        _fail(path, f"{_show(v)} is not an encoded value")
    (tag, body), = v.items()
    where = (path, tag)
    if tag == "$tuple":
        return tuple(_decode(_list(body, where), path, depth + 1, kernels))
    if tag == "$dataclass":
        return _decode_dataclass(body, where, depth, kernels)
    if tag == "$dtype":
        if not _one_of(body, _DTYPE_NAMES):
            _fail(where, f"unknown dtype {_show(body)}")
        return D.as_dtype(body)
    if tag == "$dict":
        out = {}
        for i, pair in enumerate(_list(body, where)):
            if not isinstance(pair, list) or len(pair) != 2:
                _fail((where, i), "is not a [key, value] pair")
            key = _key(_decode(pair[0], ((where, i), 0), depth + 1, kernels))
            try:
                hash(key)
            except TypeError:
                _fail(((where, i), 0), f"{_show(key)} cannot be a key")
            out[key] = _decode(pair[1], ((where, i), 1), depth + 1, kernels)
        return out
    if tag == "$slice":
        parts = _decode(_list(body, where), where, depth + 1, kernels)
        if len(parts) != 3 or any(x is not None and type(x) is not int for x in parts):
            _fail(where, f"{_show(parts)} is not [start, stop, step] of ints or nulls")
        return slice(*parts)
    if tag == "$ellipsis":
        if body is not True:
            _fail(where, "must be true")
        return Ellipsis
    if tag == "$array":
        return _decode_array(body, where)
    if tag == "$scalar":
        if not isinstance(body, dict) or set(body) != {"dtype", "value"}:
            _fail(where, "needs exactly dtype and value")
        dtype = _array_dtype(body["dtype"], (where, "dtype"))
        value = body["value"]
        if type(value) not in (bool, int, float):
            _fail((where, "value"), f"{_show(value)} is not a number")
        try:
            with np.errstate(all="raise"):
                return dtype.type(value)
        except (OverflowError, ValueError, TypeError, FloatingPointError) as e:
            _fail((where, "value"), f"{_show(value)} is not a {dtype}: {e}")
    _fail(path, f"unknown tag {_show(tag)}")


def _decode_array(body: Any, where: Path) -> np.ndarray:
    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        _fail(where, "needs exactly dtype, shape and data")
    dtype = _array_dtype(body["dtype"], (where, "dtype"))
    shape = _shape(body["shape"], (where, "shape"))
    data = body["data"]
    if type(data) is not str or len(data) > 4 * MAX_ELEMENTS:
        _fail((where, "data"), "is not base64 text")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        _fail((where, "data"), "is not base64 text")
    if len(raw) != math.prod(shape) * dtype.itemsize:
        _fail((where, "data"), f"holds {len(raw)} bytes, not the {math.prod(shape)} "
                               f"{dtype} elements of shape {shape}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _decode_dataclass(body: Any, where: Path, depth: int, kernels: bool) -> Any:
    if not isinstance(body, list) or len(body) != 2 or not isinstance(body[1], dict):
        _fail(where, "is not [class name, fields]")
    name, fields = body
    cls = _DATACLASSES().get(name) if type(name) is str else None
    if cls is None:
        _fail(where, f"unknown class {_show(name)} in a serialized plan")
    if not kernels and name != "IndexArg":
        _fail(where, f"a {name} is kernel IR, which only a kernel step's attrs hold")
    checks = _FIELDS()[name]
    if fields.keys() != checks.keys():
        _fail(where, f"{name} needs exactly the fields {sorted(checks)}, got "
                     f"{sorted(map(str, fields))}")
    values = {}
    for k, check in checks.items():
        value = _decode(fields[k], (where, k), depth + 1, kernels)
        if not check(value):
            _fail((where, k), f"{_show(value)} is not a valid {name}.{k}")
        values[k] = value
    return cls(**values)


@functools.cache
def _DATACLASSES() -> dict[str, type]:  # noqa: N802 - a constant, built on first use
    """The only classes a serialized plan may name (never arbitrary code, unlike pickle)."""
    from codegen import ir as kir
    from runtime.ops.prims import IndexArg

    classes = [IndexArg, kir.Input, kir.Load, kir.Const, kir.Unary, kir.Binary, kir.Where,
               kir.Fma, kir.Cast, kir.Reduce, kir.Output, kir.Kernel]
    return {c.__name__: c for c in classes}


def _key(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


# --- the checks a loaded plan passes --------------------------------------------------------

MAX_ELEMENTS = 2**28  # the most elements (1 GiB of float32) a loaded plan's buffer, constant or
# kernel domain has: shape rules and the kernel checks then never allocate more per buffer
MAX_DIMS = 32  # numpy allows 64
MAX_DEPTH = 64  # nesting of encoded values
MAX_INT = 2**62  # indices, slots, strides: far past any real one, far inside int64
_DTYPE_NAMES = frozenset(d.name for d in D.DTYPES)
_ARRAY_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, "bfloat16"))
_PHASES = frozenset({"forward", "backward", "recompute", "update"})
_DEVICE = re.compile(r"cpu|cuda(:[0-9]{1,3})?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_RAND_KINDS = frozenset({"rand", "randn", "rand64"})
_RANDINT = re.compile(r"randint:(-?[0-9]{1,20}):(-?[0-9]{1,20})")


def _is_randint(kind: Any) -> bool:
    """Whether ``kind`` is an integer draw's: randperm's, or randint's ("randint:low:high",
    low < high, in int64)."""
    if kind == "randperm":
        return True
    found = _RANDINT.fullmatch(kind) if isinstance(kind, str) else None
    return found is not None and -2**63 <= int(found[1]) < int(found[2]) <= 2**63
_KERNEL_ATTRS = frozenset({"kernel", "outs", "fused", "commit", "out_specs"})


# where a value sits in the document: a name, or (parent, key or index), made into text only
# for an error message
Path = Any


def _path_text(path: Path) -> str:
    keys = []
    while isinstance(path, tuple):
        path, key = path
        keys.append(f"[{key}]" if type(key) is int else f".{key}")
    return path + "".join(reversed(keys))


def _fail(path: Path, why: str) -> NoReturn:
    raise ValueError(f"plan field {_path_text(path)}: {why}")


def _show(v: Any) -> str:
    """A short repr for a message (a hostile value may be huge)."""
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(v: Any, lo: int = 0, hi: int = MAX_INT) -> bool:
    return type(v) is int and lo <= v <= hi


def _one_of(v: Any, names: frozenset[str]) -> bool:
    return type(v) is str and v in names


def _list(v: Any, path: Path) -> list[Any]:
    if not isinstance(v, list):
        _fail(path, f"{_show(v)} is not a list")
    return v


def _shape(v: Any, path: Path) -> tuple[int, ...]:
    """A shape: at most MAX_DIMS non-negative ints, at most MAX_ELEMENTS elements."""
    if not isinstance(v, (list, tuple)) or len(v) > MAX_DIMS \
            or not all(map(_is_int, v)):
        _fail(path, f"{_show(v)} is not a shape (up to {MAX_DIMS} non-negative ints)")
    if math.prod(v) > MAX_ELEMENTS:
        _fail(path, f"shape {_show(v)} has more than {MAX_ELEMENTS} elements")
    return tuple(v)


def _dtype_text(dtype: np.dtype) -> str:
    """numpy's text of an array dtype (ml_dtypes' bfloat16, whose ``str`` is '<V2': by name)."""
    return "bfloat16" if dtype.name == "bfloat16" else dtype.str


def _array_dtype(v: Any, path: Path) -> np.dtype:
    try:
        dtype = np.dtype(v) if type(v) is str else None
    except Exception:  # numpy's dtype parser: any failure means "not one of ours"
        dtype = None
    if dtype not in _ARRAY_DTYPES:
        _fail(path, f"{_show(v)} is not an array dtype (bool, integers, floats)")
    return dtype


@functools.cache
def _FIELDS() -> dict[str, dict[str, Any]]:  # noqa: N802 - a constant, built on first use
    """Each serializable class's fields and a check of each value: a dataclass is only ever
    built from values of the types its fields declare."""
    from codegen import ir as kir

    def dtype(v: Any) -> bool:
        return type(v) is str and v in kir.STORAGE_DTYPES

    def name(v: Any) -> bool:
        return type(v) is str and _NAME.fullmatch(v) is not None

    def op(v: Any) -> bool:
        return type(v) is str and len(v) <= 64

    def ints(v: Any) -> bool:
        return type(v) is tuple and len(v) <= MAX_DIMS and all(map(_is_int, v))

    def number(v: Any) -> bool:
        return type(v) in (bool, int, float) and (type(v) is not int or abs(v) < 2**63)

    def each(cls: Any) -> Any:
        return lambda v: type(v) is tuple and all(isinstance(x, cls) for x in v)

    expr = (kir.Load, kir.Const, kir.Unary, kir.Binary, kir.Where, kir.Fma, kir.Cast,
            kir.Reduce)
    return {
        "IndexArg": {"position": _is_int},
        "Input": {"name": name, "dtype": dtype, "strides": ints},
        "Load": {"input": _is_int},
        "Const": {"value": number, "dtype": dtype},
        "Unary": {"op": op, "x": _is_int, "dtype": dtype},
        "Binary": {"op": op, "a": _is_int, "b": _is_int, "dtype": dtype},
        "Where": {"cond": _is_int, "a": _is_int, "b": _is_int, "dtype": dtype},
        "Fma": {"a": _is_int, "b": _is_int, "c": _is_int, "dtype": dtype},
        "Cast": {"x": _is_int, "dtype": dtype},
        "Reduce": {"op": op, "x": _is_int, "dtype": dtype},
        "Output": {"name": name, "value": _is_int, "dtype": dtype,
                   "accumulate": lambda v: v is None or op(v),
                   "into": lambda v: v is None or _is_int(v)},
        "Kernel": {"name": name, "domain": ints, "n_reduce": _is_int,
                   "inputs": each(kir.Input), "exprs": each(expr),
                   "outputs": each(kir.Output)},
    }


def _step_attrs(step: Step) -> dict[str, Any]:
    """A step's typed fields beyond the common ones, as the document's ``attrs``."""
    if isinstance(step, KernelStep):
        return {"kernel": step.kernel, "outs": list(step.outs), "fused": step.fused,
                "commit": step.commit if isinstance(step, CommitStep) else None,
                "out_specs": list(step.out_specs)}
    if isinstance(step, PrimitiveStep):
        return step.attrs
    return step.shown()


def dumps(plan: Any) -> str:
    """The plan's data as JSON text (its schedule is computed again when it is loaded)."""
    graph = nx.node_link_data(plan.graph, edges="links")
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "device": plan.device,
        "steps": [{"out": s.out, "op": s.op, "args": encode(s.args),
                   "attrs": encode(_step_attrs(s)), "shape": list(s.shape),
                   "dtype": s.dtype.name, "device": s.device, "phase": s.phase}
                  for s in plan.steps],
        "inputs": encode(plan.inputs),
        "reads": encode(plan.reads),
        "consts": [[k, encode(a)] for k, a in plan.consts.items()],
        "rands": [[k, encode(r)] for k, r in plan.rands.items()],
        "writes": encode(plan.writes),
        "returns": encode(plan.returns),
        "slots": encode(plan.slots),
        "stats": encode(plan.stats),
        "graph": encode(graph),
        "products": plan.products,
    }
    return json.dumps(doc)


_DOC_KEYS = frozenset({"format", "version", "device", "steps", "inputs", "reads", "consts",
                       "rands", "writes", "returns", "slots", "stats", "graph", "products"})
_STEP_KEYS = frozenset({"out", "op", "args", "attrs", "shape", "dtype", "device", "phase"})


def loads(text: str) -> dict[str, Any]:
    """The fields of the Plan ``dumps`` wrote (``Plan(**loads(text))`` builds it). Every field
    is checked (types, ranges, buffers that exist when read, shapes and dtypes by the
    registry's shape rules, kernel IR by ``codegen.ir.validate`` and against the buffers it
    addresses): a bad plan is a ValueError naming the field, and a loaded plan is data its
    program can only bind."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError, RecursionError) as e:
        raise ValueError(f"not a serialized planner Plan: {type(e).__name__}: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a serialized planner Plan")
    if doc.get("version") != VERSION:
        raise ValueError(f"serialized plan version {_show(doc.get('version'))} is not {VERSION}")
    if set(doc) != _DOC_KEYS:
        raise ValueError(f"plan fields {sorted(map(str, doc))} are not {sorted(_DOC_KEYS)}")
    try:
        return _Loader(doc).plan()
    except RecursionError:
        raise ValueError("plan: nested too deeply") from None


@dataclass
class _Raw:
    """A step of the document, its fields decoded and checked one by one."""

    out: int
    op: str
    args: list[tuple[str, Any]]
    attrs: dict[str, Any]
    common: dict[str, Any]  # the fields every Step has but out and args


class _Loader:
    """Decodes and checks a plan document, field by field, in the order the fields depend
    on each other: steps (and the buffers they define), then what refers to them."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.metas: dict[int, tuple[tuple[int, ...], D.DType, str]] = {}  # shape, dtype, device
        self.kernel_names: set[str] = set()
        self.defined: set[Any] = set()  # what some step claims to write (checked in order)

    def plan(self) -> dict[str, Any]:
        doc = self.doc
        device = doc["device"]
        if type(device) is not str or not _DEVICE.fullmatch(device):
            _fail("device", f"{_show(device)} is not a device")
        slots = decode(doc["slots"], "slots", kernels=False)
        for i, slot in enumerate(_list(slots, "slots")):
            if type(slot) is not dict or not all(type(k) is str for k in slot):
                _fail(f"slots[{i}]", "is not a dict with string keys")
        stats = decode(doc["stats"], "stats", kernels=False)
        if type(stats) is not dict or not all(type(k) is str for k in stats):
            _fail("stats", "is not a dict with string keys")
        raws = [self.step(raw, f"steps[{i}]")
                for i, raw in enumerate(_list(doc["steps"], "steps"))]
        by_op: dict[str, list[_Raw]] = {}
        for i, st in enumerate(raws):
            by_op.setdefault(st.op, []).append(st)
            if st.op in ("input", "state", "const"):  # bound before the first step runs
                self.metas_define(st.out, st.common["shape"], st.common["dtype"],
                                  st.common["device"], f"steps[{i}].out")
        inputs = dict((b, k) for k, b in self.pairs("inputs", by_op.get("input", []),
                                                    "argument index", None))
        reads = dict((b, k) for k, b in self.pairs("reads", by_op.get("state", []), "slot",
                                                   len(slots)))
        consts = self.consts(by_op.get("const", []))
        rands = self.rands(by_op.get("rand", []))
        live = {st.out for st in raws if st.op in ("input", "state", "const")}
        for st in raws:
            outs = st.attrs.get("outs") if st.op == "kernel" else [st.out]
            if isinstance(outs, list):
                self.defined.update(v for v in outs if _is_int(v))
        steps = []
        for i, st in enumerate(raws):
            steps.append(self.check_step(st, f"steps[{i}]", live, inputs, reads, consts, rands))
        writes = []
        for i, pair in enumerate(_list(decode(doc["writes"], "writes", kernels=False),
                                       "writes")):
            slot, buf = self.pair(pair, f"writes[{i}]")
            if not _is_int(slot, 0, len(slots) - 1):
                _fail(f"writes[{i}][0]", f"slot {_show(slot)} is not one of {len(slots)} slots")
            if not (type(buf) is int and buf == -1):  # -1: the slot is written None
                self.live_buffer(buf, live, f"writes[{i}][1]")
            writes.append((slot, buf))
        returns = decode(doc["returns"], "returns", kernels=False)
        self.template(returns, "returns", live, 0)
        graph = self.graph(decode(doc["graph"], "graph", kernels=False))
        products = doc["products"]
        if type(products) is not bool:
            _fail("products", f"{_show(products)} is not true or false")
        return {"steps": steps, "writes": writes, "returns": returns, "slots": slots,
                "graph": graph, "stats": stats, "device": device, "products": products}

    # --- steps ------------------------------------------------------------------------------
    def step(self, raw: Any, path: str) -> _Raw:
        if type(raw) is not dict or set(raw) != _STEP_KEYS:
            _fail(path, f"needs exactly the fields {sorted(_STEP_KEYS)}")
        out, op = raw["out"], raw["op"]
        if not _is_int(out):
            _fail(f"{path}.out", f"{_show(out)} is not a buffer id")
        if type(op) is not str or not (op in REGISTRY or op in SOURCE_KINDS or op == "kernel"):
            _fail(f"{path}.op", f"{_show(op)} is not a registered primitive, a source or a "
                                "kernel")
        args = decode(raw["args"], f"{path}.args", kernels=False)
        for j, arg in enumerate(_list(args, f"{path}.args")):
            kind, value = self.pair(arg, f"{path}.args[{j}]")
            if kind == "buf":
                if not _is_int(value):
                    _fail(f"{path}.args[{j}]", f"{_show(value)} is not a buffer id")
            elif kind != "scalar" or not (type(value) in (bool, int, float)
                                          or isinstance(value, np.generic)):
                _fail(f"{path}.args[{j}]", f"{_show(arg)} is not (\"buf\", id) or "
                                           "(\"scalar\", number)")
        attrs = decode(raw["attrs"], f"{path}.attrs", kernels=op == "kernel")
        if type(attrs) is not dict or not all(type(k) is str for k in attrs):
            _fail(f"{path}.attrs", "is not a dict with string keys")
        shape = _shape(raw["shape"], f"{path}.shape")
        if not _one_of(raw["dtype"], _DTYPE_NAMES):
            _fail(f"{path}.dtype", f"{_show(raw['dtype'])} is not one of {sorted(_DTYPE_NAMES)}")
        device, phase = raw["device"], raw["phase"]
        if type(device) is not str or not _DEVICE.fullmatch(device):
            _fail(f"{path}.device", f"{_show(device)} is not a device")
        if not _one_of(phase, _PHASES):
            _fail(f"{path}.phase", f"{_show(phase)} is not one of {sorted(_PHASES)}")
        return _Raw(out, op, [tuple(a) for a in args], attrs,
                    {"shape": shape, "dtype": D.as_dtype(raw["dtype"]), "device": device,
                     "phase": phase})

    def check_step(self, st: _Raw, path: str, live: set[int], inputs: dict[int, int],
                   reads: dict[int, int], consts: dict[int, np.ndarray],
                   rands: dict[int, Any]) -> Step:
        """A step against the buffers live before it: arguments exist, and its outputs'
        shapes and dtypes are what its primitive (or kernel) makes of them."""
        for j, (kind, v) in enumerate(st.args):
            if kind == "buf":
                self.live_buffer(v, live, f"{path}.args[{j}]")
        if st.op in SOURCE_KINDS:
            step: Step = self.check_source(st, path, inputs, reads, consts, rands)
        elif st.op == "kernel":
            step = self.check_kernel(st, path)
        else:
            step = self.check_primitive(st, path)
        live.update(step.outputs)
        return step

    def check_source(self, st: _Raw, path: str, inputs: dict[int, int], reads: dict[int, int],
                     consts: dict[int, np.ndarray], rands: dict[int, Any]) -> Step:
        if st.args:
            _fail(f"{path}.args", f"a {st.op} step takes no arguments")
        want = {} if st.op != "rand" else dict(zip(("kind", "generator"), rands[st.out]))
        if st.attrs != want:
            _fail(f"{path}.attrs", f"{_show(st.attrs)} is not {_show(want)}")
        fields = {"out": st.out, "args": [], **st.common}
        if st.op == "input":
            return InputStep(index=inputs[st.out], **fields)
        if st.op == "state":
            return StateStep(slot=reads[st.out], **fields)
        if st.op == "const":
            return ConstStep(value=consts[st.out], **fields)
        if not (st.common["dtype"].is_floating_point or _is_randint(want["kind"])
                and st.common["dtype"] is not D.bool_):
            _fail(f"{path}.dtype", "a random draw is float32 or float64, not "
                                   f"{st.common['dtype'].name}")
        self.define(st, path)
        return RandStep(kind=want["kind"], generator=want["generator"], **fields)

    def check_primitive(self, st: _Raw, path: str) -> Step:
        """A registry step: attributes the primitive names, of plain types, and the shape
        and dtype its shape rule gives for the arguments' planned metas."""
        prim = REGISTRY[st.op]
        for k, v in st.attrs.items():
            if k not in prim.attrs:
                _fail(f"{path}.attrs", f"{st.op} takes no attribute {_show(k)} "
                                       f"(it takes {list(prim.attrs)})")
        metas = [Meta(*self.metas[v]) if kind == "buf" else v for kind, v in st.args]
        try:
            shape, dtype = prim.infer(*metas, **st.attrs)
            # a rule may pass an attribute through unchecked (cast's dtype): typed here
            shape, dtype = tuple(shape), D.as_dtype(dtype)
        except Exception as e:  # a shape rule rejects what it cannot type, in its own words
            _fail(path, f"{st.op} rejects its arguments and attributes: {type(e).__name__}: "
                        f"{_show(str(e))}")
        want_shape, want_dtype = st.common["shape"], st.common["dtype"]
        if shape != want_shape or dtype is not want_dtype:
            _fail(path, f"{st.op} makes shape {shape} {dtype.name} of its "
                        f"arguments, the step says {want_shape} {want_dtype.name}")
        self.define(st, path)
        return primitive_step(st.op, out=st.out, args=st.args, attrs=st.attrs, **st.common)

    def check_kernel(self, st: _Raw, path: str) -> Step:
        """A kernel step: valid IR (``kir.validate``), one buffer argument per kernel input of
        its dtype, outputs and out_specs as the IR makes them, a commit index that is the
        kernel's one in-place output, and arrays of the planned shapes that hold every
        element the kernel addresses (``jit.check_signature``)."""
        from codegen import ir as kir
        from codegen.jit import check_signature

        attrs, where = st.attrs, f"{path}.attrs"
        if set(attrs) != _KERNEL_ATTRS:
            _fail(where, f"a kernel step has exactly the attributes {sorted(_KERNEL_ATTRS)}")
        k = attrs["kernel"]
        if not isinstance(k, kir.Kernel):
            _fail(f"{where}.kernel", f"{_show(k)} is not a Kernel")
        try:
            kir.validate(k)
        except kir.KernelIRError as e:
            _fail(f"{where}.kernel", str(e))
        if math.prod(k.domain) > MAX_ELEMENTS:
            _fail(f"{where}.kernel.domain", f"more than {MAX_ELEMENTS} elements")
        if k.name in self.kernel_names:
            _fail(f"{where}.kernel.name", f"a second kernel named {k.name!r}")
        self.kernel_names.add(k.name)
        if len(st.args) != len(k.inputs) or any(kind != "buf" for kind, _ in st.args):
            _fail(f"{path}.args", f"kernel {k.name!r} takes {len(k.inputs)} buffers")
        ins = [self.metas[v] for _, v in st.args]
        for j, ((_, dtype, _), inp) in enumerate(zip(ins, k.inputs)):
            if dtype.name != inp.dtype:
                _fail(f"{path}.args[{j}]", f"a {dtype.name} buffer for kernel input {inp.name} "
                                           f"of dtype {inp.dtype}")
        outs, specs, fused = attrs["outs"], attrs["out_specs"], attrs["fused"]
        if not isinstance(outs, list) or not outs or len(outs) != len(k.outputs) \
                or not all(map(_is_int, outs)) or len(set(outs)) != len(outs):
            _fail(f"{where}.outs", f"{_show(outs)} is not the kernel's {len(k.outputs)} "
                                   "outputs' distinct buffer ids")
        if st.out != outs[0]:
            _fail(f"{path}.out", f"{st.out} is not the kernel's first output {outs[0]}")
        if not _is_int(fused):
            _fail(f"{where}.fused", f"{_show(fused)} is not a step count")
        if not isinstance(specs, list) or len(specs) != len(k.outputs):
            _fail(f"{where}.out_specs", "needs one (shape, dtype, plan shape) per output")
        out_metas = []
        for j, (spec, out) in enumerate(zip(specs, k.outputs)):
            at = f"{where}.out_specs[{j}]"
            if type(spec) is not tuple or len(spec) != 3:
                _fail(at, f"{_show(spec)} is not (shape, dtype, plan shape)")
            shape, plan_shape = _shape(spec[0], f"{at}[0]"), _shape(spec[2], f"{at}[2]")
            if shape != kir.output_shape(k, out) or spec[1] != out.dtype:
                _fail(at, f"kernel output {out.name} is {kir.output_shape(k, out)} {out.dtype},"
                          f" not {shape} {_show(spec[1])}")
            if math.prod(plan_shape) != math.prod(shape):
                _fail(f"{at}[2]", f"plan shape {plan_shape} does not hold the {shape} output")
            out_metas.append((plan_shape, D.as_dtype(out.dtype)))
        commit = attrs["commit"]
        into = [j for j, out in enumerate(k.outputs) if out.into is not None]
        if commit is None and into:
            _fail(f"{where}.kernel.outputs[{into[0]}].into", "an in-place output needs a commit")
        intos = [out.into for out in k.outputs]
        if commit is not None and (not _is_int(commit, 0, len(st.args) - 1)
                                   or not k.outputs or intos[0] != commit
                                   or len(into) != len(intos) or len(set(intos)) != len(intos)):
            _fail(f"{where}.commit", f"{_show(commit)} is not the argument index the kernel's "
                                     "first output is written into, each output into its own")
        signature = [(shape, dtype.np) for shape, dtype, _ in ins]
        signature += [signature[i] for i in intos] if commit is not None else \
            [(shape, dtype.np) for shape, dtype in out_metas]
        try:
            check_signature(k, signature)
        except ValueError as e:
            _fail(path, str(e))
        for v, (shape, dtype) in zip(outs, out_metas):
            self.metas_define(v, shape, dtype, st.common["device"], f"{where}.outs")
        fields = {"out": st.out, "args": st.args, "kernel": k, "outs": outs, "fused": fused,
                  "out_specs": specs, **st.common}
        return KernelStep(**fields) if commit is None else CommitStep(commit=commit, **fields)

    # --- buffers ----------------------------------------------------------------------------
    def define(self, st: _Raw, path: str) -> None:
        self.metas_define(st.out, st.common["shape"], st.common["dtype"], st.common["device"],
                          path)

    def metas_define(self, v: int, shape: tuple[int, ...], dtype: D.DType, device: str,
                     path: str) -> None:
        if v in self.metas:
            _fail(path, f"buffer {v} is written twice")
        self.metas[v] = (shape, dtype, device)

    def live_buffer(self, v: Any, live: set[int], path: str) -> None:
        if not _is_int(v) or (v not in self.metas and v not in self.defined):
            _fail(path, f"buffer {_show(v)} does not exist")
        if v not in live:
            _fail(path, f"buffer {v} is read before it is computed or after it is freed")

    def pair(self, v: Any, path: str) -> tuple[Any, Any]:
        if type(v) is not tuple or len(v) != 2:
            _fail(path, f"{_show(v)} is not a pair")
        return v

    def pairs(self, field: str, steps: list[Any], what: str,
              bound: int | None) -> list[tuple[int, int]]:
        """inputs or reads: (argument index or slot, buffer), one per input/state step."""
        found = []
        doc = decode(self.doc[field], field, kernels=False)
        for i, pair in enumerate(_list(doc, field)):
            key, buf = self.pair(pair, f"{field}[{i}]")
            if not _is_int(key, 0, MAX_INT if bound is None else bound - 1):
                _fail(f"{field}[{i}][0]", f"{_show(key)} is not a valid {what}")
            found.append((key, buf))
        bufs = [b for _, b in found]
        want = [st.out for st in steps]
        if sorted(bufs, key=repr) != sorted(want, key=repr) or len(set(bufs)) != len(bufs):
            _fail(field, f"buffers {_show(bufs)} are not those of the {len(want)} "
                         f"{steps[0].op if steps else 'source'} steps")
        return found

    def consts(self, steps: list[Any]) -> dict[int, np.ndarray]:
        found = {}
        for i, pair in enumerate(_list(self.doc["consts"], "consts")):
            if not isinstance(pair, list) or len(pair) != 2 or not _is_int(pair[0]):
                _fail(f"consts[{i}]", "is not a [buffer, array] pair")
            found[pair[0]] = decode(pair[1], f"consts[{i}][1]", kernels=False)
        by_out = {st.out: st for st in steps}
        if set(found) != set(by_out) or len(found) != len(self.doc["consts"]):
            _fail("consts", f"buffers {_show(list(found))} are not those of the const steps")
        for v, value in found.items():
            st = by_out[v]
            shape, dtype = st.common["shape"], st.common["dtype"]
            if type(value) is not np.ndarray or value.shape != shape or value.dtype != dtype.np:
                _fail(f"consts[{v}]", f"is not a {dtype.name} array of shape {shape}")
        return found

    def rands(self, steps: list[Any]) -> dict[int, tuple[str, int]]:
        found = {}
        for i, pair in enumerate(_list(self.doc["rands"], "rands")):
            if not isinstance(pair, list) or len(pair) != 2 or not _is_int(pair[0]):
                _fail(f"rands[{i}]", "is not a [buffer, (kind, generator)] pair")
            where = f"rands[{i}][1]"
            kind, gen = self.pair(decode(pair[1], where, kernels=False), where)
            if not (_one_of(kind, _RAND_KINDS) or _is_randint(kind)) \
                    or not _is_int(gen, 0, 2**16):
                _fail(f"rands[{i}][1]", f"({_show(kind)}, {_show(gen)}) is not (rand, randn or rand64, "
                                        "generator index)")
            found[pair[0]] = (kind, gen)
        if set(found) != {st.out for st in steps} or len(found) != len(self.doc["rands"]):
            _fail("rands", f"buffers {_show(list(found))} are not those of the rand steps")
        return found

    def template(self, t: Any, path: str, live: set[int], depth: int) -> None:
        """A return template: ("node", buffer) | ("tuple"|"list", [...]) |
        ("dict", [(key, template), ...]) | ("item"|"copy", ("node", buffer)) | ("py", None,
        bool, int, float, str or a numpy scalar)."""
        if depth > MAX_DEPTH:
            _fail(path, f"nested deeper than {MAX_DEPTH}")
        kind, body = self.pair(t, path)
        if kind == "node":
            self.live_buffer(body, live, f"{path}[1]")
        elif kind in ("item", "copy"):  # Tensor.item() of a returned buffer, or its copy
            if self.pair(body, f"{path}[1]")[0] != "node":
                _fail(f"{path}[1]", f"{_show(body)} is not a buffer template")
            self.template(body, f"{path}[1]", live, depth + 1)
        elif kind in ("tuple", "list"):
            for i, x in enumerate(_list(body, f"{path}[1]")):
                self.template(x, f"{path}[1][{i}]", live, depth + 1)
        elif kind == "dict":
            for i, item in enumerate(_list(body, f"{path}[1]")):
                key, x = self.pair(item, f"{path}[1][{i}]")
                try:
                    hash(key)
                except TypeError:
                    _fail(f"{path}[1][{i}][0]", f"{_show(key)} cannot be a key")
                self.template(x, f"{path}[1][{i}][1]", live, depth + 1)
        elif kind != "py" or not (body is None or type(body) in (bool, int, float, str)
                                  or isinstance(body, np.generic)):
            _fail(path, f"{_show(t)} is not a return template")

    def graph(self, data: Any) -> nx.DiGraph:
        """The captured graph (for inspection only: nothing runs from it)."""
        if type(data) is not dict:
            _fail("graph", "is not node-link data")
        try:
            graph = nx.node_link_graph(data, directed=True, multigraph=False, edges="links")
        except (KeyError, TypeError, ValueError, AttributeError, nx.NetworkXError) as e:
            _fail("graph", f"is not node-link data: {type(e).__name__}: {_show(str(e))}")
        if type(graph.graph) is not dict:
            _fail("graph.graph", "is not a dict")
        outputs = graph.graph.get("outputs", [])
        if not isinstance(outputs, list) or not all(_is_int(v) for v in outputs):
            _fail("graph.graph.outputs", f"{_show(outputs)} is not a list of buffer ids")
        if not all(_is_int(v) for v in graph.nodes):
            _fail("graph.nodes", "node ids are buffer ids")
        return graph
