"""The LLVM toolchain every compiled module goes through: the native target, the host's
target machine, one lock around LLVM's global context, and the optimization pipeline. Below
both ``codegen.jit`` (kernel modules) and ``codegen.pool`` (the pool's worker loops), which use
it alike.
"""

from __future__ import annotations

import functools
import struct
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir


@dataclass(frozen=True)
class ObjectCode:
    """What the disk cache stores: machine code plus the optimized IR (for ``asm``). A module
    emitted in parts (``codegen.forked``) holds one object file per part, framed by
    ``joined``: ``parts`` gives them back."""
    object_file: bytes
    optimized_ir: str

    @classmethod
    def joined(cls, parts: list[ObjectCode]) -> ObjectCode:
        if len(parts) == 1:
            return parts[0]
        head = _PARTS_MAGIC + struct.pack(f"<{len(parts) + 1}Q", len(parts),
                                          *(len(p.object_file) for p in parts))
        return cls(head + b"".join(p.object_file for p in parts),
                   _PART_LINE.join(p.optimized_ir for p in parts))

    def parts(self) -> list[ObjectCode]:
        data = self.object_file
        if not data.startswith(_PARTS_MAGIC):
            return [self]
        at = len(_PARTS_MAGIC)
        (count,) = struct.unpack_from("<Q", data, at)
        sizes = struct.unpack_from(f"<{count}Q", data, at + 8)
        irs = self.optimized_ir.split(_PART_LINE)
        if len(irs) != count:
            raise ValueError(f"object code of {count} parts holds {len(irs)} IR texts")
        start, found = at + 8 * (count + 1), []
        for size, ir_text in zip(sizes, irs, strict=True):
            found.append(ObjectCode(data[start:start + size], ir_text))
            start += size
        if start != len(data):
            raise ValueError("object code parts do not fill their frame")
        return found


# an object file starts with ELF's (or another format's) magic, never this
_PARTS_MAGIC = b"backplan parts\0\0"
_PART_LINE = "\n; ---- backplan: next part ----\n"


LOCK = threading.Lock()  # LLVM's global context is not safe to use from several threads
# LLVM's loop unrolling, off: the renderer vectorizes and interleaves the loops it wants
# (codegen.llvm), and unrolling the rest (short rows, a reduction's row of 10 with an exp
# inlined in it) doubled compile time without making any workload faster: the kernels of
# mlp_small 0.34 -> 0.16 s, cnn 0.97 -> 0.43, mlp_large 0.34 -> 0.17, rnn 0.47 -> 0.33, gpt
# the same; steps within noise (cnn 3.5 % faster). Unrolling reorders no arithmetic: the
# same bits either way.
LOOP_UNROLLING = False
# names of the functions a module's own code calls and nothing outside it looks up
# (codegen.llvm_math's): after optimization, those no call is left to are dropped (``emit``)
HELPER_PREFIX = "backplan.math."


@functools.cache
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # codegen.pool's pause instruction is inline asm


@functools.cache
def host() -> tuple[str, str]:
    """(CPU name, feature string) the code is compiled for; part of every cache key. Asked of
    LLVM once per process (0.5 ms a question: gpt's planning asked it 260 times)."""
    _initialize()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def new_target_machine() -> llvm.TargetMachine:
    """A target machine for the host CPU (an MCJIT engine takes ownership of the one it gets)."""
    cpu, features = host()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=3,
                                        codemodel="jitdefault")


# the target machine an engine loading object files gets: the engine compiles only the empty
# module it is created over (the object files hold machine code already, emitted by
# ``target_machine`` for the host at -O3), so any x86-64 machine of the same triple (the same
# data layout: symbol names resolve alike) serves. At -O0 that compile runs LLVM's fast code
# generation pipeline (creating and finalizing an engine 1.5 -> 0.85 ms, best of 20, a small
# kernel's object), and without the host's CPU name and ~110 features the machine is made
# without parsing them (0.85 -> 0.5 to 0.75 ms): once per plan module, once for the support
# engine
LOADER_CPU = ""  # LLVM's generic CPU of the triple
LOADER_FEATURES = ""
LOADER_OPT = 0


def object_engine() -> llvm.ExecutionEngine:
    """A new MCJIT engine for object files (``add_object_file``), over an empty module and a
    target machine of LOADER_CPU, LOADER_FEATURES and LOADER_OPT; the caller holds LOCK."""
    _initialize()
    tm = llvm.Target.from_default_triple().create_target_machine(
        cpu=LOADER_CPU, features=LOADER_FEATURES, opt=LOADER_OPT, codemodel="jitdefault")
    return llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)


