"""A plan's steps as one generated, straight-line Python function: the interpreter's fast path.

A small plan spends more time in the interpreter than in numpy: a loop that looks each step's
primitive up, builds its argument list and checks its result costs a few microseconds a step,
about as much as the numpy call itself. So ``build_program`` writes the schedule out as Python
source, one assignment a step over local variables, with every primitive's ``impl``, attribute
and dtype bound once, and compiles it. What the result check can never catch is left out: when
the inputs and state are plain numpy arrays of the planned dtypes and shapes (checked once a
call), a ufunc, view, matmul or sum of them has the planned type and dtype, which the plan's
build proves by running the same numpy call on tiny arrays. Anything else falls back to the
registry's ``impl`` and the full check, and a call whose inputs are not plain arrays runs a
second, fully checked program, which is the reference interpreter's loop written out.

The source never holds text of the plan: buffers are ``b<int>`` locals and indices are ints
(``lit``, ``_Source.buf``: only a true ``int`` is written), every other value of the plan is a
global bound through ``_Source.name`` under a name the generator makes. A kernel step called
through its object entry first compares its arguments' (shape, dtype) with the signature
``Executable.kernel_signature`` proved to hold every element the kernel addresses.

Memory follows the plan's schedule (planner.schedule): a buffer is deleted after its
last reader, and an elementwise step whose argument dies at that step writes its result into
that argument's storage (``out=``) when nothing else can see it.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime._device import array_module
from runtime.ops import prims
from runtime.ops.registry import REGISTRY, Primitive

from .opkinds import same_code, step_ufunc
from .steps import (
    CommitStep,
    ConstStep,
    InputStep,
    KernelStep,
    PrimitiveStep,
    RandStep,
    SourceStep,
    StateStep,
    Step,
)

if TYPE_CHECKING:
    from .plan import Plan

_ADD_REDUCE = np.add.reduce  # one bound method each (every attribute access makes a new one)
_MAX_REDUCE = np.maximum.reduce
_ADD_AT = np.add.at
# numpy 2 types Python scalars "weakly" (NEP 50): a ufunc's result dtype then depends on the
# dtypes of its array arguments only, so one probe on tiny arrays speaks for every call
_VALUE_FREE_DTYPES = int(np.__version__.split(".")[0]) >= 2

Program = Callable[[Any, list[Any], dict[int, Any], list[Any]], tuple[Any, list[Any]]]


# --- which registry primitives are plain numpy calls ------------------------------------------


def _sum_ref(xp: Any, x: Any, *, axes: tuple[int, ...], keepdim: bool) -> Any:
    return xp.sum(x, axis=axes, keepdims=keepdim)


def _mean_ref(xp: Any, x: Any, *, axes: tuple[int, ...], keepdim: bool) -> Any:
    return xp.mean(x, axis=axes, keepdims=keepdim)


def _is_sum(prim: Primitive) -> bool:
    return same_code(prim.impl, _sum_ref.__code__)


def _is_impl(prim: Primitive, name: str) -> bool:
    """Whether the primitive's impl is the function ``runtime.ops.prims.<name>``."""
    return prim.impl is getattr(prims, name, None)


# --- code generation --------------------------------------------------------------------------


def lit(v: Any) -> str:
    """An integer of the plan (a buffer id, an argument index, a slot) as source text: only a
    true ``int`` is ever written into the source, so no plan text can reach it."""
    if type(v) is not int:
        raise ValueError(f"plan value {v!r} is not an integer")
    return str(v)


