"""Optimization (through codegen.target) and MCJIT loading of rendered kernels, and their launch.

Every module is loaded the same way, fresh or from the disk cache: optimized IR -> object code
-> an MCJIT engine over an empty module plus that object file (``codegen.target.object_engine``).
ctypes calls release the GIL, so ``CompiledModule.run`` splits the outer range of a big kernel
across the native worker pool (``codegen.pool``), on as many threads as the intra-op thread
budget (``runtime._threads``) allows.
A kernel with accumulated outputs splits into a number of chunks fixed by the kernel alone
(``split_bounds``), so its sums are the same bits on any thread count.
"""

from __future__ import annotations

import array
import ctypes
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from codegen import ir as kir
from codegen import pool
from codegen.launch import cpu_launch_form
from codegen.target import LOCK, ObjectCode, emit, object_engine, target_machine
from codegen.target import new_target_machine as new_target_machine  # re-exported (tests)
from codegen.target import optimize as optimize  # re-exported: callers optimize through jit
from codegen.llvm_emit import OBJECT_ENTRY, ROW_BLOCK, object_entry_ok
from codegen.lower import EXPENSIVE
from runtime._threads import get_num_threads

_compiles = 0
_KERNEL_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64,
                              ctypes.c_int64)
_OBJECTS_FN = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_size_t), ctypes.c_int64,
                               ctypes.c_int64)
# A kernel is split across threads only when its estimated time passes PARALLEL_MIN_US: a
# no-op kernel split in 2 chunks costs 3 to 6 us on the native pool (6 to 13 us through
# ``run``) against 25 to 90 us on a ThreadPoolExecutor (medians of ``python -m
# benchmarks.handoff`` on this project's 2-core VM, shared with other jobs; there exp(sin(x))
# over 32 x 1024 float32 runs in 25 to 33 us, 1.3 to 1.5x faster split in 2): kernels of about
# 20 us break even or gain, larger ones gain more. The estimate is the larger of its memory
# traffic at MEMORY_BYTES_PER_US and its element-exprs at EXPR_US each, an expression weighted
# by the LLVM emitter's cost table (``EXPENSIVE``: sin, exp 8). Measured single-threaded on that
# VM, arrays in cache: x + y over 16 to 64 x 4096 float32 moves 50 to 65 bytes a ns (40 taken:
# larger arrays leave the cache); exp(sin(x)) over 64 x 1024 float32 costs 4.6e-5 us an element
# per unit of weight (1 + 8 + 8). In a plan, though, kernels this small run far apart (other
# steps between them), so the workers have gone to sleep and the split pays their waking and,
# for accumulated outputs, the partials: cnn's four column-sum kernels (16 to 54 us) took 1.7
# to 2.8x as long on 2 threads; at 40 us (A/B in one process, 2 threads) cnn 1.08 -> 0.87 ms,
# rnn 1.16 -> 1.09, gpt, two_tower, eltwise, chain, mlp_small and mlp_large within 1.5 %
# (at 100 two_tower lost 2.5 %).
PARALLEL_MIN_US = 40.0
MEMORY_BYTES_PER_US = 40_000.0
EXPR_US = 5e-5
# A kernel with accumulated outputs (column sums, whole-tensor sums) gives each chunk partials
# of its own, combined in chunk order: its chunks are a function of the kernel, never of the
# thread count, so 1 and N threads give the same bits (``split_bounds``). At most one chunk per
# CHUNK_US of estimated work (the estimate runs 2 to 3x high for a column sum on this project's
# VM), and the count is the largest of EVEN_CHUNKS that fits, so 2, 3, 4 or 6 threads get equal
# shares where the kernel is large enough. Each chunk past the first costs its partials' set-up,
# fold and combine: about 0.3 us for a 4 KiB partial (a 448 x 1024 float32 column sum of 31 us
# took 4.4 us more in 14 chunks than in one), some PARTIAL_PASSES passes over it at
# MEMORY_BYTES_PER_US in the estimate's units; the count keeps them all under PARTIAL_SHARE of
# the work. A column sum of about 50 us gets 4 chunks, a 4096 x 4096 one 24, and one with a
# 256 KiB partial 2.
CHUNK_US = 10.0
EVEN_CHUNKS = (2, 4, 6, 12, 24, 36, 48, 60)
PARTIAL_PASSES = 8
PARTIAL_SHARE = 0.03


