"""A plan's steps as one generated, straight-line Python function: the interpreter's fast path.

A small plan spends more time in the interpreter than in numpy: a loop that looks each step's
primitive up, builds its argument list and checks its result costs a few microseconds a step,
about as much as the numpy call itself. So ``build_program`` writes the schedule out as Python
source, one assignment a step over local variables, with every primitive's ``impl``, attribute
and dtype bound once, and compiles it. What the result check can never catch is left out: when
the inputs and state are plain numpy arrays of the planned dtypes and shapes (checked once a
call), a step calls its primitive's fast path (``Primitive.specialize``: declared next to the
impl in the registry, it guarantees an array of the planned dtype and shape for such
arguments). Anything else calls the registry's ``impl`` and the full check, and a call whose
inputs are not plain arrays runs a second, fully checked program, which is the reference
interpreter's loop written out.

The source never holds text of the plan: buffers are ``b<int>`` locals and indices are ints
(``lit``, ``Source.buf``: only a true ``int`` is written), every other value of the plan is a
global bound through ``Source.name`` under a name the generator makes. A kernel step called
through its object entry first compares its arguments' (shape, dtype) with the signature
``Executable.kernel_signature`` proved to hold every element the kernel addresses.

Memory follows the plan's schedule (planner.schedule): a buffer is deleted after its
last reader, and an elementwise step whose argument dies at that step writes its result into
that argument's storage (``out=``) when nothing else can see it.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import inspect
import marshal
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime._device import array_module, move_array
from runtime._dtype import bfloat16 as _BF16
from runtime._dtype import from_numpy_dtype
from runtime.ops.registry import REGISTRY, without_generated_code

from .source import Known, Program, Source, lit
from .steps import (
    AllReduceWaitStep,
    CommitStep,
    CommStep,
    ConstStep,
    ExternStep,
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

# a step's fast path not looked up yet (``_emit_fast`` asks ``specialize``): the fast path
# itself may be None
UNSPECIALIZED: Any = object()


def build_program(plan: Plan, checked: bool = False, native: bool = False,
                  in_place: bool = False, native_code: bool = True) -> Program | None:
    """The plan as ``run(plan, args, state, generators) -> (returns, writes)``: the fast
    program, or with ``checked`` the reference interpreter's exact steps and checks. With
    ``native``, the fast program with its runs of kernels and products made native calls
    (planner.native: it must run one call at a time), or None where the plan has no run;
    with ``in_place`` too, its runs may store parameter updates into the state's arrays
    (commits: Executable.program). Without ``native_code``, no native run, and no fast path
    that calls generated code (``registry.without_generated_code``: codegen.windows' compile
    on first use): a plan run while its fused plan compiles (planner.background)."""
    if not native_code:
        with without_generated_code():
            return build_program(plan, checked, False, in_place)
    fast = not checked and plan.device == "cpu"
    src = _source(plan)
    _emit_registry_check(src, plan)
    _emit_sources(src, plan, fast)
    schedule = plan.schedule
    typed = _typed_values(plan) if fast else set()
    known = Known(typed, _contiguous_consts(plan, typed))
    dropped = _dropped_expands(plan) if fast else frozenset()
    products = plan.executable.products() if plan.device == "cpu" else {}
    starts = []  # (first source line, step): which step an exception came from
    rest = _rest_before_blas(plan)

    def emit(i: int, fast_path: Any = UNSPECIALIZED) -> None:
        s = plan.steps[i]
        starts.append((len(src.lines) + 2, i))  # line 1 is the def
        if rest is not None and isinstance(s, ExternStep):
            src.line(f"{src.name('rest', rest)}()")
        _emit_step(src, plan, s, known, schedule.inplace.get(i) if fast else None, dropped,
                   products, fast_path)
        for v in schedule.frees[i]:
            src.line(f"del {src.buf(v)}")

    runs: list[Any] = []
    native = native and fast
    pure = False
    if native:
        from . import native as nat

        search = nat.Search()  # what each start tried teaches the next (find_run)
        module = plan.executable.module() if any(
            isinstance(s, KernelStep) for s in plan.steps) else None
        # a call with no effect outside it is made again by the plain program where a run's
        # test fails; one that draws or communicates runs the plain lines in its place
        pure = not any(isinstance(s, (RandStep, CommStep)) for s in plan.steps)
        executable = plan.executable
        src.names["_plain"] = lambda p, a, st, g: executable.plain_program()(p, a, st, g)
        # values of exactly their planned shape and dtype before any run tests them: inputs
        # and state (checked on entry), constants that are such arrays, and later what runs
        # make (their kernels', products' and window functions' own results)
        metas = schedule.metas
        exact = {b for _, b in plan.inputs} | {b for _, b in plan.reads} | {
            b for b, v in plan.consts.items() if type(v) is np.ndarray
            and v.dtype == metas[b][1] and v.shape == tuple(metas[b][0])}
    i = 0
    while i < len(plan.steps):
        # a check (whose failure makes the whole call again) only where it can be made again
        run = nat.find_run(plan, i, known, module, products, dropped, search, checks=pure,
                           commits=in_place) if native else None
        if run is None:  # its fast path as its member got it (nat.Search.fast), if it did
            emit(i, search.fast.pop(i, UNSPECIALIZED) if native else UNSPECIALIZED)
            i += 1
            continue
        runs.append(run)
        before = Known(set(known.typed), set(known.contiguous))
        if pure:  # where its test fails the plain program makes the call: no lines of its own
            starts.append((len(src.lines) + 2, i))
            nat.emit_run(src, plan, run, before, None, rest, exact)
            _after_run(plan, run, known)
            exact |= run.made()
            i = run.end
            continue
        first_line, first_start = len(src.lines), len(starts)
        for j in range(i, run.end):  # the plain lines, for where the run's tests fail
            emit(j)
        fallback = src.lines[first_line:]
        plain_starts = [(line - first_line, j) for line, j in starts[first_start:]]
        del src.lines[first_line:], starts[first_start:]
        starts.append((len(src.lines) + 2, i))
        at = nat.emit_run(src, plan, run, before, fallback, rest, exact)
        if at is not None:
            starts.extend((at + line - 2, j) for line, j in plain_starts)
        exact |= run.made()
        i = run.end
    if native and not runs:
        return None
    if runs:
        nat.place_runs(runs)
    writes = ", ".join(f"({lit(slot)}, {'None' if b == -1 else src.buf(b)})"
                       for slot, b in plan.writes)
    src.line(f"return {_template(src, plan.returns)}, [{writes}]")
    if fast:
        executable = plan.executable
        src.names["_checked"] = lambda p, a, st, g: executable.program(checked=True)(p, a, st, g)
    program = _compiled(src, "run(plan, args, state, generators)",
                        f"<plan program {'checked' if checked else 'native' if native else 'fast'}>",
                        plan.executable.code_cache)
    program.step_starts = starts
    return program


def _after_run(plan: Plan, run: Any, known: Known) -> None:
    """What the steps after a native run know of what it leaves: every value it made is an
    array of its planned dtype and shape (its tests passed, or the call was made again by the
    plain program), and what its calls made fresh is C-contiguous (a view of it may not be).
    The plain lines of its steps, which a pure program does not keep, would have told as
    much, costing a third of cnn's program build to write."""
    for m in run.members:
        if m.kind != "source":
            known.typed.update(m.step.outputs)
    known.contiguous.update(run.made())


