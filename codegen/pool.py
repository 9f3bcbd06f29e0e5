"""A native worker pool that runs the chunks of one kernel call on several cores.

A ``concurrent.futures`` round trip costs 25 to 90 us on this project's 2-core VM (a Python
thread wakes, takes the GIL, calls, signals back); the loops here are LLVM IR, entered once per
worker thread through ctypes (which releases the GIL for the whole loop), so handing a chunk over
is a few atomic operations on shared memory. The caller and the workers claim chunks from one
atomic counter: whoever is awake takes the next chunk, so a worker that is asleep or descheduled
never holds a call up (the caller runs what nobody claimed), and which thread runs a chunk never
changes what the chunk computes.

A job says how many threads may run it (``run_chunks(..., threads=)``): workers of a lower index
than its limit join it, the others stay out (the limit is part of the claim word, so a worker
never joins a job that excludes it), so a job of 16 chunks on 2 intra-op threads runs on the
caller and worker 0 however many workers an earlier job started. ``run_accumulating`` runs a
kernel with accumulated outputs: every chunk into partials of its own, combined natively in
chunk order, so the result depends on the chunks (fixed by the kernel) and not on the threads.

Workers spin on an epoch counter for ``SPIN_NS`` after the last job they joined, then sleep on
it in the kernel (Linux futex, with a bitset: a job wakes only workers it admits): idle workers
do not burn a core. Linux on x86-64 and aarch64 only (``available()``); elsewhere
``run_chunks`` runs every chunk on the calling thread.
"""

from __future__ import annotations

import array
import atexit
import ctypes
import functools
import os
import platform
import string
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm

from codegen import target
from codegen.llvm_emit import ARRAY_DATA_OFFSET

# A worker spins this long after its last chunk before it sleeps: kernels of a plan run back to
# back with a few microseconds of Python between them, and a job that must wake sleepers costs
# the caller 12 to 40 us against 3 to 6 us with the workers spinning (no-op kernel in 2
# chunks, medians of benchmarks.handoff on this project's 2-core VM, shared with other jobs).
SPIN_NS = 50_000
# (futex syscall number, pause instruction) per machine
_ARCH = {"x86_64": (202, "pause"), "aarch64": (98, "yield")}
# FUTEX_WAIT_BITSET and FUTEX_WAKE_BITSET, process-private: a job wakes only the workers it
# lets join
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 9 | 128, 10 | 128
# the claim word's fields: next chunk and chunk count in 24 bits each, the worker limit above
MAX_CHUNKS = (1 << 24) - 1
_MAX_LIMIT = (1 << 16) - 1

# the shared state: one i64 per cache line, so the counters do not share lines
_EPOCH, _SLEEPERS, _CLAIM, _DONE, _JOB, _SHUTDOWN, _SPIN, _IDLE_SINCE = range(0, 64, 8)
_JOB_FN, _JOB_PTRS, _JOB_BOUNDS, _JOB_STRIDE = _JOB, _JOB + 1, _JOB + 2, _JOB + 3
_STATE_WORDS = 72