def compile_count() -> int:
    """How many modules went through LLVM optimization and code generation."""
    return _compiles


def optimize_and_emit(module: ir.Module) -> ObjectCode:
    """Optimize and emit a kernel module's object code (``codegen.target.emit``), counted."""
    return counted(emit(module))


def counted(code: ObjectCode) -> ObjectCode:
    """``code``, a kernel module's, counted as one compile (``compile_count``): emitted here
    or by forked children (``codegen.forked.finish``)."""
    global _compiles
    with LOCK:
        _compiles += 1
    return code


def compile_module(module: ir.Module, kernels: list[kir.Kernel]) -> CompiledModule:
    """Compile a rendered module (``codegen.llvm.render(kernels)``) and load it."""
    return load(optimize_and_emit(module), kernels)


def load(code: ObjectCode, kernels: list[kir.Kernel]) -> CompiledModule:
    """Load object code into a fresh MCJIT engine and resolve each kernel's entry point. The
    module launches each kernel in its CPU launch form, as ``codegen.llvm.render`` wrote it
    (``CompiledModule.kernels`` holds those forms)."""
    from codegen.llvm import distinct

    same = distinct(kernels)  # a kernel the same as another but for its name is its function
    kernels = [cpu_launch_form(k) for k in kernels]
    with LOCK:
        # the parts (codegen.forked) in one engine: their kernels' names are distinct, and a
        # math helper two parts define (the same code) is called by each part's own copy
        # (RuntimeDyld resolves a part's references within it first); an engine a part cost
        # a warm first call 0.6 to 1.5 ms a part more
        engine = object_engine()
        for part in code.parts():
            engine.add_object_file(llvm.ObjectFileRef.from_data(part.object_file))
        engine.finalize_object()
        engines = [engine]
        addresses = {k.name: _entries(engines, same[k.name]) for k in kernels}
    missing = [name for name, pair in addresses.items() if not all(pair)]
    if missing:
        raise RuntimeError(f"kernels {missing} not found in the loaded object code")
    functions = {name: (_KERNEL_FN(by_ptr), _OBJECTS_FN(by_obj))
                 for name, (by_ptr, by_obj) in addresses.items()}
    return CompiledModule(tuple(engines), code, {k.name: k for k in kernels}, functions, same)


def _entries(engines: list[llvm.ExecutionEngine], name: str) -> tuple[int, int]:
    """A kernel function's two entry addresses, from the engine whose part holds it."""
    for engine in engines:
        pair = (engine.get_function_address(name),
                engine.get_function_address(name + OBJECT_ENTRY))
        if all(pair):
            return pair
    return 0, 0


# a kernel's dtype (its IR names one: "float32") as numpy's dtype, made once a name: numpy
# makes one from a string in about 1.3 us, and a module's load asks it of every input and
# output of every kernel, twice (estimated_us, _array_specs); numpy's dtype of a builtin
# scalar type is one object whatever made it, so the answer is the object np.dtype gives
_dtype: Callable[[str], np.dtype] = functools.cache(np.dtype)


def estimated_us(k: kir.Kernel) -> float:
    """A rough single-thread time of ``k``: memory traffic or arithmetic, whichever is more."""
    elements = math.prod(k.domain)
    per_element = sum(_dtype(i.dtype).itemsize for i in k.inputs if any(i.strides))
    per_element += sum(_dtype(o.dtype).itemsize for o in k.outputs)
    weight = sum(EXPENSIVE.get(getattr(e, "op", ""), 1) for e in k.exprs)
    return max(elements * per_element / MEMORY_BYTES_PER_US, elements * weight * EXPR_US)


