"""``rt.profiler``: PyTorch's ``torch.profiler`` for the CPU: ``profile``, ``record_function``,
``schedule``, ``tensorboard_trace_handler``, ``ProfilerActivity``, ``ProfilerAction``.

While a ``profile`` records, every eager op is an event (``aten::<primitive>``, as PyTorch's
operator events; with ``record_shapes``, its tensor arguments' shapes), every autograd node
the engine runs is one (``autograd::engine::evaluate_function: MulBackward0``), every call of
a compiled step is one (``backplan::compiled_step: <name>``: its plan runs as one call, its
kernels are not dispatched op by op) and so is every ``record_function`` block. Events nest by
thread (self time is an event's time less its children's), and ``key_averages()`` groups
them into the table PyTorch prints.

Only CPU time is measured: a GPU activity is refused where no GPU is present (with PyTorch's
warning), and measured as the host's time around the call where one is; memory, stack,
FLOP and module attribution (``profile_memory``, ``with_stack``, ``with_flops``,
``with_modules``) are not recorded and raise rather than print empty columns."""

from __future__ import annotations

import contextlib
import enum
import gzip
import json
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from . import _profiling

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities this runtime can profile: the CPU, and CUDA where a GPU is present."""
    from . import cuda

    found = {ProfilerActivity.CPU}
    if cuda.is_available():
        found.add(ProfilerActivity.CUDA)
    return found


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's profiler schedule: after ``skip_first`` steps, cycles of ``wait`` idle steps,
    ``warmup`` steps and ``active`` recorded ones (the last of them RECORD_AND_SAVE), ``repeat``
    times (0: forever); ``skip_first_wait`` skips the wait of the first cycle."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step should be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _default_schedule(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


# --- events -----------------------------------------------------------------------------------
def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


class FunctionEvent:
    """One recorded range: its name, thread, start and end (microseconds), the shapes of its
    tensor arguments, and the ranges it encloses on its thread."""

    def __init__(self, id: int, name: str, thread: int, start_us: float,
                 input_shapes: list[list[int]] | None, kind: str) -> None:
        self.id, self.name, self.thread = id, name, thread
        self.start_us, self.end_us = start_us, start_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.kind = kind  # "op", "autograd", "compiled" or "user"
        self.count = 1

    key = property(lambda self: self.name)
    is_user_annotation = property(lambda self: self.kind == "user")

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_format_time(self.cpu_time_total)} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Events of one key (and input shapes, where grouped by them) added together."""

    def __init__(self, key: str, input_shapes: Any = None) -> None:
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_parent = None
        self.is_user_annotation = False

    def add(self, event: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.is_user_annotation = event.is_user_annotation
        if self.input_shapes is None:
            self.input_shapes = event.input_shapes
        return self

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """Events (or their averages), with PyTorch's summaries."""

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """One average a key (and, ``group_by_input_shape``, a distinct argument-shape
        list), in the order the keys first occur."""
        if group_by_stack_n:
            raise NotImplementedError("group_by_stack_n: the profiler records no stacks")
        groups: dict[Any, FunctionEventAvg] = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            group = groups.get((e.key, shapes))
            if group is None:
                group = groups[(e.key, shapes)] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shape else [])
            group.add(e)
        return EventList(groups.values())

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """PyTorch's table: name, self CPU time and share, total CPU time and share, the
        average, the call count (and the input shapes where any were recorded), sorted by the
        attribute ``sort_by`` (descending), at most ``row_limit`` rows."""
        return _table(self, sort_by, row_limit, max_name_column_width,
                      max_shapes_column_width, header, top_level_events_only, time_unit)

    def export_chrome_trace(self, path: str) -> None:
        _write_trace(self, path)

    def __str__(self) -> str:
        return self.table()


_SORT_KEYS = {"cpu_time", "cpu_time_total", "self_cpu_time_total", "count"}