_IR = r"""
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare i32 @clock_gettime(i32, ptr)
declare i64 @llvm.smax.i64(i64, i64)
declare i64 @llvm.umin.i64(i64, i64)
declare ptr @malloc(i64)
declare void @free(ptr)

define internal void @pause() alwaysinline {
  call void asm sideeffect "$PAUSE", ""()
  ret void
}

define internal i64 @now_ns() {
  %ts = alloca [2 x i64]
  call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts
  %nsp = getelementptr [2 x i64], ptr %ts, i64 0, i64 1
  %ns = load i64, ptr %nsp
  %sns = mul i64 %s, 1000000000
  %t = add i64 %sns, %ns
  ret i64 %t
}

define internal ptr @word(ptr %state, i64 %i) alwaysinline {
  %p = getelementptr i64, ptr %state, i64 %i
  ret ptr %p
}

; claim chunks of the current job until none is left, if worker %who may join it (the caller
; passes -1 and always may); returns whether it may. The claim word is (limit << 48 | chunks << 24
; | next): limit is how many workers may join besides the caller. A claim is a compare-exchange
; of the word a thread last read, so the limit it checked is the limit of the job it claims from,
; and a claim that comes too late (next >= chunks) touches nothing: a worker that saw an old
; epoch cannot run a chunk of a job that is over or that excludes it. The job's fields were
; stored before the claim word (release), and the claim reads it with acquire.
define i1 @pool_claim(ptr %state, i64 %who) {
entry:
  %claim = call ptr @word(ptr %state, i64 $CLAIM)
  %done = call ptr @word(ptr %state, i64 $DONE)
  %first = load atomic i64, ptr %claim acquire, align 8
  br label %loop
loop:
  %w = phi i64 [ %first, %entry ], [ %seen, %contended ], [ %after, %run ]
  %limit = lshr i64 %w, 48
  %may = icmp slt i64 %who, %limit
  br i1 %may, label %check, label %out
check:
  %n48 = lshr i64 %w, 24
  %n = and i64 %n48, 16777215
  %i = and i64 %w, 16777215
  %more = icmp ult i64 %i, %n
  br i1 %more, label %try, label %out
try:
  %w1 = add i64 %w, 1
  %pair = cmpxchg ptr %claim, i64 %w, i64 %w1 acq_rel acquire
  %seen = extractvalue { i64, i1 } %pair, 0
  %won = extractvalue { i64, i1 } %pair, 1
  br i1 %won, label %run, label %contended
contended:
  br label %loop
run:
  %fnp = call ptr @word(ptr %state, i64 $JOB_FN)
  %fn = load ptr, ptr %fnp
  %tp = call ptr @word(ptr %state, i64 $JOB_PTRS)
  %table = load ptr, ptr %tp
  %sp = call ptr @word(ptr %state, i64 $JOB_STRIDE)
  %stride = load i64, ptr %sp
  %bp = call ptr @word(ptr %state, i64 $JOB_BOUNDS)
  %bounds = load ptr, ptr %bp
  %offset = mul i64 %i, %stride
  %ptrs = getelementptr ptr, ptr %table, i64 %offset
  %lop = getelementptr i64, ptr %bounds, i64 %i
  %lo = load i64, ptr %lop
  %i1 = add i64 %i, 1
  %hip = getelementptr i64, ptr %bounds, i64 %i1
  %hi = load i64, ptr %hip
  call void %fn(ptr %ptrs, i64 %lo, i64 %hi)
  atomicrmw add ptr %done, i64 1 release
  %after = load atomic i64, ptr %claim acquire, align 8
  br label %loop
out:
  ret i1 %may
}

; a worker thread's whole life: wait for a new epoch (spin, then futex wait), claim chunks,
; return when the shutdown flag is set. It sleeps once SPIN ns have passed both since it last
; joined a job and since the last job ended: a job the caller ran alone (the worker came too
; late) keeps the worker spinning for the next one. Jobs that exclude it (their limit is at or
; below its index) do not keep it awake: it sleeps SPIN ns after the last job it could join, and
; only wakes for jobs whose limit includes its bit (bit min(index, 31) of a futex bitset). Waking
; (or finding the epoch moved as it went to sleep) is no job joined: its clock runs on. It
; yields the core every 64 pauses: on a busy machine it may share a core with the caller, whose
; next job it is waiting for
define void @pool_worker(ptr %state, i64 %index) {
entry:
  %epoch = call ptr @word(ptr %state, i64 $EPOCH)
  %sleepers = call ptr @word(ptr %state, i64 $SLEEPERS)
  %shutdown = call ptr @word(ptr %state, i64 $SHUTDOWN)
  %spinp = call ptr @word(ptr %state, i64 $SPIN)
  %idlep = call ptr @word(ptr %state, i64 $IDLE_SINCE)
  %shift = call i64 @llvm.umin.i64(i64 %index, i64 31)
  %bit = shl i64 1, %shift
  %seen0 = load atomic i32, ptr %epoch acquire, align 4
  br label %awake
awake:
  %seen = phi i32 [ %seen0, %entry ], [ %e, %claim ]
  %t0 = call i64 @now_ns()
  br label %spin
spin:
  %k = phi i64 [ 0, %awake ], [ %k1, %spin_more ], [ %k1, %spin_timed ], [ 0, %excluded ],
               [ 0, %slept ]
  %seen_s = phi i32 [ %seen, %awake ], [ %seen_s, %spin_more ], [ %seen_s, %spin_timed ],
                    [ %e, %excluded ], [ %seen_s, %slept ]
  %t0_s = phi i64 [ %t0, %awake ], [ %t0_s, %spin_more ], [ %t0_s, %spin_timed ],
                  [ %t0_s, %excluded ], [ %t0_s, %slept ]
  %joined = phi i1 [ true, %awake ], [ %joined, %spin_more ], [ %joined, %spin_timed ],
                   [ false, %excluded ], [ %joined, %slept ]
  %e = load atomic i32, ptr %epoch acquire, align 4
  %new = icmp ne i32 %e, %seen_s
  br i1 %new, label %work, label %spin_more
spin_more:
  call void @pause()
  %k1 = add i64 %k, 1
  %k63 = and i64 %k1, 63
  %check = icmp eq i64 %k63, 0
  br i1 %check, label %spin_timed, label %spin
spin_timed:
  call i32 @sched_yield()
  %t = call i64 @now_ns()
  %idle = load atomic i64, ptr %idlep monotonic, align 8
  %later_job = call i64 @llvm.smax.i64(i64 %t0_s, i64 %idle)
  %later = select i1 %joined, i64 %later_job, i64 %t0_s
  %dt = sub i64 %t, %later
  %spin_ns = load atomic i64, ptr %spinp monotonic, align 8
  %long = icmp sgt i64 %dt, %spin_ns
  br i1 %long, label %sleep, label %spin
sleep:
  atomicrmw add ptr %sleepers, i64 1 seq_cst
  %e2 = load atomic i32, ptr %epoch seq_cst, align 4
  %same = icmp eq i32 %e2, %seen_s
  br i1 %same, label %wait, label %slept
wait:
  %seen64 = zext i32 %seen_s to i64
  call i64 (i64, ...) @syscall(i64 $SYS_FUTEX, ptr %epoch, i64 $FUTEX_WAIT, i64 %seen64,
                                ptr null, ptr null, i64 %bit)
  br label %slept
slept:
  atomicrmw sub ptr %sleepers, i64 1 seq_cst
  br label %spin
work:
  %stop = load atomic i64, ptr %shutdown acquire, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %out, label %claim
claim:
  %may = call i1 @pool_claim(ptr %state, i64 %index)
  br i1 %may, label %awake, label %excluded
excluded:
  br label %spin
out:
  ret void
}

; a new epoch: sleepers whose bit is in %bits are woken (up to %wake of them) once it is
; visible. The increment and the sleepers load are seq_cst, as the worker's sleepers increment
; and epoch load are: either the worker sees the new epoch or this sees the worker among the
; sleepers
define internal void @bump(ptr %state, i64 %wake, i64 %bits) {
entry:
  %epoch = call ptr @word(ptr %state, i64 $EPOCH)
  %sleepers = call ptr @word(ptr %state, i64 $SLEEPERS)
  atomicrmw add ptr %epoch, i32 1 seq_cst
  %s = load atomic i64, ptr %sleepers seq_cst, align 8
  %any = icmp sgt i64 %s, 0
  br i1 %any, label %wake_up, label %out
wake_up:
  call i64 (i64, ...) @syscall(i64 $SYS_FUTEX, ptr %epoch, i64 $FUTEX_WAKE, i64 %wake,
                                ptr null, ptr null, i64 %bits)
  br label %out
out:
  ret void
}

; run one job of %n chunks: chunk i is fn(table + i * stride, bounds[i], bounds[i + 1]), on the
; caller and at most %limit (at least 1) workers, those of index below it. Returns when every
; chunk is done
define void @pool_run(ptr %state, ptr %fn, ptr %table, i64 %stride, ptr %bounds, i64 %n,
                      i64 %limit) {
entry:
  %idle = call ptr @word(ptr %state, i64 $IDLE_SINCE)
  store atomic i64 9223372036854775807, ptr %idle monotonic, align 8
  %done = call ptr @word(ptr %state, i64 $DONE)
  store atomic i64 0, ptr %done monotonic, align 8
  %fnp = call ptr @word(ptr %state, i64 $JOB_FN)
  store ptr %fn, ptr %fnp
  %tp = call ptr @word(ptr %state, i64 $JOB_PTRS)
  store ptr %table, ptr %tp
  %sp = call ptr @word(ptr %state, i64 $JOB_STRIDE)
  store i64 %stride, ptr %sp
  %bp = call ptr @word(ptr %state, i64 $JOB_BOUNDS)
  store ptr %bounds, ptr %bp
  %claim = call ptr @word(ptr %state, i64 $CLAIM)
  %high = shl i64 %limit, 48
  %chunks = shl i64 %n, 24
  %word = or i64 %high, %chunks
  store atomic i64 %word, ptr %claim release, align 8
  %others = sub i64 %n, 1
  %wake = call i64 @llvm.umin.i64(i64 %others, i64 %limit)
  %shift = call i64 @llvm.umin.i64(i64 %limit, i64 32)
  %past = shl i64 1, %shift
  %bits = sub i64 %past, 1  ; the bits of workers 0 to limit - 1 (31 and up share bit 31)
  call void @bump(ptr %state, i64 %wake, i64 %bits)
  call i1 @pool_claim(ptr %state, i64 -1)
  br label %wait
wait:
  %k = phi i64 [ 0, %entry ], [ %k1, %pause ], [ %k1, %yield ]
  %d = load atomic i64, ptr %done acquire, align 8
  %all = icmp eq i64 %d, %n
  br i1 %all, label %out, label %again
again:
  %k1 = add i64 %k, 1
  %patient = icmp ult i64 %k1, 256  ; then yield: the worker may be waiting for this core
  br i1 %patient, label %pause, label %yield
pause:
  call void @pause()
  br label %wait
yield:
  call i32 @sched_yield()
  br label %wait
out:
  %now = call i64 @now_ns()
  store atomic i64 %now, ptr %idle monotonic, align 8
  ret void
}

; set the shutdown flag and wake every worker
define void @pool_stop(ptr %state) {
  %shutdown = call ptr @word(ptr %state, i64 $SHUTDOWN)
  store atomic i64 1, ptr %shutdown release, align 8
  call void @bump(ptr %state, i64 2147483647, i64 4294967295)
  ret void
}

; chunks one after another on the calling thread (one thread asked, the pool is busy or there is
; none)
define void @run_serial(ptr %fn, ptr %table, i64 %stride, ptr %bounds, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %out
body:
  %offset = mul i64 %i, %stride
  %ptrs = getelementptr ptr, ptr %table, i64 %offset
  %lop = getelementptr i64, ptr %bounds, i64 %i
  %lo = load i64, ptr %lop
  %i1 = add i64 %i, 1
  %hip = getelementptr i64, ptr %bounds, i64 %i1
  %hi = load i64, ptr %hip
  call void %fn(ptr %ptrs, i64 %lo, i64 %hi)
  br label %loop
out:
  ret void
}

define internal ptr @field(ptr %desc, i64 %d, i64 %f) alwaysinline {
  %d4 = mul i64 %d, 4
  %i = add i64 %d4, %f
  %p = getelementptr i64, ptr %desc, i64 %i
  ret ptr %p
}

; where %objects holds array objects (%objects_given), the data pointer of its entry %i, which
; is at DATA_OFFSET in a numpy array object; else the entry itself
define internal ptr @data(ptr %objects, i64 %i, i1 %objects_given) alwaysinline {
  %p = getelementptr ptr, ptr %objects, i64 %i
  %entry = load ptr, ptr %p
  br i1 %objects_given, label %object, label %pointer
object:
  %datap = getelementptr i8, ptr %entry, i64 $DATA_OFFSET
  %data = load ptr, ptr %datap
  ret ptr %data
pointer:
  ret ptr %entry
}

; a kernel with accumulated outputs in %n chunks, on the pool (%state, whose job lock the caller
; holds, with %helpers workers) or, where %state is null, on this thread. %objects holds the
; %width arrays of the call (see @data); %desc
; holds 4 words per accumulated output: its index in %objects, its element count, the bytes
; of one chunk's partials of it, and the function that combines them. Each chunk gets the data
; pointers, an accumulated output's being that chunk's row of partials (one block of memory
; holds the chunks' pointer tables, then each output's rows); the rows are then combined into
; the output in chunk order. Returns 0, or 1 where the block could not be allocated (nothing
; ran)
define i64 @run_accumulating(ptr %state, ptr %fn, ptr %objects, i1 %objects_given, i64 %width,
                             ptr %bounds, i64 %n, i64 %helpers, ptr %desc, i64 %ndesc) {
entry:
  %entries = mul i64 %n, %width
  %tbytes = shl i64 %entries, 3
  br label %size
size:
  %d = phi i64 [ 0, %entry ], [ %d1, %size_next ]
  %total = phi i64 [ %tbytes, %entry ], [ %total1, %size_next ]
  %sizing = icmp ult i64 %d, %ndesc
  br i1 %sizing, label %size_next, label %alloc
size_next:
  %rbp = call ptr @field(ptr %desc, i64 %d, i64 2)
  %rb = load i64, ptr %rbp
  %all = mul i64 %rb, %n
  %total1 = add i64 %total, %all
  %d1 = add i64 %d, 1
  br label %size
alloc:
  %block = call ptr @malloc(i64 %total)
  %failed = icmp eq ptr %block, null
  br i1 %failed, label %oom, label %fill
fill:
  %k = phi i64 [ 0, %alloc ], [ %k1, %fill_body ]
  %filling = icmp ult i64 %k, %entries
  br i1 %filling, label %fill_body, label %patch
fill_body:
  %a = urem i64 %k, %width
  %data = call ptr @data(ptr %objects, i64 %a, i1 %objects_given)
  %tp = getelementptr ptr, ptr %block, i64 %k
  store ptr %data, ptr %tp
  %k1 = add i64 %k, 1
  br label %fill
patch:
  %rows0 = getelementptr i8, ptr %block, i64 %tbytes
  br label %patch_output
patch_output:
  %pd = phi i64 [ 0, %patch ], [ %pd1, %patched ]
  %rows = phi ptr [ %rows0, %patch ], [ %rows_next, %patched ]
  %patching = icmp ult i64 %pd, %ndesc
  br i1 %patching, label %patch_rows, label %run
patch_rows:
  %slotp = call ptr @field(ptr %desc, i64 %pd, i64 0)
  %slot = load i64, ptr %slotp
  %prbp = call ptr @field(ptr %desc, i64 %pd, i64 2)
  %prb = load i64, ptr %prbp
  br label %patch_chunk
patch_chunk:
  %c = phi i64 [ 0, %patch_rows ], [ %c1, %patch_chunk_body ]
  %chunking = icmp ult i64 %c, %n
  br i1 %chunking, label %patch_chunk_body, label %patched
patch_chunk_body:
  %off = mul i64 %c, %prb
  %row = getelementptr i8, ptr %rows, i64 %off
  %at0 = mul i64 %c, %width
  %at = add i64 %at0, %slot
  %sp = getelementptr ptr, ptr %block, i64 %at
  store ptr %row, ptr %sp
  %c1 = add i64 %c, 1
  br label %patch_chunk
patched:
  %span = mul i64 %prb, %n
  %rows_next = getelementptr i8, ptr %rows, i64 %span
  %pd1 = add i64 %pd, 1
  br label %patch_output
run:
  %alone = icmp eq ptr %state, null
  br i1 %alone, label %run_here, label %run_pool
run_here:
  call void @run_serial(ptr %fn, ptr %block, i64 %width, ptr %bounds, i64 %n)
  br label %combine
run_pool:
  call void @pool_run(ptr %state, ptr %fn, ptr %block, i64 %width, ptr %bounds, i64 %n,
                      i64 %helpers)
  br label %combine
combine:
  %cd = phi i64 [ 0, %run_here ], [ 0, %run_pool ], [ %cd1, %combine_next ]
  %crows = phi ptr [ %rows0, %run_here ], [ %rows0, %run_pool ], [ %crows1, %combine_next ]
  %combining = icmp ult i64 %cd, %ndesc
  br i1 %combining, label %combine_next, label %done
combine_next:
  %cslotp = call ptr @field(ptr %desc, i64 %cd, i64 0)
  %cslot = load i64, ptr %cslotp
  %csizep = call ptr @field(ptr %desc, i64 %cd, i64 1)
  %csize = load i64, ptr %csizep
  %crbp = call ptr @field(ptr %desc, i64 %cd, i64 2)
  %crb = load i64, ptr %crbp
  %cfnp = call ptr @field(ptr %desc, i64 %cd, i64 3)
  %cfn = load ptr, ptr %cfnp
  %cout = call ptr @data(ptr %objects, i64 %cslot, i1 %objects_given)
  call void %cfn(ptr %cout, ptr %crows, i64 %n, i64 %csize)
  %cspan = mul i64 %crb, %n
  %crows1 = getelementptr i8, ptr %crows, i64 %cspan
  %cd1 = add i64 %cd, 1
  br label %combine
done:
  call void @free(ptr %block)
  ret i64 0
oom:
  ret i64 1
}
"""


