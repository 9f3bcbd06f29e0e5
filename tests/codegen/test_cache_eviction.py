"""The compiled-code cache's size limit: least-recently-used eviction, sizes in readable
units, and ``backplan cache info|clear``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codegen import cache
from codegen import ir as K

ROOT = Path(__file__).parents[2]


def kernel(n: int) -> list[K.Kernel]:
    """A module of its own for each ``n`` (its kernel's name is in the key). The domain is
    the same and the names are as long, so that every module's object code has the same size
    (the eviction test counts bytes; a longer loop may be unrolled differently)."""
    f = "float32"
    return [K.Kernel(f"k{n:02d}", (8,), 0, (K.Input("a", f, (1,)), K.Input("b", f, (1,))),
                     (K.Load(0), K.Load(1), K.Binary("mul", 0, 1, f)),
                     (K.Output("out", 2, f),))]


def test_sizes_parse_and_print():
    assert cache.parse_size("1024") == 1024 and cache.parse_size("512M") == 512 * 2**20
    assert cache.parse_size("1.5GiB") == 3 * 2**29 and cache.parse_size(" 64kb ") == 65536
    for bad in ("", "-1", "12x", "1e9", "M"):
        with pytest.raises(ValueError, match="is not a size in bytes"):
            cache.parse_size(bad)
    assert [cache.human_bytes(n) for n in (0, 1023, 1536, 5 * 2**20, 3 * 2**40)] == \
        ["0 B", "1023 B", "1.5 KiB", "5.0 MiB", "3.0 TiB"]


def test_bad_limit_is_an_error_naming_the_variable(monkeypatch: Any):
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "lots")
    with pytest.raises(ValueError, match=f"{cache.MAX_BYTES_ENV}: 'lots' is not a size"):
        cache.get_compiled(kernel(8))
    monkeypatch.delenv(cache.MAX_BYTES_ENV)
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES


def test_least_recently_used_entries_are_evicted(tmp_path: Path, monkeypatch: Any):
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    cache.clear_cache(disk=False)
    keys = [cache.cache_key(kernel(n)) for n in (8, 16, 24, 32)]
    for n in (8, 16, 24):
        cache.get_compiled(kernel(n))
    paths = {k: tmp_path / cache.ENTRY_DIR / f"{k}{cache.ENTRY_SUFFIX}" for k in keys}
    sizes = {k: p.stat().st_size for k, p in paths.items() if p.exists()}
    assert len(sizes) == 3
    # age them: 8 oldest, then 16, then 24; then a hit on 8 (a fresh process: memory empty)
    for age, k in zip((300, 200, 100), keys, strict=False):
        os.utime(paths[k], (time.time() - age, time.time() - age))
    cache.clear_cache(disk=False)
    cache.get_compiled(kernel(8))
    assert paths[keys[0]].stat().st_mtime > time.time() - 60  # the hit counts as a use
    # room for three entries: writing a fourth evicts the least recently used one, 16
    monkeypatch.setenv(cache.MAX_BYTES_ENV, str(sum(sizes.values()) + 100))
    before = cache.stats()["evictions"]
    cache.get_compiled(kernel(32))
    assert cache.stats()["evictions"] == before + 1
    assert [k for k in keys if paths[k].exists()] == [keys[0], keys[2], keys[3]]
    # a limit below one entry keeps only the one just written
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "1")
    cache.clear_cache(disk=False)
    cache.get_compiled(kernel(40))
    assert cache.entries(tmp_path) == [tmp_path / cache.ENTRY_DIR
                                       / f"{cache.cache_key(kernel(40))}{cache.ENTRY_SUFFIX}"]


def test_eviction_beside_a_reader_and_a_vanished_entry(tmp_path: Path, monkeypatch: Any):
    """An entry opened by a loading process stays readable when evicted; an entry another
    process deleted first is skipped."""
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    cache.clear_cache(disk=False)
    cache.get_compiled(kernel(8))
    [entry] = cache.entries(tmp_path)
    data = entry.read_bytes()
    with open(entry, "rb") as reader:
        os.utime(entry, (1, 1))  # the oldest
        monkeypatch.setenv(cache.MAX_BYTES_ENV, "1")
        cache.get_compiled(kernel(16))
        assert not entry.exists() and reader.read() == data
    cache.clear_cache(disk=False)
    with cache._DiskStore.open(tmp_path) as store:
        assert store is not None
        # names of entries gone by the time they are deleted are not reported
        (other,) = cache.entries(tmp_path)
        other.unlink()
        assert store.evict(0, keep="0" * 64) == []


def run_cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", "cache", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **env})


def test_cache_info_and_clear_commands(tmp_path: Path, monkeypatch: Any):
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    cache.clear_cache(disk=False)
    cache.get_compiled(kernel(8))
    size = cache.entries(tmp_path)[0].stat().st_size
    env = {"BACKPLAN_CACHE_DIR": str(tmp_path), cache.MAX_BYTES_ENV: "64M"}
    info, bare = run_cli("info", env=env), run_cli(env=env)
    assert info.returncode == 0 and info.stdout.splitlines()[0] == bare.stdout.splitlines()[0]
    assert (f"{tmp_path}: 1 compiled modules, {cache.human_bytes(size)} ({size} bytes) of at "
            f"most 64.0 MiB (BACKPLAN_CACHE_MAX_BYTES)") in info.stdout
    assert "least recently used" in info.stdout
    bad = run_cli("info", env={**env, cache.MAX_BYTES_ENV: "big"})
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "backplan: error: BACKPLAN_CACHE_MAX_BYTES: 'big' is not a size in bytes (say "
        "536870912, 512M or 1.5GiB)")
    wrong = run_cli("purge", env=env)
    assert wrong.returncode == 2 and "invalid choice: 'purge'" in wrong.stderr
    cleared = run_cli("clear", env=env)
    assert cleared.returncode == 0 and "1 files the cache wrote" in cleared.stdout
    assert cache.entries(tmp_path) == []


def test_a_store_under_the_limit_scans_the_folder_once(tmp_path: Path, monkeypatch: Any):
    """Eviction stats every entry of a folder: a process scans once, then counts what it
    stores, and scans again only where that count passes the limit or the scan is older
    than RESCAN_SECONDS (other processes' stores are seen then)."""
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))
    cache.clear_cache(disk=False)
    scans = []
    real = os.scandir

    def counting(path: Any) -> Any:
        scans.append(path)
        return real(path)

    monkeypatch.setattr(cache.os, "scandir", counting)
    for n in (8, 16, 24):
        cache.get_compiled(kernel(n))
    assert len(scans) == 1  # the first store scanned; the next two were counted
    sizes = [p.stat().st_size for p in cache.entries(tmp_path)]
    assert len(sizes) == 3
    # another process stores an entry meanwhile: unseen until the next scan
    with cache._DiskStore.open(tmp_path) as store:
        assert store is not None
        store.write("f" * 64, b"", b"x" * sizes[0])
    monkeypatch.setattr(cache, "RESCAN_SECONDS", 0.0)
    monkeypatch.setenv(cache.MAX_BYTES_ENV, str(sum(sizes) + 2 * sizes[0] + 100))
    cache.get_compiled(kernel(32))  # the scan finds five entries: one too many
    assert len(scans) == 2 and len(cache.entries(tmp_path)) == 4
    # past the limit by this process's own count: scanned at once, however recent
    monkeypatch.setattr(cache, "RESCAN_SECONDS", 3600.0)
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "1")
    cache.get_compiled(kernel(40))
    assert len(scans) == 3
    assert cache.entries(tmp_path) == [tmp_path / cache.ENTRY_DIR
                                       / f"{cache.cache_key(kernel(40))}{cache.ENTRY_SUFFIX}"]
