"""Suite-wide settings: compiled code goes to a temporary cache, never the user's; kernels
compile in the call that plans them (BACKPLAN_BACKGROUND_COMPILE=0), so that every test sees
the fused plan from its first call, as it did before background compiling
(tests/planner/test_background_compile.py covers that mode); the planner verifies every
graph after its passes (BACKPLAN_CHECK_GRAPHS=1, off outside the suite)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_codegen_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    previous = os.environ.get("BACKPLAN_CACHE_DIR")
    os.environ["BACKPLAN_CACHE_DIR"] = str(tmp_path_factory.mktemp("codegen-cache"))
    yield
    if previous is None:
        del os.environ["BACKPLAN_CACHE_DIR"]
    else:
        os.environ["BACKPLAN_CACHE_DIR"] = previous


@pytest.fixture(autouse=True, scope="session")
def _check_graphs() -> Iterator[None]:
    """The planner's graph verifier after its passes (planner.graph.checking), off outside."""
    previous = os.environ.get("BACKPLAN_CHECK_GRAPHS")
    os.environ["BACKPLAN_CHECK_GRAPHS"] = "1"
    yield
    if previous is None:
        del os.environ["BACKPLAN_CHECK_GRAPHS"]
    else:
        os.environ["BACKPLAN_CHECK_GRAPHS"] = previous


@pytest.fixture(autouse=True, scope="session")
def _compile_in_the_call() -> Iterator[None]:
    previous = os.environ.get("BACKPLAN_BACKGROUND_COMPILE")
    os.environ["BACKPLAN_BACKGROUND_COMPILE"] = "0"
    yield
    if previous is None:
        del os.environ["BACKPLAN_BACKGROUND_COMPILE"]
    else:
        os.environ["BACKPLAN_BACKGROUND_COMPILE"] = previous
