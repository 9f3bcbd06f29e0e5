"""The backward engine, after torch/csrc/autograd/engine.cpp.

A GraphTask holds one backward call's state: dependency counts, not-ready input buffers,
exec_info for grad(inputs=...), captured gradients. NodeTasks go to ReadyQueues ordered by
reentrant depth then sequence number. The calling thread runs CPU work from the task's own
queue; each accelerator device has one worker thread. A backward called from inside a backward
function (reentrant) runs on the same thread up to MAX_DEPTH, then a pool thread carries on.
"""

from __future__ import annotations

import _thread
import heapq
import itertools
import queue as _queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from .. import _profiling
from .._device import array_module
from ..tracing import _state as _trace_state
from . import anomaly
from .grad_mode import _state as _grad_state
from .node import AccumulateGrad, Edge, GraphRoot, Node

if TYPE_CHECKING:
    from ..tensor import Tensor

# Reentrant backwards nest this deep on one thread before a pool thread takes over. Each level
# costs about a dozen Python frames, so this keeps well inside Python's recursion limit.
MAX_DEPTH = 24


class InputBuffer:
    """Gradients arriving at one node, summed per input slot."""

    __slots__ = ("buffer",)

    def __init__(self, size: int) -> None:
        self.buffer: list[Any] = [None] * size

    def add(self, pos: int, var: Tensor | None) -> None:
        if var is None:
            return
        old = self.buffer[pos]
        self.buffer[pos] = var if old is None else old + var

    @property
    def device(self) -> str:
        # as PyTorch's InputBuffer::device: the first gradient off the CPU decides, so a node fed
        # a GPU gradient in any slot runs on that GPU's worker, not on the CPU thread
        for v in self.buffer:
            if v is not None and v.device != "cpu":
                return v.device
        return "cpu"


@dataclass
class ExecInfo:
    needed: bool = False
    captures: list[tuple[int, int]] | None = None  # (input_idx, output_idx)

    def should_execute(self) -> bool:
        return self.needed or self.captures is not None


def name_in_note(exc: BaseException, where: str) -> None:
    """Say in a note what was running when exc was raised, once: an exception passing out
    through nested runs (a reentrant backward, a plan step running a plan) keeps the innermost."""
    if not getattr(exc, "_backplan_named", False):
        exc.add_note(f"raised while running {where}")
        exc._backplan_named = True  # type: ignore[attr-defined]