_HINT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Source:
    """Lines of the generated function and the names they read (its globals).

    Every name in the source is the generator's own: buffers are ``b<int>`` locals, and any
    other value of the plan (an attribute, a constant, a scalar, a kernel) is bound as a global
    through ``name`` and referred to by a name made from a hint the generator chose."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_nd": np.ndarray}

    def buf(self, v: Any) -> str:
        """The local holding buffer ``v``."""
        if type(v) is not int or v < 0:
            raise ValueError(f"plan buffer id {v!r} is not a non-negative integer")
        return f"b{v}"

    def name(self, hint: str, value: Any) -> str:
        if not _HINT.fullmatch(hint):  # hints are the generator's: this never fires
            raise AssertionError(f"bad name hint {hint!r}")
        key = f"_{hint}"
        n = 0
        while key in self.names and self.names[key] is not value:
            n += 1
            key = f"_{hint}_{n}"
        self.names[key] = value
        return key

    def line(self, text: str) -> None:
        self.lines.append("    " + text)


def build_program(plan: Plan, checked: bool = False) -> Program:
    """The plan as ``run(plan, args, state, generators) -> (returns, writes)``: the fast
    program, or with ``checked`` the reference interpreter's exact steps and checks."""
    xp = np if plan.device == "cpu" else array_module(plan.device)
    fast = not checked and xp is np
    src = _source(plan, xp)
    _emit_registry_check(src, plan)
    _emit_sources(src, plan, fast)
    schedule = plan.schedule
    known = _Known(_typed_values(plan) if fast else set(), set())
    dropped = _dropped_expands(plan) if fast else frozenset()
    for i, s in enumerate(plan.steps):
        _emit_step(src, plan, s, known, schedule.inplace.get(i) if fast else None, dropped)
        for v in schedule.frees[i]:
            src.line(f"del {src.buf(v)}")
    writes = ", ".join(f"({lit(slot)}, {'None' if b == -1 else src.buf(b)})"
                       for slot, b in plan.writes)
    src.line(f"return {_template(src, plan.returns)}, [{writes}]")
    if fast:
        executable = plan.executable
        src.names["_checked"] = lambda p, a, st, g: executable.program(checked=True)(p, a, st, g)
    return _compiled(src, "run(plan, args, state, generators)",
                     f"<plan program {'checked' if checked else 'fast'}>")


def _source(plan: Plan, xp: Any) -> _Source:
    src = _Source()
    src.names.update(_fix=_fix_numpy if xp is np else _fix_other, _xp=xp,
                     _kernel_call=plan.executable.kernel_call,
                     _rebuilt=plan.executable.rebuilt)
    return src


def _compiled(src: _Source, signature: str, filename: str) -> Any:
    text = f"def {signature}:\n" + "\n".join(src.lines) + "\n"
    namespace = dict(src.names)
    exec(compile(text, filename, "exec"), namespace)
    fn = namespace[signature.split("(")[0]]
    fn.source = text
    return fn


# where a step function finds what the plan's sources read (buffers are non-negative ids)
ARGS, STATE, GENERATORS = -1, -2, -3
StepFunction = Callable[[dict[int, Any]], None]


def step_functions(plan: Plan) -> list[StepFunction]:
    """One generated function a step, for an executor that runs the steps in any order the
    schedule's DAG allows: ``f(env)`` reads the step's buffer arguments from ``env`` (buffer
    id -> array; the run's arguments, state and generators under ``ARGS``, ``STATE`` and
    ``GENERATORS``) and stores its outputs there. It frees nothing: the caller drops a buffer
    once its ``schedule.readers`` count of steps have run, unless ``schedule.needed`` holds it.
    The same emitters as the straight-line program write each function (fast calls where the
    plan proves them, reuse of dying storage only where ``schedule.inplace_concurrent`` allows
    it); an input or state value is checked (``fetch``) and made a plain array of its dtype."""
    xp = np if plan.device == "cpu" else array_module(plan.device)
    fast = xp is np
    schedule = plan.schedule
    known = _Known(_typed_values(plan) if fast else set(), set())
    dropped = _dropped_expands(plan) if fast else frozenset()
    functions = []
    for i, s in enumerate(plan.steps):
        src = _source(plan, xp)
        for v in dict.fromkeys(s.buffers):
            src.line(f"{src.buf(v)} = env[{lit(v)}]")
        if isinstance(s, (InputStep, StateStep)):
            _emit_fetch(src, plan, s)
        elif isinstance(s, ConstStep):
            src.line(f"{src.buf(s.out)} = {src.name(f'c{lit(s.out)}', s.value)}")
        else:
            if isinstance(s, RandStep):
                src.line(f"generators = env[{GENERATORS}]")
            _emit_step(src, plan, s, known, schedule.inplace_concurrent.get(i)
                       if fast else None, dropped)
        for o in s.outputs:
            src.line(f"env[{lit(o)}] = {src.buf(o)}")
        functions.append(_compiled(src, "step(env)", f"<plan step {i}>"))
    return functions


