"""``rt.backends``: the switches PyTorch's training boilerplate sets
(``backends.cudnn.benchmark = True``, ``backends.cudnn.deterministic = True``,
``backends.cuda.matmul.allow_tf32 = True``) and the availability questions it asks
(``backends.mps.is_available()``), so that such code runs unchanged.

The flags are recorded and read by nothing: the runtime has no cuDNN (a GPU convolution is
im2col and a cuBLAS product through CuPy), so there is no convolution algorithm to
benchmark, choose deterministically or switch off, and its float32 products on a GPU are
CuPy's, which use no TF32 unless CuPy's own ``CUPY_TF32`` says so. (The one GPU op whose
sums can vary run to run is an indexing backward with repeated indices, CuPy's atomic
``scatter_add``; PyTorch's switch for such ops is ``use_deterministic_algorithms``, not
``cudnn.deterministic``.) There is no MPS device here."""

from __future__ import annotations

import sys
from types import ModuleType


class _Cudnn(ModuleType):
    """``backends.cudnn``: PyTorch's defaults; ``is_available()`` is False (no cuDNN)."""

    enabled: bool = True
    benchmark: bool = False
    benchmark_limit: int = 10
    deterministic: bool = False
    allow_tf32: bool = True

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def version() -> None:
        return None


class _CudaMatmul:
    """``backends.cuda.matmul``: PyTorch's defaults."""

    allow_tf32: bool = False
    allow_fp16_reduced_precision_reduction: bool = True
    allow_bf16_reduced_precision_reduction: bool = True


class _Cuda(ModuleType):
    """``backends.cuda``: ``is_built()`` says whether CuPy, which runs "cuda" tensors, is
    installed (PyTorch: whether it was built with CUDA)."""

    matmul = _CudaMatmul()

    @staticmethod
    def is_built() -> bool:
        try:
            import cupy  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            return False
        return True


class _Mps(ModuleType):
    """``backends.mps``: no Metal device here."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def is_built() -> bool:
        return False


cudnn = _Cudnn(f"{__name__}.cudnn")
cuda = _Cuda(f"{__name__}.cuda")
mps = _Mps(f"{__name__}.mps")
# ``import runtime.backends.cudnn as cudnn`` works, as with PyTorch's subpackages
for _module in (cudnn, cuda, mps):
    sys.modules[_module.__name__] = _module

__all__ = ["cuda", "cudnn", "mps"]