# out[e] = rows[0][e] OP rows[1][e] OP ... in chunk order, for every element e (vectorized over
# e: each element's own order stays the chunks')
_COMBINE_IR = r"""
define void @combine_$NAME(ptr noalias %out, ptr noalias %rows, i64 %n, i64 %size) {
entry:
  br label %first
first:
  %e = phi i64 [ 0, %entry ], [ %e1, %first_body ]
  %copying = icmp ult i64 %e, %size
  br i1 %copying, label %first_body, label %next
first_body:
  %src = getelementptr $T, ptr %rows, i64 %e
  %v = load $T, ptr %src
  %dst = getelementptr $T, ptr %out, i64 %e
  store $T %v, ptr %dst
  %e1 = add i64 %e, 1
  br label %first
next:
  %c = phi i64 [ 1, %first ], [ %c1, %row_done ]
  %more = icmp ult i64 %c, %n
  br i1 %more, label %row, label %finish
row:
  %base = mul i64 %c, %size
  br label %inner
inner:
  %f = phi i64 [ 0, %row ], [ %f1, %inner_body ]
  %adding = icmp ult i64 %f, %size
  br i1 %adding, label %inner_body, label %row_done
inner_body:
  %i = add i64 %base, %f
  %p = getelementptr $T, ptr %rows, i64 %i
  %x = load $T, ptr %p
  %q = getelementptr $T, ptr %out, i64 %f
  %acc = load $T, ptr %q
  %r = $OP
  store $T %r, ptr %q
  %f1 = add i64 %f, 1
  br label %inner
row_done:
  %c1 = add i64 %c, 1
  br label %next
finish:
  ret void
}
"""
# Float sums combine compensated, as the kernels sum (codegen.llvm_emit's _two_sum and
# _compensated_total): sixty plain additions of partial sums lose an ulp of a float32 total
# where one compensated pass loses almost none. Row 0, once copied into the output, holds the
# compensations.
_COMPENSATED_IR = r"""
define void @combine_$NAME(ptr noalias %out, ptr noalias %rows, i64 %n, i64 %size) {
entry:
  br label %first
first:
  %e = phi i64 [ 0, %entry ], [ %e1, %first_body ]
  %copying = icmp ult i64 %e, %size
  br i1 %copying, label %first_body, label %next
first_body:
  %src = getelementptr $T, ptr %rows, i64 %e
  %v = load $T, ptr %src
  %dst = getelementptr $T, ptr %out, i64 %e
  store $T %v, ptr %dst
  store $T 0.0, ptr %src
  %e1 = add i64 %e, 1
  br label %first
next:
  %c = phi i64 [ 1, %first ], [ %c1, %row_done ]
  %more = icmp ult i64 %c, %n
  br i1 %more, label %row, label %total
row:
  %base = mul i64 %c, %size
  br label %inner
inner:
  %f = phi i64 [ 0, %row ], [ %f1, %inner_body ]
  %adding = icmp ult i64 %f, %size
  br i1 %adding, label %inner_body, label %row_done
inner_body:
  %i = add i64 %base, %f
  %p = getelementptr $T, ptr %rows, i64 %i
  %x = load $T, ptr %p
  %q = getelementptr $T, ptr %out, i64 %f
  %s = load $T, ptr %q
  %cp = getelementptr $T, ptr %rows, i64 %f
  %comp = load $T, ptr %cp
  %t = fadd $T %s, %x
  %as = call $T @llvm.fabs.$S($T %s)
  %ax = call $T @llvm.fabs.$S($T %x)
  %s_bigger = fcmp oge $T %as, %ax
  %ds = fsub $T %s, %t
  %es = fadd $T %ds, %x
  %dx = fsub $T %x, %t
  %ex = fadd $T %dx, %s
  %err = select i1 %s_bigger, $T %es, $T %ex
  %comp1 = fadd $T %comp, %err
  store $T %t, ptr %q
  store $T %comp1, ptr %cp
  %f1 = add i64 %f, 1
  br label %inner
row_done:
  %c1 = add i64 %c, 1
  br label %next
total:
  %g = phi i64 [ 0, %next ], [ %g1, %total_body ]
  %totalling = icmp ult i64 %g, %size
  br i1 %totalling, label %total_body, label %finish
total_body:
  %tq = getelementptr $T, ptr %out, i64 %g
  %sum = load $T, ptr %tq
  %tcp = getelementptr $T, ptr %rows, i64 %g
  %tc = load $T, ptr %tcp
  %abs = call $T @llvm.fabs.$S($T %sum)
  %finite = fcmp olt $T %abs, $INF
  %with = fadd $T %sum, %tc
  %final = select i1 %finite, $T %with, $T %sum  ; an inf or nan sum makes the compensation nan
  store $T %final, ptr %tq
  %g1 = add i64 %g, 1
  br label %total
finish:
  ret void
}
"""
# (reduce op, dtype) -> (its template, LLVM type, intrinsic suffix, the combining instruction of
# %acc and %x); float max as the kernels' own (llvm.maximum: nan propagates)
COMBINES = {
    ("sum", "float32"): (_COMPENSATED_IR, "float", "f32", ""),
    ("sum", "float64"): (_COMPENSATED_IR, "double", "f64", ""),
    ("sum", "int64"): (_COMBINE_IR, "i64", "i64", "add i64 %acc, %x"),
    ("max", "float32"): (_COMBINE_IR, "float", "f32",
                         "call float @llvm.maximum.f32(float %acc, float %x)"),
    ("max", "float64"): (_COMBINE_IR, "double", "f64",
                         "call double @llvm.maximum.f64(double %acc, double %x)"),
    ("max", "int64"): (_COMBINE_IR, "i64", "i64", "call i64 @llvm.smax.i64(i64 %acc, i64 %x)"),
}