def _rest_before_blas(plan: Plan) -> Callable[[], None] | None:
    """``codegen.pool.rest`` where the plan splits kernels across threads and calls BLAS: the
    pool's workers, spinning after a split kernel, would take cores the BLAS threads need."""
    kernels = [s.kernel for s in plan.steps if isinstance(s, KernelStep)]
    if plan.device != "cpu" or not kernels or not any(isinstance(s, ExternStep)
                                                      for s in plan.steps):
        return None
    module = plan.executable.module()
    if not any(module.splits(k) for k in kernels):
        return None
    from codegen.pool import rest

    return rest


def failing_step(exc: BaseException, programs: list[Program]) -> int | None:
    """The step of one of ``programs`` whose line raised ``exc`` (the innermost such frame),
    or None when none of them did."""
    starts = {p.__code__: p.step_starts for p in programs}  # type: ignore[attr-defined]
    found = None
    tb = exc.__traceback__
    while tb is not None:
        lines = starts.get(tb.tb_frame.f_code)
        if lines is not None:
            found = bisect.bisect_right(lines, (tb.tb_lineno, len(lines))) - 1
        tb = tb.tb_next
    return None if found is None or found < 0 else found


def _source(plan: Plan) -> Source:
    src = Source()
    src.names.update(_fix=_fix_numpy, _xp=np,
                     _kernel_call=plan.executable.kernel_call,
                     _rebuilt=plan.executable.rebuilt)
    return src


