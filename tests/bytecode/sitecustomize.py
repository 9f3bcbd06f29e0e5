"""Imported at start-up by the Python processes the test suite starts (tests/conftest.py puts
this folder on their PYTHONPATH, with BACKPLAN_TEST_PYC_ROOT and BACKPLAN_TEST_PYC_DIR): an
import of a module of the checkout reads the bytecode the session compiled once into
BACKPLAN_TEST_PYC_DIR, where CI (PYTHONDONTWRITEBYTECODE=1, a fresh checkout) has no
__pycache__ and every process compiled the whole project from source again (about 1 s of a
child's 1.8 s start-up CPU time). Python checks each file against its source's mtime and size
as it does in __pycache__, and compiles the source where it differs or is missing; modules
outside the checkout keep their own caches. The same module, imported by path, installs the
lookup in the session's own process."""

from __future__ import annotations

import os

import _frozen_importlib_external as _external

ROOT_ENV = "BACKPLAN_TEST_PYC_ROOT"
DIR_ENV = "BACKPLAN_TEST_PYC_DIR"
_original = _external.cache_from_source


def cached(path: str, root: str, directory: str) -> str:
    """Where the session keeps the bytecode of ``path``, a source file under ``root``
    (sliced, not os.path.relpath: this runs for each import of the project)."""
    return os.path.join(directory, path[len(os.path.join(root, "")):] + "c")


def install(root: str, directory: str) -> None:
    """Imports of the ``.py`` files under ``root`` read their bytecode from ``directory``."""
    prefix = os.path.join(root, "")

    def cache_from_source(path: str, debug_override: bool | None = None, *,
                          optimization: object = None) -> str:
        if path.startswith(prefix) and path.endswith(".py"):
            return cached(path, root, directory)
        return _original(path, debug_override, optimization=optimization)

    _external.cache_from_source = cache_from_source


def uninstall() -> None:
    _external.cache_from_source = _original


if os.environ.get(ROOT_ENV) and os.environ.get(DIR_ENV):
    install(os.environ[ROOT_ENV], os.environ[DIR_ENV])
