// Device kernels of the algebraic multigrid preconditioner (src/solver/amg, launched from
// src/gpu/kernels/amg.rs): the V-cycle's vector updates.
//
// Every kernel walks its length with a 64-bit grid-stride index (GRID_STRIDE below), so an
// `unsigned` length up to UINT_MAX never wraps the loop, and each output element is written
// by exactly one thread: no atomics, no races, results repeat bit for bit. Scalars come as
// double for both element types; products are formed in double and rounded once to T.
#include "common.cuh"

typedef unsigned long long idx_t;

// A grid-stride loop over [0, n) with a 64-bit index.
#define GRID_STRIDE(i, n)                                                                        \
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x, i##_end = (idx_t)(n); i < i##_end; \
         i += (idx_t)gridDim.x * blockDim.x)

// ---------------------------------------------------------------------------------------
// The V-cycle's vector kernels.

// y = a*x + b*y; b == 0 never reads y (NaN in y does not spread).
template <typename T>
__device__ void amg_axpby(unsigned n, double a, const T* __restrict__ x, double b, T* __restrict__ y) {
    if (b == 0.0) {
        GRID_STRIDE(i, n) { y[i] = T(a * double(ldg(x + i))); }
    } else {
        GRID_STRIDE(i, n) { y[i] = T(a * double(ldg(x + i)) + b * double(y[i])); }
    }
}

// One step of the Chebyshev smoother: d = c1 * dinv .* r + c2 * d (c2 == 0 never reads d);
// x += d.
template <typename T>
__device__ void amg_cheb(unsigned n, double c1, double c2, const T* __restrict__ dinv, const T* __restrict__ r,
                         T* __restrict__ d, T* __restrict__ x) {
    GRID_STRIDE(i, n) {
        const double z = c1 * double(ldg(dinv + i)) * double(ldg(r + i));
        const T di = T(c2 == 0.0 ? z : z + c2 * double(d[i]));
        d[i] = di;
        x[i] = T(double(x[i]) + double(di));
    }
}

// One step of the (l1-)Jacobi smoother: x += w * dinv .* r.
template <typename T>
__device__ void amg_jacobi(unsigned n, double w, const T* __restrict__ dinv, const T* __restrict__ r,
                           T* __restrict__ x) {
    GRID_STRIDE(i, n) { x[i] = T(double(x[i]) + w * double(ldg(dinv + i)) * double(ldg(r + i))); }
}

#define AMG_VECTOR_KERNELS(T)                                                                                  \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                                  \
        amg_axpby_##T(unsigned n, double a, const T* x, double b, T* y) {                                      \
        amg_axpby<T>(n, a, x, b, y);                                                                           \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                                  \
        amg_cheb_##T(unsigned n, double c1, double c2, const T* dinv, const T* r, T* d, T* x) {                \
        amg_cheb<T>(n, c1, c2, dinv, r, d, x);                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                                  \
        amg_jacobi_##T(unsigned n, double w, const T* dinv, const T* r, T* x) {                                \
        amg_jacobi<T>(n, w, dinv, r, x);                                                                       \
    }

AMG_VECTOR_KERNELS(f32)
AMG_VECTOR_KERNELS(f64)

// ---------------------------------------------------------------------------------------
// The setup steps (src/solver/amg/device_setup.rs), in f64, mirroring host_setup.rs so that
// every integer result (strength pattern, aggregates, the patterns of P, R and A_c) equals
// the host's, and every value is computed by the same operations in the same order: the
// products and sums below use __dmul_rn / __dadd_rn / __dsub_rn, which nvcc never contracts
// into a fused multiply-add (the host's Rust does not either), so the values equal the
// host's bit for bit. No floating-point atomics; the integer atomics (counts, cursors of a
// transpose) only decide positions that are then re-sorted by a unique key, so no result
// depends on their order.
//
// Every kernel is one thread per row (or node, or element) over a grid-stride loop, and
// every output element is written by the one thread that owns its row.

#define AMG_NONE 0xffffffffu
#define AMG_OUT 0u
#define AMG_UNDECIDED 1u
#define AMG_ROOT 2u

// Elements per thread of the scan kernels, and per block (AMG_SCAN_TILE on the Rust side).
#define AMG_SCAN_ITEMS 8
#define AMG_SCAN_TILE (SPGPU_BLOCK * AMG_SCAN_ITEMS)

// The priority of node i: splitmix32(i ^ 0x9E3779B9) (host_setup.rs, node_hash).
__device__ __forceinline__ unsigned node_hash(unsigned i) {
    unsigned x = i ^ 0x9E3779B9u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Whether node a's key (h(a), a) is above node b's.
__device__ __forceinline__ bool key_above(unsigned a, unsigned b) {
    const unsigned ha = node_hash(a), hb = node_hash(b);
    return ha > hb || (ha == hb && a > b);
}

// ---- exclusive scan of unsigned counts (three kernels; the total in 64 bits) ----

// The exclusive scan of the block's per-thread values v (thread order); returns the
// thread's prefix, and the block's total in `total`. Every thread of the block must call it.
__device__ __forceinline__ unsigned long long block_exclusive_scan(unsigned long long v,
                                                                   unsigned long long& total) {
    __shared__ unsigned long long warp_sums[SPGPU_BLOCK / 32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    unsigned long long incl = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned long long u = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (unsigned)o) incl += u;
    }
    __syncthreads();  // an earlier call may still be reading warp_sums
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    unsigned long long before = 0;
    total = 0;
    for (unsigned w = 0; w < SPGPU_BLOCK / 32; ++w) {
        const unsigned long long s = warp_sums[w];
        if (w < warp) before += s;
        total += s;
    }
    return before + incl - v;
}

