"""What running a plan needs besides its data: the compiled module of its kernels, its
generated programs and a callable per kernel step, built on first use under a lock (several
threads may run one plan) and never part of the plan's data (not pickled, not serialized).
Also ``Commit``, the parameter update a plan hands its caller (as a ``CommitOutput`` per
updated state) to run at write-back.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    from numpy import byte_bounds  # type: ignore[attr-defined,no-redef]

from runtime._device import array_module
from runtime.ops.registry import without_generated_code

from . import native as native_runs
from .parallel import ParallelRunner
from .program import Program, build_program, failing_step
from .steps import CommitStep, KernelStep, Step

if TYPE_CHECKING:
    from .plan import Plan


class Commit:
    """A parameter update left to the write-back: the plan returns one ``CommitOutput`` per
    kernel output instead of the new values, and storing the last of them runs the kernel
    once, storing each output in its own parameter's (or optimizer state's) storage. It runs
    once every step of the plan has succeeded, so a failing replay still leaves the state
    untouched, and no state is ever held twice."""

    __slots__ = ("launch", "args", "intos", "dests", "_pending", "_results")

    def __init__(self, launch: Any, args: list[Any], intos: tuple[int, ...]) -> None:
        self.launch = launch  # CompiledModule.launcher of a kernel whose outputs have ``into``
        self.args = args  # the kernel's arguments; args[into] is a state's array as read
        self.intos = intos  # the argument each output is stored into
        self.dests: list[Any] = [None] * len(intos)
        self._pending = len(intos)
        self._results: list[Any] | None = None

    def outputs(self) -> list[Any]:
        """What the plan returns for each updated state: the commit itself for a kernel of
        one output (stored with ``apply``), else a ``CommitOutput`` per output."""
        if len(self.intos) == 1:
            return [self]
        return [CommitOutput(self, k) for k in range(len(self.intos))]

    def apply(self, dest: Any) -> None:
        """Store a one-output commit's value into ``dest``."""
        self.store(0, dest)

    def store(self, k: int, dest: Any) -> None:
        """Output ``k`` goes into ``dest``; the kernel runs once every output has its own."""
        if self.dests[k] is None:
            self._pending -= 1
        self.dests[k] = dest
        if not self._pending:
            self._run(self.dests)

    def _run(self, dests: list[Any]) -> None:
        # arrays that own their memory never overlap: only views need the bounds check
        if len(dests) > 1 and any(d.base is not None for d in dests) and _overlapping(dests):
            for k, dest in enumerate(dests):  # states sharing storage: one at a time
                dest[...] = self.result(k).reshape(dest.shape)
            return
        args = self.args
        if all(args[into] is dest and dest.flags.c_contiguous
               for into, dest in zip(self.intos, dests)):
            # each state's own array, as the plan read it: the kernel stores into them
            self.launch([*(a if a.__class__ is np.ndarray and a.flags.c_contiguous
                           else np.asarray(a, order="C") for a in args), *dests])
            return
        # a state's storage changed since the plan read it, or is not dense: update dense
        # copies, then write those back
        work = list(args)
        after = []
        for into, dest in zip(self.intos, dests):
            if work[into] is not dest or not dest.flags.c_contiguous:
                work[into] = np.array(work[into], order="C", copy=True)
                after.append((dest, work[into]))
        self.launch([*(np.asarray(a, order="C") for a in work), *(work[i] for i in self.intos)])
        for dest, array in after:
            dest[...] = array.reshape(dest.shape)

    def result(self, k: int) -> Any:
        """Output ``k``'s value as a new array, the state left as it is."""
        if self._results is None:
            copies = [np.array(self.args[i], order="C", copy=True) for i in self.intos]
            args = list(self.args)
            for into, copy in zip(self.intos, copies):
                args[into] = copy
            self.launch([*(np.asarray(a, order="C") for a in args), *copies])
            self._results = copies
        return self._results[k]


