"""Compiled-module cache: in memory, and object code on disk keyed by kernels and target.

The key is the sha256 of every kernel hash, the host CPU name and features, the llvmlite
version and the source of the code generator itself, so a different machine, LLVM or renderer
never loads stale code.

On disk, the cache owns one subdirectory of the cache directory, ``ENTRY_DIR`` (0700): one file
per module, ``<key>.module``, and ``secret``, 32 random bytes (0600) made on first use. An entry
holds the optimized IR and the object code, the key it was written for, and an HMAC-SHA256 of
all of it under the secret. Machine code is loaded only when that digest verifies and names the
key asked for: an empty, truncated or altered entry, or another module's entry copied under this
key, is reported with a ``RuntimeWarning`` naming the file and what failed, then recompiled and
replaced. A cache directory (or ENTRY_DIR, or the secret) that is not owned by this user or is
writable by group or others is not used (a ``RuntimeWarning`` says why): code is then kept in
memory only, as it is when an entry cannot be written. A new cache directory is made 0700. The
format's version is in ``ENTRY_DIR`` and in every entry's magic line, so entries of another
version (version 1 kept ``<key>.o`` and ``<key>.ll`` in the directory itself) are simply misses.

The entries stay under a size limit (``max_bytes``: ``BACKPLAN_CACHE_MAX_BYTES``, default
DEFAULT_MAX_BYTES): after each write the least recently used entries (a hit touches its entry's
mtime) are deleted until the rest fit, the one just written kept. Deleting is safe beside
another process loading an entry: a reader opens the file, then reads it whole through that
descriptor, so an unlink after the open leaves its read intact, and one before it is a miss.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import llvmlite

from codegen import ir as kir
from codegen import forked, pool, pyentry
from codegen.launch import cpu_launch_form
from codegen.jit import (CompiledModule, ObjectCode, compile_count, counted, load,
                         optimize_and_emit)
from codegen.llvm import render
from codegen.target import emit as emit_object_code
from codegen.target import emit_as_written
from codegen.target import host

ENTRY_DIR = "backplan-modules-v2"
ENTRY_SUFFIX = ".module"
SECRET_NAME = "secret"
SECRET_BYTES = 32
# what the last eviction scan of a folder found: "<bytes> <wall-clock ns>" (_DiskStore.evict);
# like the secret, kept by clear_cache (a size too large only brings the next scan sooner)
SIZE_NAME = "size"
_MAGIC = b"backplan compiled module v2\n"
_LENGTHS = struct.Struct("<QQ")  # bytes of optimized IR, bytes of object code
_KEY_BYTES = 64  # a sha256 hexdigest
_TAG_BYTES = hashlib.sha256().digest_size
_HEADER_BYTES = len(_MAGIC) + _TAG_BYTES + _KEY_BYTES + _LENGTHS.size
_TEMP_TOKEN_BYTES = 8  # random bytes, as hex, in the name of a file being written
# the cache's files are recognised by name, never by extension alone: entries and the temporary
# files of interrupted writes in ENTRY_DIR, and version 1's flat <key>.o / <key>.ll pairs
_ENTRY_NAME = re.compile(rf"[0-9a-f]{{{_KEY_BYTES}}}\{ENTRY_SUFFIX}")
_TEMP_NAME = re.compile(rf"([0-9a-f]{{{_KEY_BYTES}}}\{ENTRY_SUFFIX}|{SECRET_NAME}|{SIZE_NAME})"
                        rf"\.[0-9a-f]{{{2 * _TEMP_TOKEN_BYTES}}}\.tmp")
# (version 1 wrote through tempfile.mkstemp: 8 random characters)
_V1_NAME = re.compile(rf"[0-9a-f]{{{_KEY_BYTES}}}\.(o|ll)([a-z0-9_]{{8}}\.tmp)?")

MAX_BYTES_ENV = "BACKPLAN_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 * 2**20
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

_memory: dict[str, CompiledModule] = {}
_lock = threading.Lock()
# key -> the lock held by the thread compiling that module (get_compiled)
_building: dict[str, threading.Lock] = {}
# how long the size an eviction scan found, plus the stores counted since, stands in for a scan
# (_DiskStore.evict): what it can miss is only two stores racing on the count
RESCAN_SECONDS = 3600.0
# key -> the forked children emitting that module's parts (start_compiling), which
# get_compiled collects
_started: dict[str, forked.Started] = {}
_counts = {"memory_hits": 0, "disk_hits": 0, "disk_rejects": 0, "evictions": 0}


def parse_size(text: str) -> int:
    """Bytes in ``text``: an integer, optionally with a binary unit (``512M``, ``1.5GiB``,
    ``64k``); raises ValueError saying what is wrong."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if match is None:
        raise ValueError(f"{text!r} is not a size in bytes (say 536870912, 512M or 1.5GiB)")
    return int(float(match[1]) * _UNITS[match[2].lower()])


