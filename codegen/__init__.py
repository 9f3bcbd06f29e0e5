"""Kernel IR and its renderers: LLVM IR on the CPU and CUDA C on the GPU (upcoming)."""
