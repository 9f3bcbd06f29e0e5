"""DistributedDataParallel: a module replicated on every rank, its gradients averaged across
ranks during backward (PyTorch's DDP, over runtime.distributed's MPI group).

Eagerly, a hook after each parameter's gradient accumulation (on its AccumulateGrad node)
adds the parameter to the open bucket, in the order backward produces the gradients; a bucket
that reaches ``bucket_cap_mb`` starts its all-reduce (a non-blocking MPI request) at once, so
it overlaps the rest of the backward; when the last parameter's gradient is in, the last
bucket starts and every bucket's average is written into the ``.grad`` it came from. Every
rank runs the same backward, so every rank forms the same buckets in the same order.

Compiled (planner.compile), the hooks stand aside: the planner's data-parallel pass
(planner.distributed) puts the same bucketed all-reduce into the plan as communication steps.
"""

from __future__ import annotations

from typing import Any

from runtime import distributed as dist
from runtime.autograd.node import grad_accumulator
from runtime.nn.module import Module
from runtime.tracing import is_tracing

DEFAULT_BUCKET_CAP_MB = 25.0  # torch's default


class DistributedDataParallel(Module):
    """``module``'s parameters and buffers broadcast from rank 0 now; gradients averaged in
    buckets of at most ``bucket_cap_mb`` (None: 25) megabytes (a bucket closes on the gradient
    that fills it) during every backward; with ``broadcast_buffers`` (PyTorch's default) rank
    0's buffers (BatchNorm's running statistics) broadcast again at the start of every
    forward, also of a compiled step (before its plan runs: ``_before_replay``). CPU modules
    only (``device_ids`` must be None)."""

    def __init__(self, module: Module, device_ids: Any = None,
                 bucket_cap_mb: float | None = None, broadcast_buffers: bool = True) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a runtime.nn.Module, "
                            f"got {type(module).__name__}")
        if device_ids is not None:
            raise ValueError("DistributedDataParallel device_ids and output_device arguments "
                             "only work with single-device/multiple-device GPU modules or CPU "
                             "modules, but got device_ids [...] for a CPU module: use None")
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a positive number,"
                             f" got {bucket_cap_mb!r}")
        if not isinstance(broadcast_buffers, bool):
            raise TypeError(f"DistributedDataParallel: broadcast_buffers must be a bool, got "
                            f"{type(broadcast_buffers).__name__}")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.bucket_cap_bytes = int(cap * 1024 * 1024)
        self.world_size = dist.get_world_size()
        params = [p for p in module.parameters() if p.requires_grad]
        for t in [*module.parameters(), *module.buffers()]:
            dist.broadcast(t, src=0)
        self._reducer = _Reducer(params, self.bucket_cap_bytes)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not is_tracing():
            self._reducer.check_finished()
            self._sync_buffers()
        return self.module(*args, **kwargs)

    def _sync_buffers(self) -> None:
        """Rank 0's buffers to every rank, in place (PyTorch's broadcast_buffers)."""
        if self.broadcast_buffers and self.world_size > 1:
            for b in self.module.buffers():
                dist.broadcast(b, src=0)

    def _before_replay(self) -> None:
        """What a compiled step whose capture called this module does before each run of its
        plan (planner.compile): the buffer broadcast its forward does eagerly."""
        self._sync_buffers()

    @property
    def ddp_parameters(self) -> list[Any]:
        """The parameters whose gradients are averaged."""
        return list(self._reducer.params)


class _Reducer:
    def __init__(self, params: list[Any], cap_bytes: int) -> None:
        self.params = params
        self.cap = cap_bytes
        # the accumulators hold the hooks; a tensor holds its accumulator only weakly
        self.accumulators = [grad_accumulator(p) for p in params]
        for i, acc in enumerate(self.accumulators):
            acc.register_hook(self._hook(i))
        self._reset()

    def _reset(self) -> None:
        self.ready = 0
        self.open: list[int] = []
        self.open_bytes = 0
        self.buckets: list[tuple[list[int], dist.Bucket]] = []

    def _hook(self, i: int) -> Any:
        def hook(outputs: Any, grads: Any) -> None:
            if not is_tracing():
                self.mark_ready(i)
        return hook

    def mark_ready(self, i: int) -> None:
        p = self.params[i]
        if self.open and p.grad.dtype is not self.params[self.open[-1]].grad.dtype:
            self._start()  # one bucket holds one dtype
        self.open.append(i)
        self.open_bytes += p.grad._data.nbytes
        self.ready += 1
        if self.open_bytes >= self.cap or self.ready == len(self.params):
            self._start()
        if self.ready == len(self.params):
            self._finish()

    def _start(self) -> None:
        bucket = dist.Bucket([self.params[i].grad._data for i in self.open])
        self.buckets.append((self.open, bucket))
        self.open, self.open_bytes = [], 0

    def _finish(self) -> None:
        buckets = self.buckets
        self._reset()
        for members, bucket in buckets:
            for i, mean in zip(members, bucket.average()):
                g = self.params[i].grad
                g._data[...] = mean
                g._vc.v += 1

    def check_finished(self) -> None:
        if self.ready:
            missing = len(self.params) - self.ready
            self._reset()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                f"new one. This error indicates that your module has parameters that were not "
                f"used in producing loss ({missing} of {len(self.params)} parameters got no "
                "gradient).")