# the engine every support module (codegen.pool's loops, codegen.pyentry's trampolines,
# codegen.gemm's products, codegen.windows' functions) is loaded into: one per process, never
# freed (each module is loaded once and used for the process's life). An engine of its own
# cost each module 0.6 to 0.9 ms to create and finalize, however small its code; adding an
# object to a finalized engine and finalizing again costs 0.1 to 0.2 ms (cnn's warm first
# call loaded 6 support modules, gpt's 4). Their external symbols are distinct by name.
_support_engine: llvm.ExecutionEngine | None = None


def load_support(object_file: bytes, *names: str) -> tuple[llvm.ExecutionEngine, list[int]]:
    """Load a support module's object code into the process's support engine and return the
    engine (which owns the code) and the addresses of ``names`` (0 where one is missing).
    The caller holds LOCK."""
    global _support_engine
    engine = _support_engine
    if engine is None:
        engine = _support_engine = object_engine()
    engine.add_object_file(llvm.ObjectFileRef.from_data(object_file))
    engine.finalize_object()
    return engine, [engine.get_function_address(name) for name in names]


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The machine used to optimize and emit; engines get their own (they take ownership)."""
    return new_target_machine()


def _parsed(module: ir.Module | str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    """A module (or its IR text) parsed for ``tm``'s triple and data layout, verified; the
    caller holds LOCK."""
    mod = llvm.parse_assembly(str(module))
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def optimize(module: ir.Module | str) -> llvm.ModuleRef:
    """Verify (a module or its IR text), optimize at O3 for the host with loop and SLP
    vectorization (LLVM's unrolling as LOOP_UNROLLING says), verify again."""
    tm = target_machine()
    with LOCK:
        mod = _parsed(module, tm)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        # interleave only the loops whose metadata asks for it (the renderer's innermost
        # loops, ``codegen.llvm.INTERLEAVE``). Interleaving a loop of LLVM's own choosing
        # could take hours: once short inner loops are fully unrolled the row loop is
        # innermost, and over inputs broadcast along the rows its body is a deep DAG of
        # values uniform across rows (compensated sums read each value 2 to 3 times);
        # unrolling by an interleave count asks vputils::isUniformAcrossVFsAndUFs of each
        # recipe, which walks every path of that DAG. See tests/codegen/test_compile_time.py
        pto.loop_interleaving = False
        pto.loop_unrolling = LOOP_UNROLLING
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        mod.verify()
    return mod


def emit(module: ir.Module | str) -> ObjectCode:
    """Optimize (``optimize``) a module or its IR text and emit its object code, without the
    helper functions (HELPER_PREFIX) nothing calls any more: math functions' vector variants
    the loop vectorizer did not choose, or chose and inlined (the chain kernel's object code
    84 -> 69 KB, its code generation 158 -> 131 ms)."""
    mod = optimize(module)
    with LOCK:
        _drop_unused_helpers(mod)
        return ObjectCode(target_machine().emit_object(mod), str(mod))


def _drop_unused_helpers(mod: llvm.ModuleRef) -> None:
    """Make the helpers internal and let global dead-code elimination remove the unused; the
    caller holds LOCK."""
    helpers = [f for f in mod.functions
               if f.name.startswith(HELPER_PREFIX) and not f.is_declaration]
    if not helpers:
        return
    for f in helpers:
        f.linkage = llvm.Linkage.internal
    passes = llvm.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.run(mod, llvm.create_pass_builder(target_machine(),
                                             llvm.create_pipeline_tuning_options()))


def emit_as_written(module: ir.Module | str) -> ObjectCode:
    """Verify a module or its IR text and emit its object code without LLVM's IR passes but
    the inlining of ``alwaysinline`` functions (the code generator still optimizes at its own
    -O3): for IR written vector by vector and loop by loop, which the passes leave as fast as
    they found it. codegen.gemm's products: 172 -> 70 ms to compile, the same GFLOP/s on
    mlp_large's, gpt's and cnn's shapes (within 2 %); the native pool's loops 135 -> 39 ms."""
    tm = target_machine()
    with LOCK:
        mod = _parsed(module, tm)
        passes = llvm.create_new_module_pass_manager()
        passes.add_always_inliner_pass()
        passes.run(mod, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options()))
        return ObjectCode(tm.emit_object(mod), str(mod))
