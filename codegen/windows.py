"""Sliding windows over images as generated code: ``unfold`` (im2col) and ``fold`` (col2im),
the two primitives convolutions and poolings are made of (``runtime.ops.conv``), and
``argmax``/``argmin`` along an axis (max pooling's pick of each window's first maximum) and
the sum along a middle axis (its sum over the window's taps).

numpy runs them as one strided copy (or accumulation) per kernel tap, each over arrays whose
inner axis is a few elements long: 2 to 5 ns an element, 0.8 ms of the cnn workload's 2.5 ms
step. Here each is a loop nest over planes (batch x channels), taps, output rows and output
columns, whose tables (each tap column's range of valid output columns, each tap row's input
row per output row, -1 in the padding) the caller computes once per geometry: the inner loop
is a plain copy or accumulation over the valid columns, with the padding value written
around it.

The results are numpy's bits: ``unfold`` copies (padding cells get the pad value cast to the
dtype, as ``np.pad`` does); ``fold`` starts each plane from zeros and adds the taps in their
order, as numpy's ``+=`` per tap does, or assigns where windows do not overlap (``disjoint``:
numpy assigns there too, which keeps a -0.0). Cells that fall in the padding are dropped, as
numpy's crop drops them.

numpy's argmax along an axis other than the last copies the array first, then scans rows as
short as the axis (175 us for a (64, 8, 4, 16) float32 array, 12 here): the generated one
keeps the best value so far of each position in a scratch row and walks the axis over it.
The sum along such an axis likewise (64 and 85 us in numpy for max pooling's two sums over
taps in the cnn workload, 4 and 14 here), in numpy's order: from +0.0, term by term.

An embedding's backward (``index_backward`` picking rows) adds each row of the gradient
into zeros at its index, in order (``np.add.at``'s bits): 0.7 ms of the gpt workload's step
through numpy's sort and segment sums for 1024 rows of 128 (two embeddings), 20 us here.

The code holds no geometry: one small module per function and dtype, compiled once per
machine when a plan first calls it (0.04 to 0.07 s; then read from the compiled-code cache's
support store) and loaded once per process. Its functions take the product entry's ABI
(``codegen.gemm``: four array objects and the address of their words, data pointers read at
``ARRAY_DATA_OFFSET``), so they are called as builtins
(``codegen.pyentry.product_builtin``): ``f(source, dest, scratch, _)`` (the scratch row only
for argmax/argmin; else any array). The caller guarantees C-contiguous arrays of the
geometry's shapes and the dtype.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from codegen import target
from codegen.llvm_emit import ARRAY_DATA_OFFSET

_I64 = ir.IntType(64)
_PTR = ir.PointerType(ir.IntType(8))
_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}

# the fixed words, then the tables: lo[kw], hi[kw], column offset[kw], input row[kh * oh]
(_PLANES, _H, _W, _KH, _KW, _OH, _OW, _SW, _DISJOINT, _PAD) = range(10)
_FIXED = 10


@dataclass(frozen=True)
class Geometry:
    """One unfold/fold geometry: input planes of (h, w), a (kh, kw) kernel with its dilation,
    padding (top, bottom, left, right) and stride, and its (oh, ow) output positions."""

    planes: int
    h: int
    w: int
    kernel: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]
    stride: tuple[int, int]
    out: tuple[int, int]

    @property
    def disjoint(self) -> bool:
        """Windows that do not overlap (a pooling's usual stride = kernel)."""
        return all(s >= d * (k - 1) + 1 for s, d, k in zip(self.stride, self.dilation,
                                                            self.kernel))

    def words(self, pad_value: float = 0.0) -> ctypes.Array:
        kh, kw = self.kernel
        oh, ow = self.out
        (dh, dw), (sh, sw) = self.dilation, self.stride
        top, left = self.padding[0], self.padding[2]
        lo, hi, base = [], [], []
        for j in range(kw):
            start = j * dw - left  # input column of output column 0
            first = next((x for x in range(ow) if 0 <= start + x * sw), ow)
            last = max((x + 1 for x in range(ow) if start + x * sw < self.w), default=0)
            lo.append(first)
            hi.append(max(first, last))
            base.append(start)
        rows = [(r if 0 <= (r := oy * sh + i * dh - top) < self.h else -1)
                for i in range(kh) for oy in range(oh)]
        pad = struct.unpack("<q", struct.pack("<d", float(pad_value)))[0]
        words = [self.planes, self.h, self.w, kh, kw, oh, ow, sw, int(self.disjoint), pad,
                 *lo, *hi, *base, *rows]
        return (ctypes.c_int64 * len(words))(*words)


def _loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value,
          body: Callable[[ir.Value], None]) -> None:
    """``for i in range(start, stop): body(i)`` at the builder's position."""
    pre = b.block
    head = b.append_basic_block("head")
    inside = b.append_basic_block("body")
    after = b.append_basic_block("after")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I64)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, stop), inside, after)
    b.position_at_end(inside)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(_I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(after)


class _Function:
    """A function of the product entry's ABI: (source, dest, _, _, words)."""

    def __init__(self, module: ir.Module, name: str, dtype: str, scratch: bool = False
                 ) -> None:
        self.t = _TYPES[dtype]
        tp = self.t.as_pointer()
        # the entry reads the data pointers and calls the body, whose arguments are noalias
        # (source, destination, scratch and words never overlap): inlined, LLVM keeps that
        # knowledge, so it hoists the words' loads out of the loops and vectorizes the copies
        body = ir.Function(module, ir.FunctionType(ir.VoidType(), [tp, tp, tp, _PTR]),
                           name=name + ".body")
        body.linkage = "internal"
        body.attributes.add("nounwind")
        body.attributes.add("alwaysinline")
        for arg in body.args:
            arg.add_attribute("noalias")
        entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR] * 5), name=name)
        entry.attributes.add("nounwind")
        eb = ir.IRBuilder(entry.append_basic_block("entry"))
        src_obj, dst_obj, scratch_obj, _, words = entry.args
        third = self._data(eb, scratch_obj, tp) if scratch else ir.Constant(tp, None)
        eb.call(body, [self._data(eb, src_obj, tp), self._data(eb, dst_obj, tp), third, words])
        eb.ret_void()
        self.b = ir.IRBuilder(body.append_basic_block("entry"))
        self.src, self.dst, self.scratch, self.words = body.args

    @staticmethod
    def _data(b: ir.IRBuilder, obj: ir.Value, tp: ir.Type) -> ir.Value:
        field = b.gep(obj, [ir.Constant(_I64, ARRAY_DATA_OFFSET)])
        return b.bitcast(b.load(b.bitcast(field, _PTR.as_pointer())), tp)

    def word(self, i: int | ir.Value) -> ir.Value:
        b = self.b
        at = b.gep(b.bitcast(self.words, _I64.as_pointer()),
                   [ir.Constant(_I64, i) if isinstance(i, int) else i])
        return b.load(at)

    def table(self, first: int, index: ir.Value) -> ir.Value:
        """Word ``first + index`` (``first`` counted past the fixed words and the kw and kh
        sizes, which it is given as IR values)."""
        return self.word(self.b.add(ir.Constant(_I64, first), index))

    def at(self, base: ir.Value, index: ir.Value) -> ir.Value:
        return self.b.gep(base, [index])


