"""The ``fake_cuda`` fixture: the strict fake CuPy of ``tests/fake_cupy.py`` installed as
``cupy`` and ``cupyx`` for one test, so that "cuda" tensors and plans run without a GPU.

A test module imports ``fake_cuda_fixture`` (``# noqa: F401``) and asks for ``fake_cuda``.

``BACKPLAN_REAL_CUPY=1`` runs the same tests on the real CuPy and GPU instead (on a machine
that has them): the fixture then yields ``cupy`` itself, and the fake's host launcher is not
used. Tests that need what one real GPU lacks (a second device, the fake's own checks) fail
there, saying so; the rest prove on hardware what the fake proves on the host."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests import fake_cupy

# the fake_cuda tests on the real CuPy and GPU (see the module's docstring)
REAL_CUPY = os.environ.get("BACKPLAN_REAL_CUPY") == "1"


def needs_two_devices() -> None:
    """Skip on a real machine of one GPU: the test places tensors on cuda:1 (the fake has two
    devices)."""
    if REAL_CUPY:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 2:
            pytest.skip("needs a second GPU (cuda:1); this machine has one")


def fake_only(why: str) -> None:
    """Skip under BACKPLAN_REAL_CUPY=1: the test checks the fake CuPy itself, ``why``."""
    if REAL_CUPY:
        pytest.skip(f"checks the fake CuPy ({why})")


@pytest.fixture(name="fake_cuda")
def fake_cuda_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The fake ``cupy`` module, in sys.modules for this test only (the runtime imports CuPy on
    each use, so nothing of it outlives the test)."""
    import runtime.cuda

    if REAL_CUPY:
        import cupy

        monkeypatch.setattr(runtime.cuda, "_generators", [])
        yield cupy
        return
    for name, module in fake_cupy.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    # the fake GPU's generators (rt.cuda.default_generators, made on first use) are its own
    monkeypatch.setattr(runtime.cuda, "_generators", [])
    previous = fake_cupy.set_raw_module_backend(None)
    yield sys.modules["cupy"]
    fake_cupy.set_raw_module_backend(previous)