def max_bytes() -> int:
    """The disk cache's size limit: ``BACKPLAN_CACHE_MAX_BYTES`` (bytes, or with a unit: 512M),
    else DEFAULT_MAX_BYTES; raises ValueError naming the variable when it is not a size."""
    text = os.environ.get(MAX_BYTES_ENV)
    if text is None:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(text)
    except ValueError as e:
        raise ValueError(f"{MAX_BYTES_ENV}: {e}") from None


def human_bytes(n: int) -> str:
    """``n`` bytes in binary units: 512 B, 1.5 KiB, 12.0 MiB."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def cache_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else $BACKPLAN_CACHE_DIR, else ~/.cache/backplan."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("BACKPLAN_CACHE_DIR") or Path.home() / ".cache" / "backplan")


@functools.cache
def generator_hash() -> str:
    """sha256 of the modules that turn kernel IR into machine code."""
    h = hashlib.sha256()
    for name in ("ir.py", "launch.py", "lower.py", "llvm.py", "llvm_emit.py", "llvm_math.py",
                 "target.py", "jit.py"):
        h.update((Path(__file__).parent / name).read_bytes())
    # erf's tables (llvm_math imports them)
    h.update((Path(__file__).parents[1] / "runtime" / "ops" / "special.py").read_bytes())
    return h.hexdigest()


def cache_key(kernels: list[kir.Kernel]) -> str:
    """The module's key: its kernels as launched (``cpu_launch_form``), the host, the code
    generator."""
    cpu, features = host()
    payload = [[launch_digest(k) for k in kernels], cpu, features, llvmlite.__version__,
               generator_hash()]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


# the attribute a kernel keeps its launch form's digest in (not a field: not compared)
_DIGEST = "_launch_digest"


def launch_digest(k: kir.Kernel) -> str:
    """The sha256 of ``k``'s launch form, computed once and kept on the kernel: a plan kept
    across processes (planner.plan_cache) pickles it with its kernels, so a warm first call
    does not hash them again (gpt's 92 kernels' reprs took 7 ms of it)."""
    found = k.__dict__.get(_DIGEST)
    if found is None:
        found = kir.kernel_hash(cpu_launch_form(k))
        object.__setattr__(k, _DIGEST, found)  # a frozen dataclass's own attribute
    return found


class UnsafeCacheDirError(PermissionError):
    """The cache directory may be written by someone else, so the cache does not use it."""


class _BadEntry(Exception):
    """An entry on disk that must not be loaded; the message says what failed."""


def _refusal(st: os.stat_result) -> str | None:
    """``refusal`` of a directory already stat'ed (through the descriptor it will be used by)."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):03o})"
    return None


def refusal(directory: Path) -> str | None:
    """Why ``directory`` must not hold compiled code, or None when it may: it must be a
    directory owned by this user and writable by nobody else, since whoever can write there
    can make this process run their machine code."""
    try:
        return _refusal(os.stat(directory))
    except OSError as e:
        return str(e)


