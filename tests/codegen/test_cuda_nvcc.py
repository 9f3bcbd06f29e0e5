"""Every kernel of every benchmark workload and of every registry lowering, rendered to CUDA C
and compiled by nvcc for sm_80 and sm_90 (PTX and cubin) in one module and one nvcc call;
ptxas' resource usage shows no local-memory spills for the benchmark kernels. A rejected
kernel is named in the error, with the compiler's log."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest
from cuda_testutil import nvcc, random_kernel, registry_kernel, renamed, workload_kernels

from codegen import ir as K
from codegen.cuda import LAUNCH_BOUNDS, VECTOR, render
from codegen.cuda_module import compile_error_message

NVCC = nvcc()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not on PATH or "
                                                     "at /usr/local/bin/nvcc: the CUDA compile "
                                                     "checks need it")
ARCHS = ("80", "90")
GENCODE = [f"-gencode=arch=compute_{a},code=[sm_{a},compute_{a}]" for a in ARCHS]


def all_kernels() -> tuple[list[K.Kernel], list[str]]:
    """The registry's kernels (one per primitive, dtype and scalar operand) and the
    workloads' kernels, renamed apart; and the workload kernels' names."""
    from test_registry_lowerings import LOWERED, SCALAR_OPERAND, _dtypes

    kernels = []
    for name in LOWERED:
        for dtype in _dtypes(name):
            for scalar in (False, True) if name in SCALAR_OPERAND else (False,):
                shapes = [(3, 1)] if name == "expand" else [(3, 1), (5, 1, 33), (33,)]
                kernels.append(registry_kernel(name, dtype, (5, 3, 33), shapes, scalar)[0])
    bench = [renamed(k, f"{w}_{k.name}") for w, ks in workload_kernels().items() for k in ks]
    return kernels + bench, [k.name for k in bench]


@functools.cache
def compiled(tmp: str) -> tuple[str, list[str]]:
    """nvcc's resource report of the whole module, and the benchmark kernels' names."""
    kernels, bench = all_kernels()
    src = Path(tmp) / "all.cu"
    src.write_text(render(kernels))
    # --threads 2: the two architectures compile side by side (CI has two cores)
    done = subprocess.run([NVCC, "--std=c++17", *GENCODE, "--resource-usage", "--threads", "2",
                           "-fatbin",
                           "-o", str(src.with_suffix(".fatbin")), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, compile_error_message(src.read_text(), done.stderr)
    return done.stdout + done.stderr, bench


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    return compiled(str(tmp_path_factory.mktemp("nvcc")))


def resource_usage(text: str) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(function, arch) -> (registers, spill store bytes, spill load bytes) from ptxas."""
    found: dict[tuple[str, str], tuple[int, int, int]] = {}
    current = None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\w+)' for '(sm_\d+)'", line)
        if m:
            current = (m.group(1), m.group(2))
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            spills = (int(m.group(1)), int(m.group(2)))
        m2 = re.search(r"Used (\d+) registers", line)
        if m2 and current:
            found[current] = (int(m2.group(1)), *spills)
            current = None
    return found


def test_every_kernel_compiles_for_sm80_and_sm90(report: tuple[str, list[str]]) -> None:
    text, _ = report
    assert "warning" not in text, text
    usage = resource_usage(text)
    kernels, _ = all_kernels()
    for k in kernels:
        for arch in ARCHS:
            assert (k.name, f"sm_{arch}") in usage, (k.name, arch)


def test_benchmark_kernels_do_not_spill(report: tuple[str, list[str]]) -> None:
    text, bench = report
    usage = resource_usage(text)
    variants = [f"{name}{VECTOR}" for name in bench if (f"{name}{VECTOR}", "sm_80") in usage]
    assert variants  # the elementwise kernels of mlp_* and two_tower have vector variants
    for name in [*bench, *variants]:
        for arch in ARCHS:
            registers, stores, loads = usage[(name, f"sm_{arch}")]
            assert stores == loads == 0, (name, arch, usage[(name, f"sm_{arch}")])


def test_a_kernel_nvcc_rejects_is_named_with_the_compiler_log(tmp_path: Path) -> None:
    kernels = [random_kernel(s, f"k{s}") for s in range(3)]
    source = render(kernels)
    start = source.index(f"void {LAUNCH_BOUNDS} k1(")
    body = source.index("{", start) + 1
    broken = source[:body] + "\n  nope = 1;" + source[body:]
    src = tmp_path / "broken.cu"
    src.write_text(broken)
    done = subprocess.run([NVCC, "--std=c++17", "-arch=sm_80", "-ptx", "-o",
                           str(tmp_path / "broken.ptx"), str(src)],
                          capture_output=True, text=True)
    assert done.returncode != 0
    message = compile_error_message(broken, done.stderr)
    assert message.startswith("NVRTC rejected the CUDA module in kernel 'k1':"), message
    assert '"nope" is undefined' in message