@functools.cache
def available() -> bool:
    """Whether this machine runs the native pool (Linux on x86-64 or aarch64)."""
    return sys.platform.startswith("linux") and platform.machine() in _ARCH


def _ir_text() -> str:
    futex, pause = _ARCH[platform.machine()]
    combines = "".join(string.Template(ir).substitute(NAME="_".join(key), T=t, S=suffix, OP=op,
                                                      INF="0x7FF0000000000000")
                       for key, (ir, t, suffix, op) in COMBINES.items())
    declares = "".join(f"declare {t} @llvm.{f}.{s}({t}{', ' + t if f == 'maximum' else ''})\n"
                       for f in ("maximum", "fabs") for t, s in (("float", "f32"),
                                                                 ("double", "f64")))
    return declares + combines + string.Template(_IR).substitute(
        EPOCH=_EPOCH, SLEEPERS=_SLEEPERS, CLAIM=_CLAIM, DONE=_DONE, JOB_FN=_JOB_FN,
        JOB_PTRS=_JOB_PTRS, JOB_BOUNDS=_JOB_BOUNDS, JOB_STRIDE=_JOB_STRIDE, SHUTDOWN=_SHUTDOWN,
        SPIN=_SPIN,
        IDLE_SINCE=_IDLE_SINCE,
        SYS_FUTEX=futex, FUTEX_WAIT=_FUTEX_WAIT_PRIVATE, FUTEX_WAKE=_FUTEX_WAKE_PRIVATE,
        PAUSE=pause, DATA_OFFSET=ARRAY_DATA_OFFSET)


