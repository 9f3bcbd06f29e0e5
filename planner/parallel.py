"""How a plan runs: the straight-line program, or its steps on the runtime's executor.

A plan's schedule is a DAG. ``choose`` decides, once per plan and worker count, whether running
independent steps at once can pay: the executor costs a few microseconds a step and a thread
hand-off tens of microseconds (runtime/executor.py), the straight-line program about a tenth of
a microsecond a step (planner/program.py). A ``ParallelRunner`` runs the plan's generated step
functions (``program.step_functions``) on ``runtime.executor.Executor`` over the schedule's
DAG: ready steps go to their device's queue by critical path, then plan order; buffers are
dropped when their last reader is done (reference counts, under the run's lock); while the
steps run, each gets ``cores // workers`` intra-op threads (BLAS, split kernels) so that workers
and their threads never oversubscribe the cores.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codegen.launch import outer_rows
from runtime import _threads
from runtime.executor import Executor, TaskGraph
from runtime.ops.registry import REGISTRY

from .program import ARGS, GENERATORS, STATE, step_functions
from .schedule import longest_paths
from .steps import COMM, ExternStep, KernelStep, PrimitiveStep, Step

if TYPE_CHECKING:
    from .plan import Plan

EXECUTORS = ("auto", "program", "parallel")

# what a step costs on the executor beyond its work, and a hand-off between threads (both
# measured on the 2-core VM this project is built on: 1-5 us a step with 2 workers, 17-31 us a
# round trip; benchmarks and runtime/executor.py's tests); and what it costs in the program
STEP_OVERHEAD_S = 4e-6
HANDOFF_S = 30e-6
PROGRAM_STEP_S = 0.3e-6
# parallel only where it is estimated to take at most this fraction of the program's time: the
# cost model is rough (planner.cost), so a small estimated gain is no gain
MIN_GAIN = 0.8
# kernels the runtime splits across intra-op threads: codegen.jit.PARALLEL_MIN_US (a copy, so
# that choosing an executor imports no LLVM; a test holds them equal)
SPLIT_MIN_S = 40e-6


@dataclass(frozen=True)
class Execution:
    """How a plan runs: ``executor`` "program" (one generated function on the calling thread)
    or "parallel" (``ParallelRunner`` with ``workers`` CPU threads), and why."""

    executor: str
    workers: int
    reason: str

    def __str__(self) -> str:
        if self.executor == "parallel":
            return f"parallel, {self.workers} workers: {self.reason}"
        return f"straight-line program: {self.reason}"


def check_options(workers: Any, executor: Any, where: str) -> None:
    """ValueErrors naming a bad ``workers`` or ``executor`` option of ``where``."""
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"{where}: workers must be a positive int or None, got {workers!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"{where}: executor must be one of {', '.join(map(repr, EXECUTORS))}, "
                         f"got {executor!r}")


def choose(plan: Plan, workers: int | None, executor: str = "auto") -> Execution:
    """The execution of ``plan`` with ``workers`` CPU threads (None: one per core the process
    may use), ``executor`` "auto" (the cost model decides, with the intra-op threads in force
    now), "program" or "parallel" (as asked)."""
    check_options(workers, executor, "planner")
    n = _threads.cores() if workers is None else workers
    if executor == "program":
        return Execution("program", 1, "executor='program' asked for")
    if executor == "parallel":
        return Execution("parallel", n, "executor='parallel' asked for")
    schedule = plan.schedule
    if COMM in schedule.devices:
        return Execution("parallel", n, "all-reduce steps run on the communication queue, "
                                        "overlapping the rest of the backward")
    if n == 1 and all(d == "cpu" for d in schedule.devices):
        return Execution("program", 1, "one worker")
    steps = len(plan.steps)
    intra = _threads.get_num_threads()
    sequential = _estimated(plan, intra, 1) + steps * PROGRAM_STEP_S
    hand_offs = min(steps, 2 * max(1, round(schedule.parallelism)))
    parallel = (_estimated(plan, max(1, min(intra, _threads.cores() // n)), n)
                + steps * STEP_OVERHEAD_S + hand_offs * HANDOFF_S)
    figures = (f"estimated {parallel * 1e6:.0f} us on {n} workers against "
               f"{sequential * 1e6:.0f} us in order with {intra} intra-op threads "
               f"(parallelism {schedule.parallelism:.2f}, {steps} steps)")
    if parallel <= MIN_GAIN * sequential:
        return Execution("parallel", n, figures)
    return Execution("program", 1, figures)


def _estimated(plan: Plan, intra: int, workers: int) -> float:
    """Estimated seconds of a run on ``workers`` threads, each step with ``intra`` intra-op
    threads: the longer of the longest dependency chain and the work shared out (Graham's
    bound for a greedy list schedule), BLAS calls and kernels big enough to split sped up
    ``intra`` times (a kernel at most as many times as its CPU launch form has rows)."""
    schedule = plan.schedule
    cost = [c / _intra_speedup(s, c, intra) for s, c in zip(plan.steps, schedule.cost)]
    if workers == 1:
        return sum(cost)
    path = longest_paths(schedule.order, schedule.consumers, cost)
    return max(max(path, default=0.0), sum(cost) / workers)


def _intra_speedup(step: Step, cost: float, intra: int) -> int:
    """How many intra-op threads share ``step``'s work."""
    if isinstance(step, ExternStep):
        return intra
    if isinstance(step, KernelStep) and step.device == "cpu" and cost >= SPLIT_MIN_S:
        return max(1, min(intra, outer_rows(step.kernel)))
    return 1


