"""Kernels compiled in the background: a step's first calls do not wait for LLVM.

A fused CPU plan whose kernels are not in the compiled-code cache takes LLVM a while to build
(0.2 s for chain's one kernel, about a second for gpt's 42 functions on this project's 2-core
VM). Where compiling in the background is on, the call that made the plan runs the step
eagerly, as written (without the generated code that would compile on first use: less than
building the unfused plan's program would take), the calls after it replay the unfused plan
(the reference interpreter: numpy, one primitive a step, the results eager mode gives within
the documented tolerance), and a thread builds the fused plan's kernels and products; the
first call that finds them built switches to the fused plan, and keeps it. The kernels'
module is emitted by child processes forked when that first call is done
(``codegen.cache.start_compiling``: the call has every core);
the thread waits for them, loads their code, compiles the plan's products and builds its
program (the native code of its fast paths included), and the calls meanwhile run no native
code at all (``Executable.native_code``: neither native runs nor the primitives' compiled
fast paths), so that nothing they do waits for LLVM or its lock, with the intra-op threads
the children leave (``threads_beside_compile``).

Which call switches depends on how long LLVM takes: calls before it run the unfused plan and
round differently from the fused one (within tolerance, but not the same bits). A step that
must give the same bits on every run compiles before its first call:
``planner.compile(step, background=False)``; for every step whose ``background`` is left
None, ``runtime.use_deterministic_algorithms(True)`` (PyTorch's switch) or
``BACKPLAN_BACKGROUND_COMPILE=0`` in the environment. Only what is worth it goes to
the background: CPU plans, not those of DistributedDataParallel steps (every rank must run the
same plan at the same call), and only where the kernels are not cached already and weigh at
least BACKGROUND_MIN_EXPRS (below that LLVM takes less than a step's worth of waiting).
``CompiledStep.wait()`` blocks until every kernel compiling in the background is in use.

The thread is not a daemon: a process that ends while it compiles waits for it at exit (the
code then lands in the cache, for the next process), and never exits with LLVM mid-call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from runtime._determinism import are_deterministic_algorithms_enabled

from .executable import kernels_by_device
from .plan import Plan

ENV = "BACKPLAN_BACKGROUND_COMPILE"
# kernels weighing less (element-exprs over their distinct functions) compile in the call
BACKGROUND_MIN_EXPRS = 80


def enabled(background: bool | None) -> bool:
    """Whether a step compiles in the background: its own ``background`` setting, else not
    while ``runtime.use_deterministic_algorithms(True)`` is in force, else
    BACKPLAN_BACKGROUND_COMPILE ("1", the default, or "0")."""
    if background is not None:
        return background
    text = os.environ.get(ENV, "1")
    if text not in ("0", "1"):
        raise ValueError(f"{ENV} must be 0 or 1, got {text!r}")
    return text == "1" and not are_deterministic_algorithms_enabled()


def worth_it(plan: Plan, cache_dir: Any) -> bool:
    """Whether ``plan``'s kernels would take LLVM long enough to leave to the background:
    they are not cached (in memory or on disk) and weigh BACKGROUND_MIN_EXPRS or more."""
    kernels = kernels_by_device(plan).get("cpu")
    if not kernels:
        return False
    from codegen import cache
    from codegen.llvm import distinct

    same = distinct(kernels)
    weight = sum(len(k.exprs) + 1 for k in kernels if same[k.name] == k.name)
    return weight >= BACKGROUND_MIN_EXPRS and not cache.is_cached(kernels, cache_dir)


def threads_beside_compile() -> int:
    """The intra-op threads a call gets while children compile its kernels: the cores they
    leave, at least one (``codegen.forked.start`` forks up to ``workers`` of them). BLAS
    threads that find their core taken spin: beside one child, cnn's calls took 45 to 55 ms
    with two BLAS threads, 9 to 15 ms with one (3.5 ms with nothing compiling)."""
    from codegen import forked

    from runtime._threads import cores

    return max(1, cores() - forked.workers())


class Pending:
    """A fused plan being built by a thread of its own: ``build`` compiles its kernels and
    products (into the cache), configures it and builds its program;
    ``done`` is set once it returned or raised (``error``). The kernels' module is emitted
    by children forked on the calling thread (``codegen.cache.start_compiling``): the
    thread waits for them holding no LLVM lock, so other steps' code still loads and
    compiles meanwhile. ``start``: now, or where False at ``start()`` (planner.compile: after
    the first call, which runs the step eagerly with every core: beside the children, gpt's
    unfused plan took 390 ms a call)."""

    def __init__(self, plan: Plan, build: Callable[[], None], name: str,
                 start: bool = True) -> None:
        self.plan = plan
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.started = False
        self._start_lock = threading.Lock()
        self._build = build
        self._kernels = kernels_by_device(plan)["cpu"]
        self.thread = threading.Thread(target=self._run, name=f"planner compile {name}")
        if start:
            self.start()

    def start(self) -> None:
        """Fork the children and start the thread (once, whichever thread asks first)."""
        from codegen import cache

        with self._start_lock:
            if self.started:
                return
            self.started = True
            cache.start_compiling(self._kernels)  # not cached: ``worth_it`` looked
            self.thread.start()

    def _run(self) -> None:
        try:
            self._build()
        except BaseException as exc:  # handed to the call that switches (CompiledStep)
            from codegen import cache

            self.error = exc
            cache.cancel_compiling(self._kernels)  # children its build did not collect
        finally:
            self.done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the build finished (started now if it was not), waiting at most
        ``timeout`` seconds (None: until it does)."""
        self.start()
        return self.done.wait(timeout)