_VOID_P, _I64 = ctypes.c_void_p, ctypes.c_int64


@dataclass(frozen=True)
class _Code:
    """The pool's compiled loops; ``engine`` owns their machine code."""
    engine: llvm.ExecutionEngine
    worker: ctypes._CFuncPtr
    run: ctypes._CFuncPtr
    stop: ctypes._CFuncPtr
    serial: ctypes._CFuncPtr
    accumulating: ctypes._CFuncPtr
    combines: dict[tuple[str, str], int]  # COMBINES' functions' addresses


_compiled: _Code | None = None
_compiling = threading.Lock()


def _code() -> _Code:
    """The pool's loops, compiled once by whichever thread first needs them. (A second copy,
    compiled by a thread that lost a race, would be freed with its engine outside
    ``target.LOCK``, while another thread may use LLVM's global context: an LLVM assertion.)"""
    global _compiled
    if _compiled is None:
        with _compiling:
            if _compiled is None:
                _compiled = _compile()
    return _compiled


# where the loops' object code comes from: compiled here, unless codegen.cache has installed
# its disk-backed source (set_code_source), as importing codegen does
_code_source: Callable[[str], target.ObjectCode] = target.emit


def set_code_source(source: Callable[[str], target.ObjectCode]) -> None:
    """``source(ir_text)`` gives the loops' object code from now on (codegen.cache: from its
    disk store, else compiled)."""
    global _code_source
    _code_source = source


