"""The renderer interface: one per device type, each turning kernel IR into a compiled module.

Every renderer consumes the same lowering (``codegen.lower.LoopNest``) and differs only in how
it writes it: ``LLVMRenderer`` emits LLVM IR for the CPU (codegen/llvm.py), JIT-compiled
through llvmlite (codegen/cache.py, jit.py); ``CUDARenderer`` emits CUDA C for NVIDIA GPUs
(codegen/cuda.py), compiled through NVRTC (``cupy.RawModule``, codegen/cuda_module.py). Both
live here, above the modules that write and those that compile, which never import each other
back. A renderer has three jobs:

- ``render(kernels)``: the source text of one module holding every kernel (no compiler, no
  device needed: CUDA C renders on a machine without CuPy or a GPU);
- ``compile(kernels)``: a ``CompiledKernels`` for those kernels, from the disk or memory cache
  where the renderer has one;
- launch: ``CompiledKernels.run`` / ``launcher``, with the renderer's own launch choices (how
  the outer range is split across CPU threads; grid and block shape on a GPU).

``renderer_for(device)`` picks the renderer of a device ("cpu", "cuda", "cuda:N"). CuPy is
imported only when a CUDA module compiles.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from codegen import cache, cuda, cuda_module, llvm
from codegen import ir as kir


class CompiledKernels(Protocol):
    """A compiled module of kernels on one device, launched by kernel name."""

    def run(self, kernel: str | kir.Kernel, arrays_in: list[Any], arrays_out: list[Any]) -> None:
        """Run ``kernel`` over its input arrays, writing its (preallocated) output arrays."""
        ...

    def launcher(self, kernel: str | kir.Kernel) -> Callable[[list[Any]], None]:
        """A call taking the kernel's inputs then outputs as one list, checked once here so
        that repeated calls (a plan's replays) pay as little as the device allows."""
        ...


class Renderer(ABC):
    """Rule tables plus a short driver (see the module docstring)."""

    device_type: ClassVar[str]  # "cpu" or "cuda"
    language: ClassVar[str]  # what ``render`` writes: "llvm" or "cuda"

    @abstractmethod
    def render(self, kernels: Sequence[kir.Kernel]) -> str:
        """The source text of one module holding ``kernels``."""

    @abstractmethod
    def compile(self, kernels: Sequence[kir.Kernel], cache_dir: Any = None) -> CompiledKernels:
        """``kernels`` compiled and loaded, ready to launch."""

    def kernel_source(self, kernel: kir.Kernel) -> str:
        """One kernel's source, as ``plan.kernels`` shows it (a module of its own)."""
        return self.render([kernel])


class LLVMRenderer(Renderer):
    """The CPU renderer: LLVM IR (codegen/llvm.py's rule tables and driver), compiled through
    the compile cache (``codegen.cache``) and launched by ``codegen.jit.CompiledModule``."""

    device_type = "cpu"
    language = "llvm"

    def render(self, kernels: Sequence[kir.Kernel]) -> str:
        return str(llvm.render(kernels))

    def compile(self, kernels: Sequence[kir.Kernel], cache_dir: Any = None) -> CompiledKernels:
        return cache.get_compiled(list(kernels), cache_dir)

    def kernel_source(self, kernel: kir.Kernel) -> str:
        return llvm.kernel_source(kernel)


class CUDARenderer(Renderer):
    """The GPU renderer: CUDA C (codegen/cuda.py), compiled by NVRTC and launched by
    ``codegen.cuda_module.CudaModule``."""

    device_type = "cuda"
    language = "cuda"

    def render(self, kernels: Sequence[kir.Kernel]) -> str:
        return cuda.render(kernels)

    def compile(self, kernels: Sequence[kir.Kernel], cache_dir: Any = None) -> CompiledKernels:
        """The kernels compiled by NVRTC for the current device
        (``codegen.cuda_module.compile_module``): NVRTC's binaries go to CuPy's kernel cache,
        under ``cache_dir``/cuda where a cache directory is given."""
        return cuda_module.compile_module(list(kernels), cache_dir=cache_dir)


# device type -> its renderer
RENDERERS: dict[str, type[Renderer]] = {"cpu": LLVMRenderer, "cuda": CUDARenderer}
_instances: dict[str, Renderer] = {}


def device_type(device: str) -> str:
    """"cpu" for "cpu", "cuda" for "cuda" and "cuda:N"."""
    kind = device.split(":", 1)[0]
    if kind not in RENDERERS or (kind == "cpu" and device != "cpu") \
            or (":" in device and not device.split(":", 1)[1].isdigit()):
        raise ValueError(f"no renderer for device '{device}': known device types are "
                         f"{sorted(RENDERERS)} ('cuda:N' for a GPU)")
    return kind


def renderer_for(device: str) -> Renderer:
    """The renderer of ``device`` (one instance per device type)."""
    kind = device_type(device)
    if kind not in _instances:
        _instances[kind] = RENDERERS[kind]()
    return _instances[kind]