def _walk(f: _Function, visit: Callable[[ir.Value, ir.Value, ir.Value, ir.Value, ir.Value,
                                         ir.Value, ir.Value], None],
          plane_start: Callable[[ir.Value], None]) -> None:
    """Every (plane, tap (i, j), output row) with its tables' values: ``visit(plane, tap,
    row of the input (-1: padding), lo, hi, column offset, output row)``."""
    b = f.b
    planes, kh, kw, oh = f.word(_PLANES), f.word(_KH), f.word(_KW), f.word(_OH)
    zero = ir.Constant(_I64, 0)
    lo_at = ir.Constant(_I64, _FIXED)
    hi_at = b.add(lo_at, kw)
    base_at = b.add(hi_at, kw)
    rows_at = b.add(base_at, kw)

    def plane(p: ir.Value) -> None:
        plane_start(p)

        def tap_row(i: ir.Value) -> None:
            def tap_column(j: ir.Value) -> None:
                tap = b.add(b.mul(i, kw), j)
                lo = f.word(b.add(lo_at, j))
                hi = f.word(b.add(hi_at, j))
                base = f.word(b.add(base_at, j))

                def out_row(oy: ir.Value) -> None:
                    row = f.word(b.add(rows_at, b.add(b.mul(i, oh), oy)))
                    visit(p, tap, row, lo, hi, base, oy)

                _loop(b, zero, oh, out_row)

            _loop(b, zero, kw, tap_column)

        _loop(b, zero, kh, tap_row)

    _loop(b, zero, planes, plane)


