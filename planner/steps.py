"""The steps of a plan, as typed data: what each step is decides how it runs, is checked,
printed and scheduled (dispatch on the type, never on an op string plus an attrs dict).

Every step writes the buffers ``outputs`` (its own ``out``, or a kernel's several), reads the
buffers ``buffers`` (its ``("buf", id)`` arguments), and knows its device and phase:

- ``InputStep``, ``StateStep``, ``ConstStep``: values bound before the first step runs (an
  argument by index, a state slot, a constant array); ``RandStep``: a random draw, made in plan
  order from the generator it names.
- ``PrimitiveStep``: a registry primitive on numpy (cupy) arrays; ``ExternStep`` is one that
  calls a library which releases the GIL (matmul: BLAS), ``CopyStep`` a host/device copy.
- ``KernelStep``: a fused kernel of the codegen IR; ``CommitStep``: a kernel whose one output is
  written into its argument ``commit`` (a parameter) when the plan's results are written back.
- ``AllReduceStartStep``, ``AllReduceWaitStep``: the communication queue's steps (device
  ``COMM``) of a data-parallel plan (planner.distributed): a bucket of gradients packed and
  its all-reduce started as a non-blocking MPI request; the request waited for and each
  gradient's mean over the ranks given out.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from codegen import ir as kir
from runtime import _dtype as D
from runtime.creation import draw
from runtime.ops.registry import REGISTRY, Primitive

Meta = tuple[tuple[int, ...], np.dtype]  # a buffer's (shape, dtype)


@dataclass(eq=False, kw_only=True)
class Step:
    out: int  # the buffer this step writes (a kernel: its first output)
    args: list[tuple[str, Any]]  # ("buf", id) | ("scalar", value)
    shape: tuple[int, ...]
    dtype: D.DType
    device: str
    phase: str
    op: ClassVar[str] = ""  # what ``listing`` and serialization call the step

    @property
    def outputs(self) -> tuple[int, ...]:
        """The buffers the step writes."""
        return (self.out,)

    @property
    def buffers(self) -> list[int]:
        """The buffers the step reads, in argument order (repeats kept)."""
        return [v for kind, v in self.args if kind == "buf"]

    def out_metas(self) -> list[Meta]:
        """(shape, dtype) of each output, in ``outputs`` order, as the plan holds it."""
        return [(tuple(self.shape), self.dtype.np)]

    def out_allocations(self) -> list[int]:
        """Bytes each output allocates, in ``outputs`` order."""
        return [math.prod(self.shape) * self.dtype.np.itemsize] * len(self.outputs)

    def shown(self) -> dict[str, Any]:
        """The attributes ``Plan.listing`` prints and serialization stores (``attrs``)."""
        return {}

    @property
    def is_view(self) -> bool:
        """Whether its output shares its first argument's storage."""
        return False

    @property
    def ufunc(self) -> np.ufunc | None:
        """The numpy ufunc the step is, applied to its arguments (None: not one)."""
        return None


@dataclass(eq=False, kw_only=True)
class SourceStep(Step):
    """A value that enters the plan rather than being computed from buffers."""

    bound: ClassVar[bool] = True  # in the environment before any step runs


@dataclass(eq=False, kw_only=True)
class InputStep(SourceStep):
    index: int  # the argument's position
    op: ClassVar[str] = "input"


@dataclass(eq=False, kw_only=True)
class StateStep(SourceStep):
    slot: int  # the state slot read
    op: ClassVar[str] = "state"


@dataclass(eq=False, kw_only=True)
class ConstStep(SourceStep):
    value: np.ndarray
    op: ClassVar[str] = "const"


# while planner.cuda_graph records a CUDA graph on this thread, ``buffer(step)``: the array a
# RandStep's draw is copied into before each replay (a graph would replay one draw forever)
recorded_draws = threading.local()


@dataclass(eq=False, kw_only=True)
class RandStep(SourceStep):
    kind: str  # "rand" | "randn" | "rand64" (runtime.creation.draw)
    generator: int  # index into the run's generators
    op: ClassVar[str] = "rand"
    bound: ClassVar[bool] = False  # drawn where eager mode drew it, in plan order

    def shown(self) -> dict[str, Any]:
        return {"kind": self.kind, "generator": self.generator}

    def draw(self, generator: Any) -> Any:
        """A fresh array of this step's shape and dtype from ``generator``; while
        planner.cuda_graph records a graph on this thread, the graph's input buffer that each
        replay's draw is copied into (``recorded_draws``), and nothing is drawn."""
        buffer = getattr(recorded_draws, "buffer", None)
        if buffer is not None:
            return buffer(self)
        arr = draw(generator, self.kind, self.shape, self.dtype)
        if self.device != "cpu":
            from runtime._device import move_array

            arr = move_array(arr, self.device)
        return arr


@dataclass(eq=False, kw_only=True)
class PrimitiveStep(Step):
    name: str  # the registry primitive
    attrs: dict[str, Any]

    @property
    def op(self) -> str:  # type: ignore[override]
        return self.name

    @property
    def prim(self) -> Primitive:
        return REGISTRY[self.name]

    def shown(self) -> dict[str, Any]:
        return self.attrs

    @property
    def is_view(self) -> bool:
        """The registry's answer for these attributes (a gather copies; basic indexing, a
        reshape, permute or expand is a view)."""
        return bool(self.args) and self.args[0][0] == "buf" and self.prim.is_view(self.attrs)

    @property
    def ufunc(self) -> np.ufunc | None:
        return self.prim.ufunc


@dataclass(eq=False, kw_only=True)
class ExternStep(PrimitiveStep):
    """A library call that releases the GIL (and may use BLAS threads): matmul."""


@dataclass(eq=False, kw_only=True)
class CopyStep(PrimitiveStep):
    """A copy between host and device memory (to_device)."""


