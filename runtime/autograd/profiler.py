"""``rt.autograd.profiler``: PyTorch's legacy profiler names over ``runtime.profiler``:
``profile`` (``enabled``, ``record_shapes``; its ``function_events``, ``key_averages``,
``table``, ``export_chrome_trace``, ``self_cpu_time_total``) and ``record_function``."""

from __future__ import annotations

from typing import Any

from .. import profiler as _profiler
from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """``torch.autograd.profiler.profile``: records the CPU time of ops, autograd nodes,
    compiled steps and ``record_function`` ranges while entered (``enabled=False``: nothing)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None) -> None:
        if not use_cpu:
            raise NotImplementedError("profile(use_cpu=False): only CPU time is recorded here")
        activities = {_profiler.ProfilerActivity.CPU}
        if use_cuda or use_device == "cuda":
            activities.add(_profiler.ProfilerActivity.CUDA)
        self.enabled = enabled
        self._inner = _profiler.profile(
            activities, record_shapes=record_shapes, with_flops=with_flops,
            profile_memory=profile_memory, with_stack=with_stack, with_modules=with_modules,
            experimental_config=experimental_config, acc_events=acc_events) if enabled else None
        self.function_events: EventList | None = None

    def __enter__(self) -> profile:
        if self._inner is not None:
            self._inner.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        if self._inner is not None:
            self._inner.stop()
            self.function_events = self._inner.events()
        return False

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    def __str__(self) -> str:
        return self.table()