def _compile() -> _Code:
    """Load the loops' object code from ``_code_source``: about 0.2 s of LLVM time when it
    compiles, which a new process spares itself where the disk cache has it."""
    target.host()  # initializes the native target
    code = _code_source(_ir_text())
    with target.LOCK:
        names = ["pool_worker", "pool_run", "pool_stop", "run_serial", "run_accumulating",
                 *("combine_" + "_".join(key) for key in COMBINES)]
        engine, found = target.load_support(code.object_file, *names)
        address = dict(zip(names, found)).__getitem__
        worker = ctypes.CFUNCTYPE(None, _VOID_P, _I64)(address("pool_worker"))
        run = ctypes.CFUNCTYPE(None, _VOID_P, _VOID_P, _VOID_P, _I64, _VOID_P, _I64, _I64)(
            address("pool_run"))
        stop = ctypes.CFUNCTYPE(None, _VOID_P)(address("pool_stop"))
        serial = ctypes.CFUNCTYPE(None, _VOID_P, _VOID_P, _I64, _VOID_P, _I64)(
            address("run_serial"))
        accumulating = ctypes.CFUNCTYPE(_I64, _VOID_P, _VOID_P, _VOID_P, ctypes.c_bool, _I64,
                                        _VOID_P, _I64, _I64, _VOID_P, _I64)(
            address("run_accumulating"))
        combines = {key: address("combine_" + "_".join(key)) for key in COMBINES}
    return _Code(engine, worker, run, stop, serial, accumulating, combines)


