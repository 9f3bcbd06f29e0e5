"""The Python processes the suite starts import the project's modules from the bytecode the
session compiled once (tests/conftest.py, tests/bytecode/sitecustomize.py), where Python writes
no bytecode (PYTHONDONTWRITEBYTECODE=1, as CI runs): none compiles a module of the project
from source; one whose source differs from what was compiled (its mtime or size) is compiled
from source again, as Python does with a stale __pycache__ entry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runtime

ROOT = Path(runtime.__file__).parents[1]
pytestmark = pytest.mark.skipif(not sys.dont_write_bytecode,
                                reason="Python writes bytecode here: each process reuses its "
                                       "__pycache__, the session shares none")

# counts the modules of the checkout compiled from source while ``import planner`` runs
COUNT = """
import sys
from importlib.machinery import SourceFileLoader
compiled = []
real = SourceFileLoader.source_to_code
def counting(self, data, path, *args, **kw):
    if path.startswith({root!r}):
        compiled.append(path)
    return real(self, data, path, *args, **kw)
SourceFileLoader.source_to_code = counting
import {module}
print(len(compiled), *compiled)
"""


def _compiled_from_source(module: str) -> list[str]:
    code = COUNT.format(root=str(ROOT / ""), module=module)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    count, *paths = done.stdout.split()
    assert int(count) == len(paths)
    return paths


def test_a_child_process_compiles_none_of_the_project() -> None:
    assert os.environ["BACKPLAN_TEST_PYC_ROOT"] == str(ROOT)
    assert _compiled_from_source("planner") == []
    assert (Path(os.environ["BACKPLAN_TEST_PYC_DIR"]) / "runtime" / "tensor.pyc").is_file()


def test_a_module_whose_source_changed_is_compiled_from_it(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """The session's bytecode of a module is checked against its source: here a copy of the
    folder the bytecode is read from holds another module's bytecode under runtime.tensor's
    name, and that module alone is compiled from source."""
    fake = tmp_path / "pyc"
    shutil.copytree(os.environ["BACKPLAN_TEST_PYC_DIR"], fake)
    (fake / "runtime" / "tensor.pyc").write_bytes((fake / "runtime" / "_dtype.pyc").read_bytes())
    monkeypatch.setenv("BACKPLAN_TEST_PYC_DIR", str(fake))
    assert _compiled_from_source("runtime.tensor") == [str(ROOT / "runtime" / "tensor.py")]