def _write_new(dir_fd: int, name: str, data: bytes, *, replace: bool) -> None:
    """Write file ``name`` in directory ``dir_fd`` whole or not at all (mode 0600): a reader
    sees no file or a complete one. ``replace=False`` keeps a file already there."""
    tmp = f"{name}.{secrets.token_hex(_TEMP_TOKEN_BYTES)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                 dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if replace:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)


def _read_secret(dir_fd: int, where: Path) -> bytes:
    """The HMAC secret in directory ``dir_fd`` (at ``where``), made on first use; raises
    UnsafeCacheDirError unless it is this user's private regular file of SECRET_BYTES bytes."""
    def open_secret() -> int:
        return os.open(SECRET_NAME, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)

    try:
        fd = open_secret()
    except FileNotFoundError:
        # linked into place rather than replaced: processes starting together keep one secret
        _write_new(dir_fd, SECRET_NAME, secrets.token_bytes(SECRET_BYTES), replace=False)
        fd = open_secret()
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise UnsafeCacheDirError(
                f"{where / SECRET_NAME} must be a regular file readable only by its owner, "
                f"this user (uid {os.geteuid()}); it is owned by uid {st.st_uid} with mode "
                f"{stat.S_IMODE(st.st_mode):03o}")
        secret = f.read(SECRET_BYTES + 1)
    if len(secret) != SECRET_BYTES:
        raise UnsafeCacheDirError(f"{where / SECRET_NAME} holds {len(secret)} bytes, not "
                                  f"{SECRET_BYTES}")
    return secret


def _open_dir(path: str | Path, shown: Path, *, dir_fd: int | None = None,
              follow_symlinks: bool = True) -> int:
    """A descriptor of directory ``path`` (shown as ``shown`` in errors), checked to be safe;
    raises UnsafeCacheDirError saying why not."""
    flags = os.O_RDONLY | os.O_DIRECTORY | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as e:
        link = not follow_symlinks and e.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
            os.lstat(path, dir_fd=dir_fd).st_mode)
        raise UnsafeCacheDirError(f"{shown}: {'it is a symbolic link' if link else e.strerror}"
                                  ) from None
    reason = _refusal(os.fstat(fd))
    if reason is not None:
        os.close(fd)
        raise UnsafeCacheDirError(f"{shown}: {reason}")
    return fd


