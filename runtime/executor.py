"""Runs a DAG of steps, each once, over per-device ready queues: the plan executor's engine.

The planner's schedule hands over a TaskGraph (devices, priorities, dependency DAG, names) and a
function that runs step i. Each Executor.run is a task with its own dependency counters, CPU
ready queue and error slot, after the autograd engine's GraphTask (runtime/autograd/engine.py),
whose ReadyQueue, per-device threads and error machinery it reuses:

- the calling thread serves the run's CPU queue, as the engine's CPU owner thread does, and up to
  ``workers - 1`` persistent CPU helper threads join it while more CPU steps are ready than
  threads to take them;
- every other device has one persistent worker thread, shared by all runs, with a DeviceContext
  (a CUDA stream; events for dependencies that cross devices);
- among the ready steps of one device, smaller priority runs first, then smaller step index.

With one worker and CPU steps only, a run is a plain loop on the calling thread, in the order a
single worker would take them (TaskGraph.order).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import _quiet
from ._device import canonical_device, cupy_module
from .autograd.engine import DeviceThreads, ReadyQueue, RunState, name_in_note

CPU = "cpu"


class Marker(Protocol):
    """A point in a device's work, returned by DeviceContext.record."""

    def synchronize(self) -> None:
        """Block the calling thread until the device has done the work up to the marker."""


class DeviceContext(Protocol):
    """What a device's worker thread does around its steps (CUDA: a stream and events)."""

    def enter(self) -> None:
        """Set the device up on its worker thread, once, before the first step."""

    def record(self, step: int) -> Marker | None:
        """Mark the end of step's work, just run; None when that work is already complete."""

    def wait(self, marker: Marker) -> None:
        """Make the steps run next on this device wait for another device's marker."""


class HostContext:
    """A device whose steps are done when they return: the CPU, and any device name without a
    context of its own."""

    def enter(self) -> None:
        pass

    def record(self, step: int) -> Marker | None:
        return None

    def wait(self, marker: Marker) -> None:
        marker.synchronize()


class CudaContext:
    """One CUDA stream per device worker: steps queue their kernels on it and return, so host
    work goes on while the GPU computes. A step that feeds another device records an event;
    a consumer on another GPU makes its stream wait for it, one on the host synchronizes it."""

    def __init__(self, device: str) -> None:
        if not device.startswith("cuda:") or canonical_device(device) != device:
            raise ValueError(f"CudaContext: device '{device}' is not of the form 'cuda:N'")
        self.index = int(device[5:])
        self._cupy = cupy_module()
        self.stream: Any = None

    def enter(self) -> None:
        cuda = self._cupy.cuda
        cuda.Device(self.index).use()
        self.stream = cuda.Stream(non_blocking=True)
        self.stream.use()  # CuPy's current stream is per thread: this worker's kernels go here

    def record(self, step: int) -> Marker | None:
        event = self._cupy.cuda.Event(disable_timing=True)
        event.record(self.stream)
        return event  # type: ignore[no-any-return]

    def wait(self, marker: Marker) -> None:
        if isinstance(marker, self._cupy.cuda.Event):
            self.stream.wait_event(marker)  # on the GPU: the host does not block
        else:
            marker.synchronize()


def default_device_context(device: str) -> DeviceContext:
    """A CudaContext for "cuda:N", a HostContext for any other name."""
    if device == "cuda" or device.startswith("cuda:"):
        return CudaContext(device)
    return HostContext()


def _int_tuple(name: str, values: Sequence[Any], *, minimum: int | None = None) -> tuple[int, ...]:
    out = tuple(values)
    for i, v in enumerate(out):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"TaskGraph.{name}[{i}] must be an int, got {type(v).__name__}")
        if minimum is not None and v < minimum:
            raise ValueError(f"TaskGraph.{name}[{i}] is {v}, below {minimum}")
    return out