def primitive_step(name: str, **fields: Any) -> PrimitiveStep:
    """The step of registry primitive ``name`` (registered): an ExternStep, a CopyStep or a
    PrimitiveStep, as the registry's ``extern`` and ``transfer`` say."""
    prim = REGISTRY[name]
    cls = ExternStep if prim.extern else CopyStep if prim.transfer else PrimitiveStep
    return cls(name=name, **fields)


SOURCE_KINDS: dict[str, type[SourceStep]] = {
    c.op: c for c in (InputStep, StateStep, ConstStep, RandStep)}


@dataclass(eq=False, kw_only=True)
class KernelStep(Step):
    kernel: kir.Kernel
    outs: list[int]  # a buffer per kernel output
    fused: int  # how many steps it replaced
    # per output: (shape the kernel writes, IR dtype, the plan's shape of that buffer)
    out_specs: list[tuple[tuple[int, ...], str, tuple[int, ...]]]
    op: ClassVar[str] = "kernel"

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(self.outs)

    def out_metas(self) -> list[Meta]:
        return [(tuple(plan_shape), np.dtype(dtype)) for _, dtype, plan_shape in self.out_specs]

    def out_allocations(self) -> list[int]:
        """Bytes of each output as the kernel allocates it (its own shape)."""
        return [math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype, _ in self.out_specs]

    def shown(self) -> dict[str, Any]:
        return {"kernel": self.kernel.name, "fused": self.fused, "outs": self.outs}


@dataclass(eq=False, kw_only=True)
class CommitStep(KernelStep):
    """A parameter update run at write-back (plan.Commit), each output stored into the
    storage of the argument its kernel output's ``into`` names (a parameter, an optimizer's
    moment): nothing of the run reads its outputs, so it may wait till every step succeeded,
    and no parameter or state is ever held twice. ``commit`` is the first output's argument."""

    commit: int

    @property
    def commits(self) -> tuple[int, ...]:
        """The argument each output is stored into, in output order."""
        return tuple(out.into for out in self.kernel.outputs)

    @property
    def targets(self) -> tuple[int, ...]:
        """The buffers (state reads) the outputs are stored into, in output order."""
        return tuple(self.args[i][1] for i in self.commits)

    @property
    def target(self) -> int:
        """The buffer the first output is stored into."""
        return self.args[self.commit][1]

    def shown(self) -> dict[str, Any]:
        return {**super().shown(),
                "in_place_at_commit": ", ".join(f"%{t}" for t in self.targets)}


COMM = "comm"  # the device of communication steps: the runtime's communication queue
# a stated network (the figure the README's scaling model uses): 10 Gbit/s Ethernet, 20 us
COMM_BYTES_PER_S = 1.25e9
COMM_LATENCY_S = 20e-6


@dataclass(eq=False, kw_only=True)
class CommStep(Step):
    """A step of the communication queue: ``call(*arrays)`` takes its buffer arguments and
    returns its outputs. Those that start a collective (``starts``) run in plan order among
    themselves (the schedule chains them), so every rank starts its collectives in the same
    order, as MPI matches them; waits may end in any order."""

    bucket: int  # which bucket of gradients, in the order backward produces them
    starts: ClassVar[bool] = False

    def call(self, *args: Any) -> tuple[Any, ...]:
        raise NotImplementedError


@dataclass(eq=False, kw_only=True)
class AllReduceStartStep(CommStep):
    """Packs its gradient arguments into one flat array (``shape``: their elements) and starts
    its sum over the ranks; its output is the request in flight (runtime.distributed.Bucket)."""

    op: ClassVar[str] = "allreduce_start"
    starts: ClassVar[bool] = True

    def seconds(self) -> float:
        """Estimated seconds its all-reduce takes once started: a latency, and a ring's two
        passes over the bucket's bytes at ``COMM_BYTES_PER_S``. Weighing the critical path by
        it puts the gradients of early buckets (and the starts) ahead of the rest of the
        backward, which then overlaps them."""
        return COMM_LATENCY_S + 2 * math.prod(self.shape) * self.dtype.np.itemsize \
            / COMM_BYTES_PER_S

    def shown(self) -> dict[str, Any]:
        return {"bucket": self.bucket}

    def call(self, *grads: Any) -> tuple[Any, ...]:
        from runtime.distributed import Bucket

        return (Bucket(grads),)


@dataclass(eq=False, kw_only=True)
class AllReduceWaitStep(CommStep):
    """Waits for its bucket's all-reduce (its one argument) and gives out the mean of each
    gradient over the ranks: buffers ``outs`` of shapes ``out_shapes``, views of the bucket."""

    outs: list[int]
    out_shapes: list[tuple[int, ...]]
    op: ClassVar[str] = "allreduce_wait"

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(self.outs)

    def out_metas(self) -> list[Meta]:
        return [(tuple(shape), self.dtype.np) for shape in self.out_shapes]

    def out_allocations(self) -> list[int]:
        return [0] * len(self.outs)  # views of the bucket the start step allocated

    def shown(self) -> dict[str, Any]:
        return {"bucket": self.bucket, "outs": self.outs}

    def call(self, bucket: Any) -> tuple[Any, ...]:
        return tuple(bucket.average())


@dataclass(frozen=True)
class KernelInfo:
    """What plan.kernels lists: one kernel (IR) and the device it runs on; its source, in the
    language of that device's renderer, is rendered on first access (fusion renders nothing)."""

    kernel: kir.Kernel
    device: str

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def language(self) -> str:
        from codegen.renderer import renderer_for

        return renderer_for(self.device).language

    @functools.cached_property
    def source(self) -> str:
        from codegen.renderer import renderer_for

        return renderer_for(self.device).kernel_source(self.kernel)
