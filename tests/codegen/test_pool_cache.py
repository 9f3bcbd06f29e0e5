"""codegen.pool's loops come from the disk cache's support store: the first process compiles
and stores them beside (not among) the kernels' entries, a second one loads them without
compiling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from codegen.cache import ENTRY_SUFFIX

ROOT = Path(__file__).parents[2]

PROBE = """
import sys
from codegen import cache, pool, target
if sys.argv[1] == "warm":
    def refuse(text):
        raise AssertionError("compiled although the disk cache holds the loops")
    # the key names the emitter (the same text through another pipeline is other code):
    # this one stands in for the pool's
    refuse.__qualname__ = target.emit_as_written.__qualname__
    pool.set_code_source(lambda text: cache.support_code("pool", text, refuse))
pool._code()
print(len(cache.entries(cache.cache_dir())), cache.stats()["compiles"])
"""


def _pythonpath() -> str:
    """ROOT, then the PYTHONPATH inherited (the suite's shared bytecode: tests/conftest.py)."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


def _run(mode: str, cache_dir: Path) -> str:
    env = {**os.environ, "BACKPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": _pythonpath()}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pool_loops_are_stored_once_and_loaded_after(tmp_path: Path) -> None:
    assert _run("cold", tmp_path) == "0 0"  # no kernel entry, no kernel compile counted
    stored = [p for p in (tmp_path / "support").rglob(f"*{ENTRY_SUFFIX}") if p.is_file()]
    assert len(stored) == 1, stored
    assert _run("warm", tmp_path) == "0 0"


def test_the_support_key_names_the_emitter(tmp_path: Path) -> None:
    """The same text through another emitter (another pipeline) is other code: compiled and
    kept apart; each emitter's code found again after."""
    from codegen import cache, target

    text = "define void @f() {\n  ret void\n}\n"
    calls: list[str] = []

    def first(source: str) -> target.ObjectCode:
        calls.append("first")
        return target.emit(source)

    def second(source: str) -> target.ObjectCode:
        calls.append("second")
        return target.emit_as_written(source)

    for emit in (first, second, first, second):
        cache.support_code("probe", text, emit, tmp_path)
    assert calls == ["first", "second"]
