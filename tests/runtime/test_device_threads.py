"""The engine's per-device worker threads, exercised without a GPU.

CuPy is swapped for numpy, so tensors that say "cuda:0" hold numpy arrays; the engine still
routes their backward nodes to the cuda:0 worker thread, which is what these tests check.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import runtime as rt
from runtime import _device
from runtime.tensor import Tensor


@pytest.fixture()
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_device, "cupy_module", lambda: np)


def _cuda_leaf(values: list[float]) -> Tensor:
    t = Tensor._make(np.asarray(values, dtype=np.float32), rt.float32, "cuda:0")
    return t.requires_grad_()


class RecordThread(rt.autograd.Function):
    seen: list[str] = []

    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        RecordThread.seen.append(threading.current_thread().name)
        return g * 2.0


def test_cuda_nodes_run_on_the_device_worker_thread(fake_cuda: None) -> None:
    RecordThread.seen = []
    x = _cuda_leaf([1.0, 2.0, 3.0])
    y = RecordThread.apply(x * x).sum()
    y.backward()
    assert RecordThread.seen == ["autograd-cuda:0"]
    np.testing.assert_allclose(x.grad._data, 4.0 * np.array([1.0, 2.0, 3.0]))
    assert x.grad.device == "cuda:0"


def test_cpu_nodes_run_on_the_calling_thread() -> None:
    RecordThread.seen = []
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    RecordThread.apply(x).sum().backward()
    assert RecordThread.seen == [threading.current_thread().name]


class Boom(rt.autograd.Function):
    @staticmethod
    def forward(ctx, x):  # type: ignore[no-untyped-def]
        return x * 1.0

    @staticmethod
    def backward(ctx, g):  # type: ignore[no-untyped-def]
        raise ValueError("boom on the device thread")


def test_error_on_device_thread_is_raised_in_caller(fake_cuda: None) -> None:
    x = _cuda_leaf([1.0])
    with pytest.raises(ValueError, match="boom on the device thread") as info:
        Boom.apply(x).sum().backward()
    assert any("BoomBackward" in n for n in getattr(info.value, "__notes__", []))
    # the device thread survives the error and serves the next backward
    x2 = _cuda_leaf([3.0])
    (x2 * x2).sum().backward()
    np.testing.assert_allclose(x2.grad._data, [6.0])
