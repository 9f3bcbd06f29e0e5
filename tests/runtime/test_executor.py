"""The plan executor (runtime/executor.py): a run per call, per-device ready queues and threads.

Devices other than "cpu" are fake names here ("a", "b"): each still gets its own worker thread,
and a recording DeviceContext shows the record/wait calls a CUDA stream would get.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from runtime import executor as executor_module
from runtime.executor import CudaContext, Executor, HostContext, TaskGraph
from tests.threads import in_threads, switch_interval


def make_graph(devices: list[str], edges: list[tuple[int, int]],
               priority: list[int] | None = None) -> TaskGraph:
    n = len(devices)
    consumers: list[list[int]] = [[] for _ in range(n)]
    in_degree = [0] * n
    for p, c in edges:
        consumers[p].append(c)
        in_degree[c] += 1
    return TaskGraph(devices=tuple(devices), priority=tuple(priority or [0] * n),
                     consumers=tuple(tuple(c) for c in consumers), in_degree=tuple(in_degree),
                     names=tuple(f"step {i}: op{i}" for i in range(n)))


def random_graph(rng: random.Random, n: int, devices: tuple[str, ...]) -> TaskGraph:
    edges = [(p, c) for c in range(n) for p in range(c) if rng.random() < 3 / (c + 1)]
    order = list(range(n))
    rng.shuffle(order)  # so that step index is not a topological order
    return make_graph([rng.choice(devices) for _ in range(n)],
                      [(order[p], order[c]) for p, c in edges],
                      [rng.randrange(4) for _ in range(n)])


class Trace:
    """Start and end of every step, numbered in one sequence across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clock = 0
        self.start: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.thread: dict[int, str] = {}
        self.calls: list[int] = []

    def tick(self) -> int:
        with self.lock:
            self.clock += 1
            return self.clock

    def step(self, work: Callable[[int], None] | None = None) -> Callable[[int], None]:
        def run_step(i: int) -> None:
            with self.lock:
                self.calls.append(i)
            self.thread[i] = threading.current_thread().name
            self.start[i] = self.tick()
            if work is not None:
                work(i)
            self.end[i] = self.tick()

        return run_step

    def check(self, graph: TaskGraph) -> None:
        assert sorted(self.calls) == list(range(len(graph.devices)))  # each step exactly once
        for p, cs in enumerate(graph.consumers):
            for c in cs:
                assert self.end[p] < self.start[c], f"step {c} started before step {p} ended"


def tiny_work(i: int) -> None:
    if i % 3 == 0:
        time.sleep(0)  # gives the GIL away, so that threads interleave


# --- TaskGraph ------------------------------------------------------------------------------


def test_serial_order_is_by_priority_then_index_among_ready_steps() -> None:
    # 0 and 3 are ready first (3 by priority), 3 releases 4, which outranks 0
    g = make_graph(["cpu"] * 5, [(0, 1), (3, 4), (1, 2)], priority=[2, 0, 0, 1, 0])
    assert g.order == (3, 4, 0, 1, 2)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(priority=(0,)), ValueError, r"TaskGraph.priority has 1 entries, devices has 2"),
    (dict(names=("x", "y", "z")), ValueError, r"TaskGraph.names has 3 entries"),
    (dict(in_degree=(0, 0)), ValueError,
     r"TaskGraph.in_degree\[1\] is 0, but 1 steps list step 1 in their consumers \[0\]"),
    (dict(consumers=((2,), ())), ValueError, r"TaskGraph.consumers\[0\] names step 2"),
    (dict(consumers=((1, 1), ()), in_degree=(0, 2)), ValueError,
     r"TaskGraph.consumers\[0\] lists a step twice"),
    (dict(consumers=(("1",), ())), TypeError, r"TaskGraph.consumers\[0\]\[0\] must be an int"),
    (dict(consumers=(1, ())), TypeError, r"TaskGraph.consumers\[0\] must be a sequence"),
    (dict(priority=(0, 1.5)), TypeError, r"TaskGraph.priority\[1\] must be an int, got float"),
    (dict(in_degree=(-1, 1)), ValueError, r"TaskGraph.in_degree\[0\] is -1, below 0"),
    (dict(devices=("cpu", "")), TypeError, r"TaskGraph.devices\[1\] must be a non-empty str"),
    (dict(names=("x", None)), TypeError, r"TaskGraph.names\[1\] must be a non-empty str"),
    (dict(devices="cc"), TypeError, r"TaskGraph.devices must be a sequence, got str"),
])
def test_bad_task_graphs_name_the_field(kwargs: dict[str, Any], error: type[Exception],
                                        match: str) -> None:
    fields: dict[str, Any] = dict(devices=("cpu", "cpu"), priority=(0, 0), consumers=((1,), ()),
                                  in_degree=(0, 1), names=("s0", "s1"))
    fields.update(kwargs)
    with pytest.raises(error, match=match):
        TaskGraph(**fields)


