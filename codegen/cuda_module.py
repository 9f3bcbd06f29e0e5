"""Launching CUDA kernels: launch configuration from a kernel and a device, and the compiled
module (``CudaModule``, a ``codegen.renderer.CompiledKernels``).

``launch_config`` depends only on the kernel and the device's properties (``DeviceProps``), so a
kernel's accumulated outputs, combined in part order (see codegen/cuda.py), come out the same
bits on every run on one kind of device. ``CudaModule`` launches through anything shaped like
``cupy.RawModule`` (``get_function(name)(grid, block, args, shared_mem=0)``) over arrays of an
array module (``xp``): CuPy on a GPU (``compile_module``), numpy with the host emulation
(``codegen.cuda_host.emulate``), which thus runs this very launch code.

CuPy is imported only by ``compile_module``. Compiled modules are cached in memory by source
hash and compute capability; NVRTC's binaries are also kept on disk by CuPy's own kernel cache
(``CUPY_CACHE_DIR``, default ~/.cupy/kernel_cache, keyed by source, options and arch).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from codegen import ir as kir
from codegen.cuda import (
    COMBINE,
    MAX_BLOCK,
    SCRATCH_BYTES,
    VECTOR,
    VECTOR_ALIGN,
    WARP,
    reduce_dtypes,
    render,
    vector_width,
    workspace_layout,
)
from codegen.lower import lower

# NVRTC options: C++17 and CUDA's accurate math (no --use_fast_math: IEEE division and square
# root, denormals kept, accurate transcendentals)
NVRTC_OPTIONS: tuple[str, ...] = ("--std=c++17",)
ROWS_PER_PART = 16  # rows a part of a column-accumulating elementwise kernel runs, at least


@dataclass(frozen=True)
class DeviceProps:
    """What the launch configuration depends on (``cudaDeviceProp`` fields)."""
    arch: str  # "sm_80"
    sm_count: int
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048
    warp_size: int = 32
    shared_per_block: int = 48 << 10  # statically declared shared memory a block may use
    max_grid: tuple[int, int, int] = (2 ** 31 - 1, 65535, 65535)


SM80 = DeviceProps("sm_80", sm_count=108)  # A100
SM90 = DeviceProps("sm_90", sm_count=132)  # H100 SXM


def device_props(cupy: ModuleType, device_id: int) -> DeviceProps:
    """The current device's properties, from the CUDA runtime."""
    p = cupy.cuda.runtime.getDeviceProperties(device_id)
    return DeviceProps(f"sm_{p['major']}{p['minor']}", p["multiProcessorCount"],
                       p["maxThreadsPerBlock"], p["maxThreadsPerMultiProcessor"], p["warpSize"],
                       p["sharedMemPerBlock"], tuple(p["maxGridSize"]))


