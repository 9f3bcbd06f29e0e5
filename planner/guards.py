"""A binding's guards: the values a step reaches by access paths (``accesses``, ``Watch``,
``Guard``: see "values the step reaches by access paths" below), and all of its guards as
generated straight-line code (``build``).

``Binding.failed_guard`` (planner.compile) says why a plan no longer fits the state it was
captured for; it loops over the guards and builds a key per optimizer setting, which a
steady-state call pays only to find that nothing changed. ``passes`` is the same test written
out for one binding: every value it compares with is bound into the function, each guard a
line or two, nothing built. It returns True only where ``failed_guard`` finds nothing; on
False the caller asks ``failed_guard`` for the reason (and it may find none: the modules'
structure version moved without their parameters changing, which only it records).

As in planner.program, the source holds no value of the step's: objects are names in the
function's namespace, and the only literals are ints, bools and the key 'params', written by
this module (a path's attribute names and keys are names too). Measured on mlp_small's SGD
step: 2.1 us where failed_guard took 4.8. A step that reads no value by a path (mlp_small,
one_op: their names hold a model, an optimizer, a module) gets an identity test per name
(another model there captures again: tests/planner/test_object_guards.py checks it); one that
reads values pays about 0.15 us a step of each path (timeit of ``passes`` for ``x * cfg.inner.w * cfg.s``: 0.78 us, 0.35 for ``x * W``).
"""

from __future__ import annotations

import collections
import dis
import functools
import inspect
import opcode
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from runtime.autograd.function import Function
from runtime.autograd.node import leaf_hooks_version
from runtime.creation import Generator
from runtime.nn.module import Module, structure_version
from runtime.optim.lr_scheduler import LRScheduler
from runtime.optim.optimizer import Optimizer, has_step_hooks
from runtime.tensor import Tensor
from runtime.tracing import GraphBreak, MetaArray

from .tree import unflatten

MISSING = object()  # a setting or state entry that is not there
# an optimizer setting the step assigns itself before its update reads it: not guarded
ASSIGNED = object()


def setting_key(value: Any, name: str | None = None) -> Any:
    """What a plan depends on in an optimizer setting (named ``name``). A number (lr, betas,
    eps, momentum, weight decay...) is read by the plan at each replay (Tracer.hyper), so
    only its type and whether it is zero (the updates branch on that: no momentum buffer, no
    decay) are guarded, and for the lr, on which no update branches, its type alone: a
    learning-rate schedule never recompiles, not even where it reaches 0 (PolynomialLR's end,
    a cosine's eta_min of 0). Anything else (flags such as nesterov) is guarded by value."""
    if isinstance(value, (list, tuple)):
        return tuple(setting_key(v) for v in value)
    if type(value) in (int, float):
        return ("number", type(value), None if name == "lr" else value == 0)
    if isinstance(value, Tensor):  # a tensor setting (a tensor lr): the plan reads that tensor
        return ("tensor", id(value))
    return value


# an exact_setting_key's mark (an object, so that no setting's own value can be it)
EXACT = object()


def exact_setting_key(value: Any) -> Any:
    """What a plan depends on in an optimizer setting the step read as a Python value, not
    through Tracer.hyper (a user's optimizer reading ``group["lr"]``, Muon's eps): a
    constant of the plan, so its value itself (a tensor's identity: the plan reads it)."""
    return (EXACT, _exact(value))


def _exact(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_exact(v) for v in value))
    if isinstance(value, Tensor):
        return ("tensor", id(value))
    return (type(value), value)


def is_exact(key: Any) -> bool:
    return type(key) is tuple and len(key) == 2 and key[0] is EXACT


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_missing": MISSING, "_id": id, "_len": len,
                                      "_type": type, "_isinstance": isinstance,
                                      "_tensor": Tensor, "_setting_key": setting_key,
                                      "_exact_setting_key": exact_setting_key,
                                      "_structure_version": structure_version,
                                      "_leaf_hooks_version": leaf_hooks_version,
                                      "_getattr": getattr, "_tuple": tuple, "_map": map,
                                      "_default": default_of, "_own_or_class": own_or_class,
                                      "_has_step_hooks": has_step_hooks,
                                      "_frozenset": frozenset}

    def name(self, value: Any) -> str:
        key = f"_v{len(self.names)}"
        self.names[key] = value
        return key

    def fail_if(self, condition: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + f"if {condition}:")
        self.lines.append("    " * indent + "    return False")


def _int(v: Any) -> str:
    if type(v) is not int:
        raise TypeError(f"a guard literal must be an int, got {type(v).__name__}")
    return str(v)


def _bool(v: Any) -> str:
    if type(v) is not bool:
        raise TypeError(f"a guard literal must be a bool, got {type(v).__name__}")
    return str(v)


def build(binding: Any) -> Callable[[tuple[Any, ...]], bool]:
    """``passes(args)`` for ``binding`` (a planner.compile.Binding) as it is now."""
    src = _Source()
    b = src.name(binding)
    if binding.python_values:
        src.lines.append("    try:")
        whole, covered = _whole_lists(binding.python_values)
        for prefix, (length, items) in whole.items():
            _list_guard(src, prefix, length, items)
        for guard in binding.python_values:
            if id(guard) not in covered:
                _path_guard(src, guard)
        src.lines.append("    except Exception:")  # a step that finds nothing: failed_guard
        src.lines.append("        return False")
    if binding.numbers is not None:  # conditions on number arguments (planner.number_guards)
        src.fail_if(f"not {src.name(binding.numbers.passes)}(args)")
    for is_tensor, slot in binding.guarded:
        if is_tensor:
            t = src.name(slot.ref)
            if slot.path is not None:  # state carried by its path: the tensor there now
                src.lines.append(f"    t = {src.name(found_at)}({src.name(slot.path)})")
                src.fail_if(f"{src.name(carried_misfit)}(t, {src.name(slot.ref.device)}, "
                            f"{b}.other_roots, args, {b}.written_args) is not None")
                t = "t"
            # the array's shape: Tensor.shape makes an rt.Size at every read
            flag = ("" if slot.requires_grad is None  # set by the step before it reads it
                    else f" or {t}._rg != {_bool(slot.requires_grad)}")
            src.fail_if(f"{t}._data.shape != {src.name(tuple(slot.shape))} or {t}.dtype is not "
                        f"{src.name(slot.dtype)}{flag}")
        else:
            owner = src.name(slot.ref) if slot.owner_input is None else \
                f"args[{_int(slot.owner_input)}]"
            src.lines.append(f"    g = {owner}._grad")
            src.fail_if(f"g is not None and (g._data.shape != {src.name(tuple(slot.shape))} or "
                        f"g.dtype is not {src.name(slot.dtype)})")
    for ref, was_none, index in binding.grad_none:
        owner = src.name(ref) if index is None else f"args[{_int(index)}]"
        src.fail_if(f"({owner}._grad is None) is not {_bool(was_none)}")
    if binding.leaf_hooks:  # their gradient hooks: checked by failed_guard
        src.fail_if(f"_leaf_hooks_version() != {b}.hooks_version")
    if binding.modules:  # their parameters, modes and hooks: checked by failed_guard
        src.fail_if(f"_structure_version() != {b}.module_version")
    if binding.outside_roots:  # shared_memory written out: 0.1 us an argument, 1.4 called
        roots = src.name(binding.outside_roots)
        for i in binding.tensor_args:
            src.lines.append(f"    d = args[{_int(i)}]._data")
            src.lines.append("    b = d.base")
            src.fail_if(f"(_id(d if b is None else b) in {roots}) is not "
                        f"{_bool(i in binding.sharing)}")
    for cls, forward in binding.forwards:
        src.fail_if(f"{src.name(cls)}.forward is not {src.name(forward)}")
    for opt, key in binding.optimizers:
        _optimizer(src, src.name(opt), key)
    text = "def passes(args):\n" + "\n".join(src.lines + ["    return True"]) + "\n"
    code = compile(text, "<guards>", "exec")
    namespace = dict(src.names)
    exec(code, namespace)  # noqa: S102 - our own source: names and int/bool literals only
    fn = namespace["passes"]
    fn.source = text
    return fn  # type: ignore[no-any-return]


def memory_root(data: Any) -> int:
    """The id of the array owning ``data``'s memory (numpy's and CuPy's ``base``)."""
    base = getattr(data, "base", None)
    return id(data if base is None else base)


def shared_memory(args: tuple[Any, ...], positions: tuple[int, ...], roots: frozenset[int]
                  ) -> tuple[int, ...]:
    """The ``positions`` of the tensor arguments whose memory is among ``roots``."""
    return tuple(i for i in positions if memory_root(args[i]._data) in roots)


def _whole_lists(guards: list[Guard]) -> tuple[dict[Path, tuple[Guard, list[Guard]]], set[int]]:
    """The lists and tuples whose length and first items (by identity: every item, or those
    within ``_expand``'s budget) are guarded, by path: (the length guard, the item guards in
    order); and the ids of those guards. A list of 64 functions the step loops over (the
    chain workload's ops) is then one comparison of ids (64 guards written out took 4 us a
    call)."""
    lengths: dict[Path, Guard] = {}
    items: dict[Path, dict[int, Guard]] = {}
    for g in guards:
        if not g.path.steps or not g.exact:
            continue
        attr, key = g.path.steps[-1]
        if attr is None and type(g.value) is int:
            lengths[g.path.prefix(-1)] = g
        elif attr is False and type(key) is int and key >= 0 and g.identity:
            items.setdefault(g.path.prefix(-1), {})[key] = g
    whole: dict[Path, tuple[Guard, list[Guard]]] = {}
    for prefix, length in lengths.items():
        found = items.get(prefix, {})
        m = len(found)  # its first m items: all of them, or those within _expand's budget
        if m < 2 or m > length.value or set(found) != set(range(m)) \
                or length.types[-1] not in (list, tuple):
            continue
        ordered = [found[i] for i in range(m)]
        if all(g.types == length.types for g in ordered):  # the same objects along the way
            whole[prefix] = (length, ordered)
    covered = {id(g) for length, ordered in whole.values() for g in (length, *ordered)}
    return whole, covered


