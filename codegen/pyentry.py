"""Native entries called as Python builtins: a kernel's object entry or a product, wrapped in a
builtin function object (CPython's ``METH_FASTCALL`` convention) whose machine code hands the
argument array objects straight to the entry.

A plan's program calls a small kernel or product hundreds of times a step. Through ctypes a
call costs 1.0 to 1.5 us before the native code starts (a ``c_size_t`` array built from the
arguments' ids, then ctypes' argument conversion); a builtin costs what any C function call
does (``python -m benchmarks.handoff`` measures both, its (e)). The trampolines here are two
small functions of LLVM IR, compiled once per machine (then read from the compiled-code
cache's support store, as the pool's loops are): ``(self, args, nargs)`` reads its words from
``self``, a numpy int64 array (its data pointer at ``ARRAY_DATA_OFFSET``, as the kernels read
theirs), checks ``nargs``, releases the GIL as ctypes does, calls the entry and returns None.

A wrong argument count raises TypeError. Everything else the ctypes path left to its caller
stays there: the program checks each argument's type, shape and dtype before the call, as it
did (``planner.program``). Where this interpreter is not CPython, or its array objects do not
hold their data pointer where the trampolines read it (``llvm_emit.object_entry_ok``), ``available()``
is False and callers keep ctypes.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from codegen import target
from codegen.llvm_emit import ARRAY_DATA_OFFSET, object_entry_ok

METH_FASTCALL = 0x0080

# the words a trampoline reads from its self array, by index
_FN, _WORD, _NARGS, _SAVE, _RESTORE, _INCREF, _NONE, _SET_ERROR, _TYPE_ERROR, _MESSAGE = range(10)
_WORDS = 10

_PRELUDE = f"""
define private ptr @words(ptr %self) {{
  %field = getelementptr inbounds i8, ptr %self, i64 {ARRAY_DATA_OFFSET}
  %data = load ptr, ptr %field
  ret ptr %data
}}

define private i64 @word(ptr %data, i64 %i) {{
  %at = getelementptr inbounds i64, ptr %data, i64 %i
  %v = load i64, ptr %at
  ret i64 %v
}}

define private ptr @refuse(ptr %data) {{
  %set = call i64 @word(ptr %data, i64 {_SET_ERROR})
  %exc = call i64 @word(ptr %data, i64 {_TYPE_ERROR})
  %msg = call i64 @word(ptr %data, i64 {_MESSAGE})
  %set.fn = inttoptr i64 %set to ptr
  %exc.p = inttoptr i64 %exc to ptr
  %msg.p = inttoptr i64 %msg to ptr
  call void %set.fn(ptr %exc.p, ptr %msg.p)
  ret ptr null
}}

define private ptr @release(ptr %data) {{
  %save = call i64 @word(ptr %data, i64 {_SAVE})
  %save.fn = inttoptr i64 %save to ptr
  %state = call ptr %save.fn()
  ret ptr %state
}}

