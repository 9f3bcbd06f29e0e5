"""Kernel IR and its renderers: LLVM IR on the CPU (``LLVMRenderer``) and CUDA C on the GPU,
picked by device (``renderer_for``)."""

from codegen.cache import cache_dir, cache_key, clear_cache, get_compiled, stats
from codegen.ir import Kernel, KernelIRError, kernel_hash, stage_of, validate
from codegen.jit import CompiledModule, compile_module
from codegen.launch import cpu_launch_form
from codegen.llvm import RenderError, render
from codegen.lower import LoopNest, lower
from codegen.renderer import CompiledKernels, CUDARenderer, LLVMRenderer, Renderer, renderer_for

__all__ = [
    "CUDARenderer", "CompiledKernels", "CompiledModule", "Kernel", "KernelIRError",
    "LLVMRenderer", "LoopNest", "RenderError", "Renderer", "cache_dir", "cache_key",
    "clear_cache", "compile_module", "cpu_launch_form", "get_compiled", "kernel_hash", "lower",
    "render", "renderer_for", "stage_of", "stats", "validate",
]