def _list_guard(src: _Source, prefix: Path, length: Guard, items: list[Guard]) -> None:
    """The guards of a whole list or tuple (``_whole_lists``) written out: the path to it
    followed as each guard follows it, then its length and its items compared by identity."""
    _follow(src, prefix, length.types[:len(prefix.steps)])
    container = length.types[-1]
    first = "o" if len(items) == length.value else f"o[:{_int(len(items))}]"
    values = [g.value for g in items]
    if all(type(v).__eq__ is object.__eq__ for v in values):
        # compared as a list: an item is compared by identity first, and an object whose
        # class keeps object's __eq__ equals only itself. The chain's 63 functions: 5,600
        # instructions a check against 38,700 for their ids (a new item's own __eq__ is asked
        # too: one claiming to equal anything, unittest.mock.ANY, would pass)
        same = src.name(container(values))
    else:
        first = f"_tuple(_map(_id, {first}))"
        same = src.name(tuple(id(v) for v in values))
    src.fail_if(f"_type(o) is not {src.name(container)} or _len(o) != "
                f"{_int(length.value)} or {first} != {same}", indent=2)


def _follow(src: _Source, path: Path, classes: tuple[type, ...]) -> None:
    """Lines leaving in ``o`` the value at ``path``, each object it goes through checked to
    be of its type in ``classes`` (Path.follow written out)."""
    if path.kind == "global":
        src.lines.append(f"        o = {src.name(path.root)}.get({src.name(path.name)}, _missing)")
    elif path.kind == "cell":
        src.lines.append(f"        o = {src.name(path.root)}.cell_contents")
    elif path.kind == "default":
        src.lines.append(f"        o = _default({src.name(path.root)}, {src.name(path.name)})")
    else:
        src.lines.append(f"        o = {src.name(path.root)}")
    for (attr, key), cls in zip(path.steps, classes, strict=True):
        src.fail_if(f"_type(o) is not {src.name(cls)}", indent=2)
        method = attr and type(_class_attribute(cls, key)) is types.FunctionType
        k = "" if attr is None else src.name(key)
        src.lines.append(f"        o = _own_or_class(o, {k})" if method
                         else f"        o = _getattr(o, {k})" if attr
                         else "        o = _frozenset(o)" if attr is None and key == "set"
                         else "        o = _len(o)" if attr is None  # a (None, "len") step
                         # (a defaultdict's __missing__ would insert the key)
                         else f"        o = o[{k}] if {k} in o else _missing"
                         if cls is collections.defaultdict
                         else f"        o = o[{k}]")


def _path_guard(src: _Source, guard: Guard) -> None:
    """Guard.failed for one guard, written out: the path followed as it was at capture (each
    object it goes through of the type it had), and the value found compared."""
    _follow(src, guard.path, guard.types)
    if not guard.exact and isinstance(guard.value, Tensor):  # assigned anew (a stored tensor)
        shape, dtype, device = tensor_meta(guard.value)
        src.fail_if(f"_type(o) is not {src.name(type(guard.value))} or o._data.shape != "
                    f"{src.name(shape)} or o.dtype is not {src.name(dtype)} or o.device != "
                    f"{src.name(device)}", indent=2)
    elif not guard.exact:
        src.fail_if(f"_type(o) is not {src.name(type(guard.value))}", indent=2)
    elif guard.identity:
        src.fail_if(f"o is not {src.name(guard.value)}", indent=2)
    else:  # the same object passes, as in a tuple comparison (nan included)
        value = src.name(guard.value)
        src.fail_if(f"_type(o) is not {src.name(type(guard.value))} or (o is not {value} and "
                    f"o != {value})", indent=2)


def _optimizer(src: _Source, opt: str, key: Any) -> None:
    """planner.compile._optimizer_matches for one optimizer, written out."""
    groups, state = key
    src.fail_if(f"_has_step_hooks({opt})")
    src.lines.append(f"    groups = {opt}.param_groups")
    src.fail_if(f"_len(groups) != {_int(len(groups))}")
    for i, (ids, settings) in enumerate(groups):
        src.lines.append(f"    g = groups[{_int(i)}]")
        src.lines.append("    params = g['params']")
        src.fail_if(f"_len(params) != {_int(len(ids))}")
        for j, pid in enumerate(ids):
            src.fail_if(f"_id(params[{_int(j)}]) != {_int(pid)}")
        src.fail_if(f"_len(g) != {_int(len(settings) + 1)}")
        for k, v in settings:
            if v is ASSIGNED:
                continue
            if is_exact(v):  # a constant of the plan: its value
                want = src.name(v)
                src.lines.append(f"    now = _exact_setting_key(g.get({src.name(k)}, _missing))")
                src.fail_if(f"now is not {want} and not now == {want}")
                continue
            if v is None or type(v) is bool:  # setting_key's own: only the same object
                src.fail_if(f"g.get({src.name(k)}, _missing) is not {src.name(v)}")
                continue
            src.lines.append(f"    now = g.get({src.name(k)}, _missing)")
            if isinstance(v, tuple) and len(v) == 3 and v[0] == "number" \
                    and v[1] in (int, float) and v[2] is None:  # an lr: the same type
                src.fail_if(f"_type(now) is not {src.name(v[1])}")
            elif isinstance(v, tuple) and len(v) == 3 and v[0] == "number" \
                    and v[1] in (int, float):
                # setting_key's number: the same type, zero or not
                src.fail_if(f"_type(now) is not {src.name(v[1])} or (now == 0) is not "
                            f"{_bool(bool(v[2]))}")
            else:
                want = src.name(v)
                src.lines.append("    now = _setting_key(now)")
                src.fail_if(f"now is not {want} and (now is _missing or not now == {want})")
    src.lines.append(f"    st = {opt}.state")
    src.fail_if(f"_len(st) != {_int(len(state))}")
    if state:
        src.lines.append("    items = iter(st.items())")
        for pid, entries in state:
            src.lines.append("    p, s = next(items)")
            src.fail_if(f"_id(p) != {_int(pid)} or _len(s) != {_int(len(entries))}")
            for k, v in entries:
                want = src.name(v)
                src.lines.append(f"    now = s.get({src.name(k)}, _missing)")
                src.lines.append("    if _isinstance(now, _tensor):")
                src.lines.append("        now = _id(now)")
                src.fail_if(f"now is not {want} and (now is _missing or not now == {want})")


# --- values the step reaches by access paths ---------------------------------------------
#
# A capture bakes the Python values the step reads into the plan: a number becomes a constant,
# a tensor a state slot standing for that tensor object. The step's own bytecode says where it
# reads them: a name (a module global, a closure cell, an argument) followed by attribute and
# constant-key subscript loads, ``cfg.inner.w``, ``hp["lr"]``, ``ws[0]``, ``self.scale`` (as
# dynamo's guards do, in spirit). Those paths are followed before the capture; each value found
# that a plan depends on is guarded at every call (a tensor or numpy array by identity, a
# number, string, bool or None by value, a module, optimizer, lr scheduler or function by
# identity: ``_HELD``), and a value the step changes itself (``self.n += 1``)
# (or a tensor of the capture it puts into a list or dict it reads, ``losses.append(loss)``)
# is noticed by following them again after the capture, and put back (``Watch``, made by
# planner.capture): planner.compile adds a counter's constants after each replay, and runs a
# step that changes anything else eagerly (CompiledStep._changed_by_capture).
#
# A path is followed only where no code of the step's objects can run: instance and class
# dictionaries, ``__slots__`` and namedtuple fields, modules, nn.Module's parameters, buffers
# and submodules, and subscripts of exact dicts, lists and tuples. A property, a class with its
# own ``__getattr__`` or ``__getattribute__``, a subscript of anything else is not followed
# (and what lies beyond it is not guarded: the plan keeps what it found at capture). Tensors,
# numpy arrays, optimizers and lr schedulers are not entered: their state has guards and
# replay-time inputs of its own (an optimizer's lr is read at every replay, never guarded),
# and neither is a module's ``training`` (its modes are guarded with its parameters).


class _Unsafe(Exception):
    """Following this step could run code of the step's objects: the path is not followed."""


_FIELDS = (types.MemberDescriptorType, type(collections.namedtuple("_T", "a").a))
# the builtin types whose attribute lookup (object.__getattribute__'s) a class may inherit
_GENERIC_LOOKUP = (object, tuple, list, dict)
# a random generator's state is read and written by the plan at each replay (its fields
# change at every draw: guarded by value, they captured the step again at every call)
_OPAQUE = (Tensor, np.ndarray, Optimizer, LRScheduler, Generator)
_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)
# the containers a path steps into by item and length (a defaultdict's missing key is
# MISSING: its __missing__ would insert it, which a guard must not)
_DICTS = (dict, collections.OrderedDict, collections.defaultdict)
_INDEXED = (list, tuple, collections.deque)
_SEQUENCES = (*_DICTS, *_INDEXED)
# a set is guarded by its contents (a (None, "set") step: a frozenset of them, compared)
_SETS = (set, frozenset)


def default_of(fn: types.FunctionType, name: str) -> Any:
    """The default value of ``fn``'s parameter ``name`` now (MISSING: it has none), read
    from ``__defaults__`` or ``__kwdefaults__`` as a call binds it."""
    code = fn.__code__
    if name in code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]:
        return (fn.__kwdefaults__ or {}).get(name, MISSING)
    defaults = fn.__defaults__ or ()
    index = code.co_varnames.index(name) - (code.co_argcount - len(defaults))
    return defaults[index] if 0 <= index < len(defaults) else MISSING


