"""Kernel IR and its renderers: LLVM IR on the CPU and CUDA C on the GPU (upcoming)."""

from codegen.cache import cache_dir, cache_key, clear_cache, get_compiled, stats
from codegen.ir import Kernel, KernelIRError, kernel_hash, stage_of, validate
from codegen.jit import CompiledModule, compile_module
from codegen.llvm import RenderError, render

__all__ = [
    "CompiledModule", "Kernel", "KernelIRError", "RenderError", "cache_dir", "cache_key",
    "clear_cache", "compile_module", "get_compiled", "kernel_hash", "render", "stage_of",
    "stats", "validate",
]