def _open_entries(directory: Path) -> int:
    """A descriptor of ``directory``'s ENTRY_DIR (both made private if new), both checked to be
    safe. Every later file operation goes through it, so neither directory can be swapped for
    someone else's between the check and the use."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    top = _open_dir(directory, directory)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(ENTRY_DIR, 0o700, dir_fd=top)
        # the subdirectory is ours: never follow a link planted in its place
        return _open_dir(ENTRY_DIR, directory / ENTRY_DIR, dir_fd=top, follow_symlinks=False)
    finally:
        os.close(top)


def _entry_name(key: str) -> str:
    return f"{key}{ENTRY_SUFFIX}"


class _DiskStore:
    """The verified entries of one cache directory, under its secret."""

    def __init__(self, entries: Path, fd: int, secret: bytes) -> None:
        self.entries = entries
        self._fd = fd
        self._secret = secret

    @classmethod
    @contextlib.contextmanager
    def open(cls, directory: Path, quiet: bool = False) -> Iterator[_DiskStore | None]:
        """The store in ``directory``, or None with a RuntimeWarning (unless ``quiet``) when
        the directory is unsafe or unusable: the caller then keeps code in memory only."""
        fd = None
        try:
            fd = _open_entries(directory)
            store = cls(directory / ENTRY_DIR, fd, _read_secret(fd, directory / ENTRY_DIR))
        except OSError as e:  # UnsafeCacheDirError included
            if fd is not None:
                os.close(fd)
            if not quiet:
                warnings.warn(f"backplan: compiled-code cache not used ({e}); compiled code "
                              f"is kept in memory only", RuntimeWarning, stacklevel=4)
            yield None
            return
        try:
            yield store
        finally:
            os.close(fd)

    def path(self, key: str) -> Path:
        return self.entries / _entry_name(key)

    def _tag(self, body: bytes | memoryview) -> bytes:
        mac = hmac.new(self._secret, _MAGIC, hashlib.sha256)
        mac.update(body)
        return mac.digest()

    def encode(self, key: str, first: bytes, second: bytes) -> bytes:
        """The entry holding ``first`` and ``second`` (a module's optimized IR and object
        code; nothing and a plan's text) under ``key``: magic, tag, then the tagged body (key,
        lengths, both parts)."""
        body = key.encode("ascii") + _LENGTHS.pack(len(first), len(second)) + first + second
        return _MAGIC + self._tag(body) + body

    def decode(self, key: str, data: bytes) -> tuple[bytes, bytes]:
        """The two parts of entry ``data`` written for ``key``; raises _BadEntry saying what
        failed."""
        if not data:
            raise _BadEntry("the file is empty")
        if len(data) < _HEADER_BYTES:
            raise _BadEntry(f"truncated: {len(data)} bytes, shorter than the "
                            f"{_HEADER_BYTES}-byte header")
        if not data.startswith(_MAGIC):
            raise _BadEntry("not a version 2 entry (its magic line differs)")
        view = memoryview(data)  # the object code is megabytes: slice without copying
        tag, body = view[len(_MAGIC):len(_MAGIC) + _TAG_BYTES], view[len(_MAGIC) + _TAG_BYTES:]
        n_first, n_second = _LENGTHS.unpack_from(body, _KEY_BYTES)
        if len(data) != _HEADER_BYTES + n_first + n_second:
            raise _BadEntry(f"truncated or padded: {len(data)} bytes where its header says "
                            f"{_HEADER_BYTES + n_first + n_second}")
        if not hmac.compare_digest(tag, self._tag(body)):
            raise _BadEntry("digest mismatch: its content was altered, or it was not written "
                            "by this user's cache")
        written_for = bytes(body[:_KEY_BYTES]).decode("ascii")
        if written_for != key:
            raise _BadEntry(f"written for another module (key {written_for[:16]}...), "
                            f"not this one (key {key[:16]}...)")
        start = _KEY_BYTES + _LENGTHS.size
        return bytes(body[start:start + n_first]), bytes(body[start + n_first:])

    def read(self, key: str) -> tuple[bytes, bytes] | None:
        """The verified parts stored for ``key``; None on a miss, with a RuntimeWarning when an
        entry was there but failed verification or could not be read."""
        path = self.path(key)
        try:
            fd = os.open(_entry_name(key), os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._fd)
            with os.fdopen(fd, "rb") as f:
                parts = self.decode(key, f.read())
                with contextlib.suppress(OSError):  # recency for eviction; a read-only file
                    os.utime(f.fileno())
                return parts
        except FileNotFoundError:
            return None
        except (OSError, _BadEntry) as e:
            _counts["disk_rejects"] += 1
            warnings.warn(f"backplan: compiled-code cache entry {path} rejected: {e}; "
                          f"recompiling and replacing it", RuntimeWarning, stacklevel=3)
            return None

    def write(self, key: str, first: bytes, second: bytes) -> int:
        """Store the two parts; returns the entry's size in bytes. A failure warns, leaves
        what they hold in memory only and returns 0."""
        path = self.path(key)
        data = self.encode(key, first, second)
        try:
            _write_new(self._fd, _entry_name(key), data, replace=True)
        except OSError as e:
            warnings.warn(f"backplan: could not write compiled-code cache entry {path}: {e}; "
                          f"the compiled code is kept in memory only", RuntimeWarning,
                          stacklevel=3)
            return 0
        return len(data)

    def read_code(self, key: str) -> ObjectCode | None:
        parts = self.read(key)
        return None if parts is None else ObjectCode(parts[1], str(parts[0], "utf-8"))

    def keep(self, key: str, first: bytes, second: bytes, limit: int | None = None
             ) -> list[str]:
        """``write`` the entry, then ``evict`` past ``limit`` (default ``max_bytes()``),
        never it; returns the names evicted."""
        written = self.write(key, first, second)
        return self.evict(max_bytes() if limit is None else limit, key, written)

    def keep_code(self, key: str, code: ObjectCode, limit: int | None = None) -> list[str]:
        return self.keep(key, code.optimized_ir.encode(), code.object_file, limit)

    def evict(self, limit: int, keep: str, written: int | None = None) -> list[str]:
        """Delete the least recently used entries until the rest take at most ``limit`` bytes,
        never ``keep``'s; returns the names deleted. Entries another process deletes or
        replaces meanwhile are skipped.

        With ``written`` (the size of the entry just stored), the folder is not scanned where
        its last scan, less than RESCAN_SECONDS ago, plus the stores counted since stays within
        ``limit``: a scan stats every entry (38 to 59 ms for the 8,300 entries of a full
        512 MiB cache, in a first call that found its code cached and stored its plan). The
        folder's SIZE_NAME file keeps that count, for every process: two storing at the same
        moment may each miss the other's entry, which the next scan finds. The limit is thus a
        soft one, passed by at most the entries such races miss in RESCAN_SECONDS."""
        if written is not None:
            last = self._last_scan()
            if last is not None and 0 <= time.time() - last[1] < RESCAN_SECONDS \
                    and last[0] + written <= limit:
                self._record_size(last[0] + written, last[1])
                return []
        found, scanned = [], time.time()
        with os.scandir(self._fd) as it:
            for e in it:
                if _ENTRY_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat(follow_symlinks=False)
                        found.append((st.st_mtime_ns, st.st_size, e.name))
        total = sum(size for _, size, _ in found)
        deleted = []
        for _, size, name in sorted(found):
            if total <= limit:
                break
            if name == _entry_name(keep):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=self._fd)
                deleted.append(name)
            total -= size
        self._record_size(total, scanned)
        return deleted

    def _record_size(self, total: int, scanned: float) -> None:
        with contextlib.suppress(OSError):
            _write_new(self._fd, SIZE_NAME, f"{total} {int(scanned * 1e9)}".encode(),
                       replace=True)

    def _last_scan(self) -> tuple[int, float] | None:
        """(bytes, when) the folder's last scan left in its SIZE_NAME file; None where there is
        none or it does not read as one."""
        try:
            fd = os.open(SIZE_NAME, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._fd)
            with os.fdopen(fd, "rb") as f:
                total, when = f.read(64).split()
            return int(total), int(when) / 1e9
        except (OSError, ValueError):
            return None


def get_compiled(kernels: list[kir.Kernel],
                 cache_dir_path: str | os.PathLike[str] | None = None) -> CompiledModule:
    """The loaded module for ``kernels``: from memory, from a verified entry on disk, or
    compiled (then stored). LLVM runs outside the cache's lock, under one lock per module:
    another thread compiling the same module waits for it, and one looking up or compiling
    any other does not (a step's kernels compiling in the background, planner.background,
    while another step's load from the cache)."""
    key = cache_key(kernels)
    limit = max_bytes()  # a bad BACKPLAN_CACHE_MAX_BYTES is an error before any work
    with _lock:
        if key in _memory:
            _counts["memory_hits"] += 1
            return _memory[key]
        building = _building.setdefault(key, threading.Lock())
    with building:
        try:
            with _lock:
                if key in _memory:  # another thread built it meanwhile
                    _counts["memory_hits"] += 1
                    return _memory[key]
            # the directory opened once: one removed while LLVM runs is not made anew
            with _DiskStore.open(cache_dir(cache_dir_path)) as store:
                with _lock:
                    code = store.read_code(key) if store is not None else None
                    if code is not None:
                        _counts["disk_hits"] += 1
                    started = _started.pop(key, None)
                if code is None:
                    code = (counted(forked.finish(started)) if started is not None else
                            forked.emit_in_parts(kernels) or optimize_and_emit(render(kernels)))
                    with _lock:
                        if store is not None:
                            _counts["evictions"] += len(store.keep_code(key, code, limit))
                elif started is not None:  # found on disk after all: not needed
                    forked.cancel(started)
            with _lock:
                compiled = _memory[key] = load(code, kernels)
                return compiled
        finally:
            with _lock:
                _building.pop(key, None)


def start_compiling(kernels: list[kir.Kernel]) -> bool:
    """Start emitting the module of ``kernels``, which the caller found not cached
    (``is_cached``), in forked children (``codegen.forked.start``), for ``get_compiled`` to
    collect: the calling thread then holds no LLVM lock while they run (a plan compiling in
    the background, planner.background). False where nothing was started (no child may be
    forked): ``get_compiled`` compiles it as always; one that finds the module on disk after
    all stops the children."""
    key = cache_key(kernels)
    with _lock:
        if key in _started:
            return True
    started = forked.start(kernels)
    if started is None:
        return False
    with _lock:
        _started[key] = started
    return True


def cancel_compiling(kernels: list[kir.Kernel]) -> None:
    """Stop the children ``start_compiling`` forked for ``kernels``, where ``get_compiled``
    did not collect them (the build that was to failed before)."""
    key = cache_key(kernels)
    with _lock:
        started = _started.pop(key, None)
    if started is not None:
        forked.cancel(started)


def is_cached(kernels: list[kir.Kernel],
              cache_dir_path: str | os.PathLike[str] | None = None) -> bool:
    """Whether the module of ``kernels`` is loaded, or has an entry on disk (not verified:
    ``get_compiled`` does that, and compiles where it fails)."""
    key = cache_key(kernels)
    with _lock:
        if key in _memory:
            return True
    with _DiskStore.open(cache_dir(cache_dir_path), quiet=True) as store:
        return store is not None and store.path(key).is_file()


SUPPORT_DIR = "support"  # under the cache directory: code that holds no kernels


def support_code(name: str, text: str | Callable[[], str], emit: Callable[[str], ObjectCode],
                 cache_dir_path: str | os.PathLike[str] | None = None, *,
                 version: str | None = None) -> ObjectCode:
    """Object code of a module that holds no kernels (``codegen.pool``'s loops, which every
    process running a kernel needs: installed as their source below), given as IR text: from
    a verified entry of the cache directory's SUPPORT_DIR store (private and checked as the
    kernels' store is), else ``emit(text)``, stored. Apart from the kernels' entries and counters (``entries``,
    ``stats``), and silent where the directory is refused: the kernels' modules say so. No
    lock: the caller compiles it once per process. ``text`` may be a function giving it, with
    ``version`` (a digest of what the text is made from) keying the entry in its place: the
    text is then made only where the store does not have it."""
    _await_prefetch()
    text, key = _keyed(name, text, emit, version)
    with _DiskStore.open(cache_dir(cache_dir_path) / SUPPORT_DIR, quiet=True) as store:
        code = store.read_code(key) if store is not None else None
        if code is None:
            code = emit(text() if callable(text) else text)
            if store is not None:
                store.keep_code(key, code)
    return code


# a module support_code keeps: its name, IR text (or a function giving it), emitter and
# version (None: the text's digest)
SupportModule = tuple[str, "str | Callable[[], str]", Callable[[str], ObjectCode], "str | None"]


def _keyed(name: str, text: str | Callable[[], str], emit: Callable[[str], ObjectCode],
           version: str | None) -> tuple[str | Callable[[], str], str]:
    """A support module's store key, and its text (made now where the text keys it)."""
    if version is None:
        text = text() if callable(text) else text
        version = hashlib.sha256(text.encode()).hexdigest()
    return text, _support_key(name, version, emit)


def _support_key(name: str, version: str, emit: Callable[[str], ObjectCode]) -> str:
    cpu, features = host()
    # the emitter too: the same text through another pipeline is other code
    emitter = getattr(emit, "__qualname__", None) or getattr(
        getattr(emit, "func", None), "__qualname__", repr(emit))
    return hashlib.sha256(json.dumps(
        [name, version, cpu, features, llvmlite.__version__, generator_hash(), emitter]
    ).encode()).hexdigest()


# A first call with an empty cache compiled the support modules its plan's first run needs
# (pyentry's trampolines and the float32 products: 110 of mlp_small's 390 ms) one after
# another on the calling thread, after its own kernels. ``prefetch_support`` emits the ones
# missing from the store in a child process (LLVM holds one lock per process: threads could
# not overlap them) while the caller captures and plans; a support_code call waits for it,
# then finds them stored. Off with BACKPLAN_PREFETCH_SUPPORT=0, and on one core.
PREFETCH_ENV = "BACKPLAN_PREFETCH_SUPPORT"
_prefetch_pid: int | None = None  # the child emitting them, until waited for
_prefetched: set[str] = set()  # the store keys a child was started for
# the most a caller waits for that child: a few modules' emission takes a second or two
PREFETCH_TIMEOUT_S = 120.0


def prefetch_support(modules: list[tuple[SupportModule, str | os.PathLike[str] | None]]
                     ) -> bool:
    """Start emitting, in a child process, those of ``modules`` (each with the cache
    directory whose store keeps it) that their stores lack and no child was started for in
    this process; where ``os.fork`` exists and the process may use two cores. Returns
    whether a child was started."""
    global _prefetch_pid
    if (_prefetch_pid is not None or not hasattr(os, "fork")
            or os.environ.get(PREFETCH_ENV, "1") == "0" or forked.usable_cores() < 2):
        return False
    jobs: list[Callable[[], object]] = []
    keys = []
    for (name, text, emit, version), directory in modules:
        text, key = _keyed(name, text, emit, version)
        if key not in _prefetched and not _stored(directory, key):
            keys.append(key)
            jobs.append(functools.partial(support_code, name, text, emit, directory,
                                          version=version))
    if not jobs:
        return False
    # not while another thread is inside LLVM (a plan compiling in the background): the child
    # would wait for its copy of that thread's lock for good, and the caller for the child
    pid = forked.fork(wait=False)
    if pid is None:
        return False
    if pid == 0:  # the child: emit and store, then leave without running anything else
        status = 1
        try:
            for job in jobs:
                job()
            status = 0
        finally:
            os._exit(status)
    _prefetch_pid = pid
    _prefetched.update(keys)
    return True


def _stored(cache_dir_path: str | os.PathLike[str] | None, key: str) -> bool:
    """Whether the support store has an entry for ``key`` (not verified: reading does that)."""
    try:
        os.stat(cache_dir(cache_dir_path) / SUPPORT_DIR / ENTRY_DIR / _entry_name(key))
    except OSError:
        return False
    return True


def _await_prefetch() -> None:
    """Wait for the child ``prefetch_support`` started, if any (its entries are then stored:
    a child that failed stored nothing, and the caller emits what it needs itself), at most
    PREFETCH_TIMEOUT_S: a child still running then is killed, and the caller emits what the
    child did not store."""
    global _prefetch_pid
    pid, _prefetch_pid = _prefetch_pid, None
    if pid is None:
        return
    deadline = time.monotonic() + PREFETCH_TIMEOUT_S
    delay = 0.0005
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            left = deadline - time.monotonic()
            if left <= 0:
                forked.kill_child(pid)
                return
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.01)
    except ChildProcessError:  # reaped already (SIGCHLD ignored)
        pass