def _compiled(src: Source, signature: str, filename: str,
              code_cache: tuple[Any] | None = None) -> Any:
    """The function ``signature`` whose body is ``src``'s lines, its globals ``src``'s names.
    With ``code_cache`` (``(cache directory,)``), its code comes from the compiled-code cache
    (``_code``)."""
    text = f"def {signature}:\n" + "\n".join(src.lines) + "\n"
    namespace = dict(src.names)
    exec(code_of(text, filename, code_cache), namespace)
    fn = namespace[signature.split("(")[0]]
    fn.source = text
    return fn


def code_of(text: str, filename: str, code_cache: tuple[Any] | None = None) -> types.CodeType:
    """The code of generated source ``text``: with ``code_cache`` (``(cache directory,)``),
    from the compiled-code cache where the text is long enough to pay (``_code``)."""
    if code_cache is None or len(text) < KEEP_CODE_CHARS:
        return compile(text, filename, "exec")
    return _code(text, filename, code_cache[0])


# A program's bytecode is kept beside the plans (codegen.cache's PROGRAMS_DIR store, each
# entry signed with the cache's secret, so only code this user's processes compiled is
# loaded), keyed by the sha256 of Python's version, the file name and the text: a new process
# writes the same text (its names bound anew) and loads the code instead of compiling it
# again. Compiling gpt's program (95 KB of text) took 21 ms of its warm first replay (79 ->
# 53 ms), loading its 190 KB of bytecode 1; rnn's 5 ms. Texts shorter than KEEP_CODE_CHARS
# compile about as fast as a lookup.
KEEP_CODE_CHARS = 4096


def _code(text: str, filename: str, cache_dir: Any) -> types.CodeType:
    from codegen import cache

    h = hashlib.sha256(b"planner.program code\0")
    for part in (sys.version, filename, text):
        h.update(part.encode())
        h.update(b"\0")
    key = h.hexdigest()
    data = cache.stored_plan(key, cache_dir, folder=cache.PROGRAMS_DIR)
    if data is not None:
        try:
            code = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            code = None
        if type(code) is types.CodeType and code.co_filename == filename:
            return code
    code = compile(text, filename, "exec")
    cache.store_plan(key, marshal.dumps(code), cache_dir, folder=cache.PROGRAMS_DIR)
    return code


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
    fast = plan.device == "cpu"
    schedule = plan.schedule
    typed = _typed_values(plan) if fast else set()
    known = Known(typed, _contiguous_consts(plan, typed))
    dropped = _dropped_expands(plan) if fast else frozenset()
    products = plan.executable.products() if fast else {}
    functions = []
    for i, s in enumerate(plan.steps):
        src = _source(plan)
        for v in dict.fromkeys(s.buffers):
            src.line(f"{src.buf(v)} = env[{lit(v)}]")
        if isinstance(s, (InputStep, StateStep)):
            _emit_fetch(src, plan, s)
        elif isinstance(s, ConstStep):
            value = _on_device(s.value, s.device)
            src.line(f"{src.buf(s.out)} = {src.name(f'c{lit(s.out)}', value)}")
        else:
            if isinstance(s, RandStep):
                src.line(f"generators = env[{GENERATORS}]")
            _emit_step(src, plan, s, known, schedule.inplace_concurrent.get(i)
                       if fast else None, dropped, products)
        for o in s.outputs:
            src.line(f"env[{lit(o)}] = {src.buf(o)}")
        functions.append(_compiled(src, "step(env)", f"<plan step {i}>"))
    return functions