@dataclass(eq=False, frozen=True)
class Path:
    """Where the step reads a value: ``kind`` "global" (``root``: the step's globals), "cell"
    (a closure cell), "default" (the default value of the function ``root``'s parameter
    ``name``, which a user may rebind: ``step.__defaults__ = (0.5,)``) or "object" (an
    argument, fixed for a plan by the call's key, or the ``self`` of a bound method), then
    (attribute?, name or key) steps."""

    kind: str
    root: Any
    name: str
    steps: tuple[tuple[bool, Any], ...] = ()

    @property
    def _key(self) -> tuple[Any, ...]:
        return self.kind, id(self.root), self.name, self.steps

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        text = self.name
        for attr, k in self.steps:
            text = f"{k}({text})" if attr is None else f"{text}.{k}" if attr else \
                f"{text}[{k!r}]"
        if self.kind == "default":
            text += f" (a default of {self.root.__qualname__})"
        return text

    def then(self, attr: bool | None, key: Any) -> Path:
        """One step further: an attribute (``attr``), an item, or (None) the length of the
        dict, list or tuple here (``_expand``: a container the step uses whole)."""
        return Path(self.kind, self.root, self.name, (*self.steps, (attr, key)))

    def prefix(self, n: int) -> Path:
        """The path of its first ``n`` steps (a negative ``n``: all but the last ``-n``)."""
        return Path(self.kind, self.root, self.name, self.steps[:n])

    def start(self) -> Any:
        if self.kind == "global":
            return self.root.get(self.name, MISSING)
        if self.kind == "cell":
            try:
                return self.root.cell_contents
            except ValueError:  # an empty cell
                return MISSING
        if self.kind == "default":
            return default_of(self.root, self.name)
        return self.root

    def follow(self) -> tuple[Any, tuple[type, ...]]:
        """The value here (MISSING where a step finds nothing) and the type of each object a
        step was taken from; raises _Unsafe where a step is not followed."""
        obj = self.start()
        seen: list[type] = []
        for attr, key in self.steps:
            if obj is MISSING:
                break
            if isinstance(obj, _OPAQUE):
                raise _Unsafe
            seen.append(type(obj))
            if attr is None:
                if key == "set" and type(obj) in _SETS:
                    obj = frozenset(obj)
                    continue
                if key == "set" or type(obj) not in _SEQUENCES:
                    raise _Unsafe
                obj = len(obj)
                continue
            try:
                obj = _attribute(obj, key) if attr else _item(obj, key)
            except (AttributeError, LookupError):
                return MISSING, tuple(seen)
        return obj, tuple(seen)

    def owner(self) -> Any:
        """The object whose attribute this path ends with (None: it ends otherwise)."""
        if not self.steps or not self.steps[-1][0]:
            return None
        try:
            found, _ = self.prefix(-1).follow()
        except _Unsafe:
            return None
        return None if found is MISSING else found

    def assign(self, value: Any) -> None:
        """Put ``value`` here (MISSING: remove what is here), as the step's own store would."""
        if not self.steps:
            if self.kind == "global":
                _put(self.root, self.name, value)
            elif self.kind == "cell":
                if value is MISSING:
                    del self.root.cell_contents
                else:
                    self.root.cell_contents = value
            return
        parent, _ = self.prefix(-1).follow()
        attr, key = self.steps[-1]
        if attr is None:  # a length: the container is refilled instead (Watch.restore)
            raise TypeError(f"{self} cannot be assigned")
        if not attr:
            _put(parent, key, value)
        elif value is MISSING:
            delattr(parent, key)
        else:
            setattr(parent, key, value)


def _put(container: Any, key: Any, value: Any) -> None:
    if value is MISSING:
        container.pop(key, None)
    else:
        container[key] = value


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return MISSING


