"""Suite-wide settings: compiled code goes to a temporary cache, never the user's."""

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