// partials[b] = the sum of tile b of `in` (n elements).
__device__ void amg_scan_tiles(unsigned n, const unsigned* in, unsigned long long* partials) {
    const idx_t base = (idx_t)blockIdx.x * AMG_SCAN_TILE + (idx_t)threadIdx.x * AMG_SCAN_ITEMS;
    unsigned long long s = 0;
#pragma unroll
    for (unsigned k = 0; k < AMG_SCAN_ITEMS; ++k) {
        if (base + k < n) s += in[base + k];
    }
    unsigned long long total;
    block_exclusive_scan(s, total);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: partials[0..tiles) scanned in place (exclusive), the grand total in *total.
__device__ void amg_scan_partials(unsigned tiles, unsigned long long* partials, unsigned long long* total) {
    unsigned long long carry = 0;
    for (unsigned start = 0; start < tiles; start += SPGPU_BLOCK) {
        const unsigned i = start + threadIdx.x;
        const unsigned long long v = i < tiles ? partials[i] : 0;
        unsigned long long chunk;
        const unsigned long long ex = block_exclusive_scan(v, chunk);
        if (i < tiles) partials[i] = carry + ex;
        carry += chunk;
    }
    if (threadIdx.x == 0) *total = carry;
}

// out[i] = sum of in[0..i) for i < n, out[n] = the total (low 32 bits; the host reads the
// 64-bit total and refuses one past the index limit). `out` may be `in` (each tile is read
// into registers before any of it is written, and blocks touch their own tiles only).
__device__ void amg_scan_apply(unsigned n, const unsigned* in, const unsigned long long* partials,
                               const unsigned long long* total, unsigned* out) {
    const idx_t base = (idx_t)blockIdx.x * AMG_SCAN_TILE + (idx_t)threadIdx.x * AMG_SCAN_ITEMS;
    unsigned v[AMG_SCAN_ITEMS];
    unsigned long long s = 0;
#pragma unroll
    for (unsigned k = 0; k < AMG_SCAN_ITEMS; ++k) {
        v[k] = base + k < n ? in[base + k] : 0u;
        s += v[k];
    }
    unsigned long long block_total;
    unsigned long long run = partials[blockIdx.x] + block_exclusive_scan(s, block_total);
    // every thread of the block has read its inputs (block_exclusive_scan synchronizes)
#pragma unroll
    for (unsigned k = 0; k < AMG_SCAN_ITEMS; ++k) {
        if (base + k < n) out[base + k] = (unsigned)run;
        run += v[k];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) out[n] = (unsigned)*total;
}

// ---- sorting a short array of unique keys (with values) in one thread ----

// Sorts keys[0..m) ascending, moving vals (when not null) with them. The keys are unique,
// so the result does not depend on the order they came in. Insertion sort for short runs,
// heapsort (O(m log m), no extra memory) for long ones.
template <typename V>
__device__ void sort_unique(unsigned* keys, V* vals, unsigned m) {
    if (m <= 32) {
        for (unsigned i = 1; i < m; ++i) {
            const unsigned k = keys[i];
            V v = vals ? vals[i] : V(0);
            unsigned j = i;
            for (; j > 0 && keys[j - 1] > k; --j) {
                keys[j] = keys[j - 1];
                if (vals) vals[j] = vals[j - 1];
            }
            keys[j] = k;
            if (vals) vals[j] = v;
        }
        return;
    }
    // heapsort: build a max-heap, then move the top to the end
    auto sift = [&](unsigned root, unsigned end) {
        while (true) {
            unsigned child = 2 * root + 1;
            if (child >= end) return;
            if (child + 1 < end && keys[child + 1] > keys[child]) ++child;
            if (keys[root] >= keys[child]) return;
            const unsigned tk = keys[root];
            keys[root] = keys[child];
            keys[child] = tk;
            if (vals) {
                const V tv = vals[root];
                vals[root] = vals[child];
                vals[child] = tv;
            }
            root = child;
        }
    };
    for (unsigned start = m / 2; start-- > 0;) sift(start, m);
    for (unsigned end = m - 1; end > 0; --end) {
        const unsigned tk = keys[0];
        keys[0] = keys[end];
        keys[end] = tk;
        if (vals) {
            const V tv = vals[0];
            vals[0] = vals[end];
            vals[end] = tv;
        }
        sift(0, end);
    }
}

// ---- small helpers ----

// out[i] = i for i <= n (the offsets of a matrix with one entry per row).
__device__ void amg_iota(unsigned n, unsigned* out) {
    GRID_STRIDE(i, (idx_t)n + 1) { out[i] = (unsigned)i; }
}

// diag[i] = a_ii (0 when not stored); dinv[i] = 1 / a_ii (0 when a_ii == 0).
__device__ void amg_diagonal(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                             const double* __restrict__ vals, double* __restrict__ diag, double* __restrict__ dinv) {
    GRID_STRIDE(i, n) {
        double d = 0.0;
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            if (cols[k] == i) {
                d = vals[k];
                break;
            }
        }
        diag[i] = d;
        dinv[i] = d != 0.0 ? 1.0 / d : 0.0;
    }
}

// ---- step 1: strength of connection (block size 1) ----

// Whether entry (i, j, v) is a strong connection (host_setup.rs, strength).
__device__ __forceinline__ bool strong(unsigned i, unsigned j, double v, double theta,
                                       const double* __restrict__ diag) {
    return j != i && v != 0.0 && fabs(v) >= __dmul_rn(theta, sqrt(fabs(__dmul_rn(diag[i], diag[j]))));
}

// FILL false: counts[i] = the strong neighbours of row i; FILL true: their columns at
// s_cols[s_off[i]..], in the row's (sorted) order.
template <bool FILL>
__device__ void amg_strength(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                             const double* __restrict__ vals, const double* __restrict__ diag, double theta,
                             unsigned* __restrict__ counts, const unsigned* __restrict__ s_off,
                             unsigned* __restrict__ s_cols) {
    GRID_STRIDE(i, n) {
        unsigned c = 0, out = FILL ? s_off[i] : 0;
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            const unsigned j = cols[k];
            if (strong((unsigned)i, j, vals[k], theta, diag)) {
                if (FILL) s_cols[out + c] = j;
                ++c;
            }
        }
        if (!FILL) counts[i] = c;
    }
}

// ---- step 1 for block size bs > 1: the node graph ----

// Most DOFs per node the device strength step takes (AMG_MAX_BLOCK on the Rust side).
#define AMG_MAX_BLOCK 8

// Walks the blocks of node row I in increasing node column J; for each, calls
// f(J, ||block(I, J)||_F). The squared entries of a block are added row by row, each row's in
// column order (the host's stable sort by J, then the sum in that order).
template <typename F>
__device__ __forceinline__ void node_blocks(unsigned I, unsigned bs, const unsigned* __restrict__ off,
                                            const unsigned* __restrict__ cols, const double* __restrict__ vals,
                                            F f) {
    unsigned pos[AMG_MAX_BLOCK], end[AMG_MAX_BLOCK];
    for (unsigned r = 0; r < bs; ++r) {
        pos[r] = off[I * bs + r];
        end[r] = off[I * bs + r + 1];
    }
    while (true) {
        unsigned J = AMG_NONE;
        for (unsigned r = 0; r < bs; ++r) {
            if (pos[r] < end[r]) J = min(J, cols[pos[r]] / bs);
        }
        if (J == AMG_NONE) return;
        double s = 0.0;
        for (unsigned r = 0; r < bs; ++r) {
            while (pos[r] < end[r] && cols[pos[r]] / bs == J) {
                const double v = vals[pos[r]];
                s = __dadd_rn(s, __dmul_rn(v, v));
                ++pos[r];
            }
        }
        f(J, sqrt(s));
    }
}

// diag[I] = ||block(I, I)||_F (0 when not stored).
__device__ void amg_node_diagonal(unsigned nodes, unsigned bs, const unsigned* __restrict__ off,
                                  const unsigned* __restrict__ cols, const double* __restrict__ vals,
                                  double* __restrict__ diag) {
    GRID_STRIDE(I, nodes) {
        double d = 0.0;
        node_blocks((unsigned)I, bs, off, cols, vals, [&](unsigned J, double norm) {
            if (J == I) d = norm;
        });
        diag[I] = d;
    }
}

// As amg_strength, on the node graph.
template <bool FILL>
__device__ void amg_node_strength(unsigned nodes, unsigned bs, const unsigned* __restrict__ off,
                                  const unsigned* __restrict__ cols, const double* __restrict__ vals,
                                  const double* __restrict__ diag, double theta, unsigned* __restrict__ counts,
                                  const unsigned* __restrict__ s_off, unsigned* __restrict__ s_cols) {
    GRID_STRIDE(I, nodes) {
        unsigned c = 0;
        const unsigned out = FILL ? s_off[I] : 0;
        node_blocks((unsigned)I, bs, off, cols, vals, [&](unsigned J, double norm) {
            if (J != I && norm != 0.0 && norm >= __dmul_rn(theta, sqrt(__dmul_rn(diag[I], diag[J])))) {
                if (FILL) s_cols[out + c] = J;
                ++c;
            }
        });
        if (!FILL) counts[I] = c;
    }
}

// ---- step 2: MIS-2 aggregation ----

// A node's tuple for the MIS-2 maxima: (state << 32) | node. Two tuples compare by state,
// then (OUT tuples are all equal and lowest) by the key (h(node), node).
typedef unsigned long long tuple_t;
__device__ __forceinline__ tuple_t make_tuple(unsigned state, unsigned node) {
    return ((tuple_t)state << 32) | node;
}
__device__ __forceinline__ bool tuple_above(tuple_t a, tuple_t b) {
    const unsigned sa = (unsigned)(a >> 32), sb = (unsigned)(b >> 32);
    if (sa != sb) return sa > sb;
    return sa != AMG_OUT && key_above((unsigned)a, (unsigned)b);
}

// state[i] = UNDECIDED.
__device__ void amg_mis2_init(unsigned n, unsigned* state) {
    GRID_STRIDE(i, n) { state[i] = AMG_UNDECIDED; }
}

// m1[i] = the largest tuple over {i} and S(i), from the states.
__device__ void amg_mis2_max1(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                              const unsigned* __restrict__ state, tuple_t* __restrict__ m1) {
    GRID_STRIDE(i, n) {
        tuple_t m = make_tuple(state[i], (unsigned)i);
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            const unsigned j = cols[k];
            const tuple_t t = make_tuple(state[j], j);
            if (tuple_above(t, m)) m = t;
        }
        m1[i] = m;
    }
}

// m2[i] = the largest of m1 over {i} and S(i).
__device__ void amg_mis2_max2(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                              const tuple_t* __restrict__ m1, tuple_t* __restrict__ m2) {
    GRID_STRIDE(i, n) {
        tuple_t m = m1[i];
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            const tuple_t t = m1[cols[k]];
            if (tuple_above(t, m)) m = t;
        }
        m2[i] = m;
    }
}

// For each UNDECIDED i: ROOT when m2[i] is its own tuple, OUT when m2[i] is a ROOT's. Sets
// *undecided to 1 when a node stays UNDECIDED (every writer writes the same 1).
__device__ void amg_mis2_update(unsigned n, const tuple_t* __restrict__ m2, unsigned* __restrict__ state,
                                unsigned* __restrict__ undecided, unsigned* __restrict__ roots) {
    GRID_STRIDE(i, n) {
        unsigned s = state[i];
        if (s == AMG_UNDECIDED) {
            const tuple_t m = m2[i];
            if (m == make_tuple(AMG_UNDECIDED, (unsigned)i)) {
                s = AMG_ROOT;
            } else if ((unsigned)(m >> 32) == AMG_ROOT) {
                s = AMG_OUT;
            } else {
                atomicExch(undecided, 1u);
            }
            state[i] = s;
        }
        roots[i] = s == AMG_ROOT ? 1u : 0u;
    }
}

// Pass 1: agg[i] = root_id[i] for a root, else root_id of the adjacent root of largest key,
// else NONE (root_id: the exclusive scan of the root flags).
__device__ void amg_agg_pass1(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                              const unsigned* __restrict__ state, const unsigned* __restrict__ root_id,
                              unsigned* __restrict__ agg) {
    GRID_STRIDE(i, n) {
        unsigned a = AMG_NONE;
        if (state[i] == AMG_ROOT) {
            a = root_id[i];
        } else {
            unsigned best = AMG_NONE;
            for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
                const unsigned j = cols[k];
                if (state[j] == AMG_ROOT && (best == AMG_NONE || key_above(j, best))) best = j;
            }
            if (best != AMG_NONE) a = root_id[best];
        }
        agg[i] = a;
    }
}

// Pass 2: agg2[i] = agg1[i] when assigned, else agg1 of the assigned neighbour of largest key,
// else NONE; left[i] = 1 when still NONE.
__device__ void amg_agg_pass2(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                              const unsigned* __restrict__ agg1, unsigned* __restrict__ agg2,
                              unsigned* __restrict__ left) {
    GRID_STRIDE(i, n) {
        unsigned a = agg1[i];
        if (a == AMG_NONE) {
            unsigned best = AMG_NONE;
            for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
                const unsigned j = cols[k];
                if (agg1[j] != AMG_NONE && (best == AMG_NONE || key_above(j, best))) best = j;
            }
            if (best != AMG_NONE) a = agg1[best];
        }
        agg2[i] = a;
        left[i] = a == AMG_NONE ? 1u : 0u;
    }
}

// A node still unassigned becomes an aggregate of its own: agg[i] = roots + left_id[i]
// (left_id: the exclusive scan of pass 2's flags).
__device__ void amg_agg_leftover(unsigned n, unsigned roots, const unsigned* __restrict__ left_id,
                                 unsigned* __restrict__ agg) {
    GRID_STRIDE(i, n) {
        if (agg[i] == AMG_NONE) agg[i] = roots + left_id[i];
    }
}

// ---- step 3: the tentative prolongator for one near-nullspace vector ----

// cols[d] = agg[d / bs], vals[d] = b[d]: the pattern of P_tent with b's entries as values.
__device__ void amg_tent_pattern(unsigned n, unsigned bs, const unsigned* __restrict__ agg,
                                 const double* __restrict__ b, unsigned* __restrict__ cols,
                                 double* __restrict__ vals) {
    GRID_STRIDE(d, n) {
        cols[d] = agg[d / bs];
        vals[d] = b[d];
    }
}

// norms[c] = ||b over aggregate c||, the squares added in increasing DOF order (the rows of
// the transpose of amg_tent_pattern's matrix, whose columns are sorted); 0 unless positive
// (a zero or NaN norm zeroes the aggregate's column).
__device__ void amg_tent_norms(unsigned count, const unsigned* __restrict__ t_off, const double* __restrict__ t_vals,
                               double* __restrict__ norms) {
    GRID_STRIDE(c, count) {
        double s = 0.0;
        for (unsigned k = t_off[c], end = t_off[c + 1]; k < end; ++k) {
            s = __dadd_rn(s, __dmul_rn(t_vals[k], t_vals[k]));
        }
        const double nrm = sqrt(s);
        norms[c] = nrm > 0.0 ? nrm : 0.0;  // host_setup.rs: R's diagonal is 0 for a zeroed column
    }
}

// vals[d] = b[d] / norms[agg(d)] (0 for an aggregate of norm 0: the column is zeroed).
__device__ void amg_tent_values(unsigned n, const unsigned* __restrict__ cols, const double* __restrict__ norms,
                                double* __restrict__ vals) {
    GRID_STRIDE(d, n) {
        const double nrm = norms[cols[d]];
        vals[d] = nrm > 0.0 ? vals[d] / nrm : 0.0;
    }
}

