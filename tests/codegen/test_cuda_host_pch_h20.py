"""The CUDA host emulation's precompiled prelude (codegen/cuda_host.py): a build without extra
options includes the prelude through a precompiled header that g++ accepts for the build's
flags, and computes what the kernel says; a build with extra options includes the prelude as
written; the build directory, header and all, is removed at exit."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen import cuda_host

pytestmark = pytest.mark.skipif(shutil.which("g++") is None,
                                reason="the CUDA host emulation needs g++")

KERNEL = ('extern "C" __global__ void fill_h20(float* out, float v) '
          '{ out[blockIdx.x * blockDim.x + threadIdx.x] = v + threadIdx.x; }\n')


Registered = list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[Registered]:
    """A build directory and prelude of this test's own (the process's are kept aside), and
    the exit functions the module registers, recorded instead of registered, then run."""
    registered: Registered = []
    monkeypatch.setattr(cuda_host, "_build_dir", [])
    monkeypatch.setattr(cuda_host, "_included", [])
    monkeypatch.setattr(cuda_host, "_built", {})
    monkeypatch.setattr(cuda_host.atexit, "register",
                        lambda fn, *args, **kw: registered.append((fn, args, kw)))
    yield registered
    for fn, args, kw in registered:
        fn(*args, **kw)


def _included(source: Path) -> str:
    return source.read_text().splitlines()[0]


def _sources() -> list[Path]:
    return sorted(cuda_host._build_dir[0].glob("*.cpp"))


def test_a_build_without_options_includes_the_precompiled_prelude(fresh: Registered) -> None:
    module = cuda_host.HostModule(KERNEL)
    out = np.zeros(64, np.float32)
    module.get_function("fill_h20")(1, 64, [out, np.float32(0.5)])
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32) + 0.5)
    directory = cuda_host._build_dir[0]
    header = directory / "prelude.h"
    assert cuda_host._included == [header]
    assert header.read_text() == cuda_host.PRELUDE.read_text()
    assert Path(f"{header}.gch").is_file()
    [source] = _sources()
    assert _included(source) == f'#include "{header}"'
    # g++ -H marks a precompiled header it uses with "!", one it rejects with "x"
    done = subprocess.run(["g++", *cuda_host.CXX_FLAGS, "-H", "-o",
                           str(directory / "check.so"), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"! {header}.gch" in done.stderr.splitlines(), done.stderr[:2000]


def test_a_build_with_options_includes_the_prelude_as_written(fresh: Registered) -> None:
    module = cuda_host.HostModule(KERNEL, options=("-DBP_UCONTEXT",))
    out = np.zeros(32, np.float32)
    module.get_function("fill_h20")(1, 32, [out, np.float32(2.0)])
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32) + 2)
    [source] = _sources()
    assert _included(source) == f'#include "{cuda_host.PRELUDE}"'
    assert cuda_host._included == []  # nothing precompiled for it


def test_the_build_directory_is_removed_at_exit(fresh: Registered) -> None:
    cuda_host.HostModule(KERNEL)
    directory = cuda_host._build_dir[0]
    assert fresh == [(shutil.rmtree, (directory,), {"ignore_errors": True})]
    fn, args, kw = fresh.pop()
    fn(*args, **kw)
    assert not directory.exists()