def _table(events: EventList, sort_by: str | None, row_limit: int, name_width_max: int | None,
           shapes_width_max: int | None, header: str | None, top_level_only: bool,
           time_unit: str | None) -> str:
    if not events:
        return ""
    if sort_by is not None:
        key = sort_by.replace("cuda", "device")
        if key not in _SORT_KEYS:
            raise AttributeError(f"the profiler's events have no time {sort_by!r} (CPU time "
                                 f"only: {sorted(_SORT_KEYS)})")
        events = EventList(sorted(events, key=lambda e: getattr(e, key), reverse=True))
    has_shapes = any(e.input_shapes for e in events)
    name_width = max(len(e.key) for e in events) + 4
    if name_width_max is not None:
        name_width = min(name_width, name_width_max)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if shapes_width_max is not None:
        shapes_width = min(shapes_width, shapes_width_max)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    widths = [name_width] + [12] * 6
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    row_format = "".join("{: >" + str(w) + "}  " for w in widths)
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def unit(us: float) -> str:
        scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(time_unit or "")
        return _format_time(us) if scale is None else f"{us / scale:.3f}{time_unit}"

    total_self = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if name_width_max is not None and len(name) >= name_width_max - 3:
            name = name[:name_width_max - 3] + "..."
        row = [name, _format_share(e.self_cpu_time_total, total_self),
               unit(e.self_cpu_time_total), _format_share(e.cpu_time_total, total_self),
               unit(e.cpu_time_total), unit(e.cpu_time), e.count]
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        lines.append(row_format.format(*row))
    lines += [separator, f"Self CPU time total: {unit(total_self)}"]
    return "\n".join(lines) + "\n"