PLANS_DIR = "plans"  # under the cache directory: planned steps (planner.plan_cache)
PROGRAMS_DIR = "programs"  # under the cache directory: plans' programs' bytecode (planner.program)


def stored_plan(key: str, cache_dir_path: str | os.PathLike[str] | None = None, *,
                folder: str = PLANS_DIR) -> bytes | None:
    """The text stored under ``key`` by ``store_plan``: from a verified entry of the cache
    directory's ``folder`` store (PLANS_DIR or PROGRAMS_DIR: private and checked as the
    kernels' store is, an altered entry rejected with a RuntimeWarning); None on a miss or
    where the directory is refused (silently: the kernels' modules say so)."""
    with _DiskStore.open(cache_dir(cache_dir_path) / folder, quiet=True) as store:
        parts = store.read(key) if store is not None else None
    return None if parts is None else parts[1]


def store_plan(key: str, text: bytes, cache_dir_path: str | os.PathLike[str] | None = None, *,
               folder: str = PLANS_DIR) -> None:
    """Keep ``text`` under ``key`` in the ``folder`` store, least recently used entries
    evicted past ``max_bytes``; kept nowhere where the directory is refused."""
    with _DiskStore.open(cache_dir(cache_dir_path) / folder, quiet=True) as store:
        if store is not None:
            store.keep(key, b"", text)