@dataclass(frozen=True)
class LaunchConfig:
    """How one kernel launches: ``grid``/``block`` of the kernel; ``parts`` partials of each
    accumulated output in a ``workspace_bytes`` workspace, folded by ``NAME__combine``
    launched on ``combine_grid``/``combine_block`` (parts 0: nothing accumulated)."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    static_shared: int  # bytes of __shared__ the kernel declares
    parts: int
    workspace_bytes: int
    combine_grid: tuple[int, int, int]
    combine_block: tuple[int, int, int]
    # the vector variant (``NAME__vec``, codegen.cuda.vector_width): elements a thread, and
    # its grid and block (width 0: none)
    vector: int = 0
    vector_grid: tuple[int, int, int] = (0, 1, 1)
    vector_block: tuple[int, int, int] = (0, 1, 1)


def _threads(n: int, props: DeviceProps) -> int:
    """A block for n work items: whole warps, at most MAX_BLOCK threads."""
    return min(MAX_BLOCK, props.max_threads_per_block,
               max(props.warp_size, -(-n // props.warp_size) * props.warp_size))


def static_shared(kernel: kir.Kernel) -> int:
    """Bytes of shared memory a row-reduction kernel declares (reduce buffers, row scratch)."""
    nest = lower(kernel, SCRATCH_BYTES)
    return sum(33 * np.dtype(t).itemsize for t in reduce_dtypes(kernel)) \
        + sum(nest.row_size * np.dtype(nest.dtypes[i]).itemsize for i in nest.cached)


def launch_config(kernel: kir.Kernel, props: DeviceProps) -> LaunchConfig:
    """Grid, block and workspace of ``kernel`` on a device with ``props`` (see the shapes in
    codegen/cuda.py). Grids are capped at what keeps every SM full (grid-stride loops take
    the rest) and never empty, so accumulated outputs always get their combine."""
    if props.warp_size != WARP:
        raise ValueError(f"kernels assume a warp of {WARP} threads; device {props.arch} has "
                         f"{props.warp_size}")
    layout = workspace_layout(kernel)
    outer, inner = kernel.outer_size, math.prod(kernel.inner_shape)
    if kernel.n_reduce:
        block = _threads(inner, props)
        full = props.sm_count * (props.max_threads_per_sm // block)
        grid = (max(1, min(outer, full, props.max_grid[0])), 1, 1)
        parts = grid[0]
    elif layout:
        block = _threads(inner, props)
        full = props.sm_count * (props.max_threads_per_sm // block)
        gx = max(1, min(-(-inner // block), full))
        gy = max(1, min(-(-outer // ROWS_PER_PART), full // gx, props.max_grid[1]))
        grid, parts = (gx, gy, 1), gy
    else:
        size = math.prod(kernel.domain)
        block = _threads(size, props)
        full = props.sm_count * (props.max_threads_per_sm // block)
        grid, parts = (max(1, min(-(-size // block), full)), 1, 1), 0
    shared = static_shared(kernel) if kernel.n_reduce else 0
    if shared > props.shared_per_block:
        raise ValueError(f"kernel {kernel.name!r} declares {shared} bytes of shared memory; "
                         f"{props.arch} allows {props.shared_per_block} per block")
    combine_grid, combine_block = (0, 1, 1), (0, 1, 1)
    if layout:
        size = max(math.prod(kir.output_shape(kernel, kernel.outputs[j])) for j, _, _ in layout)
        combine_block = (_threads(size, props), 1, 1)
        full = props.sm_count * (props.max_threads_per_sm // combine_block[0])
        combine_grid = (max(1, min(-(-size // combine_block[0]), full)), 1, 1)
    width = vector_width(kernel)
    vector_grid, vector_block = (0, 1, 1), (0, 1, 1)
    if width:
        groups = math.prod(kernel.domain) // width
        vector_block = (_threads(groups, props), 1, 1)
        full = props.sm_count * (props.max_threads_per_sm // vector_block[0])
        vector_grid = (max(1, min(-(-groups // vector_block[0]), full)), 1, 1)
    return LaunchConfig(grid, (block, 1, 1), shared, parts if layout else 0,
                        (parts if layout else 0) * sum(n for _, n, _ in layout),
                        combine_grid, combine_block, width, vector_grid, vector_block)


def _address(a: Any) -> int:
    """The address of an array's first element: a CuPy array's device pointer, a numpy
    array's host one (the host emulation)."""
    ptr = getattr(a.data, "ptr", None)
    return a.ctypes.data if ptr is None else ptr


def _needed_elements(kernel: kir.Kernel, inp: kir.Input) -> int:
    if 0 in kernel.domain:
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(kernel.domain, inp.strides))


