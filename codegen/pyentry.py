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
import platform
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


# a run of kernels and products (``drive_builtin``): the call's argument objects are copied
# into the first slots, then each record of the table at _FN, ``kind, fn, word, n, n slot
# indices``, calls a kernel's object entry (kind 0: fn(its arguments' objects, 0, word)), a
# product (kind 1: fn(a, b, c, e, word)) or a check (kind 2: fn(its arguments' objects,
# word), whose non-zero result ends the run there) with the objects of those slots, one
# after another, the GIL released once for them all. The table starts with its record count
# and the address of room for the largest record's objects.
_DRIVE = f"""
define ptr @entry_drive(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %data = call ptr @words(ptr %self)
  %want = call i64 @word(ptr %data, i64 {_NARGS})
  %ok = icmp eq i64 %nargs, %want
  br i1 %ok, label %copy, label %bad
copy:
  %table.i = call i64 @word(ptr %data, i64 {_FN})
  %slots.i = call i64 @word(ptr %data, i64 {_WORD})
  %table = inttoptr i64 %table.i to ptr
  %slots = inttoptr i64 %slots.i to ptr
  br label %copy.cond
copy.cond:
  %i = phi i64 [0, %copy], [%i.next, %copy.body]
  %more = icmp slt i64 %i, %nargs
  br i1 %more, label %copy.body, label %start
copy.body:
  %from = getelementptr inbounds ptr, ptr %args, i64 %i
  %object = load ptr, ptr %from
  %to = getelementptr inbounds ptr, ptr %slots, i64 %i
  store ptr %object, ptr %to
  %i.next = add i64 %i, 1
  br label %copy.cond
start:
  %state = call ptr @release(ptr %data)
  %count = load i64, ptr %table
  %room.at = getelementptr inbounds i64, ptr %table, i64 1
  %room.i = load i64, ptr %room.at
  %room = inttoptr i64 %room.i to ptr
  %first = getelementptr inbounds i64, ptr %table, i64 2
  br label %loop
loop:
  %r = phi i64 [0, %start], [%r.next, %called]
  %p = phi ptr [%first, %start], [%p.next, %called]
  %go = icmp slt i64 %r, %count
  br i1 %go, label %record, label %done
record:
  %kind = load i64, ptr %p
  %fn.at = getelementptr inbounds i64, ptr %p, i64 1
  %fn.i = load i64, ptr %fn.at
  %fn = inttoptr i64 %fn.i to ptr
  %w.at = getelementptr inbounds i64, ptr %p, i64 2
  %w = load i64, ptr %w.at
  %n.at = getelementptr inbounds i64, ptr %p, i64 3
  %n = load i64, ptr %n.at
  %indices = getelementptr inbounds i64, ptr %p, i64 4
  br label %gather
gather:
  %j = phi i64 [0, %record], [%j.next, %gather.body]
  %gmore = icmp slt i64 %j, %n
  br i1 %gmore, label %gather.body, label %dispatch
gather.body:
  %index.at = getelementptr inbounds i64, ptr %indices, i64 %j
  %index = load i64, ptr %index.at
  %slot = getelementptr inbounds ptr, ptr %slots, i64 %index
  %item = load ptr, ptr %slot
  %put = getelementptr inbounds ptr, ptr %room, i64 %j
  store ptr %item, ptr %put
  %j.next = add i64 %j, 1
  br label %gather
dispatch:
  %is.kernel = icmp eq i64 %kind, 0
  br i1 %is.kernel, label %kernel, label %other
other:
  %is.check = icmp eq i64 %kind, 2
  br i1 %is.check, label %check, label %product
kernel:
  call void %fn(ptr %room, i64 0, i64 %w)
  br label %called
check:
  %failed = call i64 %fn(ptr %room, i64 %w)
  %stop = icmp ne i64 %failed, 0
  br i1 %stop, label %done, label %called
product:
  %a = load ptr, ptr %room
  %b.at = getelementptr inbounds ptr, ptr %room, i64 1
  %b = load ptr, ptr %b.at
  %c.at = getelementptr inbounds ptr, ptr %room, i64 2
  %c = load ptr, ptr %c.at
  %e.at = getelementptr inbounds ptr, ptr %room, i64 3
  %e = load ptr, ptr %e.at
  %dims = inttoptr i64 %w to ptr
  call void %fn(ptr %a, ptr %b, ptr %c, ptr %e, ptr %dims)
  br label %called
called:
  %skip = add i64 %n, 4
  %p.next = getelementptr inbounds i64, ptr %p, i64 %skip
  %r.next = add i64 %r, 1
  br label %loop
done:
  %res = call ptr @none(ptr %data, ptr %state)
  ret ptr %res
bad:
  %x = call ptr @refuse(ptr %data)
  ret ptr %x
}}
"""