def _unfold(module: ir.Module, dtype: str) -> None:
    f = _Function(module, f"unfold.{dtype}", dtype)
    b = f.b
    h, w, kh, kw, oh, ow, sw = (f.word(i) for i in (_H, _W, _KH, _KW, _OH, _OW, _SW))
    pad = b.bitcast(f.word(_PAD), ir.DoubleType())
    if f.t != ir.DoubleType():
        pad = b.fptrunc(pad, f.t)
    zero = ir.Constant(_I64, 0)

    def visit(p: ir.Value, tap: ir.Value, row: ir.Value, lo: ir.Value, hi: ir.Value,
              base: ir.Value, oy: ir.Value) -> None:
        # cols[p, tap, oy, :] from the input's row ``row`` of plane p
        taps = b.mul(kh, kw)
        dst = f.at(f.dst, b.mul(b.add(b.mul(b.add(b.mul(p, taps), tap), oh), oy), ow))
        valid = b.icmp_signed(">=", row, zero)
        start = b.select(valid, lo, ow)  # a padding row: pad values only
        stop = b.select(valid, hi, ow)
        fill = lambda x: b.store(pad, f.at(dst, x))  # noqa: E731
        _loop(b, zero, start, fill)
        src = f.at(f.src, b.add(b.mul(b.add(b.mul(p, h), row), w), base))
        _loop(b, start, stop, lambda x: b.store(b.load(f.at(src, b.mul(x, sw))), f.at(dst, x)))
        _loop(b, stop, ow, fill)

    _walk(f, visit, lambda p: None)
    b.ret_void()


def _fold(module: ir.Module, dtype: str) -> None:
    f = _Function(module, f"fold.{dtype}", dtype)
    b = f.b
    h, w, kh, kw, oh, ow, sw = (f.word(i) for i in (_H, _W, _KH, _KW, _OH, _OW, _SW))
    disjoint = b.icmp_signed("!=", f.word(_DISJOINT), ir.Constant(_I64, 0))
    zero = ir.Constant(_I64, 0)
    area = b.mul(h, w)

    def clear(p: ir.Value) -> None:
        plane = f.at(f.dst, b.mul(p, area))
        _loop(b, zero, area, lambda x: b.store(ir.Constant(f.t, 0.0), f.at(plane, x)))

    def visit(p: ir.Value, tap: ir.Value, row: ir.Value, lo: ir.Value, hi: ir.Value,
              base: ir.Value, oy: ir.Value) -> None:
        # out[p, row, :] += cols[p, tap, oy, :] over the valid columns
        taps = b.mul(kh, kw)
        src = f.at(f.src, b.mul(b.add(b.mul(b.add(b.mul(p, taps), tap), oh), oy), ow))
        valid = b.icmp_signed(">=", row, zero)
        stop = b.select(valid, hi, lo)  # a padding row: nothing lands in the output
        dst = f.at(f.dst, b.add(b.mul(b.add(b.mul(p, h), row), w), base))

        def cell(x: ir.Value) -> None:
            at = f.at(dst, b.mul(x, sw))
            v = b.load(f.at(src, x))
            b.store(b.select(disjoint, v, b.fadd(b.load(at), v)), at)

        _loop(b, lo, stop, cell)

    _walk(f, visit, clear)
    b.ret_void()


