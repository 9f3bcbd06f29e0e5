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

Where a geometry's output rows are shorter than a vector (a small image: cnn's 4x4 and 8x8
planes, rows of 2 to 8) or its windows are disjoint (a pooling), the per-row loops spend
more on their bounds than on the copy: those geometries go through an index table instead
(``Geometry.uses_tables``). ``unfold_gather`` fills each plane's block of columns a vector
at a time, each lane gathered from the plane at its table entry (the pad value where the
entry is -1); ``fold_gather`` makes each plane a vector of positions at a time, from +0.0
adding the gathered contributions in tap order (a table layer per contribution: at most
one per tap), or assigning the one contribution of disjoint windows. The same bits as the
loops; the cnn workload's seven windows 2.5 to 4x faster (8 to 18 us each).

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
from codegen.llvm_math import lanes

_I64 = ir.IntType(64)
_PTR = ir.PointerType(ir.IntType(8))
_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}

# the fixed words, then the tables: lo[kw], hi[kw], column offset[kw], input row[kh * oh]
(_PLANES, _H, _W, _KH, _KW, _OH, _OW, _SW, _DISJOINT, _PAD) = range(10)
_FIXED = 10
# the most entries an index table may have (``Geometry.uses_tables``: 512 KiB of int32)
TABLE_ENTRIES = 1 << 17
# the gathering functions' fixed words, then their int32 table
_GATHER_WORDS = ("planes", "area", "count", "depth", "disjoint", "padbits", "layer_size")


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
        words = [self.planes, self.h, self.w, kh, kw, oh, ow, sw, int(self.disjoint),
                 _bits(pad_value), *lo, *hi, *base, *rows]
        return (ctypes.c_int64 * len(words))(*words)

    def sources(self) -> np.ndarray:
        """(taps, oh * ow): each tap's input position (row * w + column) in its plane for
        each output position, -1 in the padding."""
        kh, kw = self.kernel
        (dh, dw), (sh, sw) = self.dilation, self.stride
        oy = np.arange(self.out[0])[:, None] * sh - self.padding[0]
        ox = np.arange(self.out[1])[None, :] * sw - self.padding[2]
        found = np.empty((kh * kw, self.out[0] * self.out[1]), np.int64)
        for i in range(kh):
            for j in range(kw):
                r, c = oy + i * dh, ox + j * dw
                inside = (r >= 0) & (r < self.h) & (c >= 0) & (c < self.w)
                found[i * kw + j] = np.where(inside, r * self.w + c, -1).reshape(-1)
        return found

    def uses_tables(self, dtype: np.dtype) -> bool:
        """Whether unfold and fold go through index tables (``unfold_gather``,
        ``fold_gather``): rows no longer than a vector, or disjoint windows, and tables of
        at most TABLE_ENTRIES. Measured (float32, us, loops -> tables): cnn's 8x8 and 4x4
        convolutions' unfold 19 -> 8 and 73 -> 17, fold 17 -> 10 and 61 -> 32; a 32x32
        pooling 144 -> 68; a 32x32 3x3 convolution (rows of 32) 532 -> 700: the loops."""
        taps = self.kernel[0] * self.kernel[1]
        # unfold's table: a tap per output position; fold's: a layer per contribution (one,
        # or at most a tap's) per input position
        entries = max(taps * self.out[0] * self.out[1],
                      (1 if self.disjoint else taps) * self.h * self.w)
        return (self.out[1] <= lanes(np.dtype(dtype).name) or self.disjoint) and entries <= TABLE_ENTRIES

    def gather_words(self, op: str, dtype: np.dtype, pad_value: float = 0.0) -> ctypes.Array:
        """The words of ``unfold_gather`` or ``fold_gather`` (``op``): the fixed ones, then
        the int32 table, padded with -1 so that every vector load of it stays inside."""
        vl = lanes(np.dtype(dtype).name)
        sources = self.sources()
        taps, length = sources.shape
        area = self.h * self.w
        if op == "unfold":
            depth = chunk = 0
            table = np.full(-(-sources.size // vl) * vl + vl, -1, np.int32)
            table[:sources.size] = sources.reshape(-1)
        else:
            # layer d of a position: its d-th contribution (tap * length + output position)
            # in tap order; a tap reaches a position from one output position at most
            made = np.zeros(area, np.int64)
            chunk = -(-area // vl) * vl + vl
            layers = np.full((taps, chunk), -1, np.int32)
            for t in range(taps):
                q = np.flatnonzero(sources[t] >= 0)
                at = sources[t, q]
                layers[made[at], at] = t * length + q
                made[at] += 1
            depth = int(made.max(initial=0))
            table = layers[:depth].reshape(-1)
        fixed = np.array([self.planes, area, taps * length, depth, int(self.disjoint),
                          _bits(pad_value), chunk], np.int64)
        words = np.concatenate([fixed.view(np.int32), table, np.full(table.size % 2, -1,
                                                                     np.int32)])
        return (ctypes.c_int64 * (words.size // 2)).from_buffer_copy(words.tobytes())


def _bits(value: float) -> int:
    """The int64 word holding a float64's bits."""
    return struct.unpack("<q", struct.pack("<d", float(value)))[0]


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
    """A function of the product entry's ABI: (source, dest, scratch, fourth, words), the last
    two arrays' data read where ``scratch`` and ``fourth`` say."""

    def __init__(self, module: ir.Module, name: str, dtype: str, scratch: bool = False,
                 fourth: bool = False) -> None:
        self.t = _TYPES[dtype]
        tp = self.t.as_pointer()
        # the entry reads the data pointers and calls the body, whose arguments are noalias
        # (source, destination, scratch and words never overlap): inlined, LLVM keeps that
        # knowledge, so it hoists the words' loads out of the loops and vectorizes the copies
        body = ir.Function(module, ir.FunctionType(ir.VoidType(), [tp, tp, tp, tp, _PTR]),
                           name=name + ".body")
        body.linkage = "internal"
        body.attributes.add("nounwind")
        body.attributes.add("alwaysinline")
        for arg in body.args:
            arg.add_attribute("noalias")
        entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR] * 5), name=name)
        entry.attributes.add("nounwind")
        eb = ir.IRBuilder(entry.append_basic_block("entry"))
        src_obj, dst_obj, scratch_obj, fourth_obj, words = entry.args
        third = self._data(eb, scratch_obj, tp) if scratch else ir.Constant(tp, None)
        last = self._data(eb, fourth_obj, tp) if fourth else ir.Constant(tp, None)
        eb.call(body, [self._data(eb, src_obj, tp), self._data(eb, dst_obj, tp), third, last,
                       words])
        eb.ret_void()
        self.b = ir.IRBuilder(body.append_basic_block("entry"))
        self.src, self.dst, self.scratch, self.fourth, self.words = body.args

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


def _fma(module: ir.Module, dtype: str) -> None:
    """``dest[i] = fma(source[i * sa], scratch[i * sb], fourth[i * sc])`` for i < n: a
    multiply-add rounded once, as PyTorch's CPU kernels compute add(alpha=), addcmul and lerp
    (numpy has none: runtime.ops.prims emulates it exactly, 7 times as slow). Each operand is
    a whole C-contiguous array of n elements (stride 1) or one element (stride 0). The words
    are (n, sa, sb, sc)."""
    f = _Function(module, f"fma.{dtype}", dtype, scratch=True, fourth=True)
    b = f.b
    n, sa, sb, sc = (f.word(i) for i in range(4))
    fma = module.declare_intrinsic("llvm.fma", [f.t], ir.FunctionType(f.t, [f.t] * 3))

    zero, one = ir.Constant(_I64, 0), ir.Constant(_I64, 1)

    def loop(strides: tuple[ir.Value | None, ...]) -> None:
        """The loop with the strides known (1 or 0) where given, read where None: LLVM
        vectorizes the first two (every operand an array; a scalar times two arrays)."""
        def cell(i: ir.Value) -> None:
            x, y, z = (b.load(base if s is zero else f.at(base, i if s is one else b.mul(i, w)))
                       for base, s, w in ((f.src, strides[0], sa), (f.scratch, strides[1], sb),
                                          (f.fourth, strides[2], sc)))
            b.store(b.call(fma, [x, y, z]), f.at(f.dst, i))

        _loop(b, zero, n, cell)

    arrays = b.and_(b.and_(b.icmp_signed("==", sa, one), b.icmp_signed("==", sb, one)),
                    b.icmp_signed("==", sc, one))
    scaled = b.and_(b.and_(b.icmp_signed("==", sa, zero), b.icmp_signed("==", sb, one)),
                    b.icmp_signed("==", sc, one))
    with b.if_else(arrays) as (then, otherwise):
        with then:
            loop((one, one, one))
        with otherwise:
            with b.if_else(scaled) as (then2, otherwise2):
                with then2:
                    loop((zero, one, one))
                with otherwise2:
                    loop((None, None, None))
    b.ret_void()


_SCALARS = {"float32": ("float", "f32", 4), "float64": ("double", "f64", 8)}


def _gathering(op: str, dtype: str) -> str:
    """IR text of ``unfold_gather`` or ``fold_gather`` (``op``) for ``dtype``: per plane, its
    output a vector at a time (the last one masked), each lane gathered through the table
    (``Geometry.gather_words``). unfold: the plane's (taps, oh * ow) columns from its (h, w)
    input, the pad value where the entry is -1. fold: the plane's (h, w) sums from its
    columns, layer by layer: the first assigned where windows are disjoint, else each added
    to +0.0 in turn (a missing contribution adds +0.0, which changes no sum that starts
    there: such a sum is never -0.0)."""
    t, f, size = _SCALARS[dtype]
    vl = lanes(dtype)
    vt, it, mt = f"<{vl} x {t}>", f"<{vl} x i32>", f"<{vl} x i1>"
    gather = f"@llvm.masked.gather.v{vl}{f}.v{vl}p0"
    store = f"@llvm.masked.store.v{vl}{f}.p0"
    unfold = op == "unfold"
    # elements per plane: written (unfold: count, fold: area) and read (the other)
    out_n, in_n = ("%count", "%area") if unfold else ("%area", "%count")
    lines = [f'define void @"{op}_gather.{dtype}"(ptr %src.obj, ptr %dst.obj, ptr %a2, '
             "ptr %a3, ptr %w) nounwind {", "entry:"]
    x = lambda line: lines.append("  " + line)  # noqa: E731
    for a in ("src", "dst"):
        x(f"%{a}.at = getelementptr i8, ptr %{a}.obj, i64 {ARRAY_DATA_OFFSET}")
        x(f"%{a} = load ptr, ptr %{a}.at")
    for i, name in enumerate(_GATHER_WORDS):
        x(f"%{name}.at = getelementptr i64, ptr %w, i64 {i}")
        x(f"%{name} = load i64, ptr %{name}.at")
    x(f"%table = getelementptr i64, ptr %w, i64 {len(_GATHER_WORDS)}")
    x("%pad.d = bitcast i64 %padbits to double")
    x(f"%pad.s = {'fptrunc double %pad.d to float' if t == 'float' else 'fadd double %pad.d, 0.0'}")
    x(f"%pad.0 = insertelement {vt} poison, {t} %pad.s, i64 0")
    x(f"%pad = shufflevector {vt} %pad.0, {vt} poison, {it} zeroinitializer")
    x(f"%full = udiv i64 {out_n}, {vl}")
    x(f"%rem = urem i64 {out_n}, {vl}")
    x("%rem.s = trunc i64 %rem to i32")
    x(f"%rem.0 = insertelement {it} poison, i32 %rem.s, i64 0")
    x(f"%rem.v = shufflevector {it} %rem.0, {it} poison, {it} zeroinitializer")
    lane_ids = ", ".join(f"i32 {i}" for i in range(vl))
    x(f"%tail = icmp slt {it} <{lane_ids}>, %rem.v")
    x("%chunks = add i64 %full, 1")  # the last one masked to the remainder (maybe none)
    x("%assign = icmp ne i64 %disjoint, 0")
    x("br label %plane")
    lines.append("plane:")
    x("%p = phi i64 [0, %entry], [%p.next, %plane.end]")
    x("%p.more = icmp slt i64 %p, %planes")
    x("br i1 %p.more, label %plane.body, label %exit")
    lines.append("plane.body:")
    x(f"%in.at = mul i64 %p, {in_n}")
    x(f"%in = getelementptr {t}, ptr %src, i64 %in.at")
    x(f"%out.at = mul i64 %p, {out_n}")
    x(f"%out = getelementptr {t}, ptr %dst, i64 %out.at")
    x("br label %chunk")
    lines.append("chunk:")
    x("%c = phi i64 [0, %plane.body], [%c.next, %chunk.end]")
    x("%c.more = icmp slt i64 %c, %chunks")
    x("br i1 %c.more, label %chunk.body, label %plane.end")
    lines.append("chunk.body:")
    x(f"%first = mul i64 %c, {vl}")
    x("%whole = icmp slt i64 %c, %full")
    x(f"%lanes = select i1 %whole, {mt} <{', '.join(['i1 true'] * vl)}>, {mt} %tail")

    def gathered(at: str, suffix: str, otherwise: str) -> str:
        x(f"%e{suffix} = getelementptr i32, ptr %table, i64 {at}")
        x(f"%i{suffix} = load {it}, ptr %e{suffix}, align 4")
        x(f"%s{suffix} = icmp sge {it} %i{suffix}, zeroinitializer")
        x(f"%m{suffix} = and {mt} %s{suffix}, %lanes")
        x(f"%q{suffix} = getelementptr {t}, ptr %in, {it} %i{suffix}")
        x(f"%g{suffix} = call {vt} {gather}(<{vl} x ptr> %q{suffix}, i32 {size}, "
          f"{mt} %m{suffix}, {vt} {otherwise})")
        return f"%g{suffix}"

    if unfold:
        value = gathered("%first", "", "%pad")
        x("br label %chunk.end")
    else:
        x("br label %layer")
        lines.append("layer:")
        x("%d = phi i64 [0, %chunk.body], [%d.next, %layer.body]")
        x(f"%acc = phi {vt} [zeroinitializer, %chunk.body], [%acc.next, %layer.body]")
        x("%d.more = icmp slt i64 %d, %depth")
        x("br i1 %d.more, label %layer.body, label %chunk.end")
        lines.append("layer.body:")
        x("%row = mul i64 %d, %layer_size")
        x("%row.at = add i64 %row, %first")
        got = gathered("%row.at", ".l", "zeroinitializer")
        x(f"%sum = fadd {vt} %acc, {got}")
        x("%d.zero = icmp eq i64 %d, 0")
        x("%put = and i1 %d.zero, %assign")
        x(f"%acc.next = select i1 %put, {vt} {got}, {vt} %sum")
        x("%d.next = add i64 %d, 1")
        x("br label %layer")
        value = "%acc"
    lines.append("chunk.end:")
    x(f"%to = getelementptr {t}, ptr %out, i64 %first")
    x(f"call void {store}({vt} {value}, ptr %to, i32 {size}, {mt} %lanes)")
    x("%c.next = add i64 %c, 1")
    x("br label %chunk")
    lines.append("plane.end:")
    x("%p.next = add i64 %p, 1")
    x("br label %plane")
    lines.append("exit:")
    x("ret void")
    lines.append("}")
    lines.append(f"declare {vt} {gather}(<{vl} x ptr>, i32, {mt}, {vt})")
    lines.append(f"declare void {store}({vt}, ptr, i32, {mt})")
    return "\n".join(lines) + "\n"


_TEXT = {"unfold_gather": functools.partial(_gathering, "unfold"),
         "fold_gather": functools.partial(_gathering, "fold")}
_RENDER = {"unfold": _unfold, "fold": _fold, "sum": _sum_axis, "scatter": _scatter_rows,
           "fma": _fma,
           "argmax": functools.partial(_argbest, op="argmax"),
           "argmin": functools.partial(_argbest, op="argmin")}


def render(name: str) -> str:
    """The IR text of one function, ``OP.DTYPE`` (unfold, fold, their ``_gather`` forms, sum,
    scatter, argmax or argmin of float32 or float64): a module of its own, so a plan compiles
    only the ones it calls."""
    op, dtype = name.split(".")
    if op in _TEXT:
        return _TEXT[op](dtype)
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

            # the gathering functions are written vector by vector: LLVM's IR passes add
            # nothing to them but compile time (15 -> 4 ms); the loops by rows need them
            emit = target.emit_as_written if name.split(".")[0] in _TEXT else target.emit
            code = support_code(f"windows.{name}", functools.partial(render, name), emit,
                                version=_source_digest())
            with target.LOCK:
                engine, (address,) = target.load_support(code.object_file, name)
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


# a dtype's name is a Python property of numpy's that takes 5 us
_NAMES = {np.dtype(name): name for name in _TYPES}


def supports(dtype: np.dtype) -> bool:
    return np.dtype(dtype) in _NAMES and available()


def _words(geometry: Geometry, op: str, dtype: np.dtype, pad_value: float,
           tables: bool | None) -> tuple[str, ctypes.Array]:
    """The function (``OP.DTYPE``) and words of ``op`` (unfold or fold) over ``geometry``:
    through index tables where ``tables`` says (None: where ``Geometry.uses_tables``)."""
    dtype = np.dtype(dtype)
    if tables is None:
        tables = geometry.uses_tables(dtype)
    if tables:
        return f"{op}_gather.{dtype.name}", geometry.gather_words(op, dtype, pad_value)
    return f"{op}.{dtype.name}", geometry.words(pad_value)


def unfolder(geometry: Geometry, dtype: np.dtype, pad_value: float,
             tables: bool | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """``f(x)``: the columns (n, c * kh * kw, oh * ow) of ``x`` (n, c, h, w) of ``dtype``,
    n * c = geometry.planes; through index tables where ``tables`` says (None: where
    ``Geometry.uses_tables``)."""
    name, words = _words(geometry, "unfold", dtype, pad_value, tables)
    call = _builtin(name, words)
    kh, kw = geometry.kernel
    length = math.prod(geometry.out)

    def unfold(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x)
        n, c = x.shape[:2]
        cols = np.empty((n, c * kh * kw, length), x.dtype)
        call(x, cols, cols, cols)
        return cols

    return _with_native(unfold, name, words, ("in", "out", "out", "out"))


def folder(geometry: Geometry, dtype: np.dtype, tables: bool | None = None
           ) -> Callable[[np.ndarray], np.ndarray]:
    """``f(cols)``: the sums (n, c, h, w) of the columns (n, c * kh * kw, oh * ow) of
    ``dtype`` back at their input positions, n * c = geometry.planes; through index tables
    where ``tables`` says (None: where ``Geometry.uses_tables``)."""
    name, words = _words(geometry, "fold", dtype, 0.0, tables)
    call = _builtin(name, words)
    kh, kw = geometry.kernel
    h, w = geometry.h, geometry.w

    def fold(cols: np.ndarray) -> np.ndarray:
        cols = np.ascontiguousarray(cols)
        n = cols.shape[0]
        out = np.empty((n, cols.shape[1] // (kh * kw), h, w), cols.dtype)
        call(cols, out, out, out)
        return out

    return _with_native(fold, name, words, ("in", "out", "out", "out"))


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


_fma_words = threading.local()


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray | None:
    """``a * b + c`` rounded once, of one float dtype, each operand of the result's shape and
    C-contiguous, or of one element (broadcast); None where they are not (the caller
    computes it otherwise)."""
    dtype = c.dtype
    name = _NAMES.get(dtype)
    if name is None or a.dtype != dtype or b.dtype != dtype:
        return None
    # (np.broadcast_shapes cost more than a small call's fma)
    full = [x.shape for x in (a, b, c) if x.size != 1]
    shape = full[0] if full else max(a.shape, b.shape, c.shape, key=len)
    n = 1
    for extent in shape:
        n *= extent
    strides = []
    for x in (a, b, c):
        if x.size == 1 and (n == 1 or len(x.shape) <= len(shape)):
            strides.append(0)
        elif x.shape == shape and x.flags.c_contiguous:
            strides.append(1)
        else:
            return None
    calls = getattr(_fma_words, "calls", None)
    if calls is None:  # per thread: a call writes its words, then runs
        calls = _fma_words.calls = {}
    found = calls.get(name)
    if found is None:
        words = (ctypes.c_int64 * 4)()
        found = calls[name] = (_builtin(f"fma.{name}", words), words)
    call, words = found
    words[0], words[1], words[2], words[3] = n, *strides
    out = np.empty(shape, dtype)
    call(a, out, b, c)
    return out
