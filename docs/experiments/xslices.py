"""Prototype: long rows over few columns, x served from L1 one column slice at a time.

A block per row range (balanced by entries); every group of G lanes owns up to 8 rows; the
block walks the columns in slices that fit the L1, all warps on the same slice (a barrier per
slice), each row's part in the slice found in a split table. Lane partial sums stay in
registers across slices; one reduction per row at the end. Deterministic.

Kernels: xl1 is the one quoted in gpu-notes.md; xl2 advances a group's rows in lock step;
xl3 keeps 8 entries per lane in flight instead of 4.
"""
import sys, time
import numpy as np

SRC = r'''
template<typename T, int G>
__device__ void xl1(int nrows, const unsigned* __restrict__ rowptr, const unsigned* __restrict__ blk_row,
    const unsigned* __restrict__ split, int S, const unsigned* __restrict__ col, const T* __restrict__ val,
    const T* __restrict__ x, T alpha, T* __restrict__ y)
{
  const int rb = blk_row[blockIdx.x], re = blk_row[blockIdx.x + 1];
  const int groups = blockDim.x / G, gid = threadIdx.x / G, g = threadIdx.x % G;
  T acc[8];
  unsigned cur[8];
  #pragma unroll
  for (int j = 0; j < 8; ++j) { acc[j] = T(0); int r = rb + gid + j * groups; cur[j] = r < re ? rowptr[r] : 0u; }
  for (int s = 0; s < S; ++s) {
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
      int r = rb + gid + j * groups;
      if (r < re) {
        unsigned e = (s == S - 1) ? rowptr[r + 1] : split[(size_t)s * nrows + r];
        unsigned k = cur[j] + g;
        for (; k + 3 * G < e; k += 4 * G) {
          unsigned c0 = __ldcs(col + k), c1 = __ldcs(col + k + G), c2 = __ldcs(col + k + 2 * G), c3 = __ldcs(col + k + 3 * G);
          T v0 = __ldcs(val + k), v1 = __ldcs(val + k + G), v2 = __ldcs(val + k + 2 * G), v3 = __ldcs(val + k + 3 * G);
          acc[j] += v0 * __ldg(x + c0); acc[j] += v1 * __ldg(x + c1); acc[j] += v2 * __ldg(x + c2); acc[j] += v3 * __ldg(x + c3);
        }
        for (; k < e; k += G) acc[j] += __ldcs(val + k) * __ldg(x + __ldcs(col + k));
        cur[j] = e;
      }
    }
    __syncthreads();
  }
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    T a = acc[j];
    for (int d = G / 2; d > 0; d >>= 1) a += __shfl_down_sync(0xffffffffu, a, d, G);
    int r = rb + gid + j * groups;
    if (g == 0 && r < re) y[r] = alpha * a;
  }
}

template<typename T, int G, int R>
__device__ void xl2(int nrows, const unsigned* __restrict__ rowptr, const unsigned* __restrict__ blk_row,
    const unsigned* __restrict__ split, int S, const unsigned* __restrict__ col, const T* __restrict__ val,
    const T* __restrict__ x, T alpha, T* __restrict__ y)
{
  const int rb = blk_row[blockIdx.x], re = blk_row[blockIdx.x + 1];
  const int groups = blockDim.x / G, gid = threadIdx.x / G, g = threadIdx.x % G;
  T acc[R];
  unsigned cur[R];
  #pragma unroll
  for (int j = 0; j < R; ++j) { acc[j] = T(0); int r = rb + gid + j * groups; cur[j] = r < re ? rowptr[r] + g : 0u; }
  for (int s = 0; s < S; ++s) {
    unsigned e[R];
    #pragma unroll
    for (int j = 0; j < R; ++j) {
      int r = rb + gid + j * groups;
      e[j] = r < re ? ((s == S - 1) ? rowptr[r + 1] : split[(size_t)s * nrows + r]) : 0u;
    }
    bool more = true;
    while (more) {
      more = false;
      unsigned c[R]; T v[R];
      #pragma unroll
      for (int j = 0; j < R; ++j) if (cur[j] < e[j]) { c[j] = __ldcs(col + cur[j]); v[j] = __ldcs(val + cur[j]); }
      #pragma unroll
      for (int j = 0; j < R; ++j) if (cur[j] < e[j]) { acc[j] += v[j] * __ldg(x + c[j]); cur[j] += G; more |= cur[j] < e[j]; }
    }
    // lanes keep their residue class mod G: the cursors past e cover e .. e + G - 1
    __syncthreads();
  }
  #pragma unroll
  for (int j = 0; j < R; ++j) {
    T a = acc[j];
    for (int d = G / 2; d > 0; d >>= 1) a += __shfl_down_sync(0xffffffffu, a, d, G);
    int r = rb + gid + j * groups;
    if (g == 0 && r < re) y[r] = alpha * a;
  }
}

template<typename T, int G, int U>
__device__ void xl3(int nrows, const unsigned* __restrict__ rowptr, const unsigned* __restrict__ blk_row,
    const unsigned* __restrict__ split, int S, const unsigned* __restrict__ col, const T* __restrict__ val,
    const T* __restrict__ x, T alpha, T* __restrict__ y)
{
  const int rb = blk_row[blockIdx.x], re = blk_row[blockIdx.x + 1];
  const int groups = blockDim.x / G, gid = threadIdx.x / G, g = threadIdx.x % G;
  T acc[8];
  unsigned cur[8];
  #pragma unroll
  for (int j = 0; j < 8; ++j) { acc[j] = T(0); int r = rb + gid + j * groups; cur[j] = r < re ? rowptr[r] : 0u; }
  for (int s = 0; s < S; ++s) {
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
      int r = rb + gid + j * groups;
      if (r < re) {
        unsigned e = (s == S - 1) ? rowptr[r + 1] : split[(size_t)s * nrows + r];
        for (unsigned k = cur[j] + g; k < e; k += U * G) {
          unsigned c[U]; T v[U];
          #pragma unroll
          for (int u = 0; u < U; ++u) if (k + u * G < e) { c[u] = __ldcs(col + k + u * G); v[u] = __ldcs(val + k + u * G); }
          #pragma unroll
          for (int u = 0; u < U; ++u) if (k + u * G < e) acc[j] += v[u] * __ldg(x + c[u]);
        }
        cur[j] = e;
      }
    }
    __syncthreads();
  }
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    T a = acc[j];
    for (int d = G / 2; d > 0; d >>= 1) a += __shfl_down_sync(0xffffffffu, a, d, G);
    int r = rb + gid + j * groups;
    if (g == 0 && r < re) y[r] = alpha * a;
  }
}
extern "C" {
__global__ void __launch_bounds__(1024) xl1_f32_8(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl1<float, 8>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl1_f32_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl1<float, 16>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl1_f32_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl1<float, 32>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl1_f64_8(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl1<double, 8>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl1_f64_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl1<double, 16>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl1_f64_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl1<double, 32>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl2_f32_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl2<float, 32, 4>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl2_f32_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl2<float, 16, 4>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl2_f64_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl2<double, 32, 4>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl2_f64_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl2<double, 16, 4>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl3_f32_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl3<float, 32, 8>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl3_f32_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const float* e, const float* f, float al, float* y) { xl3<float, 16, 8>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl3_f64_32(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl3<double, 32, 8>(n,a,b,c,S,d,e,f,al,y); }
__global__ void __launch_bounds__(1024) xl3_f64_16(int n, const unsigned* a, const unsigned* b, const unsigned* c, int S, const unsigned* d, const double* e, const double* f, double al, double* y) { xl3<double, 16, 8>(n,a,b,c,S,d,e,f,al,y); }
}
'''