KERNEL, PRODUCT, CHECK = 0, 1, 2  # a drive record's kinds

# a check of class indices (the check_bounds primitive over int64: ``check_words``): with
# words ``n, low, high, flag`` (high inclusive), whether an element of the C-contiguous
# array of n int64 is outside [low, high], written to ``flag`` (1 or 0) and returned: a
# drive record of kind CHECK ends its run where it is 1
_CHECK = f"""
define i64 @check_bounds_i64(ptr %room, i64 %w) {{
entry:
  %object = load ptr, ptr %room
  %x.field = getelementptr inbounds i8, ptr %object, i64 {ARRAY_DATA_OFFSET}
  %x = load ptr, ptr %x.field
  %words = inttoptr i64 %w to ptr
  %n = load i64, ptr %words
  %low.at = getelementptr inbounds i64, ptr %words, i64 1
  %low = load i64, ptr %low.at
  %high.at = getelementptr inbounds i64, ptr %words, i64 2
  %high = load i64, ptr %high.at
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i.next, %body]
  %bad = phi i64 [0, %entry], [%bad.next, %body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %end
body:
  %at = getelementptr inbounds i64, ptr %x, i64 %i
  %v = load i64, ptr %at
  %below = icmp slt i64 %v, %low
  %above = icmp sgt i64 %v, %high
  %out = or i1 %below, %above
  %out.i = zext i1 %out to i64
  %bad.next = or i64 %bad, %out.i
  %i.next = add i64 %i, 1
  br label %loop
end:
  %flag.at = getelementptr inbounds i64, ptr %words, i64 3
  store i64 %bad, ptr %flag.at
  ret i64 %bad
}}
"""

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def check_words(n: int, low: int, high: int) -> np.ndarray | None:
    """The words of a CHECK record testing n int64 values for [low, high) (Python ints: a
    bound past int64's range is no bound), its flag last; None where no int64 is in range
    (the check fails whenever there is an element: left to Python)."""
    low, last = max(low, INT64_MIN), min(high - 1, INT64_MAX)
    if low > last:
        return None
    return np.array([n, low, last, 0], np.int64)


# codegen.allocator's numpy allocation functions live in this module (every process that
# makes builtins loads it: the allocator costs no engine of its own): ``malloc`` takes an
# allocation of ALIGNED_FROM bytes or more from posix_memalign, ALIGNMENT-aligned, a smaller
# one from malloc; calloc, realloc and free are glibc's (free releases either kind)
ALIGNMENT = 64  # a cache line, and an AVX-512 vector
ALIGNED_FROM = 4096  # smaller allocations stay malloc's (their lines are few)
ALLOCATOR_IR = f"""
declare i32 @posix_memalign(ptr, i64, i64)
declare ptr @malloc(i64)
declare ptr @calloc(i64, i64)
declare ptr @realloc(ptr, i64)
declare void @free(ptr)

define ptr @backplan_malloc(ptr %ctx, i64 %size) nounwind {{
entry:
  %slot = alloca ptr, align 8
  %big = icmp uge i64 %size, {ALIGNED_FROM}
  br i1 %big, label %aligned, label %plain
aligned:
  %failed = call i32 @posix_memalign(ptr %slot, i64 {ALIGNMENT}, i64 %size)
  %ok = icmp eq i32 %failed, 0
  %got = load ptr, ptr %slot, align 8
  %result = select i1 %ok, ptr %got, ptr null
  ret ptr %result
plain:
  %small = call ptr @malloc(i64 %size)
  ret ptr %small
}}

define ptr @backplan_calloc(ptr %ctx, i64 %n, i64 %size) nounwind {{
  %p = call ptr @calloc(i64 %n, i64 %size)
  ret ptr %p
}}

define ptr @backplan_realloc(ptr %ctx, ptr %p, i64 %size) nounwind {{
  %q = call ptr @realloc(ptr %p, i64 %size)
  ret ptr %q
}}

define void @backplan_free(ptr %ctx, ptr %p, i64 %size) nounwind {{
  call void @free(ptr %p)
  ret void
}}
"""


