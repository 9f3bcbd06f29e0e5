"""Small matrix products as generated LLVM code: one function per (shapes, dtype).

numpy hands every ``matmul`` to its BLAS (OpenBLAS here), which pays a fixed cost per call
(argument checks, packing set-up, thread dispatch) that dominates small products: a
(32, 64) @ (64, 64).T float32 product took 5.8 us through ``np.matmul`` on this project's
2-core VM (45 GFLOP/s) and a (64, 128) @ (128, 128).T one 24 us (87 GFLOP/s). A plan knows the
shapes of its products before it runs, so each product here is a function compiled for
exactly its shapes: B is packed into panels of NR columns (zero-padded past N) on the stack,
by contiguous rows, by gathers where B's columns are contiguous (a transposed weight), else
element by element; then a register-blocked micro-kernel keeps an MR x NR block of C in
vector registers while it walks K, broadcasting one element of A per row (so A may have any
strides). A 2-D operand's strides are read from its array object at each call, so any layout
of it runs the same code; a batched operand's strides are the spec's constants. The result is
a fresh C-contiguous array.

A product's work items are its panels (of each matrix of a batch): a large product splits
them across the native pool's threads (``Product.run``), each panel computed the same way
wherever it runs. With no BLAS threads spinning beside them, two threads reached 285 to 316
GFLOP/s on mlp_large's and gpt's shapes where OpenBLAS reached 221 to 307, one thread 144 to
166 against 117 to 150.

``GemmSpec.of`` says whether a product qualifies (float32 or float64, both operands at least
2-D, batch dimensions equal or absent and flattening into one stride, a packed panel of B of
at most PACK_BYTES); ``compiled(specs)`` gives ``Product``s, called over array objects (data
pointer and strides read at ``ARRAY_DATA_OFFSET`` and ``STRIDES_OFFSET``, checked by
``object_strides_ok``). The caller guarantees the rest: numpy arrays of the spec's dtype and
shapes, a batched operand's strides the spec's, and ``c`` a fresh C-contiguous array of the
product's shape.

Sums run in a fixed order (k from 0 to K - 1, one fused multiply-add a step into one
accumulator per element), so a product's bits do not depend on threads or on the call; they
differ from BLAS's by rounding only.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from codegen import pool, target
from codegen.jit import PARALLEL_MIN_US
from codegen.llvm_emit import ARRAY_DATA_OFFSET
from runtime._threads import get_num_threads

# byte offset of the strides pointer in a numpy array object (PyArrayObject_fields.strides:
# after the data pointer, nd and the dimensions pointer); ``object_strides_ok`` checks it
STRIDES_OFFSET = ARRAY_DATA_OFFSET + 24

# A packed panel of B (K x NR) lives on the stack of the thread computing it: at most this
# many bytes (K = 1024 float32 rows of NR = 64; the threads Python starts get 8 MiB stacks).
PACK_BYTES = 256 * 1024
# at most this many accumulator vectors in a micro-kernel (x86-64 with AVX-512 has 32 vector
# registers: MR x NV accumulators, NV vectors of B and one broadcast of A)
MAX_ACCUMULATORS = 24
MAX_MR = 8
MAX_NV = 4

_TYPES = {"float32": "float", "float64": "double"}
_DTYPES = {t: d for d, t in _TYPES.items()}
_INTRINSIC = {"float32": "f32", "float64": "f64"}


@dataclass(frozen=True)
class GemmSpec:
    """One product ``C[b] = A[b] @ B[b]`` for b < batch: A is (m, k), B is (k, n), C a fresh
    C-contiguous (batch, m, n) array. A 2-D operand's strides are read from its array object
    at each call (strides None: any layout, a slice or a transposed view); a batched
    operand's are the spec's, in bytes (batch, row, column; a batch stride of 0 broadcasts a
    2-D operand over the other's batch)."""

    dtype: str
    batch: int
    m: int
    n: int
    k: int
    a_strides: tuple[int, int, int] | None
    b_strides: tuple[int, int, int] | None

    @classmethod
    def of(cls, a_shape: tuple[int, ...], a_strides: tuple[int, ...] | None,
           b_shape: tuple[int, ...], b_strides: tuple[int, ...] | None, dtype: np.dtype
           ) -> GemmSpec | None:
        """The spec of ``matmul(a, b)`` for operands of these shapes and byte strides (those
        of a 2-D operand are not needed: None will do), or None where a generated product
        does not apply (numpy's matmul then runs)."""
        dtype = np.dtype(dtype)
        if dtype.name not in _TYPES or len(a_shape) < 2 or len(b_shape) < 2:
            return None
        (m, k), (k2, n) = a_shape[-2:], b_shape[-2:]
        if k != k2 or min(m, n, k) < 1:
            return None
        a_batch, b_batch = a_shape[:-2], b_shape[:-2]
        if a_batch and b_batch and a_batch != b_batch:
            return None  # broadcasting between batches: numpy
        batch = math.prod(a_batch or b_batch)
        if batch < 1:
            return None
        size = dtype.itemsize
        given = []
        for shape, strides in ((a_shape, a_strides), (b_shape, b_strides)):
            if len(shape) == 2:
                given.append(None)
                continue
            if strides is None or len(strides) != len(shape) or any(
                    s % size or s < 0 for s in strides):
                return None
            outer = _batch_stride(shape, strides)
            if outer is None:
                return None
            given.append((outer, strides[-2], strides[-1]))
        nv = min(MAX_NV, -(-n // lanes(dtype.name)))
        nr = nv * lanes(dtype.name)
        if k * nr * size > PACK_BYTES:
            return None
        return cls(dtype.name, batch, m, n, k, given[0], given[1])

    @property
    def name(self) -> str:
        sa, sb = ("r" if s is None else "_".join(map(str, s))
                  for s in (self.a_strides, self.b_strides))
        return f"gemm_{self.dtype}_{self.batch}x{self.m}x{self.n}x{self.k}_a{sa}_b{sb}"


def _batch_stride(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """The one byte stride that walks an operand's batch dimensions in C order, or None where
    they do not flatten into one (numpy then runs)."""
    dims = [(d, s) for d, s in zip(shape[:-2], strides[:-2]) if d != 1]
    if not dims:
        return 0
    for (_, outer), (inner_d, inner) in zip(dims, dims[1:]):
        if outer != inner * inner_d:
            return None
    return dims[-1][1]


@functools.cache
def object_strides_ok() -> bool:
    """Whether this interpreter's numpy arrays keep their strides where the products' object
    entry reads them (``STRIDES_OFFSET``; with ``codegen.jit.object_entry_ok`` for the data
    pointer)."""
    from codegen.jit import object_entry_ok

    if not object_entry_ok():
        return False
    base = np.arange(24.0).reshape(4, 6)
    for a in (base, base.T, base[1:3, ::2], np.empty((3, 2), np.float32).T):
        pointer = ctypes.c_void_p.from_address(id(a) + STRIDES_OFFSET).value
        if not pointer or tuple((ctypes.c_int64 * 2).from_address(pointer)) != a.strides:
            return False
    return True


@functools.cache
def lanes(dtype: str) -> int:
    """Elements in one of the host's widest vector registers."""
    _, features = target.host()
    bits = 512 if "+avx512f" in features.split(",") else (
        256 if "+avx" in features.split(",") else 128)
    return bits // (8 * np.dtype(dtype).itemsize)


def blocking(spec: GemmSpec) -> tuple[int, int]:
    """(MR, NV): rows of A and vectors of B per micro-kernel step, as many accumulators as fit
    (MAX_ACCUMULATORS), no more than the product has."""
    nv = min(MAX_NV, -(-spec.n // lanes(spec.dtype)))
    mr = max(1, min(MAX_MR, MAX_ACCUMULATORS // nv, spec.m))
    return mr, nv


# --- IR text ----------------------------------------------------------------------------------


class _Text:
    """Lines of one function and a counter for its SSA names and labels."""

    def __init__(self, base: int = 0) -> None:
        self.base = base  # number of the first loop's metadata node
        self.lines: list[str] = []
        self.n = 0
        self.loops: list[bool] = []

    def fresh(self, hint: str) -> str:
        self.n += 1
        return f"%{hint}.{self.n}"

    def label(self, hint: str) -> str:
        self.n += 1
        return f"{hint}.{self.n}"

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def block(self, label: str) -> None:
        self.lines.append(f"{label}:")

    def latch(self, cond: str, done: str, head: str, vectorize: bool = False) -> None:
        """A loop's back edge, with metadata that keeps LLVM from unrolling the loop (the
        micro-kernel is unrolled by hand; unrolling its loops again multiplied compile time
        for no speed) and, unless ``vectorize``, from vectorizing it."""
        n = self.base + len(self.loops)
        self.loops.append(vectorize)
        self(f"br i1 {cond}, label %{done}, label %{head}, !llvm.loop !{n}")

    def metadata(self) -> str:
        """The loops' metadata nodes (numbered from 2: nodes 0 and 1 are the options they
        name, ``_LOOP_OPTIONS``)."""
        lines = []
        for i, vectorize in enumerate(self.loops):
            n = self.base + i
            options = "!0" + ("" if vectorize else ", !1")
            lines.append(f"!{n} = distinct !{{!{n}, {options}}}")
        return "\n".join(lines)


_LOOP_OPTIONS = ('!0 = !{!"llvm.loop.unroll.disable"}\n'
                 '!1 = !{!"llvm.loop.vectorize.enable", i1 false}\n')


def _function(spec: GemmSpec, base: int) -> tuple[str, str, int]:
    """The IR of ``spec``'s product: ``NAME.items(ptr a, ptr b, ptr c, i64 start, i64 end)``
    over array objects computes work items start .. end - 1, an item being one panel of NR
    columns of C for one matrix of the batch (``items(spec)`` of them): pack that panel of B,
    then every block of MR rows over it. ``NAME(i64 a, i64 b, i64 c)`` runs every item (a
    call on the calling thread); ``NAME.chunks(ptr objects, i64 start, i64 end)`` runs a
    range of them with the kernels' ABI (``codegen.pool.run_chunks``). Each element of C is
    computed by one item, the same way in any split. Then the loops' metadata nodes,
    numbered from ``base`` on, and the next free number."""
    t, vl = _TYPES[spec.dtype], lanes(spec.dtype)
    size = np.dtype(spec.dtype).itemsize
    vt = f"<{vl} x {t}>"
    mr, nv = blocking(spec)
    nr = nv * vl
    full, tail = divmod(spec.n, nr)
    panels = full + (1 if tail else 0)
    x = _Text(base)
    x.block("entry")
    for v in "abc":
        x(f"%{v}.field = getelementptr inbounds i8, ptr %{v}.obj, i64 {ARRAY_DATA_OFFSET}")
        x(f"%{v}0 = load ptr, ptr %{v}.field, align 8")
    strides = {}
    for v, given in (("a", spec.a_strides), ("b", spec.b_strides)):
        if given is None:  # a 2-D operand: its strides from its object (STRIDES_OFFSET)
            x(f"%{v}.sfield = getelementptr inbounds i8, ptr %{v}.obj, i64 {STRIDES_OFFSET}")
            x(f"%{v}.sp = load ptr, ptr %{v}.sfield, align 8")
            x(f"%{v}.s1p = getelementptr inbounds i64, ptr %{v}.sp, i64 1")
            x(f"%{v}.s0 = load i64, ptr %{v}.sp, align 8")
            x(f"%{v}.s1 = load i64, ptr %{v}.s1p, align 8")
            strides[v] = ("0", f"%{v}.s0", f"%{v}.s1")
        else:
            strides[v] = tuple(str(s) for s in given)
    (sab, sam, sak), (sbb, sbk, sbn) = strides["a"], strides["b"]
    x(f"%bp = alloca {t}, i64 {spec.k * nr}, align 64")
    x("%none = icmp sge i64 %start, %end")
    x("br i1 %none, label %exit, label %item")
    # --- the item loop: matrix bi of the batch, panel p
    x.block("item")
    x("%it = phi i64 [%start, %entry], [%it.next, %item.end]")
    x(f"%bi = udiv i64 %it, {panels}")
    x(f"%p = urem i64 %it, {panels}")
    for v, sv in (("a", sab), ("b", sbb)):
        x(f"%{v}.off = mul i64 %bi, {sv}")
        x(f"%{v} = getelementptr i8, ptr %{v}0, i64 %{v}.off")
    x(f"%c.off = mul i64 %bi, {spec.m * spec.n}")
    x(f"%c = getelementptr inbounds {t}, ptr %c0, i64 %c.off")
    x(f"%j0 = mul nuw nsw i64 %p, {nr}")  # the panel's first column
    x("%bj.off = mul i64 %j0, " + sbn)
    x("%bj = getelementptr i8, ptr %b, i64 %bj.off")
    blocks = -(-spec.m // mr)
    kinds = []
    if full:
        kinds.append(("full", nr))
    if tail:
        kinds.append(("tail", tail))
    if len(kinds) == 2:
        x(f"%is.tail = icmp eq i64 %p, {full}")
        x("br i1 %is.tail, label %panel.tail, label %panel.full")
    else:
        x(f"br label %panel.{kinds[0][0]}")
    for kind, width in kinds:
        x.block(f"panel.{kind}")
        if width < nr:  # zero the columns past N
            x(f"call void @llvm.memset.p0.i64(ptr align 64 %bp, i8 0, i64 {spec.k * nr * size}, "
              f"i1 false)")
        _pack(x, t, size, spec.k, width, sbk, sbn, nr)
        vectors = -(-width // vl)
        last = width - (vectors - 1) * vl
        _micro(x, spec, t, vt, vl, mr, vectors, last, nr, blocks=blocks, sam=sam, sak=sak)
        x("br label %item.end")
    x.block("item.end")
    x("%it.next = add nuw nsw i64 %it, 1")
    x("%items.done = icmp eq i64 %it.next, %end")
    x.latch("%items.done", "exit", "item")
    x.block("exit")
    x("ret void")
    body = "\n".join(x.lines)
    name = spec.name
    items = spec.batch * panels
    return (f'define internal void @"{name}.items"(ptr %a.obj, ptr %b.obj, ptr %c.obj, '
            f"i64 %start, i64 %end) #1 {{\n{body}\n}}\n\n"
            f'define void @"{name}"(i64 %ao, i64 %bo, i64 %co) #0 {{\n'
            + "".join(f"  %{v} = inttoptr i64 %{v}o to ptr\n" for v in "abc")
            + f'  call void @"{name}.items"(ptr %a, ptr %b, ptr %c, i64 0, i64 {items})\n'
            f"  ret void\n}}\n\n"
            f'define void @"{name}.chunks"(ptr %objects, i64 %start, i64 %end) #0 {{\n'
            + "".join(f"  %{v}.p = getelementptr inbounds ptr, ptr %objects, i64 {i}\n"
                      f"  %{v} = load ptr, ptr %{v}.p, align 8\n" for i, v in enumerate("abc"))
            + f'  call void @"{name}.items"(ptr %a, ptr %b, ptr %c, i64 %start, i64 %end)\n'
            f"  ret void\n}}\n\n", x.metadata(), base + len(x.loops))


def items(spec: GemmSpec) -> int:
    """The work items of a product (one panel of one matrix of the batch)."""
    nr = blocking(spec)[1] * lanes(spec.dtype)
    return spec.batch * -(-spec.n // nr)


def _pack(x: _Text, t: str, size: int, k: int, width: int, sbk: str, sbn: str,
          nr: int) -> None:
    """Pack ``width`` columns of B from ``%bj`` (the panel's first column) into ``%bp``:
    ``bp[kk * NR + jj] = bj[kk * sbk + jj * sbn]`` (byte strides). Three ways, by B's layout:
    rows contiguous (``width`` contiguous elements a k), columns contiguous (a gather a row
    of VL columns, where ``width`` is a multiple of VL), else element by element. Strides
    known in the code pick one; strides loaded at run time branch to each."""
    vl = lanes(_DTYPES[t])
    rows = ("rows", lambda: _pack_loops(x, t, k, width, sbk, str(size), nr, True))
    cols_ok = width % vl == 0
    tile = _TILE_BYTES // size
    if k >= TILE_MIN_K and k % tile == 0 and width % tile == 0:
        cols = ("cols", lambda: _pack_tiles(x, t, size, k, width, sbn, nr))
    else:
        cols = ("cols", lambda: _pack_gather(x, t, size, k, width, sbn, nr))
    other = ("any", lambda: _pack_loops(x, t, k, width, sbk, sbn, nr, True))
    if not sbk.startswith("%"):  # constants
        if int(sbn) == size:
            rows[1]()
        elif int(sbk) == size and cols_ok:
            cols[1]()
        else:
            _pack_loops(x, t, k, width, sbk, sbn, nr, int(sbn) <= int(sbk))
        return
    done = x.label("pack.done")
    ways = [rows] + ([cols] if cols_ok else []) + [other]
    for i, (kind, emit) in enumerate(ways):
        if i < len(ways) - 1:
            test, here, next_test = x.fresh("is"), x.label(f"pack.{kind}"), x.label("pack.test")
            stride = sbn if kind == "rows" else sbk
            x(f"{test} = icmp eq i64 {stride}, {size}")
            x(f"br i1 {test}, label %{here}, label %{next_test}")
            x.block(here)
            emit()
            x(f"br label %{done}")
            x.block(next_test)
        else:
            emit()
            x(f"br label %{done}")
    x.block(done)


# A transposed B of at least TILE_MIN_K rows is packed by tiles transposed in registers
# (_TILE_BYTES-wide vectors: 8 x 8 float32): for mlp_large's (1024, 1024).T the gathers took
# 1.6 cycles an element and the product ran at 104 GFLOP/s against 139 untransposed. Smaller
# ones gather: the tiles' shuffles cost LLVM's X86 backend more compile time than they save.
TILE_MIN_K = 256
_TILE_BYTES = 32


def _pack_tiles(x: _Text, t: str, size: int, k: int, width: int, sbn: str, nr: int) -> None:
    """Pack a panel whose columns are contiguous in B by T x T tiles (T elements of
    _TILE_BYTES): T columns' T consecutive elements loaded as vectors, transposed in
    registers (log2(T) stages of two-source shuffles), stored as T rows of the panel. One
    tile's code, in a loop over k and the panel's column tiles."""
    tw = _TILE_BYTES // size
    vt = f"<{tw} x {t}>"
    pre, jh, kh, kend, done = (x.label(h) for h in ("tt.pre", "tt.j", "tt.k", "tt.kend",
                                                     "tt.done"))
    x(f"br label %{pre}")
    x.block(pre)
    x(f"br label %{kh}")
    x.block(kh)
    k0, k_next = x.fresh("tk"), x.fresh("tk.next")
    x(f"{k0} = phi i64 [0, %{pre}], [{k_next}, %{kend}]")
    kb = x.fresh("tkb")
    x(f"{kb} = mul i64 {k0}, {size}")
    x(f"br label %{jh}")
    x.block(jh)
    jt, jt_next = x.fresh("tj"), x.fresh("tj.next")
    x(f"{jt} = phi i64 [0, %{kh}], [{jt_next}, %{jh}]")
    j0, src0 = x.fresh("tj0"), x.fresh("ts")
    x(f"{j0} = mul nuw nsw i64 {jt}, {tw}")
    x(f"{src0} = mul i64 {j0}, {sbn}")
    rows = []
    for r in range(tw):
        row, off, off2, ptr, val = (x.fresh(h) for h in ("trr", "to", "to2", "tpp", "trow"))
        x(f"{row} = mul i64 {r}, {sbn}")
        x(f"{off} = add i64 {src0}, {row}")
        x(f"{off2} = add i64 {off}, {kb}")
        x(f"{ptr} = getelementptr i8, ptr %bj, i64 {off2}")
        x(f"{val} = load {vt}, ptr {ptr}, align 1")
        rows.append(val)
    s = tw // 2
    while s:  # rows r and r + s (bit s of r clear) swap their off-diagonal s-lane blocks
        out = list(rows)
        for r in range(tw):
            if r & s:
                continue
            lo = [lane if not lane & s else tw + lane - s for lane in range(tw)]
            hi = [lane + s if not lane & s else tw + lane for lane in range(tw)]
            for dst, mask in ((r, lo), (r + s, hi)):
                name = x.fresh("tr")
                m = ", ".join(f"i32 {i}" for i in mask)
                x(f"{name} = shufflevector {vt} {rows[r]}, {vt} {rows[r + s]}, <{tw} x i32> <{m}>")
                out[dst] = name
        rows = out
        s //= 2
    for c in range(tw):
        kc, d1, d2, ptr = x.fresh("tkc"), x.fresh("tdd"), x.fresh("tdd2"), x.fresh("tdp")
        x(f"{kc} = add nuw nsw i64 {k0}, {c}")
        x(f"{d1} = mul nuw nsw i64 {kc}, {nr}")
        x(f"{d2} = add nuw nsw i64 {d1}, {j0}")
        x(f"{ptr} = getelementptr inbounds {t}, ptr %bp, i64 {d2}")
        x(f"store {vt} {rows[c]}, ptr {ptr}, align {_TILE_BYTES}")
    x(f"{jt_next} = add nuw nsw i64 {jt}, 1")
    c1 = x.fresh("c")
    x(f"{c1} = icmp eq i64 {jt_next}, {width // tw}")
    x.latch(c1, kend, jh)
    x.block(kend)
    x(f"{k_next} = add nuw nsw i64 {k0}, {tw}")
    c2 = x.fresh("c")
    x(f"{c2} = icmp eq i64 {k_next}, {k}")
    x.latch(c2, done, kh)
    x.block(done)


def _pack_gather(x: _Text, t: str, size: int, k: int, width: int, sbn: str, nr: int) -> None:
    """Pack a panel whose columns are contiguous in B (a transposed operand): each k's VL
    columns are one gather (``sbn`` bytes apart), stored as a vector. (VL x VL tiles
    transposed by shuffles ran up to 1.25x faster, but took LLVM's X86 backend 35 ms to
    compile.)"""
    vl = lanes(_DTYPES[t])
    vt = f"<{vl} x {t}>"
    lane_vec = "<" + ", ".join(f"i64 {i}" for i in range(vl)) + ">"
    ins, spl, offsets = x.fresh("sbnv"), x.fresh("sbns"), x.fresh("lanes")
    x(f"{ins} = insertelement <{vl} x i64> poison, i64 {sbn}, i64 0")
    x(f"{spl} = shufflevector <{vl} x i64> {ins}, <{vl} x i64> poison, <{vl} x i32> "
      f"zeroinitializer")
    x(f"{offsets} = mul <{vl} x i64> {spl}, {lane_vec}")
    mask = "<" + ", ".join("i1 true" for _ in range(vl)) + ">"
    pre, kh, done = x.label("g.pre"), x.label("g.k"), x.label("g.done")
    x(f"br label %{pre}")
    x.block(pre)
    x(f"br label %{kh}")
    x.block(kh)
    kk, k_next = x.fresh("gk"), x.fresh("gk.next")
    x(f"{kk} = phi i64 [0, %{pre}], [{k_next}, %{kh}]")
    kb, row, d0 = x.fresh("gkb"), x.fresh("grow"), x.fresh("gd")
    x(f"{kb} = mul i64 {kk}, {size}")
    x(f"{row} = getelementptr i8, ptr %bj, i64 {kb}")
    x(f"{d0} = mul nuw nsw i64 {kk}, {nr}")
    for g in range(width // vl):
        col, base, ptrs, val, d1, dptr = (x.fresh(h) for h in ("gc", "gb", "gp", "gv", "gd1",
                                                                "gdp"))
        x(f"{col} = mul i64 {g * vl}, {sbn}")
        x(f"{base} = getelementptr i8, ptr {row}, i64 {col}")
        x(f"{ptrs} = getelementptr i8, ptr {base}, <{vl} x i64> {offsets}")
        x(f"{val} = call {vt} @llvm.masked.gather.v{vl}{_INTRINSIC[_DTYPES[t]]}.v{vl}p0("
          f"<{vl} x ptr> {ptrs}, i32 1, <{vl} x i1> {mask}, {vt} poison)")
        x(f"{d1} = add nuw nsw i64 {d0}, {g * vl}")
        x(f"{dptr} = getelementptr inbounds {t}, ptr %bp, i64 {d1}")
        x(f"store {vt} {val}, ptr {dptr}, align 64")
    x(f"{k_next} = add nuw nsw i64 {kk}, 1")
    c = x.fresh("c")
    x(f"{c} = icmp eq i64 {k_next}, {k}")
    x.latch(c, done, kh)
    x.block(done)


def _pack_loops(x: _Text, t: str, k: int, width: int, sbk: str, sbn: str, nr: int,
                columns_inner: bool) -> None:
    """Pack a panel element by element: the loop over its columns innermost where
    ``columns_inner`` (contiguous rows: LLVM vectorizes it), else the loop over k."""
    pre, oh, ih, iend, done = (x.label(h) for h in ("pk.pre", "pk.outer", "pk.inner",
                                                    "pk.iend", "pk.done"))
    outer_n, inner_n = (k, width) if columns_inner else (width, k)
    x(f"br label %{pre}")
    x.block(pre)
    x(f"br label %{oh}")
    x.block(oh)
    o, o_next = x.fresh("po"), x.fresh("po.next")
    x(f"{o} = phi i64 [0, %{pre}], [{o_next}, %{iend}]")
    x(f"br label %{ih}")
    x.block(ih)
    i, i_next = x.fresh("pi"), x.fresh("pi.next")
    x(f"{i} = phi i64 [0, %{oh}], [{i_next}, %{ih}]")
    kv, jv = (o, i) if columns_inner else (i, o)
    sk, sj, s1, d1, d2 = (x.fresh(h) for h in ("sk", "sj", "s1", "d1", "d2"))
    x(f"{sk} = mul i64 {kv}, {sbk}")
    x(f"{sj} = mul i64 {jv}, {sbn}")
    x(f"{s1} = add i64 {sk}, {sj}")
    x(f"{d1} = mul nuw nsw i64 {kv}, {nr}")
    x(f"{d2} = add nuw nsw i64 {d1}, {jv}")
    sp, val, dp = x.fresh("sp"), x.fresh("v"), x.fresh("dp")
    x(f"{sp} = getelementptr i8, ptr %bj, i64 {s1}")
    x(f"{val} = load {t}, ptr {sp}, align 1")
    x(f"{dp} = getelementptr inbounds {t}, ptr %bp, i64 {d2}")
    x(f"store {t} {val}, ptr {dp}")
    x(f"{i_next} = add nuw nsw i64 {i}, 1")
    c = x.fresh("c")
    x(f"{c} = icmp eq i64 {i_next}, {inner_n}")
    x.latch(c, iend, ih, vectorize=True)
    x.block(iend)
    x(f"{o_next} = add nuw nsw i64 {o}, 1")
    c2 = x.fresh("c")
    x(f"{c2} = icmp eq i64 {o_next}, {outer_n}")
    x.latch(c2, done, oh)
    x.block(done)


def _micro(x: _Text, spec: GemmSpec, t: str, vt: str, vl: int, rows: int, vectors: int,
           last: int, nr: int, *, blocks: int, sam: str, sak: str) -> None:
    """``blocks`` blocks of ``rows`` rows of C (block b from row min(b * rows, M - rows) on)
    over the packed panel (columns from ``%j0`` on): each block's rows x vectors accumulators
    run over k in vector registers, then are stored (the last vector's first ``last`` lanes
    only)."""
    f = _INTRINSIC[spec.dtype]
    pre, bh, kh, kend, done = (x.label(h) for h in ("m.pre", "m.block", "m.k", "m.kend",
                                                    "m.done"))
    x(f"br label %{pre}")
    x.block(pre)
    x(f"br label %{bh}")
    # row-block loop
    x.block(bh)
    blk, blk_next = x.fresh("blk"), x.fresh("blk.next")
    x(f"{blk} = phi i64 [0, %{pre}], [{blk_next}, %{kend}]")
    r0 = x.fresh("r0")
    x(f"{r0} = mul nuw nsw i64 {blk}, {rows}")
    r0b, over = x.fresh("r0b"), x.fresh("over")
    x(f"{over} = icmp ugt i64 {r0}, {spec.m - rows}")
    x(f"{r0b} = select i1 {over}, i64 {spec.m - rows}, i64 {r0}")
    x(f"br label %{kh}")
    # k loop: accumulators as phis
    x.block(kh)
    kk, kk_next = x.fresh("kk"), x.fresh("kk.next")
    x(f"{kk} = phi i64 [0, %{bh}], [{kk_next}, %{kh}]")
    acc = [[x.fresh(f"acc{r}_{v}_") for v in range(vectors)] for r in range(rows)]
    nxt = [[x.fresh(f"nacc{r}_{v}_") for v in range(vectors)] for r in range(rows)]
    for r in range(rows):
        for v in range(vectors):
            x(f"{acc[r][v]} = phi {vt} [zeroinitializer, %{bh}], [{nxt[r][v]}, %{kh}]")
    kb2 = x.fresh("kb")
    x(f"{kb2} = mul nuw nsw i64 {kk}, {nr}")
    bv = []
    for v in range(vectors):
        off, ptr, val = x.fresh("bo"), x.fresh("bptr"), x.fresh("bv")
        x(f"{off} = add nuw nsw i64 {kb2}, {v * vl}")
        x(f"{ptr} = getelementptr inbounds {t}, ptr %bp, i64 {off}")
        x(f"{val} = load {vt}, ptr {ptr}, align {min(64, vl * np.dtype(spec.dtype).itemsize)}")
        bv.append(val)
    ak = x.fresh("ak")
    x(f"{ak} = mul i64 {kk}, {sak}")
    for r in range(rows):
        row, rs, off, ptr, val, ins, spl = (x.fresh(h) for h in ("ar", "ars", "ao", "aptr",
                                                                  "av", "ai", "as"))
        x(f"{row} = add nuw nsw i64 {r0b}, {r}")
        x(f"{rs} = mul i64 {row}, {sam}")
        x(f"{off} = add i64 {rs}, {ak}")
        x(f"{ptr} = getelementptr i8, ptr %a, i64 {off}")
        x(f"{val} = load {t}, ptr {ptr}, align 1")
        x(f"{ins} = insertelement {vt} poison, {t} {val}, i64 0")
        x(f"{spl} = shufflevector {vt} {ins}, {vt} poison, <{vl} x i32> zeroinitializer")
        for v in range(vectors):
            x(f"{nxt[r][v]} = call {vt} @llvm.fma.v{vl}{f}({vt} {spl}, {vt} {bv[v]}, "
              f"{vt} {acc[r][v]})")
    x(f"{kk_next} = add nuw nsw i64 {kk}, 1")
    kc = x.fresh("kc")
    x(f"{kc} = icmp eq i64 {kk_next}, {spec.k}")
    x.latch(kc, kend, kh)
    # store the block
    x.block(kend)
    mask = "<" + ", ".join(f"i1 {'true' if i < last else 'false'}" for i in range(vl)) + ">"
    for r in range(rows):
        row, rs = x.fresh("cr"), x.fresh("crs")
        x(f"{row} = add nuw nsw i64 {r0b}, {r}")
        x(f"{rs} = mul nuw nsw i64 {row}, {spec.n}")
        for v in range(vectors):
            off, off2, ptr = x.fresh("co"), x.fresh("co2"), x.fresh("cptr")
            x(f"{off} = add nuw nsw i64 {rs}, %j0")
            x(f"{off2} = add nuw nsw i64 {off}, {v * vl}")
            x(f"{ptr} = getelementptr inbounds {t}, ptr %c, i64 {off2}")
            if v == vectors - 1 and last < vl:
                x(f"call void @llvm.masked.store.v{vl}{f}.p0({vt} {nxt[r][v]}, ptr {ptr}, "
                  f"i32 {np.dtype(spec.dtype).itemsize}, <{vl} x i1> {mask})")
            else:
                x(f"store {vt} {nxt[r][v]}, ptr {ptr}, align {np.dtype(spec.dtype).itemsize}")
    x(f"{blk_next} = add nuw nsw i64 {blk}, 1")
    bc = x.fresh("bc")
    x(f"{bc} = icmp eq i64 {blk_next}, {blocks}")
    x.latch(bc, done, bh)
    x.block(done)


def render(specs: list[GemmSpec]) -> str:
    """One module's IR text holding every spec's functions."""
    declares = []
    for dtype in sorted({s.dtype for s in specs}):
        vl, t, f = lanes(dtype), _TYPES[dtype], _INTRINSIC[dtype]
        declares.append(f"declare <{vl} x {t}> @llvm.fma.v{vl}{f}(<{vl} x {t}>, <{vl} x {t}>, "
                        f"<{vl} x {t}>)")
        declares.append(f"declare void @llvm.masked.store.v{vl}{f}.p0(<{vl} x {t}>, ptr, i32, "
                        f"<{vl} x i1>)")
        declares.append(f"declare <{vl} x {t}> @llvm.masked.gather.v{vl}{f}.v{vl}p0("
                        f"<{vl} x ptr>, i32, <{vl} x i1>, <{vl} x {t}>)")
    declares.append("declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
    width = max((lanes(s.dtype) * np.dtype(s.dtype).itemsize * 8 for s in specs), default=128)
    vectors = f'"min-legal-vector-width"="{width}" "prefer-vector-width"="{width}"'
    attributes = (f"attributes #0 = {{ nounwind {vectors} }}\n"
                  f"attributes #1 = {{ nounwind noinline {vectors} }}")
    functions, metadata, base = [], [], 2
    for s in sorted(set(specs), key=lambda s: s.name):
        text, nodes, base = _function(s, base)
        functions.append(text)
        metadata.append(nodes)
    return ("\n".join(declares) + "\n\n" + "".join(functions) + "\n" + attributes + "\n"
            + "\n".join(metadata) + "\n" + _LOOP_OPTIONS)


# --- compiled products ------------------------------------------------------------------------

_OBJECTS_FN = ctypes.CFUNCTYPE(None, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t)
# A product splits its items across the intra-op threads where it is estimated at
# PARALLEL_MIN_US or more (codegen.jit's threshold for kernels), at FLOP_PER_US.
FLOP_PER_US = 140_000.0


@dataclass(frozen=True)
class Product:
    """A compiled product: ``objects(id(a), id(b), id(c))`` over array objects (where
    ``object_strides_ok``) on the calling thread; ``run(a, b, c)`` the same, its items
    split across the intra-op threads where it is large enough (``split``)."""
    spec: GemmSpec
    objects: ctypes._CFuncPtr
    chunks: int  # address of the items entry with the kernels' ABI
    items: int
    split: bool

    def run(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        """The product into ``c`` on ``runtime.get_num_threads()`` threads at most (the
        native pool's); the same bits on any number."""
        threads = min(get_num_threads(), self.items) if self.split else 1
        if threads <= 1:
            self.objects(id(a), id(b), id(c))
            return
        table = (ctypes.c_size_t * 3)(id(a), id(b), id(c))
        pool.run_checked(self.chunks, ctypes.addressof(table), 0,
                         _bounds(self.items, threads), threads)


@functools.lru_cache(maxsize=256)
def _bounds(items: int, chunks: int) -> ctypes.Array:
    return (ctypes.c_int64 * (chunks + 1))(*(items * c // chunks for c in range(chunks + 1)))


class _Module:
    def __init__(self, engine: llvm.ExecutionEngine, products: dict[GemmSpec, Product]) -> None:
        self.engine = engine  # owns the machine code
        self.products = products


_modules: dict[str, _Module] = {}
_lock = threading.Lock()


def compiled(specs: list[GemmSpec], cache_dir: str | os.PathLike[str] | None = None
             ) -> dict[GemmSpec, Product]:
    """Every spec's compiled product, from one module: kept in memory by its IR text, and on
    disk in the compiled-code cache's support store (``codegen.cache.support_code``)."""
    if not specs:
        return {}
    from codegen.cache import support_code

    text = render(specs)
    key = hashlib.sha256(text.encode()).hexdigest()
    with _lock:
        module = _modules.get(key)
        if module is None:
            code = support_code("gemm", text, target.emit, cache_dir)
            with target.LOCK:
                engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""),
                                                    target.new_target_machine())
                engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_file))
                engine.finalize_object()
                products = {}
                for s in set(specs):
                    address = engine.get_function_address(s.name)
                    chunks = engine.get_function_address(s.name + ".chunks")
                    if not address or not chunks:
                        raise RuntimeError(f"product {s.name} not found in its object code")
                    flop = 2 * s.batch * s.m * s.n * s.k
                    products[s] = Product(s, _OBJECTS_FN(address), chunks, items(s),
                                          flop / FLOP_PER_US >= PARALLEL_MIN_US)
            module = _modules[key] = _Module(engine, products)
    return {s: module.products[s] for s in specs}


def matmul(a: np.ndarray, b: np.ndarray, cache_dir: str | os.PathLike[str] | None = None
           ) -> np.ndarray:
    """``np.matmul(a, b)`` through a generated product where one applies (tests, and callers
    without a plan), every assumption checked here."""
    a, b = np.asarray(a), np.asarray(b)
    spec = None
    if a.dtype == b.dtype and type(a) is np.ndarray and type(b) is np.ndarray \
            and object_strides_ok():
        spec = GemmSpec.of(a.shape, a.strides, b.shape, b.strides, a.dtype)
    if spec is None:
        return np.matmul(a, b)
    out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (spec.m, spec.n), a.dtype)
    compiled([spec], cache_dir)[spec].run(a, b, out)
    return out
