"""Runs of a plan's kernels, products and window functions as one native call: the fast
program's inner loop taken out of Python where a plan is small.

Each kernel or product a fast program calls costs about a microsecond of Python around the
native call (its argument test, fresh outputs, locals bound and deleted), as much as the call
itself in a small plan. ``find_run`` finds a stretch of consecutive steps that are kernels,
products and sliding-window functions (``codegen.windows``, through their ``NativeForm``)
called on this thread (with the views between them and the sources the program bound
before), and ``emit_run`` writes it as one call of a ``codegen.pyentry.drive_builtin`` that
calls each entry in turn, the GIL released once for them all. A class-index check
(check_bounds over int64: cross-entropy's targets, an embedding's or a gather's indices) is
a record of the run too, in a plan that draws and communicates nothing: where it fails, the
run stops there (no later entry reads past an array) and the plain program makes the whole
call again, raising the check's own error.

What a run makes and nothing outside it reads lives in arrays made once, when the program is
built (``fixed``): placed by liveness in one arena that every run of the program shares
(arrays whose lives do not overlap share bytes, as the plain program's frees let numpy reuse
hot memory: without that, rnn's runs held 1.8 MB apart and ran 4% slower than the plain
program, with it 4% faster), at most ``MAX_FIXED_BYTES`` of it. The program that holds them
runs one call at a time (``native_first``); a concurrent call runs the plain program. What
leaves the run (read by a later step, written back or returned) is a fresh array every call,
made before the native call, as the plain program makes it. An argument from before the run
is tested in Python as the plain program tests it (its shape and dtype against the kernel's
signature or the product's operands; C-contiguity made for a kernel); where a test fails,
the plain program makes the whole call again (a plan that draws random numbers or
communicates, whose steps cannot run twice, has the plain lines of the run's steps in its
``else`` branch instead), so a run never calls an entry on an array it was not proved for. Everything a run's own arrays must satisfy (shapes,
contiguity, views that are views) is checked once, on the arrays themselves or on arrays laid
out as they will be, when the run is found.
"""

from __future__ import annotations

import ctypes
import functools
import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.ops.registry import REGISTRY

from .source import Known, Program, Source, lit
from .steps import CommitStep, KernelStep, PrimitiveStep, RandStep, SourceStep, Step

if TYPE_CHECKING:
    from .plan import Plan

# a check_bounds step's value (a placeholder: what the step returns where it does not raise)
CHECKED = np.asarray(True)
# whether fast programs make native runs (a switch for A/B measurements and tests)
ENABLED = True
# the most arena bytes a run's fixed arrays may need (a run needing more stays Python)
MAX_FIXED_BYTES = 4 << 20
# a run saves Python only where it makes at least this many native calls
MIN_CALLS = 2
# the members that are native calls: kernels, products, and the sliding-window functions of
# codegen.windows (which take the products' ABI: ``NativeForm``)
_CALLS = ("kernel", "product", "window", "check", "commit")
# the members that call a compiled kernel (a commit's stores into its state's arrays)
_KERNELS = ("kernel", "commit")


def native_first(native: Program, plain: Callable[[], Program]) -> Program:
    """The program a plan runs: ``native`` where no other call is running it (its fixed
    arrays are one call's), else the plain program (``plain()``: built on first need)."""
    lock = threading.Lock()
    acquire, release = lock.acquire, lock.release

    def run(plan: Any, args: list[Any], state: dict[int, Any], generators: list[Any]) -> Any:
        if acquire(False):
            try:
                return native(plan, args, state, generators)
            finally:
                release()
        return plain()(plan, args, state, generators)

    run.native = native  # type: ignore[attr-defined]
    run.plain_program = plain  # type: ignore[attr-defined]
    run.source = native.source  # type: ignore[attr-defined]
    return run


@dataclass
class _Member:
    index: int
    step: Step
    kind: str  # "kernel", "commit", "product", "window", "check", "view" or "source"
    # a product's ProductCall, a window function's NativeForm, a view's fast path, a
    # check's words (codegen.pyentry.check_words)
    call: Any = None
    product: Any = None  # a product's codegen.gemm.Product
    entry: tuple[int, int] | None = None  # a kernel's (address, outer)

    @functools.cached_property
    def inputs(self) -> list[int]:
        """The buffers its step reads (``Step.buffers``), listed once: a run's tests and its
        emission read them again and again, and a member serves every start tried."""
        return self.step.buffers