def _argbest(module: ir.Module, dtype: str, op: str) -> None:
    """argmax (or argmin) along the middle axis of (outer, K, inner): numpy's index of the
    first maximum (minimum), the first NaN where there is one. The words are (outer, K,
    inner); the third array is a scratch row of ``inner`` values (the best so far), so the
    loop over a row runs over contiguous elements."""
    f = _Function(module, f"{op}.{dtype}", dtype, scratch=True)
    b = f.b
    outer, taps, inner = (f.word(i) for i in range(3))
    zero, one = ir.Constant(_I64, 0), ir.Constant(_I64, 1)
    index = b.bitcast(f.dst, _I64.as_pointer())
    better = ">" if op == "argmax" else "<"

    def row(o: ir.Value) -> None:
        base = f.at(f.src, b.mul(o, b.mul(taps, inner)))
        out = b.gep(index, [b.mul(o, inner)])

        def first(i: ir.Value) -> None:
            b.store(b.load(f.at(base, i)), f.at(f.scratch, i))
            b.store(zero, b.gep(out, [i]))

        _loop(b, zero, inner, first)

        def tap(k: ir.Value) -> None:
            values = f.at(base, b.mul(k, inner))

            def cell(i: ir.Value) -> None:
                v = b.load(f.at(values, i))
                at = f.at(f.scratch, i)
                best = b.load(at)
                # ordered comparisons are false with a NaN: a NaN replaces a number once
                take = b.or_(b.fcmp_ordered(better, v, best),
                             b.and_(b.fcmp_unordered("uno", v, v),
                                    b.fcmp_ordered("ord", best, best)))
                b.store(b.select(take, v, best), at)
                where = b.gep(out, [i])
                b.store(b.select(take, k, b.load(where)), where)

            _loop(b, zero, inner, cell)

        _loop(b, one, taps, tap)

    _loop(b, zero, outer, row)
    b.ret_void()


def _sum_axis(module: ir.Module, dtype: str) -> None:
    """The sum along the middle axis of (outer, K, inner), inner >= 2: each output starts at
    +0.0 and adds the terms in order, as numpy's reduction over an axis that is not the
    innermost does (from add's identity: a sum of -0.0s is +0.0). The words are (outer, K,
    inner)."""
    f = _Function(module, f"sum.{dtype}", dtype)
    b = f.b
    outer, taps, inner = (f.word(i) for i in range(3))
    zero = ir.Constant(_I64, 0)

    def row(o: ir.Value) -> None:
        base = f.at(f.src, b.mul(o, b.mul(taps, inner)))
        out = f.at(f.dst, b.mul(o, inner))
        _loop(b, zero, inner, lambda i: b.store(ir.Constant(f.t, 0.0), f.at(out, i)))

        def tap(k: ir.Value) -> None:
            values = f.at(base, b.mul(k, inner))

            def cell(i: ir.Value) -> None:
                at = f.at(out, i)
                b.store(b.fadd(b.load(at), b.load(f.at(values, i))), at)

            _loop(b, zero, inner, cell)

        _loop(b, zero, taps, tap)

    _loop(b, zero, outer, row)
    b.ret_void()


def _scatter_rows(module: ir.Module, dtype: str) -> None:
    """An embedding's backward: ``dest`` (n, row) zeroed, then row ``i`` of ``source``
    (rows, row) added to row ``index[i]`` (a negative index counts from the end) for i in
    order, as ``np.add.at`` does: each destination row starts at +0.0 and takes its rows in
    their order. The words are (rows, n, row); the third array is the int64 index, every
    entry in [-n, n) (the caller checks)."""
    f = _Function(module, f"scatter.{dtype}", dtype, scratch=True)
    b = f.b
    rows, n, width = (f.word(i) for i in range(3))
    zero = ir.Constant(_I64, 0)
    index = b.bitcast(f.scratch, _I64.as_pointer())
    _loop(b, zero, b.mul(n, width), lambda i: b.store(ir.Constant(f.t, 0.0), f.at(f.dst, i)))

    def row(i: ir.Value) -> None:
        r = b.load(b.gep(index, [i]))
        r = b.select(b.icmp_signed("<", r, zero), b.add(r, n), r)
        values = f.at(f.src, b.mul(i, width))
        out = f.at(f.dst, b.mul(r, width))

        def cell(j: ir.Value) -> None:
            at = f.at(out, j)
            b.store(b.fadd(b.load(at), b.load(f.at(values, j))), at)

        _loop(b, zero, width, cell)

    _loop(b, zero, rows, row)
    b.ret_void()


