"""Running test code on several threads at once, with thread switches made frequent so that
unguarded read-modify-writes interleave."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def switch_interval(seconds: float) -> Iterator[None]:
    """Threads take turns every ``seconds`` (Python's default is 5 ms) inside the block."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(seconds)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def in_threads(*targets: Callable[[], None]) -> None:
    """Run each target on its own thread, all starting at once; re-raise the first error."""
    start = threading.Barrier(len(targets))
    errors: list[BaseException] = []

    def run(target: Callable[[], None]) -> None:
        try:
            start.wait()
            target()
        except BaseException as e:  # noqa: BLE001 (handed to the main thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