class RunState:
    """What the threads working on one run share: a lock, and the run's first error. The
    engine's GraphTask and the plan executor's runs build on it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.has_error = False
        self.exception: BaseException | None = None

    def record_error(self, exc: BaseException, where: str | None) -> bool:
        """Keep exc, named after where it was raised, if it is the run's first error. The
        caller holds self.lock."""
        if self.has_error:
            return False
        self.has_error = True
        if where is not None:
            name_in_note(exc, where)
        self.exception = exc
        return True


_graph_task_ids = itertools.count()


class GraphTask(RunState):
    def __init__(self, keep_graph: bool, create_graph: bool, reentrant_depth: int,
                 cpu_ready_queue: ReadyQueue[NodeTask]) -> None:
        super().__init__()
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.cpu_ready_queue = cpu_ready_queue
        self.outstanding_tasks = 0
        self.done = threading.Event()
        self.dependencies: dict[Node, int] = {}
        self.not_ready: dict[Node, InputBuffer] = {}
        self.exec_info: dict[Node, ExecInfo] = {}
        self.captured_vars: list[Any] = []
        self.owner: str | None = None
        self.nodes_in_graph: set[Node] = set()  # dependencies empties as the run goes
        self.id = next(_graph_task_ids)
        # PyTorch's checkpoint_valid: a backward that runs every node (no outputs asked for),
        # and so did the backward it runs inside of, if any
        self.checkpoint_valid = True
        # Engine.queue_callback's: run by the owning thread once the task has finished
        self.final_callbacks: list[Callable[[], Any]] = []

    def completed(self) -> bool:
        return self.outstanding_tasks <= 0 or self.has_error

    def set_exception(self, exc: BaseException, fn: Node | None) -> None:
        with self.lock:
            first = self.record_error(exc, None if fn is None else f"the backward of {fn.name()}")
        if first:
            self.done.set()

    def mark_completed(self) -> None:
        self.done.set()

    def init_to_execute(self, graph_root: Node, outputs: list[Edge], accumulate_grad: bool,
                        min_topo_nr: int) -> None:
        exec_info = self.exec_info
        output_idx = 0
        for edge in outputs:
            info = exec_info.setdefault(edge.function, ExecInfo())
            if accumulate_grad:
                info.needed = True
            else:
                if info.captures is None:
                    info.captures = []
                info.captures.append((edge.input_nr, output_idx))
                output_idx += 1
        self.captured_vars = [None] * output_idx

        def should_execute(fn: Node) -> bool:
            info = exec_info.get(fn)
            return info is not None and info.should_execute()

        def mark_needed(fn: Node) -> None:
            exec_info.setdefault(fn, ExecInfo()).needed = True

        # iterative DFS: a node is needed if any child is needed. The root too (engine.cpp
        # emplaces it, needed only when it leads to an input): a single root that cannot
        # reach any input is not run
        exec_info.setdefault(graph_root, ExecInfo())
        seen: set[Node] = set()
        stack: list[tuple[Node, Any]] = [(graph_root, iter(graph_root.next_edges))]
        while stack:
            fn, children = stack[-1]
            child: Node | None = None
            for edge in children:
                if edge is None:
                    continue
                if edge.function in seen:
                    if should_execute(edge.function):
                        mark_needed(fn)
                    continue
                seen.add(edge.function)
                child = edge.function
                break
            if child is not None:
                if child.topological_nr < min_topo_nr:
                    continue  # created before every output: cannot reach one
                stack.append((child, iter(child.next_edges)))
            else:
                stack.pop()
                if stack and should_execute(fn):
                    mark_needed(stack[-1][0])


class NodeTask(NamedTuple):
    """A node ready to run with its inputs. A tuple: one is made for every node a backward
    runs, by ``tuple.__new__`` on that path (no Python-level constructor)."""

    graph_task: GraphTask | None  # None: a wake-up for a graph task finished on another thread
    fn: Node | None
    inputs: InputBuffer | None

T = TypeVar("T")


class ReadyQueue(Generic[T]):
    """Ready work shared by threads: the smallest key pops first, equal keys in push order.

    A thread that finds the queue empty parks on a lock of its own, which a push releases,
    instead of threading.Condition, whose wait and notify are more Python code: a wake-up round
    trip between two threads (push, pop on the other side, push back) took a median 17 us against
    18 to 29 us with Condition, on a shared 2-core machine where two bare locks take 16 to 19 us.
    close() ends the queue: pops drain what is left, then return None.
    """

    __slots__ = ("_heap", "_lock", "_parked", "_woken", "_closed")
    _tiebreak = itertools.count()

    def __init__(self) -> None:
        self._heap: list[tuple[Any, int, T]] = []
        self._lock = threading.Lock()
        self._parked: list[Any] = []  # one held lock per thread blocked in pop
        self._woken = 0  # released by a push, not yet back in pop: each will take an item
        self._closed = False

    def push(self, key: Any, item: T) -> None:
        with self._lock:
            heapq.heappush(self._heap, (key, next(self._tiebreak), item))
            if self._parked:
                self._woken += 1
                self._parked.pop().release()

    def pop(self, block: bool = True) -> T | None:
        """The first item; None when the queue is closed and empty, or (block=False) empty."""
        lock = self._lock
        parked = None
        while True:
            with lock:
                if parked is not None:
                    self._woken -= 1
                if self._heap:
                    return heapq.heappop(self._heap)[2]
                if self._closed or not block:
                    return None
                parked = _thread.allocate_lock()
                parked.acquire()
                self._parked.append(parked)
            try:
                parked.acquire()  # a push or close releases it; a signal may interrupt it
            except BaseException:
                self._unpark(parked)
                raise

    def _unpark(self, parked: Any) -> None:
        """Forget a parked lock whose thread left pop by an exception; a wake-up already meant
        for that thread goes to another parked one."""
        with self._lock:
            if parked in self._parked:
                self._parked.remove(parked)
                return
            self._woken -= 1
            if self._parked and (self._heap or self._closed):
                self._woken += 1
                self._parked.pop().release()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._woken += len(self._parked)
            for parked in self._parked:
                parked.release()
            self._parked.clear()

    def unclaimed(self) -> int:
        """Items that no parked or already woken thread will take (negative: threads that
        will find nothing)."""
        return len(self._heap) - len(self._parked) - self._woken

    def __len__(self) -> int:
        return len(self._heap)


class DeviceThreads:
    """One persistent daemon thread per device, started on first use, serving that device's
    ReadyQueue with serve(device, queue) until close(). The engine keeps one set for backward
    nodes; the plan executor keeps its own."""

    def __init__(self, prefix: str, serve: Callable[[str, ReadyQueue[Any]], None]) -> None:
        self._prefix = prefix
        self._serve = serve
        self._queues: dict[str, ReadyQueue[Any]] = {}
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def queue(self, device: str) -> ReadyQueue[Any]:
        q = self._queues.get(device)
        if q is None:
            with self._lock:
                q = self._queues.get(device)
                if q is None:
                    q = ReadyQueue()
                    t = threading.Thread(target=self._serve, args=(device, q),
                                         name=f"{self._prefix}-{device}", daemon=True)
                    t.start()
                    self._threads.append(t)
                    self._queues[device] = q
        return q

    def close(self) -> None:
        """Each thread finishes the work queued for it, then exits."""
        with self._lock:
            queues, threads = list(self._queues.values()), list(self._threads)
            self._queues.clear()
            self._threads.clear()
        for q in queues:
            q.close()
        for t in threads:
            t.join()


_WAKE_KEY = (0, 0, 0)


def _enqueue(q: ReadyQueue[NodeTask], task: NodeTask, counted: bool = False) -> None:
    """Count the task as outstanding on its graph task (unless the caller has: ``counted``) and
    queue it: wake-ups first, then deeper reentrant backwards, then later-created nodes (higher
    sequence number), as PyTorch orders."""
    gt = task.graph_task
    if gt is None:
        q.push(_WAKE_KEY, task)
        return
    if not counted:
        with gt.lock:
            gt.outstanding_tasks += 1
    q.push((1, -gt.reentrant_depth, -task.fn._seq_nr), task)  # type: ignore[union-attr]


class _ThreadState(threading.local):
    worker_device: str | None = None  # None: not inside the engine on this thread
    local_ready_queue: ReadyQueue[NodeTask] | None = None
    current_depth: int = 0
    total_depth: int = 0
    graph_task: GraphTask | None = None  # the one whose node this thread is evaluating


_tls = _ThreadState()


@dataclass
class Engine:
    devices: DeviceThreads = field(init=False)
    _pool: _queue.Queue = field(default_factory=_queue.Queue)
    _pool_idle: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.devices = DeviceThreads("autograd", self._device_thread)

    # --- queues and threads -----------------------------------------------------------------
    def ready_queue(self, cpu_ready_queue: ReadyQueue[NodeTask] | None,
                    device: str) -> ReadyQueue[NodeTask]:
        if device == "cpu" or (_trace_state.tracer is not None and cpu_ready_queue is not None):
            # capturing records on the calling thread only: every device's work stays there
            assert cpu_ready_queue is not None
            return cpu_ready_queue
        return self.devices.queue(device)

    def _device_thread(self, device: str, q: ReadyQueue[NodeTask]) -> None:
        _tls.worker_device = device
        _tls.local_ready_queue = q
        self.thread_main(None)

    def _add_thread_pool_task(self, gt: GraphTask) -> None:
        with self._lock:
            spawn = self._pool_idle == 0
            if not spawn:
                self._pool_idle -= 1
        self._pool.put(gt)
        if spawn:
            threading.Thread(target=self._pool_thread, name="autograd-reentrant",
                             daemon=True).start()

    def _pool_thread(self) -> None:
        while True:
            gt = self._pool.get()
            owner = gt.owner or "cpu"
            _tls.worker_device = owner
            _tls.local_ready_queue = self.ready_queue(gt.cpu_ready_queue, owner)
            _tls.total_depth = gt.reentrant_depth
            _tls.current_depth = 0
            self.thread_main(gt)
            with self._lock:
                self._pool_idle += 1

    # --- entry ----------------------------------------------------------------------------
    def execute(self, roots: list[Edge], grads: list[Any], keep_graph: bool,
                create_graph: bool, accumulate_grad: bool,
                outputs: list[Edge] | None = None) -> list[Any]:
        not_reentrant = _tls.worker_device is None
        gt = GraphTask(keep_graph, create_graph,
                       0 if not_reentrant else _tls.total_depth + 1,
                       ReadyQueue() if not_reentrant else _tls.local_ready_queue)  # type: ignore[arg-type]
        parent = _tls.graph_task
        gt.checkpoint_valid = not outputs and (parent is None or parent.checkpoint_valid)
        grads = _validate(roots, list(grads), "invalid gradient")  # a root grad takes its dtype
        skip_dummy = len(roots) == 1
        graph_root: Node = roots[0].function if skip_dummy else GraphRoot(roots, grads)
        min_topo_nr = min((e.function.topological_nr for e in outputs), default=0) if outputs else 0
        self.compute_dependencies(graph_root, gt, min_topo_nr)
        if outputs:
            gt.init_to_execute(graph_root, outputs, accumulate_grad, min_topo_nr)
        if skip_dummy:
            buf = InputBuffer(graph_root.num_inputs)
            buf.add(roots[0].input_nr, grads[0])
        else:
            buf = InputBuffer(0)
        self.execute_with_graph_task(gt, graph_root, buf)
        return gt.captured_vars

    @staticmethod
    def compute_dependencies(root: Node, gt: GraphTask, min_topo_nr: int) -> None:
        deps = gt.dependencies
        seen = gt.nodes_in_graph = {root}
        stack = [root]
        while stack:
            fn = stack.pop()
            if fn.topological_nr < min_topo_nr:
                continue
            for edge in fn.next_edges:
                if edge is None:
                    continue
                nxt = edge.function
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)

    def execute_with_graph_task(self, gt: GraphTask, graph_root: Node, buf: InputBuffer) -> None:
        q = self.ready_queue(gt.cpu_ready_queue, buf.device)
        tls = _tls
        if tls.worker_device is None:
            gt.owner = "cpu"
            _enqueue(q, NodeTask(gt, graph_root, buf))
            tls.worker_device = "cpu"
            tls.local_ready_queue = gt.cpu_ready_queue
            try:
                self.thread_main(gt)
            finally:
                tls.worker_device = None
                tls.local_ready_queue = None
        else:
            gt.owner = tls.worker_device
            _enqueue(q, NodeTask(gt, graph_root, buf))
            tls.current_depth += 1
            try:
                if tls.current_depth >= MAX_DEPTH:
                    self._add_thread_pool_task(gt)
                    gt.done.wait()
                else:
                    tls.total_depth += 1
                    try:
                        self.thread_main(gt)
                    finally:
                        tls.total_depth -= 1
            finally:
                tls.current_depth -= 1
        if gt.exception is not None:
            raise gt.exception
        if gt.final_callbacks:
            self._run_final_callbacks(gt)

    def queue_callback(self, callback: Callable[[], Any]) -> None:
        """PyTorch's ``Variable._execution_engine.queue_callback``: ``callback()`` runs once
        the backward whose node is running now has finished (a callback may queue more)."""
        gt = _tls.graph_task
        if gt is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        with gt.lock:
            gt.final_callbacks.append(callback)

    @staticmethod
    def _run_final_callbacks(gt: GraphTask) -> None:
        outer = _tls.graph_task
        _tls.graph_task = gt  # a callback may queue another on this backward
        try:
            done = 0
            while True:
                with gt.lock:
                    if done == len(gt.final_callbacks):
                        break
                    callback = gt.final_callbacks[done]
                done += 1
                callback()
        finally:
            _tls.graph_task = outer

    # --- the loop -------------------------------------------------------------------------
    def thread_main(self, graph_task: GraphTask | None) -> None:
        tls, grad_state = _tls, _grad_state
        q = tls.local_ready_queue
        assert q is not None
        # thread-local state, read once: nothing but nodes runs between them, and each node
        # leaves the task's id as it found it. The grad mode is the task's create_graph while
        # a node runs (set again only where a node left another) and the caller's on return.
        outer_mode = grad_state.enabled
        outer = tls.graph_task
        try:
            self._run_tasks(graph_task, q, tls, grad_state, outer)
        finally:
            grad_state.enabled = outer_mode

    def _run_tasks(self, graph_task: GraphTask | None, q: ReadyQueue[NodeTask], tls: Any,
                   grad_state: Any, outer: GraphTask | None) -> None:
        while graph_task is None or not graph_task.done.is_set():
            task = q.pop()
            if task is None:
                break  # the queue was closed
            gt = task.graph_task
            if gt is None:
                continue  # a wake-up for a graph task finished on another thread
            if task.fn is not None and not gt.has_error:
                if grad_state.enabled is not gt.create_graph:
                    grad_state.enabled = gt.create_graph
                tls.graph_task = gt
                try:
                    if anomaly._global_enabled:  # nodes made in this backward know their parent
                        with anomaly.evaluating(task.fn):
                            self.evaluate_function(gt, task.fn, task.inputs)  # type: ignore[arg-type]
                    else:
                        self.evaluate_function(gt, task.fn, task.inputs)  # type: ignore[arg-type]
                except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                    if anomaly._global_enabled:
                        anomaly.warn_error_in(task.fn)
                    gt.set_exception(e, task.fn)
                finally:
                    tls.graph_task = outer
            with gt.lock:
                gt.outstanding_tasks -= 1
                finished = gt.outstanding_tasks <= 0
            if finished:
                gt.mark_completed()
                owner = gt.owner or "cpu"
                if _tls.worker_device != owner:
                    # wake the owner's queue so its thread_main sees completion
                    _enqueue(self.ready_queue(gt.cpu_ready_queue, owner),
                             NodeTask(None, None, None))

    def evaluate_function(self, gt: GraphTask, fn: Node, inputs: InputBuffer) -> None:
        exec_info = gt.exec_info
        if exec_info:
            info = exec_info.get(fn)
            if info is None:
                return
            if info.captures is not None:
                grads = inputs.buffer
                if not info.needed:
                    grads = _call_tensor_pre_hooks(fn, list(grads))
                with gt.lock:
                    for input_idx, output_idx in info.captures:
                        gt.captured_vars[output_idx] = grads[input_idx]
            if not info.needed:
                return
        tracer = _trace_state.tracer
        if tracer is None:
            if _profiling.ACTIVE is not None:  # runtime.profiler: an event around the node
                with _profiling.ACTIVE.range(
                        f"autograd::engine::evaluate_function: {fn.name()}", "autograd"):
                    self._evaluate_outputs(gt, fn, inputs)
                return
            self._evaluate_outputs(gt, fn, inputs)
            return
        tracer.enter_backward_node(fn)  # capturing: what follows belongs to fn's backward
        try:
            self._evaluate_outputs(gt, fn, inputs)
        finally:
            tracer.exit_backward_node()

    def _evaluate_outputs(self, gt: GraphTask, fn: Node, inputs: InputBuffer) -> None:
        exec_info = gt.exec_info
        outputs = _call_function(fn, inputs.buffer)
        if not gt.keep_graph:
            fn.release_variables()
        if not outputs:
            return
        if anomaly._global_enabled and anomaly._check_nan and _trace_state.tracer is None:
            _check_nan(fn, outputs)
        deps = gt.dependencies
        not_ready = gt.not_ready
        next_edges = fn.next_edges
        ready: list[tuple[Node, InputBuffer]] = []
        # the CPU thread and device threads finish nodes of one task at once: the counts and
        # not-ready buffers change under the task's lock (engine.cpp holds its mutex here)
        with gt.lock:
            for i, out in enumerate(outputs):
                edge = next_edges[i]
                if edge is None:
                    continue
                nxt, input_nr = edge
                remaining = deps[nxt] - 1
                if remaining == 0:
                    del deps[nxt]
                else:
                    deps[nxt] = remaining
                buf = not_ready.get(nxt)
                if buf is None:
                    if exec_info:
                        info = exec_info.get(nxt)
                        if info is None or not info.should_execute():
                            continue
                    buf = InputBuffer(len(nxt.input_metas))
                    buf.buffer[input_nr] = out
                    if remaining != 0:
                        not_ready[nxt] = buf
                        continue
                else:
                    if out is not None:
                        slots = buf.buffer
                        old = slots[input_nr]
                        slots[input_nr] = out if old is None else old + out
                    if remaining != 0:
                        continue
                    del not_ready[nxt]
                ready.append((nxt, buf))
            # counted as outstanding under this hold of the lock: a lock round trip fewer a
            # node than _enqueue's own count
            gt.outstanding_tasks += len(ready)
        for nxt, buf in ready:
            device = buf.device
            q = (gt.cpu_ready_queue if device == "cpu" or _trace_state.tracer is not None
                 else self.ready_queue(None, device))
            _enqueue(q, tuple.__new__(NodeTask, (gt, nxt, buf)), counted=True)


def _call_tensor_pre_hooks(fn: Node, grads: list[Any]) -> list[Any]:
    if fn._tensor_pre_hooks:
        for idx, hooks in fn._tensor_pre_hooks.items():
            for hook in list(hooks.values()):
                grads[idx] = _run_tensor_hook(hook, grads[idx])
    if isinstance(fn, AccumulateGrad):
        hooks = fn.variable._hooks
        if hooks:
            for hook in list(hooks.values()):
                grads[0] = _run_tensor_hook(hook, grads[0])
    if fn._retains_grad_hooks:
        for idx, hook in fn._retains_grad_hooks.items():
            hook(grads[idx])
    return grads


def _run_tensor_hook(hook: Callable[[Any], Any], grad: Any) -> Any:
    """A Tensor.register_hook hook's result, or grad when it returns None; a result of
    another type, size or device is refused with PyTorch's texts."""
    from ..tensor import Tensor

    r = hook(grad)
    if r is None:
        return grad
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    if grad is None:
        return r
    _check_hook_value(hook, grad, r)
    return r