// ---- transpose with sorted columns ----

// counts[c] += 1 for every entry of column c (counts zeroed, ncols + 1 long).
__device__ void amg_count_columns(unsigned nnz, const unsigned* __restrict__ cols, unsigned* __restrict__ counts) {
    GRID_STRIDE(k, nnz) { atomicAdd(counts + cols[k], 1u); }
}

// Entry (i, c, v) of A goes to row c of A^T at t_off[c] + cursor (cursor[c] zeroed): its
// place within the row depends on the order of the atomics, so amg_sort_rows re-sorts each
// row by column afterwards (the columns of a row of A^T are unique rows of A).
__device__ void amg_transpose_fill(unsigned nrows, const unsigned* __restrict__ off,
                                   const unsigned* __restrict__ cols, const double* __restrict__ vals,
                                   const unsigned* __restrict__ t_off, unsigned* __restrict__ cursor,
                                   unsigned* __restrict__ t_cols, double* __restrict__ t_vals) {
    GRID_STRIDE(i, nrows) {
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            const unsigned c = cols[k];
            const unsigned p = t_off[c] + atomicAdd(cursor + c, 1u);
            t_cols[p] = (unsigned)i;
            t_vals[p] = vals[k];
        }
    }
}

// The rows of a transpose longer than 32 and at most AMG_SORT_BLOCK_MAX entries are sorted
// by a block each (amg_sort_long_rows); the others by a thread each (amg_sort_rows).
#define AMG_SORT_BLOCK_MAX 2048u

__device__ __forceinline__ bool sorted_by_a_block(unsigned len) { return len > 32 && len <= AMG_SORT_BLOCK_MAX; }

// Sorts each row's (unique) columns, with the values, a thread a row; skips the rows
// amg_sort_long_rows sorts.
__device__ void amg_sort_rows(unsigned nrows, const unsigned* __restrict__ off, unsigned* __restrict__ cols,
                              double* __restrict__ vals) {
    GRID_STRIDE(i, nrows) {
        const unsigned start = off[i], len = off[i + 1] - start;
        if (sorted_by_a_block(len)) continue;
        sort_unique(cols + start, vals ? vals + start : (double*)0, len);
    }
}

// Sorts the rows of 33 to AMG_SORT_BLOCK_MAX (unique) columns, with the values, a block a
// row: a bitonic sort in shared memory, the row padded to a power of two with AMG_NONE
// (above every column, so the padding ends last and is never written back). The columns
// are unique, so the result does not depend on the order of the compare-exchanges.
__device__ void amg_sort_long_rows(unsigned nrows, const unsigned* __restrict__ off, unsigned* __restrict__ cols,
                                   double* __restrict__ vals) {
    __shared__ unsigned keys[AMG_SORT_BLOCK_MAX];
    __shared__ double v[AMG_SORT_BLOCK_MAX];
    for (idx_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const unsigned start = off[r], len = off[r + 1] - start;
        if (!sorted_by_a_block(len)) continue;  // the same for the whole block
        unsigned n2 = 64;
        while (n2 < len) n2 <<= 1;
        for (unsigned t = threadIdx.x; t < n2; t += blockDim.x) {
            keys[t] = t < len ? cols[start + t] : AMG_NONE;
            v[t] = t < len && vals ? vals[start + t] : 0.0;
        }
        __syncthreads();
        for (unsigned k = 2; k <= n2; k <<= 1) {
            for (unsigned j = k >> 1; j > 0; j >>= 1) {
                for (unsigned t = threadIdx.x; t < n2; t += blockDim.x) {
                    const unsigned u = t ^ j;
                    if (u > t) {
                        const unsigned a = keys[t], b = keys[u];
                        if ((a > b) == ((t & k) == 0)) {
                            keys[t] = b;
                            keys[u] = a;
                            const double x = v[t];
                            v[t] = v[u];
                            v[u] = x;
                        }
                    }
                }
                __syncthreads();
            }
        }
        for (unsigned t = threadIdx.x; t < len; t += blockDim.x) {
            cols[start + t] = keys[t];
            if (vals) vals[start + t] = v[t];
        }
        __syncthreads();  // written back before the next row is loaded
    }
}

// ---- the power method for rho(D^-1 A) (host_setup.rs, spectral_radius) ----

// v[i] = 1 + h(i) / 2^32, the host's start vector.
__device__ void amg_power_init(unsigned n, double* __restrict__ v) {
    GRID_STRIDE(i, n) { v[i] = 1.0 + (double)node_hash((unsigned)i) / 4294967296.0; }
}

// The block's sums of the power step's three per-thread sums, in a fixed tree, into
// partials[3 blockIdx.x ..]; every thread of the block calls it.
__device__ void power_block_sums(double vw, double vdv, double nn, double* __restrict__ partials) {
    __shared__ double sums[3][SPGPU_BLOCK];
    sums[0][threadIdx.x] = vw;
    sums[1][threadIdx.x] = vdv;
    sums[2][threadIdx.x] = nn;
    __syncthreads();
    for (unsigned h = SPGPU_BLOCK / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) {
            for (int q = 0; q < 3; ++q) sums[q][threadIdx.x] += sums[q][threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x < 3) partials[3 * blockIdx.x + threadIdx.x] = sums[threadIdx.x][0];
}

// One step from v scaled by s: u = s v, w = A u (one thread per row), out = dinv .* w; and
// per block b, in a fixed order (so the sums repeat bit for bit): partials[3b] = sum u_i w_i,
// partials[3b + 1] = sum u_i^2 / dinv_i (over dinv_i != 0), partials[3b + 2] = sum out_i^2.
// The host adds the blocks' sums in block order.
__device__ void amg_power_step(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                               const double* __restrict__ vals, const double* __restrict__ dinv, double s,
                               const double* __restrict__ v, double* __restrict__ out,
                               double* __restrict__ partials) {
    double vw = 0.0, vdv = 0.0, nn = 0.0;
    GRID_STRIDE(i, n) {
        double w = 0.0;
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) w += vals[k] * (s * v[cols[k]]);
        const double u = s * v[i], d = dinv[i], o = d * w;
        vw += u * w;
        if (d != 0.0) vdv += u * u / d;
        nn += o * o;
        out[i] = o;
    }
    power_block_sums(vw, vdv, nn, partials);
}

// The power step with a group of g threads per row (g a power of two, 2 to 32, for long
// rows): the lanes sum the row's products in strides of g, the group adds them by shuffles
// in a fixed tree, and lane 0 goes on as amg_power_step's thread; the block sums as there.
__device__ void amg_power_step_group(unsigned n, unsigned g, const unsigned* __restrict__ off,
                                     const unsigned* __restrict__ cols, const double* __restrict__ vals,
                                     const double* __restrict__ dinv, double s, const double* __restrict__ v,
                                     double* __restrict__ out, double* __restrict__ partials) {
    const unsigned l = threadIdx.x & (g - 1u);
    const unsigned mask = g == 32u ? 0xffffffffu : (((1u << g) - 1u) << ((threadIdx.x & 31u) & ~(g - 1u)));
    double vw = 0.0, vdv = 0.0, nn = 0.0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x / g;
    for (unsigned long long r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / g; r < n; r += stride) {
        const unsigned i = (unsigned)r;
        double w = 0.0;
        for (unsigned k = off[i] + l, end = off[i + 1]; k < end; k += g) w += vals[k] * (s * v[cols[k]]);
        for (unsigned h = g / 2; h > 0; h >>= 1) w += __shfl_down_sync(mask, w, h, g);
        if (l == 0) {
            const double u = s * v[i], d = dinv[i], o = d * w;
            vw += u * w;
            if (d != 0.0) vdv += u * u / d;
            nn += o * o;
            out[i] = o;
        }
    }
    power_block_sums(vw, vdv, nn, partials);
}