class Pool:
    """Worker threads over one shared state. Its memory comes from ``ctypes`` and is never
    freed while a worker might read it: ``close`` joins the workers first."""

    def __init__(self) -> None:
        self._code = _code()
        self._memory = (ctypes.c_int64 * (_STATE_WORDS + 8))()
        # 64-byte aligned, so that every counter has its cache line
        self.state = (ctypes.addressof(self._memory) + 63) // 64 * 64
        # how long idle workers spin: SPIN_NS from each job on, 0 after ``rest``
        self.spin = ctypes.c_int64.from_address(self.state + 8 * _SPIN)
        self.spin.value = SPIN_NS
        self.threads: list[threading.Thread] = []

    def grow(self, workers: int) -> None:
        """At least ``workers`` worker threads. A thread that starts during a job joins from the
        next one: the caller runs whatever nobody claimed."""
        while len(self.threads) < workers:
            t = threading.Thread(target=self._code.worker, args=(self.state, len(self.threads)),
                                 daemon=True, name=f"backplan-pool-{len(self.threads)}")
            t.start()
            self.threads.append(t)

    def run(self, fn: int, table: int, stride: int, bounds: ctypes.Array, n: int,
            helpers: int) -> None:
        """One job (``run_chunks``) on the caller and workers ``0 .. helpers - 1``; the caller
        holds the job lock."""
        self._code.run(self.state, fn, table, stride, bounds, n, helpers)

    def close(self, timeout: float = 5.0) -> bool:
        """Stop and join the workers; False if one did not finish in ``timeout`` seconds (its
        memory is then kept for good)."""
        self._code.stop(self.state)
        for t in self.threads:
            t.join(timeout)
        if any(t.is_alive() for t in self.threads):
            _KEPT.append(self)
            return False
        return True


_KEPT: list[Pool] = []  # pools whose workers did not stop: their memory must outlive them
_pool: Pool | None = None
_job_lock = threading.Lock()
_exiting = False  # set at interpreter exit: no pool is started after that


def _forget_after_fork() -> None:
    """In a forked child only the forking thread exists: the workers and any holder of the job
    lock are gone. The old state's memory is left as it is (no worker of this process uses it)."""
    global _pool, _job_lock, _compiling
    if _pool is not None:
        _KEPT.append(_pool)
    _pool, _job_lock, _compiling = None, threading.Lock(), threading.Lock()


def _close_at_exit() -> None:
    """Workers must leave the native loop before the interpreter tears down the JIT engine and
    the state; a job still running on another thread is waited for a little while."""
    global _pool, _exiting
    _exiting = True
    if _pool is not None and _job_lock.acquire(timeout=5.0):
        pool, _pool = _pool, None
        pool.close()
        _job_lock.release()


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(_close_at_exit)


def workers() -> int:
    """How many worker threads the pool has now (0 before its first job)."""
    return 0 if _pool is None else len(_pool.threads)


def run_chunks(fn: int, table: ctypes.Array | array.array, bounds: Sequence[int] | ctypes.Array,
               threads: int | None = None, stride: int = 0) -> None:
    """Run chunk ``i`` as ``fn(&table[i * stride], bounds[i], bounds[i + 1])`` for every chunk
    of ``bounds`` (the kernels' C ABI: ``void fn(void** ptrs, i64 lo, i64 hi)``; ``table`` holds
    pointers, a ctypes array or an ``array.array`` of POINTER_TYPECODE; ``stride`` 0: every
    chunk gets the same pointer table), on at most ``threads`` threads (default: one per chunk):
    the calling thread and up to ``threads - 1`` pool workers, and return when all are done.
    The pool may have more workers (grown by an earlier job): those stay out of this one. One
    job runs on the pool at a time: a caller that finds the pool busy (another Python thread's
    job) runs all its chunks itself rather than wait, and so does a caller that asks for one
    thread. Either way the results are the same: a chunk computes the same wherever it runs.
    The chunks must write disjoint memory."""
    n = len(bounds) - 1
    threads = n if threads is None else threads
    if not 1 <= n <= MAX_CHUNKS:
        raise ValueError(f"run_chunks: bounds must delimit 1 to {MAX_CHUNKS} chunks, got "
                         f"{len(bounds)} bounds")
    if type(threads) is not int or threads < 1:
        raise ValueError(f"run_chunks: threads must be a positive int, got {threads!r}")
    if not fn:
        raise ValueError("run_chunks: fn is a null function address")
    start, size = _table(table)
    if stride < 0 or size < (n * stride if stride else 1):
        raise ValueError(f"run_chunks: {n} chunks of {stride} pointers each need a table of "
                         f"{n * stride or 1}, got {size} (stride {stride})")
    edges = bounds if _is_i64_array(bounds) else (_I64 * (n + 1))(*bounds)
    run_checked(fn, start, stride, edges, threads)