def test_a_cycle_is_named_step_by_step() -> None:
    # 0 -> 1 -> 2 -> 3 -> 1, and 4 hangs off the cycle
    with pytest.raises(ValueError, match=r"TaskGraph.consumers has a cycle: "
                                         r"s1 -> s2 -> s3 -> s1$"):
        TaskGraph(devices=("cpu",) * 5, priority=(0,) * 5,
                  consumers=((1,), (2,), (3,), (1, 4), ()), in_degree=(0, 2, 1, 1, 1),
                  names=tuple(f"s{i}" for i in range(5)))


# --- running --------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_run_every_step_once_after_its_producers(workers: int, seed: int) -> None:
    rng = random.Random(seed)
    devices = ("cpu",) if seed % 2 else ("cpu", "cpu", "a", "b")
    with Executor(workers) as ex, switch_interval(1e-5):
        for _ in range(3):
            g = random_graph(rng, rng.randrange(1, 40), devices)
            trace = Trace()
            ex.run(g, trace.step(tiny_work))
            trace.check(g)


def test_one_worker_runs_ready_cpu_steps_by_priority_then_index() -> None:
    priority = [3, 1, 2, 1, 0, 5]
    g = make_graph(["cpu"] * 6, [], priority)
    for devices in (["cpu"] * 6, ["cpu"] * 6 + ["a"]):  # inline, and with a device thread
        graph = g if len(devices) == 6 else make_graph(devices, [], [*priority, 0])
        trace = Trace()
        with Executor(1) as ex:
            ex.run(graph, trace.step())
        cpu_order = [i for i in trace.calls if i < 6]
        assert cpu_order == [4, 1, 3, 2, 0, 5]