// ---- SpGEMM C = A B (CSR, f64), deterministic ----

// The rows of C = A B are built in one of two places. A row whose columns fit in the
// group's share of the block's shared memory (AMG_SHARED_SLOTS / (blockDim.x / g) slots,
// at most half of them used) is counted and then summed there (amg_spgemm_count_shared,
// amg_spgemm_numeric_shared); a longer row gets a hash table in global memory of its own (a
// power of two at least twice the most distinct columns it can have: its products, at
// most B's columns), and the global passes (symbolic, columns, numeric) build it. The
// global tables are sized only for those rows, so a product with many entries per row does
// not need table space for every row.
#define AMG_SHARED_SLOTS 4096u

// The least power of two at least x (x <= 2^31).
__device__ __forceinline__ unsigned pow2_at_least(unsigned long long x) {
    unsigned s = 1;
    while (s < x) s <<= 1;
    return s;
}

// The slot of column c in a table of `size` (a power of two) slots: a multiplicative hash.
__device__ __forceinline__ unsigned table_start(unsigned c, unsigned size) {
    return (c * 0x9E3779B1u) & (size - 1);
}

// The lanes of the calling thread's group of g (a power of two at most 32) within its warp.
__device__ __forceinline__ unsigned group_mask(unsigned g) {
    const unsigned lane = threadIdx.x & 31u;
    return g == 32u ? 0xffffffffu : (((1u << g) - 1u) << (lane & ~(g - 1u)));
}

// Count pass in shared memory, g threads per row (g a power of two, 1 to 32): each group
// inserts its row's columns into its share of the block's table with integer
// compare-and-swap and counts the distinct ones into counts[i], with need[i] = 0. A row
// that does not fit (more distinct columns than half the group's share) gets counts[i] = 0
// and need[i] = the size of its global table, for the global symbolic pass; a row without
// products gets 0 and 0. A row of more than 2^30 products sets *too_many.
__device__ void amg_spgemm_count_shared(unsigned m, unsigned g, unsigned b_ncols, const unsigned* __restrict__ a_off,
                                        const unsigned* __restrict__ a_cols, const unsigned* __restrict__ b_off,
                                        const unsigned* __restrict__ b_cols, unsigned* __restrict__ counts,
                                        unsigned* __restrict__ need, unsigned* __restrict__ too_many) {
    __shared__ unsigned keys[AMG_SHARED_SLOTS];
    const unsigned mask = group_mask(g), l = threadIdx.x & (g - 1u);
    const unsigned cap = AMG_SHARED_SLOTS / (blockDim.x / g);
    unsigned* t = keys + (threadIdx.x / g) * cap;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x / g;
    for (unsigned long long r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / g; r < m; r += stride) {
        const unsigned i = (unsigned)r;
        unsigned long long products = 0;
        for (unsigned k = a_off[i] + l, end = a_off[i + 1]; k < end; k += g) {
            const unsigned j = a_cols[k];
            products += b_off[j + 1] - b_off[j];
        }
        for (unsigned h = g / 2; h > 0; h >>= 1) products += __shfl_down_sync(mask, products, h, g);
        products = __shfl_sync(mask, products, 0, g);
        if (products == 0 || products > (1ull << 30)) {
            if (products > 0) atomicExch(too_many, 1u);
            if (l == 0) {
                counts[i] = 0;
                need[i] = 0;
            }
            continue;
        }
        const unsigned long long bound = products < b_ncols ? products : b_ncols;
        const unsigned global_size = pow2_at_least(2 * bound);
        const unsigned size = global_size < cap ? global_size : cap;
        for (unsigned s = l; s < size; s += g) t[s] = AMG_NONE;
        __syncwarp(mask);
        unsigned distinct = 0, full = 0;
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end && !full; ++k) {
            const unsigned j = a_cols[k];
            for (unsigned q = b_off[j] + l, qend = b_off[j + 1]; q < qend && !full; q += g) {
                const unsigned c = b_cols[q];
                unsigned s = table_start(c, size), probes = 0;
                while (true) {
                    const unsigned old = atomicCAS(t + s, AMG_NONE, c);
                    if (old == AMG_NONE) {
                        ++distinct;
                        break;
                    }
                    if (old == c) break;
                    if (++probes == size) {
                        full = 1;
                        break;
                    }
                    s = (s + 1) & (size - 1);
                }
            }
        }
        for (unsigned h = g / 2; h > 0; h >>= 1) {
            distinct += __shfl_down_sync(mask, distinct, h, g);
            full |= __shfl_down_sync(mask, full, h, g);
        }
        __syncwarp(mask);  // the group's inserts are done before the next row clears the table
        if (l == 0) {
            const bool fits = !full && 2ull * distinct <= size;
            counts[i] = fits ? distinct : 0;
            need[i] = fits ? 0 : global_size;
        }
    }
}

// Symbolic pass of the rows with a global table: inserts every column of row i of A B
// into the row's table (slots at t_off[i], AMG_NONE when empty) and counts the distinct
// ones into counts[i]; rows without a table (t_off[i + 1] == t_off[i]) are left alone.
__device__ void amg_spgemm_symbolic(unsigned m, const unsigned* __restrict__ a_off,
                                    const unsigned* __restrict__ a_cols, const unsigned* __restrict__ b_off,
                                    const unsigned* __restrict__ b_cols, const unsigned* __restrict__ t_off,
                                    unsigned* __restrict__ table, unsigned* __restrict__ counts) {
    GRID_STRIDE(i, m) {
        unsigned* t = table + t_off[i];
        const unsigned size = t_off[i + 1] - t_off[i];
        if (size == 0) continue;  // counted in shared memory, or no products
        unsigned distinct = 0;
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end; ++k) {
            const unsigned j = a_cols[k];
            for (unsigned q = b_off[j], qend = b_off[j + 1]; q < qend; ++q) {
                const unsigned c = b_cols[q];
                unsigned s = table_start(c, size);
                while (t[s] != AMG_NONE && t[s] != c) s = (s + 1) & (size - 1);
                if (t[s] == AMG_NONE) {
                    t[s] = c;
                    ++distinct;
                }
            }
        }
        counts[i] = distinct;
    }
}

// Writes row i's distinct columns (from its table) sorted into c_cols[c_off[i]..].
__device__ void amg_spgemm_columns(unsigned m, const unsigned* __restrict__ t_off,
                                   const unsigned* __restrict__ table, const unsigned* __restrict__ c_off,
                                   unsigned* __restrict__ c_cols) {
    GRID_STRIDE(i, m) {
        unsigned* out = c_cols + c_off[i];
        unsigned w = 0;
        for (unsigned s = t_off[i], end = t_off[i + 1]; s < end; ++s) {
            const unsigned c = table[s];
            if (c != AMG_NONE) out[w++] = c;
        }
        sort_unique(out, (double*)0, w);
    }
}