def _emit_fetch(src: Source, plan: Plan, s: InputStep | StateStep) -> None:
    """An input or state value from the env, checked, as a plain array of its dtype."""
    container, kind, key = ((ARGS, "argument", s.index) if isinstance(s, InputStep)
                            else (STATE, "state slot", s.slot))
    shape, dtype = plan.schedule.metas[s.out]
    src.names["_fetch"] = fetch
    dt = src.name(f"t{lit(s.out)}", dtype)
    fix = "_fix" if s.device == "cpu" else src.name("fix_device", _fix_other)
    src.line(f"{src.buf(s.out)} = {fix}(_fetch(env[{container}], {lit(key)}, "
             f"{src.name('what', f'{kind} {key}')}, {src.name(f'shape{lit(s.out)}', shape)}, "
             f"{dt}), {dt})")


def _dropped_expands(plan: Plan) -> frozenset[int]:
    """The schedule's broadcast-only expands, while every reader of them is still a ufunc
    step (a primitive replaced in the registry since the plan was built keeps them all)."""
    schedule = plan.schedule
    readers = (plan.steps[j] for v in schedule.broadcast_only
               for j in schedule.consumers[schedule.producer[v]])
    if all(r.ufunc is not None for r in readers):
        return schedule.broadcast_only
    return frozenset()


def _emit_registry_check(src: Source, plan: Plan) -> None:
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


def _emit_sources(src: Source, plan: Plan, fast: bool) -> None:
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
    devices = {s.out: s.device for s in plan.steps if isinstance(s, ConstStep)}
    for buf, value in plan.consts.items():
        value = _on_device(value, devices.get(buf, plan.device))
        src.line(f"{src.buf(buf)} = {src.name(f'c{lit(buf)}', value)}")


def _on_device(value: Any, device: str) -> Any:
    """A plan constant (a numpy array, as captured and serialized) on its step's device: a GPU
    plan copies its constants over once, when its program is built."""
    if device == "cpu" or not isinstance(value, np.ndarray):
        return value
    return move_array(value, device)


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


def _contiguous_consts(plan: Plan, typed: set[int]) -> set[int]:
    """The constants among ``typed`` that are C-contiguous: bound once, as they are, and
    never written (only buffers steps make are reused in place), they stay so. A native run
    then hands them over without an ``asarray`` a call (mlp_small's targets' class ids and
    its loss's scale)."""
    return {b for b, v in plan.consts.items() if b in typed and v.flags.c_contiguous}


def _emit_step(src: Source, plan: Plan, s: Step, known: Known, inplace: int | None,
               dropped: frozenset[int], products: dict[Step, Any],
               fast_path: Any = UNSPECIALIZED) -> None:
    """A step's lines: none for a value bound before the run (``_emit_sources``). ``known``
    and ``products`` are empty for the checked program, which then takes no fast path.
    ``fast_path``: the primitive's ``specialize`` result for this step where the caller has
    it already."""
    if isinstance(s, SourceStep):
        if isinstance(s, RandStep):
            src.line(f"{src.buf(s.out)} = {src.name(f'draw{lit(s.out)}', s.draw)}"
                     f"(generators[{lit(s.generator)}])")
            if s.device == "cpu":
                known.typed.add(s.out)
                known.contiguous.add(s.out)
        return
    if isinstance(s, CommStep):
        args = ", ".join(src.buf(v) for v in s.buffers)
        outs = "".join(f"{src.buf(o)}, " for o in s.outputs)
        src.line(f"{outs}= {src.name(f'comm{lit(s.out)}', s.call)}({args})")
        if isinstance(s, AllReduceWaitStep):  # views of one contiguous numpy bucket
            known.typed.update(s.outputs)
            known.contiguous.update(s.outputs)
        return
    if isinstance(s, KernelStep):
        if not _emit_direct_kernel(src, plan, s, known):
            _emit_kernel(src, s)
        known.typed.update(s.outputs)
        known.contiguous.update(s.outputs)  # reshaped np.empty arrays
        return
    assert isinstance(s, PrimitiveStep)
    product = products.get(s)
    wrapped = _bf16_impl(plan, s)
    if wrapped is not None:  # eager's bfloat16 compute: no fast path or product (planner.bf16)
        _emit_generic(src, s, wrapped)
    elif product is not None:
        _emit_product(src, plan, s, known, *product)
    elif not _emit_fast(src, plan, s, known, inplace, dropped, fast_path):
        _emit_generic(src, s)
    known.typed.add(s.out)  # checked, or proved by the probe