# the pool's loops are written as they should run (codegen.target.emit_as_written: 138 ->
# 36 ms to compile); the trampolines' helpers want LLVM's inliner
pool.set_code_source(functools.partial(support_code, "pool", emit=emit_as_written))
pyentry.set_code_source(functools.partial(support_code, pyentry.SUPPORT_NAME,
                                          emit=emit_object_code))


def trampolines() -> SupportModule:
    """pyentry's trampolines as their code source above keeps them."""
    return pyentry.SUPPORT_NAME, pyentry.ir_text(), emit_object_code, None


def _files(folder: Path, *patterns: re.Pattern[str]) -> list[Path]:
    """The regular files (not links) in ``folder`` whose names match one of ``patterns``."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if any(pat.fullmatch(p.name) for pat in patterns)
                  and p.is_file() and not p.is_symlink())


def entries(directory: Path) -> list[Path]:
    """The module entries stored in cache directory ``directory``."""
    return _files(directory / ENTRY_DIR, _ENTRY_NAME)


def plan_entries(directory: Path, folder: str = PLANS_DIR) -> list[Path]:
    """The plans kept in cache directory ``directory`` (planner.plan_cache), or with
    ``folder=PROGRAMS_DIR`` their programs' bytecode (planner.program)."""
    return _files(directory / folder / ENTRY_DIR, _ENTRY_NAME)


