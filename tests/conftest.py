"""Suite-wide settings: compiled code goes to a temporary cache, never the user's; kernels
compile in the call that plans them (BACKPLAN_BACKGROUND_COMPILE=0), so that every test sees
the fused plan from its first call, as it did before background compiling
(tests/planner/test_background_compile.py covers that mode); the planner verifies every
graph after its passes (BACKPLAN_CHECK_GRAPHS=1, off outside the suite)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


def _environment(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` for the session, then put back as it was."""
    previous = os.environ.get(name)
    os.environ[name] = value
    yield
    if previous is None:
        del os.environ[name]
    else:
        os.environ[name] = previous


@pytest.fixture(autouse=True, scope="session")
def _private_codegen_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield from _environment("BACKPLAN_CACHE_DIR", str(tmp_path_factory.mktemp("codegen-cache")))


@pytest.fixture(autouse=True, scope="session")
def _check_graphs() -> Iterator[None]:
    """The planner's graph verifier after its passes (planner.graph.checking), off outside."""
    yield from _environment("BACKPLAN_CHECK_GRAPHS", "1")


@pytest.fixture(autouse=True, scope="session")
def _compile_in_the_call() -> Iterator[None]:
    yield from _environment("BACKPLAN_BACKGROUND_COMPILE", "0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``BACKPLAN_REAL_CUPY=1`` (tests/fakecuda.py: on a GPU) runs the tests that use the
    ``fake_cuda`` fixture, on the real CuPy, and deselects the rest."""
    if os.environ.get("BACKPLAN_REAL_CUPY") != "1":
        return
    keep = [i for i in items if "fake_cuda" in getattr(i, "fixturenames", ())]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