def test_one_worker_and_cpu_steps_only_is_a_loop_on_the_calling_thread() -> None:
    before = set(threading.enumerate())
    g = make_graph(["cpu"] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    trace = Trace()
    with Executor(1) as ex:
        ex.run(g, trace.step())
        assert set(threading.enumerate()) == before  # no thread started or woken
    assert set(trace.thread.values()) == {threading.current_thread().name}
    assert trace.calls == list(g.order)


def test_empty_graph_runs() -> None:
    for workers in (1, 2):
        with Executor(workers) as ex:
            ex.run(make_graph([], []), Trace().step())


def test_steps_run_on_their_devices_threads() -> None:
    g = make_graph(["cpu", "a", "b", "a", "cpu"], [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    trace = Trace()
    with Executor(1) as ex:
        ex.run(g, trace.step())
    caller = threading.current_thread().name
    assert trace.thread == {0: caller, 1: "executor-a", 2: "executor-b", 3: "executor-a",
                            4: caller}
    trace.check(g)


class RecordingContext(HostContext):
    """Logs what a CUDA stream would be asked to do; markers log when the host waits on them."""

    def __init__(self, device: str, log: list[tuple[Any, ...]]) -> None:
        self.device = device
        self.log = log

    def enter(self) -> None:
        self.log.append(("enter", self.device, threading.current_thread().name))

    def record(self, step: int) -> Any:
        self.log.append(("record", self.device, step))
        log = self.log
        return SimpleNamespace(step=step, device=self.device,
                               synchronize=lambda: log.append(("synchronize", step)))

    def wait(self, marker: Any) -> None:
        self.log.append(("wait", self.device, marker.step))


def test_device_context_records_and_waits_on_cross_device_edges_only() -> None:
    log: list[tuple[Any, ...]] = []
    # cpu0 -> a1 -> a2 -> b3 -> cpu4 ;  a1 -> cpu4 ;  b5 (a sink off the CPU)
    g = make_graph(["cpu", "a", "a", "b", "cpu", "b"],
                   [(0, 1), (1, 2), (2, 3), (3, 4), (1, 4)])
    assert g.waits_on == ((), (), (), (2,), (1, 3), ())
    assert g.records == (False, True, True, True, False, True)

    def run_step(i: int) -> None:
        log.append(("run", i))

    with Executor(1, device_context=lambda d: RecordingContext(d, log)) as ex:
        ex.run(g, run_step)
        assert sorted(e for e in log if e[0] == "enter") == [
            ("enter", "a", "executor-a"), ("enter", "b", "executor-b")]
        pos = {e: k for k, e in enumerate(log)}
        for producer, consumer, device in [(2, 3, "b")]:  # device to device: the stream waits
            assert (pos[("record", "a", producer)] < pos[("wait", device, producer)]
                    < pos[("run", consumer)])
        for producer in (3, 1):  # device to host: the host synchronizes
            assert pos[("synchronize", producer)] < pos[("run", 4)]
        # a run returns once its sinks off the CPU are done
        assert ("synchronize", 5) in pos
        assert not any(e[0] == "wait" and e[2] in (0, 1) for e in log)  # no edge crossed there
        assert not any(e[0] == "record" and e[2] in (0, 4) for e in log)  # CPU steps: nothing
        log.clear()
        ex.run(g, run_step)
        assert not any(e[0] == "enter" for e in log)  # device threads persist across runs


def overlapping(branches: set[int]) -> Callable[[int], None]:
    """A run_step whose steps in ``branches`` each wait, releasing the GIL, until all of them
    are running: it completes only if they run at the same time."""
    meet = threading.Barrier(len(branches), timeout=10)

    def run_step(i: int) -> None:
        if i in branches:
            time.sleep(0.01)
            meet.wait()  # BrokenBarrierError after 10 s if the branches ran one after the other

    return run_step


def test_two_gil_releasing_branches_overlap_with_two_workers() -> None:
    # a root, two independent branches, a join
    g = make_graph(["cpu"] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    with Executor(2) as ex:
        ex.run(g, overlapping({1, 2}))


def test_host_work_overlaps_device_work_with_one_worker() -> None:
    with Executor(1) as ex:
        ex.run(make_graph(["cpu", "a"], []), overlapping({0, 1}))


def test_eight_threads_calling_run_at_once_each_get_their_own_run() -> None:
    g = random_graph(random.Random(7), 12, ("cpu", "cpu", "a", "b"))
    with Executor(2) as ex:

        def caller() -> None:
            for _ in range(100):
                trace = Trace()
                ex.run(g, trace.step(tiny_work))
                trace.check(g)

        in_threads(*[caller] * 8)


# --- errors ---------------------------------------------------------------------------------


class StepFailed(Exception):
    pass


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("failing_device", ["cpu", "a"])
def test_a_failing_step_is_raised_in_the_caller_named_and_later_runs_work(
        workers: int, failing_device: str) -> None:
    # 0 fails; 1 (on b) is in progress meanwhile and finishes; 2 and 3 wait for 0, never run
    g = make_graph([failing_device, "b", "cpu", "cpu"], [(0, 2), (1, 3), (2, 3)])
    started_1 = threading.Event()
    trace = Trace()

    def work(i: int) -> None:
        if i == 1:
            started_1.set()
            time.sleep(0.05)
        if i == 0:
            started_1.wait()
            raise StepFailed("boom")

    with Executor(workers) as ex:
        with pytest.raises(StepFailed, match="boom") as info:
            ex.run(g, trace.step(work))
        assert info.value.__notes__ == ["raised while running step 0: op0"]
        assert 1 in trace.end  # in progress when 0 failed: finished before run returned
        assert 2 not in trace.calls and 3 not in trace.calls
        time.sleep(0.01)
        assert 3 not in trace.calls  # nothing is handed out after the run returned
        trace = Trace()
        ex.run(g, trace.step())
        trace.check(g)


def test_steps_queued_when_a_step_fails_are_not_run() -> None:
    # 0 fails while 2 runs on a; 1 waits in the CPU queue, 3 in a's queue behind 2
    g = make_graph(["cpu", "cpu", "a", "a"], [], priority=[0, 1, 0, 1])
    started_2 = threading.Event()

    def work(i: int) -> None:
        if i == 2:
            started_2.set()
            time.sleep(0.05)
        if i == 0:
            started_2.wait()
            raise StepFailed("boom")

    trace = Trace()
    with Executor(1) as ex:
        with pytest.raises(StepFailed):
            ex.run(g, trace.step(work))
        time.sleep(0.02)
    assert sorted(trace.calls) == [0, 2]


@pytest.mark.parametrize("device", ["cpu", "a"])
def test_keyboard_interrupt_from_a_step_reaches_the_caller(device: str) -> None:
    g = make_graph([device, "cpu"], [(0, 1)])

    def run_step(i: int) -> None:
        raise KeyboardInterrupt

    with Executor(2) as ex:
        with pytest.raises(KeyboardInterrupt) as info:
            ex.run(g, run_step)
        assert info.value.__notes__ == ["raised while running step 0: op0"]
        trace = Trace()
        ex.run(g, trace.step())
        trace.check(g)


def test_keyboard_interrupt_while_the_caller_waits_lets_steps_in_progress_finish() -> None:
    assert threading.current_thread() is threading.main_thread()
    g = make_graph(["a", "cpu"], [(0, 1)])
    finished = threading.Event()

    def run_step(i: int) -> None:
        if i == 0:
            # Ctrl-C, delivered to the main thread, which waits for this step in a parked pop
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]
            time.sleep(0.05)
            finished.set()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with Executor(1) as ex:
            with pytest.raises(KeyboardInterrupt):
                ex.run(g, run_step)
            assert finished.is_set()
            trace = Trace()
            ex.run(g, trace.step())
            trace.check(g)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_device_that_cannot_start_fails_its_steps_and_the_run() -> None:
    class Broken(HostContext):
        def enter(self) -> None:
            raise OSError("no such device")

    g = make_graph(["cpu", "bad"], [(0, 1)])
    with Executor(1, device_context=lambda d: Broken()) as ex:
        for _ in range(2):
            with pytest.raises(RuntimeError, match="the worker thread of device 'bad' could not "
                                                   "start: OSError") as info:
                ex.run(g, Trace().step())
            assert info.value.__notes__ == ["raised while running step 1: op1"]
            assert isinstance(info.value.__cause__, OSError)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"Executor\(workers=0\): workers must be an int >= 1"):
        Executor(0)
    with pytest.raises(ValueError, match=r"workers must be an int"):
        Executor(True)
    ex = Executor(1)
    with pytest.raises(TypeError, match="graph must be a TaskGraph, got dict"):
        ex.run({}, print)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"device 'cuda' is not of the form 'cuda:N'") as info:
        ex.run(make_graph(["cuda"], []), print)
    assert info.value.__notes__ == ["raised while running the setup of device 'cuda'"]
    ex.close()
    with pytest.raises(RuntimeError, match="the executor is closed"):
        ex.run(make_graph(["cpu"], []), print)


def test_close_refuses_while_a_run_is_in_progress() -> None:
    g = make_graph(["a"], [])
    inside, release = threading.Event(), threading.Event()

    def run_step(i: int) -> None:
        inside.set()
        release.wait()

    ex = Executor(1)
    t = threading.Thread(target=ex.run, args=(g, run_step))
    t.start()
    inside.wait()
    with pytest.raises(RuntimeError, match=r"close\(\) while 1 runs are in progress"):
        ex.close()
    release.set()
    t.join()
    ex.close()


# --- CUDA, with a CuPy stand-in ---------------------------------------------------------------


class FakeCuda:
    """What CudaContext asks of cupy.cuda, logged with the calling thread."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        log = self.log

        class Device:
            def __init__(self, index: int) -> None:
                self.index = index

            def use(self) -> None:
                log.append(("device", self.index, threading.current_thread().name))

        class Stream:
            count = 0

            def __init__(self, non_blocking: bool = False) -> None:
                assert non_blocking
                Stream.count += 1
                self.name = f"stream{Stream.count}"

            def use(self) -> None:
                log.append(("use", self.name, threading.current_thread().name))

            def wait_event(self, event: Event) -> None:
                log.append(("wait_event", self.name, event.name))

        class Event:
            def __init__(self, disable_timing: bool = False) -> None:
                self.name = ""

            def record(self, stream: Stream) -> None:
                self.name = f"event@{stream.name}#{len(log)}"
                log.append(("record", stream.name, self.name))

            def synchronize(self) -> None:
                log.append(("synchronize", self.name))

        self.cuda = SimpleNamespace(Device=Device, Stream=Stream, Event=Event)


def test_cuda_context_streams_and_events(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCuda()
    monkeypatch.setattr(executor_module, "cupy_module", lambda: fake)
    # cpu0 -> cuda:0 1 -> cuda:1 2 -> cpu3
    g = make_graph(["cpu", "cuda:0", "cuda:1", "cpu"], [(0, 1), (1, 2), (2, 3)])
    with Executor(1) as ex:
        ex.run(g, lambda i: fake.log.append(("run", i)))
    log = fake.log
    assert ("device", 0, "executor-cuda:0") in log and ("device", 1, "executor-cuda:1") in log
    uses = {e[1]: e[2] for e in log if e[0] == "use"}
    assert sorted(uses.values()) == ["executor-cuda:0", "executor-cuda:1"]  # a stream each
    records = [e for e in log if e[0] == "record"]
    assert len(records) == 2  # step 1 feeds cuda:1, step 2 feeds the host
    (_, stream1, event1), (_, stream2, event2) = records
    assert uses[stream1] == "executor-cuda:0" and uses[stream2] == "executor-cuda:1"
    # cuda:1 waits for cuda:0 on the GPU, the host synchronizes before step 3
    assert log.index(("wait_event", stream2, event1)) < log.index(("run", 2))
    assert log.index(("synchronize", event2)) < log.index(("run", 3))
    assert CudaContext("cuda:1").index == 1