@dataclass
class _Root:
    """A fixed array a run makes: a kernel's output (``key``: its step and output), a
    product's or a window function's (or its scratch row: a negative ``buf``), placed in the
    program's arena at ``offset`` while it is live (run positions ``start`` to ``end``, its
    views' readers included)."""

    buf: int
    shape: tuple[int, ...]
    dtype: np.dtype
    start: int
    end: int
    key: tuple[int, int] | None = None
    plan_shape: tuple[int, ...] = ()
    offset: int = 0

    @property
    def nbytes(self) -> int:
        return -(-math.prod(self.shape) * self.dtype.itemsize // 64) * 64


@dataclass
class Run:
    """Consecutive steps ``members`` of a plan, run by one native call."""

    members: list[_Member]
    escaping: set[int] = field(default_factory=set)  # made fresh every call
    # views made in Python: of values from before the run (before its tests), and of its
    # fresh arrays (once they are made)
    outer_views: list[_Member] = field(default_factory=list)
    fresh_views: list[_Member] = field(default_factory=list)
    # values from before the run and views of them: the arguments its tests check
    external: set[int] = field(default_factory=set)
    # what stays inside the run: fixed arrays, placed by liveness in one arena (``place``)
    roots: list[_Root] = field(default_factory=list)
    fixed_views: list[_Member] = field(default_factory=list)
    fixed: dict[int, np.ndarray] = field(default_factory=dict)  # buffer -> array (placed)
    fixed_out: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)  # kernel shape
    peak: int = 0  # arena bytes it needs
    # set by ``emit_run``: its native call's slots, where the fixed arrays' begin, and what
    # the call keeps alive
    slots: np.ndarray | None = None
    first_fixed: int = 0
    held: list[Any] = field(default_factory=list)
    # set by ``_checked_run`` where a member's test failed on an array the run makes: the
    # step that made that array (its view chain's start), whose place decides the test
    cut_by: int | None = None

    @property
    def end(self) -> int:
        return self.members[-1].index + 1

    @property
    def calls(self) -> list[_Member]:
        return [m for m in self.members if m.kind in _CALLS]

    def made(self) -> set[int]:
        """What this run makes fresh of exactly its planned shape and dtype: the results of
        its calls that leave it (not views of them)."""
        return {o for m in self.calls for o in m.step.outputs if o in self.escaping}

    def fixed_buffers(self) -> list[int]:
        return [r.buf for r in self.roots] + [m.step.out for m in self.fixed_views]

    def fixed_outputs(self) -> list[tuple[int, int]]:
        return [r.key for r in self.roots if r.key is not None]

    def lay_out(self) -> None:
        """Offsets for the roots, first fit by liveness: arrays whose lives do not overlap
        share bytes (a kernel's output never shares its inputs': both are live at its
        position), as the plain program's frees let numpy reuse memory."""
        # the roots placed so far that may still be live, in placement order: one dead
        # before a root's start is dead before every later root's (placed by start), so it
        # leaves (rnn's 118-step run placed each of its roots against every one before it)
        active: list[tuple[_Root, int]] = []  # (root, its bytes)
        peak = 0
        for r in sorted(self.roots, key=lambda r: r.start):
            start, size = r.start, r.nbytes
            active = [(q, n) for q, n in active if q.end >= start]
            offset = 0
            for q, n in sorted(active, key=lambda a: a[0].offset):
                if offset + size <= q.offset:
                    break
                offset = max(offset, q.offset + n)
            r.offset = offset
            active.append((r, size))
            peak = max(peak, offset + size)
        self.peak = peak

    def place(self, arena: np.ndarray) -> list[np.ndarray]:
        """The fixed arrays in ``arena`` (64-byte aligned, at least ``peak`` bytes), in the
        order of ``fixed_buffers`` then ``fixed_outputs``."""
        for r in self.roots:
            size = math.prod(r.shape) * r.dtype.itemsize
            a = arena[r.offset:r.offset + size].view(r.dtype).reshape(r.shape)
            if r.key is not None:
                self.fixed_out[r.key] = a
                a = a.reshape(r.plan_shape)
            self.fixed[r.buf] = a
        for m in self.fixed_views:
            self.fixed[m.step.out] = m.call(self.fixed[m.inputs[0]])
        return [self.fixed[v] for v in self.fixed_buffers()] + [
            self.fixed_out[k] for k in self.fixed_outputs()]