def _write_trace(events: Iterable[FunctionEvent], path: str) -> None:
    """Chrome's trace format (chrome://tracing, Perfetto): one complete event a range."""
    pid = os.getpid()
    trace = {"traceEvents": [
        {"name": e.name, "ph": "X", "cat": "user_annotation" if e.kind == "user" else "cpu_op",
         "ts": e.start_us, "dur": e.cpu_time_total, "pid": pid, "tid": e.thread,
         "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
        for e in events if isinstance(e, FunctionEvent)], "displayTimeUnit": "ms"}
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        json.dump(trace, f)


# --- recording --------------------------------------------------------------------------------
class _Recorder:
    """What the dispatcher, the engine and record_function report to while a profile records
    (``runtime._profiling.ACTIVE``): ranges nested by thread."""

    def __init__(self, record_shapes: bool) -> None:
        self.record_shapes = record_shapes
        self.events: list[FunctionEvent] = []
        self._lock = threading.Lock()
        self._stacks = threading.local()
        self._next = 0

    def begin(self, name: str, kind: str, args: tuple[Any, ...] = ()) -> FunctionEvent:
        shapes = _shapes(args) if self.record_shapes and kind == "op" else None
        with self._lock:
            event = FunctionEvent(self._next, name, threading.get_ident(),
                                  time.perf_counter_ns() / 1e3, shapes, kind)
            self._next += 1
            self.events.append(event)
        stack = self._stack()
        if stack:
            event.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(event)
        stack.append(event)
        return event

    def end(self, event: FunctionEvent) -> None:
        event.end_us = time.perf_counter_ns() / 1e3
        stack = self._stack()
        if stack and stack[-1] is event:
            stack.pop()
        elif event in stack:  # ranges closed out of order: drop those opened inside it
            del stack[stack.index(event):]

    def _stack(self) -> list[FunctionEvent]:
        stack = getattr(self._stacks, "events", None)
        if stack is None:
            stack = self._stacks.events = []
        return stack

    def op(self, name: str, args: tuple[Any, ...], run: Callable[[], Any]) -> Any:
        event = self.begin(name, "op", args)
        try:
            return run()
        finally:
            self.end(event)

    @contextlib.contextmanager
    def range(self, name: str, kind: str) -> Any:
        event = self.begin(name, kind)
        try:
            yield event
        finally:
            self.end(event)


def _shapes(args: tuple[Any, ...]) -> list[list[int]]:
    """PyTorch's input shapes: a tensor argument's shape, [] for anything else."""
    from .tensor import Tensor

    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


class record_function(contextlib.ContextDecorator):
    """A user range named ``name`` in the profile that records (nothing otherwise): as a
    context manager or a decorator."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._event: FunctionEvent | None = None
        self._recorder: _Recorder | None = None

    def __enter__(self) -> record_function:
        recorder = _profiling.ACTIVE
        if recorder is not None:
            self._recorder, self._event = recorder, recorder.begin(self.name, "user")
        return self

    def __exit__(self, *exc: Any) -> bool:
        if self._recorder is not None and self._event is not None:
            self._recorder.end(self._event)
        self._recorder = self._event = None
        return False


class profile:
    """PyTorch's ``torch.profiler.profile`` on the CPU: records while entered (or between
    ``start`` and ``stop``), by ``schedule`` where one is given (``step()`` advances it, and
    ``on_trace_ready(prof)`` is called at the end of each recorded cycle)."""

    def __init__(self, activities: Iterable[ProfilerActivity] | None = None, *,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback: Any = None) -> None:
        for flag, value in (("profile_memory", profile_memory), ("with_stack", with_stack),
                            ("with_flops", with_flops), ("with_modules", with_modules)):
            if value:
                raise NotImplementedError(f"profile({flag}=True): this runtime's profiler "
                                          "records CPU time and input shapes only")
        if experimental_config is not None or execution_trace_observer is not None:
            raise NotImplementedError("profile: experimental_config and "
                                      "execution_trace_observer are not supported")
        wanted = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            wanted.add(ProfilerActivity.CUDA)
        if ProfilerActivity.CUDA in wanted and ProfilerActivity.CUDA not in \
                supported_activities():
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
            wanted.discard(ProfilerActivity.CUDA)
        unknown = wanted - {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        if unknown:
            raise NotImplementedError(f"profile: activities {sorted(a.name for a in unknown)} "
                                      "cannot be profiled here")
        self.activities = wanted
        self.record_shapes = record_shapes
        self.schedule = schedule if schedule is not None else _default_schedule
        self.on_trace_ready = on_trace_ready
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._recorder: _Recorder | None = None
        self._events = EventList()
        self._started = False

    # --- the recorder's lifetime ---
    def _begin_recording(self) -> None:
        if _profiling.ACTIVE is not None and _profiling.ACTIVE is not self._recorder:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._recorder = _Recorder(self.record_shapes)
        _profiling.ACTIVE = self._recorder

    def _end_recording(self) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            if _profiling.ACTIVE is recorder:
                _profiling.ACTIVE = None
            events = EventList(recorder.events)
            self._events = EventList(self._events + events) if self.acc_events else events

    def start(self) -> None:
        self._started = True
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin_recording()

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self._recorder is not None:
            self._end_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def step(self) -> None:
        """Advance the schedule by one step."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if not self._started:
            return
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.RECORD_AND_SAVE or (
                previous in recording and self.current_action not in recording):
            self._end_recording()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if self.current_action in recording and self._recorder is None:
            self._begin_recording()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.stop()
        return False

    # --- results ---
    def events(self) -> EventList:
        if self._recorder is not None:
            raise RuntimeError("the profiler is still recording: its events are read after "
                               "it stops (or after a step that ends a recorded cycle)")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        if group_by_overload_name:
            raise NotImplementedError("group_by_overload_name: events have no overloads here")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        _write_trace(self.events(), path)

    def add_metadata(self, key: str, value: str) -> None:
        self._metadata = {**getattr(self, "_metadata", {}), key: value}


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each recorded cycle's Chrome trace into ``dir_name``
    as ``<worker>.<milliseconds>.pt.trace.json[.gz]``, TensorBoard's profiler plugin's layout."""
    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (
            ".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler
