// CPU stand-ins for the CUDA built-ins that ptx/amg.cu uses (tests/amg_emulation/run.sh).
#pragma once
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
using std::min; using std::sqrt; using std::fabs;
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static
struct Dim { unsigned x; };
extern thread_local Dim blockIdx, threadIdx;
extern Dim blockDim, gridDim;
typedef float f32; typedef double f64;
#define SPGPU_BLOCK 256
template <typename T> inline T ldg(const T* p) { return *p; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p += v; return o; }
inline unsigned atomicExch(unsigned* p, unsigned v) { unsigned o = *p; *p = v; return o; }
extern std::barrier<>* bar;
extern unsigned long long shfl_slots[256];
inline void __syncthreads() { bar->arrive_and_wait(); }
template <typename T> inline T __shfl_up_sync(unsigned, T v, int o) {
    unsigned t = threadIdx.x, lane = t & 31;
    shfl_slots[t] = (unsigned long long)v;
    bar->arrive_and_wait();
    T r = lane >= (unsigned)o ? (T)shfl_slots[t - o] : v;
    bar->arrive_and_wait();
    return r;
}
// The group kernels (several threads per row: the SpGEMM passes and the power step for long
// rows) run here with groups of one thread only (threads run one at a time); these let them
// compile.
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) { unsigned o = *p; if (o == cmp) *p = v; return o; }
inline void __syncwarp(unsigned = 0xffffffffu) {}
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned, int = 32) { return v; }
template <typename T> inline T __shfl_sync(unsigned, T v, int, int = 32) { return v; }
inline float __double2float_rn(double v) { return (float)v; }
// Runs a grid of `grid` blocks of 256 real threads, block after block (the block kernels:
// the scan, the long rows' sort): a barrier for __syncthreads, the static arrays of a kernel
// as its block's shared memory.
template <class F> void launch_blocks(unsigned grid, F f) {
    gridDim.x = grid; blockDim.x = 256;
    for (unsigned b = 0; b < grid; ++b) {
        std::barrier<> br(256); bar = &br;
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < 256; ++t) ts.emplace_back([&, b, t] { blockIdx.x = b; threadIdx.x = t; f(); });
        for (auto& t : ts) t.join();
    }
}