def _emit_fetch(src: _Source, plan: Plan, s: InputStep | StateStep) -> None:
    """An input or state value from the env, checked, as a plain array of its dtype."""
    container, kind, key = ((ARGS, "argument", s.index) if isinstance(s, InputStep)
                            else (STATE, "state slot", s.slot))
    shape, dtype = plan.schedule.metas[s.out]
    src.names["_fetch"] = fetch
    dt = src.name(f"t{lit(s.out)}", dtype)
    src.line(f"{src.buf(s.out)} = _fix(_fetch(env[{container}], {lit(key)}, "
             f"{src.name('what', f'{kind} {key}')}, {src.name(f'shape{lit(s.out)}', shape)}, "
             f"{dt}), {dt})")


def _dropped_expands(plan: Plan) -> frozenset[int]:
    """The schedule's broadcast-only expands, while every reader of them is still a ufunc
    step (a primitive replaced in the registry since the plan was built keeps them all)."""
    schedule = plan.schedule
    readers = (plan.steps[j] for v in schedule.broadcast_only
               for j in schedule.consumers[schedule.producer[v]])
    if all(step_ufunc(r) is not None for r in readers):
        return schedule.broadcast_only
    return frozenset()


def _emit_registry_check(src: _Source, plan: Plan) -> None:
    """The registry stays the one source of each primitive: a program checks on entry that
    every primitive it was built from is still the registered one (a few identity tests),
    and is rebuilt when one was replaced."""
    ops = sorted({s.name for s in plan.steps if isinstance(s, PrimitiveStep)})
    if not ops:
        return
    src.names["_R"] = REGISTRY
    prims_used = [REGISTRY[op] for op in ops]
    cond = " or ".join(f"_R[{src.name('op', p.name)}] is not {src.name('p', p)}"
                       for p in prims_used)
    src.line(f"if {cond}:")
    src.line("    return _rebuilt()(plan, args, state, generators)")


def _emit_sources(src: _Source, plan: Plan, fast: bool) -> None:
    """Bind inputs, state reads and constants. The fast program tests that inputs and state
    are plain numpy arrays of the planned dtypes and shapes (one test a value), else runs the
    checked one, which checks each value and says which is wrong (``fetch``)."""
    metas = plan.schedule.metas
    sources = [(v, "args", "argument", i) for i, v in plan.inputs]
    sources += [(v, "state", "state slot", slot) for slot, v in plan.reads]
    if fast and sources:
        src.line("try:")
        for v, container, _, key in sources:
            src.line(f"    {src.buf(v)} = {container}[{lit(key)}]")
        src.line("except LookupError:")
        src.line("    return _checked(plan, args, state, generators)")
        cond = " or ".join(
            f"{b}.__class__ is not _nd or {b}.dtype is not {src.name(f't{i}', metas[v][1])} "
            f"or {b}.shape != {src.name(f'shape{i}', metas[v][0])}"
            for b, v, i in ((src.buf(v), v, lit(v)) for v, *_ in sources))
        src.line(f"if {cond}:")
        src.line("    return _checked(plan, args, state, generators)")
    elif sources:
        src.names["_fetch"] = fetch
        for v, container, kind, key in sources:
            shape, dtype = metas[v]
            src.line(f"{src.buf(v)} = _fetch({container}, {lit(key)}, "
                     f"{src.name('what', f'{kind} {key}')}, {src.name(f'shape{lit(v)}', shape)}, "
                     f"{src.name(f't{lit(v)}', dtype)})")
    for buf, value in plan.consts.items():
        src.line(f"{src.buf(buf)} = {src.name(f'c{lit(buf)}', value)}")


