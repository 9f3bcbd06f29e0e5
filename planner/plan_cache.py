"""Plans kept across processes: a step captured in a new process (a training script run
again) finds the plan its capture led to last time, and skips the graph passes, fusion and
scheduling (most of a warm first call: two thirds of gpt's).

The key is the sha256 of what planning reads: every node of the capture (op, arguments,
attributes, shape, dtype, device, phase, the autograd function that made it; a constant by its
bytes; not the autograd sequence numbers, which count up through a process and which planning
never reads), the graph's outputs, writes and returns, the slots' descriptions, the plan's
device and backend, each primitive the capture uses as registered now (its functions by name
and line, its flags), the graph passes', fusion's, rematerialization's and the cost model's
settings (planner.cost's and planner.steps', from which the kept schedule was computed; every
upper-case name of theirs, a set or table too; fusion's as "as its source sets them" while
they are, so that a key needs not import it), the host, the versions of Python, numpy,
networkx and llvmlite, and the sources of the packages that plan (runtime, planner, codegen;
by size and modification time, as Python's bytecode cache checks them): a change to any of
them is a miss. The capture is written out by a pickler that refuses every object but plain
data, arrays, dtypes, devices, index placeholders and this project's or numpy's classes, so a
key is exact: a capture holding anything else (a function of the user's in an attribute, a
primitive registered outside the project) is planned as before and not kept. The pickle is
of each node's keyed values (no dict copied) into the sha256 directly; a primitive's and the
settings' descriptions are kept while what they describe is the same object, unchanged.

An entry is the pickled plan (its data and its schedule: ``Plan.kept_state``; the executable
stays behind) in the compiled-code cache's PLANS_DIR store (codegen.cache: a private
directory, each entry signed with the cache's secret, an altered or foreign one rejected with
a warning). It is unpickled by ``_PlanUnpickler``, which builds nothing but the classes a plan
is made of (steps, kernel IR, dtypes, numpy arrays, the networkx graph), so even a forged
entry could not name a function to call. A JSON plan (``Plan.loads``, every field checked) was
the other choice: 10x slower to load (gpt: 0.35 s against 0.03), most of what it would save.
Only CPU plans are kept, and not those of DistributedDataParallel steps, whose plans also
check that every rank agrees.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import hashlib
import importlib.util
import io
import operator
import os
import pickle
import platform
import sys
import types
from collections.abc import Callable
from typing import Any

import networkx as nx
import numpy as np

from runtime._device import device as Device
from runtime._dtype import DType, as_dtype
from runtime.ops.prims import IndexArg
from runtime.ops.shapes import Size
from runtime.ops.registry import REGISTRY

from .plan import Plan

FORMAT = "planner.plan-cache.2"
PROTOCOL = 5
# node fields planning never reads that differ from one process (or capture) to the next
_UNKEYED = frozenset({"sequence_nr", "topological_nr"})
_PACKAGES = ("runtime", "planner", "codegen")
_OURS = frozenset(_PACKAGES)
_KEYED_PACKAGES = _OURS | {"numpy", "builtins"}
_DATA = (np.ndarray, np.generic, np.dtype, DType, Device, IndexArg, Size, slice,
         type(Ellipsis))
_FUNCTIONS = (type, types.FunctionType, types.BuiltinFunctionType)


class _Unkeyed(Exception):
    """A value the key cannot describe exactly: the capture is planned and not kept."""


class _KeyPickler(pickle.Pickler):
    """Pickles plain data (which the C pickler writes itself), the data types a capture holds,
    and classes and functions of this project and numpy (by name: their code is in the key's
    sources); raises _Unkeyed for anything else."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _FUNCTIONS):
            if getattr(obj, "__module__", "").partition(".")[0] in _KEYED_PACKAGES:
                return NotImplemented
            raise _Unkeyed(f"{obj!r}")
        if isinstance(obj, _DATA):
            return NotImplemented
        raise _Unkeyed(f"a {type(obj).__name__}")


def _function_id(fn: Any) -> Any:
    if fn is None or isinstance(fn, np.ufunc):
        return None if fn is None else ("ufunc", fn.__name__)
    code = getattr(fn, "__code__", None)
    module = getattr(fn, "__module__", None) or ""
    if code is None or module.partition(".")[0] not in _OURS:
        raise _Unkeyed(f"primitive function {fn!r}")
    return (module, fn.__qualname__, code.co_firstlineno)


