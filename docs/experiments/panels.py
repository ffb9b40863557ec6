"""Prototype: SpMV by row panels and column slices, x staged in shared memory.

The entries are stored panel by panel (a panel: consecutive rows, about nnz / P entries),
within a panel slice by slice (a slice: SW consecutive columns), within a slice row by row;
columns as 16-bit offsets in their slice. A block per panel walks its slices: it loads the
slice of x into shared memory, streams the slice's entries into products in shared memory,
then sums each row's part into the row's accumulator (a fixed group of lanes per row, slices
in order: deterministic). Meant for matrices whose columns are each read by many entries
(x is loaded once per panel).
"""
import sys
import numpy as np

SRC = r'''
template<typename T>
__device__ void panels(const unsigned* __restrict__ panel_row, const unsigned* __restrict__ tab_off,
    const unsigned* __restrict__ tab, int S, int SW, int m, int cap, int G,
    const unsigned short* __restrict__ lcol, const T* __restrict__ val, const T* __restrict__ x,
    T alpha, T* __restrict__ y)
{
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  T* ps = xs + SW;
  T* acc = ps + cap;
  const int p = blockIdx.x, t = threadIdx.x, nt = blockDim.x;
  const int r0 = panel_row[p], nr = panel_row[p + 1] - r0;
  const unsigned* tb = tab + tab_off[p];
  const int groups = nt / G, gid = t / G, g = t % G;
  for (int j = t; j < nr; j += nt) acc[j] = T(0);
  for (int s = 0; s < S; ++s) {
    const int c0 = s * SW, w = min(SW, m - c0);
    const unsigned* ts = tb + (size_t)s * (nr + 1);
    #pragma unroll 4
    for (int i = t; i < w; i += nt) xs[i] = __ldg(x + c0 + i);
    const unsigned q0 = ts[0], q1 = ts[nr];
    __syncthreads();
    unsigned q = q0 + t;
    for (; q + 3 * nt < q1; q += 4 * nt) {
      unsigned short l0 = __ldcs(lcol + q), l1 = __ldcs(lcol + q + nt), l2 = __ldcs(lcol + q + 2 * nt), l3 = __ldcs(lcol + q + 3 * nt);
      T v0 = __ldcs(val + q), v1 = __ldcs(val + q + nt), v2 = __ldcs(val + q + 2 * nt), v3 = __ldcs(val + q + 3 * nt);
      ps[q - q0] = v0 * xs[l0]; ps[q + nt - q0] = v1 * xs[l1]; ps[q + 2 * nt - q0] = v2 * xs[l2]; ps[q + 3 * nt - q0] = v3 * xs[l3];
    }
    for (; q < q1; q += nt) ps[q - q0] = __ldcs(val + q) * xs[__ldcs(lcol + q)];
    __syncthreads();
    for (int jb = 0; jb < nr; jb += groups) {
      const int j = jb + gid;
      T sum = T(0);
      if (j < nr) { const unsigned a = ts[j] - q0, e = ts[j + 1] - q0; for (unsigned k = a + g; k < e; k += G) sum += ps[k]; }
      for (int d = G >> 1; d > 0; d >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, d, G);
      if (j < nr && g == 0) acc[j] += sum;
    }
  }
  __syncthreads();
  for (int j = t; j < nr; j += nt) y[r0 + j] = alpha * acc[j];
}
extern "C" {
__global__ void pn_f32(const unsigned* a, const unsigned* b, const unsigned* c, int S, int SW, int m, int cap, int G, const unsigned short* l, const float* v, const float* x, float al, float* y) { panels<float>(a,b,c,S,SW,m,cap,G,l,v,x,al,y); }
__global__ void pn_f64(const unsigned* a, const unsigned* b, const unsigned* c, int S, int SW, int m, int cap, int G, const unsigned short* l, const double* v, const double* x, double al, double* y) { panels<double>(a,b,c,S,SW,m,cap,G,l,v,x,al,y); }
}
'''


def layout(A, P, SW):
    n, m = A.shape
    S = (m + SW - 1) // SW
    rowptr = A.indptr.astype(np.int64)
    nnz = int(rowptr[-1])
    targets = np.linspace(0, nnz, P + 1)
    prow = np.searchsorted(rowptr, targets, side='left').astype(np.int64)
    prow[0] = 0; prow[-1] = n
    prow = np.unique(prow)
    P = len(prow) - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(rowptr))
    cols = A.indices.astype(np.int64)
    sid = cols // SW
    pid = np.searchsorted(prow, rows, side='right') - 1
    order = np.argsort(pid * S + sid, kind='stable')
    cnt = np.bincount(rows * S + sid, minlength=n * S).reshape(n, S)
    tabs, offs, base, cap = [], [], 0, 0
    pos = 0
    for p in range(P):
        r0, r1 = prow[p], prow[p + 1]
        blk = cnt[r0:r1, :].T  # S x nr
        cap = max(cap, int(blk.sum(axis=1).max()))
        flat = np.concatenate([blk, np.zeros((S, 1), dtype=blk.dtype)], axis=1).ravel()
        st = pos + np.concatenate([[0], np.cumsum(flat)[:-1]])
        tabs.append(st); offs.append(base); base += len(st)
        pos += int(blk.sum())
    tab = np.concatenate(tabs).astype(np.uint32)
    lcol = (cols[order] % SW).astype(np.uint16)
    return dict(S=S, P=P, prow=prow.astype(np.uint32), tab_off=np.array(offs, dtype=np.uint32), tab=tab,
                order=order, lcol=lcol, cap=cap, maxrows=int(np.diff(prow).max()))