def clear_cache(cache_dir_path: str | os.PathLike[str] | None = None, *,
                disk: bool = True) -> list[Path]:
    """Forget compiled modules in memory and, unless ``disk=False``, delete the files the cache
    wrote on disk (module and plan entries, leftovers of interrupted writes, version 1
    entries), and nothing else; returns the deleted paths. Raises UnsafeCacheDirError for a directory the cache
    refuses to use."""
    deleted: list[Path] = []
    directory = cache_dir(cache_dir_path)
    if disk and directory.exists():
        reason = refusal(directory)
        if reason is not None:
            raise UnsafeCacheDirError(f"not clearing the compiled-code cache directory "
                                      f"{directory}: {reason}")
    with _lock:
        _memory.clear()
        if disk:
            for path in (_files(directory / ENTRY_DIR, _ENTRY_NAME, _TEMP_NAME)
                         + [p for folder in (PLANS_DIR, PROGRAMS_DIR) for p in _files(
                             directory / folder / ENTRY_DIR, _ENTRY_NAME, _TEMP_NAME)]
                         + _files(directory, _V1_NAME)):
                path.unlink()
                deleted.append(path)
    return deleted


def stats() -> dict[str, int]:
    """``compiles``: real LLVM optimizations+codegen so far; memory and disk cache hits;
    ``disk_rejects``: entries on disk that failed verification (then recompiled);
    ``evictions``: entries deleted to keep the disk cache under ``max_bytes``."""
    return {"compiles": compile_count(), **_counts}