@functools.cache
def glibc() -> bool:
    """Whether the process runs on glibc (posix_memalign, and free of what it returns): only
    there does the module hold the allocation functions."""
    return sys.platform == "linux" and platform.libc_ver()[0] == "glibc"


def ir_text() -> str:
    return _PRELUDE + _KERNEL + _PRODUCT + _DRIVE + _CHECK + (ALLOCATOR_IR if glibc() else "")


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
    drive: int
    check: int  # check_bounds_i64
    api: tuple[int, int, int, int, int, int]  # save, restore, incref, None, set error, TypeError
    # ALLOCATOR_IR's malloc, calloc, realloc and free (zeros where not compiled in)
    allocator: tuple[int, ...]


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


SUPPORT_NAME = "pyentry"  # the trampolines' name in the compiled-code cache's support store


def loaded() -> bool:
    """Whether this process has loaded the trampolines."""
    return _compiled is not None


def _code() -> _Code:
    """The trampolines: compiled once per machine (from the compiled-code cache's support
    store after that), loaded once per process."""
    global _compiled
    with _lock:
        if _compiled is None:
            code = _code_source(ir_text())
            with target.LOCK:
                engine, found = target.load_support(
                    code.object_file, "entry_kernel", "entry_product", "entry_drive",
                    "check_bounds_i64",
                    *(f"backplan_{f}" for f in ("malloc", "calloc", "realloc", "free")))
                kernel, product, drive, check = found[:4]
                allocator = tuple(found[4:])
            if not kernel or not product or not drive or not check:
                raise RuntimeError("the builtin trampolines are not in their object code")
            api = ctypes.pythonapi
            address = [ctypes.cast(getattr(api, name), ctypes.c_void_p).value
                       for name in ("PyEval_SaveThread", "PyEval_RestoreThread", "Py_IncRef",
                                    "PyErr_SetString")]
            type_error = id(ctypes.py_object.in_dll(api, "PyExc_TypeError").value)
            _compiled = _Code(engine, kernel, product, drive, check,
                              (address[0], address[1], address[2], id(None), address[3],
                               type_error), allocator)
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


def check_entry() -> int:
    """The address of ``check_bounds_i64`` (a drive record of kind CHECK calls it)."""
    return _code().check


def drive_builtin(records: np.ndarray, slots: np.ndarray, nargs: int, name: str, holds: Any
                  ) -> Callable[..., None]:
    """``f(*arrays)``: the run of kernels and products that ``records`` (int64 words:
    the record count, the address of room for the largest record's objects, then per record
    ``kind, fn, word, n`` and ``n`` indices into ``slots``) describes, with the ``nargs``
    argument objects copied into ``slots[:nargs]`` first; the other slots hold the addresses
    of objects ``holds`` keeps alive, as it keeps the records, the slots, the room and the
    entries' machine code. The caller guarantees what each entry needs of its arrays (as a
    plan's generated program does for each kernel and product) and that no two calls run at
    once: the slots are shared."""
    if records.dtype != np.int64 or slots.dtype != np.int64 or not (
            records.flags.c_contiguous and slots.flags.c_contiguous):
        raise TypeError("drive records and slots are C-contiguous int64 arrays")
    if nargs > len(slots):
        raise ValueError(f"{nargs} arguments do not fit {len(slots)} slots")
    return _builtin(_code().drive, records.ctypes.data, slots.ctypes.data, nargs, name,
                    (records, slots, holds))