def _emit_kernel(src: Source, s: KernelStep) -> None:
    """A kernel step: ``Executable.kernel_call``'s callable for it, fetched once per run (the
    module compiles on first use), returning the step's outputs."""
    args = ", ".join(src.buf(v) for _, v in s.args)
    outs = "".join(f"{src.buf(o)}, " for o in s.outputs)
    src.line(f"{outs}= _kernel_call({src.name(f'step{lit(s.out)}', s)})({args})")


def _emit_direct_kernel(src: Source, plan: Plan, s: KernelStep, known: Known) -> bool:
    """A kernel step as its compiled entry called on the array objects themselves: inputs
    known to be arrays of their planned dtype (made C-contiguous unless known to be), fresh
    outputs of the kernel's shapes, all bound to locals for the call (a kernel split across
    threads: its ``split_entry``, which follows the thread count of each call). False where
    the kernel has neither or an input's type is not known."""
    from codegen.jit import check_arrays  # loaded already: the plan's kernels compiled

    bufs = [v for _, v in s.args]
    if s.device != "cpu" or isinstance(s, CommitStep) or any(v not in known.typed for v in bufs):
        return False  # a commit kernel runs at write-back (Executable.kernel_call)
    module = plan.executable.module(device=s.device)
    entry = module.object_entry(s.kernel)
    split = module.split_entry(s.kernel) if entry is None else None
    if entry is None and split is None:
        return False
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
    builtin = split or module.builtin_entry(s.kernel)
    if builtin is not None:  # the arrays handed over as they are (codegen.pyentry)
        src.line(f"{src.name(f'k{n}', builtin)}({', '.join(names + outs)})")
    else:
        fn, addresses, outer = entry
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


def _emit_product(src: Source, plan: Plan, s: PrimitiveStep, known: Known, call: Any,
                  product: Any) -> None:
    """A matmul (or matmul_add) step as its generated product (planner.products), in every
    program alike, so that a plan's products round the same way on every path. Where the
    operands are known to be numpy arrays of their planned dtype, a test of their shapes
    makes every address the product reads an element of its operand (it reads their layouts
    from the arrays), and it writes a fresh C-contiguous array of the step's shape; an
    addend is added by the product where its columns are contiguous, else after it (the
    same numbers: the product is rounded, then the addend added); numpy runs where the test
    fails. Elsewhere ``checked_product`` tests it all, then the result is checked as the
    interpreter does."""
    bufs = s.buffers
    n = lit(s.out)
    out = src.buf(s.out)
    names = [src.buf(v) for v in bufs]
    if any(v not in known.typed for v in bufs):
        fn = src.name(f"product{n}", checked_product(call, product, REGISTRY[s.name]))
        src.line(f"{out} = {fn}({', '.join(names)})")
        _emit_check(src, s)
        return
    ba, bb = names[:2]
    src.names["_id"] = id
    src.line(f"if {ba}.shape == {src.name(f'shape{n}_0', call.a)} and "
             f"{bb}.shape == {src.name(f'shape{n}_1', call.b)}:")
    src.line(f"    {out} = {src.name('empty', np.empty)}({src.name(f'shape{n}', call.out)}, "
             f"{src.name(f't{n}', s.dtype.np)})")
    add = src.name("add", np.add)
    if call.spec.addend:  # by the product where the addend's columns are contiguous
        be = names[2]
        src.line(f"    if {be}.strides[-1] == {lit(s.dtype.np.itemsize)} and "
                 f"{be}.shape == {src.name(f'shape{n}_2', call.addend)}:")
        _emit_product_call(src, n, product, ba, bb, out, be, "        ")
        src.line("    else:")
        _emit_product_call(src, n, product.without_addend, ba, bb, out, None, "        ",
                           "_alone")
        src.line(f"        {add}({out}, {be}, out={out})")
    else:
        _emit_product_call(src, n, product, ba, bb, out, None, "    ")
        if call.addend is not None:
            src.line(f"    {add}({out}, {names[2]}, out={out})")
    src.line("else:")
    matmul = f"{src.name('matmul', np.matmul)}({ba}, {bb})"
    src.line(f"    {out} = {add}({matmul}, {names[2]})" if call.addend is not None
             else f"    {out} = {matmul}")
    known.contiguous.add(s.out)