_RENDER = {"unfold": _unfold, "fold": _fold, "sum": _sum_axis, "scatter": _scatter_rows,
           "argmax": functools.partial(_argbest, op="argmax"),
           "argmin": functools.partial(_argbest, op="argmin")}


def render(name: str) -> str:
    """The IR text of one function, ``OP.DTYPE`` (unfold, fold, sum, scatter, argmax or argmin
    of float32 or float64): a module of its own, so a plan compiles only the ones it calls."""
    op, dtype = name.split(".")
    module = ir.Module(name=name)
    _RENDER[op](module, dtype)
    return str(module)


@dataclass(frozen=True)
class _Code:
    engine: llvm.ExecutionEngine  # owns the function's machine code
    address: int


_compiled: dict[str, _Code] = {}
_lock = threading.Lock()


def _code(name: str) -> _Code:
    """Function ``name``'s machine code: compiled once per machine (0.04 to 0.07 s), then read
    from the compiled-code cache's support store; loaded once per process."""
    with _lock:
        found = _compiled.get(name)
        if found is None:
            from codegen.cache import support_code

            code = support_code(f"windows.{name}", functools.partial(render, name),
                                target.emit, version=_source_digest())
            with target.LOCK:
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""),
                                                    target.new_target_machine())
                engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_file))
                engine.finalize_object()
                address = engine.get_function_address(name)
            if not address:
                raise RuntimeError(f"{name} is not in its object code")
            found = _compiled[name] = _Code(engine, address)
    return found


