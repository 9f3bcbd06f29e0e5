"""Well-known PyTorch training scripts (nanoGPT, pytorch/examples, makemore) ported by
changing ``import torch`` into ``import runtime as torch``: each runs from the weights PyTorch
initialised (copied through numpy) on the same data, and its losses, gradients and outputs
equal PyTorch's. The compiled runs are in tests/planner/test_scripts_ported_h12_compiled.py."""

from __future__ import annotations

import warnings
from types import ModuleType

import pytest

import runtime as rt


@pytest.mark.parametrize(("device", "name", "dtype"), [
    ("cuda", "autocast", rt.float16), ("cpu", "autocast", rt.bfloat16),
    ("cuda", "GradScaler", None), ("cpu", "GradScaler", None)])
def test_deprecated_device_amp_names(device: str, name: str, dtype: rt.dtype | None) -> None:
    """nanoGPT's ``torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))``: the per-device
    spellings exist, warn PyTorch's FutureWarning and are ``torch.amp``'s with the device."""
    torch = pytest.importorskip("torch")
    made = {}
    for lib in (torch, rt):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            obj = getattr(getattr(lib, device).amp, name)(enabled=False)
        made[lib] = (obj, [(w.category, str(w.message)) for w in caught])
    (want, want_warned), (got, got_warned) = made[torch], made[rt]
    assert got_warned == want_warned
    assert isinstance(got, getattr(rt.amp, name))
    if dtype is None:
        assert got.is_enabled() is want.is_enabled() is False
    else:
        assert (got.device, got.fast_dtype, got._enabled) == (device, dtype, False)
        assert str(want.fast_dtype).split(".")[1] == str(dtype).split(".")[1]


def test_deprecated_cuda_amp_custom_fwd_runs_the_function() -> None:
    pytest.importorskip("torch")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        class Double(rt.autograd.Function):
            @staticmethod
            @rt.cuda.amp.custom_fwd
            def forward(ctx: ModuleType, x: rt.Tensor) -> rt.Tensor:
                return x * 2

            @staticmethod
            @rt.cuda.amp.custom_bwd
            def backward(ctx: ModuleType, g: rt.Tensor) -> rt.Tensor:
                return g * 2

    assert [(w.category, str(w.message).split("(")[0]) for w in caught] == [
        (FutureWarning, "`torch.cuda.amp.custom_fwd"), (FutureWarning, "`torch.cuda.amp.custom_bwd")]
    x = rt.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


ACCELERATOR_CALLS = ["is_available()", "current_accelerator()",
                     "current_accelerator(check_available=True)", "device_count()",
                     "current_device_index()", "synchronize()", "set_device_index(0)",
                     "empty_cache()", "device_index(None).__enter__()",
                     "device_index(0).__enter__()"]


@pytest.mark.parametrize("call", ACCELERATOR_CALLS)
def test_accelerator_answers_as_pytorch(call: str) -> None:
    """pytorch/examples open with ``torch.accelerator.is_available()`` and
    ``current_accelerator()``: the same answers, or the same error, as PyTorch's."""
    torch = pytest.importorskip("torch")
    if rt.cuda.is_available() != torch.cuda.is_available():
        pytest.skip("PyTorch and the runtime see different GPUs")
    results = []
    for lib in (torch, rt):
        try:
            results.append(("ok", str(eval(f"lib.accelerator.{call}"))))
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            results.append((type(e).__name__, str(e)))
    assert results[1] == results[0]


def test_examples_device_line_picks_cpu_without_a_gpu() -> None:
    if rt.cuda.is_available():
        pytest.skip("a GPU is usable here")
    use_accel = rt.accelerator.is_available()
    dev = rt.accelerator.current_accelerator() if use_accel else rt.device("cpu")
    assert rt.ones(2, device=dev).device == rt.device("cpu")
