"""PyTorch's default device: ``rt.set_default_device`` and ``with rt.device(...)`` name the
device the factory functions (and so nn layers' parameters) make tensors on where none is
named; ``from_numpy``, ``*_like`` and a tensor's own device are left as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture, needs_two_devices  # noqa: F401


@pytest.fixture(autouse=True)
def _reset_default() -> Any:
    yield
    rt.set_default_device(None)


def test_with_device_is_a_context_giving_the_device() -> None:
    with rt.device("cpu") as d:
        assert d == rt.device("cpu") and rt.zeros(1).device.type == "cpu"
    assert rt.get_default_device() == rt.device("cpu")


def test_the_default_device_reaches_every_factory(fake_cuda: Any) -> None:
    with rt.device("cuda"):
        assert rt.get_default_device() == rt.device("cuda:0")
        made = [rt.zeros(2), rt.ones(2), rt.empty(2), rt.full((2,), 3.0), rt.randn(2),
                rt.rand(2), rt.randint(0, 3, (2,)), rt.arange(3), rt.linspace(0, 1, 3),
                rt.eye(2), rt.randperm(3), rt.tensor([1.0, 2.0]), rt.as_tensor(np.ones(2)),
                rt.nn.Linear(2, 3).weight]
        assert all(t.device.type == "cuda" for t in made), [t.device for t in made]
        assert rt.from_numpy(np.ones(2)).device.type == "cpu"  # shares numpy's memory
        cpu = rt.zeros(2, device="cpu")
        assert rt.zeros_like(cpu).device.type == "cpu"  # the input's device
        assert rt.tensor([1.0], device="cpu").device.type == "cpu"
        with rt.device("cpu"):  # nested: the innermost holds
            assert rt.zeros(1).device.type == "cpu"
        assert rt.zeros(1).device.type == "cuda"
    assert rt.zeros(1).device.type == "cpu"


def test_set_default_device_and_none_resets(fake_cuda: Any) -> None:
    needs_two_devices()
    rt.set_default_device("cuda:1")
    assert rt.get_default_device() == rt.device("cuda:1")
    assert rt.zeros(2).device == rt.device("cuda:1")
    rt.set_default_device(None)
    assert rt.zeros(2).device.type == "cpu"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu, .* device type"):
        rt.set_default_device("tpu")


def test_the_default_device_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (rt, torch):
        with lib.device("cpu") as d:
            assert str(d) == "cpu" and str(lib.zeros(1).device) == "cpu"
        assert str(lib.get_default_device()) == "cpu"
