"""The ``fake_cuda`` fixture: the strict fake CuPy of ``tests/fake_cupy.py`` installed as
``cupy`` and ``cupyx`` for one test, so that "cuda" tensors and plans run without a GPU.

A test module imports ``fake_cuda_fixture`` (``# noqa: F401``) and asks for ``fake_cuda``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests import fake_cupy


@pytest.fixture(name="fake_cuda")
def fake_cuda_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``cupy`` module, in sys.modules for this test only (the runtime imports CuPy on
    each use, so nothing of it outlives the test)."""
    import runtime.cuda

    for name, module in fake_cupy.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    # the fake GPU's generators (rt.cuda.default_generators, made on first use) are its own
    monkeypatch.setattr(runtime.cuda, "_generators", [])
    previous = fake_cupy.set_raw_module_backend(None)
    yield sys.modules["cupy"]
    fake_cupy.set_raw_module_backend(previous)