def _call_function(fn: Node, grads: list[Any]) -> list[Any]:
    if fn._tensor_pre_hooks or fn._retains_grad_hooks or isinstance(fn, AccumulateGrad):
        grads = _call_tensor_pre_hooks(fn, grads)
    if fn._pre_hooks:
        for hook in list(fn._pre_hooks.values()):
            r = hook(tuple(grads))
            if r is not None:
                grads = _check_hook_tuple(hook, grads, r)
        # the hook's tuple let go, as PyTorch's engine converts and frees it: AccumulateGrad
        # steals a gradient only nobody else holds (the prehook's result is such)
        r = None
    outputs = fn.apply(grads)
    outputs = validate_outputs(fn, outputs)
    if fn._post_hooks:
        for hook in list(fn._post_hooks.values()):
            r = hook(tuple(outputs), tuple(grads))
            if r is not None:
                outputs = _check_hook_tuple(hook, outputs, r)
    return outputs


def _check_hook_tuple(hook: Callable[..., Any], prev: list[Any], result: Any) -> list[Any]:
    """A Node hook's result (register_prehook / register_hook), checked as PyTorch's
    check_result: a tuple of as many values, each None or a tensor like the gradient it
    replaces."""
    if getattr(hook, "_runtime_internal", False):  # the runtime's own (module backward hooks)
        return list(result)
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(prev):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of "
                           f"values (got {len(result)}, but expected {len(prev)})")
    for old, new in zip(prev, result):
        if new is None:
            continue
        if old is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        _check_hook_value(hook, old, new)
    return list(result)