@dataclass(frozen=True)
class TaskGraph:
    """A DAG of steps to run once each: what the planner's schedule hands the executor.

    Validated on construction (errors name the field and the step); the fields after ``names``
    are derived from the others then, so that run() only reads them.
    """

    devices: tuple[str, ...]  # per step: "cpu", "cuda:0", or any other device name
    priority: tuple[int, ...]  # among ready steps of one device, smaller runs first
    consumers: tuple[tuple[int, ...], ...]  # steps that depend on step i
    in_degree: tuple[int, ...]  # how many steps step i waits for
    names: tuple[str, ...]  # step i as errors name it ("step 12: %40 = matmul")
    # the order one CPU thread runs the steps in: by priority, then index, among the ready ones
    order: tuple[int, ...] = field(init=False, repr=False)
    # per step, its producers on another device that is not the CPU: it waits for their markers
    waits_on: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    # per step, whether its worker records a marker after it: producers for another device, and
    # steps without consumers off the CPU (run() synchronizes those before returning)
    records: tuple[bool, ...] = field(init=False, repr=False)
    sinks_off_cpu: tuple[int, ...] = field(init=False, repr=False)
    off_cpu: tuple[str, ...] = field(init=False, repr=False)  # distinct non-CPU devices

    def __post_init__(self) -> None:
        n = len(self.devices)
        fields = {"devices": self.devices, "priority": self.priority,
                  "consumers": self.consumers, "in_degree": self.in_degree, "names": self.names}
        for name, values in fields.items():
            if isinstance(values, str | bytes) or not isinstance(values, Sequence):
                raise TypeError(f"TaskGraph.{name} must be a sequence, "
                                f"got {type(values).__name__}")
            if len(values) != n:
                raise ValueError(f"TaskGraph.{name} has {len(values)} entries, "
                                 f"devices has {n}: one per step")
        for name in ("devices", "names"):
            for i, v in enumerate(fields[name]):
                if not isinstance(v, str) or not v:
                    raise TypeError(f"TaskGraph.{name}[{i}] must be a non-empty str, got {v!r}")
        priority = _int_tuple("priority", self.priority)
        in_degree = _int_tuple("in_degree", self.in_degree, minimum=0)
        consumers = tuple(self._check_consumers(i, c) for i, c in enumerate(self.consumers))
        producers: list[list[int]] = [[] for _ in range(n)]
        for i, cs in enumerate(consumers):
            for c in cs:
                producers[c].append(i)
        for i, ps in enumerate(producers):
            if len(ps) != in_degree[i]:
                raise ValueError(f"TaskGraph.in_degree[{i}] is {in_degree[i]}, but {len(ps)} "
                                 f"steps list step {i} in their consumers {ps}")
        devices = tuple(self.devices)
        set_ = object.__setattr__
        for name, value in (("devices", devices), ("priority", priority),
                            ("consumers", consumers), ("in_degree", in_degree),
                            ("names", tuple(self.names))):
            set_(self, name, value)
        set_(self, "order", self._serial_order(producers))
        set_(self, "waits_on", tuple(
            tuple(p for p in ps if devices[p] not in (CPU, devices[i]))
            for i, ps in enumerate(producers)))
        set_(self, "records", tuple(
            d != CPU and (not cs or any(devices[c] != d for c in cs))
            for d, cs in zip(devices, consumers, strict=True)))
        set_(self, "sinks_off_cpu",
             tuple(i for i, cs in enumerate(consumers) if not cs and devices[i] != CPU))
        set_(self, "off_cpu", tuple(sorted(set(devices) - {CPU})))

    def _check_consumers(self, i: int, cs: Any) -> tuple[int, ...]:
        if isinstance(cs, str | bytes) or not isinstance(cs, Sequence):
            raise TypeError(f"TaskGraph.consumers[{i}] must be a sequence of step indices, "
                            f"got {type(cs).__name__}")
        out = _int_tuple(f"consumers[{i}]", cs)
        n = len(self.devices)
        for c in out:
            if not 0 <= c < n:
                raise ValueError(f"TaskGraph.consumers[{i}] names step {c}, "
                                 f"outside the {n} steps")
        if len(set(out)) != len(out):
            raise ValueError(f"TaskGraph.consumers[{i}] lists a step twice: {list(out)}")
        return out

    def _serial_order(self, producers: list[list[int]]) -> tuple[int, ...]:
        """Kahn's algorithm by (priority, index); what it cannot order lies on or after a cycle."""
        remaining = list(self.in_degree)
        ready = [(self.priority[i], i) for i, d in enumerate(remaining) if d == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            i = heapq.heappop(ready)[1]
            order.append(i)
            for c in self.consumers[i]:
                remaining[c] -= 1
                if remaining[c] == 0:
                    heapq.heappush(ready, (self.priority[c], c))
        if len(order) != len(remaining):
            cycle = _find_cycle(producers, {i for i, r in enumerate(remaining) if r > 0})
            raise ValueError("TaskGraph.consumers has a cycle: " + " -> ".join(
                self.names[i] for i in cycle))
        return tuple(order)


def _find_cycle(producers: list[list[int]], blocked: set[int]) -> list[int]:
    """A cycle among the steps Kahn's algorithm left waiting: each waits for one of them, so
    walking back through waiting producers must come round to a step already seen."""
    seen: dict[int, int] = {}
    path: list[int] = []
    i = min(blocked)
    while i not in seen:
        seen[i] = len(path)
        path.append(i)
        i = next(p for p in producers[i] if p in blocked)
    cycle = path[seen[i]:]
    cycle.reverse()  # walked against the edges
    first = cycle.index(min(cycle))
    cycle = cycle[first:] + cycle[:first]
    return [*cycle, cycle[0]]


class _Run(RunState):
    """One Executor.run: its dependency counters, CPU queue and error slot.

    ``running`` counts steps in progress on threads other than the caller, so that after an
    error the caller returns only once they finished; the caller's own steps need no count.
    The CPU queue is closed when the run is over (every step done, or an error and nothing
    running elsewhere): that is the caller's done signal, and it sends CPU helpers away.
    """

    def __init__(self, graph: TaskGraph, run_step: Callable[[int], None]) -> None:
        super().__init__()
        self.graph = graph
        self.run_step = run_step
        self.remaining = list(graph.in_degree)
        self.pending = len(graph.devices)
        self.running = 0
        self.helpers = 0  # helper threads asked for and not yet gone
        self.cpu: ReadyQueue[int] = ReadyQueue()
        self.markers: list[Marker | None] = [None] * len(graph.devices)


_HOST = HostContext()


class Executor:
    """Runs TaskGraphs with ``workers`` CPU threads (the caller included) and one persistent
    thread per other device. Several threads may call run() at once; each call is its own task.
    close() (or a with block) stops the threads once no run is in progress.

    A step must not run() a graph on the executor running it when that graph has steps on the
    step's own device other than the CPU: that device's one thread would wait for itself.
    """

    def __init__(self, workers: int = 1,
                 device_context: Callable[[str], DeviceContext] = default_device_context) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"Executor(workers={workers!r}): workers must be an int >= 1 "
                             "(CPU threads, the calling thread included)")
        self.workers = workers
        self._device_context = device_context
        self._contexts: dict[str, DeviceContext] = {}
        self._devices = DeviceThreads("executor", self._serve_device)
        self._help: ReadyQueue[_Run] = ReadyQueue()  # runs asking for a CPU helper thread
        self._helper_threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._active = 0  # runs in progress on threads
        self._closed = False

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._active:
                raise RuntimeError(f"Executor.close() while {self._active} runs are in progress")
            self._closed = True
            helpers, self._helper_threads = self._helper_threads, []
        self._devices.close()
        self._help.close()
        for t in helpers:
            t.join()

    def run(self, graph: TaskGraph, run_step: Callable[[int], None]) -> None:
        """Call run_step(i) once for every step, each after the steps it depends on. The first
        exception stops handing out steps; steps in progress finish; then it is raised here,
        with a note naming the step."""
        if not isinstance(graph, TaskGraph):
            raise TypeError(f"Executor.run: graph must be a TaskGraph, got {type(graph).__name__}")
        if self._closed:
            raise RuntimeError("Executor.run: the executor is closed")
        if not graph.off_cpu and (self.workers == 1 or len(graph.order) < 2):
            for i in graph.order:
                try:
                    run_step(i)
                except BaseException as exc:
                    name_in_note(exc, graph.names[i])
                    raise
            return
        self._start(graph)
        try:
            self._run_threaded(_Run(graph, run_step))
        finally:
            with self._lock:
                self._active -= 1

    def _start(self, graph: TaskGraph) -> None:
        """Count the run in; make the contexts of its devices here, so that a bad device name
        fails the call before any step runs."""
        with self._lock:
            if self._closed:
                raise RuntimeError("Executor.run: the executor is closed")
            try:
                for d in graph.off_cpu:
                    if d not in self._contexts:
                        self._contexts[d] = self._device_context(d)
            except BaseException as exc:
                name_in_note(exc, f"the setup of device {d!r}")
                raise
            self._active += 1

    def _run_threaded(self, run: _Run) -> None:
        graph = run.graph
        try:
            for i, waits_for in enumerate(graph.in_degree):
                if waits_for == 0:
                    self._push(run, i, serving=True)
            cpu = run.cpu
            while (i := cpu.pop()) is not None:
                while i is not None:
                    i = self._step(run, i, CPU, _HOST, owner=True)
        except BaseException as exc:  # raised on this thread while it waited or served
            self._fail(run, exc, None, counted=False)
            while run.cpu.pop() is not None:
                pass  # steps in progress elsewhere finish; the last one closes the queue
        if run.exception is not None:
            raise run.exception
        for i in graph.sinks_off_cpu:
            marker = run.markers[i]
            if marker is not None:
                marker.synchronize()

    def _step(self, run: _Run, i: int, here: str, ctx: DeviceContext,
              owner: bool) -> int | None:
        """Run step i of run on this thread, a thread of device ``here``, unless the run has
        failed; then queue the consumers it made ready, but return the one this thread should
        run next, if any. ``owner``: this is the thread that called run()."""
        graph = run.graph
        with run.lock:
            if run.has_error:
                return None
            if not owner:
                run.running += 1
        try:
            for p in graph.waits_on[i]:
                marker = run.markers[p]
                if marker is not None:
                    ctx.wait(marker)
            run.run_step(i)
            if graph.records[i]:
                run.markers[i] = ctx.record(i)
        except BaseException as exc:  # noqa: BLE001 - raised in the caller
            self._fail(run, exc, graph.names[i], counted=not owner)
            return None
        ready: list[int] = []
        with run.lock:
            if not owner:
                run.running -= 1
            if run.has_error:
                over = run.running == 0
            else:
                run.pending -= 1
                over = run.pending == 0
                remaining = run.remaining
                for c in graph.consumers[i]:
                    left = remaining[c] - 1
                    remaining[c] = left
                    if left == 0:
                        ready.append(c)
        if over:
            run.cpu.close()
            return None
        try:
            keep = self._next_here(run, ready, here)
            for c in ready:
                if c != keep:
                    self._push(run, c, serving=here == CPU and keep is None)
            return keep
        except BaseException as exc:  # noqa: BLE001 - a thread that could not start, say
            self._fail(run, exc, graph.names[i], counted=False)
            return None

    def _next_here(self, run: _Run, ready: list[int], here: str) -> int | None:
        """The ready step of device ``here`` that this thread runs next without queueing it:
        the first by (priority, index), when no step waits in here's queue (which would come
        first). Saves a push and a pop per step of a chain."""
        if not ready:
            return None
        if len(run.cpu if here == CPU else self._devices.queue(here)):
            return None
        devices = run.graph.devices
        if len(ready) == 1:
            return ready[0] if devices[ready[0]] == here else None
        priority = run.graph.priority
        return min((c for c in ready if devices[c] == here), default=None,
                   key=lambda c: (priority[c], c))

    @staticmethod
    def _fail(run: _Run, exc: BaseException, where: str | None, counted: bool) -> None:
        """Keep exc as the run's error if it is the first; close the run's queue if nothing
        runs elsewhere any more. ``counted``: the failing step was counted in run.running."""
        with run.lock:
            if counted:
                run.running -= 1
            run.record_error(exc, where)
            over = run.running == 0
        if over:
            run.cpu.close()

    def _push(self, run: _Run, i: int, serving: bool) -> None:
        """Queue ready step i on its device. On the CPU, ask for a helper thread when more steps
        wait than threads will take them (``serving``: this thread takes one next)."""
        graph = run.graph
        device = graph.devices[i]
        key = (graph.priority[i], i)
        if device != CPU:
            self._devices.queue(device).push(key, (run, i))
            return
        q = run.cpu
        q.push(key, i)
        if self.workers > 1 and q.unclaimed() > serving:
            with run.lock:
                wanted = run.helpers < self.workers - 1
                if wanted:
                    run.helpers += 1
            if wanted:
                self._ask_for_helper(run)

    def _ask_for_helper(self, run: _Run) -> None:
        if len(self._helper_threads) < self.workers - 1:
            with self._lock:
                if not self._closed and len(self._helper_threads) < self.workers - 1:
                    t = threading.Thread(target=self._serve_helper, daemon=True,
                                         name=f"executor-cpu-{len(self._helper_threads) + 1}")
                    t.start()
                    self._helper_threads.append(t)
        self._help.push(0, run)

    def _serve_helper(self) -> None:
        """A CPU helper: takes a run that asked for help and runs its ready CPU steps until it
        finds none, then waits for the next request."""
        _quiet.ignore()  # this thread's numpy warnings, for good (runtime._quiet)
        while (run := self._help.pop()) is not None:
            cpu = run.cpu
            while (i := cpu.pop(block=False)) is not None:
                while i is not None:
                    i = self._step(run, i, CPU, _HOST, owner=False)
            with run.lock:
                run.helpers -= 1

    def _serve_device(self, device: str, q: ReadyQueue[tuple[_Run, int]]) -> None:
        ctx = self._contexts[device]
        try:
            ctx.enter()
        except BaseException as exc:  # noqa: BLE001 - every step on this device fails with it
            self._fail_device(device, q, exc)
            return
        while (item := q.pop()) is not None:
            run, i = item
            while i is not None:
                i = self._step(run, i, device, ctx, owner=False)

    def _fail_device(self, device: str, q: ReadyQueue[tuple[_Run, int]],
                     cause: BaseException) -> None:
        while (item := q.pop()) is not None:
            run, i = item
            error = RuntimeError(f"the worker thread of device '{device}' could not start: "
                                 f"{cause!r}")
            error.__cause__ = cause
            self._fail(run, error, run.graph.names[i], counted=False)
