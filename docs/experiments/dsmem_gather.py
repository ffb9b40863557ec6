"""Rate of random gathers from distributed shared memory (thread block clusters, sm_90),
against random gathers of x through the L2 (as gather_ceiling.py).

Each block fills its shared memory; then every thread reads random words of random blocks of
its cluster (`mapa` + `ld.shared::cluster`), four loads in flight. Cluster size 1 is plain
shared memory. Prints G gathers per second for each cluster size and element type.
"""
import numpy as np, cupy as cp

HEAD = r'''
__device__ __forceinline__ unsigned long long mix(unsigned long long i) {
  unsigned long long z = i * 0x9E3779B97F4A7C15ull; z ^= z >> 29; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 32;
  z *= 0x94D049BB133111EBull; z ^= z >> 29; return z;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
}
__device__ __forceinline__ float ldc(unsigned a, float*) { float v; asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a)); return v; }
__device__ __forceinline__ double ldc(unsigned a, double*) { double v; asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(a)); return v; }
__device__ __forceinline__ unsigned mapa(unsigned a, unsigned rank) {
  unsigned r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank)); return r;
}
template<typename T, unsigned CS> __device__ void dsm(unsigned words, unsigned per_thread, T* out) {
  extern __shared__ __align__(16) unsigned char raw[];
  T* sm = reinterpret_cast<T*>(raw);
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) sm[i] = T(i & 7);
  cluster_sync();
  unsigned base = (unsigned)__cvta_generic_to_shared(sm);
  unsigned long long s = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
  T acc = T(0);
  for (unsigned k = 0; k < per_thread; k += 4) {
    unsigned long long h0 = mix(s + k), h1 = mix(s + k + 1), h2 = mix(s + k + 2), h3 = mix(s + k + 3);
    unsigned a0 = mapa(base + (unsigned)(((h0 & 0xffffffffull) * words) >> 32) * sizeof(T), (unsigned)(((h0 >> 32) * CS) >> 32));
    unsigned a1 = mapa(base + (unsigned)(((h1 & 0xffffffffull) * words) >> 32) * sizeof(T), (unsigned)(((h1 >> 32) * CS) >> 32));
    unsigned a2 = mapa(base + (unsigned)(((h2 & 0xffffffffull) * words) >> 32) * sizeof(T), (unsigned)(((h2 >> 32) * CS) >> 32));
    unsigned a3 = mapa(base + (unsigned)(((h3 & 0xffffffffull) * words) >> 32) * sizeof(T), (unsigned)(((h3 >> 32) * CS) >> 32));
    acc += ldc(a0, (T*)0) + ldc(a1, (T*)0) + ldc(a2, (T*)0) + ldc(a3, (T*)0);
  }
  cluster_sync();
  if (acc == T(12345.678)) out[0] = acc;
}
template<typename T> __device__ void gat(const T* __restrict__ x, unsigned m, unsigned per_thread, T* out) {
  unsigned long long s = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
  T acc = T(0);
  for (unsigned k = 0; k < per_thread; k += 4) {
    unsigned long long h0 = mix(s + k), h1 = mix(s + k + 1), h2 = mix(s + k + 2), h3 = mix(s + k + 3);
    acc += __ldg(x + (((h0 & 0xffffffffull) * m) >> 32)) + __ldg(x + (((h1 & 0xffffffffull) * m) >> 32))
         + __ldg(x + (((h2 & 0xffffffffull) * m) >> 32)) + __ldg(x + (((h3 & 0xffffffffull) * m) >> 32));
  }
  if (acc == T(12345.678)) out[0] = acc;
}
extern "C" {
__global__ void l2_32(const float* x, unsigned m, unsigned p, float* o) { gat<float>(x, m, p, o); }
__global__ void l2_64(const double* x, unsigned m, unsigned p, double* o) { gat<double>(x, m, p, o); }
'''
SIZES = (1, 2, 4, 8, 16)
SRC = HEAD + ''.join(
    f'__global__ void __cluster_dims__({cs},1,1) d32_{cs}(unsigned w, unsigned p, float* o) {{ dsm<float,{cs}>(w, p, o); }}\n'
    f'__global__ void __cluster_dims__({cs},1,1) d64_{cs}(unsigned w, unsigned p, double* o) {{ dsm<double,{cs}>(w, p, o); }}\n'
    for cs in SIZES) + '}\n'

mod = cp.RawModule(code=SRC, options=('-std=c++17',))
ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
dev = cp.cuda.Device()
sms = dev.attributes['MultiProcessorCount']
print(cp.cuda.runtime.getDeviceProperties(0)['name'].decode(), sms, 'SMs', flush=True)


def timed(launch, reps=9):
    launch(); cp.cuda.runtime.deviceSynchronize()
    ts = []
    for _ in range(reps):
        ev0.record(); launch(); ev1.record(); ev1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(ev0, ev1) * 1000)
    return float(np.median(ts))


PER = 1024
for sfx, dt in (('32', np.float32), ('64', np.float64)):
    o = cp.zeros(1, dt)
    for m in (1000000, 4000000):
        x = cp.random.random(m).astype(dt)
        f = mod.get_function('l2_' + sfx)
        for threads in (256, 1024):
            blocks = sms * 2048 // threads
            n = blocks * threads * PER
            t = timed(lambda: f((blocks,), (threads,), (x, np.uint32(m), np.uint32(PER), o)))
            print(f'L2   f{sfx} x={m * x.itemsize / 2**20:.0f} MiB threads={threads}: {n / t / 1e3:.1f} G gathers/s', flush=True)
    smem = 200 * 1024
    words = smem // np.dtype(dt).itemsize
    for cs in SIZES:
        f = mod.get_function(f'd{sfx}_{cs}')
        try:
            f.max_dynamic_shared_size_bytes = smem
            if cs > 8:  # needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (14)
                cp.cuda.driver.funcSetAttribute(f.kernel.ptr, 14, 1)
        except Exception as e:  # noqa: BLE001
            print(f'DSMEM f{sfx} cluster {cs}: attribute failed: {e}', flush=True)
            continue
        for threads in (512, 1024):
            blocks = (sms * 4 // cs) * cs
            n = blocks * threads * PER
            try:
                t = timed(lambda: f((blocks,), (threads,), (np.uint32(words), np.uint32(PER), o), shared_mem=smem))
            except Exception as e:  # noqa: BLE001
                print(f'DSMEM f{sfx} cluster {cs} threads={threads}: launch failed: {e}', flush=True)
                continue
            print(f'DSMEM f{sfx} cluster {cs:2d} ({cs * smem / 2**20:.2f} MiB) threads={threads}: '
                  f'{n / t / 1e3:.1f} G gathers/s ({t:.0f} us)', flush=True)