class CudaModule:
    """Every kernel of a plan in one compiled module (``CompiledKernels``)."""

    def __init__(self, kernels: Sequence[kir.Kernel], module: Any, xp: ModuleType,
                 props: DeviceProps) -> None:
        self.kernels = {k.name: k for k in kernels}
        self.props = props
        self.xp = xp
        self.configs = {k.name: launch_config(k, props) for k in kernels}
        self.functions = {k.name: module.get_function(k.name) for k in kernels}
        self.combines = {k.name: module.get_function(k.name + COMBINE) for k in kernels
                         if self.configs[k.name].parts}
        self.vectors = {k.name: module.get_function(k.name + VECTOR) for k in kernels
                        if self.configs[k.name].vector}
        self._workspaces: dict[str, Any] = {}

    def _workspace(self, name: str) -> Any:
        """The kernel's workspace, allocated on first use and reused (a launch and its
        combine run in order on one stream, so the next launch may overwrite it)."""
        if name not in self._workspaces:
            self._workspaces[name] = self.xp.empty(self.configs[name].workspace_bytes, np.uint8)
        return self._workspaces[name]

    def check(self, name: str, arrays_in: Sequence[Any], arrays_out: Sequence[Any]) -> None:
        """Refuse arrays the kernel would read or write out of bounds."""
        self._check(name, [(a.shape, a.dtype, a.flags.c_contiguous)
                           for a in (*arrays_in, *arrays_out)], len(arrays_in))

    def check_signature(self, kernel: str | kir.Kernel,
                        signature: Sequence[tuple[tuple[int, ...], Any]]) -> Any:
        """``signature`` ((shape, dtype) of each C-contiguous array the kernel is handed, inputs
        then outputs) checked as ``check`` checks arrays; returned as given."""
        name = kernel if isinstance(kernel, str) else kernel.name
        n_in = len(self.kernels[name].inputs)
        self._check(name, [(tuple(shape), np.dtype(dtype), True) for shape, dtype in signature],
                    n_in)
        return signature

    def _check(self, name: str, arrays: list[tuple[tuple[int, ...], Any, bool]], n_in: int
               ) -> None:
        kernel = self.kernels[name]
        if n_in != len(kernel.inputs) or len(arrays) - n_in != len(kernel.outputs):
            raise ValueError(f"kernel {name!r} takes {len(kernel.inputs)} inputs and "
                             f"{len(kernel.outputs)} outputs, got {n_in} and "
                             f"{len(arrays) - n_in}")
        for what, spec, (shape, dtype, contiguous), need in (
                *(("input", inp, a, _needed_elements(kernel, inp))
                  for inp, a in zip(kernel.inputs, arrays[:n_in])),
                *(("output", out, a, math.prod(kir.output_shape(kernel, out)))
                  for out, a in zip(kernel.outputs, arrays[n_in:]) if out.into is None)):
            if dtype != np.dtype(spec.dtype) or math.prod(shape) < need or not contiguous:
                raise ValueError(f"kernel {name!r}: {what} {spec.name} needs a C-contiguous "
                                 f"{spec.dtype} array of at least {need} elements, got "
                                 f"{dtype} {tuple(shape)} (contiguous={contiguous})")

    def run(self, kernel: str | kir.Kernel, arrays_in: list[Any], arrays_out: list[Any]
            ) -> None:
        name = kernel if isinstance(kernel, str) else kernel.name
        if name not in self.kernels:
            raise KeyError(f"no kernel {name!r} in this module (has {sorted(self.kernels)})")
        self.check(name, arrays_in, arrays_out)
        self._launch(name, [*arrays_in, *arrays_out])

    def _launch(self, name: str, arrays: list[Any]) -> None:
        config = self.configs[name]
        if config.vector and all(_address(a) % VECTOR_ALIGN == 0 for a in arrays):
            self.vectors[name](config.vector_grid, config.vector_block, tuple(arrays))
            return
        if not config.parts:
            self.functions[name](config.grid, config.block, tuple(arrays))
            return
        ws = self._workspace(name)
        self.functions[name](config.grid, config.block, (*arrays, ws))
        n_in = len(self.kernels[name].inputs)
        outs = [arrays[n_in + j] for j, o in enumerate(self.kernels[name].outputs)
                if o.accumulate]
        self.combines[name](config.combine_grid, config.combine_block,
                            (*outs, ws, np.int64(config.parts)))

    def launcher(self, kernel: str | kir.Kernel,
                 signature: Sequence[tuple[tuple[int, ...], Any]] | None = None
                 ) -> Callable[[list[Any]], None]:
        """``call(inputs + outputs)``; the first call checks the arrays as ``run`` does, later
        calls with arrays of the same shapes and dtypes go straight to the launch. A
        ``signature`` (``check_signature``'s) is checked now and counts as that first call."""
        name = kernel if isinstance(kernel, str) else kernel.name
        n_in = len(self.kernels[name].inputs)
        seen: list[tuple[Any, ...]] = []
        if signature is not None:
            self.check_signature(name, signature)
            seen.append(tuple((tuple(shape), np.dtype(dtype), True)
                              for shape, dtype in signature))

        def call(arrays: list[Any]) -> None:
            signature = tuple((a.shape, a.dtype, a.flags.c_contiguous) for a in arrays)
            if not seen or seen[0] != signature:
                self.check(name, arrays[:n_in], arrays[n_in:])
                seen[:] = [signature]
            self._launch(name, arrays)
        return call