@functools.cache
def _source_digest() -> str:
    """What every function's IR is made from: this module's source (the cache key's
    generator hash covers the emitter's constants). Rendering the IR takes 5 to 7 ms a
    function, which a process finding it in the cache need not spend."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _builtin(name: str, words: ctypes.Array) -> Callable[..., None]:
    from codegen import pyentry

    code = _code(name)
    return pyentry.product_builtin(code.address, ctypes.addressof(words), name, (code, words))


@dataclass(frozen=True)
class NativeForm:
    """How native code calls a function here directly (``planner.native``'s runs): its
    address and words, the product ABI's four arrays by role ("in": the C-contiguous source,
    "out": the result of the step's planned shape, "scratch": a row of ``scratch``'s
    (count, dtype)), and what keeps the code and words alive."""

    address: int
    words: int
    roles: tuple[str, str, str, str]
    scratch: tuple[int, np.dtype] | None
    holds: object


def _with_native(fn: Callable[..., np.ndarray], name: str, words: ctypes.Array,
                 roles: tuple[str, str, str, str],
                 scratch: tuple[int, np.dtype] | None = None) -> Callable[..., np.ndarray]:
    code = _code(name)
    fn.native = NativeForm(code.address, ctypes.addressof(words), roles,  # type: ignore
                           scratch, (code, words))
    return fn


@functools.cache
def available() -> bool:
    from codegen import pyentry

    return pyentry.available()


def supports(dtype: np.dtype) -> bool:
    return np.dtype(dtype).name in _TYPES and available()


def unfolder(geometry: Geometry, dtype: np.dtype, pad_value: float
             ) -> Callable[[np.ndarray], np.ndarray]:
    """``f(x)``: the columns (n, c * kh * kw, oh * ow) of ``x`` (n, c, h, w) of ``dtype``,
    n * c = geometry.planes."""
    words = geometry.words(pad_value)
    call = _builtin(f"unfold.{np.dtype(dtype).name}", words)
    kh, kw = geometry.kernel
    length = math.prod(geometry.out)

    def unfold(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        n, c = x.shape[:2]
        cols = np.empty((n, c * kh * kw, length), x.dtype)
        call(x, cols, cols, cols)
        return cols

    return _with_native(unfold, f"unfold.{np.dtype(dtype).name}", words,
                        ("in", "out", "out", "out"))


def folder(geometry: Geometry, dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
    """``f(cols)``: the sums (n, c, h, w) of the columns (n, c * kh * kw, oh * ow) of
    ``dtype`` back at their input positions, n * c = geometry.planes."""
    words = geometry.words()
    call = _builtin(f"fold.{np.dtype(dtype).name}", words)
    kh, kw = geometry.kernel
    h, w = geometry.h, geometry.w

    def fold(cols: np.ndarray) -> np.ndarray:
        cols = np.ascontiguousarray(cols)
        n = cols.shape[0]
        out = np.empty((n, cols.shape[1] // (kh * kw), h, w), cols.dtype)
        call(cols, out, out, out)
        return out

    return _with_native(fold, f"fold.{np.dtype(dtype).name}", words,
                        ("in", "out", "out", "out"))


def arg_reducer(op: str, shape: tuple[int, ...], axis: int, dtype: np.dtype, keepdim: bool
                ) -> Callable[[np.ndarray], np.ndarray]:
    """``f(x)``: numpy's ``argmax`` (``op``; or ``argmin``) of ``x`` of ``shape`` and
    ``dtype`` along ``axis``, as int64 (with the axis kept as 1 where ``keepdim``)."""
    outer, taps, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    words = (ctypes.c_int64 * 3)(outer, taps, inner)
    call = _builtin(f"{op}.{np.dtype(dtype).name}", words)
    out_shape = shape[:axis] + ((1,) if keepdim else ()) + shape[axis + 1:]
    dtype = np.dtype(dtype)

    def reduce(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        out = np.empty(out_shape, np.int64)
        call(x, out, np.empty(inner, dtype), x)
        return out

    return _with_native(reduce, f"{op}.{dtype.name}", words, ("in", "out", "scratch", "in"),
                        (inner, dtype))


def axis_summer(shape: tuple[int, ...], axis: int, dtype: np.dtype, keepdim: bool
                ) -> Callable[[np.ndarray], np.ndarray]:
    """``f(x)``: numpy's sum of ``x`` of ``shape`` and ``dtype`` along ``axis``, an axis
    with at least two elements after it (numpy's bits: see ``_sum_axis``)."""
    outer, taps, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    if inner < 2:
        raise ValueError("axis_summer: the axis must have two or more elements after it")
    words = (ctypes.c_int64 * 3)(outer, taps, inner)
    call = _builtin(f"sum.{np.dtype(dtype).name}", words)
    out_shape = shape[:axis] + ((1,) if keepdim else ()) + shape[axis + 1:]

    def reduce(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        out = np.empty(out_shape, x.dtype)
        call(x, out, out, out)
        return out

    return _with_native(reduce, f"sum.{np.dtype(dtype).name}", words,
                        ("in", "out", "out", "out"))


@functools.lru_cache(maxsize=64)
def row_scatterer(rows: int, n: int, width: int, dtype: np.dtype
                  ) -> Callable[[np.ndarray, np.ndarray], np.ndarray | None]:
    """``f(g, index)``: zeros (n, width) of ``dtype`` with row ``i`` of ``g`` (rows, width)
    added to row ``index[i]`` (rows int64, negatives from the end), ``np.add.at``'s bits; None
    where an index is out of range (the caller raises numpy's error) or an argument is not a
    C-contiguous array of these shapes and dtypes. Kept per geometry: eager mode's embedding
    backward asks for one every step (9 us to make, 16 to run for gpt's 1024 rows of 128)."""
    dtype = np.dtype(dtype)
    words = (ctypes.c_int64 * 3)(rows, n, width)
    call = _builtin(f"scatter.{dtype.name}", words)
    out_shape, i64 = (n, width), np.dtype(np.int64)

    def scatter(g: np.ndarray, index: np.ndarray) -> np.ndarray | None:
        if (g.dtype != dtype or index.dtype != i64 or not g.flags.c_contiguous
                or not index.flags.c_contiguous or g.size != rows * width
                or index.size != rows):
            return None
        if rows and (index.max() >= n or index.min() < -n):
            return None
        out = np.empty(out_shape, dtype)
        call(g, out, index, out)
        return out

    return scatter
