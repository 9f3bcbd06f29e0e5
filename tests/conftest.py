"""Suite-wide settings: compiled code goes to a temporary cache, never the user's; kernels
compile in the call that plans them (BACKPLAN_BACKGROUND_COMPILE=0), so that every test sees
the fused plan from its first call, as it did before background compiling
(tests/planner/test_background_compile.py covers that mode); the planner verifies every
graph after its passes (BACKPLAN_CHECK_GRAPHS=1, off outside the suite). Where Python writes
no bytecode (PYTHONDONTWRITEBYTECODE=1, as CI runs), the project's modules are compiled once
into a temporary folder that this process and the Python processes the tests start import
them from (tests/bytecode/sitecustomize.py), where each process compiled them all again."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

# the packages whose bytecode the session compiles once (_share_bytecode)
BYTECODE_PACKAGES = ("runtime", "planner", "codegen", "benchmarks")
BYTECODE_SITE = Path(__file__).parent / "bytecode"
_bytecode: dict[str, str | None] = {}


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


def _bytecode_root() -> Path | None:
    """The folder that holds BYTECODE_PACKAGES, as Python finds them; None if they are apart."""
    roots = set()
    for name in BYTECODE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return None
        roots.add(Path(spec.origin).parent.parent)
    return roots.pop() if len(roots) == 1 else None


def _compile_packages(root: Path, directory: str, hook: ModuleType) -> None:
    for name in BYTECODE_PACKAGES:
        for source in sorted((root / name).rglob("*.py")):
            try:
                py_compile.compile(str(source), hook.cached(str(source), str(root), directory),
                                   doraise=True)
            except py_compile.PyCompileError:
                pass  # its import reports the error, as it would have


def _load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("backplan_test_bytecode",
                                                  BYTECODE_SITE / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def _share_bytecode() -> None:
    """Compile BYTECODE_PACKAGES once into a temporary folder and import them from it, here
    and (through PYTHONPATH's tests/bytecode/sitecustomize.py) in every Python process the
    tests start, which compiled the whole project from source each where Python writes no
    bytecode: ``python -m planner --version`` took 1.8 s of CPU time, 0.75 s with it."""
    root = _bytecode_root()
    if not sys.dont_write_bytecode or root is None:
        return
    hook = _load_hook()
    directory = tempfile.mkdtemp(prefix="backplan-test-pyc-")
    _compile_packages(root, directory, hook)
    hook.install(str(root), directory)
    _bytecode["directory"] = directory
    for name, value in ((hook.ROOT_ENV, str(root)), (hook.DIR_ENV, directory),
                        ("PYTHONPATH", os.pathsep.join(filter(None, [
                            str(BYTECODE_SITE), os.environ.get("PYTHONPATH")])))):
        _bytecode[name] = os.environ.get(name)
        os.environ[name] = value
    _bytecode["hook"] = hook.__name__
    sys.modules[hook.__name__] = hook


def pytest_configure(config: pytest.Config) -> None:
    _share_bytecode()


def pytest_unconfigure(config: pytest.Config) -> None:
    directory, name = _bytecode.pop("directory", None), _bytecode.pop("hook", None)
    if directory is None:
        return
    sys.modules.pop(name).uninstall()
    for variable, value in _bytecode.items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    _bytecode.clear()
    shutil.rmtree(directory, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``BACKPLAN_REAL_CUPY=1`` (tests/fakecuda.py: on a GPU) runs the tests that use the
    ``fake_cuda`` fixture, on the real CuPy, and deselects the rest."""
    if os.environ.get("BACKPLAN_REAL_CUPY") != "1":
        return
    keep = [i for i in items if "fake_cuda" in getattr(i, "fixturenames", ())]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
