// The CUDA built-ins the kernels of codegen/cuda.py use, for running their source on the host
// (codegen/cuda_host.py). One host thread plays each CUDA thread of a block; the blocks of a
// launch run one after another on the same threads. __shared__ variables become function
// statics: one copy, seen by every thread of the (only) running block.
#pragma once
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

using std::isnan;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

struct bp_host_block {
  std::unique_ptr<std::barrier<>> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<unsigned long long> lanes;  // one exchange slot per thread of the block
};
inline bp_host_block bp_host;

inline void __syncthreads() { bp_host.block->arrive_and_wait(); }

// every lane of the warp publishes v, waits for the others, reads lane + delta's, and waits
// again so that no slot is overwritten before the whole warp has read it
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta) {
  static_assert(sizeof(T) <= sizeof(unsigned long long));
  const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  std::memcpy(&bp_host.lanes[tid], &v, sizeof(T));
  bp_host.warps[warp]->arrive_and_wait();
  T out = v;
  if (lane + delta < 32u) std::memcpy(&out, &bp_host.lanes[tid + delta], sizeof(T));
  bp_host.warps[warp]->arrive_and_wait();
  return out;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}

// Launch: ``call(args)`` runs the kernel for the current thread; args are pointers to the
// argument values, as cuLaunchKernel's kernelParams. Only x extents are threads (the kernels
// use blockDim.x alone); the grid may be 2-D.
extern "C" int bp_host_launch(void (*call)(void**), void** args, unsigned gx, unsigned gy,
                              unsigned gz, unsigned bx) {
  if (bx == 0 || bx % 32u != 0u) return 1;
  gridDim = dim3{gx, gy, gz};
  blockDim = dim3{bx, 1, 1};
  bp_host.block = std::make_unique<std::barrier<>>(bx);
  bp_host.warps.clear();
  for (unsigned w = 0; w < bx / 32u; ++w)
    bp_host.warps.push_back(std::make_unique<std::barrier<>>(32));
  bp_host.lanes.assign(bx, 0);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < bx; ++t) {
    threads.emplace_back([=] {
      threadIdx = dim3{t, 0, 0};
      for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
          for (unsigned x = 0; x < gx; ++x) {
            blockIdx = dim3{x, y, z};
            call(args);
            // the next block starts once every thread left this one (its shared memory)
            bp_host.block->arrive_and_wait();
          }
    });
  }
  for (auto& t : threads) t.join();
  return 0;
}
