"""A GPU plan replayed as a CUDA graph: the launches of a call recorded once, then replayed
by one ``cudaGraphLaunch`` a segment (one segment, unless a check of values splits it).

A GPU plan's program is bound by the host: each kernel launch, each ``cupy.empty`` of an
output and each product costs microseconds of Python, so gpt's 74 kernels and 323 outputs
took its whole 6.5 ms a step on an H200 while the device idled. Recorded as a graph, a call
is: copy the call's arguments into the graph's own input buffers, launch the graph, copy out
what the call returns and writes. It is torch.compile's ``mode="reduce-overhead"``.

What a graph holds fixed, and how each call keeps to it:

- every buffer the program allocates comes from a memory pool of the graph's own
  (``MemoryPool``), never handed to anything else: each replay writes the same addresses;
- the call's arguments, and the state it reads other than tensors (hyperparameters,
  gradients read, optimizer state the write-back replaces), are copied into input buffers
  made at capture;
- a tensor the plan reads (a parameter, a buffer, an optimizer's moment) is read where it
  lies, the same array every call; a call that finds another array there captures again;
- a tensor's new value is stored into the tensor by the graph's last segment (the
  write-back finds it in place); what else the call returns and writes (a loss, new
  ``.grad``s) is copied out of the graph's buffers, which the next replay overwrites;
- a check of values (runtime.ops.prims' check_bounds: a class target, an embedding index)
  is made around the launches: one of an argument before them, one of a value the graph
  computes between the segment that computes it and the rest (the capture ends a segment
  there), so a call that raises has stored nothing.

A plan that draws random numbers (dropout's masks) is captured with each draw an input
buffer: a replay draws on the host from the call's generators, in plan order, as the program
does (the same numbers), and copies each draw into its buffer before the launch. A plan that
communicates is never captured, nor one of a few launches (MIN_LAUNCHES: its graph costs more
than it saves); a capture that fails (a step that synchronizes with the host)
leaves the plan on its program for good, the reason kept in ``GraphRunner.off``. The first
call of a plan runs its program (kernels compile and libraries initialise there, which a
capture must not do); the second captures and replays.

The capture itself is a backend's (``backend_for``: CuPy's stream capture where CuPy has it);
tests on machines without a GPU put in one that records by running the program.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from runtime.ops import prims

from runtime.creation import draw

from .steps import CommStep, KernelStep, PrimitiveStep, RandStep, recorded_draws
from .tree import Spec, flatten, unflatten

if TYPE_CHECKING:
    from .plan import Plan

WARM_CALLS = 1  # program runs before the capture (kernels compiled, cuBLAS initialised)
MAX_CAPTURES = 3  # captures again after a tensor moved; past this, the program for good
ENV = "BACKPLAN_CUDA_GRAPHS"
# a graph's own cost a call (copies in and out, its launch) is about that of a few launches:
# on an H100, a plan of one kernel ran 0.087 ms a step as a graph against 0.083 without, one
# of none 0.048 against 0.021, and mlp_small's 23 launches 0.39 against 0.93
MIN_LAUNCHES = 4


def enabled(option: bool | None) -> bool:
    """``planner.compile``'s ``cuda_graphs``: None reads $BACKPLAN_CUDA_GRAPHS (1, the default,
    or 0)."""
    if option is not None:
        return bool(option)
    value = os.environ.get(ENV, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"${ENV} must be 0 or 1, not {value!r}")
    return value == "1"


class Captured:
    """A backend's recorded graphs (the segments of one call, launched in order), with what
    must outlive them (their pool, their stream)."""

    def __init__(self, graphs: list[Any], keep: tuple[Any, ...]) -> None:
        self.graphs = graphs
        self.keep = keep


Stores = Callable[[Any], list[tuple[Any, Any]]]
# where a value a call gives back comes from: ("value", it) as captured (no array),
# ("copy", buffer) a copy of the graph's buffer (the next replay overwrites it), ("arg", i)
# or ("state", slot) the call's own argument or state (the capture gave back its input
# buffer), ("bound", slot) the tensor's array itself
Source = tuple[str, Any]


class CupyGraphs:
    """Stream capture through CuPy: the program runs on a stream of its own in capture mode
    (CuPy's default, relaxed: its pool may still grow), allocating from a private pool.
    ``split`` (called while ``fn`` runs) ends one segment there and begins the next."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self._stream: Any = None
        self._graphs: list[Any] = []

    def capture(self, fn: Callable[[], Any], stores: Stores) -> tuple[Captured, Any]:
        """Record ``fn()``, then the copies ``stores(its result)`` names (dst, src), into
        graphs; the result is what ``fn`` returned (its arrays filled at each launch)."""
        from .cuda_blas import blas_for

        cuda = self.xp.cuda
        blas = blas_for(self.xp)  # the products a capture records
        pool = cuda.MemoryPool()
        stream = cuda.Stream(non_blocking=True)
        cuda.get_current_stream().synchronize()  # the input buffers, copied on this stream
        self._stream, self._graphs = stream, []
        with cuda.using_allocator(pool.malloc), stream, blas.recording(stream):
            stream.begin_capture()
            try:
                out = fn()
                for dst, src in stores(out):
                    dst[...] = src
            except BaseException:
                # the capture was invalidated: the error raised says why, not end_capture's
                with contextlib.suppress(Exception):
                    stream.end_capture()
                raise
            finally:
                self._stream = None
            self._graphs.append(stream.end_capture())
        return Captured(self._graphs, (pool, stream)), out

    def split(self) -> int:
        """End the segment being recorded and begin the next; its index."""
        self._graphs.append(self._stream.end_capture())
        self._stream.begin_capture()
        return len(self._graphs)

    def launch(self, captured: Captured, segment: int) -> None:
        captured.graphs[segment].launch(stream=self.xp.cuda.get_current_stream())


def backend_for(xp: Any) -> Any:
    """The capture backend for an array module, or None where it cannot capture."""
    cuda = getattr(xp, "cuda", None)
    stream = getattr(cuda, "Stream", None)
    if cuda is None or not hasattr(cuda, "Graph") or not hasattr(stream, "begin_capture"):
        return None
    return CupyGraphs(xp)


def why_not(plan: Plan) -> str | None:
    """Why a plan is never captured (None: it may be)."""
    if not plan.device.startswith("cuda"):
        return "a CPU plan"
    if any(isinstance(s, CommStep) for s in plan.steps):
        return "it communicates"
    if any(s.device != plan.device for s in plan.steps):
        return "some of its steps run on another device"
    launches = sum(isinstance(s, (KernelStep, PrimitiveStep)) and not s.is_view
                   for s in plan.steps)
    if launches < MIN_LAUNCHES:
        return f"{launches} launches: fewer than a graph pays for ({MIN_LAUNCHES})"
    return None


class _Graph:
    """One capture: the graph, its input buffers, and how a call's results come out of it."""

    def __init__(self, captured: Captured, args: list[Any], state: dict[int, Any],
                 bound: dict[int, Any], checks: list[tuple[Any, ...]], stored: set[int],
                 draws: dict[RandStep, Any]) -> None:
        self.captured = captured
        self.args = args  # per argument: its input buffer, or None
        self.state = state  # per copied state slot: its input buffer
        self.bound = bound  # per tensor slot read where it lies: the array
        # what a call gives back, decided at capture (``GraphRunner._sources``): the return
        # template's structure (planner.tree) and, per leaf and per write, its Source
        self.result_spec: Spec = ("leaf",)
        self.result: list[Source] = []
        self.writes: list[tuple[int, Source]] = []
        # the plan's checks of values (check_bounds: class targets, embedding indices):
        # (segment, xp, array, bounds...), each made before its segment is launched: one of
        # an input buffer before the first, one of a value the graph computes between the
        # segment that computes it and the rest (a failing one raises as the program's would,
        # before anything is stored)
        self.checks = checks
        # the tensor slots whose new value the last segment stores into the tensor itself
        # (their write-back has nothing left to copy)
        self.stored = stored
        # the plan's random draws in the order its program draws them, each with the input
        # buffer a replay copies a new draw into
        self.draws = draws


def _in(array: Any, buffers: dict[int, Any]) -> bool:
    """Whether ``array`` is one of ``buffers`` (by id) or a view of one."""
    while array is not None:
        if id(array) in buffers:
            return True
        array = getattr(array, "base", None)
    return False


@contextlib.contextmanager
def _deferring(checks: list[tuple[Any, ...]], buffers: dict[int, Any], backend: Any
               ) -> Iterator[None]:
    """The plan's checks of values (runtime.ops.prims' check_bounds) recorded, not made, while
    the block runs (the capture): a graph cannot read a value. One of an input buffer is made
    before the first segment is launched; one of a value the graph computes ends the segment
    being recorded (``backend.split``), and is made once that segment has run, before the
    next. A segment run with an index out of range reads no memory outside its arrays: fused
    kernels address affinely, and CuPy's gathers and scatters wrap an index around."""
    def record(xp: Any, x: Any, low: int, high: int, message: str, error: str) -> Any:
        segment = 0 if _in(x, buffers) else backend.split()
        checks.append((segment, xp, x, low, high, message, error))
        return xp.ones((), bool)

    prims.deferred_checks.record = record
    try:
        yield
    finally:
        prims.deferred_checks.record = None


class GraphRunner:
    """Runs a GPU plan's program, captured as a CUDA graph from its second call on."""

    def __init__(self, plan: Plan, program: Callable[[], Any], backend: Any) -> None:
        self.plan = plan
        self.program = program  # () -> the plan's program (Executable.program)
        self.backend = backend
        self.xp = backend.xp
        self.off = why_not(plan)  # why the plan runs its program (None: it is captured)
        self.calls = 0
        self.captures = 0
        self.replays = 0
        self.graph: _Graph | None = None
        self.lock = threading.Lock()
        # tensor slots (read where they lie) and slots written back into a tensor (not copied)
        kinds = {i: getattr(s, "get", lambda k: None)("kind") for i, s in enumerate(plan.slots)}
        self.tensor_reads = {slot for slot, _ in plan.reads if kinds.get(slot) == "tensor"}
        self.tensor_writes = {slot for slot, _ in plan.writes if kinds.get(slot) == "tensor"}

    def run(self, args: list[Any], state: dict[int, Any], generators: list[Any],
            in_place: bool) -> tuple[Any, list[tuple[int, Any]]]:
        with self.lock:
            if self.off is None and self._arrays(args, state):
                self.calls += 1
                if self.calls > WARM_CALLS:
                    graph = self.graph
                    if graph is not None and not self._fits(graph, state):
                        graph = self.graph = None  # a tensor moved: capture again
                    if graph is None:
                        graph = self._capture(args, state, generators, in_place)
                    if graph is not None:
                        return self._replay(graph, args, state, generators)
        return self.program()(self.plan, args, state, generators)

    def _arrays(self, args: list[Any], state: dict[int, Any]) -> bool:
        """Whether every argument and state value is an array of the device module (a call
        with host values runs the program)."""
        ndarray = self.xp.ndarray
        return all(a is None or isinstance(a, ndarray) for a in args) and all(
            isinstance(v, ndarray) for v in state.values())

    def _fits(self, graph: _Graph, state: dict[int, Any]) -> bool:
        return all(state[slot] is array for slot, array in graph.bound.items())

    def _capture(self, args: list[Any], state: dict[int, Any], generators: list[Any],
                 in_place: bool) -> _Graph | None:
        if self.captures >= MAX_CAPTURES:
            self.off = f"captured {self.captures} times (tensors it reads keep moving)"
            return None
        self.captures += 1
        inputs = [None if a is None else a.copy() for a in args]
        copied = {slot: v.copy() for slot, v in state.items() if slot not in self.tensor_reads}
        bound = {slot: v for slot, v in state.items() if slot in self.tensor_reads}
        made = {s: self.xp.empty(s.shape, s.dtype.np) for s in self.plan.steps
                if isinstance(s, RandStep)}
        draws: dict[RandStep, Any] = {}
        program = self.program()
        checks: list[tuple[Any, ...]] = []
        buffers = {id(b): b for b in [*inputs, *copied.values(), *bound.values(),
                                      *made.values()] if b is not None}
        stored: set[int] = set()
        own = {id(b) for b in buffers.values()}

        def stores(out: Any) -> list[tuple[Any, Any]]:
            """A tensor's new value, made by the graph, stored into the tensor by its last
            segment: once every check has passed, so a call that raises stores nothing."""
            pairs = []
            for slot, value in out[1]:
                if slot in self.tensor_writes and slot in bound and \
                        isinstance(value, self.xp.ndarray) and id(value) not in own and \
                        value.shape == bound[slot].shape and value.dtype == bound[slot].dtype:
                    pairs.append((bound[slot], value))
                    stored.add(slot)
            return pairs

        def drawn(step: RandStep) -> Any:
            return draws.setdefault(step, made[step])

        recorded_draws.buffer = drawn
        try:
            with _deferring(checks, buffers, self.backend):
                captured, (result, writes) = self.backend.capture(
                    lambda: program(self.plan, inputs, {**copied, **bound}, generators), stores)
        except Exception as exc:  # noqa: BLE001 - the program runs instead, as before
            self.off = f"its capture failed ({type(exc).__name__}: {exc})"
            return None
        finally:
            recorded_draws.buffer = None
        graph = _Graph(captured, inputs, copied, bound, checks, stored, draws)
        if not self._sources(graph, result, writes):
            self.off = "it returns or writes a view of an argument or state"
            return None
        self.graph = graph
        return graph

    def _sources(self, graph: _Graph, result: Any, writes: list[tuple[int, Any]]) -> bool:
        """Where each array the capture returns and writes comes from at every replay (the
        graph's ``result`` and ``writes``): the graph's own buffer (copied out), an input
        buffer or a tensor (the call's own), or a tensor slot's new value (stored into the
        tensor by the graph, else the graph's buffer, which the write-back copies). False
        where one is a view into an input buffer or a tensor: none of those."""
        given: dict[int, Source] = {id(b): ("arg", i) for i, b in enumerate(graph.args)
                                    if b is not None}
        given.update((id(b), ("state", slot)) for slot, b in graph.state.items())
        given.update((id(b), ("bound", slot)) for slot, b in graph.bound.items())
        ndarray = self.xp.ndarray

        def source(leaf: Any) -> Source | None:
            if not isinstance(leaf, ndarray):
                return ("value", leaf)
            found = given.get(id(leaf))
            if found is not None:
                return found
            return None if _in(leaf.base, given) else ("copy", leaf)

        leaves, graph.result_spec = flatten(result)
        result_sources = [source(leaf) for leaf in leaves]
        write_sources = []
        for slot, value in writes:
            found = ("bound", slot) if slot in graph.stored else source(value)
            if found is not None and found[0] == "copy" and slot in self.tensor_writes:
                found = ("value", value)  # the write-back copies it into the tensor
            write_sources.append((slot, found))
        if None in result_sources or any(found is None for _, found in write_sources):
            return False
        graph.result = result_sources  # type: ignore[assignment]
        graph.writes = write_sources  # type: ignore[assignment]
        return True

    def _replay(self, graph: _Graph, args: list[Any], state: dict[int, Any],
                generators: list[Any]) -> tuple[Any, list[tuple[int, Any]]]:
        for buffer, a in zip(graph.args, args):
            if buffer is not None:
                buffer[...] = a
        for slot, buffer in graph.state.items():
            buffer[...] = state[slot]
        for step, buffer in graph.draws.items():  # drawn as the program draws (runtime.creation.draw)
            buffer[...] = self.xp.asarray(draw(generators[step.generator], step.kind,
                                               step.shape, step.dtype))
        for segment in range(len(graph.captured.graphs)):
            self._check(graph, segment)
            self.backend.launch(graph.captured, segment)
        self.replays += 1

        def given(source: Source) -> Any:
            kind, it = source
            if kind == "copy":
                return it.copy()
            if kind == "arg":
                return args[it]
            if kind == "state":
                return state[it]
            return graph.bound[it] if kind == "bound" else it

        return (unflatten(graph.result_spec, [given(s) for s in graph.result]),
                [(slot, given(s)) for slot, s in graph.writes])

    @staticmethod
    def _check(graph: _Graph, segment: int) -> None:
        """The graph's checks of values made before ``segment`` is launched: raises as the
        program's check_bounds step would."""
        for at, xp, x, low, high, message, error in graph.checks:
            if at == segment:
                prims._check_bounds_impl(xp, x, low=low, high=high, message=message,
                                         error=error)

    def describe(self) -> str:
        """One line: whether the plan runs as a CUDA graph, and why not."""
        if self.off is not None:
            return f"CUDA graph: off ({self.off})"
        if self.graph is None:
            return f"CUDA graph: captured from call {WARM_CALLS + 1}"
        return f"CUDA graph: on ({self.replays} replays, {self.captures} captures)"
