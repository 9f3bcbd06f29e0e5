// The CUDA built-ins the kernels of codegen/cuda.py use, for running their source on the host
// (codegen/cuda_host.py). Each CUDA thread of a block is a fiber on the launching host thread;
// the blocks of a launch run one after another. __shared__ variables become function
// statics: one copy, seen by every thread of the (only) running block.
#pragma once
#include <ucontext.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

using std::isnan;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

// The CUDA threads of a block are fibers (ucontext) on the launching host thread: a fiber runs
// until it waits at a barrier (__syncthreads, or its warp's, inside a shuffle), and the
// scheduler resumes the waiters of a barrier once every thread that takes part has arrived.
// Switching fibers costs far less than waking OS threads (a row-reduction kernel over
// (512, 2048) took 25 s with 256 OS threads and futex barriers, 0.3 s with fibers) and makes
// every run interleave the same way.
// static, not inline: C++ inline variables are unique across every library the process loads
// (STB_GNU_UNIQUE), and two host modules must not share their launch state
static dim3 threadIdx, blockIdx, blockDim, gridDim;

#if defined(__x86_64__) && defined(__linux__) && !defined(BP_UCONTEXT)
// On x86-64 (unless built with -DBP_UCONTEXT), fibers switch by saving the callee-saved registers and the FP control words on
// their own stack and swapping stack pointers: swapcontext also saves the signal mask, a
// system call per switch (the eltwise kernel: 3.6 s with swapcontext, 0.3 s with this)
#define BP_FAST_SWITCH
extern "C" void bp_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl bp_switch
  .hidden bp_switch
  .type bp_switch, @function
bp_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  fnstcw (%rsp)
  stmxcsr 8(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size bp_switch, .-bp_switch
)");
#endif
constexpr unsigned long BP_STACK = 128ul << 10;  // per fiber

enum bp_wait { BP_RUNNING, BP_AT_BLOCK, BP_AT_WARP, BP_DONE };
struct bp_fiber {
#ifdef BP_FAST_SWITCH
  void* sp = nullptr;  // its saved stack pointer while it does not run
#else
  ucontext_t context;
#endif
  std::unique_ptr<char[]> stack;  // uninitialized: touched only as deep as a thread goes
  bp_wait wait = BP_RUNNING;
};
struct bp_host_block {
#ifdef BP_FAST_SWITCH
  void* scheduler = nullptr;
#else
  ucontext_t scheduler;
#endif
  std::vector<bp_fiber> fibers;
  unsigned current = 0;
  std::vector<unsigned long long> lanes;  // two sets of exchange slots, one per thread
  std::vector<unsigned> parity;  // per thread, the set its next shuffle uses
};
static bp_host_block bp_host;

inline void bp_yield(bp_wait why) {
  bp_fiber& me = bp_host.fibers[bp_host.current];
  me.wait = why;
#ifdef BP_FAST_SWITCH
  bp_switch(&me.sp, bp_host.scheduler);
#else
  swapcontext(&me.context, &bp_host.scheduler);
#endif
}

inline void __syncthreads() { bp_yield(BP_AT_BLOCK); }

// every lane of the warp publishes v, waits for the others and reads lane + delta's. Slots
// alternate between two sets per shuffle, so a lane may publish its next value while another
// still reads this one (none can publish twice ahead: that needs the slow lane's arrival)
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta) {
  static_assert(sizeof(T) <= sizeof(unsigned long long));
  const unsigned tid = threadIdx.x, lane = tid & 31u;
  unsigned long long* slots = bp_host.lanes.data() + blockDim.x * bp_host.parity[tid];
  bp_host.parity[tid] ^= 1u;
  std::memcpy(&slots[tid], &v, sizeof(T));
  bp_yield(BP_AT_WARP);
  T out = v;
  if (lane + delta < 32u) std::memcpy(&out, &slots[tid + delta], sizeof(T));
  return out;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}

static void (*bp_kernel)(void**);
static void** bp_args;

static void bp_fiber_main() {
  bp_kernel(bp_args);
  bp_yield(BP_DONE);
}

// Release the threads waiting at a barrier every participant has reached: a warp's 32 lanes,
// or the whole block. Returns 0 when no fiber could be released (a deadlock: some threads
// wait at a barrier others never reach, which hangs or corrupts a real GPU).
static int bp_release() {
  const unsigned n = bp_host.fibers.size();
  int released = 0;
  for (unsigned w = 0; w < n / 32u; ++w) {
    bool all = true;
    for (unsigned t = 32u * w; t < 32u * w + 32u; ++t) all &= bp_host.fibers[t].wait == BP_AT_WARP;
    if (all) {
      for (unsigned t = 32u * w; t < 32u * w + 32u; ++t) bp_host.fibers[t].wait = BP_RUNNING;
      released = 1;
    }
  }
  bool block = true, done = true;
  for (auto& f : bp_host.fibers) {
    block &= f.wait == BP_AT_BLOCK;
    done &= f.wait == BP_DONE;
  }
  if (block) {
    for (auto& f : bp_host.fibers) f.wait = BP_RUNNING;
    released = 1;
  }
  return released || done;
}

// Launch: ``call(args)`` runs the kernel for the current thread; args are pointers to the
// argument values, as cuLaunchKernel's kernelParams. Only x extents are threads (the kernels
// use blockDim.x alone); the grid may be 2-D. Returns 1 for a bad block, 2 on a deadlock.
extern "C" int bp_host_launch(void (*call)(void**), void** args, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx) {
  if (bx == 0 || bx % 32u != 0u) return 1;
  gridDim = dim3{gx, gy, gz};
  blockDim = dim3{bx, 1, 1};
  bp_kernel = call;
  bp_args = args;
  bp_host.fibers.clear();
  bp_host.fibers.resize(bx);
  bp_host.lanes.assign(2 * bx, 0);
  for (auto& f : bp_host.fibers) f.stack.reset(new char[BP_STACK]);
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        blockIdx = dim3{x, y, z};
        for (auto& f : bp_host.fibers) {
#ifdef BP_FAST_SWITCH
          // the frame bp_switch pops: x87 control word and MXCSR at their defaults, six
          // callee-saved registers, then bp_fiber_main as the return address (entered with
          // the stack 8 past a 16-byte boundary, as after a call)
          auto* top = reinterpret_cast<unsigned long long*>(f.stack.get() + BP_STACK);
          unsigned long long* sp = top - 10;
          std::memset(sp, 0, 10 * sizeof *sp);
          sp[0] = 0x037F;
          sp[1] = 0x1F80;
          sp[8] = reinterpret_cast<unsigned long long>(&bp_fiber_main);
          f.sp = sp;
#else
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = BP_STACK;
          f.context.uc_link = nullptr;
          makecontext(&f.context, bp_fiber_main, 0);
#endif
          f.wait = BP_RUNNING;
        }
        bp_host.parity.assign(bx, 0);
        for (;;) {
          bool all_done = true;
          for (unsigned t = 0; t < bx; ++t) {
            if (bp_host.fibers[t].wait != BP_RUNNING) continue;
            bp_host.current = t;
            threadIdx = dim3{t, 0, 0};
#ifdef BP_FAST_SWITCH
            bp_switch(&bp_host.scheduler, bp_host.fibers[t].sp);
#else
            swapcontext(&bp_host.scheduler, &bp_host.fibers[t].context);
#endif
          }
          for (auto& f : bp_host.fibers) all_done &= f.wait == BP_DONE;
          if (all_done) break;
          if (!bp_release()) return 2;
        }
      }
  return 0;
}
