"""``rt.random``: PyTorch's ``torch.random``: the default CPU generator's seed and state, and
``fork_rng``, which puts the random state back as it was when its block ends."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from .creation import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,
                       seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]

_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str | None = None) -> Iterator[None]:
    """Random draws inside the block leave the generators as they were: the CPU's always,
    and those of the GPUs in ``devices`` (all of them by default, with PyTorch's warning
    where there are several). ``enabled=False``: nothing is forked."""
    global _fork_rng_warned_already
    from . import cuda

    if device_type == "meta" or not enabled:
        yield
        return
    device_type = device_type or "cuda"
    if device_type != "cuda":
        raise RuntimeError(f"torch has no module of `{device_type}`, you should register a "
                           "module by `torch._register_device_module`.")
    if devices is None:
        count = cuda.device_count()
        if count > 1 and not _fork_rng_warned_already:
            warnings.warn(
                f"CUDA reports that you have {count} available devices, and you have used "
                f"{_caller} without explicitly specifying which devices are being used. For "
                "safety, we initialize *every* CUDA device by default, which can be quite slow "
                "if you have a lot of CUDAs. If you know that you are only making use of a few "
                "CUDA devices, set the environment variable CUDA_VISIBLE_DEVICES or the "
                f"'{_devices_kw}' keyword argument of {_caller} with the set of devices you "
                "are actually using.", stacklevel=3)
            _fork_rng_warned_already = True
        devices = list(range(count))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [cuda.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, state in zip(devices, device_states):
            cuda.set_rng_state(state, d)