def _overlapping(arrays: list[Any]) -> bool:
    """Whether any two of the arrays' memory extents overlap (sorted by start: one pass)."""
    spans = sorted(byte_bounds(a) for a in arrays)
    return any(nxt[0] < prev[1] for prev, nxt in zip(spans, spans[1:]))


class CommitOutput:
    """One output of a Commit: what the plan returns for the state it updates."""

    __slots__ = ("commit", "index")

    def __init__(self, commit: Commit, index: int) -> None:
        self.commit = commit
        self.index = index

    def apply(self, dest: Any) -> None:
        """Store this output in ``dest`` (the state's array) at write-back."""
        self.commit.store(self.index, dest)

    def result(self) -> Any:
        return self.commit.result(self.index)


def materialize(value: Any) -> Any:
    """A value a plan writes back, as an array (a commit output's result)."""
    if isinstance(value, Commit):
        return value.result(0)
    return value.result() if isinstance(value, CommitOutput) else value


COMMITS = (Commit, CommitOutput)  # what a plan returns for a state it updates at write-back


KernelCall = Callable[..., list[Any]]


class Executable:
    """The runtime artefacts of one plan: its kernels' compiled module, its fast and checked
    programs (planner.program), its runner on the executor per worker count
    (planner.parallel) and a callable per kernel step."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._lock = threading.RLock()  # building a program compiles the module and calls
        self._modules: dict[str, Any] | None = None  # device -> its compiled kernels
        self._programs: dict[bool | str, Program] = {}
        # the fast programs a run calls, by whether its commits may store in place
        self._entries: dict[bool | str, Program] = {}
        # whether the plan has commits (which only an in-place program runs differently, and
        # around whose runs a replay holds SIGINT: planner.compile._Replayer.hold_run)
        self.commits = any(isinstance(s, CommitStep) for s in plan.steps)
        self._runners: dict[int, ParallelRunner] = {}
        self._calls: dict[KernelStep, KernelCall] = {}
        self._signatures: dict[KernelStep, Any] = {}
        self._products: dict[Step, Any] | None = None
        # the compiled-code cache its kernels and products came from (None: the default
        # one), where its programs' code is kept too (planner.program); None until then
        self.code_cache: tuple[str | os.PathLike[str] | None] | None = None
        # False: its programs call no native code (no native runs, no fast path calling
        # codegen.windows' generated code, which compiles on first use): a plan run while
        # its fused plan compiles (planner.background), which must not wait for LLVM
        self.native_code = True
        # a GPU plan's program replayed as a CUDA graph (planner.cuda_graph): asked for by
        # ``use_cuda_graphs``, its runner made on the first run
        self.cuda_graphs = False
        self._graph_runner: Any = None

    def use_cuda_graphs(self, on: bool) -> None:
        """Whether the plan's runs on a GPU replay a CUDA graph (planner.cuda_graph)."""
        with self._lock:
            if on != self.cuda_graphs:
                self.cuda_graphs, self._graph_runner = on, None

    def graph_runner(self) -> Any:
        """The plan's CUDA-graph runner, or None where its runs do not use one (a CPU plan,
        graphs not asked for, an array module that cannot capture)."""
        runner = self._graph_runner
        if runner is None and self.cuda_graphs and self.plan.device != "cpu":
            from . import cuda_graph

            with self._lock:
                runner = self._graph_runner
                if runner is None:
                    try:
                        backend = cuda_graph.backend_for(array_module(self.plan.device))
                    except RuntimeError:  # no CuPy: a plan lowered to inspect, say
                        backend = None
                    # False: nothing to capture with (asked no more)
                    runner = self._graph_runner = False if backend is None else \
                        cuda_graph.GraphRunner(self.plan, self.program, backend)
        return runner or None

    def module(self, cache_dir: str | os.PathLike[str] | None = None,
               device: str | None = None) -> Any:
        """The compiled module of the plan's kernels on ``device`` (default: the plan's), a
        ``codegen.renderer.CompiledKernels``. On first use every device's kernels are compiled
        by that device's renderer, from and into the compiled-code cache ``cache_dir``
        (``codegen.cache.cache_dir()`` if None)."""
        modules = self._modules
        if modules is None:
            with self._lock:
                if self._modules is None:
                    self._modules = _compiled(self.plan, cache_dir)
                    self.code_cache = self.code_cache or (cache_dir,)
                modules = self._modules
        device = self.plan.device if device is None else device
        if device not in modules:
            raise KeyError(f"the plan has no kernels on device '{device}' (it has kernels on "
                           f"{sorted(map(str, modules))})")
        return modules[device]

    def products(self, cache_dir: str | os.PathLike[str] | None = None) -> dict[Step, Any]:
        """The plan's matmul steps that run as generated products (planner.products), each
        with its ``(ProductCall, codegen.gemm.Product)``: compiled on first use, into and
        from the compiled-code cache's support store. Empty where the plan has none or this
        interpreter's arrays do not fit the products' object entry."""
        products = self._products
        if products is None:
            with self._lock:
                if self._products is None:
                    self._products = _products(self.plan, cache_dir)
                    if self._products:
                        self.code_cache = self.code_cache or (cache_dir,)
                products = self._products
        return products

    def program(self, checked: bool = False, in_place: bool = False) -> Program:
        """The plan's fast (or fully checked) program. The fast one runs its runs of kernels
        and products as native calls (planner.native) where no other call is running them,
        else the plain one (``plain_program``). With ``in_place``, a native run may store
        parameter updates into the state arrays it was given (its commits, returned as those
        arrays), for a caller that writes them back anyway; without, a run changes nothing
        it was given."""
        if checked:
            return self._program(True)
        if not self.native_code:
            return self._without_generated_code()
        in_place = in_place and self.commits
        entry = self._entries.get(in_place)
        if entry is not None:
            return entry
        with self._lock:
            entry = self._entries.get(in_place)
            if entry is None:
                native = build_program(self.plan, native=True, in_place=in_place) \
                    if native_runs.ENABLED else None
                if native is None:
                    entry = self.plain_program()
                else:
                    self._programs["native in place" if in_place else "native"] = native
                    entry = native_runs.native_first(native, self.plain_program)
                self._entries[in_place] = entry
        return entry

    def _without_generated_code(self) -> Program:
        """The plain program run with no generated code at all: a primitive that picks
        ``codegen.windows``' code when it runs (eager fma, the row scatter) would compile it,
        waiting for the children that fill the cache first (planner.background: a cold
        mlp_small's second call took 330 ms so, where it takes 25 to 49)."""
        wrapped = self._entries.get("without generated code")
        if wrapped is None:
            program = self._program(False)

            def wrapped(*args: Any, **kwargs: Any) -> Any:
                with without_generated_code():
                    return program(*args, **kwargs)

            self._entries["without generated code"] = wrapped
        return wrapped

    def plain_program(self) -> Program:
        """The fast program without native runs: for a call made while another runs the
        native one, and where a run's test fails (built on first need)."""
        return self._program(False)

    def _program(self, checked: bool) -> Program:
        program = self._programs.get(checked)
        if program is None:
            with self._lock:
                program = self._programs.get(checked)
                if program is None:
                    program = self._programs[checked] = build_program(
                        self.plan, checked, native_code=self.native_code)
        return program

    def runner(self, workers: int) -> ParallelRunner:
        """The plan's steps on the runtime's executor with ``workers`` CPU threads (built again
        when a primitive it was built from left the registry)."""
        runner = self._runners.get(workers)
        if runner is None or not runner.current():
            with self._lock:
                runner = self._runners.get(workers)
                if runner is None or not runner.current():
                    runner = self._runners[workers] = ParallelRunner(self.plan, workers)
        return runner

    def failing_step(self, exc: BaseException) -> int | None:
        """The step whose line in one of the plan's programs raised ``exc``, if one did."""
        return failing_step(exc, list(self._programs.values()))

    def rebuilt(self) -> Program:
        """The fast program made anew: a primitive it was built from left the registry."""
        with self._lock:
            self._programs.clear()
            self._entries.clear()
        return self.program()

    def reset(self) -> None:
        """Forget everything built (the module too): the next run builds it again."""
        with self._lock:
            self._modules = None
            self._products = None
            self._programs.clear()
            self._entries.clear()
            self._runners.clear()
            self._calls.clear()
            self._signatures.clear()
            self._graph_runner = None

    def kernel_signature(self, step: KernelStep) -> Any:
        """(shape, dtype) of every array a kernel step hands its kernel (its arguments as
        planned, then its outputs), shown to hold every element the kernel's IR addresses
        (``CompiledModule.check_signature``: a ValueError otherwise). A commit's outputs
        are the arrays of the arguments they are stored into. Kept per step: a program's
        build asks it of a step once for each run tried over it (rnn's 48 steps, 140 times)."""
        found = self._signatures.get(step)
        if found is not None:
            return found
        metas = self.plan.schedule.metas
        ins = [metas[v] for _, v in step.args]
        outs = [ins[c] for c in step.commits] if isinstance(step, CommitStep) else [
            (tuple(shape), np.dtype(dtype)) for shape, dtype, _ in step.out_specs]
        found = self._signatures[step] = self.module(device=step.device).check_signature(
            step.kernel, ins + outs)
        return found

    def kernel_call(self, step: KernelStep) -> KernelCall:
        """``call(*args) -> outputs`` for a kernel step (built once per step): C-contiguous
        arguments, fresh outputs of the kernel's shapes, the module's launcher (which checks
        every call against ``kernel_signature``), outputs reshaped to the plan's shapes (a
        per-row output may carry keepdim ones). A commit step's call returns its Commit's outputs."""
        call = self._calls.get(step)
        if call is None:
            with self._lock:
                call = self._calls.get(step)
                if call is None:
                    call = self._calls[step] = self._make_call(step)
        return call

    def _make_call(self, step: KernelStep) -> KernelCall:
        launch = self.module(device=step.device).launcher(step.kernel,
                                                          self.kernel_signature(step))
        if isinstance(step, CommitStep):
            intos = step.commits

            def defer(*args: Any) -> list[Any]:
                return Commit(launch, list(args), intos).outputs()

            return defer
        specs = [(tuple(shape), np.dtype(dtype), tuple(plan_shape))
                 for shape, dtype, plan_shape in step.out_specs]
        xp = np if step.device == "cpu" else array_module(step.device)
        empty, asarray, ndarray = xp.empty, xp.asarray, xp.ndarray

        def call(*args: Any) -> list[Any]:
            # asarray keeps a 0-d array 0-d (ascontiguousarray makes it 1-d)
            ins = [a if a.__class__ is ndarray and a.flags.c_contiguous
                   else asarray(a, order="C") for a in args]
            outs = [empty(shape, dtype) for shape, dtype, _ in specs]
            launch(ins + outs)
            return [o if o.shape == plan_shape else o.reshape(plan_shape)
                    for o, (_, _, plan_shape) in zip(outs, specs)]

        return call


def _compiled(plan: Plan, cache_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Per device, its kernel steps' kernels compiled by that device's renderer."""
    from codegen.renderer import renderer_for

    return {device: renderer_for(device).compile(kernels, cache_dir)
            for device, kernels in kernels_by_device(plan).items()}


def kernels_by_device(plan: Plan) -> dict[str, list[Any]]:
    """Per device, its kernel steps' kernels in step order: one module each."""
    by_device: dict[str, list[Any]] = {}
    for s in plan.steps:
        if isinstance(s, KernelStep):
            by_device.setdefault(s.device, []).append(s.kernel)
    return by_device


def _products(plan: Plan, cache_dir: str | os.PathLike[str] | None) -> dict[Step, Any]:
    """Each product step's (ProductCall, compiled Product), all from one module."""
    from .products import product_calls

    calls = product_calls(plan)
    if not calls:
        return {}
    from codegen.gemm import compiled, object_strides_ok

    if not object_strides_ok():
        return {}
    products = compiled([c.spec for c in calls.values()], cache_dir)
    return {s: (c, products[c.spec]) for s, c in calls.items()}
