"""Matrix products as generated LLVM code: one module per dtype, for every shape.

numpy hands every ``matmul`` to its BLAS (OpenBLAS here), which pays a fixed cost per call
(argument checks, packing set-up, thread dispatch) that dominates small products: a
(32, 64) @ (64, 64).T float32 product took 5.8 us through ``np.matmul`` on this project's
2-core VM (45 GFLOP/s) and a (64, 128) @ (128, 128).T one 24 us (87 GFLOP/s). A plan's
products run here instead, called with their sizes: for each panel of NR columns of C, the
panel of B is packed on the stack (by contiguous rows; by 8 x 8 tiles transposed in
registers, or by gathers where K is no multiple of 8, where B's columns are contiguous, as in
a transposed weight; else element by element; zeros past N), all of K or KC rows of it at a
time (see PACK_BYTES), then a register-blocked micro-kernel keeps an MR x NR block of C in
vector registers while it walks those rows, broadcasting one element of A per row, so A may
have any strides (the rows past the last MR-row block, TAIL_ROWS or fewer, one block of
TAIL_ROWS). Where A's rows and B's columns both run along K and A has few rows (a
convolution's weight gradient) or C few columns (a classifier's last layer), a panel's
elements are dot products instead (``DOT_MAX_M``, ``DOT_MAX_N``), B unpacked. Row and column strides are read from
the operands' array objects at each call, and so are the batch's (any axes broadcast), so
any layout runs the same code. The code holds no shape: it is compiled once per machine
(about 0.07 s before TAIL_ROWS' blocks, 1.3 to 1.5 times that since: 0.23 -> 0.30 s on a
loaded machine; then read from the compiled-code cache) and loaded once per process, whatever
products a plan has.

A product's work items are its panels (of each matrix of a batch): a large one splits them
across the native pool's threads (``Product.run``), each computed the same way wherever it
runs. With no BLAS threads spinning beside them, two threads reached 285 to 316 GFLOP/s on
mlp_large's and gpt's shapes where OpenBLAS reached 221 to 307, one thread 144 to 166 against
117 to 150. Against PyTorch 2.13's (MKL, one thread, side by side in one process, each shape's
runs in rotated order, best of 15; the shared 2-core VM varied 15 % from run to run): gpt's
x @ W (1024, 128) @ (128, 512) 176 GFLOP/s to 183-189, x @ W.T 178 to 189-191, (1024, 512) @
(512, 128) 186 to 138-141, its weight gradients x.T @ dy 145-149 to 130-154, its batched
attention 85-138 to 59-123, its 103-column head 103-155 to 90-141; products of few rows trail:
(32, 512) @ (512, 512) 119-128 to 139, (16, 288) @ (288, 1024) 106-107 to 126-129.

``GemmSpec.of`` says whether a product qualifies (float32 or float64, both operands at least
2-D, batch dimensions that broadcast; any K: past PACK_BYTES a panel is packed in chunks);
``compiled(specs)`` gives ``Product``s, called over array objects (data pointer, nd,
dimensions and strides read at ``ARRAY_DATA_OFFSET``, ``ND_OFFSET``, ``DIMS_OFFSET`` and
``STRIDES_OFFSET``, checked by ``object_strides_ok``). The caller guarantees the rest: numpy
arrays of the spec's dtype and of shapes whose product it is, and ``c`` a fresh C-contiguous
array of the product's shape.

Sums run in a fixed order (k from 0 to K - 1, one fused multiply-add a step into one
accumulator per element; a dot product's in VL partial sums, k = l, l + VL, ..., added pairwise
at the end), so a product's bits do not depend on threads or on the call; they differ from
BLAS's by rounding only.
"""

from __future__ import annotations

import array
import ctypes
import dataclasses
import functools
import hashlib
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

from codegen import pool, target
from codegen.jit import PARALLEL_MIN_US, even_bounds
from codegen.llvm_emit import ARRAY_DATA_OFFSET, object_entry_ok
from codegen.llvm_math import lanes
from runtime._threads import get_num_threads

# where a numpy array object keeps nd (an int), its dimensions and its strides pointers
# (PyArrayObject_fields, after the data pointer); ``object_strides_ok`` checks all three
ND_OFFSET = ARRAY_DATA_OFFSET + 8
DIMS_OFFSET = ARRAY_DATA_OFFSET + 16
STRIDES_OFFSET = ARRAY_DATA_OFFSET + 24

# A packed panel of B lives on the stack of the thread computing it, its frame probed page by
# page: all of K at once where A's rows are contiguous and the panel takes at most PACK_BYTES
# (1024 float32 rows of NR = 64; the threads Python starts get 8 MiB stacks), else KC rows
# (values of k) at a time, a chunk after the first starting its accumulators from the sums the
# one before stored in C. Where A is transposed (a weight gradient's x.T), each step of k
# reads a new cache line of A, which a row block's neighbour reads again: over KC steps those
# lines stay in L1, over all of K they did not: gpt's (512, 1024).T @ (1024, 128) 116-123 ->
# 147-149 GFLOP/s, (1024, 512).T @ (512, 128) 112-121 -> 132-141. Where A's rows are
# contiguous chunks lost 3 to 5 % to their stores and loads of C (at KC = 128, 256 or 512).
PACK_BYTES = 256 * 1024
KC = 128
# the micro-kernel: MR rows of A times NV vectors of B, MR x NV accumulators: 6 x 4 = 24 of
# the 32 vector registers of AVX-512, with NV vectors of B and one broadcast of A; 6 x 2 = 12
# of 16 elsewhere (``vectors()``). Measured against 8 x 3, 9 x 3 and 14 x 2 vectors (h37,
# side by side in one process, one thread, each shape's runs in rotated order, best of 15):
# none won on any of gpt's, mlp_large's or cnn's shapes; 14 x 2 lost 20 to 40 %, 8 x 3 up to
# 30 % (gpt's attention, (16, 4, 64, 32) @ (16, 4, 32, 64): 124 -> 93 GFLOP/s)
MR = 6
# the rows left past the last MR-row block, where TAIL_ROWS or fewer, are one block of
# TAIL_ROWS rows (4 x NV accumulators), not MR (a block's rows past M are computed again, as
# waste): M = 8 computed 12 rows, now 10; 16 18, now 16; 64 (gpt's attention) 66, now 64.
# (8, 72) @ (72, 4096) 58-60 -> 62-64 GFLOP/s, (16, 288) @ (288, 1024) 98-102 -> 106-107,
# (32, 512) @ (512, 512) 115-124 -> 119-128, (16, 4, 64, 32) @ (16, 4, 32, 64) 132-137 ->
# 137-138, the others within noise; the module's compile time 1.3 to 1.5 x
TAIL_ROWS = 4
# A transposed B (columns contiguous) is packed by tiles transposed in registers
# (TILE_BYTES-wide vectors: 8 x 8 float32) where K is a multiple of the tile: gathers took 1.6
# cycles an element, and mlp_large's (128, 1024) @ (1024, 1024).T ran at 104 GFLOP/s against
# 141 by tiles. 16 x 16 tiles (64 bytes: a third fewer shuffles an element, but K a multiple
# of 16) were within noise on gpt's x @ W.T, its attention's (64, 32) @ (32, 64) with B
# transposed and mlp_large's, side by side.
TILE_BYTES = 32
# The micro-kernel prefetches A's first row of its block this many steps of k ahead: where A
# is transposed (a weight gradient's x.T), each step of k is a new cache line, and a new 4 KiB
# page every few steps, which the hardware prefetchers do not cross. gpt's (512, 1024).T @
# (1024, 128) ran at 85 GFLOP/s without, 109-113 with 8 or 16 steps, 100 with 32; the other
# shapes of gpt and mlp_large within noise (0: no prefetch)
A_PREFETCH = 16
# (prefetching all MR rows of the block, not the first only, lost 10 to 25 % where A's rows
# are contiguous, gpt's attention and mlp_large's first layer; a write prefetch of the
# block's C before its k loop was within noise)
# Where both operands are contiguous along K (A's rows, B's columns: a convolution's weight
# gradient, dout @ cols.T) and C has few rows, a panel's elements are dot products instead:
# DOT_ROWS x DOT_COLS of them at a time, each in a vector of partial sums over k (k, k + VL,
# ...), added pairwise at the end. Packing such a B (a transpose) cost more than the product
# where few rows of A reuse it: cnn's (8, 4096) @ (4096, 9) took 37 us by panels, 8 to 11 as
# dots (numpy 8), its (16, 1024) @ (1024, 72) 56 against 23 to 29 (numpy 58). The dots run at
# 80 to 120 GFLOP/s, panels at 135 to 165 where 32 rows or more reuse them: (32, 1024) @
# (1024, 256) 169 us by panels, 204 as dots; (64, 1024) @ (1024, 64) 62 against 98.
# (Reading B's rows in place of a packed panel where its rows are contiguous and C has 3 row
# blocks or fewer lost: (16, 288) @ (288, 1024) 72-97 -> 64-83 GFLOP/s, (18, 512) @ (512,
# 512) 95-108 -> 85-97; B's rows N apart fall in the same few sets of L1.)
DOT_MAX_M = 16
DOT_MIN_K = 128
# or where C has 16 columns or fewer and K is long (a classifier's last layer, x @ W.T): the
# panel's one vector of columns keeps 6 accumulators, too few to hide the FMAs' latency, and
# its columns are packed element by element. (128, 1024) @ (1024, 10): 40 -> 69-83 GFLOP/s,
# (128, 1024) @ (1024, 16) 46-52 -> 77-79, (1024, 1024) @ (1024, 16) 74-88 -> 92-97; at K =
# 128 the dots' sums of lanes weigh more ((1024, 128) @ (128, 10) 59-70 -> 53-57): panels
DOT_MAX_N = 16
DOT_NARROW_MIN_K = 256
# or where C is small too (DOT_SMALL_C elements at most: a small batch's classifier, mlp_small's
# (32, 64) @ (64, 10) with W.T) and K is DOT_SMALL_MIN_K or more: a panel's packing (the
# panel zeroed, its columns copied element by element) is then paid over few rows. Side by
# side (h43, one thread, best of 12 rounds, B's columns contiguous), panels -> dots in ns:
# (32, 64) @ (64, 10) 1581 -> 1408, (8, 64) @ (64, 10) 1048 -> 509, (32, 128) @ (128, 10)
# 3030 -> 1520, (32, 64) @ (64, 16) 1840 -> 1744, (128, 64) @ (64, 3) 3617 -> 1857; where C
# is larger the dots lose ((64, 64) @ (64, 10) 2258 -> 2344, (128, 64) @ (64, 16) 4263 ->
# 5840), and over K = 16 (one vector, its lanes' sum weighing most) lose at any size
DOT_SMALL_C = 512
DOT_SMALL_MIN_K = 64
# A product splits its items across the intra-op threads where it is estimated at
# PARALLEL_MIN_US or more (codegen.jit's threshold for kernels), at FLOP_PER_US.
FLOP_PER_US = 140_000.0