def _hook_name(hook: Callable[..., Any]) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _check_hook_value(hook: Callable[..., Any], grad: Any, r: Any) -> None:
    """PyTorch's check_variable_result: a hook's tensor keeps the type, device and size of
    the gradient it replaces."""
    from ..tensor import Tensor

    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    name = _hook_name(hook)
    if r.dtype is not grad.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.type()} got "
                           f"{r.type()})")
    if r.device != grad.device:
        raise RuntimeError(f"hook '{name}' has changed the device of value (was {grad.device} "
                           f"got {r.device})")
    if r.shape != grad.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def validate_outputs(fn: Node, grads: list[Any]) -> list[Any]:
    if len(grads) != len(fn.next_edges):
        raise RuntimeError(f"function {fn.name()} returned an incorrect number of gradients "
                           f"(expected {len(fn.next_edges)}, got {len(grads)})")
    return _validate(fn.next_edges, grads, f"Function {fn.name()} returned an invalid gradient")


def _validate(edges: list[Edge | None], grads: list[Any], what: str) -> list[Any]:
    """Check the gradients flowing along edges against their inputs' metadata, summing a
    broadcast gradient down and casting to the input's dtype, as PyTorch's validate_outputs;
    ``what`` opens the error texts."""
    for i, g in enumerate(grads):
        edge = edges[i]
        if edge is None or g is None:
            continue
        shape, dtype, device = edge[0].input_metas[edge[1]]
        if g._data.shape == shape and g.dtype is dtype and g.device == device:
            continue
        if g.shape != shape:
            from ..ops.functional import is_expandable_to, sum_to

            if not is_expandable_to(shape, g.shape):
                raise RuntimeError(
                    f"{what} at index {i} - got {list(g.shape)} but expected shape compatible "
                    f"with {list(shape)}")
            g = grads[i] = sum_to(g, shape)
        if dtype is not None and g.dtype is not dtype:  # None: a leaf's grad_dtype of any
            g = grads[i] = g.to(dtype)
        if g.device != device and _trace_state.tracer is None:  # lower() may retarget
            raise RuntimeError(f"{what} at index {i} - expected device {device} but got "
                               f"{g.device}")
    return grads