define private ptr @none(ptr %data, ptr %state) {{
  %restore = call i64 @word(ptr %data, i64 {_RESTORE})
  %restore.fn = inttoptr i64 %restore to ptr
  call void %restore.fn(ptr %state)
  %incref = call i64 @word(ptr %data, i64 {_INCREF})
  %none = call i64 @word(ptr %data, i64 {_NONE})
  %incref.fn = inttoptr i64 %incref to ptr
  %none.p = inttoptr i64 %none to ptr
  call void %incref.fn(ptr %none.p)
  ret ptr %none.p
}}
"""

# a kernel's object entry: fn(the argument objects' array, 0, outer)
_KERNEL = f"""
define ptr @entry_kernel(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %data = call ptr @words(ptr %self)
  %want = call i64 @word(ptr %data, i64 {_NARGS})
  %ok = icmp eq i64 %nargs, %want
  br i1 %ok, label %run, label %bad
run:
  %fn = call i64 @word(ptr %data, i64 {_FN})
  %outer = call i64 @word(ptr %data, i64 {_WORD})
  %fn.p = inttoptr i64 %fn to ptr
  %state = call ptr @release(ptr %data)
  call void %fn.p(ptr %args, i64 0, i64 %outer)
  %r = call ptr @none(ptr %data, ptr %state)
  ret ptr %r
bad:
  %e = call ptr @refuse(ptr %data)
  ret ptr %e
}}
"""

# a product (codegen.gemm): fn(a, b, c, e, the address of its words)
_PRODUCT = f"""
define ptr @entry_product(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %data = call ptr @words(ptr %self)
  %ok = icmp eq i64 %nargs, 4
  br i1 %ok, label %run, label %bad
run:
  %fn = call i64 @word(ptr %data, i64 {_FN})
  %dims = call i64 @word(ptr %data, i64 {_WORD})
  %fn.p = inttoptr i64 %fn to ptr
  %dims.p = inttoptr i64 %dims to ptr
  %a = load ptr, ptr %args
  %b.at = getelementptr inbounds ptr, ptr %args, i64 1
  %b = load ptr, ptr %b.at
  %c.at = getelementptr inbounds ptr, ptr %args, i64 2
  %c = load ptr, ptr %c.at
  %e.at = getelementptr inbounds ptr, ptr %args, i64 3
  %e = load ptr, ptr %e.at
  %state = call ptr @release(ptr %data)
  call void %fn.p(ptr %a, ptr %b, ptr %c, ptr %e, ptr %dims.p)
  %r = call ptr @none(ptr %data, ptr %state)
  ret ptr %r
bad:
  %x = call ptr @refuse(ptr %data)
  ret ptr %x
}}
"""


def ir_text() -> str:
    return _PRELUDE + _KERNEL + _PRODUCT


class _MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""
    _fields_ = [("ml_name", ctypes.c_void_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_void_p)]


class _Block(ctypes.Structure):
    """Everything a builtin made here points to, in one block that its self array keeps
    alive (the array's base): the trampoline's words, the method definition, its name and
    its error message."""
    _fields_ = [("words", ctypes.c_int64 * _WORDS), ("method", _MethodDef),
                ("name", ctypes.c_char * 64), ("message", ctypes.c_char * 192)]


@dataclass(frozen=True)
class _Code:
    engine: llvm.ExecutionEngine  # owns the trampolines' machine code
    kernel: int
    product: int
    api: tuple[int, int, int, int, int, int]  # save, restore, incref, None, set error, TypeError


_compiled: _Code | None = None
_lock = threading.Lock()


@functools.cache
def available() -> bool:
    """Whether builtins can be made here (CPython, with array objects as the kernels read
    them)."""
    return sys.implementation.name == "cpython" and object_entry_ok()


# where the trampolines' object code comes from: compiled here, unless codegen.cache has
# installed its disk-backed source (set_code_source), as importing codegen does (as for the
# pool's loops)
_code_source: Callable[[str], target.ObjectCode] = target.emit


def set_code_source(source: Callable[[str], target.ObjectCode]) -> None:
    """``source(ir_text)`` gives the trampolines' object code from now on."""
    global _code_source
    _code_source = source


def _code() -> _Code:
    """The trampolines: compiled once per machine (from the compiled-code cache's support
    store after that), loaded once per process."""
    global _compiled
    with _lock:
        if _compiled is None:
            code = _code_source(ir_text())
            with target.LOCK:
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""),
                                                    target.new_target_machine())
                engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_file))
                engine.finalize_object()
                kernel = engine.get_function_address("entry_kernel")
                product = engine.get_function_address("entry_product")
            if not kernel or not product:
                raise RuntimeError("the builtin trampolines are not in their object code")
            api = ctypes.pythonapi
            address = [ctypes.cast(getattr(api, name), ctypes.c_void_p).value
                       for name in ("PyEval_SaveThread", "PyEval_RestoreThread", "Py_IncRef",
                                    "PyErr_SetString")]
            type_error = id(ctypes.py_object.in_dll(api, "PyExc_TypeError").value)
            _compiled = _Code(engine, kernel, product,
                              (address[0], address[1], address[2], id(None), address[3],
                               type_error))
    return _compiled


_new_function = ctypes.pythonapi.PyCFunction_NewEx
_new_function.restype = ctypes.py_object
_new_function.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


def _builtin(trampoline: int, fn: int, word: int, nargs: int, name: str,
             holds: Any) -> Callable[..., None]:
    code = _code()
    block = _Block()
    block.name = name.encode()[:63]
    block.message = (f"{name}() takes exactly {nargs} arguments").encode()[:191]
    save, restore, incref, none, set_error, type_error = code.api
    block.words[:] = [fn, word, nargs, save, restore, incref, none, set_error, type_error,
                      ctypes.addressof(block) + _Block.message.offset]
    block.method.ml_name = ctypes.addressof(block) + _Block.name.offset
    block.method.ml_meth = trampoline
    block.method.ml_flags = METH_FASTCALL
    # the self array's base is the block: the builtin keeps its method definition alive
    words = np.frombuffer(block, dtype=np.int64, count=_WORDS)
    block.holds = (code, holds)  # the machine code it calls, for as long as it lives
    return _new_function(ctypes.addressof(block) + _Block.method.offset, words, None)


def kernel_builtin(fn: int, outer: int, nargs: int, name: str, holds: Any
                   ) -> Callable[..., None]:
    """``f(*arrays)``: the kernel object entry at address ``fn`` over the range
    ``0 .. outer``, given its ``nargs`` argument arrays (inputs, then outputs) as they are.
    ``holds``: what keeps ``fn``'s machine code alive (its module), kept as long as ``f``."""
    return _builtin(_code().kernel, fn, outer, nargs, name, holds)


def product_builtin(fn: int, dims: int, name: str, holds: Any) -> Callable[..., None]:
    """``f(a, b, c, e)``: the product entry at ``fn`` with its words at ``dims`` (``e``: the
    addend, or ``c`` where there is none). ``holds``: what keeps both alive."""
    return _builtin(_code().product, fn, dims, 4, name, holds)