def fetch(container: Any, key: int, what: str, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """``container[key]``, an array of the planned shape and dtype (a plan's kernels and fast
    steps rely on both), else a ValueError naming the value."""
    try:
        value = container[key]
    except (LookupError, TypeError):
        raise ValueError(f"plan {what} is missing") from None
    got_shape, got_dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if got_shape is None or got_dtype is None:
        raise ValueError(f"plan {what}: expected an array of shape {shape} and dtype {dtype}, "
                         f"got {type(value).__name__}")
    if tuple(got_shape) != shape or got_dtype != dtype:
        raise ValueError(f"plan {what}: expected shape {shape} and dtype {dtype}, got shape "
                         f"{tuple(got_shape)} and dtype {got_dtype}")
    return value


def _typed_values(plan: Plan) -> set[int]:
    """Buffers the fast program knows to be plain numpy arrays of their planned dtype: inputs
    and state (checked on entry), constants that are such arrays; steps add their outputs."""
    metas = plan.schedule.metas
    typed = {b for _, b in plan.inputs} | {b for _, b in plan.reads}
    typed |= {b for b, v in plan.consts.items()
              if type(v) is np.ndarray and v.dtype == metas[b][1]}
    return typed


@dataclass
class _Known:
    """What the fast program knows of its values before running: which are plain numpy
    arrays of their planned dtype, and which of those are C-contiguous."""

    typed: set[int]
    contiguous: set[int]


def _emit_step(src: _Source, plan: Plan, s: Step, known: _Known, inplace: int | None,
               dropped: frozenset[int]) -> None:
    """A step's lines: none for a value bound before the run (``_emit_sources``). ``known``
    is empty for the checked program, which then takes no fast path."""
    if isinstance(s, SourceStep):
        if isinstance(s, RandStep):
            src.line(f"{src.buf(s.out)} = {src.name(f'draw{lit(s.out)}', s.draw)}"
                     f"(generators[{lit(s.generator)}])")
            if s.device == "cpu":
                known.typed.add(s.out)
                known.contiguous.add(s.out)
        return
    if isinstance(s, KernelStep):
        if not _emit_direct_kernel(src, plan, s, known):
            _emit_kernel(src, s)
        known.typed.update(s.outputs)
        known.contiguous.update(s.outputs)  # reshaped np.empty arrays
        return
    assert isinstance(s, PrimitiveStep)
    if not _emit_fast(src, plan, s, known, inplace, dropped):
        _emit_generic(src, s)
    known.typed.add(s.out)  # checked, or proved by the probe


def _emit_kernel(src: _Source, s: KernelStep) -> None:
    """A kernel step: ``Executable.kernel_call``'s callable for it, fetched once per run (the
    module compiles on first use), returning the step's outputs."""
    args = ", ".join(src.buf(v) for _, v in s.args)
    outs = "".join(f"{src.buf(o)}, " for o in s.outputs)
    src.line(f"{outs}= _kernel_call({src.name(f'step{lit(s.out)}', s)})({args})")


def _emit_direct_kernel(src: _Source, plan: Plan, s: KernelStep, known: _Known) -> bool:
    """A kernel step as its compiled entry called on the array objects themselves: inputs
    known to be arrays of their planned dtype (made C-contiguous unless known to be), fresh
    outputs of the kernel's shapes, all bound to locals for the call. False where the kernel
    has no such entry (it splits across threads) or an input's type is not known."""
    from codegen.jit import check_arrays  # loaded already: the plan's kernels compiled

    bufs = [v for _, v in s.args]
    if s.device != "cpu" or isinstance(s, CommitStep) or any(v not in known.typed for v in bufs):
        return False  # a commit kernel runs at write-back (Executable.kernel_call)
    entry = plan.executable.module().object_entry(s.kernel)
    if entry is None:
        return False
    fn, addresses, outer = entry
    names = []
    for j, v in enumerate(bufs):
        if v in known.contiguous:
            names.append(src.buf(v))
        else:
            # asarray, not ascontiguousarray: that one makes a 0-d array 1-d
            src.line(f"_in{j} = {src.name('asarray', np.asarray)}({src.buf(v)}, None, 'C')")
            names.append(f"_in{j}")
    # the test that keeps the call memory-safe: each input's (shape, dtype) is the
    # signature's, which holds every element the kernel addresses (outputs are made here).
    # A shape comparison and a dtype identity test an argument; a dtype that is equal but not
    # the same object takes the slow path, which raises only on a real difference
    signature = plan.executable.kernel_signature(s)
    n = lit(s.out)
    tests = []
    for j, (a, (shape, dtype)) in enumerate(zip(names, signature)):
        tests.append(f"{a}.shape != {src.name(f'shape{n}_{j}', shape)} "
                     f"or {a}.dtype is not {src.name(f't{n}_{j}', dtype)}")
    src.names["_check_args"] = check_arrays
    src.line(f"if {' or '.join(tests)}:")
    src.line(f"    _check_args({src.name(f'kernel{n}', s.kernel.name)}, "
             f"{src.name(f'signature{n}', signature)}, [{', '.join(names)}])")
    outs = []
    for j, (shape, dtype, _) in enumerate(s.out_specs):
        src.line(f"_out{j} = {src.name('empty', np.empty)}({src.name('shape', tuple(shape))}, "
                 f"{src.name('t', np.dtype(dtype))})")
        outs.append(f"_out{j}")
    ids = ", ".join(f"_id({n})" for n in names + outs)
    src.names["_id"] = id
    src.line(f"{src.name(f'k{n}', fn)}({src.name('addresses', addresses)}({ids}), 0, "
             f"{lit(outer)})")
    for j, (o, (shape, _, plan_shape)) in enumerate(zip(s.outs, s.out_specs)):
        reshape = "" if tuple(shape) == tuple(plan_shape) else \
            f".reshape({src.name('shape', tuple(plan_shape))})"
        src.line(f"{src.buf(o)} = _out{j}{reshape}")
    temps = [n for n in names if n.startswith("_in")] + outs
    src.line(f"del {', '.join(temps)}")  # liveness stays the plan's: only b-names hold arrays
    return True


def _arg_list(src: _Source, s: Step) -> list[str]:
    return [src.buf(v) if kind == "buf" else src.name(f"s{lit(s.out)}", v)
            for kind, v in s.args]


@functools.cache
def _keywords(impl: Any) -> dict[str, str]:
    """The names impl takes by keyword, each mapped to itself (the signature's own string)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.name for p in inspect.signature(impl).parameters.values()
            if p.kind in kinds}


def _kwargs(src: _Source, s: PrimitiveStep) -> str:
    """Keyword text for the step's attributes: each name is the impl's own parameter name,
    never the plan's key; an attribute the signature does not name goes in as ``**attrs``."""
    n = lit(s.out)
    names = _keywords(REGISTRY[s.name].impl)
    parts = []
    for k, v in s.attrs.items():
        name = names.get(k) if isinstance(k, str) else None
        if name is None:
            return f", **{src.name(f'a{n}', s.attrs)}"
        parts.append(f", {name}={src.name(f'kw{n}', v)}")
    return "".join(parts)


def _emit_generic(src: _Source, s: PrimitiveStep) -> None:
    """The reference interpreter's step: the registry's impl, then the result check."""
    prim = REGISTRY[s.name]
    impl = src.name(f"f_{prim.name}", prim.impl)  # the registry's name for it, not the plan's
    args = "".join(", " + a for a in _arg_list(src, s))
    src.line(f"{src.buf(s.out)} = {impl}(_xp{args}{_kwargs(src, s)})")
    _emit_check(src, s)


def _emit_check(src: _Source, s: Step) -> None:
    """The interpreter's result check: a numpy array of the planned dtype."""
    dtype, out = src.name(f"t{lit(s.out)}", s.dtype.np), src.buf(s.out)
    src.line(f"if {out}.__class__ is not _nd or {out}.dtype is not {dtype}:")
    src.line(f"    {out} = _fix({out}, {dtype})")


def _emit_fast(src: _Source, plan: Plan, s: PrimitiveStep, known: _Known, inplace: int | None,
               dropped: frozenset[int]) -> bool:
    """A direct numpy call for a step whose result needs no check; False if there is none."""
    bufs = s.buffers
    if s.device != "cpu" or any(v not in known.typed for v in bufs):
        return False
    prim = REGISTRY.get(s.name)
    if prim is None:
        return False
    if s.name in _VIEWS and s.args[0][0] == "buf":
        _emit_view(src, s, known, dropped)
        return True
    if (_emit_where(src, plan, s, prim) or _emit_gather(src, plan, s, prim)
            or _emit_scatter(src, plan, s, prim) or _emit_mean(src, plan, s, prim)):
        return True
    call = _direct_call(src, plan, s, prim)
    if call is None:
        return False
    fn, args, kwargs = call
    plain = f"{fn}({', '.join(args)}{kwargs})"
    if s.op == "matmul" or all(v in known.contiguous for v in bufs):
        known.contiguous.add(s.out)  # numpy lays a result out as its arguments are
    if inplace is None:
        src.line(f"{src.buf(s.out)} = {plain}")
        return True
    # the same ufunc into the dying argument: equal values, and the layout numpy would pick
    # (C order) as long as every argument is C-contiguous; otherwise a new array as before
    checks = [f"{src.buf(v)}.flags.c_contiguous" for v in dict.fromkeys(bufs)
              if v not in known.contiguous]
    into = f"{fn}({', '.join(args)}{kwargs}, out={src.buf(inplace)})"
    src.line(f"{src.buf(s.out)} = {into} if {' and '.join(checks)} else {plain}" if checks
             else f"{src.buf(s.out)} = {into}")
    return True


_VIEWS = frozenset({"permute", "reshape", "expand"})


def _emit_view(src: _Source, s: PrimitiveStep, known: _Known, dropped: frozenset[int]) -> None:
    """permute, reshape and expand as the numpy calls their impls make; an expand that only
    ufuncs read is not made at all (they broadcast its source to the same values)."""
    x = s.args[0][1]
    out, bx, n = src.buf(s.out), src.buf(x), lit(s.out)
    if s.out in dropped:
        src.line(f"{out} = {bx}")
        if x in known.contiguous:
            known.contiguous.add(s.out)
        return
    if s.op == "permute":
        src.line(f"{out} = {bx}.transpose({src.name(f'dims{n}', s.attrs['dims'])})")
    elif s.op == "reshape":
        src.line(f"{out} = {bx}.reshape({src.name(f'shape{n}', s.attrs['shape'])})")
        if x in known.contiguous:
            known.contiguous.add(s.out)  # a reshape of a C-contiguous array is a view of it
    else:
        shape = src.name(f"shape{n}", s.attrs["shape"])
        src.line(f"{out} = {src.name('broadcast_to', np.broadcast_to)}({bx}, {shape})")


def _direct_call(src: _Source, plan: Plan, s: PrimitiveStep,
                 prim: Primitive) -> tuple[str, list[str], str] | None:
    """(callable, args, keyword text) of a numpy call equal to the step's impl whose result,
    probed on tiny arrays of the same dtypes, is an array of the planned dtype; or None."""
    if not s.shape or not _VALUE_FREE_DTYPES:
        return None  # a 0-d result may come back as a numpy scalar: keep the check
    metas = plan.schedule.metas
    ufunc = step_ufunc(s)
    if ufunc is not None:
        fn: Any = ufunc
        kwargs: dict[str, Any] = {}
    elif _is_impl(prim, "_matmul_impl"):
        dtypes = {metas[v][1] for k, v in s.args if k == "buf"}
        ndims = [len(metas[v][0]) for k, v in s.args if k == "buf"]
        if len(dtypes) != 1 or len(ndims) != 2 or 0 in ndims:
            return None  # the impl raises: let it
        fn, kwargs = np.matmul, {}
    elif _is_sum(prim) and s.dtype.is_floating_point:
        # np.sum of a plain ndarray is exactly this call (numpy's _wrapreduction)
        fn, kwargs = _ADD_REDUCE, {"axis": s.attrs["axes"], "keepdims": s.attrs["keepdim"]}
    elif _is_impl(prim, "_amax_impl") and all(math.prod(metas[v][0]) for v in s.buffers):
        fn, kwargs = _MAX_REDUCE, {"axis": s.attrs["axes"], "keepdims": s.attrs["keepdim"]}
    else:
        return None
    if not _probe_ok(fn, s, metas, kwargs):
        return None
    name = src.name(_callable_name(fn), fn)
    kw = "".join(f", {k}={src.name(f'{k}{lit(s.out)}', v)}" for k, v in kwargs.items())
    return name, _arg_list(src, s), kw


def _emit_where(src: _Source, plan: Plan, s: PrimitiveStep, prim: Primitive) -> bool:
    """``where(cond, a, b)`` with everything the impl decides from shapes and dtypes decided
    here: the same numpy calls in the same order, without the per-call bookkeeping."""
    if not _is_impl(prim, "_where_impl") or not s.shape or len(s.args) != 3:
        return False
    metas = plan.schedule.metas
    (kc, cond), (ka, a), (kb, b) = s.args
    if kc != "buf" or ka != "buf" or metas[cond][1] != np.bool_:
        return False
    a_probe = np.zeros(1, metas[a][1])
    b_probe = np.zeros(1, metas[b][1]) if kb == "buf" else b
    dt = np.result_type(a_probe, b_probe)
    shape = np.broadcast_shapes(metas[cond][0], metas[a][0],
                                metas[b][0] if kb == "buf" else np.shape(b))
    if dt != s.dtype.np or tuple(shape) != s.shape:
        return False
    masked = dt.kind == "f" and math.prod(metas[cond][0]) >= 1024 and metas[cond][0] == shape
    add_b = not (isinstance(b, (int, float)) and kb == "scalar" and b == 0)
    fn = src.name("where_masked" if masked else "where_plain",
                  _where_masked if masked else _where_plain)
    b_text = src.buf(b) if kb == "buf" else src.name(f"s{lit(s.out)}", b)
    extra = f", {add_b}" if masked else ""  # a bool the generator computed
    dtype = src.name(f"t{lit(s.out)}", dt)
    src.line(f"{src.buf(s.out)} = {fn}({src.buf(cond)}, {src.buf(a)}, {b_text}, {dtype}{extra})")
    return True


def _emit_gather(src: _Source, plan: Plan, s: PrimitiveStep, prim: Primitive) -> bool:
    """``getitem`` with array indices (advanced indexing: always a new array of x's dtype)
    as the one subscript its impl makes."""
    key = s.attrs.get("key")
    if (not _is_impl(prim, "_getitem_impl") or not s.shape or not isinstance(key, tuple)
            or not any(isinstance(k, prims.IndexArg) for k in key)):
        return False
    metas = plan.schedule.metas
    x, *idx = (v for _, v in s.args)
    if any(kind != "buf" for kind, _ in s.args) or metas[x][1] != s.dtype.np:
        return False
    src.line(f"{src.buf(s.out)} = {src.buf(x)}[{', '.join(_key_items(src, s, key, idx))},]")
    return True


def _emit_scatter(src: _Source, plan: Plan, s: PrimitiveStep, prim: Primitive) -> bool:
    """``index_backward`` with array indices as the two numpy calls its impl makes: zeros of
    the input's shape, then ``np.add.at`` (repeated indices accumulate)."""
    key = s.attrs.get("key")
    if (not _is_impl(prim, "_index_backward_impl") or not isinstance(key, tuple)
            or prims.is_basic_key(key) or any(kind != "buf" for kind, _ in s.args)):
        return False
    metas = plan.schedule.metas
    g, *idx = (v for _, v in s.args)
    if metas[g][1] != s.dtype.np or tuple(s.attrs["shape"]) != s.shape:
        return False
    items = ", ".join(_key_items(src, s, key, idx))
    n, out = lit(s.out), src.buf(s.out)
    shape, dtype = src.name(f"shape{n}", s.attrs["shape"]), src.name(f"t{n}", s.dtype.np)
    src.line(f"{out} = {src.name('zeros', np.zeros)}({shape}, dtype={dtype})")
    src.line(f"{src.name('add_at', _ADD_AT)}({out}, ({items},), {src.buf(g)})")
    return True


def _key_items(src: _Source, s: PrimitiveStep, key: tuple[Any, ...], idx: list[int]) -> list[str]:
    """An indexing key's items as source: an index argument's local, or a bound value."""
    items = []
    for k in key:
        if isinstance(k, prims.IndexArg):
            if type(k.position) is not int or not 0 <= k.position < len(idx):
                raise ValueError(f"step {s.out}: index argument {k.position!r} does not exist")
            items.append(src.buf(idx[k.position]))
        else:
            items.append(src.name(f"k{lit(s.out)}", k))
    return items
    return True


def _emit_mean(src: _Source, plan: Plan, s: PrimitiveStep, prim: Primitive) -> bool:
    """``mean`` of a float32/float64 array as numpy 2's ``np.mean`` computes it (a sum, then
    a division by the count), without its argument handling; a 0-d result keeps the check."""
    if not (_VALUE_FREE_DTYPES and same_code(prim.impl, _mean_ref.__code__)):
        return False
    if len(s.args) != 1 or s.args[0][0] != "buf":
        return False
    shape, dtype = plan.schedule.metas[s.args[0][1]]
    x, axes = s.args[0][1], s.attrs["axes"]
    count = math.prod(shape[a % len(shape)] for a in axes) if shape else 1
    if dtype not in _MEAN_DTYPES or not count or dtype != s.dtype.np:
        return False
    axes_name = src.name(f"axes{lit(s.out)}", axes)
    keep = src.name(f"keepdim{lit(s.out)}", s.attrs["keepdim"])
    count_name = src.name(f"count{lit(s.out)}", np.intp(count))
    src.line(f"{src.buf(s.out)} = {src.name('mean_float', _mean_float)}({src.buf(x)}, "
             f"{axes_name}, {keep}, {count_name})")
    if not s.shape:
        _emit_check(src, s)
    return True


_MEAN_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _callable_name(fn: Any) -> str:
    """A readable global name for fn in the generated source (add, matmul, add_reduce)."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"{owner.__name__}_{fn.__name__}"
    return getattr(fn, "__name__", "fn")


def _probe_ok(fn: Any, s: PrimitiveStep, metas: dict[int, Any], kwargs: dict[str, Any]) -> bool:
    """Whether fn on one-element arrays of the step's argument dtypes gives an array of the
    step's dtype (numpy's result type does not depend on sizes or, under NEP 50, values)."""
    probe = [np.zeros((1,) * len(metas[v][0]), metas[v][1]) if k == "buf" else v
             for k, v in s.args]
    try:
        with np.errstate(all="ignore"):
            out = fn(*probe, **kwargs)
    except Exception:  # the probe is only a question: any failure means "keep the check"
        return False
    return type(out) is np.ndarray and out.dtype == s.dtype.np


def _template(src: _Source, template: Any) -> str:
    """Python source building the filled return template (``("array", value)`` leaves)."""
    kind, body = template
    if kind == "node":
        return f"('array', {src.buf(body)})"
    if kind in ("tuple", "list"):
        tag = "'tuple'" if kind == "tuple" else "'list'"
        return f"({tag}, [{', '.join(_template(src, t) for t in body)}])"
    if kind == "dict":
        items = ", ".join(f"({src.name('key', k)}, {_template(src, t)})" for k, t in body)
        return f"('dict', [{items}])"
    return src.name("py", template)


# --- helpers the generated code calls ---------------------------------------------------------


def _where_masked(cond: np.ndarray, a: Any, b: Any, dt: np.dtype, add_b: bool) -> Any:
    """runtime.ops.prims._where_impl on a large float mask of the result's shape."""
    out = np.multiply(cond, a, dtype=dt)
    if add_b:
        out += np.multiply(~cond, b, dtype=dt)
    if not np.count_nonzero(np.isnan(out)):  # isnan(out).any(), in one C call
        return out
    return np.where(cond, a, b).astype(dt, copy=False)


def _mean_float(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, count: Any) -> Any:
    """numpy 2's ``np.mean(x, axis=axes, keepdims=keepdims)`` (numpy/_core/_methods.py
    ``_mean``) for a plain float32/float64 array and a nonzero count (a numpy intp)."""
    ret = _ADD_REDUCE(x, axes, None, None, keepdims, where=True)
    if isinstance(ret, np.ndarray):
        return np.true_divide(ret, count, out=ret, casting="unsafe", subok=False)
    return ret.dtype.type(ret / count)


def _where_plain(cond: np.ndarray, a: Any, b: Any, dt: np.dtype) -> Any:
    """runtime.ops.prims._where_impl on a small or broadcast mask."""
    return np.where(cond, a, b).astype(dt, copy=False)


def _fix_numpy(value: Any, dtype: np.dtype) -> Any:
    """A step's result as a numpy array of its planned dtype (numpy may return a scalar, or a
    promoted dtype)."""
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    if value.dtype != dtype:
        value = value.astype(dtype)
    return value


def _fix_other(value: Any, dtype: np.dtype) -> Any:
    """As ``_fix_numpy`` for a device array module: only the dtype is made right."""
    if value.dtype != dtype:
        value = value.astype(dtype)
    return value

