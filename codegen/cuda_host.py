"""Run CUDA C on the host: the same source NVRTC compiles, built by g++ against a prelude of the
CUDA built-ins it uses (codegen/cuda_host_prelude.h), and launched with ctypes.

Each CUDA thread of a block is a fiber on the calling host thread (``__syncthreads`` a barrier
over the block's fibers, ``__shfl_down_sync`` a per-warp exchange through a barrier over the
warp's); a launch runs its blocks one after another. This is how CUDA semantics are checked
on a machine without a GPU: ``emulate(kernels)`` gives the ``CudaModule`` of
codegen/cuda_module.py (its launch configuration, workspaces and combine launches) over numpy
arrays, with this module standing in for ``cupy.RawModule``.

``HostModule(code, options=())`` / ``.get_function(name)`` / ``HostKernel(grid, block, args,
shared_mem=0)`` mirror CuPy's raw-module API: an argument is a numpy array, an object with a
CuPy-style ``.data.ptr`` (a host address here), or a numpy scalar. ``options`` are extra g++
flags. Built libraries are cached per source (and options) in memory and in a temporary
directory for the life of the process (removed at exit). The prelude is precompiled (a GCC precompiled header,
``prelude.h.gch`` in that directory) by the first build without extra options, and included
through it by the builds after: parsing the prelude's C++ headers was most of a small module's
build (0.73 s of compiler CPU time; 0.27 s through the header). A build with extra options
includes the prelude as written, as does every build where the header could not be made.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codegen import ir as kir
from codegen.cuda import render
from codegen.cuda_module import SM80, CudaModule, DeviceProps

PRELUDE = Path(__file__).with_name("cuda_host_prelude.h")
CXX_FLAGS: tuple[str, ...] = ("-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-w")
# C parameter types -> the numpy dtype of the array or scalar passed for them
POINTER_DTYPES: dict[str, str] = {"float": "float32", "double": "float64",
                                  "long long": "int64", "bool": "bool", "unsigned char": "uint8",
                                  "bp_bf16": "bfloat16"}
SCALAR_TYPES: dict[str, tuple[str, type]] = {
    "long long": ("int64", ctypes.c_longlong), "float": ("float32", ctypes.c_float),
    "double": ("float64", ctypes.c_double), "int": ("int32", ctypes.c_int),
    "unsigned": ("uint32", ctypes.c_uint), "bool": ("bool", ctypes.c_bool)}
_SIGNATURE = re.compile(
    r'extern "C" __global__ void (?:__launch_bounds__\([\d, ]+\) )?(\w+)\(([^)]*)\)')
_lock = threading.Lock()  # launches share the prelude's globals (grid, block, fibers)
_built: dict[str, ctypes.CDLL] = {}
_build_dir: list[Path] = []
# the prelude as the builds without extra options include it: the copy beside its precompiled
# header in the build directory, or PRELUDE where that header could not be made (_prelude)
_included: list[Path] = []
PCH_FLAGS: tuple[str, ...] = tuple(f for f in CXX_FLAGS if f != "-shared")


class HostCompilerMissing(RuntimeError):
    """No g++ on this machine: the host emulation cannot run."""


def compiler() -> str:
    """The g++ the emulation builds with, or HostCompilerMissing saying why not."""
    found = shutil.which("g++")
    if found is None:
        raise HostCompilerMissing("the CUDA host emulation needs g++ (C++20), which is not on "
                                  "PATH")
    return found


def _param(text: str) -> tuple[str, bool]:
    """(base C type, is a pointer) of one parameter declaration."""
    words = text.replace("*", " * ").replace("__restrict__", " ").replace("const", " ").split()
    pointer = "*" in words
    return " ".join(w for w in words[:-1] if w != "*"), pointer


class HostKernel:
    """One kernel of a HostModule, called like a ``cupy.RawKernel``."""

    def __init__(self, lib: ctypes.CDLL, name: str, params: list[tuple[str, bool]]) -> None:
        self.name = name
        self.params = params
        self._call = ctypes.cast(getattr(lib, f"bp_call_{name}"), ctypes.c_void_p)
        self._launch = lib.bp_host_launch

    def _arg(self, i: int, arg: Any) -> ctypes._CData:
        ctype, pointer = self.params[i]
        where = f"kernel {self.name!r} argument {i} ({ctype}{'*' if pointer else ''})"
        if pointer:
            if isinstance(arg, np.ndarray):
                if arg.dtype != np.dtype(POINTER_DTYPES[ctype]):
                    raise TypeError(f"{where}: got a {arg.dtype} array")
                return ctypes.c_void_p(arg.ctypes.data)
            ptr = getattr(getattr(arg, "data", None), "ptr", None)
            if not isinstance(ptr, int):
                raise TypeError(f"{where}: needs an array or an object with .data.ptr, got "
                                f"{type(arg).__name__}")
            return ctypes.c_void_p(ptr)
        if ctype not in SCALAR_TYPES or not isinstance(arg, np.generic) \
                or arg.dtype != np.dtype(SCALAR_TYPES[ctype][0]):
            raise TypeError(f"{where}: needs a numpy {SCALAR_TYPES.get(ctype, ('?',))[0]} "
                            f"scalar, got {arg!r}")
        return SCALAR_TYPES[ctype][1](arg.item())

    def __call__(self, grid: Sequence[int] | int, block: Sequence[int] | int,
                 args: Sequence[Any], shared_mem: int = 0) -> None:
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        block = (block,) if isinstance(block, int) else tuple(block)
        grid, block = (*grid, 1, 1)[:3], (*block, 1, 1)[:3]
        if shared_mem:
            raise ValueError(f"kernel {self.name!r}: the host emulation has no dynamic shared "
                             f"memory (shared_mem={shared_mem}); kernels declare theirs")
        if block[1:] != (1, 1) or block[0] <= 0 or block[0] % 32 or block[0] > 1024:
            raise ValueError(f"kernel {self.name!r}: block {block} is not 1-D whole warps of "
                             f"at most 1024 threads")
        if min(grid) <= 0:
            raise ValueError(f"kernel {self.name!r}: empty grid {grid}")
        if len(args) != len(self.params):
            raise TypeError(f"kernel {self.name!r} takes {len(self.params)} arguments, got "
                            f"{len(args)}")
        values = [self._arg(i, a) for i, a in enumerate(args)]
        slots = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        with _lock:
            failed = self._launch(self._call, slots, *grid, block[0])
        if failed:
            raise RuntimeError(f"kernel {self.name!r}: " + (
                "some threads of a block wait at a barrier (__syncthreads or a warp shuffle) "
                "that others never reach" if failed == 2 else f"block {block} was refused"))


class HostModule:
    """CUDA C built for the host (``cupy.RawModule``'s shape: ``get_function``)."""

    def __init__(self, code: str, options: Sequence[str] = ()) -> None:
        self.code = code
        self.options = tuple(options)
        self.signatures = {m.group(1): [_param(p) for p in m.group(2).split(",") if p.strip()]
                           for m in _SIGNATURE.finditer(code)}
        self.lib = _build(code + self._trampolines(), self.options)

    def _trampolines(self) -> str:
        """Per kernel, ``bp_call_NAME(void** args)``: the kernel called with its arguments
        read from the slots (what the prelude's launch calls on every thread)."""
        lines = []
        for name, params in self.signatures.items():
            args = ", ".join(f"*({t}{'*' if p else ''}*)a[{i}]" for i, (t, p) in enumerate(params))
            lines.append(f'extern "C" void bp_call_{name}(void** a) {{ {name}({args}); }}')
        return "\n" + "\n".join(lines) + "\n"

    def get_function(self, name: str) -> HostKernel:
        if name not in self.signatures:
            raise KeyError(f"no kernel {name!r} in this module (has {sorted(self.signatures)})")
        return HostKernel(self.lib, name, self.signatures[name])


def _build(source: str, options: tuple[str, ...]) -> ctypes.CDLL:
    """The shared library of ``source``, built once per process."""
    cxx = compiler()
    key = hashlib.sha256(repr((source, options, PRELUDE.read_text())).encode()).hexdigest()
    with _lock:
        if key in _built:
            return _built[key]
        if not _build_dir:
            _build_dir.append(Path(tempfile.mkdtemp(prefix="backplan-cuda-host-")))
            # removed at exit (the precompiled prelude alone is some 50 MB); the libraries
            # loaded from it stay mapped until then
            atexit.register(shutil.rmtree, _build_dir[0], ignore_errors=True)
        src = _build_dir[0] / f"{key[:24]}.cpp"
        lib = src.with_suffix(".so")
        prelude = PRELUDE if options else _prelude(cxx, _build_dir[0])
        src.write_text(f'#include "{prelude}"\n{source}')
        done = subprocess.run([cxx, *CXX_FLAGS, *options, "-o", str(lib), str(src)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"g++ could not build the CUDA host module:\n{done.stderr}")
        cdll = ctypes.CDLL(str(lib))
        cdll.bp_host_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
                                        ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
        cdll.bp_host_launch.restype = ctypes.c_int
        _built[key] = cdll
        return cdll


def _prelude(cxx: str, directory: Path) -> Path:
    """The prelude for a build without extra options to include: ``directory/prelude.h``
    beside its precompiled header, made on the first call (GCC uses a ``.gch`` beside the
    header it includes when the header was precompiled with the build's flags; it reads the
    header itself otherwise); PRELUDE where g++ could not precompile it."""
    if not _included:
        header = directory / "prelude.h"
        header.write_text(PRELUDE.read_text())
        done = subprocess.run([cxx, *PCH_FLAGS, "-x", "c++-header", "-o",
                               f"{header}.gch", str(header)], capture_output=True, text=True)
        _included.append(header if done.returncode == 0 else PRELUDE)
    return _included[0]


def emulate(kernels: Sequence[kir.Kernel], props: DeviceProps = SM80) -> CudaModule:
    """``kernels`` rendered to CUDA C and run on the host over numpy arrays, launched exactly
    as on a device with ``props``."""
    return CudaModule(kernels, HostModule(render(kernels)), np, props)