def place_runs(runs: list[Run]) -> None:
    """Every emitted run's fixed arrays in one arena (the runs of a program run one after
    another), 64-byte aligned, their addresses in each run's slots."""
    peak = max((r.peak for r in runs), default=0)
    raw = np.empty(peak + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    arena = raw[skip:skip + peak]
    for run in runs:
        assert run.slots is not None
        arrays = run.place(arena)
        run.slots[run.first_fixed:] = [id(a) for a in arrays]
        run.held += [arena, arrays]


def _member(plan: Plan, i: int, s: Step, module: Any, products: dict[Step, Any],
            dropped: frozenset[int], checks: bool, commits: bool,
            fast_paths: dict[int, Any]) -> _Member | None:
    if isinstance(s, SourceStep):
        return None if isinstance(s, RandStep) else _Member(i, s, "source")
    if s.device != "cpu":
        return None
    if isinstance(s, KernelStep):
        # a parameter update storing into its state (plan.Commit) runs in the run, in place,
        # where the caller allows it (``commits``) and it is among the run's last calls
        # (``_commits_stay_last``)
        commit = isinstance(s, CommitStep)
        if (commit and not commits) or (not commit and any(
                o.into is not None for o in s.kernel.outputs)):
            return None
        entry = getattr(module, "native_entry", lambda k: None)(s.kernel)
        return None if entry is None else _Member(i, s, "commit" if commit else "kernel",
                                                  entry=entry)
    if not isinstance(s, PrimitiveStep):
        return None
    found = products.get(s)
    if found is not None:
        call, product = found
        if product.split or (call.addend is not None and not call.spec.addend):
            return None
        return _Member(i, s, "product", call=call, product=product)
    prim = REGISTRY.get(s.name)
    if prim is None or len(s.buffers) != 1 or s.out in dropped:
        return None
    metas = plan.schedule.metas
    if s.name == "check_bounds":
        return _check_member(i, s, metas[s.buffers[0]]) if checks else None
    fast = fast_paths[i] = prim.specialize([metas[v] if k == "buf" else v for k, v in s.args],
                                           s.attrs, (s.shape, s.dtype.np))
    if fast is None:
        return None
    form = getattr(fast, "native", None)
    if form is not None:
        return _Member(i, s, "window", call=form)
    return _Member(i, s, "view", call=fast) if prim.view else None


def _check_member(i: int, s: PrimitiveStep, meta: Any) -> _Member | None:
    """A check_bounds step as a CHECK record: over int64 (its values' only dtype), where
    some int64 is in its range."""
    from codegen import pyentry

    shape, dtype = meta
    if np.dtype(dtype) != np.int64:
        return None
    attrs = s.attrs
    words = pyentry.check_words(int(np.prod(shape, dtype=np.int64)), attrs["low"],
                                attrs["high"])
    return None if words is None else _Member(i, s, "check", call=words)


@dataclass
class Search:
    """What ``find_run`` learns of a plan's steps for a caller trying every start in turn
    (a program's build): each step's member (or None: a member specializes its step, cnn's
    145 steps made 786 window functions and views, 40 ms); where runs tried were cut by a
    test on an array the run makes (step -> the step that made that array: a run starting at
    or before that maker has the same array there and is cut there too; cnn's program tried
    45 starts in a row that failed at one view, each making the arrays of the 45 steps before
    it: 9 ms); and the step before which no run starts (the end of a stretch of members with
    fewer than MIN_CALLS calls, or of one a cut stops, up to the step after that cut's maker:
    every later start in it has fewer still). ``fast``: the fast path (``specialize``'s
    result, None included) each member's primitive step got, for its plain line where it is
    in no run (``program.build_program``: cnn's window functions made again, 2 ms)."""

    members: dict[int, _Member | None] = field(default_factory=dict)
    cuts: dict[int, int] = field(default_factory=dict)
    barren: int = 0
    fast: dict[int, Any] = field(default_factory=dict)


def find_run(plan: Plan, start: int, known: Known, module: Any, products: dict[Step, Any],
             dropped: frozenset[int], search: Search | None = None, checks: bool = False,
             commits: bool = False) -> Run | None:
    """The run starting at step ``start`` (None where there is none worth a native call),
    its fixed arrays made and everything about its own arrays checked; ``search``: what the
    starts tried before learned (``Search``)."""
    search = Search() if search is None else search
    if start < search.barren:
        return None
    memo, cuts = search.members, search.cuts
    members = []
    calls = 0
    end, cut = len(plan.steps), False
    for i in range(start, len(plan.steps)):
        if i not in memo:
            memo[i] = _member(plan, i, plan.steps[i], module, products, dropped, checks,
                              commits, search.fast)
        m = memo[i]
        if m is None or (i in cuts and start <= cuts[i]):
            end, cut = i, m is not None
            break
        members.append(m)
        calls += m.kind in _CALLS
    if calls < MIN_CALLS:
        # a later start up to ``end`` (and, where a cut stopped this one, up to that cut's
        # maker: the cut stops it too) has fewer members still: cnn's 46 starts before one
        # cut walked 1000 members
        search.barren = min(end, cuts[end] + 1) if cut else end
        return None
    while _calls_in(_ended(members)) >= MIN_CALLS:
        run, bad = _checked_run(plan, members, known)
        if bad is None:
            return run if run.peak <= MAX_FIXED_BYTES else None
        if run.cut_by is not None:
            cuts[members[bad].index] = run.cut_by
        members = members[:bad]
    return None


def _ended(members: list[_Member]) -> list[_Member]:
    """``members`` less its trailing sources and views (a run ends with a call), in place."""
    while members and members[-1].kind in ("source", "view"):
        members.pop()
    return members


def _calls_in(members: list[_Member]) -> int:
    return sum(m.kind in _CALLS for m in members)


def _scratch(m: _Member) -> int:
    """The key of a window member's scratch row among a run's fixed arrays (buffers are
    non-negative)."""
    return -1 - m.index


_READS: weakref.WeakKeyDictionary[Plan, dict[int, list[tuple[int, int]]]] = \
    weakref.WeakKeyDictionary()
_LAST_READS: weakref.WeakKeyDictionary[Plan, dict[int, int]] = weakref.WeakKeyDictionary()


def _reads(plan: Plan) -> dict[int, list[tuple[int, int]]]:
    """Buffer -> (step, argument position) of each read of it, in plan order, once per plan
    (its steps' buffers listed once a build: see ``_Member.inputs``)."""
    found = _READS.get(plan)
    if found is None:
        found = _READS[plan] = {}
        for i, s in enumerate(plan.steps):
            for j, v in enumerate(s.buffers):
                found.setdefault(v, []).append((i, j))
    return found


def _last_reads(plan: Plan) -> dict[int, int]:
    """Buffer -> the last step that reads it, once per plan (a run's test asked every step
    after it: cnn's 57 tests, 6000 step visits)."""
    found = _LAST_READS.get(plan)
    if found is None:
        found = _LAST_READS[plan] = {v: reads[-1][0] for v, reads in _reads(plan).items()}
    return found


def _checked_run(plan: Plan, members: list[_Member], known: Known
                 ) -> tuple[Run, int | None]:
    """The run of ``members`` with its arrays, or the position of the first member that
    cannot be in it (the run is then cut before that member)."""
    schedule = plan.schedule
    metas = schedule.metas
    end = members[-1].index + 1
    produced: dict[int, _Member] = {}
    for m in members:
        if m.kind != "source":
            for o in m.step.outputs:
                produced[o] = m
    last = _last_reads(plan)
    freed = {v for m in members for v in schedule.frees[m.index]}
    escaping = {v for v in produced if last.get(v, -1) >= end or v in schedule.needed
                or v not in freed}
    for m in reversed(members):  # a view that leaves the run takes its source along
        if m.kind == "view" and m.step.out in escaping and m.inputs[0] in produced:
            escaping.add(m.inputs[0])
    externals = {v for m in members if m.kind != "source" for v in m.inputs
                 if v not in produced}
    if any(v not in known.typed for v in externals):
        bad = next(p for p, m in enumerate(members) if m.kind != "source"
                   and any(v not in known.typed and v not in produced for v in m.inputs))
        return Run(members), bad
    run = Run(members, escaping=escaping)
    # what each produced buffer will be laid out as (checked here on arrays so laid out);
    # views of values from before the run are made in Python
    proto: dict[int, np.ndarray] = {}
    made_by: dict[int, int] = {}  # buffer -> the step that made its proto (a view's source's)
    external_rooted: set[int] = set(externals)
    root_of: dict[int, _Root] = {}
    fresh = set(escaping)  # made every call: what leaves the run, and views of it
    for p, m in enumerate(members):
        s = m.step
        if m.kind == "source":
            continue
        for v in m.inputs:
            if v in root_of:
                root_of[v].end = p
        if m.kind == "view":
            src = m.inputs[0]
            if src in external_rooted:
                external_rooted.add(s.out)
                run.outer_views.append(m)
                continue
            view = m.call(proto[src])
            if not (isinstance(view, np.ndarray) and np.shares_memory(view, proto[src])
                    and view.shape == tuple(metas[s.out][0])):
                return _cut(run, made_by, src), p
            proto[s.out] = view
            made_by[s.out] = made_by[src]
            if s.out in escaping or src in fresh:  # a view of a fresh array is made anew
                run.fresh_views.append(m)
                fresh.add(s.out)
            else:
                run.fixed_views.append(m)
                root_of[s.out] = root_of[src]
            continue
        if m.kind in ("window", "check"):
            src = m.inputs[0]
            if src not in external_rooted:
                a = proto[src]
                if a.shape != tuple(metas[src][0]) or not a.flags.c_contiguous:
                    return _cut(run, made_by, src), p
            made_by[s.out] = m.index
            if m.kind == "check":  # its value is a placeholder (CHECKED where it leaves)
                proto[s.out] = CHECKED
                continue
            proto[s.out] = np.empty(tuple(s.shape), s.dtype.np)
            if s.out not in escaping:
                root_of[s.out] = _Root(s.out, tuple(s.shape), s.dtype.np, p, p)
                run.roots.append(root_of[s.out])
            if m.call.scratch is not None:  # a row of scratch, for this call only
                count, dtype = m.call.scratch
                run.roots.append(_Root(_scratch(m), (count,), np.dtype(dtype), p, p))
            continue
        if m.kind in _KERNELS:
            assert isinstance(s, KernelStep)
            signature = plan.executable.kernel_signature(s)
            for v, (shape, dtype) in zip(m.inputs, signature):
                if v in external_rooted:
                    continue  # tested in Python
                a = proto[v]
                if a.shape != tuple(shape) or a.dtype != dtype or not a.flags.c_contiguous:
                    return _cut(run, made_by, v), p
            if m.kind == "commit" and not _commits_stay_last(plan, members, p):
                return run, p  # decided by where the run ends: not a cut for other starts
            for j, (o, (shape, dtype, plan_shape)) in enumerate(zip(s.outs, s.out_specs)):
                proto[o] = np.empty(tuple(shape), np.dtype(dtype)).reshape(tuple(plan_shape))
                made_by[o] = m.index
                if o not in escaping and m.kind == "kernel":  # a commit's are its states'
                    root_of[o] = _Root(o, tuple(shape), np.dtype(dtype), p, p, (m.index, j),
                                       tuple(plan_shape))
                    run.roots.append(root_of[o])
            continue
        call = m.call
        bufs = m.inputs
        for v, shape in zip(bufs, (call.a, call.b)):
            if v not in external_rooted and proto[v].shape != tuple(shape):
                return _cut(run, made_by, v), p
        if call.addend is not None and bufs[2] not in external_rooted:
            from codegen.gemm import addend_fits

            if not addend_fits(proto[bufs[2]], tuple(call.out), s.dtype.np):
                return _cut(run, made_by, bufs[2]), p
        proto[s.out] = np.empty(tuple(call.out), s.dtype.np)
        made_by[s.out] = m.index
        if s.out not in escaping:
            root_of[s.out] = _Root(s.out, tuple(call.out), s.dtype.np, p, p)
            run.roots.append(root_of[s.out])
    run.external = external_rooted
    run.escaping -= external_rooted
    run.lay_out()
    return run, None


def _cut(run: Run, made_by: dict[int, int], v: int) -> Run:
    """``run``, cut where a test failed on the array of ``v`` (its maker noted: ``find_run``'s
    cuts). The test saw nothing but that array, which the steps from its maker on make the
    same way in a run of any start up to the maker; what a run makes depends on no member
    after it, and whether a commit may be in a run (the only test that depends on where the
    run ends) is not such a test."""
    run.cut_by = made_by[v]
    return run


def _commits_stay_last(plan: Plan, members: list[_Member], p: int) -> bool:
    """Whether commit ``members[p]`` may store into its states' arrays during the run: once
    it has, the call cannot be made again (the plain program would read the updated states),
    so nothing after it may fail or take a test's other branch (no check after it in the
    run, no step of the plan after the run), and nothing after it reads those states'
    storage (their old values: a later step reading a view of one, another update reading
    the parameter this one changed). The replay holds SIGINT across the run and its
    write-back (``planner.compile._Replayer.hold_run``): an interrupted call still leaves
    every state as it was."""
    m = members[p]
    if members[-1].index != len(plan.steps) - 1 or any(
            q.kind == "check" for q in members[p + 1:]):
        return False
    step = m.step
    assert isinstance(step, CommitStep)
    targets = set(step.targets)
    producer = plan.schedule.producer
    for q in members[p + 1:]:
        for v in q.inputs:
            while True:  # v, then what it views, back to its storage's own buffer
                if v in targets:
                    return False
                source = plan.steps[producer[v]]
                if not source.is_view:
                    break
                v = source.args[0][1]
    return True


def _swapped_operands(plan: Plan, run: Run, exact: set[int]) -> dict[int, int]:
    """The run's views made in Python that swap the last two axes of an array of its planned
    shape (``exact``: W.T of a weight W, the forward's x @ W.T) and that only its products
    read, as their B: view -> its source, which those products are given in its place
    (``codegen.gemm.GemmSpec.b_swapped``). Each such view cost mlp_small's replay 0.2 to
    0.3 us to make and free, a third of its Python lines' time besides the fresh outputs."""
    candidates = {m.step.out: m.inputs[0] for m in run.outer_views
                  if m.inputs[0] in exact and m.step.out not in plan.schedule.needed
                  and _swaps_last_axes(m.call, plan.schedule.metas[m.inputs[0]])}
    if not candidates:
        return {}
    in_run = {m.index: m.kind for m in run.members}
    reads = _reads(plan)  # every reader a product of the run, reading it as B
    return {view: source for view, source in candidates.items()
            if all(in_run.get(i) == "product" and j == 1 for i, j in reads.get(view, ()))}


def _swaps_last_axes(view_fn: Callable[[np.ndarray], Any], meta: Any) -> bool:
    """Whether the view function makes, of an array of ``meta``'s shape and dtype, the view
    of its last two axes swapped (probed on one such array: a view function's result depends
    on the shape alone)."""
    shape, dtype = tuple(meta[0]), np.dtype(meta[1])
    if len(shape) < 2 or min(shape[-2:]) < 2:
        return False
    probe = np.empty(shape, dtype)
    view = view_fn(probe)
    return (type(view) is np.ndarray and view.ctypes.data == probe.ctypes.data
            and view.shape == shape[:-2] + shape[:-3:-1]
            and view.strides == probe.strides[:-2] + probe.strides[:-3:-1])


def emit_run(src: Source, plan: Plan, run: Run, known: Known, fallback: list[str] | None,
             rest: Callable[[], None] | None, exact: set[int] = frozenset()) -> int | None:
    """The run's lines: its arguments tested, its fresh arrays and Python views made, its
    native call; where a test fails, ``fallback`` (the plain program's lines for the same
    steps), or with None (a plan whose steps have no effect outside the call: no random
    draws, no communication) the whole call made again by the plain program (``_plain``).
    Leaves bound exactly the locals the plain lines leave bound. An argument in ``exact`` (of
    its planned shape and dtype already, as the run's entries were proved for) is not tested.
    Returns the source line (1-based, as tracebacks count) where ``fallback`` begins, None
    where it is not there."""
    from codegen.pyentry import CHECK, KERNEL, PRODUCT, check_entry, drive_builtin

    schedule = plan.schedule
    first = lit(run.members[0].index)
    index: dict[int, int] = {}  # buffer -> slot: the arguments' first, then the fixed arrays'
    out_index: dict[tuple[int, int], int] = {}  # (step, output) -> a kernel output's slot
    names: list[str] = []
    tests: list[str] = []
    pre: list[str] = []
    converted: dict[int, str] = {}

    def argument(name: str) -> int:
        names.append(name)
        return len(names) - 1

    exact = set(exact)
    # B operands given as their transposed sources, no view made (``_swapped_operands``)
    swapped = _swapped_operands(plan, run, exact)
    for m in run.outer_views:  # in plan order: a view of a view follows its source
        if m.step.out in swapped:
            continue
        pre.append(f"{src.buf(m.step.out)} = {src.name(f'fast_{m.step.name}', m.call)}"
                   f"({src.buf(m.inputs[0])})")
        if m.inputs[0] in exact:  # a fast path's result has its planned shape and dtype
            exact.add(m.step.out)
    # kernels and window functions read C-contiguous arrays (products any layout)
    contiguous_reads = {v for m in run.calls if m.kind in (*_KERNELS, "window", "check")
                        for v in m.inputs}
    for v in sorted(run.external & contiguous_reads):
        if v not in known.contiguous:
            converted[v] = f"_n{lit(v)}"
            pre.append(f"{converted[v]} = {src.name('asarray', np.asarray)}({src.buf(v)}, "
                       "None, 'C')")
    # the tests: every argument from before the run is what its readers were proved for
    tested: set[tuple[str, tuple[int, ...], np.dtype]] = set()

    def test(a: str, shape: Any, dtype: Any, n: str, j: int) -> None:
        """Test argument ``a`` for (shape, dtype), once however many entries read it so."""
        key = (a, tuple(shape), np.dtype(dtype))
        if key not in tested:
            tested.add(key)
            tests.append(f"{a}.shape != {src.name(f'shape{n}_{j}', key[1])} "
                         f"or {a}.dtype is not {src.name(f't{n}_{j}', key[2])}")

    for m in run.calls:
        s = m.step
        n = lit(s.out)
        if m.kind in ("window", "check"):
            v = m.inputs[0]
            if v in run.external and v not in exact:
                test(converted.get(v, src.buf(v)), *plan.schedule.metas[v], n, 0)
        elif m.kind in _KERNELS:
            assert isinstance(s, KernelStep)
            signature = plan.executable.kernel_signature(s)
            for j, (v, (shape, dtype)) in enumerate(zip(m.inputs, signature)):
                if v in run.external and v not in exact:
                    test(converted.get(v, src.buf(v)), shape, dtype, n, j)
        else:
            bufs = m.inputs
            for j, (v, shape) in enumerate(zip(bufs, (m.call.a, m.call.b, m.call.addend))):
                if v not in run.external or v in swapped:  # (swapped: exact)
                    continue
                a = converted.get(v, src.buf(v))
                if v not in exact:
                    test(a, shape, s.dtype.np, n, j)
                if j == 2 and v not in known.contiguous:
                    tests.append(f"{a}.strides[-1] != {lit(s.dtype.np.itemsize)}")
    body: list[str] = []
    empty = src.name("empty", np.empty)
    for m in run.calls:  # fresh arrays for what leaves the run
        s = m.step
        if m.kind == "commit":  # its outputs are the arrays it stores into: its states'
            assert isinstance(s, CommitStep)
            for o, v in zip(s.outs, s.targets):
                body.append(f"{src.buf(o)} = {converted.get(v, src.buf(v))}")
        elif m.kind == "kernel":
            assert isinstance(s, KernelStep)
            for j, (o, (shape, dtype, plan_shape)) in enumerate(zip(s.outs, s.out_specs)):
                if o not in run.escaping:
                    continue
                tmp = f"_o{lit(s.out)}_{j}"
                body.append(f"{tmp} = {empty}({src.name('shape', tuple(shape))}, "
                            f"{src.name('t', np.dtype(dtype))})")
                out_index[(m.index, j)] = argument(tmp)
                reshape = "" if tuple(shape) == tuple(plan_shape) else \
                    f".reshape({src.name('shape', tuple(plan_shape))})"
                body.append(f"{src.buf(o)} = {tmp}{reshape}")
        elif m.kind == "check":
            if s.out in run.escaping:
                body.append(f"{src.buf(s.out)} = {src.name('checked', CHECKED)}.copy()")
        elif s.out in run.escaping:
            shape = tuple(m.call.out) if m.kind == "product" else tuple(s.shape)
            body.append(f"{src.buf(s.out)} = {empty}({src.name('shape', shape)}, "
                        f"{src.name('t', s.dtype.np)})")
    for m in run.fresh_views:
        fn = src.name(f"fast_{m.step.name}", m.call)
        body.append(f"{src.buf(m.step.out)} = {fn}({src.buf(m.inputs[0])})")
    fixed = set(run.fixed_buffers())
    for m in run.calls:
        for v in m.inputs:
            v = swapped.get(v, v)
            if v not in index and v not in fixed:
                index[v] = argument(converted.get(v, src.buf(v)))
        if m.kind not in (*_KERNELS, "check") and m.step.out in run.escaping:
            index.setdefault(m.step.out, argument(src.buf(m.step.out)))
    # the fixed arrays' slots follow the arguments' (filled by ``place_runs``)
    first_fixed = len(names)
    for k, v in enumerate(run.fixed_buffers()):
        index[v] = first_fixed + k
    for k, key in enumerate(run.fixed_outputs(), len(fixed)):
        out_index[key] = first_fixed + k
    words: list[int] = []
    holds: list[Any] = []  # the window functions' code and words, the checks' words
    products: list[Any] = []  # the products called (each holds its words)
    flags: list[str] = []  # where the checks say whether they failed
    room = 4
    for m in run.calls:
        s = m.step
        if m.kind in _KERNELS:
            assert isinstance(s, KernelStep) and m.entry is not None
            # a commit's outputs are given its states' arrays (it stores through those)
            slots_of = [index[v] for v in m.inputs] + (
                [index[v] for v in s.targets] if isinstance(s, CommitStep)
                else [out_index[(m.index, j)] for j in range(len(s.outs))])
            words += [KERNEL, m.entry[0], m.entry[1], len(slots_of), *slots_of]
        elif m.kind == "window":
            form = m.call
            role = {"in": index[m.inputs[0]], "out": index[s.out]}
            if form.scratch is not None:
                role["scratch"] = index[_scratch(m)]
            slots_of = [role[r] for r in form.roles]
            words += [PRODUCT, form.address, form.words, 4, *slots_of]
            holds.append(form.holds)
        elif m.kind == "check":
            slots_of = [index[m.inputs[0]]]
            words += [CHECK, check_entry(), m.call.ctypes.data, 1, *slots_of]
            holds.append(m.call)
            flags.append(f"{src.name('check', m.call)}[3]")
        else:
            bufs = m.inputs
            c = index[s.out]
            e = index[bufs[2]] if m.call.addend is not None else c
            product = m.product.b_swapped if bufs[1] in swapped else m.product
            products.append(product)
            slots_of = [index[bufs[0]], index[swapped.get(bufs[1], bufs[1])], c, e]
            words += [PRODUCT, ctypes.cast(product.entry, ctypes.c_void_p).value, product.dims,
                      4, *slots_of]
        room = max(room, len(slots_of))
    room_array = np.zeros(room, np.int64)
    records = np.array([len(run.calls), room_array.ctypes.data, *words], np.int64)
    run.slots = np.zeros(first_fixed + len(fixed) + len(run.fixed_outputs()), np.int64)
    run.first_fixed = first_fixed
    run.held = [room_array, products, holds]
    if any(m.kind in _KERNELS for m in run.calls):
        run.held.append(plan.executable.module())
    drive = drive_builtin(records, run.slots, len(names), f"run{first}", run.held)
    if rest is not None and any(m.kind == "product" for m in run.calls):
        src.line(f"{src.name('rest', rest)}()")
    for line in pre:
        src.line(line)
    indent = "    " if tests else ""
    if tests:
        src.line(f"if not ({' or '.join(f'({t})' for t in tests)}):")
    for line in body:
        src.line(indent + line)
    src.line(f"{indent}{src.name(f'drive{first}', drive)}({', '.join(names)})")
    if flags:  # a check failed (its run stopped there): the plain program raises its error
        src.line(f"{indent}if {' or '.join(flags)}:")
        src.line(f"{indent}    return _plain(plan, args, state, generators)")
    # what the plain lines free in the run, of what this branch bound
    bound = (run.external | run.escaping | {m.step.out for m in run.fresh_views}) - set(swapped)
    dead = [v for m in run.members for v in schedule.frees[m.index] if v in bound]
    gone = [n for n in names if n.startswith("_o")] + [src.buf(v) for v in dead]
    if gone:
        src.line(f"{indent}del {', '.join(gone)}")
    at = None
    if tests and fallback is None:
        src.line("else:")
        src.line("    return _plain(plan, args, state, generators)")
    elif tests:
        src.line("else:")
        at = len(src.lines) + 2  # line 1 is the def
        for line in fallback:
            src.line(line)  # already indented once as program lines
    if converted:
        src.line(f"del {', '.join(converted.values())}")
    return at
