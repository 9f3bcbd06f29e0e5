"""``backplan cache [info|clear]``: what the compiled-code cache holds (modules, in readable
sizes against its limit, and plans kept), or delete the files it wrote."""

from __future__ import annotations

import argparse
import sys
import time

from .cli_plan import CLIError


def run_cache(args: argparse.Namespace) -> int:
    from codegen import cache

    directory = cache.cache_dir(args.dir)
    if args.clear or args.action == "clear":
        try:
            deleted = cache.clear_cache(directory)
        except cache.UnsafeCacheDirError as e:
            # not a usage error: the directory is refused (status 1, as before)
            print(f"backplan cache: error: {e}", file=sys.stderr)
            return 1
        print(f"cleared {directory}: {len(deleted)} files the cache wrote")
        return 0
    try:
        limit = cache.max_bytes()
    except ValueError as e:
        raise CLIError(str(e)) from e
    entries = cache.entries(directory)
    stats = [f.stat() for f in entries]
    total = sum(st.st_size for st in stats)
    print(f"{directory}: {len(entries)} compiled modules, {cache.human_bytes(total)} "
          f"({total} bytes) of at most {cache.human_bytes(limit)} ({cache.MAX_BYTES_ENV})")
    plans = [f.stat().st_size for f in cache.plan_entries(directory)]
    programs = [f.stat().st_size for f in cache.plan_entries(directory, cache.PROGRAMS_DIR)]
    print(f"{len(plans)} plans kept for steps captured again in a new process, "
          f"{cache.human_bytes(sum(plans))}; {len(programs)} of their programs' bytecode, "
          f"{cache.human_bytes(sum(programs))}")
    if stats:
        used = sorted(st.st_mtime for st in stats)
        print(f"least recently used {_ago(used[0])}, most recently {_ago(used[-1])}")
    reason = cache.refusal(directory) if directory.exists() else None
    if reason is not None:
        print(f"not used: {reason}")
    return 0


def _ago(when: float) -> str:
    seconds = max(0.0, time.time() - when)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit} ago"
    return f"{seconds:.0f} s ago"