def gen_longrows(nrows, seed, per=1000):
    rng = np.random.default_rng(seed)
    m = 10 * nrows
    rows = np.repeat(np.arange(nrows, dtype=np.int64), per)
    cols = rng.integers(0, m, nrows * per, dtype=np.int64)
    import scipy.sparse as sps
    A = sps.csr_matrix((rng.uniform(-1, 1, len(rows)), (rows, cols)), shape=(nrows, m))
    A.sum_duplicates(); A.sort_indices()
    return A


def layout(A, SW, nb):
    n, m = A.shape
    S = (m + SW - 1) // SW
    rowptr = A.indptr.astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(rowptr))
    sid = A.indices.astype(np.int64) // SW
    cnt = np.bincount(rows * S + sid, minlength=n * S).reshape(n, S)
    ends = rowptr[:-1, None] + np.cumsum(cnt, axis=1)  # end of slice s in row r
    split = np.ascontiguousarray(ends[:, :S - 1].T).astype(np.uint32)  # (S-1) x n
    targets = np.linspace(0, rowptr[-1], nb + 1)
    blk = np.searchsorted(rowptr, targets, side='left').astype(np.int64)
    blk[0] = 0; blk[-1] = n
    blk = np.maximum.accumulate(blk)
    return S, split.ravel(), blk.astype(np.uint32)