// Numeric pass of the rows with a global table: c_ic = sum over the entries a_ij of row i in order, then the entries b_jc of
// row j in order, of a_ij * b_jc (host_setup.rs, spgemm: the same order). The accumulator
// starts at -0.0, the identity of IEEE addition, so the first product is taken exactly as
// the host takes it.
__device__ void amg_spgemm_numeric(unsigned m, const unsigned* __restrict__ t_off, const unsigned* __restrict__ a_off,
                                   const unsigned* __restrict__ a_cols, const double* __restrict__ a_vals,
                                   const unsigned* __restrict__ b_off, const unsigned* __restrict__ b_cols,
                                   const double* __restrict__ b_vals, const unsigned* __restrict__ c_off,
                                   const unsigned* __restrict__ c_cols, double* __restrict__ c_vals) {
    GRID_STRIDE(i, m) {
        if (t_off[i + 1] == t_off[i]) continue;  // summed in shared memory
        const unsigned lo = c_off[i], len = c_off[i + 1] - lo;
        for (unsigned p = 0; p < len; ++p) c_vals[lo + p] = -0.0;
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end; ++k) {
            const unsigned j = a_cols[k];
            const double aij = a_vals[k];
            for (unsigned q = b_off[j], qend = b_off[j + 1]; q < qend; ++q) {
                const unsigned c = b_cols[q];
                unsigned l = 0, h = len;  // the column is in the row: binary search
                while (h - l > 1) {
                    const unsigned mid = (l + h) >> 1;
                    if (c_cols[lo + mid] <= c) l = mid; else h = mid;
                }
                c_vals[lo + l] = __dadd_rn(c_vals[lo + l], __dmul_rn(aij, b_vals[q]));
            }
        }
    }
}

// The group versions of the two passes, for rows whose products come in long runs (the
// rows of B): a group of g threads (g a power of two, 2 to 32) per row of C, its lanes
// taking the entries of each row of B in turn (lane l the entries l, l + g, ...). The
// row's id is the thread's index over g; the groups of a warp are independent, each
// synchronizing only its own lanes.

// Symbolic pass by groups: the lanes insert the columns into the row's table with an integer
// compare-and-swap (the set of columns, and so their count, does not depend on the order),
// and lane 0 writes the count, summed over the lanes by shuffles.
__device__ void amg_spgemm_symbolic_group(unsigned m, unsigned g, const unsigned* __restrict__ a_off,
                                          const unsigned* __restrict__ a_cols, const unsigned* __restrict__ b_off,
                                          const unsigned* __restrict__ b_cols, const unsigned* __restrict__ t_off,
                                          unsigned* __restrict__ table, unsigned* __restrict__ counts) {
    const unsigned mask = group_mask(g), l = threadIdx.x & (g - 1u);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x / g;
    for (unsigned long long r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / g; r < m; r += stride) {
        const unsigned i = (unsigned)r;
        unsigned* t = table + t_off[i];
        const unsigned size = t_off[i + 1] - t_off[i];
        if (size == 0) continue;  // the whole group skips it: counted in shared memory
        unsigned distinct = 0;
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end; ++k) {
            const unsigned j = a_cols[k];
            for (unsigned q = b_off[j] + l, qend = b_off[j + 1]; q < qend; q += g) {
                const unsigned c = b_cols[q];
                unsigned s = table_start(c, size);
                while (true) {
                    const unsigned old = atomicCAS(t + s, AMG_NONE, c);
                    if (old == AMG_NONE) {
                        ++distinct;
                        break;
                    }
                    if (old == c) break;
                    s = (s + 1) & (size - 1);
                }
            }
        }
        for (unsigned h = g / 2; h > 0; h >>= 1) distinct += __shfl_down_sync(mask, distinct, h, g);
        if (l == 0) counts[i] = distinct;
    }
}

// Numeric pass by groups, in the host's order: for each entry a_ij of row i in order, the
// lanes add the products with the entries of row j of B, whose columns are distinct, so no
// two lanes touch one value in a step; the group synchronizes between steps. Each value is
// the sum of its products in the order of the entries of row i, as the host sums it.
__device__ void amg_spgemm_numeric_group(unsigned m, unsigned g, const unsigned* __restrict__ t_off,
                                         const unsigned* __restrict__ a_off, const unsigned* __restrict__ a_cols,
                                         const double* __restrict__ a_vals, const unsigned* __restrict__ b_off,
                                         const unsigned* __restrict__ b_cols, const double* __restrict__ b_vals,
                                         const unsigned* __restrict__ c_off, const unsigned* __restrict__ c_cols,
                                         double* c_vals) {
    const unsigned mask = group_mask(g), l = threadIdx.x & (g - 1u);
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x / g;
    for (unsigned long long r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / g; r < m; r += stride) {
        const unsigned i = (unsigned)r;
        if (t_off[i + 1] == t_off[i]) continue;  // the whole group skips it: summed in shared memory
        const unsigned lo = c_off[i], len = c_off[i + 1] - lo;
        for (unsigned p = l; p < len; p += g) c_vals[lo + p] = -0.0;
        __syncwarp(mask);
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end; ++k) {
            const unsigned j = a_cols[k];
            const double aij = a_vals[k];
            for (unsigned q = b_off[j] + l, qend = b_off[j + 1]; q < qend; q += g) {
                const unsigned c = b_cols[q];
                unsigned lo2 = 0, h = len;
                while (h - lo2 > 1) {
                    const unsigned mid = (lo2 + h) >> 1;
                    if (c_cols[lo + mid] <= c) lo2 = mid; else h = mid;
                }
                c_vals[lo + lo2] = __dadd_rn(c_vals[lo + lo2], __dmul_rn(aij, b_vals[q]));
            }
            __syncwarp(mask);
        }
    }
}