_EXECUTORS: dict[int, Executor] = {}
_EXECUTORS_LOCK = threading.Lock()


def shared_executor(workers: int) -> Executor:
    """One executor (and its persistent threads) per worker count, shared by every plan."""
    found = _EXECUTORS.get(workers)
    if found is None:
        with _EXECUTORS_LOCK:
            found = _EXECUTORS.get(workers)
            if found is None:
                found = _EXECUTORS[workers] = Executor(workers)
    return found


class ParallelRunner:
    """A plan's steps on ``runtime.executor``: ``run(args, state, generators)`` returns what
    ``Plan.run`` does. Steps a device other than the CPU runs go to that device's worker."""

    def __init__(self, plan: Plan, workers: int) -> None:
        schedule = plan.schedule
        self.plan = plan
        self.workers = workers
        self.functions = step_functions(plan)
        self.graph = TaskGraph(devices=schedule.devices, priority=schedule.priority,
                               consumers=schedule.consumers, in_degree=schedule.in_degree,
                               names=schedule.names)
        needed = schedule.needed
        # per step: buffers it reads whose count of readers falls by one when it is done, and
        # outputs nobody reads (dropped at once)
        self.reads = [tuple(v for v in dict.fromkeys(s.buffers) if v not in needed)
                      for s in plan.steps]
        self.unread = [tuple(v for v in s.outputs if v not in needed
                             and not schedule.readers.get(v)) for s in plan.steps]
        self.readers = {v: n for v, n in schedule.readers.items() if v not in needed}
        # the primitives the step functions bound: a replaced one rebuilds them (as the
        # program does), so the registry stays the one source of each
        self.prims = {s.name: REGISTRY[s.name] for s in plan.steps
                      if isinstance(s, PrimitiveStep)}
        self.intra_op = max(1, _threads.cores() // workers)
        # set to a list to record (step, start, end) of each step of the next runs, in
        # time.perf_counter seconds: the timeline of which steps overlapped
        self.timeline: list[tuple[int, float, float]] | None = None

    def current(self) -> bool:
        return all(REGISTRY.get(name) is p for name, p in self.prims.items())

    def run(self, args: list[Any], state: dict[int, Any], generators: list[Any]
            ) -> tuple[Any, list[tuple[int, Any]]]:
        env = self.run_env(args, state, generators)
        writes = [(slot, None if b == -1 else env[b]) for slot, b in self.plan.writes]
        return filled(self.plan.returns, env), writes

    def run_env(self, args: list[Any], state: dict[int, Any], generators: list[Any]
                ) -> dict[int, Any]:
        """Run every step; the buffers left (those the schedule says a run returns or writes
        back, every other one dropped after its last reader) and the run's arguments."""
        env: dict[int, Any] = {ARGS: args, STATE: state, GENERATORS: generators}
        counts = dict(self.readers)
        lock = threading.Lock()
        functions, reads, unread = self.functions, self.reads, self.unread

        timeline = self.timeline

        def run_step(i: int) -> None:
            if timeline is not None:
                start = time.perf_counter()
                functions[i](env)
                timeline.append((i, start, time.perf_counter()))
            else:
                functions[i](env)
            dead = list(unread[i])
            with lock:
                for v in reads[i]:
                    n = counts[v] - 1
                    counts[v] = n
                    if not n:
                        dead.append(v)
            for v in dead:
                env.pop(v, None)

        executor = shared_executor(self.workers)
        with _threads.intra_op(min(self.intra_op, _threads.get_num_threads())):
            executor.run(self.graph, run_step)
        return env


def filled(template: Any, env: dict[int, Any]) -> Any:
    """The return template with ``("array", value)`` leaves, as the program builds it."""
    kind, body = template
    if kind == "node":
        return ("array", env[body])
    if kind == "item":  # Tensor.item() the step returns (planner.item_outputs)
        return ("item", filled(body, env))
    if kind == "copy":  # a returned constant: memory of its own at every call (passes)
        return ("array", env[body[1]].copy())
    if kind in ("tuple", "list"):
        return (kind, [filled(t, env) for t in body])
    if kind == "dict":
        return ("dict", [(k, filled(t, env)) for k, t in body])
    return template