def split_bounds(k: kir.Kernel, work: float | None = None) -> tuple[int, ...]:
    """The chunks of its outer range a kernel with accumulated outputs runs in, whatever the
    thread count (see CHUNK_US), as their edges: one chunk below PARALLEL_MIN_US, else at least
    2 (where the outer range has 2 rows) and at most the outer size. Where every chunk can have
    a ROW_BLOCK of rows, the edges fall on ROW_BLOCK rows, so a chunk folds its compensated sums
    no more often than one call over the whole range would (each fold passes over the output:
    6 chunks of a 448 x 1024 float32 column sum of 34 us took 1.5 us more than one call with
    unaligned edges, 0.6 us more with aligned ones). ``work``: ``estimated_us(k)`` where the
    caller has it already."""
    work, outer = estimated_us(k) if work is None else work, k.outer_size
    if work < PARALLEL_MIN_US or outer < 2:
        return (0, outer)
    partial_bytes = sum(math.prod(kir.output_shape(k, o)) * _dtype(o.dtype).itemsize
                        for o in k.outputs if o.accumulate is not None)
    partial_us = PARTIAL_PASSES * partial_bytes / MEMORY_BYTES_PER_US
    fit = min(work / CHUNK_US, 1 + PARTIAL_SHARE * work / partial_us if partial_us else math.inf)
    chunks = min(max([c for c in EVEN_CHUNKS if c <= fit], default=2), outer)
    unit = ROW_BLOCK if outer >= chunks * ROW_BLOCK else 1
    units = -(-outer // unit)
    return tuple(min(outer, unit * (units * c // chunks)) for c in range(chunks + 1))


def _data(a: np.ndarray) -> int:
    return a.ctypes.data


@functools.lru_cache(maxsize=256)
def even_bounds(size: int, chunks: int) -> ctypes.Array:
    """The edges of ``chunks`` near-equal chunks of ``range(size)``, for a kernel without
    accumulated outputs (split in as many chunks as threads) or a product's items
    (codegen.gemm); kept, since a few (size, count) pairs recur, and shared by threads
    (``run_chunks`` never writes them)."""
    return (ctypes.c_int64 * (chunks + 1))(*(size * c // chunks for c in range(chunks + 1)))


# (shape, dtype) of each array a kernel takes, inputs then outputs
Signature = tuple[tuple[tuple[int, ...], np.dtype], ...]


class _ArraySpec(NamedTuple):
    """What one argument array must be: dtype, and its least element count (the kernel's
    largest address into it: every domain index times the element strides, plus one). A named
    tuple: a module's load makes one per kernel argument (gpt's 855), a frozen dataclass's
    ``__init__`` cost 4 times a tuple's."""
    name: str
    dtype: np.dtype
    size: int
    exact: bool  # outputs cover exactly their shape; inputs only need every strided element

    def fits(self, shape: tuple[int, ...], dtype: np.dtype) -> bool:
        size = math.prod(shape)
        return dtype == self.dtype and (size == self.size if self.exact else size >= self.size)

    def check(self, kernel: str, a: np.ndarray) -> None:
        contiguous = type(a) is np.ndarray and a.flags.c_contiguous
        if not contiguous or not self.fits(a.shape, a.dtype):
            raise ValueError(f"kernel {kernel!r} {self.name}: needs a C-contiguous {self.dtype} "
                             f"array of {self.need()} elements, got "
                             f"{getattr(a, 'dtype', None)} shape {getattr(a, 'shape', None)} "
                             f"contiguous={contiguous} ({type(a).__name__})")

    def need(self) -> str:
        return f"{self.size}" if self.exact else f"at least {self.size}"


@dataclass(frozen=True)
class _Launch:
    """Per-kernel facts ``run`` needs, computed once at load time."""
    fn: ctypes._CFuncPtr
    fn_objects: ctypes._CFuncPtr  # the same kernel over array objects' addresses
    address: int  # of ``fn``, for the pool
    objects_address: int  # of ``fn_objects``
    outer: int
    split: bool  # by default across the intra-op threads (estimated at PARALLEL_MIN_US or more)
    inputs: tuple[_ArraySpec, ...]
    outputs: tuple[_ArraySpec, ...]
    accumulate: tuple[tuple[int, str], ...]  # (output index, reduce op) of accumulated outputs
    chunks: int  # of a kernel with accumulated outputs (``split_bounds``); else 1
    bounds: ctypes.Array  # the edges of those chunks
    partials: ctypes.Array  # ``pool.run_accumulating``'s words (where chunks > 1)

    @classmethod
    def of(cls, k: kir.Kernel, fns: tuple[ctypes._CFuncPtr, ctypes._CFuncPtr]) -> _Launch:
        inputs, outputs = _array_specs(k)
        accumulate = tuple((j, out.accumulate) for j, out in enumerate(k.outputs)
                           if out.accumulate is not None)
        address, objects_address = (ctypes.cast(f, ctypes.c_void_p).value for f in fns)
        # where no native pool runs, chunks would run one after another anyway
        split = accumulate and pool.available()
        work = estimated_us(k)  # once: split_bounds needs it too
        bounds = split_bounds(k, work) if split else (0, k.outer_size)
        words = [(len(inputs) + j, outputs[j].size, outputs[j].size * outputs[j].dtype.itemsize,
                  pool.combine_address(op, outputs[j].dtype.name))
                 for j, op in (accumulate if len(bounds) > 2 else ())]
        return cls(*fns, address, objects_address, k.outer_size,
                   work >= PARALLEL_MIN_US, inputs, outputs, accumulate,
                   len(bounds) - 1, (ctypes.c_int64 * len(bounds))(*bounds),
                   (ctypes.c_int64 * (4 * len(words)))(*(w for ws in words for w in ws)))


def _array_specs(k: kir.Kernel) -> tuple[tuple[_ArraySpec, ...], tuple[_ArraySpec, ...]]:
    """What each input and output array of ``k`` must be. Every address the kernel makes is
    an index of its domain times an array's element strides: an input's strides (outer and
    inner axes, reduced or not) reach at most ``sum((d - 1) * s)``; an output is written
    densely over its shape (``kir.output_shape``: domain, rows, or the accumulated inner
    shape), an ``into`` output through its input, which ``kir.validate`` requires dense."""
    empty = not all(k.domain)
    inputs = tuple(
        _ArraySpec(f"input {inp.name!r}", _dtype(inp.dtype),
                   0 if empty else 1 + sum((d - 1) * s for d, s in zip(k.domain, inp.strides)),
                   exact=False)
        for inp in k.inputs)
    outputs = tuple(_ArraySpec(f"output {out.name!r}", _dtype(out.dtype),
                               math.prod(kir.output_shape(k, out)), exact=True)
                    for out in k.outputs)
    return inputs, outputs


def check_signature(k: kir.Kernel, signature: Signature) -> Signature:
    """``signature`` as plain tuples, once it is shown that C-contiguous arrays of those
    shapes and dtypes (inputs, then outputs) hold every element ``k`` addresses; else a
    ValueError naming the argument. Needs the IR only (``kir.validate``d), no machine code."""
    inputs, outputs = _array_specs(k)
    return _checked_signature(k, inputs + outputs, signature)


def _checked_signature(k: kir.Kernel, specs: tuple[_ArraySpec, ...],
                       signature: Signature) -> Signature:
    """``check_signature`` against ``k``'s array specs ``specs`` (inputs, then outputs)."""
    if len(signature) != len(specs):
        raise ValueError(f"kernel {k.name!r} takes {len(specs)} arrays, the signature has "
                         f"{len(signature)}")
    sig = tuple((tuple(shape), np.dtype(dtype)) for shape, dtype in signature)
    for spec, (shape, dtype) in zip(specs, sig):
        if not spec.fits(shape, dtype):
            raise ValueError(f"kernel {k.name!r} {spec.name}: needs {spec.dtype} and "
                             f"{spec.need()} elements, a {dtype} array of shape {shape} "
                             f"does not fit")
    return sig


def check_arrays(kernel: str, expected: list[tuple[tuple[int, ...], np.dtype]] | Signature,
                 arrays: list[Any]) -> None:
    """A ValueError (``signature_mismatch``) unless ``arrays`` are dense numpy arrays whose
    (shape, dtype) are the first ``len(arrays)`` of ``expected``."""
    if not all(a.__class__ is np.ndarray and a.flags.c_contiguous for a in arrays) \
            or [(a.shape, a.dtype) for a in arrays] != list(expected[:len(arrays)]):
        raise ValueError(signature_mismatch(kernel, expected, arrays))


def signature_mismatch(kernel: str, expected: list[tuple[tuple[int, ...], np.dtype]] | Signature,
                       arrays: list[Any]) -> str:
    """The message for arrays that do not match a kernel's signature: the first that differs."""
    for i, (a, (shape, dtype)) in enumerate(zip(arrays, expected)):
        got = (getattr(a, "shape", None), getattr(a, "dtype", None))
        dense = type(a) is np.ndarray and a.flags.c_contiguous
        if got != (shape, dtype) or not dense:
            return (f"kernel {kernel!r} array {i}: expected a C-contiguous numpy array of shape "
                    f"{shape} and dtype {dtype}, got {type(a).__name__} of shape {got[0]} and "
                    f"dtype {got[1]}" + ("" if dense else " (not a dense numpy array)"))
    return f"kernel {kernel!r}: expected {len(expected)} arrays, got {len(arrays)}"


class CompiledModule:
    """The loaded machine code of one module; keeps its engines (one a part) alive."""

    def __init__(self, engines: tuple[llvm.ExecutionEngine, ...], code: ObjectCode,
                 kernels: dict[str, kir.Kernel], functions: dict[str, ctypes._CFuncPtr],
                 function_of: dict[str, str] | None = None) -> None:
        self._engines = engines
        self.code = code
        self.kernels = kernels
        # kernel name -> the name of the function it runs (``codegen.llvm.distinct``)
        self.function_of = function_of or {}
        self._launch = {name: _Launch.of(kernels[name], fn) for name, fn in functions.items()}
        # builtin_entry's by kernel name, split_entry's by ("split", name)
        self._builtins: dict[Any, Callable[..., None] | None] = {}

    def run(self, kernel: str | kir.Kernel, arrays_in: list[np.ndarray],
            arrays_out: list[np.ndarray], threads: int | None = None) -> None:
        """Run ``kernel`` over its whole domain on at most ``threads`` threads (default:
        ``runtime.get_num_threads()`` for kernels estimated at PARALLEL_MIN_US or more, else
        the calling thread), in chunks of the outer range run on the native pool
        (``codegen.pool.run_chunks``). A kernel with accumulated outputs runs in its own
        ``split_bounds`` chunks on min(threads, chunks) threads, so its results do not depend
        on ``threads``; any other kernel runs in ``threads`` chunks, which does not change its
        results either (each element is computed by one chunk, the same way in any). Where no
        native pool runs (``pool.available()``), an accumulating kernel runs in one call. Outputs
        must not overlap inputs (the kernel body declares its pointers ``noalias``), except
        that an output with ``into`` may be given its input's array: the kernel stores through
        the input and never touches that output's own array."""
        name = kernel if isinstance(kernel, str) else kernel.name
        launch = self._launch[name]
        if len(arrays_in) != len(launch.inputs) or len(arrays_out) != len(launch.outputs):
            raise ValueError(f"kernel {name!r} takes {len(launch.inputs)} inputs and "
                             f"{len(launch.outputs)} outputs, got {len(arrays_in)} and "
                             f"{len(arrays_out)}")
        arrays = (*arrays_in, *arrays_out)
        for spec, a in zip(launch.inputs + launch.outputs, arrays):
            spec.check(name, a)
        if threads is None:
            threads = get_num_threads() if launch.split else 1
        elif type(threads) is not int or threads < 1:
            raise ValueError(f"kernel {name!r}: threads must be a positive int, got {threads!r}")
        self._dispatch(launch, arrays, threads)

    @staticmethod
    def _dispatch(launch: _Launch, arrays: tuple[np.ndarray, ...] | list[np.ndarray],
                  threads: int) -> None:
        """``run`` after its checks: the kernel over checked arrays on ``threads`` threads."""
        if launch.chunks > 1:
            objects = object_entry_ok()
            pool.run_accumulating(launch.address, array.array(
                pool.POINTER_TYPECODE, map(id if objects else _data, arrays)), objects,
                launch.bounds, threads, launch.partials)
            return
        # the object entry reads each array's data pointer itself: ``id(a)`` costs far less
        # than ``a.ctypes.data`` (0.1 against 2 us an array)
        objects = object_entry_ok()
        chunks = 1 if launch.accumulate else min(threads, launch.outer)
        if chunks <= 1:
            fn, table, pointer = ((launch.fn_objects, ctypes.c_size_t, id) if objects else
                                  (launch.fn, ctypes.c_void_p, _data))
            fn((table * len(arrays))(*map(pointer, arrays)), 0, launch.outer)
            return
        # an array.array of the pointers (0.2 us against a ctypes array's 1.2), and the pool's
        # entry past run_chunks' checks: the bounds are even_bounds', the table this one
        ptrs = array.array(pool.POINTER_TYPECODE, map(id if objects else _data, arrays))
        pool.run_checked(launch.objects_address if objects else launch.address,
                         ptrs.buffer_info()[0], 0, even_bounds(launch.outer, chunks), chunks)

    def splits(self, kernel: str | kir.Kernel) -> bool:
        """Whether ``run`` splits ``kernel`` across the intra-op threads by default."""
        return self._launch[kernel if isinstance(kernel, str) else kernel.name].split

    def check_signature(self, kernel: str | kir.Kernel, signature: Signature) -> Signature:
        """``check_signature`` for this module's kernel of that name, against the array specs
        its load worked out (``_Launch``: a program's build checks each kernel step's
        signature, and working them out again cost rnn's warm first call 4M instructions)."""
        name = kernel if isinstance(kernel, str) else kernel.name
        launch = self._launch[name]
        return _checked_signature(self.kernels[name], launch.inputs + launch.outputs, signature)

    def launcher(self, kernel: str | kir.Kernel, signature: Signature | None = None
                 ) -> Callable[[list[np.ndarray]], None]:
        """A fast ``run`` for a caller that passes arrays of one signature on every call (a
        plan's kernel step): ``call(inputs + outputs)``. The signature is checked against the
        kernel once (``check_signature``); each call then compares its arrays' (shape, dtype)
        with it and checks they are dense numpy arrays, and hands the array objects straight
        to the kernel's object entry (as its builtin, ``builtin_entry``, where there is one).
        Kernels split across threads, and calls without a signature, go through ``run``
        (which checks each call in full)."""
        name = kernel if isinstance(kernel, str) else kernel.name
        expected = None if signature is None else list(self.check_signature(name, signature))
        launch = self._launch[name]
        n_in = len(launch.inputs)
        entry = self.object_entry(name)
        if expected is not None and launch.split and object_entry_ok():
            return self._split_launcher(name, expected)
        if entry is None or expected is None:
            return lambda arrays: self.run(name, arrays[:n_in], arrays[n_in:])
        builtin = self.builtin_entry(name)
        if builtin is not None:
            def call_builtin(arrays: list[np.ndarray]) -> None:
                check_arrays(name, expected, arrays)
                builtin(*arrays)

            return call_builtin
        fn, addresses, outer = entry

        def call(arrays: list[np.ndarray]) -> None:
            check_arrays(name, expected, arrays)
            fn(addresses(*map(id, arrays)), 0, outer)

        return call

    def _split_launcher(self, name: str, expected: list[Any]) -> Callable[[list[np.ndarray]], None]:
        """``launcher`` of a kernel split across the intra-op threads: each call checks its
        arrays against the signature (as ``check_arrays`` does for the others), then runs as
        ``split_entry``'s call."""
        run = self.split_entry(name)
        assert run is not None  # the caller's test: split, object entries here

        def call(arrays: list[np.ndarray]) -> None:
            check_arrays(name, expected, arrays)
            run(*arrays)

        return call

    def split_entry(self, kernel: str | kir.Kernel) -> Callable[..., None] | None:
        """``f(*arrays)``, inputs then outputs, for a kernel split across the intra-op threads,
        from a caller that guarantees what ``object_entry``'s does (a plan's generated program,
        which tests each argument's shape and dtype): as ``run`` on ``get_num_threads()``
        threads at each call; on one thread, where that is one call over the whole range (the
        same bits), through the kernel's builtin (0.1 us against ``run``'s checks of every
        array and a ctypes call: gpt's 33 split kernels a step). None for a kernel that does
        not split or where the object entry cannot be used. Made once per kernel."""
        from codegen import pyentry

        name = kernel if isinstance(kernel, str) else kernel.name
        key = ("split", name)
        if key in self._builtins:
            return self._builtins[key]
        launch = self._launch[name]
        if not launch.split or not object_entry_ok():
            self._builtins[key] = None
            return None
        whole = launch.chunks <= 1  # no fixed chunks of accumulated outputs
        single = launch.accumulate and whole  # one call at any thread count
        builtin = pyentry.kernel_builtin(
            launch.objects_address, launch.outer, len(launch.inputs) + len(launch.outputs),
            name, self._engines) if whole and pyentry.available() else None
        dispatch = self._dispatch

        def call(*arrays: np.ndarray) -> None:
            threads = get_num_threads()
            if builtin is not None and (single or threads <= 1):
                builtin(*arrays)
            else:
                dispatch(launch, arrays, threads)

        call.__name__ = call.__qualname__ = name  # as the builtins are named: profiles show it
        self._builtins[key] = call
        return call

    def object_entry(self, kernel: str | kir.Kernel
                     ) -> tuple[ctypes._CFuncPtr, type, int] | None:
        """``(fn, addresses, outer)`` to call ``fn(addresses(*map(id, ins + outs)), 0,
        outer)`` for a caller that itself guarantees what ``run`` checks (dtypes, sizes,
        C-contiguity, outputs apart from inputs; a plan's generated program) and keeps every
        array alive during the call; None where the kernel splits across threads or this
        interpreter's arrays do not fit the object entry. A kernel that splits by default has
        none whatever the thread count is now: a plan's program is generated once and must
        follow later ``runtime.set_num_threads`` calls."""
        launch = self._launch[kernel if isinstance(kernel, str) else kernel.name]
        if launch.split or not object_entry_ok():
            return None
        n = len(launch.inputs) + len(launch.outputs)
        return launch.fn_objects, ctypes.c_size_t * n, launch.outer

    def native_entry(self, kernel: str | kir.Kernel) -> tuple[int, int] | None:
        """``(address, outer)`` of ``object_entry``'s function, for native code that calls it
        as ``fn(objects, 0, outer)`` (``codegen.pyentry.drive_builtin``) under the same
        guarantees; None where it has none. The caller keeps this module alive."""
        launch = self._launch[kernel if isinstance(kernel, str) else kernel.name]
        if self.object_entry(kernel) is None:
            return None
        return launch.objects_address, launch.outer

    def builtin_entry(self, kernel: str | kir.Kernel) -> Callable[..., None] | None:
        """``f(*arrays)``: ``object_entry`` as a Python builtin taking the array objects
        themselves, inputs then outputs (``codegen.pyentry``: a fraction of a ctypes call's
        cost), for a caller that guarantees what ``object_entry``'s does; None where that has
        none or builtins cannot be made here. Made once per kernel."""
        from codegen import pyentry

        name = kernel if isinstance(kernel, str) else kernel.name
        found = self._builtins.get(name)
        if found is None and name not in self._builtins:
            entry = self.object_entry(name)
            if entry is not None and pyentry.available():
                launch = self._launch[name]
                found = pyentry.kernel_builtin(launch.objects_address, launch.outer,
                                               len(launch.inputs) + len(launch.outputs),
                                               name, self._engines)
            self._builtins[name] = found
        return found

    def asm(self, kernel_name: str) -> str:
        """Optimized assembly of ``kernel_name`` (re-emitted from the stored optimized IR)."""
        if kernel_name not in self.kernels:
            raise KeyError(f"no kernel {kernel_name!r} in this module: {sorted(self.kernels)}")
        kernel_name = self.function_of.get(kernel_name, kernel_name)  # its function
        with LOCK:
            text = "\n".join(target_machine().emit_assembly(llvm.parse_assembly(p.optimized_ir))
                             for p in self.code.parts())
        # the entry, then the bodies it calls (NAME.body, NAME.exact)
        found = [m.group(0) for suffix in ("", r"\.body", r"\.exact")
                 for m in re.finditer(rf"^\"?{re.escape(kernel_name)}{suffix}\"?:.*?"
                                      r"^\.Lfunc_end\d+:", text, re.MULTILINE | re.DOTALL)]
        if not found:
            raise RuntimeError(f"kernel {kernel_name!r} not found in the module's assembly")
        return "\n".join(found)