class CUDACompileError(RuntimeError):
    """NVRTC rejected the module; names the kernels its log points at and shows the log."""


def compile_error_message(source: str, log: str) -> str:
    """The error for a compiler ``log`` of ``source``: the kernels whose lines the log's
    ``(LINE): error`` references fall in (warnings name none), then the log itself."""
    starts = [(n, m.group(1)) for n, line in enumerate(source.splitlines(), 1)
              if (m := re.match(r'extern "C" __global__ void __launch_bounds__\([\d, ]+\) (\w+)\(',
                                line))]
    named: list[str] = []
    for line in sorted({int(x) for x in re.findall(r"\((\d+)\): (?:catastrophic )?error", log)}):
        owner = [name for start, name in starts if start <= line]
        name = owner[-1].removesuffix(COMBINE) if owner else "(module prelude)"
        if name not in named:
            named.append(name)
    which = ", ".join(repr(n) for n in named) or "(no line named in the log)"
    return f"NVRTC rejected the CUDA module in kernel {which}:\n{log.strip()}"


_modules: dict[tuple[str, str], CudaModule] = {}
_lock = threading.Lock()


def compile_module(kernels: list[kir.Kernel], device_id: int | None = None,
                   cache_dir: str | os.PathLike[str] | None = None) -> CudaModule:
    """``kernels`` rendered (codegen/cuda.py) and compiled by NVRTC for the current (or
    ``device_id``'s) GPU, once per source and compute capability. ``cache_dir``: the project's
    compiled-code cache directory (``planner.compile(cache_dir=...)``); NVRTC's binaries go to
    CuPy's kernel cache in its ``cuda`` subdirectory (default: CuPy's own, CUPY_CACHE_DIR)."""
    from runtime._device import cupy_module

    cupy = cupy_module()
    device = cupy.cuda.Device(device_id) if device_id is not None else cupy.cuda.Device()
    props = device_props(cupy, device.id)
    source = render(kernels)
    key = (hashlib.sha256(source.encode()).hexdigest(), props.arch)
    with _lock:
        if key not in _modules:
            with device, _cupy_cache_dir(cache_dir):
                raw = cupy.RawModule(code=source, options=NVRTC_OPTIONS)
                try:
                    raw.compile()
                except cupy.cuda.compiler.CompileException as e:
                    raise CUDACompileError(compile_error_message(source, str(e))) from None
                _modules[key] = CudaModule(kernels, raw, cupy, props)
        return _modules[key]



@contextlib.contextmanager
def _cupy_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Iterator[None]:
    """CuPy's kernel cache in ``cache_dir``/cuda while a module compiles: CuPy reads
    CUPY_CACHE_DIR at each compile (held under ``_lock``: no other compile of ours runs)."""
    if cache_dir is None:
        yield
        return
    path = Path(cache_dir) / "cuda"
    path.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("CUPY_CACHE_DIR")
    os.environ["CUPY_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["CUPY_CACHE_DIR"]
        else:
            os.environ["CUPY_CACHE_DIR"] = previous
