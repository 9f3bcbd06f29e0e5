"""Compiled-module cache: in memory, and object code on disk keyed by kernels and target.

The key is the sha256 of every kernel hash, the host CPU name and features, the llvmlite
version and the source of the code generator itself, so a different machine, LLVM or renderer
never loads stale code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

import llvmlite

from codegen import ir as kir
from codegen.jit import (CompiledModule, ObjectCode, compile_count, host, load,
                         optimize_and_emit)
from codegen.llvm import render

_memory: dict[str, CompiledModule] = {}
_lock = threading.Lock()
_hits = {"memory_hits": 0, "disk_hits": 0}


def cache_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else $BACKPLAN_CACHE_DIR, else ~/.cache/backplan."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("BACKPLAN_CACHE_DIR") or Path.home() / ".cache" / "backplan")


@functools.cache
def generator_hash() -> str:
    """sha256 of the modules that turn kernel IR into machine code."""
    h = hashlib.sha256()
    for name in ("ir.py", "llvm.py", "llvm_math.py", "jit.py"):
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()


def cache_key(kernels: list[kir.Kernel]) -> str:
    cpu, features = host()
    payload = [[kir.kernel_hash(k) for k in kernels], cpu, features, llvmlite.__version__,
               generator_hash()]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def get_compiled(kernels: list[kir.Kernel],
                 cache_dir_path: str | os.PathLike[str] | None = None) -> CompiledModule:
    """The loaded module for ``kernels``: from memory, from disk, or compiled (then stored)."""
    key = cache_key(kernels)
    with _lock:
        if key in _memory:
            _hits["memory_hits"] += 1
            return _memory[key]
        directory = cache_dir(cache_dir_path)
        obj, ll = directory / f"{key}.o", directory / f"{key}.ll"
        if obj.exists() and ll.exists():
            _hits["disk_hits"] += 1
            code = ObjectCode(obj.read_bytes(), ll.read_text())
        else:
            code = optimize_and_emit(render(kernels))
            directory.mkdir(parents=True, exist_ok=True)
            _write_atomic(ll, code.optimized_ir.encode())
            _write_atomic(obj, code.object_file)
        compiled = _memory[key] = load(code, kernels)
        return compiled


def _write_atomic(path: Path, data: bytes) -> None:
    # a concurrent reader sees either no file or a whole one
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def clear_cache(cache_dir_path: str | os.PathLike[str] | None = None, *,
                disk: bool = True) -> None:
    """Forget compiled modules in memory and, unless ``disk=False``, their files on disk."""
    with _lock:
        _memory.clear()
        if disk:
            directory = cache_dir(cache_dir_path)
            for pattern in ("*.o", "*.ll"):
                for path in directory.glob(pattern):
                    path.unlink()


def stats() -> dict[str, int]:
    """``compiles``: real LLVM optimizations+codegen so far; memory and disk cache hits."""
    return {"compiles": compile_count(), **_hits}