_TYPES = {"float32": "float", "float64": "double"}
_INTRINSIC = {"float32": "f32", "float64": "f64"}
# the i64 words a product's call reads (``Product.dims``)
_BATCH, _M, _N, _K, _PANELS, _ITEMS, _ADD, _B_SWAPPED, _BLOCKS, _TAILS = range(10)


def vectors() -> int:
    """NV: vectors of B a micro-kernel step holds, as many as the host's registers allow
    (AVX-512, whose vectors hold 16 float32, has 32 of them)."""
    return 4 if lanes("float32") == 16 else 2


def panel_width(dtype: str) -> int:
    """NR: columns of C a packed panel of B holds."""
    return vectors() * lanes(dtype)


@dataclass(frozen=True)
class GemmSpec:
    """One product ``C[b] = A[b] @ B[b]`` over the broadcast batch (``batch`` matrices): A
    is (m, k), B is (k, n), C a fresh C-contiguous array of the batch's shape and (m, n).
    Everything about the operands' layouts (strides, which batch dimensions broadcast) is
    read from their array objects at each call: any layout runs the same code."""

    dtype: str
    batch: int
    m: int
    n: int
    k: int
    addend: bool = False  # C = A @ B + E: E added to the rounded product as it is stored
    # B given as the array whose last two axes it swaps (W for W.T): its row and column
    # strides read the other way round, so the caller makes no transposed view of it
    b_swapped: bool = False

    @classmethod
    def of(cls, a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: np.dtype
           ) -> GemmSpec | None:
        """The spec of ``matmul(a, b)`` for operands of these shapes, or None where a
        generated product does not apply (numpy's matmul then runs)."""
        dtype = np.dtype(dtype)
        if dtype.name not in _TYPES or len(a_shape) < 2 or len(b_shape) < 2:
            return None
        (m, k), (k2, n) = a_shape[-2:], b_shape[-2:]
        if k != k2 or min(m, n, k) < 1:
            return None
        try:
            batch = math.prod(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
        except ValueError:
            return None
        return cls(dtype.name, batch, m, n, k) if batch >= 1 else None

    def dims(self) -> tuple[int, ...]:
        """The words the product's call reads: batch, m, n, k, the panels of a matrix, the
        items of the call, whether it adds an addend, whether B comes with its last two
        axes swapped, and its blocks of rows (``row_blocks``)."""
        panels = -(-self.n // panel_width(self.dtype))
        return (self.batch, self.m, self.n, self.k, panels, self.batch * panels,
                int(self.addend), int(self.b_swapped), *row_blocks(self.m))


def row_blocks(m: int) -> tuple[int, int]:
    """A panel's blocks of rows for M = ``m``: MR-row blocks from row 0, then blocks of
    TAIL_ROWS rows, a block's rows past M computing row M - 1 again. As many MR blocks as
    leave TAIL_ROWS rows or fewer (the last passing M by MR - 1 - TAIL_ROWS rows at most),
    or one fewer where the rows then left, in TAIL_ROWS blocks, make fewer rows computed:
    M = 32 computed 5 x 6 + 4 = 34 rows, now 4 x 6 + 2 x 4 = 32 (mlp_small's products: 6 %
    fewer multiply-adds, their time 3 to 9 % less side by side); M = 8 10 rows, now 8; M =
    128 130, now 128."""
    if not TAIL_ROWS:
        return -(-m // MR), 0

    def plan(blocks: int) -> tuple[int, int, int]:
        tails = -(-max(m - blocks * MR, 0) // TAIL_ROWS)
        return blocks * MR + tails * TAIL_ROWS, blocks, tails

    most = (m + MR - 1 - TAIL_ROWS) // MR
    # fewest rows; of as many, more MR blocks (a TAIL_ROWS block does less per row)
    _, blocks, tails = min((plan(b) for b in {most, max(most - 1, 0)}),
                           key=lambda p: (p[0], -p[1]))
    return blocks, tails


@functools.cache
def object_strides_ok() -> bool:
    """Whether this interpreter's numpy arrays keep nd and their strides where the products
    read them (``ND_OFFSET``, ``STRIDES_OFFSET``; ``codegen.llvm_emit.object_entry_ok`` checks the
    data pointer)."""

    if not object_entry_ok():
        return False
    base = np.arange(24.0).reshape(4, 6)
    for a in (base, base.T, base[1:3, ::2], np.empty((3, 2, 5), np.float32).transpose(1, 0, 2)):
        nd = ctypes.c_int.from_address(id(a) + ND_OFFSET).value
        if nd != a.ndim:
            return False
        for offset, want in ((DIMS_OFFSET, a.shape), (STRIDES_OFFSET, a.strides)):
            pointer = ctypes.c_void_p.from_address(id(a) + offset).value
            if not pointer or tuple((ctypes.c_int64 * nd).from_address(pointer)) != want:
                return False
    return True


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


def _splat(x: _Text, value: str, vl: int, elem: str) -> str:
    ins, spl = x.fresh("ins"), x.fresh("splat")
    x(f"{ins} = insertelement <{vl} x {elem}> poison, {elem} {value}, i64 0")
    x(f"{spl} = shufflevector <{vl} x {elem}> {ins}, <{vl} x {elem}> poison, <{vl} x i32> "
      f"zeroinitializer")
    return spl


def _loop(x: _Text, hint: str, start: str, count: str, body, step: int | str = 1,
          vectorize: bool = False) -> None:
    """``for i = start; i < start + count * step; i += step: body(i)`` (count >= 1), a loop
    LLVM neither unrolls nor (unless ``vectorize``) vectorizes; ``body`` emits its lines and
    may open blocks of its own."""
    pre, head, done = x.label(f"{hint}.pre"), x.label(f"{hint}"), x.label(f"{hint}.done")
    x(f"br label %{pre}")
    x.block(pre)
    end = x.fresh(f"{hint}.end")
    span = x.fresh(f"{hint}.span")
    x(f"{span} = mul i64 {count}, {step}")
    x(f"{end} = add i64 {start}, {span}")
    x(f"br label %{head}")
    x.block(head)
    i, nxt = x.fresh(hint), x.fresh(f"{hint}.next")
    latch = x.label(f"{hint}.latch")
    x(f"{i} = phi i64 [{start}, %{pre}], [{nxt}, %{latch}]")
    body(i)
    x(f"br label %{latch}")
    x.block(latch)
    x(f"{nxt} = add i64 {i}, {step}")
    c = x.fresh("c")
    x(f"{c} = icmp eq i64 {nxt}, {end}")
    x.latch(c, done, head, vectorize)
    x.block(done)


def _function(dtype: str) -> tuple[str, str]:
    """The IR of the products of ``dtype`` (see the module's docstring): the item loop
    ``gemm.DTYPE.items(ptr a, ptr b, ptr c, ptr e, ptr dims, i64 start, i64 end)`` over array
    objects (``e``: the addend where the product's words say so, else ``c`` again) and the
    product's words, and its two entries, ``gemm.DTYPE(i64 a, i64 b, i64 c, i64 e, i64 dims)``
    (every item, on the calling thread) and ``gemm.DTYPE.chunks(ptr objects, i64 start, i64
    end)`` (a range of items, the kernels' ABI for ``codegen.pool``; objects holds a, b, c, e
    and dims). Then its loops' metadata."""
    t, vl = _TYPES[dtype], lanes(dtype)
    size = np.dtype(dtype).itemsize
    vt = f"<{vl} x {t}>"
    nv = vectors()
    nr = nv * vl
    x = _Text(2)
    x.block("entry")
    for v in "abce":
        x(f"%{v}.field = getelementptr inbounds i8, ptr %{v}.obj, i64 {ARRAY_DATA_OFFSET}")
        x(f"%{v}0 = load ptr, ptr %{v}.field, align 8")
    for v in "abce":  # nd, dimensions and strides
        x(f"%{v}.ndp = getelementptr inbounds i8, ptr %{v}.obj, i64 {ND_OFFSET}")
        x(f"%{v}.nd32 = load i32, ptr %{v}.ndp, align 4")
        x(f"%{v}.nd = sext i32 %{v}.nd32 to i64")
        x(f"%{v}.dpp = getelementptr inbounds i8, ptr %{v}.obj, i64 {DIMS_OFFSET}")
        x(f"%{v}.dp = load ptr, ptr %{v}.dpp, align 8")
        x(f"%{v}.spp = getelementptr inbounds i8, ptr %{v}.obj, i64 {STRIDES_OFFSET}")
        x(f"%{v}.sp = load ptr, ptr %{v}.spp, align 8")
    x("%cb = sub i64 %c.nd, 2")  # C's batch axes: the batch of the call
    x("%cb.last = sub i64 %c.nd, 3")
    x("%has.batch = icmp sgt i64 %cb, 0")
    for v in "ab":  # row and column strides: the last two of the object's strides
        x(f"%{v}.shift = sub i64 %{v}.nd, %c.nd")  # its axis for C's axis j: j + shift
        for j, back in ((0, 2), (1, 1)):
            x(f"%{v}.i{j} = sub i64 %{v}.nd, {back}")
            x(f"%{v}.s{j}p = getelementptr inbounds i64, ptr %{v}.sp, i64 %{v}.i{j}")
            x(f"%{v}.s{j}{'.raw' if v == 'b' else ''} = load i64, ptr %{v}.s{j}p, align 8")
    # B given as the array of its last two axes swapped (``GemmSpec.b_swapped``): its batch
    # axes are B's, its rows and columns the other way round
    x(f"%bsw.p = getelementptr inbounds i64, ptr %dims, i64 {_B_SWAPPED}")
    x("%bsw.w = load i64, ptr %bsw.p, align 8")
    x("%bsw = icmp ne i64 %bsw.w, 0")
    x("%b.s0 = select i1 %bsw, i64 %b.s1.raw, i64 %b.s0.raw")
    x("%b.s1 = select i1 %bsw, i64 %b.s0.raw, i64 %b.s1.raw")
    # the addend: its columns contiguous (the caller's test), its rows along its second last
    # axis unless it has none or it is of size 1 (broadcast rows)
    x("%e.shift = sub i64 %e.nd, %c.nd")
    x("%e.ra = sub i64 %e.nd, 2")
    x("%e.has.rows = icmp sge i64 %e.ra, 0")
    x("%e.rac = select i1 %e.has.rows, i64 %e.ra, i64 0")
    x("%e.rdp = getelementptr inbounds i64, ptr %e.dp, i64 %e.rac")
    x("%e.rd = load i64, ptr %e.rdp, align 8")
    x("%e.rsp = getelementptr inbounds i64, ptr %e.sp, i64 %e.rac")
    x("%e.rs = load i64, ptr %e.rsp, align 8")
    x("%e.real = icmp ne i64 %e.rd, 1")
    x("%e.rows = and i1 %e.has.rows, %e.real")
    x("%e.s0 = select i1 %e.rows, i64 %e.rs, i64 0")
    x(f"%add.p = getelementptr inbounds i64, ptr %dims, i64 {_ADD}")
    x("%add.w = load i64, ptr %add.p, align 8")
    x("%add = icmp ne i64 %add.w, 0")
    for word, name in ((_M, "m"), (_N, "n"), (_K, "k"), (_PANELS, "panels")):
        x(f"%{name}.p = getelementptr inbounds i64, ptr %dims, i64 {word}")
        x(f"%{name} = load i64, ptr %{name}.p, align 8")
    x("%cmat = mul i64 %m, %n")
    x(f"%cbytes = mul i64 %cmat, {size}")
    # chunks of K: all of it at once where A's rows are contiguous and its panel fits
    # PACK_BYTES, else KC rows at a time (see KC)
    x(f"%a.k.dense = icmp eq i64 %a.s1, {size}")
    x(f"%whole.fits = icmp ule i64 %k, {PACK_BYTES // (nr * size)}")
    x("%whole = and i1 %a.k.dense, %whole.fits")
    x(f"%kc.step = select i1 %whole, i64 %k, i64 {KC}")
    x(f"%panel.elems = mul i64 %kc.step, {nr}")
    x(f"%bp = alloca {t}, i64 %panel.elems, align 64")
    x("%chunks.up0 = add i64 %k, %kc.step")
    x("%chunks.up = sub i64 %chunks.up0, 1")
    x("%chunks = udiv i64 %chunks.up, %kc.step")
    x(f"%dot.a = icmp eq i64 %a.s1, {size}")
    x(f"%dot.b = icmp eq i64 %b.s0, {size}")
    x(f"%dot.few.rows = icmp sle i64 %m, {DOT_MAX_M}")
    x(f"%dot.k = icmp sge i64 %k, {max(DOT_MIN_K, vl)}")
    x("%dot.rows = and i1 %dot.few.rows, %dot.k")
    x(f"%dot.narrow = icmp sle i64 %n, {DOT_MAX_N}")
    x(f"%dot.long = icmp sge i64 %k, {max(DOT_NARROW_MIN_K, vl)}")
    # or a small C over K long enough (DOT_SMALL_C, DOT_SMALL_MIN_K)
    x("%dot.c = mul i64 %m, %n")
    x(f"%dot.small = icmp sle i64 %dot.c, {DOT_SMALL_C}")
    x(f"%dot.small.k = icmp sge i64 %k, {max(DOT_SMALL_MIN_K, vl)}")
    x("%dot.small.c = and i1 %dot.small, %dot.small.k")
    x("%dot.either = or i1 %dot.long, %dot.small.c")
    x("%dot.cols = and i1 %dot.narrow, %dot.either")
    x("%dot.m = or i1 %dot.rows, %dot.cols")
    x("%dot.ab = and i1 %dot.a, %dot.b")
    x("%use.dots = and i1 %dot.ab, %dot.m")
    # MR-row blocks, then blocks of TAIL_ROWS rows (``row_blocks``: the product's words)
    for word, name in ((_BLOCKS, "blocks"), (_TAILS, "tails")):
        x(f"%{name}.p = getelementptr inbounds i64, ptr %dims, i64 {word}")
        x(f"%{name} = load i64, ptr %{name}.p, align 8")
    x("%any.blocks = icmp sgt i64 %blocks, 0")
    x(f"%tail.first = mul i64 %blocks, {MR}")
    x("%any.tail = icmp sgt i64 %tails, 0")
    x("%last.row = sub i64 %m, 1")
    x("%none = icmp sge i64 %start, %end")
    x("br i1 %none, label %exit, label %items.pre")
    x.block("items.pre")
    x("%count = sub i64 %end, %start")

    def item(it: str) -> None:
        x(f"%bi = udiv i64 {it}, %panels")
        x(f"%p = urem i64 {it}, %panels")
        _batch_offsets(x)
        for v in "abe":
            x(f"%{v} = getelementptr i8, ptr %{v}0, i64 %{v}.off")
        x("%c.off = mul i64 %bi, %cbytes")
        x("%c = getelementptr i8, ptr %c0, i64 %c.off")
        x(f"%j0 = mul i64 %p, {nr}")
        x("%rem = sub i64 %n, %j0")
        x(f"%short = icmp slt i64 %rem, {nr}")
        x(f"%w = select i1 %short, i64 %rem, i64 {nr}")
        x("%bj.off = mul i64 %j0, %b.s1")
        x("%bj = getelementptr i8, ptr %b, i64 %bj.off")
        lane_ids = "<" + ", ".join(f"i64 {i}" for i in range(vl)) + ">"
        masks = []  # the panel's columns below N, vector by vector
        for v in range(nv):
            wv = x.fresh("wv")
            x(f"{wv} = sub i64 %w, {v * vl}")
            spl = _splat(x, wv, vl, "i64")
            mask = x.fresh("mask")
            x(f"{mask} = icmp slt <{vl} x i64> {lane_ids}, {spl}")
            masks.append(mask)
        x("br i1 %use.dots, label %dots, label %panel")
        x.block("dots")
        _dots(x, dtype, t, vt, vl, size)
        x("br label %item.end")
        x.block("panel")
        # as many vectors as the panel's columns need: NV, 2 or 1
        x(f"%thin = icmp sle i64 %w, {vl}")
        x(f"%half = icmp sle i64 %w, {2 * vl}")

        def chunk(k0: str) -> None:  # rows k0 .. k0 + KC - 1 of the panel (fewer at the end)
            x(f"%k0 = add i64 {k0}, 0")
            x("%kc.rest = sub i64 %k, %k0")
            x("%kc.last = icmp sle i64 %kc.rest, %kc.step")
            x("%kc.len = select i1 %kc.last, i64 %kc.rest, i64 %kc.step")
            x("%kc.first = icmp eq i64 %k0, 0")
            x(f"%chunk.bytes = mul i64 %kc.len, {nr * size}")
            x("%bjk.off = mul i64 %k0, %b.s0")
            x("%bjk = getelementptr i8, ptr %bj, i64 %bjk.off")
            x("%ak0 = mul i64 %k0, %a.s1")
            x("%do.add = and i1 %add, %kc.last")
            _pack(x, dtype, t, size, vl, nr, masks)
            wide, half, thin, not_thin, end = (x.label(h) for h in (
                "wide", "half", "thin", "not.thin", "chunk.end"))
            x(f"br i1 %thin, label %{thin}, label %{not_thin}")
            x.block(not_thin)
            x(f"br i1 %half, label %{half}, label %{wide}")
            for count, block in ((nv, wide), (min(2, nv), half), (1, thin)):
                x.block(block)
                _micro(x, dtype, t, vt, vl, nr, count, masks)
                x(f"br label %{end}")
            x.block(end)

        _loop(x, "kc", "0", "%chunks", chunk, step="%kc.step")
        x("br label %item.end")
        x.block("item.end")

    _loop(x, "item", "%start", "%count", item)
    x("br label %exit")
    x.block("exit")
    x("ret void")
    body = "\n".join(x.lines)
    name = f"gemm.{dtype}"
    return (f'define internal void @"{name}.items"(ptr %a.obj, ptr %b.obj, ptr %c.obj, '
            f"ptr %e.obj, ptr %dims, i64 %start, i64 %end) #1 {{\n{body}\n}}\n\n"
            f'define void @"{name}"(i64 %ao, i64 %bo, i64 %co, i64 %eo, i64 %do) #0 {{\n'
            + "".join(f"  %{v} = inttoptr i64 %{v}o to ptr\n" for v in "abced")
            + f"  %items.p = getelementptr inbounds i64, ptr %d, i64 {_ITEMS}\n"
            "  %items = load i64, ptr %items.p, align 8\n"
            f'  call void @"{name}.items"(ptr %a, ptr %b, ptr %c, ptr %e, ptr %d, i64 0, '
            "i64 %items)\n  ret void\n}\n\n"
            f'define void @"{name}.chunks"(ptr %objects, i64 %start, i64 %end) #0 {{\n'
            + "".join(f"  %{v}.p = getelementptr inbounds ptr, ptr %objects, i64 {i}\n"
                      f"  %{v} = load ptr, ptr %{v}.p, align 8\n" for i, v in enumerate("abced"))
            + f'  call void @"{name}.items"(ptr %a, ptr %b, ptr %c, ptr %e, ptr %d, i64 %start, '
            "i64 %end)\n  ret void\n}\n\n", x.metadata())


def _batch_offsets(x: _Text) -> None:
    """``%a.off``, ``%b.off``, ``%e.off``: the byte offsets of matrix ``%bi`` of the batch in
    A, B and the addend.
    ``%bi`` runs over C's batch axes in C order; an operand's axis for C's axis j is
    j + shift (absent where negative), and one of size 1 broadcasts (offset 0 along it)."""
    x("br label %bo.entry")
    x.block("bo.entry")
    x("br i1 %has.batch, label %bo, label %bo.done")
    x.block("bo")
    x("%bo.j = phi i64 [%cb.last, %bo.entry], [%bo.j.next, %bo]")
    x("%bo.rem = phi i64 [%bi, %bo.entry], [%bo.rem.next, %bo]")
    for v in "abe":
        x(f"%bo.{v} = phi i64 [0, %bo.entry], [%bo.{v}.next, %bo]")
    x("%bo.cdp = getelementptr inbounds i64, ptr %c.dp, i64 %bo.j")
    x("%bo.cd = load i64, ptr %bo.cdp, align 8")
    x("%bo.idx = urem i64 %bo.rem, %bo.cd")
    x("%bo.rem.next = udiv i64 %bo.rem, %bo.cd")
    for v in "abe":
        x(f"%bo.{v}.ax = add i64 %bo.j, %{v}.shift")
        x(f"%bo.{v}.in = icmp sge i64 %bo.{v}.ax, 0")
        x(f"%bo.{v}.axc = select i1 %bo.{v}.in, i64 %bo.{v}.ax, i64 0")
        x(f"%bo.{v}.dptr = getelementptr inbounds i64, ptr %{v}.dp, i64 %bo.{v}.axc")
        x(f"%bo.{v}.d = load i64, ptr %bo.{v}.dptr, align 8")
        x(f"%bo.{v}.sptr = getelementptr inbounds i64, ptr %{v}.sp, i64 %bo.{v}.axc")
        x(f"%bo.{v}.s = load i64, ptr %bo.{v}.sptr, align 8")
        x(f"%bo.{v}.real = icmp ne i64 %bo.{v}.d, 1")
        x(f"%bo.{v}.use = and i1 %bo.{v}.in, %bo.{v}.real")
        x(f"%bo.{v}.step = mul i64 %bo.idx, %bo.{v}.s")
        x(f"%bo.{v}.add = select i1 %bo.{v}.use, i64 %bo.{v}.step, i64 0")
        x(f"%bo.{v}.next = add i64 %bo.{v}, %bo.{v}.add")
    x("%bo.j.next = sub i64 %bo.j, 1")
    x("%bo.end = icmp slt i64 %bo.j.next, 0")
    x.latch("%bo.end", "bo.done", "bo")
    x.block("bo.done")
    for v in "abe":
        x(f"%{v}.off = phi i64 [0, %bo.entry], [%bo.{v}.next, %bo]")


def _pack(x: _Text, dtype: str, t: str, size: int, vl: int, nr: int, masks: list[str]) -> None:
    """Pack the panel's ``%w`` columns of B from ``%bj`` into ``%bp``: ``bp[kk * NR + jj] =
    bj[kk * sbk + jj * sbn]`` (byte strides ``%b.s0``, ``%b.s1``), zeros past ``%w``, the way
    B's layout allows: rows contiguous (a k's columns as NV masked vector loads), columns
    contiguous in a full panel (TILE x TILE tiles transposed in registers where K is a
    multiple of TILE, else VL columns a gather), else element by element."""
    done = x.label("pack.done")
    rows, not_rows, cols, other = (x.label(h) for h in ("pack.rows", "pack.nr", "pack.cols",
                                                         "pack.any"))
    x(f"%rows.contiguous = icmp eq i64 %b.s1, {size}")
    x(f"br i1 %rows.contiguous, label %{rows}, label %{not_rows}")
    x.block(rows)
    _pack_rows(x, dtype, t, size, vl, nr, masks)
    x(f"br label %{done}")
    x.block(not_rows)
    x(f"%cols.contiguous = icmp eq i64 %b.s0, {size}")
    x(f"%full = icmp eq i64 %w, {nr}")
    x("%cols.full = and i1 %cols.contiguous, %full")
    x(f"br i1 %cols.full, label %{cols}, label %{other}")
    x.block(cols)
    tile = TILE_BYTES // size
    tiles, gathers = x.label("pack.tiles"), x.label("pack.gathers")
    x(f"%k.rest = urem i64 %kc.len, {tile}")
    x("%use.tiles = icmp eq i64 %k.rest, 0")
    x(f"br i1 %use.tiles, label %{tiles}, label %{gathers}")
    x.block(tiles)
    _pack_tiles(x, t, size, nr, tile)
    x(f"br label %{done}")
    x.block(gathers)
    _pack_gathers(x, dtype, t, size, vl, nr)
    x(f"br label %{done}")
    x.block(other)
    zero = x.label("pack.zero")
    x(f"br i1 %short, label %{zero}, label %{zero}.done")
    x.block(zero)  # the columns past N are zeros
    x("call void @llvm.memset.p0.i64(ptr align 64 %bp, i8 0, i64 %chunk.bytes, i1 false)")
    x(f"br label %{zero}.done")
    x.block(f"{zero}.done")
    _pack_elements(x, t, nr, "%b.s1", "%b.s0", columns_inner=False)
    x(f"br label %{done}")
    x.block(done)


def _pack_rows(x: _Text, dtype: str, t: str, size: int, vl: int, nr: int,
               masks: list[str]) -> None:
    """A panel whose rows are contiguous in B: each k's columns as NV vector loads masked to
    the panel's columns (zeros past them), stored whole."""
    vt = f"<{vl} x {t}>"

    def row(kk: str) -> None:
        off, base, d0 = x.fresh("rk"), x.fresh("rb"), x.fresh("rd")
        x(f"{off} = mul i64 {kk}, %b.s0")
        x(f"{base} = getelementptr i8, ptr %bjk, i64 {off}")
        x(f"{d0} = mul i64 {kk}, {nr}")
        for v in range(len(masks)):
            src, val, d1, dst = x.fresh("rs"), x.fresh("rv"), x.fresh("rd1"), x.fresh("rdp")
            x(f"{src} = getelementptr inbounds {t}, ptr {base}, i64 {v * vl}")
            x(f"{val} = call {vt} @llvm.masked.load.v{vl}{_INTRINSIC[dtype]}.p0(ptr {src}, "
              f"i32 1, <{vl} x i1> {masks[v]}, {vt} zeroinitializer)")
            x(f"{d1} = add i64 {d0}, {v * vl}")
            x(f"{dst} = getelementptr inbounds {t}, ptr %bp, i64 {d1}")
            x(f"store {vt} {val}, ptr {dst}, align 64")

    _loop(x, "rk", "0", "%kc.len", row)


def _pack_elements(x: _Text, t: str, nr: int, sbn: str, sbk: str, columns_inner: bool) -> None:
    """Element by element: the loop over the panel's columns innermost where
    ``columns_inner``, else the loop over k."""
    def element(kk: str, jj: str) -> None:
        sk, sj, s, d1, d, sp, val, dp = (x.fresh(h) for h in ("sk", "sj", "s", "d1", "d", "sp",
                                                              "v", "dp"))
        x(f"{sk} = mul i64 {kk}, {sbk}")
        x(f"{sj} = mul i64 {jj}, {sbn}")
        x(f"{s} = add i64 {sk}, {sj}")
        x(f"{d1} = mul i64 {kk}, {nr}")
        x(f"{d} = add i64 {d1}, {jj}")
        x(f"{sp} = getelementptr i8, ptr %bjk, i64 {s}")
        x(f"{val} = load {t}, ptr {sp}, align 1")
        x(f"{dp} = getelementptr inbounds {t}, ptr %bp, i64 {d}")
        x(f"store {t} {val}, ptr {dp}")

    if columns_inner:
        _loop(x, "pk", "0", "%kc.len", lambda kk: _loop(
            x, "pj", "0", "%w", lambda jj: element(kk, jj), vectorize=True))
    else:
        _loop(x, "pj", "0", "%w", lambda jj: _loop(
            x, "pk", "0", "%kc.len", lambda kk: element(kk, jj)))


def _pack_gathers(x: _Text, dtype: str, t: str, size: int, vl: int, nr: int) -> None:
    """A full panel whose columns are contiguous in B (a transposed operand): each k's VL
    columns are one gather (``%b.s1`` bytes apart), stored as a vector."""
    vt = f"<{vl} x {t}>"
    lane_ids = "<" + ", ".join(f"i64 {i}" for i in range(vl)) + ">"
    spl = _splat(x, "%b.s1", vl, "i64")
    offsets = x.fresh("lanes")
    x(f"{offsets} = mul <{vl} x i64> {spl}, {lane_ids}")
    mask = "<" + ", ".join("i1 true" for _ in range(vl)) + ">"

    def row(kk: str) -> None:
        kb, base, d0 = x.fresh("gkb"), x.fresh("grow"), x.fresh("gd")
        x(f"{kb} = mul i64 {kk}, {size}")
        x(f"{base} = getelementptr i8, ptr %bjk, i64 {kb}")
        x(f"{d0} = mul i64 {kk}, {nr}")
        for g in range(nr // vl):
            col, start, ptrs, val, d1, dptr = (x.fresh(h) for h in ("gc", "gs", "gp", "gv",
                                                                    "gd1", "gdp"))
            x(f"{col} = mul i64 {g * vl}, %b.s1")
            x(f"{start} = getelementptr i8, ptr {base}, i64 {col}")
            x(f"{ptrs} = getelementptr i8, ptr {start}, <{vl} x i64> {offsets}")
            x(f"{val} = call {vt} @llvm.masked.gather.v{vl}{_INTRINSIC[dtype]}.v{vl}p0("
              f"<{vl} x ptr> {ptrs}, i32 1, <{vl} x i1> {mask}, {vt} poison)")
            x(f"{d1} = add i64 {d0}, {g * vl}")
            x(f"{dptr} = getelementptr inbounds {t}, ptr %bp, i64 {d1}")
            x(f"store {vt} {val}, ptr {dptr}, align 64")

    _loop(x, "gk", "0", "%kc.len", row)


def _pack_tiles(x: _Text, t: str, size: int, nr: int, tile: int) -> None:
    """A full panel whose columns are contiguous in B, by tile x tile blocks: ``tile``
    columns' ``tile`` consecutive elements loaded as vectors, transposed in registers
    (log2(tile) stages of two-source shuffles), stored as ``tile`` rows of the panel."""
    vt = f"<{tile} x {t}>"
    x(f"%k.tiles = udiv i64 %kc.len, {tile}")

    def block(k0: str, jt: str) -> None:
        kb, j0, src0 = x.fresh("tkb"), x.fresh("tj0"), x.fresh("ts")
        x(f"{kb} = mul i64 {k0}, {size}")
        x(f"{j0} = mul i64 {jt}, {tile}")
        x(f"{src0} = mul i64 {j0}, %b.s1")
        rows = []
        for r in range(tile):
            row, off, off2, ptr, val = (x.fresh(h) for h in ("trr", "to", "to2", "tpp", "trow"))
            x(f"{row} = mul i64 {r}, %b.s1")
            x(f"{off} = add i64 {src0}, {row}")
            x(f"{off2} = add i64 {off}, {kb}")
            x(f"{ptr} = getelementptr i8, ptr %bjk, i64 {off2}")
            x(f"{val} = load {vt}, ptr {ptr}, align 1")
            rows.append(val)
        s = tile // 2
        while s:  # rows r and r + s (bit s of r clear) swap their off-diagonal s-lane blocks
            out = list(rows)
            for r in range(tile):
                if r & s:
                    continue
                lo = [lane if not lane & s else tile + lane - s for lane in range(tile)]
                hi = [lane + s if not lane & s else tile + lane for lane in range(tile)]
                for dst, mask in ((r, lo), (r + s, hi)):
                    name = x.fresh("tr")
                    m = ", ".join(f"i32 {i}" for i in mask)
                    x(f"{name} = shufflevector {vt} {rows[r]}, {vt} {rows[r + s]}, "
                      f"<{tile} x i32> <{m}>")
                    out[dst] = name
            rows = out
            s //= 2
        for c in range(tile):
            kc, d1, d2, ptr = x.fresh("tkc"), x.fresh("tdd"), x.fresh("tdd2"), x.fresh("tdp")
            x(f"{kc} = add i64 {k0}, {c}")
            x(f"{d1} = mul i64 {kc}, {nr}")
            x(f"{d2} = add i64 {d1}, {j0}")
            x(f"{ptr} = getelementptr inbounds {t}, ptr %bp, i64 {d2}")
            x(f"store {vt} {rows[c]}, ptr {ptr}, align {TILE_BYTES}")

    _loop(x, "tk", "0", "%k.tiles", lambda k0: _loop(
        x, "tj", "0", str(nr // tile), lambda jt: block(k0, jt)), step=tile)


def _clamped(x: _Text, first: str, count: int, last: str, hint: str) -> list[str]:
    """Indices ``first + i`` for i < count, each past ``last`` read as ``last``: a block's
    rows (or columns) past the matrix's edge compute its last one again, to the same bits."""
    found = []
    for i in range(count):
        raw, past, index = x.fresh(f"{hint}.r"), x.fresh(f"{hint}.past"), x.fresh(hint)
        x(f"{raw} = add i64 {first}, {i}")
        x(f"{past} = icmp sgt i64 {raw}, {last}")
        x(f"{index} = select i1 {past}, i64 {last}, i64 {raw}")
        found.append(index)
    return found


def _micro(x: _Text, dtype: str, t: str, vt: str, vl: int, nr: int, vectors: int,
           masks: list[str]) -> None:
    """Every block of rows of C over the packed panel (columns from ``%j0`` on): ``%blocks``
    of MR rows, block b from row b * MR on, then, where rows are left, one of TAIL_ROWS from
    ``%tail.first``; a row past M - 1 read and written as row M - 1 (a block's rows past M
    compute row M - 1 again, to the same bits). A block's rows x vectors accumulators run over
    k in vector registers, then are stored through the panel's masks (columns past N are
    not)."""
    f = _INTRINSIC[dtype]

    def block(first: str, rows: int) -> None:
        row_of = _clamped(x, first, rows, "%last.row", "row")
        pre, load, start = x.label("m.pre"), x.label("m.load"), x.label("m.start")
        kh, kend = x.label("m.k"), x.label("m.kend")
        x(f"br label %{pre}")
        x.block(pre)
        c_ptr = [[None] * vectors for _ in range(rows)]
        for r in range(rows):  # where the block's accumulators are stored
            rs, base = x.fresh("crs"), x.fresh("cb")
            x(f"{rs} = mul i64 {row_of[r]}, %n")
            x(f"{base} = add i64 {rs}, %j0")
            for v in range(vectors):
                off, ptr = x.fresh("co"), x.fresh("cptr")
                x(f"{off} = add i64 {base}, {v * vl}")
                x(f"{ptr} = getelementptr inbounds {t}, ptr %c, i64 {off}")
                c_ptr[r][v] = ptr
        # the first chunk starts from zeros, a later one from the sums stored by the one
        # before (exact: the accumulators are of C's type), so every element still adds its
        # terms from k = 0 up, one fused multiply-add a step
        x(f"br i1 %kc.first, label %{start}, label %{load}")
        x.block(load)
        loaded = [[x.fresh(f"ld{r}_{v}_") for v in range(vectors)] for r in range(rows)]
        for r in range(rows):
            for v in range(vectors):
                x(f"{loaded[r][v]} = call {vt} @llvm.masked.load.v{vl}{f}.p0(ptr "
                  f"{c_ptr[r][v]}, i32 1, <{vl} x i1> {masks[v]}, {vt} zeroinitializer)")
        x(f"br label %{start}")
        x.block(start)
        init = [[x.fresh(f"init{r}_{v}_") for v in range(vectors)] for r in range(rows)]
        for r in range(rows):
            for v in range(vectors):
                x(f"{init[r][v]} = phi {vt} [zeroinitializer, %{pre}], "
                  f"[{loaded[r][v]}, %{load}]")
        x(f"br label %{kh}")
        x.block(kh)
        kk, kk_next = x.fresh("kk"), x.fresh("kk.next")
        x(f"{kk} = phi i64 [0, %{start}], [{kk_next}, %{kh}]")
        acc = [[x.fresh(f"acc{r}_{v}_") for v in range(vectors)] for r in range(rows)]
        nxt = [[x.fresh(f"nacc{r}_{v}_") for v in range(vectors)] for r in range(rows)]
        for r in range(rows):
            for v in range(vectors):
                x(f"{acc[r][v]} = phi {vt} [{init[r][v]}, %{start}], [{nxt[r][v]}, %{kh}]")
        kb = x.fresh("kb")
        x(f"{kb} = mul i64 {kk}, {nr}")
        bv = []
        for v in range(vectors):
            off, ptr, val = x.fresh("bo"), x.fresh("bptr"), x.fresh("bv")
            x(f"{off} = add i64 {kb}, {v * vl}")
            x(f"{ptr} = getelementptr inbounds {t}, ptr %bp, i64 {off}")
            x(f"{val} = load {vt}, ptr {ptr}, align 64")
            bv.append(val)
        ak, akk = x.fresh("ak"), x.fresh("akk")
        x(f"{akk} = mul i64 {kk}, %a.s1")
        x(f"{ak} = add i64 {akk}, %ak0")
        if A_PREFETCH:  # the block's first row, A_PREFETCH steps of k ahead (see there)
            pk, pkk, pko, prs, poff, pptr = (x.fresh(h) for h in ("pk", "pkk", "pko", "prs",
                                                                   "poff", "pp"))
            x(f"{pkk} = add i64 {kk}, {A_PREFETCH}")
            x(f"{pk} = mul i64 {pkk}, %a.s1")
            x(f"{pko} = add i64 {pk}, %ak0")
            x(f"{prs} = mul i64 {row_of[0]}, %a.s0")
            x(f"{poff} = add i64 {prs}, {pko}")
            x(f"{pptr} = getelementptr i8, ptr %a, i64 {poff}")
            x(f"call void @llvm.prefetch.p0(ptr {pptr}, i32 0, i32 3, i32 1)")
        for r in range(rows):
            rs, off, ptr, val = (x.fresh(h) for h in ("ars", "ao", "aptr", "av"))
            row = row_of[r]
            x(f"{rs} = mul i64 {row}, %a.s0")
            x(f"{off} = add i64 {rs}, {ak}")
            x(f"{ptr} = getelementptr i8, ptr %a, i64 {off}")
            x(f"{val} = load {t}, ptr {ptr}, align 1")
            spl = _splat(x, val, vl, t)
            for v in range(vectors):
                x(f"{nxt[r][v]} = call {vt} @llvm.fma.v{vl}{f}({vt} {spl}, {vt} {bv[v]}, "
                  f"{vt} {acc[r][v]})")
        x(f"{kk_next} = add i64 {kk}, 1")
        kc = x.fresh("kc")
        x(f"{kc} = icmp eq i64 {kk_next}, %kc.len")
        x.latch(kc, kend, kh)
        x.block(kend)
        size = np.dtype(dtype).itemsize
        stores, plain, added = x.label("m.st"), x.label("m.plain"), x.label("m.added")
        # the addend after the last chunk only; the sums of the others are stored as they are
        x(f"br i1 %do.add, label %{added}, label %{plain}")
        for adding in (True, False):
            x.block(added if adding else plain)
            for r in range(rows):
                row = row_of[r]
                if adding:
                    er, eb, ej, ec = x.fresh("er"), x.fresh("eb"), x.fresh("ej"), x.fresh("ec")
                    x(f"{er} = mul i64 {row}, %e.s0")
                    x(f"{eb} = getelementptr i8, ptr %e, i64 {er}")
                    x(f"{ej} = mul i64 %j0, {size}")
                    x(f"{ec} = getelementptr i8, ptr {eb}, i64 {ej}")
                for v in range(vectors):
                    ptr, value = c_ptr[r][v], nxt[r][v]
                    if adding:  # the product rounded, then the addend added: the two steps'
                        ep, ev, sv = x.fresh("ep"), x.fresh("ev"), x.fresh("sum")
                        x(f"{ep} = getelementptr inbounds {t}, ptr {ec}, i64 {v * vl}")
                        x(f"{ev} = call {vt} @llvm.masked.load.v{vl}{f}.p0(ptr {ep}, i32 1, "
                          f"<{vl} x i1> {masks[v]}, {vt} zeroinitializer)")
                        x(f"{sv} = fadd {vt} {value}, {ev}")
                        value = sv
                    x(f"call void @llvm.masked.store.v{vl}{f}.p0({vt} {value}, ptr {ptr}, "
                      f"i32 {size}, <{vl} x i1> {masks[v]})")
            x(f"br label %{stores}")
        x.block(stores)

    def blocks(first: str) -> None:
        block(first, MR)

    main, tail, done = x.label("m.main"), x.label("m.tail"), x.label("m.done")
    after = x.label("m.after")
    x(f"br i1 %any.blocks, label %{main}, label %{after}")
    x.block(main)
    _loop(x, "blk", "0", "%blocks", blocks, step=MR)
    x(f"br label %{after}")
    x.block(after)
    x(f"br i1 %any.tail, label %{tail}, label %{done}")
    x.block(tail)
    if TAIL_ROWS:
        _loop(x, "tb", "%tail.first", "%tails", lambda first: block(first, TAIL_ROWS),
              step=TAIL_ROWS)
    x(f"br label %{done}")
    x.block(done)


def _dot_block() -> tuple[int, int]:
    """(rows, columns) of C a dot block holds: its accumulators and one vector of each row
    and column fit the host's vector registers (32 with AVX-512, else 16)."""
    return (4, 4) if vectors() == 4 else (2, 4)


def _dots(x: _Text, dtype: str, t: str, vt: str, vl: int, size: int) -> None:
    """The panel's ``%w`` columns of C (from ``%j0``) as dot products of A's rows and B's
    columns, both contiguous along K (see DOT_MAX_M): block by block of DOT rows x columns
    (past M or the panel's width read and written as the last row or column, to the same
    bits), each element a vector of partial sums over k (lane l: k = l, l + VL, ...; the
    remainder's lanes from a masked load), then its lanes added pairwise (8 + 8, 4 + 4, ...),
    the addend after."""
    f = _INTRINSIC[dtype]
    rows, cols = _dot_block()
    x(f"%dk.full = udiv i64 %k, {vl}")
    x(f"%dk.rest = urem i64 %k, {vl}")
    x("%dk.tail = icmp ne i64 %dk.rest, 0")
    x(f"%dk.tailat = mul i64 %dk.full, {vl * size}")
    spl = _splat(x, "%dk.rest", vl, "i64")
    lane_ids = "<" + ", ".join(f"i64 {i}" for i in range(vl)) + ">"
    x(f"%dk.mask = icmp slt <{vl} x i64> {lane_ids}, {spl}")
    x(f"%dr.up = add i64 %m, {rows - 1}")
    x(f"%dr.blocks = udiv i64 %dr.up, {rows}")
    x(f"%dc.up = add i64 %w, {cols - 1}")
    x(f"%dc.blocks = udiv i64 %dc.up, {cols}")
    x("%dc.last = sub i64 %w, 1")

    def lines(block: str, count: int, last: str, base: str, stride: str, hint: str
              ) -> tuple[list[str], list[str]]:
        """The block's rows of A (or columns of B, in the panel): their clamped indices and
        where each starts."""
        first = x.fresh(f"{hint}0")
        x(f"{first} = mul i64 {block}, {count}")
        at = _clamped(x, first, count, last, hint)
        starts = []
        for i in at:
            off, ptr = x.fresh(f"{hint}o"), x.fresh(f"{hint}p")
            x(f"{off} = mul i64 {i}, {stride}")
            x(f"{ptr} = getelementptr i8, ptr {base}, i64 {off}")
            starts.append(ptr)
        return at, starts

    def block(rb: str, cb: str) -> None:
        row_at, rowp = lines(rb, rows, "%last.row", "%a", "%a.s0", "drow")
        col_at, colp = lines(cb, cols, "%dc.last", "%bj", "%b.s1", "dcol")
        pre, head, done = x.label("d.pre"), x.label("d.k"), x.label("d.kdone")
        x(f"br label %{pre}")
        x.block(pre)
        x(f"br label %{head}")
        x.block(head)
        kv, kv_next = x.fresh("dkv"), x.fresh("dkv.next")
        x(f"{kv} = phi i64 [0, %{pre}], [{kv_next}, %{head}]")
        acc = [[x.fresh(f"dacc{r}_{c}_") for c in range(cols)] for r in range(rows)]
        nxt = [[x.fresh(f"dnx{r}_{c}_") for c in range(cols)] for r in range(rows)]
        for r in range(rows):
            for c in range(cols):
                x(f"{acc[r][c]} = phi {vt} [zeroinitializer, %{pre}], [{nxt[r][c]}, %{head}]")
        at = x.fresh("dat")
        x(f"{at} = mul i64 {kv}, {vl * size}")

        def loads(ptrs: list[str], where: str, mask: str | None) -> list[str]:
            values = []
            for p in ptrs:
                q, v = x.fresh("dq"), x.fresh("dv")
                x(f"{q} = getelementptr i8, ptr {p}, i64 {where}")
                if mask is None:
                    x(f"{v} = load {vt}, ptr {q}, align {size}")
                else:
                    x(f"{v} = call {vt} @llvm.masked.load.v{vl}{f}.p0(ptr {q}, i32 {size}, "
                      f"<{vl} x i1> {mask}, {vt} zeroinitializer)")
                values.append(v)
            return values

        av, bv = loads(rowp, at, None), loads(colp, at, None)
        for r in range(rows):
            for c in range(cols):
                x(f"{nxt[r][c]} = call {vt} @llvm.fma.v{vl}{f}({vt} {av[r]}, {vt} {bv[c]}, "
                  f"{vt} {acc[r][c]})")
        x(f"{kv_next} = add i64 {kv}, 1")
        end = x.fresh("dkend")
        x(f"{end} = icmp eq i64 {kv_next}, %dk.full")
        x.latch(end, done, head)
        x.block(done)
        tail, joined = x.label("d.tail"), x.label("d.joined")
        x(f"br i1 %dk.tail, label %{tail}, label %{joined}")
        x.block(tail)
        at_, bt_ = loads(rowp, "%dk.tailat", "%dk.mask"), loads(colp, "%dk.tailat", "%dk.mask")
        tails = [[x.fresh(f"dt{r}_{c}_") for c in range(cols)] for r in range(rows)]
        for r in range(rows):
            for c in range(cols):
                x(f"{tails[r][c]} = call {vt} @llvm.fma.v{vl}{f}({vt} {at_[r]}, {vt} {bt_[c]}, "
                  f"{vt} {nxt[r][c]})")
        x(f"br label %{joined}")
        x.block(joined)
        totals = [[x.fresh("dsum") for c in range(cols)] for r in range(rows)]
        for r in range(rows):
            for c in range(cols):
                x(f"{totals[r][c]} = phi {vt} [{nxt[r][c]}, %{done}], "
                  f"[{tails[r][c]}, %{tail}]")
        for r in range(rows):
            for c in range(cols):
                value, width = totals[r][c], vl
                while width > 1:  # the lanes added pairwise: low half + high half
                    half = width // 2
                    lo, hi, s = x.fresh("dlo"), x.fresh("dhi"), x.fresh("dhs")
                    wt, ht = f"<{width} x {t}>", f"<{half} x {t}>"
                    los = ", ".join(f"i32 {i}" for i in range(half))
                    his = ", ".join(f"i32 {i}" for i in range(half, width))
                    x(f"{lo} = shufflevector {wt} {value}, {wt} poison, <{half} x i32> <{los}>")
                    x(f"{hi} = shufflevector {wt} {value}, {wt} poison, <{half} x i32> <{his}>")
                    x(f"{s} = fadd {ht} {lo}, {hi}")
                    value, width = s, half
                scalar, col, ea, eo, es, ep, ev, plus, out, cr, co, cptr = (
                    x.fresh(h) for h in ("dsc", "dj", "dea", "deo", "des", "dep", "dev",
                                         "dplus", "dout", "dcr", "dco", "dcp"))
                x(f"{scalar} = extractelement <1 x {t}> {value}, i64 0")
                x(f"{col} = add i64 %j0, {col_at[c]}")
                # the addend's element (C's own where the product has none: read, unused)
                x(f"{ea} = mul i64 {row_at[r]}, %e.s0")
                x(f"{eo} = mul i64 {col}, {size}")
                x(f"{es} = add i64 {ea}, {eo}")
                x(f"{ep} = getelementptr i8, ptr %e, i64 {es}")
                x(f"{ev} = load {t}, ptr {ep}, align {size}")
                x(f"{plus} = fadd {t} {scalar}, {ev}")
                x(f"{out} = select i1 %add, {t} {plus}, {t} {scalar}")
                x(f"{cr} = mul i64 {row_at[r]}, %n")
                x(f"{co} = add i64 {cr}, {col}")
                x(f"{cptr} = getelementptr inbounds {t}, ptr %c, i64 {co}")
                x(f"store {t} {out}, ptr {cptr}, align {size}")

    _loop(x, "drb", "0", "%dr.blocks",
          lambda rb: _loop(x, "dcb", "0", "%dc.blocks", lambda cb: block(rb, cb)))


def render(dtype: str) -> str:
    """The IR text of the products of ``dtype``: one module."""
    vl, t, f = lanes(dtype), _TYPES[dtype], _INTRINSIC[dtype]
    declares = [
        f"declare <{vl} x {t}> @llvm.fma.v{vl}{f}(<{vl} x {t}>, <{vl} x {t}>, <{vl} x {t}>)",
        f"declare void @llvm.masked.store.v{vl}{f}.p0(<{vl} x {t}>, ptr, i32, <{vl} x i1>)",
        f"declare <{vl} x {t}> @llvm.masked.load.v{vl}{f}.p0(ptr, i32, <{vl} x i1>, <{vl} x {t}>)",
        f"declare <{vl} x {t}> @llvm.masked.gather.v{vl}{f}.v{vl}p0(<{vl} x ptr>, i32, "
        f"<{vl} x i1>, <{vl} x {t}>)",
        "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)",
        "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)",
    ]
    width = vl * np.dtype(dtype).itemsize * 8
    vectors = f'"min-legal-vector-width"="{width}" "prefer-vector-width"="{width}"'
    text, metadata = _function(dtype)
    return ("\n".join(declares) + "\n\n" + text
            + f"attributes #0 = {{ nounwind {vectors} }}\n"
            # the packed panel's frame is probed page by page: a thread whose stack has less
            # left than it faults on the guard page instead of writing past it
            + f'attributes #1 = {{ nounwind noinline "probe-stack"="inline-asm" {vectors} }}\n'
            + metadata + "\n" + _LOOP_OPTIONS)


# --- compiled products ------------------------------------------------------------------------

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t,
                          ctypes.c_size_t, ctypes.c_size_t)


@dataclass(frozen=True)
class _Module:
    engine: llvm.ExecutionEngine  # owns the machine code
    entry: ctypes._CFuncPtr
    chunks: int  # address of the items entry with the kernels' ABI


_modules: dict[str, _Module] = {}
_lock = threading.Lock()


@functools.cache
def _source_digest() -> str:
    """What the products' IR is made from: this module's source."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def support_module(dtype: str
                   ) -> tuple[str, Callable[[], str], Callable[[str], target.ObjectCode], str]:
    """The products of ``dtype`` as ``codegen.cache.support_code`` keeps them: name, IR text
    (made on a miss), emitter and version. Keyed by this module's source (the key holds the
    host and the code generator): a process finding the code need not render its IR (2 ms)."""
    return f"gemm.{dtype}", functools.partial(render, dtype), target.emit_as_written, \
        _source_digest()


def object_code(dtype: str, cache_dir: str | os.PathLike[str] | None) -> target.ObjectCode:
    """The products' object code, from the compiled-code cache's support store."""
    from codegen.cache import support_code

    name, text, emit, version = support_module(dtype)
    return support_code(name, text, emit, cache_dir, version=version)


def loaded(dtype: str) -> bool:
    """Whether this process has loaded the products of ``dtype``."""
    return dtype in _modules


def _module(dtype: str, cache_dir: str | os.PathLike[str] | None) -> _Module:
    """The products of ``dtype``, compiled once per process, from the compiled-code cache's
    support store where a process before stored them (``codegen.cache.support_code``)."""
    with _lock:
        module = _modules.get(dtype)
        if module is None:
            code = object_code(dtype, cache_dir)
            with target.LOCK:
                engine, (entry, chunks) = target.load_support(
                    code.object_file, f"gemm.{dtype}", f"gemm.{dtype}.chunks")
            if not entry or not chunks:
                raise RuntimeError(f"the products of {dtype} are not in their object code")
            module = _modules[dtype] = _Module(engine, _ENTRY(entry), chunks)
    return module


# a product's ten dimension words: one array type for all (ctypes keeps ``c_int64 * 7``
# only weakly, so a type made per product was a reference cycle left to the collector)
_WORDS = ctypes.c_int64 * 10


class Product:
    """A spec's compiled product. ``entry(id(a), id(b), id(c), id(e), dims)`` computes it on
    the calling thread (``e``: the addend, or ``c`` for a spec without; ``dims``: the address
    of its words, kept alive here); ``run(a, b, c, e)``
    the same, its items split across the intra-op threads where it is large enough
    (``split``)."""

    def __init__(self, spec: GemmSpec, module: _Module) -> None:
        self.spec = spec
        self._module = module
        self.entry = module.entry
        self.words = _WORDS(*spec.dims())
        self.dims = ctypes.addressof(self.words)
        self.items = spec.dims()[_ITEMS]
        flop = 2 * spec.batch * spec.m * spec.n * spec.k
        self.split = self.items > 1 and flop / FLOP_PER_US >= PARALLEL_MIN_US

    @functools.cached_property
    def builtin(self) -> Callable[..., None] | None:
        """``f(a, b, c, e)``: ``entry`` as a Python builtin taking the arrays themselves
        (``codegen.pyentry``: a fraction of a ctypes call's cost), for a caller that checks
        what ``entry`` needs; None where builtins cannot be made here."""
        from codegen import pyentry

        if not pyentry.available():
            return None
        return pyentry.product_builtin(ctypes.cast(self.entry, ctypes.c_void_p).value,
                                       self.dims, f"product_{self.spec.dtype}",
                                       (self._module, self.words))

    @functools.cached_property
    def b_swapped(self) -> Product:
        """The same product given, for B, the array whose last two axes B swaps (W, for a
        product with W.T): its call makes no transposed view."""
        return Product(dataclasses.replace(self.spec, b_swapped=True), self._module)

    @functools.cached_property
    def without_addend(self) -> Product:
        """The same product adding nothing (for an addend whose columns are not contiguous:
        its caller adds it after)."""
        return Product(dataclasses.replace(self.spec, addend=False), self._module)

    def run(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, e: np.ndarray | None = None
            ) -> None:
        """The product (plus the addend ``e``, for a spec with one) into ``c`` on
        ``runtime.get_num_threads()`` threads at most (the native pool's); the same bits on
        any number."""
        e = c if e is None else e
        threads = min(get_num_threads(), self.items) if self.split else 1
        if threads <= 1:
            builtin = self.builtin  # 0.1 us a call against ctypes' 1.5
            if builtin is not None:
                builtin(a, b, c, e)
            else:
                self.entry(id(a), id(b), id(c), id(e), self.dims)
            return
        # the objects' addresses as an array.array (0.2 us against a ctypes array's 1.2)
        table = array.array(pool.POINTER_TYPECODE, (id(a), id(b), id(c), id(e), self.dims))
        pool.run_checked(self._module.chunks, table.buffer_info()[0], 0,
                         even_bounds(self.items, threads), threads)

    def apply(self, a: np.ndarray, b: np.ndarray, shape: tuple[int, ...],
              addend: np.ndarray | None = None) -> np.ndarray:
        """The product (plus ``addend``) as a new array of ``shape``: the addend added as the
        product stores where the spec has one and it fits (``addend_fits``), else after it,
        the same numbers either way (the product is rounded, then the addend added)."""
        out = np.empty(shape, self.spec.dtype)
        if addend is not None and self.spec.addend and addend_fits(addend, shape, out.dtype):
            self.run(a, b, out, addend)
            return out
        (self.without_addend if self.spec.addend else self).run(a, b, out)
        return out if addend is None else np.add(out, addend, out=out)


def compiled(specs: list[GemmSpec], cache_dir: str | os.PathLike[str] | None = None
             ) -> dict[GemmSpec, Product]:
    """Each spec's product. The code is one module per dtype, whatever the shapes: compiled
    once per machine (then read from the cache), loaded once per process."""
    return {s: Product(s, _module(s.dtype, cache_dir)) for s in specs}


def addend_fits(e: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether a product of ``shape`` can add ``e`` as it stores: a numpy array of its dtype
    that broadcasts to ``shape``, whose last axis is the product's columns (not broadcast),
    contiguous."""
    return (type(e) is np.ndarray and e.dtype == dtype and 1 <= e.ndim <= len(shape)
            and e.shape[-1] == shape[-1] and e.strides[-1] == e.itemsize
            and all(d in (1, s) for d, s in zip(e.shape[::-1], shape[::-1])))


def matmul(a: np.ndarray, b: np.ndarray, addend: np.ndarray | None = None,
           cache_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """``np.matmul(a, b)`` (``+ addend``) through a generated product where one applies
    (tests, and callers without a plan), every assumption checked here."""
    a, b = np.asarray(a), np.asarray(b)
    spec = None
    if a.dtype == b.dtype and type(a) is np.ndarray and type(b) is np.ndarray \
            and object_strides_ok():
        spec = GemmSpec.of(a.shape, b.shape, a.dtype)
    shape = None if spec is None else \
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (spec.m, spec.n)
    if spec is None or shape is None:
        out = np.matmul(a, b)
        return out if addend is None else np.add(out, addend)
    spec = dataclasses.replace(spec, addend=addend is not None)
    return compiled([spec], cache_dir)[spec].apply(a, b, shape, addend)