// Numeric pass in shared memory, g threads per row, of the rows the count pass fitted there
// (t_off[i + 1] == t_off[i] and a nonzero count): the group's share of the block's table
// holds the row's columns and their sums. For each entry a_ij of row i in order, the lanes
// insert the columns of row j of B (compare-and-swap on the keys) and add a_ij * b_jc to
// their slots; the columns of a row of B are distinct, so no two lanes touch one slot
// between two of the group's barriers, and each value is the sum of its products in the
// order of the entries of row i, as the host sums it (from -0.0, as amg_spgemm_numeric).
// Then each lane writes its slots at their rank among the row's columns: the row comes out
// sorted, whatever slots the compare-and-swaps gave.
__device__ void amg_spgemm_numeric_shared(unsigned m, unsigned g, const unsigned* __restrict__ t_off,
                                          const unsigned* __restrict__ a_off, const unsigned* __restrict__ a_cols,
                                          const double* __restrict__ a_vals, const unsigned* __restrict__ b_off,
                                          const unsigned* __restrict__ b_cols, const double* __restrict__ b_vals,
                                          const unsigned* __restrict__ c_off, unsigned* __restrict__ c_cols,
                                          double* __restrict__ c_vals) {
    __shared__ unsigned keys[AMG_SHARED_SLOTS];
    __shared__ double sums[AMG_SHARED_SLOTS];
    const unsigned mask = group_mask(g), l = threadIdx.x & (g - 1u);
    const unsigned cap = AMG_SHARED_SLOTS / (blockDim.x / g);
    unsigned* t = keys + (threadIdx.x / g) * cap;
    double* v = sums + (threadIdx.x / g) * cap;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x / g;
    for (unsigned long long r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / g; r < m; r += stride) {
        const unsigned i = (unsigned)r;
        const unsigned lo = c_off[i], len = c_off[i + 1] - lo;
        if (t_off[i + 1] != t_off[i] || len == 0) continue;  // the global passes' row, or empty
        const unsigned size = pow2_at_least(2ull * len);  // at most cap: the count pass checked
        for (unsigned s = l; s < size; s += g) {
            t[s] = AMG_NONE;
            v[s] = -0.0;
        }
        __syncwarp(mask);
        for (unsigned k = a_off[i], end = a_off[i + 1]; k < end; ++k) {
            const unsigned j = a_cols[k];
            const double aij = a_vals[k];
            for (unsigned q = b_off[j] + l, qend = b_off[j + 1]; q < qend; q += g) {
                const unsigned c = b_cols[q];
                unsigned s = table_start(c, size);
                while (true) {
                    const unsigned old = atomicCAS(t + s, AMG_NONE, c);
                    if (old == AMG_NONE || old == c) break;
                    s = (s + 1) & (size - 1);
                }
                v[s] = __dadd_rn(v[s], __dmul_rn(aij, b_vals[q]));
            }
            __syncwarp(mask);
        }
        for (unsigned s = l; s < size; s += g) {
            const unsigned c = t[s];
            if (c == AMG_NONE) continue;
            unsigned rank = 0;  // AMG_NONE is above every column: empty slots never count
            for (unsigned u = 0; u < size; ++u) rank += t[u] < c;
            c_cols[lo + rank] = c;
            c_vals[lo + rank] = v[s];
        }
        __syncwarp(mask);  // the ranks are read before the next row clears the table
    }
}

// ---- step 4: prolongator smoothing ----

// p_vals = the values of P = P_tent - (omega * dinv_i) (A P_tent) on the structure of A P_tent
// (host_setup.rs, smooth_prolongator): entry (i, c) is pt_ic - (omega * dinv_i) * ap_ic,
// pt_ic = 0 where P_tent has no entry.
__device__ void amg_smooth_values(unsigned n, double omega, const double* __restrict__ dinv,
                                  const unsigned* __restrict__ pt_off, const unsigned* __restrict__ pt_cols,
                                  const double* __restrict__ pt_vals, const unsigned* __restrict__ ap_off,
                                  const unsigned* __restrict__ ap_cols, const double* __restrict__ ap_vals,
                                  double* __restrict__ p_vals) {
    GRID_STRIDE(i, n) {
        const double s = __dmul_rn(omega, dinv[i]);
        unsigned t = pt_off[i];
        const unsigned tend = pt_off[i + 1];
        for (unsigned k = ap_off[i], end = ap_off[i + 1]; k < end; ++k) {
            double pt = 0.0;
            if (t < tend && pt_cols[t] == ap_cols[k]) {
                pt = pt_vals[t];
                ++t;
            }
            p_vals[k] = __dsub_rn(pt, __dmul_rn(s, ap_vals[k]));
        }
    }
}

// ---- the cycle's copies of the setup's results ----

// dinv[i] = 1 / sum_j |a_ij| (the l1-Jacobi smoother's), 0 for a row without nonzeros; the
// sum runs over the row's entries in order, as on the host.
__device__ void amg_l1_diagonal(unsigned n, const unsigned* __restrict__ off, const double* __restrict__ vals,
                                double* __restrict__ dinv) {
    GRID_STRIDE(i, n) {
        double s = 0.0;
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) s = __dadd_rn(s, fabs(vals[k]));
        dinv[i] = s != 0.0 ? 1.0 / s : 0.0;
    }
}

// out[i] = in[i] rounded to the nearest float (the cycle's f32 copies of the f64 setup).
__device__ void amg_to_f32(unsigned n, const double* __restrict__ in, float* __restrict__ out) {
    GRID_STRIDE(i, n) { out[i] = __double2float_rn(in[i]); }
}

// far[0] = 1 when an entry lies farther than 32767 from its row (|c - i| > 32767): then an
// ELL form of the matrix cannot store its columns as 16-bit offsets.
__device__ void amg_far_columns(unsigned n, const unsigned* __restrict__ off, const unsigned* __restrict__ cols,
                                unsigned* __restrict__ far) {
    GRID_STRIDE(i, n) {
        for (unsigned k = off[i], end = off[i + 1]; k < end; ++k) {
            const long long d = (long long)cols[k] - (long long)i;
            if (d > 32767 || d < -32767) {
                atomicExch(far, 1u);
                break;
            }
        }
    }
}

// out[i] = in[i] widened to 64 bits (the row offsets an ELL conversion reads).
__device__ void amg_widen(unsigned n, const unsigned* __restrict__ in, unsigned long long* __restrict__ out) {
    GRID_STRIDE(i, n) { out[i] = in[i]; }
}

typedef const unsigned* cu32;
typedef const double* cf64;