def _emit_product_call(src: Source, n: str, product: Any, ba: str, bb: str, out: str,
                       be: str | None, indent: str, tag: str = "") -> None:
    """The product's call: across the intra-op threads where it is large (Product.run), else
    its entry on this thread: as a builtin taking the arrays (``Product.builtin``), or through
    ctypes with its words' address (the program holds the product, which holds its words)."""
    args = f"{ba}, {bb}, {out}" + ("" if be is None else f", {be}")
    if product.split:
        src.line(f"{indent}{src.name(f'product{n}{tag}', product.run)}({args})")
        return
    src.name(f"holds{n}{tag}", product)
    if product.builtin is not None:  # the arrays handed over as they are (codegen.pyentry)
        src.line(f"{indent}{src.name(f'product{n}{tag}', product.builtin)}({ba}, {bb}, {out}, "
                 f"{out if be is None else be})")
        return
    src.line(f"{indent}{src.name(f'product{n}{tag}', product.entry)}(_id({ba}), _id({bb}), "
             f"_id({out}), _id({out if be is None else be}), "
             f"{src.name(f'dims{n}{tag}', product.dims)})")


def checked_product(call: Any, product: Any, prim: Any) -> Callable[..., Any]:
    """``f(a, b[, e])``: the product (plus the addend: ``Product.apply``) where ``a`` and
    ``b`` are numpy arrays of its dtype and shapes, else the primitive's impl."""
    dtype = np.dtype(call.spec.dtype)

    def run(a: Any, b: Any, *addend: Any) -> Any:
        if not (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == dtype
                and b.dtype == dtype and a.shape == call.a and b.shape == call.b):
            return prim.impl(np, a, b, *addend)
        return product.apply(a, b, call.out, *addend)

    return run


def _arg_list(src: Source, s: Step) -> list[str]:
    return [src.buf(v) if kind == "buf" else src.name(f"s{lit(s.out)}", v)
            for kind, v in s.args]