def emulate(A, L, x, SW):
    vals = A.data[L['order']]
    y = np.zeros(A.shape[0])
    for p in range(L['P']):
        r0, r1 = int(L['prow'][p]), int(L['prow'][p + 1]); nr = r1 - r0
        tb = L['tab'][L['tab_off'][p]:]
        for s in range(L['S']):
            ts = tb[s * (nr + 1): (s + 1) * (nr + 1)].astype(np.int64)
            for j in range(nr):
                a, e = ts[j], ts[j + 1]
                y[r0 + j] += vals[a:e] @ x[s * SW + L['lcol'][a:e].astype(np.int64)]
    return y


def gen_longrows(nrows, seed, per=1000):
    import scipy.sparse as sps
    rng = np.random.default_rng(seed)
    m = 10 * nrows
    rows = np.repeat(np.arange(nrows, dtype=np.int64), per)
    cols = rng.integers(0, m, nrows * per, dtype=np.int64)
    A = sps.csr_matrix((rng.uniform(-1, 1, len(rows)), (rows, cols)), shape=(nrows, m))
    A.sum_duplicates(); A.sort_indices()
    return A


def run(name, A, configs):
    import cupy as cp
    mod = cp.RawModule(code=SRC, options=('-std=c++14',))
    n, m = A.shape
    nnz = A.nnz
    for dt, sfx in [(np.float64, 'f64'), (np.float32, 'f32')]:
        ts = np.dtype(dt).itemsize
        xh = np.random.default_rng(7).uniform(-1, 1, m).astype(dt)
        x = cp.asarray(xh)
        ref = cp.asarray(A @ xh.astype(np.float64))
        minimal = nnz * (ts + 4) + (n + 1) * 4 + m * ts + n * ts
        f = mod.get_function('pn_' + sfx)
        ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
        for (P, SWb, NT, G) in configs:
            SW = SWb * 1024 // ts
            L = layout(A, P, SW)
            smem = (SW + L['cap'] + L['maxrows']) * ts
            if smem > 227 * 1024:
                print(f'{name} {sfx} P={P} SW={SW}: {smem} bytes of shared memory, skipped'); continue
            f.max_dynamic_shared_size_bytes = smem
            d = {k: cp.asarray(L[k]) for k in ('prow', 'tab_off', 'tab', 'lcol')}
            val = cp.asarray(A.data[L['order']].astype(dt))
            y = cp.full(n, cp.nan, dtype=dt)
            args = (d['prow'], d['tab_off'], d['tab'], np.int32(L['S']), np.int32(SW), np.int32(m), np.int32(L['cap']), np.int32(G),
                    d['lcol'], val, x, dt(1), y)
            f((L['P'],), (NT,), args, shared_mem=smem); cp.cuda.runtime.deviceSynchronize()
            err = float(cp.abs(y - ref).max() / cp.abs(ref).max())
            y1 = y.copy(); f((L['P'],), (NT,), args, shared_mem=smem); same = bool((y1 == y).all())
            tt = []
            for _ in range(20):
                ev0.record()
                for _ in range(10): f((L['P'],), (NT,), args, shared_mem=smem)
                ev1.record(); ev1.synchronize(); tt.append(cp.cuda.get_elapsed_time(ev0, ev1) * 100)
            t = float(np.median(tt[2:]))
            extra = (len(L['tab']) * 4 - nnz * 2) / (nnz * (ts + 4))
            print(f'{name} {sfx} panels={L["P"]} slice={SWb}KiB ({L["S"]}) threads={NT} G={G} smem={smem // 1024}KiB '
                  f'err={err:.1e} same={same} {t:.1f} us {minimal / t / 1e3:.0f} GB/s (table - narrow columns: {100 * extra:+.1f}% of CSR)', flush=True)
            del d, val, y


if __name__ == '__main__':
    if sys.argv[1:] == ['self']:
        A = gen_longrows(300, 1, per=50)
        for (P, SW) in [(7, 500), (3, 4096), (40, 97)]:
            L = layout(A, P, SW)
            x = np.random.default_rng(2).uniform(-1, 1, A.shape[1])
            print('self', P, SW, L['P'], L['S'], L['cap'], np.abs(emulate(A, L, x, SW) - A @ x).max())
        sys.exit(0)
    cfgs = [(132, 32, 1024, 32), (264, 32, 512, 32), (132, 64, 1024, 32), (264, 64, 512, 16), (132, 96, 1024, 32)]
    for w in sys.argv[1:]:
        nr, seed = {'lr20': (20000, 1), 'lr60': (60000, 5), 'lr10': (10000, 3), 'lr30': (30000, 11), 'lr50': (50000, 7)}[w]
        run(f'longrows:{nr}', gen_longrows(nr, seed), cfgs)