@functools.cache
def _fields_of(cls: type) -> tuple[Callable[[Any], tuple[Any, ...]], tuple[str, ...]]:
    """A getter of every field of dataclass ``cls`` (one C call), and their names."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    return operator.attrgetter(*names), names


# op -> (the primitive described, its fields' values, the functions among them and their
# code, the tables among them and their items as _typed copies them, the description)
_PRIMITIVES: dict[str, tuple[Any, ...]] = {}
_CODE = operator.attrgetter("__code__")


def _primitive_id(name: str) -> Any:
    """Primitive ``name`` as registered now (the sha256 of its description: its functions by
    module, name and line, its other fields by value). Described again where the registry holds another primitive, a
    field another object (compared by identity), a function another code or a table other
    items; else as last time (describing gpt's 32 ops took 0.6 ms each key)."""
    prim = REGISTRY.get(name)
    if prim is None:
        return None
    values = _fields_of(type(prim))[0](prim)
    seen = _PRIMITIVES.get(name)
    if (seen is not None and seen[0] is prim and all(map(operator.is_, values, seen[1]))
            and all(map(operator.is_, map(_CODE, seen[2]), seen[3]))
            and list(map(_typed, seen[4])) == seen[5]):
        return seen[6]
    found = _digest(_describe_primitive(prim, values))
    functions = [v for v in values if hasattr(v, "__code__")]
    tables = [v for v in values if type(v) is dict]
    _PRIMITIVES[name] = (prim, values, functions, list(map(_CODE, functions)), tables,
                         list(map(_typed, tables)), found)
    return found


def _describe_primitive(prim: Any, values: tuple[Any, ...]) -> Any:
    found = [_fields_of(type(prim))[1]]
    for v in values:
        if callable(v) and not isinstance(v, type):
            v = _function_id(v)
        elif isinstance(v, frozenset):
            v = sorted(v)
        found.append(v)
    return found


@functools.cache
def _sources_digest() -> str:
    """sha256 of the path, size and modification time of every Python source of the packages
    that capture and plan a step (what Python's bytecode cache checks a source by): an edited
    source is a miss, and a process pays a stat per file, not a read."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()

    def digest(folder: str, where: str) -> None:
        # each folder's sources by name, then its subfolders by name (os.walk's order, its
        # joins and stats through paths a third slower)
        with os.scandir(folder) as found:
            entries = sorted(found, key=lambda e: e.name)
        subfolders = []
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                subfolders.append(e)
            elif e.name.endswith(".py"):
                st = e.stat()
                h.update(f"{where}/{e.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        for e in subfolders:
            digest(e.path, f"{where}/{e.name}")

    for package in _PACKAGES:
        digest(os.path.join(root, package), package)
    return h.hexdigest()


_PLAIN = (int, float, bool, str, type(None))


def _setting(value: Any) -> Any:
    """A module setting's value as plain data, in one order whatever the hash seed (a set's
    members sorted, a table's items); a module, class or function of ours by name, the op
    registry as itself (each op the capture uses is keyed as registered now). Raises _Unkeyed
    for anything else."""
    t = type(value)
    if t in _PLAIN:
        return value
    if value is REGISTRY:
        return "registry"
    if t is tuple or t is list:
        return (t.__name__, [_setting(v) for v in value])
    if t is frozenset or t is set:
        return (t.__name__, sorted((_setting(v) for v in value), key=repr))
    if t is dict:
        return ("dict", sorted(([_setting(k), _setting(v)] for k, v in value.items()), key=repr))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if isinstance(value, type):
        return ("class", value.__module__, value.__qualname__)
    if callable(value):
        return ("function", _function_id(value))
    raise _Unkeyed(f"a setting {value!r}")


def _environment() -> list[Any]:
    import llvmlite

    from codegen.target import host

    cpu, features = host()
    return [FORMAT, _sources_digest(), sys.version, platform.machine(), np.__version__,
            nx.__version__, llvmlite.__version__, cpu, features, _settings()]


# the modules whose settings planning reads (the cost model's too: a kept plan holds the
# schedule computed from them, and the communication steps' cost); fusion is imported only
# where a step is planned (a warm first call never imports it: 3 to 5 ms), so its settings
# are keyed as AS_IMPORTED while they are what its source sets, and a key needs not import it
_SETTINGS_MODULES = ("planner.passes", "planner.fusion", "planner.remat", "planner.cost",
                     "planner.steps")
_LAZY = frozenset({"planner.fusion"})
AS_IMPORTED = "as its source sets them"
# the settings last described: (their values as _typed gives them, their description), read
# and replaced as one (a key may be computed on another thread)
_SEEN: list[tuple[Any, Any]] = [(None, None)]


def _settings() -> bytes:
    """The settings of _SETTINGS_MODULES (the graph passes', fusion's, rematerialization's and
    the cost model's) as they are now (a test or a user may have changed one): every upper-case
    name, a set or a table as much as a number (fusion.LONE_KERNELS, passes.UNMERGEABLE,
    passes.DEFAULT_PASSES). Described again only
    where one differs from the values last described (a table changed in place too), which
    costs a comparison, not the sorting of each set and the naming of each function."""
    from . import cost, passes, remat, steps  # noqa: F401  (planner.compile imports them)

    modules = [m for m in map(sys.modules.get, _SETTINGS_MODULES) if m is not None]
    named = [(module.__name__, name, value) for module in modules
             for name, value in vars(module).items() if name.isupper()]
    typed = [(module, name, _typed(value)) for module, name, value in named]
    seen = _SEEN[0]
    if typed == seen[0]:
        return seen[1]
    settings = []
    for module in _SETTINGS_MODULES:
        described = sorted((name, _setting(value)) for m, name, value in named if m == module)
        if module in _LAZY and (module not in sys.modules
                                or _typed(described) == _as_imported(module)):
            described = AS_IMPORTED  # the same key whether the module is imported or not
        settings.append((module, described))
    digest = _digest(settings)
    _SEEN[0] = (typed, digest)
    return digest


@functools.cache
def _as_imported(module: str) -> Any:
    """The description (as _typed gives it) of the settings ``module``'s source sets: its code run again in
    a namespace of its own (a settings module's code imports, defines and assigns; it
    registers nothing), once a process, by a process that imported the module (one that
    planned a step)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.loader is None:
        raise _Unkeyed(f"no source of {module}")
    fresh = types.ModuleType(module)
    fresh.__dict__.update(__file__=spec.origin, __package__=spec.parent, __spec__=spec)
    exec(spec.loader.get_code(module), fresh.__dict__)  # type: ignore[attr-defined]
    return _typed(sorted((name, _setting(value)) for name, value in vars(fresh).items()
                         if name.isupper()))


def _digest(described: Any) -> bytes:
    """The sha256 of plain data ``described`` as the key's pickler writes it: a description
    kept between keys enters each key as its 32 bytes, not pickled again (the ops' were most
    of a key's pickle)."""
    out = _Digest()
    _KeyPickler(out, protocol=PROTOCOL).dump(described)
    return out.sha.digest()


def _typed(value: Any) -> Any:
    """``value`` as a copy to compare a later value with: each member beside its type (1, 1.0
    and True are equal, their descriptions are not), a list, set or table copied (one changed
    in place differs from its copy)."""
    t = type(value)
    if value is REGISTRY:  # keyed op by op
        return t
    if t is tuple or t is list:
        return t, tuple(map(_typed, value))
    if t is frozenset or t is set:
        return t, frozenset(map(_typed, value))
    if t is dict:
        return t, tuple((_typed(k), _typed(v)) for k, v in value.items())
    return t, value


class _Digest:
    """The file the key's pickler writes to: a sha256 of what it is given (no copy of the
    pickle is kept)."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.write = self.sha.update


# a node's field names as the capture wrote them (Tracer._add: one order, a few extras) ->
# the keyed ones and a getter of their values (one C call a node, no dict copied)
_LAYOUTS: dict[tuple[str, ...], tuple[tuple[str, ...], Callable[[Any], Any]]] = {}


def _layout(names: tuple[str, ...]) -> tuple[tuple[str, ...], Callable[[Any], Any]]:
    keyed = tuple(k for k in names if k not in _UNKEYED)
    getter: Callable[[Any], Any] = (operator.itemgetter(*keyed) if len(keyed) > 1 else
                                    lambda data: tuple(data[k] for k in keyed))
    found = _LAYOUTS[names] = (keyed, getter)
    return found


def _nodes(graph: nx.DiGraph) -> tuple[list[Any], list[str]]:
    """Each node of ``graph`` as (id, its keyed field names, their values), in the graph's
    order, and the ops the nodes use, sorted. The names are one tuple object a layout, which
    the pickler writes once and refers to after."""
    layouts = _LAYOUTS
    rows = []
    ops = set()
    # networkx's own dict of nodes, as the capture fills it (graph.nodes(data=True)'s view
    # costs a call a node)
    for v, data in graph._node.items():
        names = tuple(data)
        keyed, getter = layouts.get(names) or _layout(names)
        rows.append((v, keyed, getter(data)))
        ops.add(data["op"])
    return rows, sorted(ops)


def key(graph: nx.DiGraph, slots: list[dict[str, Any]], device: str,
        backend: str) -> str | None:
    """The key of the plan of capture ``graph`` (before any pass) with ``slots`` described, or
    None where it is not kept (a GPU plan, a value the key cannot describe)."""
    if device != "cpu":
        return None
    out = _Digest()
    try:
        nodes, ops = _nodes(graph)
        # no edges: a capture's edges are its nodes' ("node", u) arguments (Tracer._add),
        # which the nodes hold (listing gpt's 2050 edges took a third of its key)
        _KeyPickler(out, protocol=PROTOCOL).dump(
            (_environment(), device, backend, [(op, _primitive_id(op)) for op in ops],
             dict(graph.graph), nodes, slots))
    except (_Unkeyed, pickle.PicklingError, TypeError, AttributeError):
        return None
    return out.sha.hexdigest()


@functools.cache
def _allowed() -> dict[tuple[str, str], Any]:
    """The only globals a kept plan may name: the classes a plan is made of."""
    from codegen import ir as kir

    from . import parallel, steps

    classes: list[Any] = [Plan, parallel.Execution, DType, as_dtype, Device, IndexArg, Size,
                          nx.DiGraph, np.ndarray, np.dtype, slice, set, frozenset, complex]
    classes += [c for c in vars(steps).values()
                if isinstance(c, type) and c.__module__ == steps.__name__
                and dataclasses.is_dataclass(c)]
    classes += [c for c in vars(kir).values()
                if isinstance(c, type) and c.__module__ == kir.__name__
                and dataclasses.is_dataclass(c)]
    classes += [c for c in vars(np.dtypes).values() if isinstance(c, type)
                and issubclass(c, np.dtype)]
    classes += [c for c in np.sctypeDict.values()]
    from networkx.classes import coreviews, reportviews

    classes += [c for m in (coreviews, reportviews) for c in vars(m).values()
                if isinstance(c, type) and c.__module__ == m.__name__]
    # numpy's reconstructors of an array (strided, contiguous under protocol 5) and a scalar
    classes += [np.zeros((2, 2))[:, :1].__reduce_ex__(PROTOCOL)[0],
                np.zeros(2).__reduce_ex__(PROTOCOL)[0], np.float32(0).__reduce__()[0]]
    allowed = {(c.__module__, c.__qualname__): c for c in classes}
    allowed[("builtins", "Ellipsis")] = Ellipsis
    return allowed


class _PlanUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _allowed().get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"a kept plan may not name {module}.{name}")
        return found


class _PlanPickler(pickle.Pickler):
    """A plan's pickler: the plan with its schedule (loaded, not computed again: gpt's 11 ms
    of a warm first call); a numpy dtype of one scalar type by its name, so that it is
    unpickled as numpy's own object of that name (the program compares dtypes with ``is``;
    numpy's own pickling makes a copy)."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Plan:  # with its schedule (Plan.kept_state), as NEWOBJ and a state
            state = obj.kept_state()
            # its graph as a pickle of its own, unpickled where something asks for it (no run
            # does: a loaded gpt plan's graph took 3.7 ms of 7.7 to unpickle; _lazy_graph)
            out = io.BytesIO()
            _PlanPickler(out, protocol=PROTOCOL).dump(state["graph"])
            return copyreg.__newobj__, (Plan,), {**state, "graph": out.getvalue()}
        if type(obj).__module__ == "numpy.dtypes" and isinstance(obj, np.dtype) and (
                obj.fields is None and obj.subdtype is None and obj.isbuiltin == 1):
            return np.dtype, (obj.str,)
        return NotImplemented


def load(plan_key: str, graph: nx.DiGraph,
         cache_dir: str | os.PathLike[str] | None = None) -> Plan | None:
    """The plan kept under ``plan_key``, or None. Its graph's nodes take the autograd numbers
    of this process's capture ``graph`` (left out of the key), where they still exist (by
    the id the capture gave them: ``graph.renumber``)."""
    from codegen import cache

    data = cache.stored_plan(plan_key, cache_dir)
    if data is None:
        return None
    plan = _PlanUnpickler(io.BytesIO(data)).load()
    if type(plan) is not Plan:
        raise pickle.UnpicklingError(f"the entry holds a {type(plan).__name__}, not a Plan")
    blob = plan.__dict__.pop("graph", None)
    if type(blob) is not bytes:
        raise pickle.UnpicklingError("the entry's plan holds no pickled graph")
    # the capture's numbers, not the capture: its graph (gpt's 20000 objects) is not kept
    # alive for a graph no run asks for, nor walked by every garbage collection after
    numbers: dict[str, dict[int, Any]] = {k: {} for k in _UNKEYED}
    for v, node in graph.nodes(data=True):
        for k, found in numbers.items():
            found[v] = node.get(k)
    plan.__dict__["_graph_loader"] = functools.partial(_lazy_graph, blob, numbers)
    return plan


def _lazy_graph(blob: bytes, numbers: dict[str, dict[int, Any]]) -> nx.DiGraph:
    """A loaded plan's graph (``Plan.graph``, asked on first use), its nodes with the
    autograd numbers of this process's capture (``numbers``: field -> node -> number, left
    out of the key), where they still exist (by the id the capture gave them:
    ``graph.renumber``)."""
    g = _PlanUnpickler(io.BytesIO(blob)).load()
    if type(g) is not nx.DiGraph:
        raise pickle.UnpicklingError(f"a kept plan's graph is a {type(g).__name__}")
    for v, node in g.nodes(data=True):
        c = node.get("captured", v)  # its capture's id where a pass renumbered the graph
        for k, found in numbers.items():
            if c in found:
                node[k] = found[c]
    return g


def store(plan_key: str, plan: Plan, cache_dir: str | os.PathLike[str] | None = None) -> None:
    """Keep ``plan`` under ``plan_key`` (its data: the executable stays behind)."""
    from codegen import cache

    out = io.BytesIO()
    _PlanPickler(out, protocol=PROTOCOL).dump(plan)
    cache.store_plan(plan_key, out.getvalue(), cache_dir)


# --- steps that create state on their first call --------------------------------------------
# A step whose first call creates state (an optimizer's moments) is captured once to learn
# that, runs eagerly, and is captured again (planner.compile). A later process calling the
# same step knows it from a marker kept here and runs its first call eagerly without the
# first capture (cnn's warm first call: 9 ms of 54). The marker's key is the step's code,
# its arguments' shapes and the optimizers it reaches (each one's class, hyperparameters,
# parameter shapes and whether it holds state yet), so the same code stepping another
# optimizer (SGD without momentum, which creates nothing) finds no marker. A marker that is
# wrong all the same costs no correctness: that call runs eagerly, as a first call may.
_WARM_UP = b"runs eagerly on its first call"


def warm_up_key(fn: Any, call_key: tuple[Any, ...]) -> str | None:
    """The marker's key for ``fn`` called with arguments of ``call_key``; None where it would
    not be the same in another process (no code object; an argument known by its id) or
    where ``fn`` reaches no optimizer (in its closure or the globals its code names)."""
    import marshal

    code = getattr(fn, "__code__", None)
    if code is None or any(isinstance(k, tuple) and k[:1] == ("O",) for k in call_key):
        return None
    optimizers = _optimizers(fn, code)
    if not optimizers:
        return None
    try:
        body = marshal.dumps(code)
    except ValueError:
        return None
    h = hashlib.sha256(b"warm-up\0")
    h.update(body)
    h.update(repr((getattr(fn, "__module__", None), getattr(fn, "__qualname__", None),
                   call_key, sys.version, optimizers)).encode())
    return h.hexdigest()


def _optimizers(fn: Any, code: types.CodeType) -> list[Any]:
    """What describes each optimizer ``fn`` reaches directly (``reached_optimizers``): class,
    hyperparameters, parameter shapes, whether it holds state."""
    found: list[Any] = []
    for obj in reached_optimizers(fn):
        groups = [(sorted((k, repr(v)) for k, v in g.items() if k != "params"),
                   [tuple(p.shape) for p in g["params"]]) for g in obj.param_groups]
        found.append((type(obj).__qualname__, groups, bool(obj.state)))
    return found


def reached_optimizers(fn: Any) -> list[Any]:
    """The optimizers ``fn`` reaches directly: in a closure cell, or a global its code
    names (none where it has no code)."""
    from runtime.optim.optimizer import Optimizer

    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    found: list[Any] = []
    seen: set[int] = set()
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
             if _filled(c)]
    names = getattr(fn, "__globals__", {})
    for obj in cells + [names[n] for n in code.co_names if n in names]:
        if isinstance(obj, Optimizer) and id(obj) not in seen:
            seen.add(id(obj))
            found.append(obj)
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # an empty cell
        return False
    return True


def remember_warm_up(marker: str, cache_dir: str | os.PathLike[str] | None = None) -> None:
    """Keep the marker that the step of ``marker`` creates state on its first call."""
    from codegen import cache

    cache.store_plan(marker, _WARM_UP, cache_dir)


def warms_up(marker: str, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether an earlier process found the step of ``marker`` creating state on its first
    call."""
    from codegen import cache

    return cache.stored_plan(marker, cache_dir) == _WARM_UP