@functools.cache
def _keywords(impl: Any) -> dict[str, str]:
    """The names impl takes by keyword, each mapped to itself (the signature's own string)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p.name for p in inspect.signature(impl).parameters.values()
            if p.kind in kinds}


def _kwargs(src: Source, s: PrimitiveStep) -> str:
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


def _bf16_impl(plan: Plan, s: PrimitiveStep) -> Callable[..., Any] | None:
    """Eager mode's bfloat16 wrapper of the step's impl (``planner.bf16``), or None where
    the step has no bfloat16 operand (or is a view)."""
    metas = plan.schedule.metas
    # (a buffer the schedule does not know is refused where the step's line is written)
    if all(kind != "buf" or metas.get(v, (None, None))[1] != _BF16.np for kind, v in s.args):
        return None
    from .bf16 import eager_impl  # runtime.ops.dispatch: loaded after this module
    prim = REGISTRY[s.name]
    impl = eager_impl(prim, [(metas[v][0], from_numpy_dtype(metas[v][1])) if kind == "buf"
                             else v for kind, v in s.args])
    return None if impl is prim.impl else impl


def _emit_generic(src: Source, s: PrimitiveStep, impl_fn: Callable[..., Any] | None = None
                  ) -> None:
    """The reference interpreter's step: the registry's impl (or ``impl_fn``, the same
    impl wrapped), then the result check."""
    prim = REGISTRY[s.name]
    # the registry's name for it, not the plan's
    impl = src.name(f"f_{prim.name}", prim.impl if impl_fn is None else impl_fn)
    args = "".join(", " + a for a in _arg_list(src, s))
    xp = "_xp" if s.device == "cpu" else src.name("xp", array_module(s.device))
    src.line(f"{src.buf(s.out)} = {impl}({xp}{args}{_kwargs(src, s)})")
    _emit_check(src, s)


def _emit_check(src: Source, s: Step) -> None:
    """The interpreter's result check: an array of the planned dtype (numpy's on the CPU, a
    device array on a GPU: a step runs on the device of its own tensors)."""
    dtype, out = src.name(f"t{lit(s.out)}", s.dtype.np), src.buf(s.out)
    fix = "_fix" if s.device == "cpu" else src.name("fix_device", _fix_other)
    src.line(f"if {out}.__class__ is not _nd or {out}.dtype is not {dtype}:")
    src.line(f"    {out} = {fix}({out}, {dtype})")


def _emit_fast(src: Source, plan: Plan, s: PrimitiveStep, known: Known, inplace: int | None,
               dropped: frozenset[int], fast: Any = UNSPECIALIZED) -> bool:
    """The primitive's own fast path (``Primitive.specialize``) for a step whose arguments
    are plain arrays of their planned dtypes: its result needs no check. False if it has
    none. An expand only ufuncs read is not made at all (they broadcast its source to the
    same values)."""
    bufs = s.buffers
    if s.device != "cpu" or any(v not in known.typed for v in bufs):
        return False
    out = src.buf(s.out)
    if s.out in dropped:
        src.line(f"{out} = {src.buf(bufs[0])}")
        if bufs[0] in known.contiguous:
            known.contiguous.add(s.out)
        return True
    metas = plan.schedule.metas
    prim = REGISTRY[s.name]
    if fast is UNSPECIALIZED:
        fast = prim.specialize([metas[v] if kind == "buf" else v for kind, v in s.args],
                               s.attrs, (s.shape, s.dtype.np))
    if fast is None:
        return False
    fn = src.name(f"fast_{prim.name}", fast)
    args = ", ".join(_arg_list(src, s))
    if prim.extern or (all(v in known.contiguous for v in bufs) and (
            prim.ufunc is not None or prim.reduction or s.name == "reshape")):
        # matmul's result is C-contiguous; numpy lays a ufunc's or reduction's out as its
        # arguments are; a reshape of a C-contiguous array is a C-contiguous view of it
        known.contiguous.add(s.out)
    if inplace is None or fast is not prim.ufunc:
        src.line(f"{out} = {fn}({args})")
        return True
    # the same ufunc into the dying argument: equal values, and the layout numpy would pick
    # (C order) as long as every argument is C-contiguous; otherwise a new array as before
    checks = [f"{src.buf(v)}.flags.c_contiguous" for v in dict.fromkeys(bufs)
              if v not in known.contiguous]
    into = f"{fn}({args}, out={src.buf(inplace)})"
    src.line(f"{out} = {into} if {' and '.join(checks)} else {fn}({args})" if checks
             else f"{out} = {into}")
    return True


def _template(src: Source, template: Any) -> str:
    """Python source building the filled return template (``("array", value)`` leaves)."""
    kind, body = template
    if kind == "node":
        return f"('array', {src.buf(body)})"
    if kind == "item":  # Tensor.item() the step returns (planner.item_outputs)
        return f"('item', {_template(src, body)})"
    if kind == "copy":  # a returned constant: memory of its own at every call (passes)
        return f"('array', {src.buf(body[1])}.copy())"
    if kind in ("tuple", "list"):
        tag = "'tuple'" if kind == "tuple" else "'list'"
        return f"({tag}, [{', '.join(_template(src, t) for t in body)}])"
    if kind == "dict":
        items = ", ".join(f"({src.name('key', k)}, {_template(src, t)})" for k, t in body)
        return f"('dict', [{items}])"
    return src.name("py", template)


# --- helpers the generated code calls ---------------------------------------------------------


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