extern "C" {
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_scan_tiles_u32(unsigned n, cu32 in, unsigned long long* partials) {
    amg_scan_tiles(n, in, partials);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_scan_partials_u32(unsigned tiles, unsigned long long* partials, unsigned long long* total) {
    amg_scan_partials(tiles, partials, total);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_scan_apply_u32(unsigned n, cu32 in, const unsigned long long* partials,
                                                                 const unsigned long long* total, unsigned* out) {
    amg_scan_apply(n, in, partials, total, out);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_iota_u32(unsigned n, unsigned* out) { amg_iota(n, out); }
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_diagonal_f64(unsigned n, cu32 off, cu32 cols, cf64 vals, double* diag, double* dinv) {
    amg_diagonal(n, off, cols, vals, diag, dinv);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_strength_count_f64(unsigned n, cu32 off, cu32 cols, cf64 vals,
                                                                     cf64 diag, double theta, unsigned* counts) {
    amg_strength<false>(n, off, cols, vals, diag, theta, counts, 0, 0);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_strength_fill_f64(unsigned n, cu32 off, cu32 cols, cf64 vals,
                                                                    cf64 diag, double theta, cu32 s_off,
                                                                    unsigned* s_cols) {
    amg_strength<true>(n, off, cols, vals, diag, theta, 0, s_off, s_cols);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_node_diagonal_f64(unsigned nodes, unsigned bs, cu32 off, cu32 cols, cf64 vals, double* diag) {
    amg_node_diagonal(nodes, bs, off, cols, vals, diag);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_node_strength_count_f64(unsigned nodes, unsigned bs, cu32 off,
                                                                          cu32 cols, cf64 vals, cf64 diag,
                                                                          double theta, unsigned* counts) {
    amg_node_strength<false>(nodes, bs, off, cols, vals, diag, theta, counts, 0, 0);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_node_strength_fill_f64(unsigned nodes, unsigned bs, cu32 off, cu32 cols, cf64 vals, cf64 diag, double theta,
                               cu32 s_off, unsigned* s_cols) {
    amg_node_strength<true>(nodes, bs, off, cols, vals, diag, theta, 0, s_off, s_cols);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_mis2_init_u32(unsigned n, unsigned* state) { amg_mis2_init(n, state); }
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_mis2_max1_u32(unsigned n, cu32 off, cu32 cols, cu32 state, unsigned long long* m1) {
    amg_mis2_max1(n, off, cols, state, m1);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_mis2_max2_u32(unsigned n, cu32 off, cu32 cols, const unsigned long long* m1, unsigned long long* m2) {
    amg_mis2_max2(n, off, cols, m1, m2);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_mis2_update_u32(unsigned n, const unsigned long long* m2,
                                                                  unsigned* state, unsigned* undecided,
                                                                  unsigned* roots) {
    amg_mis2_update(n, m2, state, undecided, roots);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_agg_pass1_u32(unsigned n, cu32 off, cu32 cols, cu32 state, cu32 root_id, unsigned* agg) {
    amg_agg_pass1(n, off, cols, state, root_id, agg);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_agg_pass2_u32(unsigned n, cu32 off, cu32 cols, cu32 agg1, unsigned* agg2, unsigned* left) {
    amg_agg_pass2(n, off, cols, agg1, agg2, left);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_agg_leftover_u32(unsigned n, unsigned roots, cu32 left_id, unsigned* agg) {
    amg_agg_leftover(n, roots, left_id, agg);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_tent_pattern_f64(unsigned n, unsigned bs, cu32 agg, cf64 b, unsigned* cols, double* vals) {
    amg_tent_pattern(n, bs, agg, b, cols, vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_tent_norms_f64(unsigned count, cu32 t_off, cf64 t_vals, double* norms) {
    amg_tent_norms(count, t_off, t_vals, norms);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_tent_values_f64(unsigned n, cu32 cols, cf64 norms, double* vals) {
    amg_tent_values(n, cols, norms, vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_power_init_f64(unsigned n, double* v) { amg_power_init(n, v); }
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_power_step_f64(unsigned n, cu32 off, cu32 cols, cf64 vals,
                                                                 cf64 dinv, double s, cf64 v, double* out,
                                                                 double* partials) {
    amg_power_step(n, off, cols, vals, dinv, s, v, out, partials);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_power_step_group_f64(unsigned n, unsigned g, cu32 off, cu32 cols,
                                                                       cf64 vals, cf64 dinv, double s, cf64 v,
                                                                       double* out, double* partials) {
    amg_power_step_group(n, g, off, cols, vals, dinv, s, v, out, partials);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_l1_diagonal_f64(unsigned n, cu32 off, cf64 vals, double* dinv) {
    amg_l1_diagonal(n, off, vals, dinv);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_to_f32_f64(unsigned n, cf64 in, float* out) {
    amg_to_f32(n, in, out);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_far_columns_u32(unsigned n, cu32 off, cu32 cols, unsigned* far) {
    amg_far_columns(n, off, cols, far);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_widen_u32(unsigned n, cu32 in, unsigned long long* out) {
    amg_widen(n, in, out);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_count_columns_u32(unsigned nnz, cu32 cols, unsigned* counts) {
    amg_count_columns(nnz, cols, counts);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_transpose_fill_f64(unsigned nrows, cu32 off, cu32 cols, cf64 vals,
                                                                     cu32 t_off, unsigned* cursor, unsigned* t_cols,
                                                                     double* t_vals) {
    amg_transpose_fill(nrows, off, cols, vals, t_off, cursor, t_cols, t_vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_sort_rows_f64(unsigned nrows, cu32 off, unsigned* cols, double* vals) {
    amg_sort_rows(nrows, off, cols, vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_sort_long_rows_f64(unsigned nrows, cu32 off, unsigned* cols, double* vals) {
    amg_sort_long_rows(nrows, off, cols, vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_spgemm_count_shared_u32(unsigned m, unsigned g, unsigned b_ncols, cu32 a_off, cu32 a_cols, cu32 b_off,
                                cu32 b_cols, unsigned* counts, unsigned* need, unsigned* too_many) {
    amg_spgemm_count_shared(m, g, b_ncols, a_off, a_cols, b_off, b_cols, counts, need, too_many);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_spgemm_numeric_shared_f64(unsigned m, unsigned g, cu32 t_off, cu32 a_off, cu32 a_cols, cf64 a_vals,
                                  cu32 b_off, cu32 b_cols, cf64 b_vals, cu32 c_off, unsigned* c_cols,
                                  double* c_vals) {
    amg_spgemm_numeric_shared(m, g, t_off, a_off, a_cols, a_vals, b_off, b_cols, b_vals, c_off, c_cols, c_vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_spgemm_symbolic_u32(unsigned m, cu32 a_off, cu32 a_cols, cu32 b_off,
                                                                      cu32 b_cols, cu32 t_off, unsigned* table,
                                                                      unsigned* counts) {
    amg_spgemm_symbolic(m, a_off, a_cols, b_off, b_cols, t_off, table, counts);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_spgemm_columns_u32(unsigned m, cu32 t_off, cu32 table, cu32 c_off, unsigned* c_cols) {
    amg_spgemm_columns(m, t_off, table, c_off, c_cols);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_spgemm_numeric_f64(unsigned m, cu32 t_off, cu32 a_off, cu32 a_cols, cf64 a_vals, cu32 b_off, cu32 b_cols,
                           cf64 b_vals, cu32 c_off, cu32 c_cols, double* c_vals) {
    amg_spgemm_numeric(m, t_off, a_off, a_cols, a_vals, b_off, b_cols, b_vals, c_off, c_cols, c_vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK) amg_spgemm_symbolic_group_u32(unsigned m, unsigned g, cu32 a_off,
                                                                            cu32 a_cols, cu32 b_off, cu32 b_cols,
                                                                            cu32 t_off, unsigned* table,
                                                                            unsigned* counts) {
    amg_spgemm_symbolic_group(m, g, a_off, a_cols, b_off, b_cols, t_off, table, counts);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_spgemm_numeric_group_f64(unsigned m, unsigned g, cu32 t_off, cu32 a_off, cu32 a_cols, cf64 a_vals,
                                 cu32 b_off, cu32 b_cols, cf64 b_vals, cu32 c_off, cu32 c_cols, double* c_vals) {
    amg_spgemm_numeric_group(m, g, t_off, a_off, a_cols, a_vals, b_off, b_cols, b_vals, c_off, c_cols, c_vals);
}
__global__ void __launch_bounds__(SPGPU_BLOCK)
    amg_smooth_values_f64(unsigned n, double omega, cf64 dinv, cu32 pt_off, cu32 pt_cols, cf64 pt_vals, cu32 ap_off,
                          cu32 ap_cols, cf64 ap_vals, double* p_vals) {
    amg_smooth_values(n, omega, dinv, pt_off, pt_cols, pt_vals, ap_off, ap_cols, ap_vals, p_vals);
}
}