def run_checked(fn: int, table: int, stride: int, bounds: ctypes.Array, threads: int) -> None:
    """``run_chunks`` for a caller that has made sure of its arguments (a table address, a
    ctypes array of i64 bounds, a positive thread count): a kernel's split, where the checks
    would cost a microsecond a call."""
    n = len(bounds) - 1
    helpers = min(threads, n, _MAX_LIMIT + 1) - 1
    held = _take(helpers)
    if held is None:
        if available():
            _code().serial(fn, table, stride, bounds, n)
        else:
            _run_in_python(fn, table, stride, bounds)
        return
    try:
        held.run(fn, table, stride, bounds, n, helpers)
    finally:
        _job_lock.release()


def run_accumulating(fn: int, arrays: array.array, objects: bool, bounds: ctypes.Array,
                     threads: int, accumulated: ctypes.Array) -> None:
    """Run a kernel with accumulated outputs in the chunks of ``bounds`` on at most
    ``threads`` threads (as ``run_checked``), each chunk into partials of its own, then
    combine the partials into the outputs in chunk order: the same arithmetic on any number
    of threads. ``fn`` is the kernel's data-pointer entry; ``arrays`` its arrays, inputs then
    outputs: their data pointers, or with ``objects`` the ids of numpy arrays whose data
    pointers are where ``llvm_emit.object_entry_ok`` found them; ``accumulated`` 4 i64 per
    accumulated output: its index in ``arrays``, its element count, its bytes, and its
    ``combine_address``. Only where ``available()``."""
    n = len(bounds) - 1
    helpers = min(threads, n, _MAX_LIMIT + 1) - 1
    start, width = arrays.buffer_info()
    held = _take(helpers)
    try:
        failed = _code().accumulating(held and held.state, fn, start, objects, width, bounds, n,
                                      helpers, accumulated, len(accumulated) // 4)
    finally:
        if held is not None:
            _job_lock.release()
    if failed:
        raise MemoryError(f"run_accumulating: no memory for the partials of {n} chunks")


def rest() -> None:
    """Let idle workers sleep now rather than spin out their window: for a caller about to
    hand the cores to other threads (a BLAS call), which spinning workers would slow (a plan
    of matmuls and split kernels ran 10-20% slower). The next job wakes them (12-40 us
    instead of 3-6: worth it only where other threads need the cores) and spins again."""
    pool = _pool
    if pool is not None:
        pool.spin.value = 0


def combine_address(op: str, dtype: str) -> int:
    """The native function combining ``op`` partials of ``dtype`` (``run_accumulating``)."""
    if (op, dtype) not in COMBINES:
        raise ValueError(f"no combine of {dtype} partials with {op!r}: {sorted(COMBINES)}")
    return _code().combines[(op, dtype)]


def _take(helpers: int) -> Pool | None:
    """The pool, grown to ``helpers`` workers and its job lock held, for a job that may use
    them; None where the caller runs the job alone (no helpers asked, the pool is busy with
    another thread's job, the interpreter is exiting, or the machine runs no pool)."""
    global _pool
    if helpers == 0 or _exiting or not available() or not _job_lock.acquire(blocking=False):
        return None
    try:
        if _pool is None:
            _pool = Pool()
        _pool.grow(helpers)
        _pool.spin.value = SPIN_NS
    except BaseException:
        _job_lock.release()
        raise
    return _pool


POINTER_TYPECODE = "Q" if ctypes.sizeof(_VOID_P) == 8 else "I"


def _table(table: ctypes.Array | array.array) -> tuple[int, int]:
    """(address, length) of a table of pointers; a TypeError for anything else. An
    ``array.array`` is built five times faster than a ctypes array (0.2 against 1.2 us for 12
    pointers), which counts on a call of a few tens of us."""
    if isinstance(table, array.array) and table.typecode == POINTER_TYPECODE:
        return table.buffer_info()
    if isinstance(table, ctypes.Array) and ctypes.sizeof(table._type_) == ctypes.sizeof(_VOID_P):
        return ctypes.addressof(table), len(table)
    raise TypeError(f"run_chunks: the table must be a ctypes array of pointer-sized items or an "
                    f"array.array of {POINTER_TYPECODE!r}, got {type(table).__name__}")


def _is_i64_array(a: object) -> bool:
    return isinstance(a, ctypes.Array) and a._type_ is _I64


_KERNEL_FN = ctypes.CFUNCTYPE(None, _VOID_P, _I64, _I64)


def _run_in_python(fn: int, start: int, stride: int, bounds: ctypes.Array) -> None:
    """Where the native loops do not run, the chunks run through ctypes one by one."""
    call = _KERNEL_FN(fn)
    size = ctypes.sizeof(_VOID_P)
    for i in range(len(bounds) - 1):
        call(start + i * stride * size, bounds[i], bounds[i + 1])