def run(name, A):
    import cupy as cp
    mod = cp.RawModule(code=SRC, options=('-std=c++14',))
    n, m = A.shape
    nnz = A.nnz
    for dt, sfx in [(np.float64, 'f64'), (np.float32, 'f32')]:
        ts = np.dtype(dt).itemsize
        x = cp.asarray(np.random.default_rng(7).uniform(-1, 1, m).astype(dt))
        Ah = A.astype(dt)
        ref = cp.asarray(A @ np.asarray(x.get(), dtype=np.float64))
        col = cp.asarray(A.indices.astype(np.uint32)); val = cp.asarray(Ah.data); rp = cp.asarray(A.indptr.astype(np.uint32))
        minimal = nnz * (ts + 4) + (n + 1) * 4 + m * ts + n * ts
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        for kind, G in (('xl1', 32), ('xl1', 16), ('xl2', 16), ('xl3', 32)):
            f = mod.get_function(f'{kind}_{sfx}_{G}')
            try:
                f.preferred_shared_memory_carveout = 0
            except Exception as e:
                print('carveout', e)
            for SWb in (160, 224):
                SW = SWb * 1024 // ts
                groups = 1024 // G
                RR = 4 if kind == 'xl2' else 8
                nb = max(132, -(-n // (groups * RR)))
                S, split, blk = layout(A, SW, nb)
                if np.max(np.diff(blk.astype(np.int64))) > groups * RR:
                    nb2 = nb
                    while True:
                        nb2 += 1
                        S, split, blk = layout(A, SW, nb2)
                        if np.max(np.diff(blk.astype(np.int64))) <= groups * RR: break
                    nb = nb2
                sp = cp.asarray(split if len(split) else np.zeros(1, np.uint32)); bk = cp.asarray(blk)
                y = cp.full(n, cp.nan, dtype=dt)
                args = (np.int32(n), rp, bk, sp, np.int32(S), col, val, x, dt(1), y)
                f((nb,), (1024,), args); cp.cuda.runtime.deviceSynchronize()
                err = float(cp.abs(y - ref).max() / cp.abs(ref).max())
                y1 = y.copy(); f((nb,), (1024,), args); same = bool((y1 == y).all())
                ts_ = []
                for _ in range(20):
                    ev0.record()
                    for _ in range(10): f((nb,), (1024,), args)
                    ev1.record(); ev1.synchronize(); ts_.append(cp.cuda.get_elapsed_time(ev0, ev1) * 100)
                t = float(np.median(ts_[2:]))
                print(f'{name} {sfx} {kind} G={G} slice={SWb}KiB ({S} slices) blocks={nb} err={err:.1e} same={same} {t:.1f} us {minimal / t / 1e3:.0f} GB/s', flush=True)


if __name__ == '__main__':
    for w in sys.argv[1:]:
        nr, seed = {'lr20': (20000, 1), 'lr60': (60000, 5), 'lr10': (10000, 3), 'lr50': (50000, 7), 'lr30': (30000, 11)}[w]
        A = gen_longrows(nr, seed)
        run(f'longrows:{nr}', A)
