"""codegen.cache.prefetch_support: the support modules a first run needs, emitted by a child
process while the caller plans; the caller then finds them stored."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegen import cache

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")

_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from codegen import cache, gemm, pyentry, target

    parent = os.getpid()
    emitted = []
    for name in ("emit", "emit_as_written"):
        real = getattr(target, name)
        def counting(text, real=real, name=name):
            if sys.argv[2] == "fail" and os.getpid() != parent:
                raise RuntimeError("no LLVM in the child")  # the caller emits for itself
            emitted.append(name)
            return real(text)
        setattr(target, name, counting)
    cache.pyentry.set_code_source(
        lambda text: cache.support_code("pyentry", text, target.emit))
    modules = [(cache.trampolines(), None), (gemm.support_module("float32"), sys.argv[1])]
    if sys.argv[2] == "busy":  # another thread is inside LLVM (a plan compiling meanwhile)
        import threading
        inside, leave = threading.Event(), threading.Event()
        def compiling():
            with target.LOCK:
                inside.set()
                leave.wait()
        thread = threading.Thread(target=compiling)
        thread.start()
        inside.wait()
        started = cache.prefetch_support(modules)
        leave.set()
        thread.join()
    else:
        started = cache.prefetch_support(modules)
    again = cache.prefetch_support(modules)
    gemm.object_code("float32", sys.argv[1])  # what the first run of a plan asks for
    name, text, emit, version = gemm.support_module("float32")
    stored = cache._stored(sys.argv[1], cache._support_key(name, version, emit))
    print(json.dumps({"started": started, "again": again, "emitted": emitted,
                      "stored": stored, "cores": cache.forked.usable_cores()}))
""")


def _run(tmp_path: Path, mode: str, env: dict[str, str] | None = None) -> dict:
    import json

    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "cache"), mode], check=True,
        capture_output=True, text=True, env={**os.environ, "BACKPLAN_CACHE_DIR":
                                             str(tmp_path / "default"), **(env or {})},
        cwd=Path(__file__).resolve().parents[2], timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_child_emits_the_products_and_the_caller_loads_them(tmp_path: Path) -> None:
    got = _run(tmp_path, "ok")
    assert got["stored"]
    assert got["again"] is False  # once per directory and process
    if got["cores"] < 2:  # one core: nothing to overlap, the caller emits them itself
        assert got["started"] is False and got["emitted"] == ["emit_as_written"]
    else:
        assert got["started"] is True
        assert got["emitted"] == []  # the caller compiled nothing: it read the child's entry


def test_a_failed_child_leaves_the_caller_to_emit(tmp_path: Path) -> None:
    got = _run(tmp_path, "fail")
    assert got["stored"] and got["emitted"] == ["emit_as_written"]


def test_switched_off(tmp_path: Path) -> None:
    got = _run(tmp_path, "ok", {cache.PREFETCH_ENV: "0"})
    assert got["started"] is False and got["emitted"] == ["emit_as_written"]
    assert got["stored"]


def test_no_child_while_another_thread_is_inside_llvm(tmp_path: Path) -> None:
    """A child forked while another thread held LLVM's lock (a plan compiling in the
    background while a second step plans) waited for its copy of the lock for good, and the
    caller waited for the child for good: the process hung."""
    got = _run(tmp_path, "busy")
    assert got["started"] is False  # it does not fork then
    assert got["again"] is (got["cores"] >= 2)  # but does once that thread has left LLVM
    assert got["stored"]


def test_a_child_that_does_not_finish_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    # a child that never finishes its modules (spawned: a fork here would copy JAX's threads)
    pid = os.posix_spawn("/bin/sleep", ["sleep", "60"], dict(os.environ))
    monkeypatch.setattr(cache, "_prefetch_pid", pid)
    monkeypatch.setattr(cache, "PREFETCH_TIMEOUT_S", 0.2)
    start = time.monotonic()
    cache._await_prefetch()
    assert time.monotonic() - start < 10
    assert cache._prefetch_pid is None
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(pid, os.WNOHANG)
