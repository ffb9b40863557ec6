"""Ceiling of random gathers on this GPU: n gathers of x[hash(i) % m], no other memory traffic."""
import numpy as np, cupy as cp
SRC = r'''
__device__ __forceinline__ unsigned mix(unsigned long long i) {
  unsigned long long z = i * 0x9E3779B97F4A7C15ull; z ^= z >> 29; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 32; return (unsigned)z;
}
template<typename T> __device__ void gat(const T* __restrict__ x, unsigned m, unsigned long long n, T* out) {
  T acc = T(0);
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    unsigned a = (unsigned)(((unsigned long long)mix(i) * m) >> 32), b = (unsigned)(((unsigned long long)mix(i + stride) * m) >> 32);
    unsigned c = (unsigned)(((unsigned long long)mix(i + 2 * stride) * m) >> 32), d = (unsigned)(((unsigned long long)mix(i + 3 * stride) * m) >> 32);
    acc += __ldg(x + a) + __ldg(x + b) + __ldg(x + c) + __ldg(x + d);
  }
  for (; i < n; i += stride) acc += __ldg(x + (unsigned)(((unsigned long long)mix(i) * m) >> 32));
  if (acc == T(12345.678)) out[0] = acc;
}
extern "C" {
__global__ void g32(const float* x, unsigned m, unsigned long long n, float* o) { gat<float>(x, m, n, o); }
__global__ void g64(const double* x, unsigned m, unsigned long long n, double* o) { gat<double>(x, m, n, o); }
}
'''
mod = cp.RawModule(code=SRC, options=('-std=c++14',))
ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
n = 51893194
for sfx, dt in (('32', np.float32), ('64', np.float64)):
    f = mod.get_function('g' + sfx)
    for m in (1 << 20, 2000000, 4000000, 8000000):
        x = cp.random.random(m).astype(dt); o = cp.zeros(1, dt)
        best = None
        for blocks, threads in ((132 * 8, 256), (132 * 16, 256), (132 * 32, 256)):
            f((blocks,), (threads,), (x, np.uint32(m), np.uint64(n), o)); cp.cuda.runtime.deviceSynchronize()
            ts = []
            for _ in range(15):
                ev0.record(); f((blocks,), (threads,), (x, np.uint32(m), np.uint64(n), o)); ev1.record(); ev1.synchronize()
                ts.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000)
            t = float(np.median(ts[2:]))
            best = t if best is None else min(best, t)
        print(f'f{sfx} m={m} ({m * np.dtype(dt).itemsize / 2**20:.0f} MiB) {n} gathers: {best:.1f} us = {n / best / 1e3:.1f} G gathers/s', flush=True)