def _check_nan(fn: Node, outputs: list[Any]) -> None:
    for i, out in enumerate(outputs):
        if out is None or not out.dtype.is_floating_point:
            continue
        if bool(array_module(out.device).isnan(out._data).any()):
            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")


_engine = Engine()


def current_graph_task_id() -> int:
    """An id of the backward run whose node this thread is evaluating (a hook asks), -1
    outside one: PyTorch's ``torch._C._current_graph_task_id``."""
    gt = _tls.graph_task
    return -1 if gt is None else gt.id


def is_checkpoint_valid() -> bool:
    """PyTorch's ``torch.autograd._is_checkpoint_valid``: False while a node runs in a
    backward that computes only some gradients (``autograd.grad``, ``backward(inputs=...)``),
    or inside one; a reentrant checkpoint refuses to run its backward there."""
    gt = _tls.graph_task
    return True if gt is None else gt.checkpoint_valid


def will_engine_execute_node(node: Node) -> bool:
    """Whether the running backward evaluates ``node``: a node of its graph (``backward``) or
    one the requested gradients need (``grad``, ``backward(inputs=...)``), as PyTorch's
    ``torch._C._will_engine_execute_node``."""
    gt = _tls.graph_task
    if gt is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the "
                           "backward pass")
    if gt.exec_info:
        if isinstance(node, AccumulateGrad) and gt.captured_vars:  # autograd.grad: captured
            raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are "
                               "currently running autograd.grad(). This is currently not "
                               "supported.")
        info = gt.exec_info.get(node)
        return info is not None and info.should_execute()
    return node in gt.nodes_in_graph


def get_default_engine() -> Engine:
    return _engine
