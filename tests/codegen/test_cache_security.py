"""The compiled-code cache verifies what it loads and refuses directories others can write."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen import cache
from codegen import ir as K

ROOT = Path(__file__).parents[2]


def binary_kernel(op: str, n: int, name: str = "k") -> K.Kernel:
    f = "float32"
    return K.Kernel(name, (n,), 0, (K.Input("a", f, (1,)), K.Input("b", f, (1,))),
                    (K.Load(0), K.Load(1), K.Binary(op, 0, 1, f)), (K.Output("out", 2, f),))


def check_mul(module: cache.CompiledModule, n: int, name: str = "k") -> None:
    a, b = np.arange(n, dtype=np.float32), np.full(n, 3.0, np.float32)
    out = np.empty(n, np.float32)
    module.run(name, [a, b], [out])
    np.testing.assert_array_equal(out, a * b)


# Loading unverified machine code can crash the interpreter, so the damaged entries are loaded
# in a child process; all cases in one child, which prints what happened as JSON.
DAMAGE_SCRIPT = textwrap.dedent("""
    import json, os, warnings
    import numpy as np
    from codegen import cache
    from test_cache_security import binary_kernel

    mine, other = [binary_kernel("mul", 64)], [binary_kernel("add", 64)]  # same kernel name
    a, b = np.arange(64, dtype=np.float32), np.full(64, 3.0, np.float32)
    directory = cache.cache_dir()
    key = cache.cache_key(mine)

    def load():
        cache.clear_cache(disk=False)  # as a fresh process would: memory empty, disk warm
        before = cache.stats()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = np.empty(64, np.float32)
            cache.get_compiled(mine).run("k", [a, b], [out])
        after = cache.stats()
        return {"warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
                "right": bool(np.array_equal(out, a * b)),
                **{k: after[k] - before[k] for k in ("compiles", "disk_hits", "disk_rejects")}}

    cache.get_compiled(other)
    load()
    [path] = [p for p in cache.entries(directory) if p.name.startswith(key)]
    good, planted = path.read_bytes(), (path.parent / (cache.cache_key(other) + ".module"))
    header = len(good) - len(cache.get_compiled(mine).code.object_file) - len(
        cache.get_compiled(mine).code.optimized_ir.encode())

    def flipped(i):
        return good[:i] + bytes([good[i] ^ 0x01]) + good[i + 1:]

    cases = {"empty": b"", "truncated": good[:len(good) // 2], "header_only": good[:header],
             "flip_tag": flipped(30), "flip_key": flipped(header - 20),
             "flip_length": flipped(header - 1), "flip_ir": flipped(header + 10),
             "flip_object": flipped(len(good) - 1), "planted": planted.read_bytes()}
    report = {"path": str(path)}
    for name, data in cases.items():
        path.write_bytes(data)
        report[name] = load()
        report[name]["reload"] = load()  # the entry was replaced by a good one
    path.unlink()
    for suffix in (".o", ".ll"):  # version 1's layout: junk there is never read
        (directory / (key + suffix)).write_bytes(b"junk")
    report["version_1"] = load()
    print(json.dumps(report))
""")

EXPECTED_REASON = {
    "empty": "the file is empty",
    "truncated": "truncated or padded",
    "header_only": "truncated or padded",
    "flip_tag": "digest mismatch",
    "flip_key": "digest mismatch",
    "flip_length": "truncated or padded",
    "flip_ir": "digest mismatch",
    "flip_object": "digest mismatch",
    "planted": "written for another module",
}


@pytest.fixture(scope="module")
def damage_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env = {**os.environ, "BACKPLAN_CACHE_DIR": str(tmp_path_factory.mktemp("damaged")),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(Path(__file__).parent),
                                                       os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the child crashed ({done.returncode}): {done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("case", EXPECTED_REASON)
def test_damaged_entry_is_rejected_recompiled_and_replaced(damage_report: dict[str, Any],
                                                           case: str) -> None:
    got = damage_report[case]
    [warning] = got["warnings"]
    assert warning.startswith("RuntimeWarning: ") and damage_report["path"] in warning
    assert EXPECTED_REASON[case] in warning and "recompiling" in warning
    assert got["right"] and got["compiles"] == 1 and got["disk_rejects"] == 1
    assert got["reload"] == {"warnings": [], "right": True, "compiles": 0, "disk_hits": 1,
                             "disk_rejects": 0}


def test_version_1_entries_are_a_quiet_miss(damage_report: dict[str, Any]) -> None:
    assert damage_report["version_1"] == {"warnings": [], "right": True, "compiles": 1,
                                          "disk_hits": 0, "disk_rejects": 0}


def make_world_writable(d: Path) -> str:
    d.chmod(0o777)
    return "writable by group or others (mode 777)"


def give_to_nobody(d: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    os.chown(d, 65534, 65534)
    return f"owned by uid 65534, not by this user (uid {os.geteuid()})"


def make_group_writable_entries(d: Path) -> str:
    (d / cache.ENTRY_DIR).mkdir(mode=0o700)
    (d / cache.ENTRY_DIR).chmod(0o770)
    return "writable by group or others (mode 770)"


def link_entries_elsewhere(d: Path) -> str:
    (d.parent / "elsewhere").mkdir(mode=0o700)
    (d / cache.ENTRY_DIR).symlink_to(d.parent / "elsewhere")
    return "symbolic link"


def make_secret_readable(d: Path) -> str:
    (d / cache.ENTRY_DIR).mkdir(mode=0o700)
    secret = d / cache.ENTRY_DIR / cache.SECRET_NAME
    secret.write_bytes(bytes(cache.SECRET_BYTES))
    secret.chmod(0o644)
    return "readable only by its owner"


def make_secret_short(d: Path) -> str:
    (d / cache.ENTRY_DIR).mkdir(mode=0o700)
    secret = d / cache.ENTRY_DIR / cache.SECRET_NAME
    secret.write_bytes(b"0123")
    secret.chmod(0o600)
    return "holds 4 bytes, not 32"


@pytest.mark.parametrize("make_unsafe", [make_world_writable, give_to_nobody,
                                         make_group_writable_entries, link_entries_elsewhere,
                                         make_secret_readable, make_secret_short])
def test_unsafe_directory_is_refused_and_code_kept_in_memory(tmp_path: Path,
                                                             make_unsafe: Any) -> None:
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    reason = make_unsafe(d)
    files_before = sorted(d.rglob("*"))
    name = make_unsafe.__name__  # a kernel of its own: never in memory yet
    kernels = [binary_kernel("mul", 64, name)]
    before = cache.stats()["compiles"]
    with pytest.warns(RuntimeWarning, match="compiled-code cache not used") as w:
        module = cache.get_compiled(kernels, d)
    assert str(d) in str(w[0].message) and reason in str(w[0].message)
    assert "kept in memory only" in str(w[0].message)
    check_mul(module, 64, name)
    assert cache.stats()["compiles"] == before + 1
    assert sorted(d.rglob("*")) == files_before  # nothing written there
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get_compiled(kernels, d) is module  # in memory now


def test_default_directory_is_created_private(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("BACKPLAN_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    cache.get_compiled([binary_kernel("mul", 77, "private")])
    d = tmp_path / ".cache" / "backplan"
    entries = d / cache.ENTRY_DIR
    [entry] = cache.entries(d)

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert (mode(d), mode(entries), mode(entries / cache.SECRET_NAME), mode(entry),
            mode(entries / cache.SIZE_NAME)) == (0o700, 0o700, 0o600, 0o600, 0o600)
    assert sorted(p.name for p in entries.iterdir()) == sorted(
        [entry.name, cache.SECRET_NAME, cache.SIZE_NAME])


def test_directory_removed_mid_compile_keeps_the_code(tmp_path: Path, monkeypatch: Any) -> None:
    import shutil

    d = tmp_path / "cache"
    real = cache.optimize_and_emit

    def remove_then_compile(module: Any) -> Any:
        shutil.rmtree(d)
        return real(module)

    monkeypatch.setattr(cache, "optimize_and_emit", remove_then_compile)
    kernels = [binary_kernel("mul", 91, "removed")]
    with pytest.warns(RuntimeWarning, match="could not write compiled-code cache entry") as w:
        module = cache.get_compiled(kernels, d)
    assert str(d / cache.ENTRY_DIR) in str(w[0].message)
    assert "kept in memory only" in str(w[0].message)
    check_mul(module, 91, "removed")
    assert not d.exists()
    assert cache.get_compiled(kernels, d) is module


def test_clear_deletes_only_what_the_cache_wrote(tmp_path: Path) -> None:
    d = tmp_path / "cache"
    kernels = [binary_kernel("mul", 53, "cleared")]
    cache.get_compiled(kernels, d)
    key = cache.cache_key(kernels)
    [entry] = cache.entries(d)
    leftover = entry.parent / f"{entry.name}.0123456789abcdef.tmp"  # an interrupted write
    leftover.write_bytes(b"partial")
    version_1 = [d / f"{key}.o", d / f"{key}.ll", d / f"{key}.oab_12xyz.tmp"]
    user = [d / "notes.o", d / "notes.ll", d / f"{key}.o.bak", d / f"{key}.o.bak.tmp",
            d / cache.ENTRY_DIR / "notes.o", d / cache.ENTRY_DIR / f"{entry.name}.mine.tmp",
            d / "sub" / f"{key}.o"]
    for p in version_1 + user:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"x")
    deleted = cache.clear_cache(d)
    assert sorted(deleted) == sorted([entry, leftover, *version_1])
    assert all(p.exists() for p in user)
    assert (d / cache.ENTRY_DIR / cache.SECRET_NAME).exists()  # entries stay valid to write
    check_mul(cache.get_compiled(kernels, d), 53, "cleared")


def test_secret_is_made_once_and_kept(tmp_path: Path) -> None:
    """Processes starting together must agree on one secret: a second writer keeps the first's
    file (linked into place, never replaced), and a made secret is never remade."""
    d = tmp_path / "cache"
    cache.get_compiled([binary_kernel("mul", 64, "secret_once")], d)
    secret = d / cache.ENTRY_DIR / cache.SECRET_NAME
    first = secret.read_bytes()
    fd = os.open(secret.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        cache._write_new(fd, cache.SECRET_NAME, b"x" * cache.SECRET_BYTES, replace=False)
    finally:
        os.close(fd)
    cache.clear_cache(d)
    cache.get_compiled([binary_kernel("mul", 64, "secret_twice")], d)
    assert secret.read_bytes() == first and len(first) == cache.SECRET_BYTES
    assert [p.name for p in secret.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_compile_stores_kernels_in_its_cache_dir(tmp_path: Path, monkeypatch: Any) -> None:
    import planner
    import runtime as rt

    default, own = tmp_path / "default", tmp_path / "own"
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(default))
    cache.clear_cache(disk=False)  # the kernel must come from the disk cache, not memory

    def f(x: Any) -> Any:
        return rt.autograd.grad((x * 2.5).tanh().sum(), [x])[0]

    x = rt.tensor(np.linspace(-1, 1, 7, dtype=np.float32), requires_grad=True)
    step = planner.compile(f, backend="llvm", cache_dir=own)
    got = step(x).numpy()
    np.testing.assert_allclose(got, 2.5 / np.cosh(2.5 * x.detach().numpy()) ** 2, rtol=1e-5)
    assert cache.entries(own) and not cache.entries(default)
    with pytest.raises(TypeError, match="cache_dir must be a path"):
        planner.compile(f, cache_dir=3)