def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` where reading it runs no code of the step's objects, else _Unsafe."""
    if isinstance(obj, types.ModuleType):
        found = obj.__dict__.get(name, MISSING)
        if found is MISSING and "__getattr__" in obj.__dict__:
            raise _Unsafe
        if found is MISSING:
            raise AttributeError(name)
        return found
    cls = type(obj)
    if cls is type:  # a class's own attribute, not a descriptor (a method, a property)
        found = _class_attribute(obj, name)
        if found is MISSING:
            raise AttributeError(name)
        if hasattr(type(found), "__get__"):
            raise _Unsafe
        return found
    if isinstance(obj, type) or getattr(cls.__getattribute__, "__objclass__",
                                        None) not in _GENERIC_LOOKUP:
        raise _Unsafe  # a metaclass's or the object's own lookup
    static = _class_attribute(cls, name)
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        own = {}
    if static is not MISSING and hasattr(type(static), "__get__"):
        if isinstance(static, _FIELDS):  # __slots__ and namedtuple fields
            return getattr(obj, name)
        data = hasattr(type(static), "__set__") or hasattr(type(static), "__delete__")
        if not data and name not in own and type(static) is types.FunctionType:
            # a method of the class: the function itself (guarded by identity), so that one
            # the object is given later (``obj.scale = f``, which its calls run instead) or
            # the class's rebound is another value there (``own_or_class``)
            return static
        if data or name not in own:  # a property, or another descriptor found on the class
            raise _Unsafe
    module = isinstance(obj, Module)
    if name in own:
        if module and name == "training":
            raise _Unsafe  # guarded as the module's mode
        return own[name]
    if static is not MISSING:
        return static
    if module and cls.__getattr__ is Module.__getattr__:  # parameters, buffers, submodules
        return Module.__getattr__(obj, name)
    if hasattr(cls, "__getattr__"):
        raise _Unsafe
    raise AttributeError(name)


def own_or_class(obj: Any, name: str) -> Any:
    """``_attribute`` where the class of ``obj`` holds a plain function ``name``: the
    object's own attribute, else that function (the generated guards' form)."""
    own = getattr(obj, "__dict__", None)  # (none: a class with __slots__)
    found = MISSING if own is None else own.get(name, MISSING)
    return _class_attribute(type(obj), name) if found is MISSING else found


def _item(obj: Any, key: Any) -> Any:
    if type(obj) in _DICTS or (type(obj) in _INDEXED and type(key) is int):
        if type(obj) is collections.defaultdict and key not in obj:
            raise KeyError(key)
        return obj[key]
    raise _Unsafe


def guarded_kind(value: Any) -> str | None:
    """How a value found on a path is guarded: "identity" (a tensor or numpy array: the plan
    reads that object's storage), "value" (a number, string, bool, None, or a tuple of them:
    baked in as a constant), or None (not guarded: an object the plan does not hold)."""
    if isinstance(value, Tensor) or type(value) is np.ndarray:
        return "identity"
    if isinstance(value, _SCALARS) or (type(value) in (tuple, frozenset)
                                       and all(type(v) in _SCALARS for v in value)):
        return "value"
    return None


def same(before: Any, now: Any) -> bool:
    """Whether the value at a path is still what it was: the same object, or an equal scalar
    of the same type."""
    if before is now:
        return True
    return guarded_kind(before) == "value" and type(now) is type(before) and bool(now == before)


# --- where the step's bytecode reads and writes ---------------------------------------------


@dataclass(frozen=True)
class _Ref:  # a path's value on the simulated stack, from its ``occurrence``-th read
    path: Path
    occurrence: int


@dataclass(frozen=True)
class _Const:
    value: Any


@dataclass(frozen=True)
class _Sum:  # a read path's value plus a constant: ``self.n + 1``, ``self.n += 1``
    ref: _Ref
    delta: Any


@dataclass
class Accesses:
    """The paths a step's bytecode reads (``reads``: each read, in order) and stores into
    (``writes``), and the reads that only increment their path (``increments``: occurrence
    -> the constant added, ``self.n += 1``)."""

    reads: list[Path] = field(default_factory=list)
    writes: dict[Path, None] = field(default_factory=dict)
    increments: dict[int, Any] = field(default_factory=dict)
    # the paths whose value the step uses whole, where the walk cannot say which of its
    # parts it reads (``cfg.get("k")``, ``for w in ws``, ``getattr(c, name)``, ``cfg[key]``,
    # an argument of a library function): ``expand_escapes`` guards their contents
    escapes: dict[Path, None] = field(default_factory=dict)
    expanded: set[Path] = field(default_factory=set)  # the parts of those (expand_escapes)
    # calls a replay cannot make as the step does, which a capture must not make either
    # (``next(it)``: its batch would be drawn and lost): the step runs eagerly instead
    stateful: list[str] = field(default_factory=list)

    def paths(self) -> list[Path]:
        """Every path read or written, once each, shorter ones first."""
        return sorted(dict.fromkeys([*self.reads, *self.writes]), key=lambda p: len(p.steps))

    def increment_only(self, path: Path) -> list[Any] | None:
        """The constants added to ``path``, in order, where the step reads it only to add a
        constant to it and store the sum back; else None."""
        found = [i for i, p in enumerate(self.reads) if p == path]
        if not found or any(i not in self.increments for i in found):
            return None
        return [self.increments[i] for i in found]


_ADD = {"+": 1, "+=": 1, "-": -1, "-=": -1, "BINARY_ADD": 1, "INPLACE_ADD": 1,
        "BINARY_SUBTRACT": -1, "INPLACE_SUBTRACT": -1}  # 3.11's BINARY_OP, 3.10's opcodes
_BINARY_3_10 = ("BINARY_", "INPLACE_")


def accesses(fn: Callable[..., Any], arguments: dict[str, Any],
             bound: dict[str, Path] | None = None, calls: _Calls | None = None) -> Accesses:
    """Where ``fn``'s own code (and code nested in it: comprehensions, lambdas) reads and
    stores values through paths rooted at its globals, closure cells and, in its own code,
    the ``arguments`` it is called with (name -> value) that it never rebinds, and the
    parameters ``bound`` to a caller's paths (name -> path: ``_Calls``). Bytecode of Python
    3.10 to 3.13 (the paths' walk checked on each; calls and escapes on 3.11): each instruction either extends the simulated stack's
    paths (LOAD_GLOBAL / LOAD_DEREF / LOAD_FAST, LOAD_ATTR, LOAD_CONST and BINARY_SUBSCR,
    COPY / SWAP and their 3.10 forms) or, not modelled, empties it; a read it does not model
    (3.14's subscript as a BINARY_OP, its LOAD_SMALL_INT) is a path not followed, whose value
    keeps what the capture found. On 3.11 and 3.12, a call of the user's function, method or
    module with paths among its arguments walks the callee with its parameters bound to them
    (``calls``: how deep and how many, ``_Calls``), so a helper's ``cfg["p"]``, a forward's
    ``self.cfg["p"]`` or ``state["n"] += 1`` are the caller's paths."""
    code = fn.__code__
    found = Accesses()
    cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
    globs = fn.__globals__
    stored = _stored_names(code)
    objects = {name: value for name, value in arguments.items() if name not in stored}
    given = {name: path for name, path in (bound or {}).items() if name not in stored}

    def root(op: str, name: str, top: bool) -> Path | None:
        if op == "LOAD_GLOBAL":
            return Path("global", globs, name)
        if name in cells and (not top or name not in code.co_cellvars):
            return Path("cell", cells[name], name)
        if top and name in given:
            return given[name]
        if top and name in objects:
            return Path("object", objects[name], name)
        return None

    _walk(code, root, found, top=True, calls=calls or _Calls(fn))
    return found


@dataclass
class _Calls:
    """The calls one ``accesses`` walk follows into: the functions on the way (``active``: a
    recursive call is not walked again), and a budget shared by the whole walk (MAX_HELPERS
    callees at most, MAX_CALL_DEPTH deep)."""

    start: Any
    depth: int = 0
    budget: list[int] = field(default_factory=lambda: [MAX_HELPERS])
    active: tuple[int, ...] = ()

    def into(self, fn: Any) -> _Calls | None:
        """The state for walking ``fn`` called from here; None where it is not walked."""
        if self.depth >= MAX_CALL_DEPTH or self.budget[0] <= 0 or id(fn) in self.active \
                or fn is self.start:
            return None
        self.budget[0] -= 1
        return _Calls(self.start, self.depth + 1, self.budget, (*self.active, id(fn)))


# how deep calls of the user's functions are followed from a step (each callee a dis walk)
MAX_CALL_DEPTH = 6


@dataclass(frozen=True)
class _MethodOf:  # LOAD_METHOD's callable slot: ``ref``'s attribute ``name``, called
    ref: _Ref
    name: str


def _calls_a_method(path: Path, name: str) -> bool:
    """Whether ``path.name(...)`` calls a Python function of the class of the object at
    ``path`` (not an attribute of the object's own): which one it runs is guarded, so one
    given to the object later (``obj.name = f``) is not the plan's (``_attribute``)."""
    try:
        obj, _ = path.follow()
    except _Unsafe:
        return False
    if obj is MISSING or isinstance(obj, (type, types.ModuleType, *_OPAQUE)):
        return False
    return type(_class_attribute(type(obj), name)) is types.FunctionType


def _callee(below: Any, callable_: Any) -> tuple[Any, Path | None] | None:
    """The user's function a call runs, from the two stack entries under its arguments (3.11
    and 3.12: NULL and the callable, or a method and its self), and the path its first
    parameter is bound to (a method's or a module's ``self``; None: none); None where the
    call is not followed (not the user's code, or finding it would run code)."""
    try:
        if isinstance(below, _MethodOf):  # obj.name(...)
            obj, _ = below.ref.path.follow()
            if obj is MISSING or isinstance(obj, type):
                return None
            static = _class_attribute(type(obj), below.name)
            if isinstance(static, staticmethod):
                return (static.__func__, None) if users_function(static.__func__) else None
            if users_function(static):
                return static, below.ref.path
            if static is not MISSING:
                return None
            # an attribute called: a submodule (``self.block(x)``), a function it keeps
            path = below.ref.path.then(True, below.name)
        elif isinstance(callable_, _Ref):
            path = callable_.path
        else:
            return None
        value, _ = path.follow()
    except _Unsafe:
        return None
    if users_function(value):
        return value, None
    if isinstance(value, Module):  # its __call__ runs its forward, self bound to it
        forward = _class_attribute(type(value), "forward")
        return (forward, path) if users_function(forward) else None
    return None


def _bind(fn: Any, self_path: Path | None, args: list[Any], names: tuple[str, ...]
          ) -> dict[str, Path]:
    """The paths a call binds ``fn``'s parameters to: ``self_path`` to the first, then the
    positional arguments on the stack that are paths, then those passed by keyword
    (``names``, the last of ``args``)."""
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional = params[:code.co_argcount]
    bound: dict[str, Path] = {}
    offset = 0
    if self_path is not None:
        if not positional:
            return {}
        bound[positional[0]] = self_path
        offset = 1
    split = len(args) - len(names)
    for i, arg in enumerate(args[:split]):
        if isinstance(arg, _Ref) and offset + i < len(positional):
            bound[positional[offset + i]] = arg.path
    for name, arg in zip(names, args[split:]):
        if isinstance(arg, _Ref) and name in params:
            bound[name] = arg.path
    return bound


def call_accesses(flat: Callable[..., Any], leaves: tuple[Any, ...]) -> Accesses:
    """Where the step a capture calls reads and writes values through paths (``accesses``),
    its parameters bound to this call's arguments: ``flat`` is the step, or (made by
    planner.compile) a function of the call's argument leaves with the step as ``flat.step``
    and the arguments' structure as ``flat.spec``. A capture bakes the values it finds into
    the plan, so each one becomes a guard, and so do the values the user's functions it
    reaches read through their globals and closure cells (``helper_accesses``). A numpy
    array or tensor is guarded
    by identity: a batch the step reads from a global rebound every iteration
    (``x = rt.from_numpy(BATCH)``) was baked at capture and replayed stale; now rebinding it
    captures again (and past ``recompile_limit`` runs eagerly, saying so). Its contents are
    not compared: a tensor made by ``from_numpy`` shares them, one made by ``tensor`` keeps
    the capture's copy."""
    step = getattr(flat, "step", flat)
    if isinstance(step, Module):  # planner.compile(model): its forwards' ``self`` is the model
        found = Accesses()
        found.reads.append(Path("object", step, "self"))  # forwards_of walks it (helper_...)
        helper_accesses(found, [step, *leaves])
        expand_escapes(found)
        return found
    # functools.partial(train, model, opt, cfg): its function, walked with the arguments it
    # fixes as objects of the step (a dict or list among them too: the call's key does not
    # hold them, so what the step reads in them is guarded as any global's)
    fixed_args: tuple[Any, ...] = ()
    fixed_kwargs: dict[str, Any] = {}
    while isinstance(step, functools.partial):
        fixed_args = (*step.args, *fixed_args)
        fixed_kwargs = {**step.keywords, **fixed_kwargs}
        step = step.func
    if not isinstance(step, (types.FunctionType, types.MethodType, type, Module)):
        call = _class_attribute(type(step), "__call__")  # an object called: its __call__'s
        if type(call) is types.FunctionType:
            step = types.MethodType(call, step)
    if getattr(step, "__code__", None) is None or isinstance(step, Module):
        return Accesses()
    spec = getattr(flat, "spec", None)
    try:
        args, kwargs = unflatten(spec, list(leaves)) if spec is not None else (leaves, {})
        args, kwargs = (*fixed_args, *args), {**fixed_kwargs, **kwargs}
        if isinstance(step, types.MethodType):
            bound = inspect.signature(step.__func__).bind(step.__self__, *args, **kwargs)
        else:
            bound = inspect.signature(step).bind(*args, **kwargs)
        fixed = inspect.signature(step).bind_partial(*fixed_args, **fixed_kwargs)
    except (TypeError, ValueError):  # the call itself fails, eagerly as compiled
        return accesses(step, {})
    # the defaults of the parameters the call leaves out (``def step(x, cfg=CFG, s=0.5)``):
    # read through the function's defaults, which the call's key does not hold, so a default
    # rebound (``step.__defaults__ = (CFG, 0.1)``, ``__kwdefaults__["s"] = 0.1``) or mutated
    # in place (``cfg["p"] = 2``) is a guard that fails, not a value baked in for good
    own = step.__func__ if isinstance(step, types.MethodType) else step
    defaults = {name: p.default for name, p in bound.signature.parameters.items()
                if name not in bound.arguments and p.default is not p.empty}
    found = accesses(step, {name: value for name, value in bound.arguments.items()
                            if guarded_kind(value) is None
                            and (not isinstance(value, (tuple, list, dict))
                                 or name in fixed.arguments)},
                     bound={name: Path("default", own, name) for name in defaults})
    helper_accesses(found, [getattr(step, "__self__", None), *args, *kwargs.values(),
                            *defaults.values()], skip=(own,))
    expand_escapes(found)
    return found


# the most paths one escaped value is guarded by, and how deep its contents are entered
MAX_EXPANDED = 64
MAX_EXPAND_DEPTH = 2
_MODULE_OWN = frozenset(vars(Module()))  # nn.Module's own attributes: guarded otherwise


def expand_escapes(found: Accesses) -> None:
    """Reads of the parts of each value the step uses whole (``Accesses.escapes``), and of
    each object a read path stopped at because stepping further would run its code (a
    property: its ``__dict__`` holds what the property reads), and the length of a dict where
    a read found no key (``cfg.get("k")``: one added later): a dict's, list's or tuple's
    length and items, an object's or a module's own attributes (not nn.Module's internals,
    guarded otherwise), MAX_EXPAND_DEPTH deep, MAX_EXPANDED paths each. So ``cfg.get("k")``,
    ``for w in ws``, ``cfg[key]``, ``getattr(c, "k")`` and ``c.prop`` see a changed,
    added or removed value: the plan is captured again (or a step that changes one runs
    eagerly)."""
    roots = dict(found.escapes)
    for path in dict.fromkeys(found.reads):
        try:
            value, _ = path.follow()
            if value is MISSING and path.steps and path.steps[-1][0] is False:
                # a key ``cfg.get("k")`` did not find: cfg's length (a key added later)
                parent = path.prefix(-1)
                try:
                    container, _ = parent.follow()
                except _Unsafe:
                    container = None
                if type(container) in _SEQUENCES:
                    found.reads.append(parent.then(None, "len"))
        except _Unsafe:
            for cut in range(len(path.steps) - 1, -1, -1):
                prefix = path.prefix(cut)
                try:
                    prefix.follow()
                except _Unsafe:
                    continue
                roots[prefix] = None
                break
    done: set[Path] = set()
    for path in roots:
        budget = [MAX_EXPANDED]
        _expand(found, path, MAX_EXPAND_DEPTH, budget, done)


def _setting(value: Any) -> bool:
    """A module attribute planner.compile guards as a setting of a captured module (its
    ``_settings``): a number, string, bool or None, or a tuple or list of them."""
    return all(type(v) in _SCALARS for v in (value if type(value) in (tuple, list)
                                              else (value,)))


def _expand(found: Accesses, path: Path, depth: int, budget: list[int], done: set[Path]
            ) -> None:
    if path in done or depth < 0 or budget[0] <= 0:
        return
    done.add(path)
    try:
        value, _ = path.follow()
    except _Unsafe:
        return
    parts: list[Path] = []
    if type(value) in _SETS:
        parts.append(path.then(None, "set"))
    elif type(value) in _SEQUENCES:
        parts.append(path.then(None, "len"))
        keys = value.keys() if type(value) in _DICTS else range(len(value))
        parts += [path.then(False, k) for k in list(keys)[:MAX_EXPANDED] if _hashable(k)]
    elif isinstance(value, Module):  # its public settings are guarded with its parameters
        parts += [path.then(True, k) for k, v in list(vars(value).items())
                  if k not in _MODULE_OWN and isinstance(k, str)
                  and (k.startswith("_") or not _setting(v))]
    elif not isinstance(value, (*_OPAQUE, type, types.ModuleType, types.FunctionType,
                                types.MethodType, *_SCALARS)) and hasattr(value, "__dict__") \
            and getattr(type(value).__getattribute__, "__objclass__", None) in _GENERIC_LOOKUP:
        parts += [path.then(True, k) for k in list(vars(value)) if isinstance(k, str)]
    for part in parts[:budget[0]]:
        budget[0] -= 1
        found.reads.append(part)
        found.expanded.add(part)
        try:
            inner, _ = part.follow()
        except _Unsafe:
            continue
        if guarded_kind(inner) is None and inner is not MISSING:
            _expand(found, part, depth - 1, budget, done)


# functions of the user's code a capture's guards look into, at most (each a dis walk)
MAX_HELPERS = 256


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Where code that is not the user's lives: this project's packages, the standard
    library, installed packages."""
    import os
    import site

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = [os.path.join(here, pkg) for pkg in ("runtime", "planner", "codegen")]
    # the standard library (its extension modules' lib-dynload is inside it) and the
    # installed packages, as sysconfig's stdlib/purelib/platlib paths name them (importing
    # sysconfig cost a first call 0.9 ms)
    dirs.append(os.path.dirname(os.__file__))
    dirs += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE and site.USER_SITE:
        dirs.append(site.USER_SITE)
    return tuple(os.path.join(_realpath(d), "") for d in dirs)


def users_function(fn: Any) -> bool:
    """Whether ``fn`` is a Python function of the user's code (not this project's, the
    standard library's or an installed package's)."""
    if type(fn) is not types.FunctionType:  # checked first: getattr may run an object's code
        return False
    return _users_file(fn.__code__.co_filename)


@functools.lru_cache(maxsize=4096)
def _users_file(filename: str) -> bool:
    if filename.startswith("<"):  # exec'd or interactive: the user's
        return not filename.startswith("<frozen")
    return not _realpath(filename).startswith(_library_dirs())


def _realpath(path: str) -> str:
    """``os.path.realpath(path)``; of an absolute, normalized path by ``_real_dir``, each
    directory resolved once for all the files in it and under it (realpath took an lstat of
    each of a file's directories: a first capture of gpt resolved 17 paths in 0.6 ms)."""
    import os

    if not os.path.isabs(path) or path.startswith("//") or os.path.normpath(path) != path:
        return os.path.realpath(path)  # ("..": after a link, it is the link's target's parent)
    return _real_dir(path)


@functools.lru_cache(maxsize=4096)
def _real_dir(path: str) -> str:
    """``os.path.realpath`` of an absolute, normalized ``path``: its parent's, and its own
    name, unless that is a link (then os.path.realpath, which resolves it)."""
    import os

    parent, name = os.path.split(path)
    if not name:
        return path
    if os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_dir(parent), name)


def _class_functions(cls: type) -> list[Any]:
    """The functions a user's class defines (methods, static and class methods, property
    getters), its bases' too, up to the library's classes."""
    found = []
    for klass in cls.__mro__:
        for value in vars(klass).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            elif isinstance(value, property):
                value = value.fget
            if users_function(value):
                found.append(value)
    return found


_walked: dict[int, tuple[Any, Accesses]] = {}  # id(function) -> (it, accesses(it, {}))


def _helper_walk(fn: Any) -> Accesses:
    """``accesses(fn, {})``, walked once per function (a capture of gpt walked its helpers'
    bytecode in 3 ms); the caller does not change it."""
    hit = _walked.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    if len(_walked) >= 4 * MAX_HELPERS:
        _walked.clear()
    found = _walked[id(fn)] = (fn, accesses(fn, {}))
    return found[1]


def _leaf_hook_functions(t: Tensor) -> list[Any]:
    """The hooks of a leaf tensor (``register_hook``, post-accumulate hooks)."""
    hooks = [*(t._hooks or {}).values(),
             *(t.__dict__.get("_post_accumulate_grad_hooks") or {}).values()]
    return [_hook_function(h) for h in hooks]


def _hooks_of(module: Module) -> list[Any]:
    """The forward and backward hooks of a module and the hooks of its own parameters, as
    the functions or objects that run (a partial's function, a method's object)."""
    found = [_hook_function(h) for hooks in (module._forward_pre_hooks, module._forward_hooks,
                                             module._backward_pre_hooks, module._backward_hooks)
             for h in list(hooks.values())]
    for p in list(module._parameters.values()):
        if p is not None:
            found += _leaf_hook_functions(p)
    return found


def _hook_function(hook: Any) -> Any:
    while isinstance(hook, functools.partial):
        hook = hook.func
    return hook.__self__ if isinstance(hook, types.MethodType) else hook


def helper_accesses(found: Accesses, values: list[Any], skip: tuple[Any, ...] = ()) -> None:
    """Add to ``found`` where the user's functions the step can reach read and write values
    through their own globals and closure cells (``accesses`` of each, with no arguments):
    the functions among ``values`` and among the values of the paths read, the methods of
    the user's classes of those values (an nn.Module's, and every submodule's: its forward
    and the helpers it calls) and the user's functions a module keeps as attributes
    (``self.act = my_act``), transitively, at most MAX_HELPERS functions. A value a helper
    reads (``SCALE`` in a loss function, a module's global constant) is baked into the plan
    as the step's own are: guarded, and a helper changing one makes the step run eagerly,
    as the step's own changes do (a capture cannot replay Python). ``skip``: functions whose
    accesses ``found`` holds already (the step's own)."""
    seen: set[int] = {id(fn) for fn in skip}
    queue: list[Any] = []

    def reach(value: Any) -> None:
        if users_function(value):
            if id(value) not in seen:
                seen.add(id(value))
                queue.append(value)
            return
        if isinstance(value, Module):
            if id(value) in seen:  # (a hook that is its own module's method: LazyLinear's)
                return
            seen.add(id(value))
            modules = list(value.modules())
            classes = {type(m) for m in modules}
            for m in modules:  # functions kept as attributes (``self.act = my_act``)
                for attr in list(vars(m).values()):
                    if users_function(attr):
                        reach(attr)
                # its hooks and its parameters' (a capture runs them once: what they change,
                # ``acts.append(out)``, is the step's change)
                for hook in _hooks_of(m):
                    reach(hook)
        elif isinstance(value, Tensor):
            for hook in _leaf_hook_functions(value):
                reach(hook)
            return
        elif isinstance(value, type) and issubclass(value, Function):
            # a custom autograd Function the step applies: the capture runs its forward and
            # backward, baking in what they read (``ctx.scale = SCALE``, ``g * SCALE``)
            classes = {value}
        elif isinstance(value, _OPAQUE) or guarded_kind(value) is not None or isinstance(
                value, (types.ModuleType, type, tuple, list, dict)):
            return
        else:
            classes = {type(value)}
        for cls in classes:
            if id(cls) not in seen:
                seen.add(id(cls))
                for fn in _class_functions(cls):
                    reach(fn)

    budget = [MAX_HELPERS]

    def reach_paths(paths: list[Path]) -> None:
        for path in dict.fromkeys(paths):
            try:
                value, _ = path.follow()
            except _Unsafe:
                continue
            if value is not MISSING:
                reach(value)
            if isinstance(value, Module) and id(value) not in seen_modules:
                seen_modules.add(id(value))
                forwards_of(value, path)
            elif type(value) in _SEQUENCES:  # ``state["model"]``, reached otherwise
                # (a helper given the container by ``*args``: its walk binds no path)
                items = value.items() if type(value) in _DICTS else enumerate(value)
                for key, item in list(items)[:MAX_EXPANDED]:
                    if isinstance(item, Module) and id(item) not in seen_modules \
                            and _hashable(key):
                        seen_modules.add(id(item))
                        forwards_of(item, path.then(False, key))

    seen_modules: set[int] = set()

    def forwards_of(module: Module, path: Path) -> None:
        """Each user's forward under ``module`` (a container's children's too, which the
        library's forward calls) walked with its ``self`` bound to its path from ``path``
        (``self.cfg["p"]``, ``self.mask``: the module's attributes it reads)."""
        for name, sub in module.named_modules():
            forward = _class_attribute(type(sub), "forward")
            if not users_function(forward) or budget[0] <= 0:
                continue
            where = path
            for part in name.split(".") if name else ():
                where = where.then(True, part)
            bound = _bind(forward, where, [], ())
            if bound:
                budget[0] -= 1
                more = accesses(forward, {}, bound, _Calls(forward, budget=budget))
                _merge(found, more)

    for value in values:
        reach(value)
    reach_paths(found.reads)
    done = 0
    while queue and done < MAX_HELPERS:
        fn = queue.pop(0)
        done += 1
        more = _helper_walk(fn)
        _merge(found, more)
        reach_paths(more.reads)


@functools.lru_cache(maxsize=1024)
def _instructions(code: types.CodeType) -> tuple[Any, ...]:
    """``code``'s instructions, decoded once (``dis`` takes 2.5 us an instruction: gpt's capture
    decoded each of its functions twice, for ``_stored_names`` and ``_walk``). On 3.11 by
    ``_decode_3_11`` (a first capture of gpt spent 2.8 ms of its 7.5 ms of guards in
    ``dis.get_instructions``, which also builds each instruction's line, positions and
    reprs), elsewhere by ``dis``."""
    if sys.version_info[:2] == (3, 11):
        return _decode_3_11(code)
    return tuple(dis.get_instructions(code))


class _Instruction(NamedTuple):
    """The fields of ``dis.Instruction`` that ``_walk`` and ``_stored_names`` read, each as
    ``dis`` gives it; ``argrepr`` only a BINARY_OP's (its operator), else ''."""

    opname: str
    arg: int | None
    argval: Any
    argrepr: str
    is_jump_target: bool


def _decode_3_11(code: types.CodeType) -> tuple[_Instruction, ...]:
    """``dis.get_instructions(code)`` on Python 3.11 (its ``_unpack_opargs``, ``findlabels``
    and argument values, inline caches skipped), without what the walk does not read."""
    raw = code.co_code  # (3.11's co_code is the unspecialized bytecode, as dis reads it)
    ops: list[tuple[int, int, int | None, int | None]] = []
    extended, caches = 0, 0
    cache_entries = opcode._inline_cache_entries  # type: ignore[attr-defined]
    for i in range(0, len(raw), 2):
        if caches:
            caches -= 1
            continue
        op = raw[i]
        caches = cache_entries[op]
        if op >= _HAVE_ARGUMENT:
            arg = raw[i + 1] | extended
            extended = arg << 8 if op == _EXTENDED_ARG else 0
            if extended >= 1 << 31:  # dis's signed overflow
                extended -= 1 << 32
            ops.append((i, op, arg, _jump_target(i, op, arg)))
        else:
            extended = 0
            ops.append((i, op, None, None))
    labels = {target for _, _, _, target in ops}
    return tuple(_Instruction(_OPNAMES[op], arg, target if target is not None else
                              _argval(code, op, arg),
                              _NB_OPS[arg][1] if op == _BINARY_OP else "", offset in labels)
                 for offset, op, arg, target in ops)


_JUMPS_REL = frozenset(dis.hasjrel)
_JUMPS_ABS = frozenset(dis.hasjabs)
_CONSTS = frozenset(dis.hasconst)
_NAMES = frozenset(dis.hasname)
_LOCALS = frozenset(dis.haslocal) | frozenset(dis.hasfree)
_COMPARES = frozenset(dis.hascompare)
_OPNAMES, _HAVE_ARGUMENT, _NB_OPS = dis.opname, dis.HAVE_ARGUMENT, getattr(opcode, "_nb_ops", ())
_BINARY_OP, _LOAD_CONST, _LOAD_GLOBAL, _EXTENDED_ARG = (dis.opmap.get(name) for name in (
    "BINARY_OP", "LOAD_CONST", "LOAD_GLOBAL", "EXTENDED_ARG"))


def _jump_target(offset: int, op: int, arg: int) -> int | None:
    """The offset a jump goes to (``dis.findlabels``'s); None: not a jump."""
    if op in _JUMPS_REL:
        return offset + 2 + (-arg if "JUMP_BACKWARD" in _OPNAMES[op] else arg) * 2
    if op in _JUMPS_ABS:
        return arg * 2
    return None


def _argval(code: types.CodeType, op: int, arg: int | None) -> Any:
    """The ``argval`` 3.11's ``dis`` gives an instruction that is not a jump (a FORMAT_VALUE's:
    its arg)."""
    if arg is None:
        return None
    if op in _CONSTS:
        return code.co_consts[arg] if op == _LOAD_CONST else dis.UNKNOWN
    if op in _NAMES:
        return code.co_names[arg >> 1 if op == _LOAD_GLOBAL else arg]
    if op in _LOCALS:
        return code._varname_from_oparg(arg)  # type: ignore[attr-defined]
    if op in _COMPARES:
        return dis.cmp_op[arg]
    return arg


def _stored_names(code: Any) -> set[str]:
    names: set[str] = set()
    for ins in _instructions(code):
        if ins.opname.startswith(("STORE_FAST", "DELETE_FAST", "STORE_DEREF", "DELETE_DEREF")):
            value = ins.argval
            names.update(value if isinstance(value, tuple) else (value,))
    return names


def _walk(code: Any, root: Callable[[str, str, bool], Path | None], found: Accesses,
          top: bool, calls: _Calls | None = None) -> None:
    stack: list[Any] = []
    kw_names: tuple[str, ...] = ()

    def pop() -> Any:
        return stack.pop() if stack else None

    def escape(entries: list[Any]) -> None:
        """Values on the stack used in a way the walk does not model: what a path holds
        may be read in any part."""
        for e in entries:
            if isinstance(e, _MethodOf):
                e = e.ref
            elif isinstance(e, _Sum):
                e = e.ref
            if isinstance(e, _Ref):
                found.escapes[e.path] = None

    def push_read(path: Path | None) -> None:
        if path is None:
            stack.append(None)
            return
        stack.append(_Ref(path, len(found.reads)))
        found.reads.append(path)

    def store(target: Path | None, value: Any) -> None:
        if target is None:
            return
        found.writes[target] = None
        if isinstance(value, _Sum) and value.ref.path == target:
            found.increments[value.ref.occurrence] = value.delta

    for ins in _instructions(code):
        op, arg = ins.opname, ins.argval
        if ins.is_jump_target:
            escape(stack)
            stack.clear()
        if op in ("LOAD_GLOBAL", "LOAD_DEREF") or (top and op in ("LOAD_FAST",
                                                                   "LOAD_FAST_CHECK")):
            if op == "LOAD_GLOBAL" and sys.version_info >= (3, 11) and ins.arg & 1:
                stack.append(None)  # the NULL of a call
            push_read(root(op, arg, top))
        elif op == "LOAD_FAST_LOAD_FAST" and top:  # 3.13
            for name in arg:
                push_read(root("LOAD_FAST", name, top))
        elif op == "LOAD_CONST":
            stack.append(_Const(arg))
        elif op in ("LOAD_ATTR", "LOAD_METHOD"):
            obj = pop()
            method = op == "LOAD_METHOD" or (sys.version_info >= (3, 12) and ins.arg & 1)
            if method:  # a method is called, not read as a value: (method, self) on 3.11+
                if isinstance(obj, _Ref) and _calls_a_method(obj.path, arg):
                    found.reads.append(obj.path.then(True, arg))  # guarded: its function
                stack.extend((_MethodOf(obj, arg), obj) if isinstance(obj, _Ref)
                             and _CALLS_MODELLED else (None, None))
            else:
                push_read(obj.path.then(True, arg) if isinstance(obj, _Ref) else None)
        elif op == "BINARY_SUBSCR":
            key, obj = pop(), pop()
            if isinstance(obj, _Ref) and isinstance(key, _Const) and _hashable(key.value):
                push_read(obj.path.then(False, key.value))
            else:
                escape([obj, key])
                push_read(None)
        elif op in _ADD or (op == "BINARY_OP" and ins.argrepr in _ADD):
            right, left = pop(), pop()
            sign = _ADD[op if op in _ADD else ins.argrepr]
            number = isinstance(right, _Const) and type(right.value) in (int, float)
            if number and isinstance(left, _Ref):
                stack.append(_Sum(left, sign * right.value))
            else:
                escape([left, right])
                stack.append(None)
        elif op == "BINARY_OP" or op.startswith(_BINARY_3_10):
            escape([pop(), pop()])
            stack.append(None)
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET") and ins.arg <= len(stack):
            # its items are used whole (escape); what is below them is not (a list's append
            # of a tuple built here, ``log.append((k, v))``, keeps the list unread)
            escape([pop() for _ in range(ins.arg)])
            stack.append(None)
        elif op in ("COPY", "DUP_TOP"):
            n = 1 if op == "DUP_TOP" else ins.arg
            stack.append(stack[-n] if len(stack) >= n else None)
        elif op == "DUP_TOP_TWO":
            stack.extend(stack[-2:] if len(stack) >= 2 else [None, None])
        elif op in ("SWAP", "ROT_TWO", "ROT_THREE"):
            n = {"ROT_TWO": 2, "ROT_THREE": 3}.get(op, ins.arg)
            if len(stack) < n:
                stack.clear()
            elif op == "ROT_THREE":
                stack.insert(-2, stack.pop())
            else:
                stack[-1], stack[-n] = stack[-n], stack[-1]
        elif op == "STORE_ATTR":
            obj, value = pop(), pop()
            store(obj.path.then(True, arg) if isinstance(obj, _Ref) else None, value)
        elif op == "STORE_SUBSCR":
            key, obj, value = pop(), pop(), pop()
            store(obj.path.then(False, key.value) if isinstance(obj, _Ref) and isinstance(
                key, _Const) and _hashable(key.value) else None, value)
        elif op in ("STORE_GLOBAL", "STORE_DEREF"):
            store(root("LOAD_GLOBAL" if op == "STORE_GLOBAL" else op, arg, top), pop())
        elif op == "POP_TOP":
            pop()
        elif op in ("PUSH_NULL", "LOAD_CLOSURE"):
            stack.append(None)
        elif op == "KW_NAMES" and _CALLS_MODELLED:
            kw_names = code.co_consts[ins.arg]
        elif op == "CALL" and _CALLS_MODELLED:
            argc = ins.arg
            if len(stack) < argc + 2:
                escape(stack)
                stack.clear()
            else:
                args = stack[len(stack) - argc:]
                below, callable_ = stack[-argc - 2], stack[-argc - 1]
                del stack[-argc - 2:]
                followed: set[Path] = set()
                if _advances_an_iterator(below, callable_, args):
                    found.stateful.append(
                        f"next() on {below.ref.path if isinstance(below, _MethodOf) else args[0].path}")
                if calls is not None and top:
                    followed = _walk_call(found, calls, below, callable_, args, kw_names)
                # what the callee gets but is not walked with: a library function's
                # arguments, a method's object (``cfg.get``, ``ws.index``) wholly
                if not followed and isinstance(below, _MethodOf) \
                        and below.name in ("get", "setdefault") and argc > len(kw_names) \
                        and isinstance(args[0], _Const) and _hashable(args[0].value):
                    # ``cfg.get("k", d)``: a read of cfg["k"] (a key missing there guards
                    # cfg's length: expand_escapes); setdefault may also store it
                    escape(args[1:])
                    item = below.ref.path.then(False, args[0].value)
                    if below.name == "setdefault":
                        found.writes[item] = None
                    push_read(item)
                else:
                    mutator = isinstance(below, _MethodOf) and below.name in _MUTATORS
                    escape([a for a in [below, callable_, *args]
                            if not (isinstance(a, _Ref) and a.path in followed)
                            and not (mutator and a in (below, callable_))])
                    stack.append(None)  # what it returns
            kw_names = ()
        elif op not in ("NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL"):
            escape(stack)
            stack.clear()
    escape(stack)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _walk(const, root, found, top=False)


# methods of lists, dicts and sets that only write: the object they are called on is not read
# by them (``log.append(x)``: its Python side effect happens at capture, as documented)
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "clear", "update", "add",
                       "discard", "sort", "reverse"})

# the calls _walk follows: 3.11's and 3.12's CALL (NULL and callable, or method and self,
# under the arguments; KW_NAMES before it); other versions' calls are not followed
_CALLS_MODELLED = (3, 11) <= sys.version_info[:2] <= (3, 12)


def _advances_an_iterator(below: Any, callable_: Any, args: list[Any]) -> bool:
    """Whether a call is the builtin ``next(it)`` or ``it.__next__()`` of an iterator the
    step reaches by a path (a data iterator kept between calls: a capture would draw a batch,
    a replay none); ``next(model.parameters())`` of a fresh one is not."""
    if isinstance(below, _MethodOf):
        return below.name == "__next__"
    if not isinstance(callable_, _Ref) or not args or not isinstance(args[0], _Ref):
        return False
    path = callable_.path
    return path.kind == "global" and path.name == "next" and not path.steps \
        and "next" not in path.root


def _walk_call(found: Accesses, calls: _Calls, below: Any, callable_: Any, args: list[Any],
               kw_names: tuple[str, ...]) -> set[Path]:
    """Where the user's function a call runs reads and writes through the caller's paths
    its parameters are bound to (its own globals and cells too), added to ``found``; the
    paths it was walked with (the callable's, and those bound: not escaped)."""
    target = _callee(below, callable_)
    if target is None:
        return set()
    fn, self_path = target
    callee = {e.path for e in (below, callable_) if isinstance(e, _Ref)} | (
        {below.ref.path} if isinstance(below, _MethodOf) else set())
    bound = _bind(fn, self_path, args, kw_names)
    if not bound:  # no path passed: helper_accesses walks its globals and cells
        return callee
    inner = calls.into(fn)
    if inner is None:
        return set()
    _merge(found, accesses(fn, {}, bound, inner))
    return callee | set(bound.values())


def _merge(found: Accesses, more: Accesses) -> None:
    """``more``'s reads, writes and increments added to ``found`` (its reads after)."""
    offset = len(found.reads)
    found.reads.extend(more.reads)
    found.writes.update(more.writes)
    found.increments.update({i + offset: d for i, d in more.increments.items()})
    found.escapes.update(more.escapes)
    found.stateful.extend(more.stateful)


def _hashable(key: Any) -> bool:
    return type(key) in (int, str, bytes, bool, float, type(None))


# --- guarding them --------------------------------------------------------------------------


def tensor_meta(t: Tensor) -> tuple[tuple[int, ...], Any, str]:
    """What a step can read of a tensor without its values: shape, dtype, device."""
    return tuple(t._data.shape), t.dtype, t.device


@dataclass(frozen=True)
class Guard:
    """A value the step read at ``path`` when captured, and the type of each object the path
    went through (a path through another kind of object is another path). ``exact``: the
    value itself is guarded; else only its type (a counter the step increments: what a replay
    adds to, as the step would), and of a tensor (one the step assigns anew: a replay stores
    the plan's there) its shape, dtype and device too, which the step may have read
    (``rt.ones(holder.h.shape)``)."""

    path: Path
    value: Any
    types: tuple[type, ...]
    exact: bool = True
    by_identity: bool = False  # a module in a container the step uses whole: that object

    @property
    def identity(self) -> bool:
        return self.by_identity or guarded_kind(self.value) == "identity"

    def _kind(self) -> str:
        return "numpy array" if type(self.value) is np.ndarray else "tensor" \
            if isinstance(self.value, Tensor) else type(self.value).__name__

    def failed(self) -> str | None:
        """Why the value at the path is no longer the one captured (None: it is)."""
        try:
            now, seen = self.path.follow()
        except _Unsafe:
            return f"{self.path} is no longer read through plain attributes and items"
        moved = next((i for i, (a, b) in enumerate(zip(seen, self.types)) if a is not b), None)
        if moved is not None:  # else the same objects, up to one that lacks the next step
            where = self.path.prefix(moved)
            return (f"the Python value {where} is a {seen[moved].__name__} (it was a "
                    f"{self.types[moved].__name__})")
        identity = self.identity
        if not self.exact and now is not MISSING:
            if type(now) is not type(self.value):
                return (f"the Python value {self.path} is a {type(now).__name__} (it was a "
                        f"{type(self.value).__name__}, which the step adds to)")
            if isinstance(now, Tensor) and tensor_meta(now) != tensor_meta(self.value):
                shape, dtype, device = tensor_meta(now)
                return (f"the tensor {self.path} is {list(shape)} {dtype.name} on {device} (the "
                        "step assigns it a new one, and its shape, dtype and device are "
                        "guarded as the step may read them)")
            return None
        if now is MISSING:
            kind = f"a {self._kind()}" if identity else repr(self.value)
            return f"the Python value {self.path} is missing (it was {kind})"
        if identity:
            if now is not self.value:
                kind = self._kind()
                return f"the {kind} {self.path} is another {kind.split()[-1]} (by identity)"
        elif type(now) is not type(self.value) or (now is not self.value and now != self.value):
            return f"the Python value {self.path} is {now!r} (it was {self.value!r})"
        return None


class Watch:
    """The values at the paths a step reads and writes (``accesses``), followed before its
    capture: what its plan is guarded on, and what the capture itself changed."""

    def __init__(self, found: Accesses) -> None:
        self.found = found
        self.before: dict[Path, tuple[Any, tuple[type, ...]]] = {}
        for path in found.paths():
            try:
                self.before[path] = path.follow()
            except _Unsafe:
                continue
        # the lists, dicts, sets and deques found, shallow copies (a dict's as a dict, the
        # others' items as a list): a step that puts a tensor of the capture (shape-only) into
        # one (``losses.append(loss)``) left it there, for good
        self.contents = {path: dict(value) if type(value) is dict else list(value)
                         for path, (value, _) in self.before.items()
                         if type(value) in _CONTAINERS}
        # the plain attributes and buffers of the modules among those values and their
        # submodules, as they were (``_module_paths``): a library's forward pre-hook assigns
        # ``setattr(module, name, ...)`` by a name no path of the step's code shows
        self.module_state = [(m, dict(m.__dict__), dict(m.__dict__.get("_buffers", {})))
                             for m in _modules_in(value for value, _ in self.before.values())]
        self.settled: list[Path] = []  # what the capture changed (``settle``)
        self.counted: list[tuple[Path, list[Any]]] = []  # of those, the increments
        self.appended: list[tuple[Path, list[Any]]] = []  # and the lists only appended to
        self.stored_unread: Path | None = None  # where the step kept an Unread (``settle``)
        # the paths of the dict items the capture left holding a tensor it computed, of each
        # dict it found at a path and left there (``settle``: ``state["h"] = h.detach()``)
        self.computed_items: dict[Path, tuple[Path, ...]] = {}

    def settle(self) -> None:
        """After the capture: note what it changed, and which of those are increments, then
        put every value back as it was (a replay, or the call run eagerly, makes the
        changes, each once)."""
        self._module_paths()
        self.settled = self.changed()
        self.computed_items = {
            path: tuple(path.then(False, k) for k, v in now.items()
                        # (type(v): isinstance reads __class__, which a string argument's
                        # stand-in kept there, guards.Unread, refuses with a GraphBreak)
                        if issubclass(type(v), Tensor) and type(v._data) is MetaArray)
            for path in self.settled if type(now := _follow_or_missing(path)) is dict
            and now is self.before[path][0]}
        # a string argument's stand-in kept by the step (``names.append(name)``, ``self.tag =
        # tag``): the plan would put it, not the string, there (planner.capture reads it)
        self.stored_unread = next((p for p in self.settled if _stores_unread(p)), None)
        if self.stored_unread is None:  # (isinstance would read a stand-in: GraphBreak)
            self.counted = self.increments(self.settled)
            self.appended = self.appends(self.settled)
        self.restore(self.settled)

    def changed(self) -> list[Path]:
        """The paths whose value the capture changed (shorter ones first)."""
        found = []
        for path, (value, _) in self.before.items():
            now = _follow_or_missing(path)
            if not same(value, now) or (path in self.contents and (
                    _holds_captured(now) or _items_changed(now, self.contents[path]))):
                found.append(path)
        return found

    def tensors_left(self) -> list[tuple[Path, Any, Tensor]]:
        """The paths the capture left holding another tensor than before, each with the
        value before and that tensor."""
        self._module_paths()
        found = []
        for path in self.changed():
            now = _follow_or_missing(path)
            if isinstance(now, Tensor):
                found.append((path, self.before[path][0], now))
        return found

    def holding(self, values: tuple[Any, ...]) -> list[Path]:
        """The paths now holding another value than before that is one of the tensors
        among ``values`` (a step's arguments: ``self.last_input = x``)."""
        ids = {id(v) for v in values if isinstance(v, Tensor)}
        return [path for path in self.changed() if id(_follow_or_missing(path)) in ids]

    def _module_paths(self) -> None:
        """Follow as paths of their own the attributes and buffers of the watched modules
        that the capture left holding a tensor it computed, where no path of the step's
        code reaches them (the old weight_norm hook's ``setattr(module, "weight", ...)`` in
        a compiled module's forward): put back with the rest, and stored by a replay. A
        capture's shape-only tensor was left there, for good."""
        known = {(id(owner), path.steps[-1][1]) for path in self.before
                 if path.steps and path.steps[-1][0] and (owner := path.owner()) is not None}
        for module, attrs, buffers in self.module_state:
            for now_items, before in ((module.__dict__, attrs),
                                      (module.__dict__.get("_buffers", {}), buffers)):
                for name, now in list(now_items.items()):
                    if (id(module), name) in known or before.get(name, MISSING) is now or \
                            not isinstance(now, Tensor) or type(now._data) is not MetaArray:
                        continue
                    path = Path("object", module, type(module).__name__, ((True, name),))
                    self.before[path] = (before.get(name, MISSING), (type(module),))
                    known.add((id(module), name))

    def restore(self, paths: list[Path] | None = None) -> None:
        """Put back the values found before the capture at ``paths`` (default: all that
        changed), so that the call can run eagerly from the state it met."""
        for path in self.changed() if paths is None else paths:
            value = self.before[path][0]
            if path.steps and path.steps[-1][0] is None:  # a length: refill the container
                container = path.prefix(-1)
                if container in self.contents:
                    try:
                        _refill(container.follow()[0], self.contents[container])
                    except Exception:  # noqa: BLE001, S112 - the container is gone
                        pass
                continue
            try:
                now = path.follow()[0]
                if not same(value, now):
                    path.assign(value)
                elif path in self.contents:
                    _refill(now, self.contents[path])
            except Exception:  # noqa: BLE001, S112 - the path is gone: nothing to put back
                continue

    def appends(self, paths: list[Path]) -> list[tuple[Path, list[Any]]]:
        """Those of ``paths`` that are lists or deques the capture only appended to
        (``events.append("step")``), or sets it only added to, and that the step uses by their
        mutators alone, each with the items it added, where these are constants (numbers,
        strings, None, tuples of them: the same objects at each call are what the step would
        add): added again after each replay, as torch.compile replays such mutations."""
        found = []
        for path in paths:
            before = self.contents.get(path)
            if type(before) is not list or self.before[path][0] is not (
                    now := _follow_or_missing(path)):
                continue
            # a list the step uses otherwise than by its mutators (``len(seen)``, a loop over
            # it, an argument of a call), or an object holding it: its Python may depend on
            # the items, which a replay does not run
            if any(path.prefix(i) in self.found.escapes for i in range(len(path.steps) + 1)):
                continue
            if type(now) is set:
                had = {id(item) for item in before}
                items = [item for item in now if id(item) not in had]
                kept = len(now) - len(items) == len(before)
            else:
                items = list(now)[len(before):]
                kept = all(a is b for a, b in zip(now, before))
            if items and kept and all(guarded_kind(item) == "value" for item in items):
                found.append((path, items))
        return found

    def appended_paths(self) -> list[Path]:
        """The lists ``appended`` found, and their lengths: what a replay's appends change
        (guarded by type only)."""
        return [p for path, _ in self.appended for p in (path, path.then(None, "len"))]

    def increments(self, paths: list[Path]) -> list[tuple[Path, list[Any]]]:
        """Those of ``paths`` that the step only adds constants to (``self.n += 1``) and the
        capture changed by exactly those: each with its constants, to add at every replay as
        the step would (a number: its type is guarded, never its value)."""
        found = []
        for path in paths:
            deltas = self.found.increment_only(path)
            value = self.before[path][0]
            if deltas is None or type(value) not in (int, float):
                continue
            for delta in deltas:
                value = value + delta
            try:
                now, _ = path.follow()
            except _Unsafe:
                continue
            if type(now) is type(value) and now == value:
                found.append((path, deltas))
        return found

    def escaped_modules(self) -> list[Module]:
        """The modules the step uses whole without calling them (``for m in layers``, a
        ModuleList handed to a helper): planner.compile guards their structure as a captured
        module's (a module appended to the list, or one replaced, captures again)."""
        found: dict[int, Module] = {}
        for path in self.found.escapes:
            try:
                value, _ = path.follow()
            except _Unsafe:
                continue
            if isinstance(value, Module):
                found.setdefault(id(value), value)
        return list(found.values())

    def guards(self, increments: list[Path]) -> list[Guard]:
        """The values read (not those only written) that the plan depends on; of the paths
        the step only increments, the type."""
        out = []
        for path in dict.fromkeys(self.found.reads):
            hit = self.before.get(path)
            if hit is not None and guarded_kind(hit[0]) is not None:
                out.append(Guard(path, hit[0], hit[1], path not in increments))
            elif hit is not None and path in self.found.expanded and isinstance(hit[0], Module):
                out.append(Guard(path, hit[0], hit[1], by_identity=True))
            elif hit is not None and _held(path, *hit):
                out.append(Guard(path, hit[0], hit[1], by_identity=True))
        return out


# what a plan holds of the objects it reads by a path, so that another object there (a global
# ``model`` rebound to a new model, ``opt`` to a new optimizer, ``loss_fn`` to another
# function) must capture again: a module's parameters and buffers and its forward, an
# optimizer's parameters and state, a scheduler's, the code of a function it ran
_HELD = (Module, Optimizer, LRScheduler, Generator, types.FunctionType, types.MethodType,
         types.BuiltinFunctionType, functools.partial)


def _modules_in(values: Any) -> list[Module]:
    """The modules among ``values`` and all their submodules, each once."""
    found: dict[int, Module] = {}
    for value in values:
        if isinstance(value, Module) and id(value) not in found:
            for m in value.modules():
                found.setdefault(id(m), m)
    return list(found.values())


def _held(path: Path, value: Any, seen: tuple[type, ...]) -> bool:
    """Whether the value read at ``path`` is guarded by identity as an object the plan holds
    (``_HELD``): not the step's own argument or ``self`` (fixed for a plan), nor what a path
    reaches through a Python module (``F.relu``: a library's, never rebound)."""
    if path.kind == "object" and not path.steps:
        return False
    if types.ModuleType in seen or (path.kind == "global" and not path.steps
                                    and isinstance(value, types.ModuleType)):
        return False
    return isinstance(value, _HELD)


def _holds_captured(container: list[Any] | dict[Any, Any]) -> bool:
    """Whether a list or dict holds a tensor of a capture (its data shape-only), or a string
    argument's stand-in (``Unread``)."""
    values = container.values() if type(container) is dict else container
    return any(type(v) is Unread or (isinstance(v, Tensor) and type(v._data) is MetaArray)
               for v in values)


def _stores_unread(path: Path) -> bool:
    """Whether the value at ``path`` is a string argument's stand-in (``Unread``) or a
    list, tuple, set, deque or dict holding one."""
    now = _follow_or_missing(path)
    if type(now) is Unread:
        return True
    if type(now) not in _CONTAINERS and type(now) is not tuple:
        return False
    values = now.values() if type(now) is dict else now
    return any(type(v) is Unread for v in values)


def _unread(self: Any, *args: Any, **kwargs: Any) -> Any:
    index = object.__getattribute__(self, "index")
    raise GraphBreak(f"the step reads its string argument {index}")


class Unread:
    """A string argument the plan must not depend on, in its place during a capture
    (planner.capture): any use of it (comparing, hashing, formatting, its attributes,
    isinstance's ``__class__``) is a GraphBreak, on which planner.compile captures with the
    string as a constant instead."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        object.__setattr__(self, "index", index)

    __getattribute__ = __setattr__ = __delattr__ = _unread
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _unread
    __str__ = __repr__ = __format__ = __bytes__ = __bool__ = __len__ = __iter__ = _unread
    __getitem__ = __contains__ = __add__ = __radd__ = __mul__ = __rmul__ = _unread
    __mod__ = __rmod__ = __reduce__ = __reduce_ex__ = __copy__ = __deepcopy__ = _unread
    __fspath__ = __index__ = __int__ = __float__ = __call__ = __dir__ = _unread


# the containers whose items a Watch follows (a method call changes them in place)
_CONTAINERS = (list, dict, set, collections.deque)


def _items_changed(now: Any, contents: list[Any] | dict[Any, Any]) -> bool:
    """Whether a list, deque or set the step reads holds other items than before its
    capture (a method call changed it in place: ``seen.append(n)``, ``queue.pop()``,
    ``names.add(k)``), which a replay would not do. A dict's entries are paths of their own
    (``stats["n"] = n``)."""
    if type(contents) is not list or type(now) not in _CONTAINERS or type(now) is dict:
        return False
    if len(now) != len(contents):
        return True
    if type(now) is set:
        return {id(item) for item in now} != {id(item) for item in contents}
    return any(a is not b for a, b in zip(now, contents))


def _refill(container: Any, contents: list[Any] | dict[Any, Any]) -> None:
    if type(container) is list:
        container[:] = contents
    elif type(container) is dict:
        container.clear()
        container.update(contents)
    else:  # a set or deque, from its items
        container.clear()
        append_items_to(container, contents)


def _follow_or_missing(path: Path) -> Any:
    try:
        return path.follow()[0]
    except _Unsafe:
        return MISSING


def carried_misfit(t: Any, device: str, roots: frozenset[int], args: tuple[Any, ...] = (),
                   written: tuple[int, ...] = ()) -> str | None:
    """Why ``t``, found at a carried tensor slot's path, is not what its plan reads (None:
    it is; its shape, dtype and requires_grad are guarded as any tensor slot's): no tensor,
    on another device, out of C order (a plan bakes in the layouts it read), or sharing the
    memory (``roots``) of another tensor the plan reads or writes, or of an argument the
    step writes in place (positions ``written``: eager mode's later reads of ``t`` see the
    write, a plan's read of its state does not)."""
    if not isinstance(t, Tensor):
        return "is no tensor"
    if t.device != device:
        return f"is on {t.device} (it was on {device})"
    if not t._data.flags.c_contiguous:
        return "is not contiguous"
    root = memory_root(t._data)
    if root in roots or any(memory_root(args[i]._data) == root for i in written):
        return "shares memory with another tensor the step reads or writes"
    return None


def found_at(path: Path) -> Any:
    """The value at ``path`` now (MISSING: none, or a step there is not followed): a carried
    tensor slot's (planner.capture.Slot.path), read and guarded at each call."""
    return _follow_or_missing(path)


def append_items(path: Path, items: list[Any]) -> None:
    """The step's appends to the list or deque (adds to the set) at ``path``, made after a
    replay."""
    append_items_to(path.follow()[0], items)


def append_items_to(container: Any, items: list[Any]) -> None:
    if type(container) is set:
        container.update(items)
    else:
        container.extend(items)


def add_constants(path: Path, deltas: list[Any]) -> None:
    """The step's ``path += delta`` stores, made after a replay."""
    value, _ = path.follow()
    for delta in deltas:
        value = value + delta
    path.assign(value)
