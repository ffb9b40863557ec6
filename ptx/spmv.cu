// SpMV kernels: y = alpha*A*x + beta*y for CSR (scalar and vector) and ELLPACK, f32 and f64.
//
// Every kernel is `extern "C"` and named `<op>_<format>_<variant>_<scalar>[_i64]` (`_i64`: 64-bit
// row offsets, see SPGPU_SPMV_KERNELS below); the Rust side
// builds the names in one function (src/gpu/kernels/mod.rs, `kernel_name`) and launches
// them with SPGPU_BLOCK threads per block. The semantics shared by all of them are in
// common.cuh.
#include "common.cuh"

// Scalar CSR: one thread per row. Good for short, uniform rows: a warp's 32 rows are
// contiguous in memory, so its loads stay within a few cache lines.
template <typename T, typename O>
__device__ __forceinline__ void csr_scalar(unsigned nrows, const O* __restrict__ row_offsets,
                                           const unsigned* __restrict__ col_indices,
                                           const T* __restrict__ values, const T* __restrict__ x, T alpha,
                                           T beta, T* __restrict__ y) {
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) {
        return;
    }
    acc_t sum = 0;
    if (alpha != T(0)) {
        const O end = ldg(row_offsets + row + 1);
        O j = ldg(row_offsets + row);
        // Two independent chains so consecutive loads overlap.
        acc_t sum2 = 0;
        for (; j + 1 < end; j += 2) {
            sum += acc_t(ldg(values + j)) * acc_t(ldg(x + ldg(col_indices + j)));
            sum2 += acc_t(ldg(values + j + 1)) * acc_t(ldg(x + ldg(col_indices + j + 1)));
        }
        if (j < end) {
            sum += acc_t(ldg(values + j)) * acc_t(ldg(x + ldg(col_indices + j)));
        }
        sum += sum2;
    }
    store_axpby(y, row, alpha, sum, beta);
}

// Vector CSR: TPR threads (a sub-warp) per row. Each lane strides through the row by TPR,
// then the sub-warp reduces its partial sums with shuffles and lane 0 writes y. Rows past
// the end keep their lanes alive (with an empty range) so every shuffle has the full warp.
// When the launch has at most one GPU's worth of threads (SPGPU_RESIDENT_THREADS per SM), a
// row of at least SPGPU_VECTOR_BATCH_STEPS * TPR entries is read 4 entries per lane at a
// time (columns and values loaded together, evict-first, then 4 gathers of x in flight,
// into 4 partial sums added in a fixed order); other rows keep one entry per lane per step.
// The simple loop waits on each entry's loads before it issues the next one's (the loop's
// exit test comes first), so a row's time follows its length times the memory latency,
// which too few warps cannot hide. Measured on an H100 (the device tool gave no H200 that
// day; 2026-11-26, `spgpu bench`; docs/gpu-notes.md): on 80 random matrices of
// 2000 to 32000 rows of 128 to 2500 entries, every TPR, batching every row took rows of
// 400-2500 entries on up to 8000 rows to 0.51-0.97x their time (uniform:2000:2000000:1000
// f64, 16 threads per row: 55.0 -> 29.0 us) but lost up to 14% on rows of 4 to 16 entries
// per lane (uniform:8000:2000000:128, 8 threads per row) and up to 30% on launches of more
// than one GPU's worth of threads (uniform:32000:320000:1000, 32 threads per row: 184.3 ->
// 239.2 us), whose warps already hide the latency; hence both conditions. (Which rows are
// batched, and so the order of their sums, depends on the matrix and the GPU's SM count
// only: repeated calls give the same bits.)
// With 16-bit columns (I = unsigned short) every row of at least SPGPU_VECTOR_BATCH_STEPS * TPR
// entries is batched, however many threads the launch has: on 13 bands of 301 to 4001
// entries per row on 8000 to 100000 rows (H100, 2026-11-26, docs/gpu-notes.md)
// the batched loop on 16-bit columns took 0.55x-0.78x the time of the 32-bit simple loop
// (banded:22000:1200 f32, 32 threads per row: 174.4 -> 120.0 us), whereas the simple loop
// on 16-bit columns was up to 1.26x slower than on 32-bit ones (which is why the upload
// stores 16-bit columns for the vector kernel only when its rows are long enough to batch).
#define SPGPU_VECTOR_BATCH_STEPS 32
// Threads resident on one SM of compute capability 7.0, 8.0 and 9.0 (fewer on some others,
// where the test above is looser).
#define SPGPU_RESIDENT_THREADS 2048

// The number of SMs (PTX %nsmid: at least the SM count).
__device__ __forceinline__ unsigned sm_count() {
    unsigned n;
    asm("mov.u32 %0, %%nsmid;" : "=r"(n));
    return n;
}
// The column of CSR entry `c` of row `row`: I = unsigned stores columns, I = unsigned short
// their 16-bit offsets from the row (a matrix of entries within 32767 of the diagonal: 2
// bytes fewer per entry).
__device__ __forceinline__ unsigned csr_col(unsigned c, unsigned) { return c; }
__device__ __forceinline__ unsigned csr_col(unsigned short d, unsigned row) { return row + unsigned(int(short(d))); }

// I: how the columns are stored (csr_col). The columns come as a plain restrict pointer, not
// in a reader struct as for ELL and SELL: with the struct, nvcc 11.8 compiled the 32-bit
// batched loop differently (no software pipelining of the next batch's loads), up to 1.49x
// slower in f32 on an H100 (2026-11-26).
template <typename T, unsigned TPR, typename O, typename I>
__device__ __forceinline__ void csr_vector(unsigned nrows, const O* __restrict__ row_offsets,
                                           const I* __restrict__ col_indices, const T* __restrict__ values,
                                           const T* __restrict__ x, T alpha, T beta, T* __restrict__ y) {
    const unsigned row = blockIdx.x * (SPGPU_BLOCK / TPR) + threadIdx.x / TPR;
    const unsigned lane = threadIdx.x % TPR;
    const bool active = row < nrows;
    acc_t sum = 0;
    if (active && alpha != T(0)) {
        const O start = ldg(row_offsets + row);
        const O end = ldg(row_offsets + row + 1);
        const bool batch = sizeof(I) == 2 || (unsigned long long)gridDim.x * SPGPU_BLOCK <=
                                                 (unsigned long long)sm_count() * SPGPU_RESIDENT_THREADS;
        if (batch && end - start >= O(SPGPU_VECTOR_BATCH_STEPS * TPR)) {
            acc_t part[4] = {0, 0, 0, 0};
            O j = start + lane;
            for (; j + 3 * TPR < end; j += 4 * TPR) {
                unsigned c[4];
                T v[4];
#pragma unroll
                for (unsigned k = 0; k < 4; ++k) {
                    c[k] = csr_col(ld_stream(col_indices + j + k * TPR), row);
                    v[k] = ld_stream(values + j + k * TPR);
                }
#pragma unroll
                for (unsigned k = 0; k < 4; ++k) {
                    part[k] += acc_t(v[k]) * acc_t(ldg(x + c[k]));
                }
            }
#pragma unroll
            for (unsigned k = 0; k < 3; ++k) {
                if (j + k * TPR < end) {
                    part[k] += acc_t(ld_stream(values + j + k * TPR)) *
                               acc_t(ldg(x + csr_col(ld_stream(col_indices + j + k * TPR), row)));
                }
            }
            sum = (part[0] + part[1]) + (part[2] + part[3]);
        } else {
#pragma unroll 4
            for (O j = start + lane; j < end; j += TPR) {
                sum += acc_t(ldg(values + j)) * acc_t(ldg(x + csr_col(ldg(col_indices + j), row)));
            }
        }
    }
    sum = group_sum<TPR>(sum);
    if (active && lane == 0) {
        store_axpby(y, row, alpha, sum, beta);
    }
}

// ELLPACK, column-major: one thread per row; slot k of row i is at k*nrows + i, so a warp
// reads 32 consecutive slots. Every slot's column and value are loaded (a padding slot holds
// value 0), SPGPU_ELL_BATCH slots at a time (slot_sum, common.cuh); only the read of x is
// skipped for padding (the Cols type's PADDING code). S is the slot index
// type: 32-bit while (width + 1) * nrows fits it, else 64-bit. C: how columns are stored
// (WideCols or NarrowCols, common.cuh).
template <typename T, typename S, typename C>
__device__ __forceinline__ void ell(unsigned nrows, unsigned width, C cols, const T* __restrict__ values,
                                    const T* __restrict__ x, T alpha, T beta, T* __restrict__ y) {
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) {
        return;
    }
    acc_t sum = 0;
    if (alpha != T(0)) {
        sum = slot_sum<SPGPU_ELL_BATCH, false, true>(cols, values, x, S(row), S(nrows), width, row);
    }
    store_axpby(y, row, alpha, sum, beta);
}

// ---------------------------------------------------------------------------------------
// Load-balanced CSR (src/gpu/balance.rs describes the row blocks and how they are made).
//
// One block of SPGPU_BLOCK threads per row block. A stream block (whole rows, at most
// SPGPU_BALANCED_ENTRIES entries from its first rounded down to a multiple of 4, and
// SPGPU_BALANCED_ROWS rows) loads its entries with coalesced 16-byte reads, keeps the
// products values[j] * x[col[j]] in shared memory, then sums each row there with a group
// of threads_per_row(rows) threads (past SPGPU_BLOCK rows, one thread sums two rows alone)
// and writes y. A chunk block (a piece of a long row, its row flagged with SPGPU_LONG_FLAG)
// sums its piece; a row of one chunk is written to y
// by its block, otherwise every chunk block but the last writes its sum to partials[block],
// and the block of the row's last chunk (chunk_done) waits for them, adds the pieces in
// order and writes y, in the same launch. Every sum has a fixed order: results repeat bit for
// bit. A block of 256 threads holds 1024 entries (8 KiB of products in shared memory): on the
// H200 this beat 2048 by 3-20% on R-MAT and web-like graphs (rmat:22:8 f32 338 -> 268 us),
// whose x gathers hit the L1 more when shared memory takes less of it, and beat 512 and 256.
// The kernel is also compiled for blocks of 512 threads and 2048 entries
// (spmv_csr_balanced512_<s>), which the plan gives matrices whose columns lie near the
// diagonal (RowShape::T512 in src/gpu/balance.rs). Columns and values, read once, are loaded
// with the evict-first (streaming) cache hint, so they do not push x out of the L2: on the
// H200 this took powerlaw:4000000 (f64, x of 32 MB) from 591 to 504 us.
#define SPGPU_BALANCED_ENTRIES 1024
// Rows per stream block of SPGPU_BLOCK threads at most (BLOCK_ROWS in src/gpu/balance.rs): 2
// per thread, so that graphs of a few entries per row (and many empty rows) fill their blocks
// with entries. On the H200 (2026-11-26, against 256 rows) this took rmat:24:2
// from 412.8 to 382.9 us (f32) and 476.4 to 458.4 (f64), rmat:22:2:3 f32 from 85.9 to 80.2;
// 4 rows per thread gained less (rmat:24:2 f32 394.3 against 382.8) and 8 lost (454.1). The
// 512-thread shape keeps one row per thread.
#define SPGPU_BALANCED_ROWS 512
// Entries per chunk block (a row that no stream block holds is cut into chunks of this size;
// one chunk when it fits, then the block writes y itself and needs no other block).
#define SPGPU_BALANCED_CHUNK 2048
#define SPGPU_LONG_FLAG 0x80000000u

// How the threads of one row block wait for each other: the whole block (the balanced and
// SELL kernels), or one group of SPGPU_BLOCK threads of a larger block (the hot-column
// kernel, one named barrier per group).
struct BlockSync {
    __device__ __forceinline__ void operator()() const { __syncthreads(); }
};
struct GroupSync {
    unsigned id;  // 1..SPGPU_HOT_GROUPS (barrier 0 is __syncthreads)
    __device__ __forceinline__ void operator()() const {
        asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(SPGPU_BLOCK) : "memory");
    }
};

// How x is read: straight from device memory, or, for columns flagged SPGPU_HOT_FLAG (the
// hot-column kernel), from the block's shared-memory copy of the hot entries of x; with
// PREFETCH, device memory is read with the L2 prefetch hint (ld_gather).
template <typename T, bool PREFETCH = false>
struct PlainX {
    const T* __restrict__ x;
    __device__ __forceinline__ T operator()(unsigned c) const { return ld_gather<PREFETCH>(x + c); }
};
#define SPGPU_HOT_FLAG 0x80000000u
template <typename T, bool PREFETCH = false>
struct HotX {
    const T* __restrict__ x;
    const T* hot;  // shared memory
    __device__ __forceinline__ T operator()(unsigned c) const {
        return (c & SPGPU_HOT_FLAG) ? hot[c & ~SPGPU_HOT_FLAG] : ld_gather<PREFETCH>(x + c);
    }
};

// The sum of `v` over the BT threads of a row block (tid its thread's index there), valid
// in tid 0; every thread of the row block must call it. warp_sums: BT / 32 slots of shared
// memory of this row block.
template <unsigned BT, typename Sync>
__device__ __forceinline__ acc_t block_sum(acc_t v, unsigned tid, acc_t* warp_sums, Sync sync) {
    v = group_sum<32>(v);
    const unsigned warp = tid / 32;
    if (tid % 32 == 0) {
        warp_sums[warp] = v;
    }
    sync();
    if (warp == 0) {
        v = tid < BT / 32 ? warp_sums[tid] : acc_t(0);
        v = group_sum<BT / 32>(v);
    }
    return v;
}

// Loads entries tid + k * BT (k < PER) of cols and vals below n into c and v (coalesced
// across the BT threads of the row block, evict-first: read once, ld_stream); zeros past n.
// For the chunks of long rows (chunk_sum). Their loads are not tied (`tied`, common.cuh): on the
// H200 (2026-11-27) the tie made the SELL kernel 2-4% slower on the circuits, whose few long
// rows are chunks.
template <typename T, unsigned PER, unsigned BT>
__device__ __forceinline__ void load_entries(const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                             unsigned n, unsigned tid, unsigned (&c)[PER], T (&v)[PER]) {
#pragma unroll
    for (unsigned k = 0; k < PER; ++k) {
        const unsigned i = tid + k * BT;
        c[k] = i < n ? ld_stream(cols + i) : 0u;
        v[k] = i < n ? ld_stream(vals + i) : T(0);
    }
}

// A stream block's entries in aligned quads (the balanced kernels' stream blocks, since
// 2026-11-27): the block's window starts at its first entry rounded down to a multiple of 4
// (`base`, whose columns and values are 16-byte aligned, as every device array starts
// 256-byte aligned), and thread tid loads the window's entries 4 * tid .. 4 * tid + 3 with
// one vector load of columns and one of values (two in f64) instead of four each. Entries
// `lead` to `m` of the window are the block's (the caller's lead; the upload keeps lead + n
// within the block's ENTRIES, RowBlocks in src/gpu/balance.rs); the loads read whole quads
// below m, which may include entries of the block before (never past the matrix's last
// entry: a quad that m cuts is loaded entry by entry). With TIE (the 512-thread kernels),
// each column is tied to its value's load (`tied`, common.cuh): without the tie ptxas had
// issued those kernels' value loads only after the first gathers, which wait for the
// columns (2026-11-27). With the vector loads the tie still pays there in f64 and costs
// the 256-thread kernels (H100, two rounds, 2026-11-27, docs/gpu-notes.md: untied,
// the web-like graphs 1.009x-1.013x the time in f64 and within 0.5% in f32; the 256-thread
// kernels 0.979x-1.000x, rmat:22:8:7 0.979x-0.984x).
template <typename T, bool TIE>
__device__ __forceinline__ void load_quad(const unsigned* __restrict__ cols, const T* __restrict__ vals, unsigned m,
                                          unsigned tid, unsigned (&c)[4], T (&v)[4]) {
    const unsigned zero = m >> 31;  // m <= ENTRIES
    const unsigned i0 = 4 * tid;
    if (i0 + 4 <= m) {
        ld_stream4(cols + i0, c);
        ld_stream4(vals + i0, v);
    } else {
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            c[k] = i0 + k < m ? ld_stream(cols + i0 + k) : 0u;
            v[k] = i0 + k < m ? ld_stream(vals + i0 + k) : T(0);
        }
    }
    if (TIE) {
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            c[k] = tied(c[k], v[k], zero);
        }
    }
}

// The products v[k] * x[c[k]] of the window entries 4 * tid + k from lo to m (loaded by
// load_quad) into prod[4 * tid + k], then a barrier of the row block. Every thread of the
// row block must call it.
//
// The stores go in a rotated order: the j-th store of thread tid writes its product
// (j + r) % 4, r = (tid / 4) % 4. In order (all threads' first products, then the second,
// ...) a warp's store would write every fourth 8-byte word, 4 of the 16 pairs of banks:
// 8 shared-memory wavefronts where its 256 bytes need 2; rotated, the 32 lanes cover every
// pair of banks twice. (On the H100 the rotation changed little: the web-like graphs
// 0-1% faster than with the stores in order, rmat:22:8:7 as slow; docs/gpu-notes.md,
// 2026-11-27.)
template <typename T, typename X, typename Sync>
__device__ __forceinline__ void quad_products(unsigned (&c)[4], T (&v)[4], unsigned lo, unsigned m, X xv,
                                              unsigned tid, acc_t* prod, Sync sync) {
    // the entries rotated left by r (selects, not a dynamically indexed array): entry j
    // becomes the window's entry 4 * tid + (j + r) % 4
    const unsigned r = (tid / 4) % 4;
    if (r & 1) {
        const unsigned tc = c[0];
        c[0] = c[1], c[1] = c[2], c[2] = c[3], c[3] = tc;
        const T tv = v[0];
        v[0] = v[1], v[1] = v[2], v[2] = v[3], v[3] = tv;
    }
    if (r & 2) {
        unsigned tc = c[0];
        c[0] = c[2], c[2] = tc;
        tc = c[1];
        c[1] = c[3], c[3] = tc;
        T tv = v[0];
        v[0] = v[2], v[2] = tv;
        tv = v[1];
        v[1] = v[3], v[3] = tv;
    }
#pragma unroll
    for (unsigned j = 0; j < 4; ++j) {
        const unsigned i = 4 * tid + (j + r) % 4;
        if (i >= lo && i < m) {
            prod[i] = acc_t(v[j]) * acc_t(xv(c[j]));
        }
    }
    sync();
}

// A sparse stream block's entries (more rows than threads, balanced_block): thread tid loads
// the window entries tid + k * BT (k < 4) from lo to m, each column tied to its value's load
// (`tied`, common.cuh), as every stream block did before the quads (2026-11-27). Such blocks hold
// a few hundred entries, which quads leave to the first warps of the block: on the H200
// (2026-11-27, two rounds, docs/gpu-notes.md) loading them in quads had
// made rmat:24:2 f64 1.08x slower than the strided loads of the build before; strided again,
// rmat:24:2 f64 ran 0.93x the quads' time, rmat:23:4:3 f64 0.98x, rmat:22:8:7 1.01x, the
// power-law graphs within 0.7%.
template <typename T, unsigned BT>
__device__ __forceinline__ void load_strided(const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                             unsigned lo, unsigned m, unsigned tid, unsigned (&c)[4], T (&v)[4]) {
    const unsigned zero = m >> 31;  // m <= ENTRIES
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
        const unsigned i = tid + k * BT;
        const bool in = i >= lo && i < m;
        c[k] = in ? ld_stream(cols + i) : 0u;
        v[k] = in ? ld_stream(vals + i) : T(0);
        c[k] = tied(c[k], v[k], zero);
    }
}

// The products of the entries load_strided loaded into prod[tid + k * BT], then a barrier of
// the row block. Every thread of the row block must call it.
template <typename T, unsigned BT, typename X, typename Sync>
__device__ __forceinline__ void strided_products(const unsigned (&c)[4], const T (&v)[4], unsigned lo, unsigned m,
                                                 X xv, unsigned tid, acc_t* prod, Sync sync) {
#pragma unroll
    for (unsigned k = 0; k < 4; ++k) {
        const unsigned i = tid + k * BT;
        if (i >= lo && i < m) {
            prod[i] = acc_t(v[k]) * acc_t(xv(c[k]));
        }
    }
    sync();
}

// The sum of values[i] * x[cols[i]] for i < n (n <= CHUNK), over the row block of BT
// threads, valid in tid 0: every thread loads CHUNK / BT entries (coalesced, evict-first),
// then gathers x. 0 when alpha == 0 (nothing is read). Every thread of the row block must call it.
// BATCH entries per thread are loaded at once (all of them by default; fewer keeps fewer
// registers live), and each thread adds its entries in the same order either way.
template <typename T, unsigned CHUNK, unsigned BT, unsigned BATCH = CHUNK / BT, typename X, typename Sync>
__device__ __forceinline__ acc_t chunk_sum(const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                           unsigned n, X xv, T alpha, unsigned tid, acc_t* warp_sums,
                                           Sync sync) {
    constexpr unsigned PER_THREAD = CHUNK / BT;
    static_assert(PER_THREAD % BATCH == 0, "batches split the entries of a thread evenly");
    acc_t sum = 0;
    if (alpha != T(0)) {
#pragma unroll 1
        for (unsigned k0 = 0; k0 < PER_THREAD; k0 += BATCH) {
            const unsigned at = k0 * BT;
            const unsigned m = n > at ? n - at : 0u;
            unsigned c[BATCH];
            T v[BATCH];
            load_entries<T, BATCH, BT>(cols + at, vals + at, m, tid, c, v);
#pragma unroll
            for (unsigned k = 0; k < BATCH; ++k) {
                if (tid + k * BT < m) {
                    sum += acc_t(v[k]) * acc_t(xv(c[k]));
                }
            }
        }
    }
    return block_sum<BT>(sum, tid, warp_sums, sync);
}

// The long rows of the SELL kernel (rows of more than 512 entries, LONG_ROW in src/gpu/sell.rs, of one chunk
// or more): `n` rows listed as [row, first chunk, chunks] in `rows` (increasing rows), and
// one chunk-sum slot per chunk
// in `partials`, every slot holding SPGPU_NO_SUM between calls. (The balanced kernel finds
// a chunk's row and first chunk from the row offsets, and needs only `partials`.)
struct LongRows {
    unsigned n;
    const unsigned* __restrict__ rows;
    acc_t* __restrict__ partials;
};

// The bits of a chunk-sum slot that holds no sum (0xff bytes, as the upload fills them): a
// NaN that no stored sum has, since stored sums have canonical NaNs (store_chunk_sum).
#define SPGPU_NO_SUM 0xffffffffffffffffull

// The index of the long row whose chunks include chunk slot b: the last with its first
// chunk at or before b (first chunks increase with the rows).
__device__ __forceinline__ unsigned find_long_row(const LongRows& lr, unsigned b) {
    unsigned lo = 0, hi = lr.n - 1;
    while (lo < hi) {
        const unsigned mid = (lo + hi + 1) / 2;
        if (ldg(lr.rows + 3 * mid + 1) <= b) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Stores chunk sum v in slot p for the row's last chunk to read (a relaxed GPU-scope store:
// the 8 bytes arrive whole). A NaN is stored as the canonical NaN, so no sum reads as
// SPGPU_NO_SUM.
__device__ __forceinline__ void store_chunk_sum(acc_t* p, acc_t v) {
    unsigned long long bits = (unsigned long long)__double_as_longlong(v);
    if (v != v) {
        bits = 0x7ff8000000000000ull;
    }
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(bits) : "memory");
}

// The chunk sum in slot p, once its block has stored it (relaxed GPU-scope loads until the
// slot no longer holds SPGPU_NO_SUM).
__device__ __forceinline__ acc_t wait_chunk_sum(const acc_t* p) {
    unsigned long long bits;
    for (;;) {
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(bits) : "l"(p) : "memory");
        if (bits != SPGPU_NO_SUM) {
            return __longlong_as_double((long long)bits);
        }
        __nanosleep(64);
    }
}

// After chunk slot b of long row `row` (chunk slots first..first + count - 1) has its sum
// `sum` (valid in lane 0), by warp 0 of the block (lane its lane). Every chunk but the
// row's last stores its sum in partials[b] and
// is done. The last chunk's warp waits for the other chunks' sums, adds them all in a fixed
// order (each lane every 32nd chunk sum, its own block's sum in its place, then the warp's
// shuffle tree), writes y[row] = alpha * total + beta * y[row], and sets the slots back to
// SPGPU_NO_SUM for the next call. The other chunks are earlier row blocks: lower block
// indices in the balanced and SELL kernels, and in the hot-column kernel either some
// block's fixed first row block (every block is resident: the grid is what fits at once) or
// taken from its counter before this one. The wait ends because the GPU starts the blocks of
// a launch in index order, so every earlier chunk's block is running or done. CUDA does not
// promise that order, though every NVIDIA GPU so far keeps it (as single-pass scans that wait
// on their predecessors rely on); on a GPU that did not, a kernel with long rows could hang.
// No fence and no counter: each slot is its own flag (on the H200 this took
// powerlaw:1000000 f32 from 104.8 to 102.2 us and rmat:21:16 f64 from 223.0 to 217.9 us,
// against a __threadfence and an atomic counter per chunk; the balanced kernel's chunks then
// found their row's first chunk from the row offsets instead of a binary search of the long
// rows, rmat:22:8:7 f32 229.9 -> 223.8 us, rmat:21:16 f32 189.4 -> 185.7 us).
template <typename T>
__device__ __forceinline__ void chunk_done(acc_t* __restrict__ partials, unsigned row, unsigned first, unsigned count,
                                           unsigned b, acc_t sum, unsigned lane, T alpha, T beta, T* __restrict__ y) {
    sum = __shfl_sync(0xffffffffu, sum, 0);
    if (b != first + count - 1) {
        if (lane == 0) {
            store_chunk_sum(partials + b, sum);
        }
        return;
    }
    acc_t total = 0;
    for (unsigned k = lane; k < count; k += 32) {
        // every other chunk's sum is waited for, even when alpha == 0 (so that none is
        // stored after the slots are reset)
        const acc_t v = k + 1 < count ? wait_chunk_sum(partials + first + k) : sum;
        if (alpha != T(0)) {
            total += v;
        }
    }
    total = group_sum<32>(total);
    if (lane == 0) {
        store_axpby(y, row, alpha, total, beta);
    }
    for (unsigned k = lane; k + 1 < count; k += 32) {
        reinterpret_cast<unsigned long long*>(partials)[first + k] = SPGPU_NO_SUM;
    }
}

// Row block b of the balanced kernel, run by BT threads (tid their index) with ENTRIES
// products and BT / 32 warp sums of shared memory: stream blocks of at most ENTRIES entries
// counted from the first entry rounded down to a multiple of 4 (load_quad), and BT rows
// (SPGPU_BALANCED_ROWS when BT == SPGPU_BLOCK), chunks of CHUNK entries (the shape of the
// row blocks, RowShape in src/gpu/balance.rs).
template <typename T, typename O, unsigned BT, unsigned ENTRIES, unsigned CHUNK, unsigned CHUNK_BATCH, bool SWEEP,
          typename X, typename Sync>
__device__ __forceinline__ void balanced_block(unsigned b, unsigned tid, acc_t* prod, acc_t* warp_sums, Sync sync,
                                               const O* __restrict__ row_offsets,
                                               const unsigned* __restrict__ col_indices,
                                               const T* __restrict__ values, X xv, T alpha, T beta,
                                               T* __restrict__ y, const unsigned* __restrict__ block_row,
                                               const O* __restrict__ block_entry, acc_t* __restrict__ partials) {
    // The block's bounds, all read at once (a chunk block does not use next_tag).
    const unsigned row_tag = ldg(block_row + b);
    const unsigned next_tag = ldg(block_row + b + 1);
    const O e0 = ldg(block_entry + b);
    // at most CHUNK; a chunk block in chunk-major order (SWEEP) takes its size from its row
    const unsigned n = unsigned(ldg(block_entry + b + 1) - e0);
    constexpr unsigned PER_THREAD = ENTRIES / BT;

    if (row_tag & SPGPU_LONG_FLAG) {
        // A chunk of a row longer than a stream block (up to CHUNK entries, in registers):
        // when it is the whole row, it writes y. Otherwise its sum goes to its chunk-sum
        // slot, and the block of the row's last chunk adds them in chunk order and writes y
        // (chunk_done). The slots: partials[b] in row order; with SWEEP (chunks past the
        // first in chunk-major order, after the others, so the next block need not be this
        // row's) the row's slots start at rs / CHUNK + row (rs counted from the first row's
        // offset, so apart from every other row's), and the chunk's size comes from the row.
        const unsigned row = row_tag & ~SPGPU_LONG_FLAG;
        O rs = 0, len = 0;
        unsigned m = n;
        if (SWEEP) {
            // uniform across the block: every thread reads the same offsets
            rs = ldg(row_offsets + row);
            len = ldg(row_offsets + row + 1) - rs;
            m = unsigned(min(O(CHUNK), rs + len - e0));
        }
        const acc_t sum =
            chunk_sum<T, CHUNK, BT, CHUNK_BATCH>(col_indices + e0, values + e0, m, xv, alpha, tid, warp_sums, sync);
        if (tid < 32) {
            if (!SWEEP) {
                // warp-uniform: every lane reads the same offsets
                rs = ldg(row_offsets + row);
                len = ldg(row_offsets + row + 1) - rs;
            }
            if (e0 == rs && m == len) {
                if (tid == 0) {
                    store_axpby(y, row, alpha, sum, beta);
                }
            } else {
                const unsigned k = unsigned((e0 - rs) / CHUNK);
                const unsigned count = unsigned((len + CHUNK - 1) / CHUNK);
                if (SWEEP) {
                    const unsigned first = unsigned((rs - ldg(row_offsets)) / CHUNK) + row;
                    chunk_done(partials, row, first, count, first + k, sum, tid, alpha, beta, y);
                } else {
                    chunk_done(partials, row, b - k, count, b, sum, tid, alpha, beta, y);
                }
            }
        }
        return;
    }

    // A stream block: rows r0..r1. Its entries' loads are issued first, then its rows'
    // offsets: both need only the block's bounds, so both are in flight at once, and the
    // gathers of x follow one round trip later. (With the offsets read first and the entries
    // under a branch on alpha, ptxas waited for the offsets before it issued the entries'
    // loads: the Nsight Compute profile of web:4000000 f32 on the H200 (2026-11-26) had 12%
    // of the stall samples on the bounds and offsets, read in three round trips.) Neither
    // the matrix nor x is read when alpha == 0 (m = 0, no group active).
    const unsigned r0 = row_tag;
    const unsigned r1 = next_tag & ~SPGPU_LONG_FLAG;
    const unsigned rows = r1 - r0;
    // The entries in aligned quads (load_quad): the window from `base`, the block's entries
    // from `lead` to `m` in it; products and row offsets are counted from `base`.
    // (`lead` from the address, not from e0: a test upload shifts the arrays' indices by an
    // arbitrary `entry_base`, and the upload's blocks count from the arrays' starts.)
    static_assert(PER_THREAD == 4, "one quad of entries per thread");
    const unsigned lead = unsigned(reinterpret_cast<unsigned long long>(col_indices + e0) / sizeof(unsigned)) % 4;
    const O base = e0 - lead;
    // (n == 0: nothing is read, whatever lead says; a matrix of no entries has no arrays)
    const unsigned m = alpha != T(0) && n > 0 ? lead + n : 0u;
    unsigned c[PER_THREAD];
    T v[PER_THREAD];
    // Blocks of SPGPU_BLOCK threads may hold up to SPGPU_BALANCED_ROWS rows (2 per thread; the
    // upload cuts them only from rows short enough, MAX_STEPS in src/gpu/balance.rs): thread
    // tid then sums rows tid and tid + BT alone, in a path of its own, so that the usual path
    // below stays as it was. Such a block loads its entries strided (load_strided), not in quads.
    static_assert(SPGPU_BALANCED_ROWS % SPGPU_BLOCK == 0, "whole rows per thread");
    constexpr unsigned RPT = BT == SPGPU_BLOCK ? SPGPU_BALANCED_ROWS / SPGPU_BLOCK : 1;
    if (RPT > 1 && rows > BT) {
        load_strided<T, BT>(col_indices + base, values + base, lead, m, tid, c, v);
    } else {
        load_quad<T, (BT > SPGPU_BLOCK)>(col_indices + base, values + base, m, tid, c, v);
    }
    if (RPT > 1 && rows > BT) {
        O s[RPT], e[RPT];
#pragma unroll
        for (unsigned k = 0; k < RPT; ++k) {
            const unsigned g = tid + k * BT;
            s[k] = base;
            e[k] = base;
            if (g < rows && alpha != T(0)) {
                s[k] = ldg(row_offsets + (r0 + g));
                e[k] = ldg(row_offsets + (r0 + g + 1));
            }
        }
        strided_products<T, BT>(c, v, lead, m, xv, tid, prod, sync);
#pragma unroll
        for (unsigned k = 0; k < RPT; ++k) {
            const unsigned g = tid + k * BT;
            if (g < rows) {
                acc_t sum = 0;
                for (unsigned i = unsigned(s[k] - base); i < unsigned(e[k] - base); ++i) {
                    sum += prod[i];
                }
                store_axpby(y, r0 + g, alpha, sum, beta);
            }
        }
        return;
    }
    // threads_per_row(rows): the largest power of two t with rows * t <= BT, at most 32.
    const unsigned t_max = BT / rows;
    const unsigned tpr = min(32u, 1u << (31 - __clz(t_max)));
    const unsigned group = tid / tpr;
    const unsigned lane = tid % tpr;
    const unsigned row = r0 + group;
    const bool active = group < rows && alpha != T(0);
    // The group's row's offsets, made relative to the window (below ENTRIES) once the
    // products are in shared memory.
    O rs = base, re = base;
    if (active) {
        rs = ldg(row_offsets + row);
        re = ldg(row_offsets + row + 1);
    }
    quad_products<T>(c, v, lead, m, xv, tid, prod, sync);
    const unsigned s = unsigned(rs - base);
    const unsigned e = unsigned(re - base);
    // Each lane adds every tpr-th product of the row into 4 partial sums in turn (4 chains of
    // shared-memory reads in flight, not 1: the warp's longest row sets how long it takes), then
    // adds the 4 in a fixed order.
    acc_t part[4] = {0, 0, 0, 0};
    unsigned i = s + lane;
    for (; i + 3 * tpr < e; i += 4 * tpr) {
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            part[k] += prod[i + k * tpr];
        }
    }
#pragma unroll
    for (unsigned k = 0; k < 3; ++k) {
        if (i + k * tpr < e) {
            part[k] += prod[i + k * tpr];
        }
    }
    acc_t sum = (part[0] + part[1]) + (part[2] + part[3]);
    // Sum over each group of tpr lanes (every lane of the warp takes part).
    for (unsigned offset = tpr / 2; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset, tpr);
    }
    if (group < rows && lane == 0) {
        store_axpby(y, row, alpha, sum, beta);
    }
}

// The balanced kernel: one block of BT threads per row block of at most ENTRIES entries
// (chunks of CHUNK); x gathered with the L2 prefetch hint when PREFETCH_X.
template <typename T, typename O, unsigned BT, unsigned ENTRIES, unsigned CHUNK, bool SWEEP = false,
          bool PREFETCH_X = false>
__device__ __forceinline__ void csr_balanced(const O* __restrict__ row_offsets,
                                             const unsigned* __restrict__ col_indices,
                                             const T* __restrict__ values, const T* __restrict__ x, T alpha,
                                             T beta, T* __restrict__ y, const unsigned* __restrict__ block_row,
                                             const O* __restrict__ block_entry, acc_t* __restrict__ partials) {
    __shared__ acc_t prod[ENTRIES];
    __shared__ acc_t warp_sums[BT / 32];
    balanced_block<T, O, BT, ENTRIES, CHUNK, CHUNK / BT, SWEEP>(blockIdx.x, threadIdx.x, prod, warp_sums, BlockSync{},
                                                          row_offsets, col_indices, values, PlainX<T, PREFETCH_X>{x}, alpha,
                                                          beta, y, block_row, block_entry, partials);
}

// The hot-column kernel (src/gpu/hot.rs): the balanced kernel's row blocks, with the entries
// of x that most entries read (the hot columns, at most one block's dynamic shared memory)
// copied once per block into shared memory from hot_x, where gather_<T> put them (contiguous,
// so each block's copy is coalesced). The upload stored each entry of a hot column
// as SPGPU_HOT_FLAG | its slot in hot_cols, so its x is read from there: on R-MAT graphs a
// few thousand columns hold a third to a half of the entries, and their gathers otherwise
// load the L2, which bounds the kernel. Blocks of SPGPU_HOT_GROUPS * SPGPU_BLOCK threads, as
// many as fit the GPU at once; each group of SPGPU_BLOCK threads runs row blocks
// blockIdx.x * SPGPU_HOT_GROUPS + group, then every gridDim.x * SPGPU_HOT_GROUPS-th after
// it, exactly as the balanced kernel runs one (same sums in the same order: bit-identical
// results).
#define SPGPU_HOT_GROUPS 4
// Blocks of the hot-column kernel resident on one SM: 64 warps, as the balanced kernel has
// (its registers are capped to allow it).
#define SPGPU_HOT_BLOCKS_PER_SM 2
// Entries per thread loaded at once in a chunk of a long row (of 8): fewer registers.
#define SPGPU_HOT_CHUNK_BATCH 4
template <typename T, typename O, bool PREFETCH_X = false>
__device__ __forceinline__ void csr_hot(const O* __restrict__ row_offsets, const unsigned* __restrict__ col_indices,
                                        const T* __restrict__ values, const T* __restrict__ x, T alpha, T beta,
                                        T* __restrict__ y, const unsigned* __restrict__ block_row,
                                        const O* __restrict__ block_entry, acc_t* __restrict__ partials, unsigned nblocks, const T* __restrict__ hot_x, unsigned nhot,
                                        unsigned* __restrict__ counter) {
    extern __shared__ __align__(16) unsigned char hot_smem[];
    T* hot = reinterpret_cast<T*>(hot_smem);
    __shared__ acc_t prod[SPGPU_HOT_GROUPS][SPGPU_BALANCED_ENTRIES];
    __shared__ acc_t warp_sums[SPGPU_HOT_GROUPS][SPGPU_BLOCK / 32];
    if (alpha != T(0)) {
        for (unsigned s = threadIdx.x; s < nhot; s += blockDim.x) {
            hot[s] = ldg(hot_x + s);
        }
    }
    __syncthreads();
    const unsigned g = threadIdx.x / SPGPU_BLOCK;
    const unsigned tid = threadIdx.x % SPGPU_BLOCK;
    const GroupSync sync{g + 1};
    // Row blocks are handed out in order: each group's first is fixed, the next ones are
    // taken from the counter (gather_<T> zeroed it before this kernel), so a group that drew
    // slow row blocks takes fewer. Which group sums a row block does not change its sum.
    __shared__ unsigned next[SPGPU_HOT_GROUPS][2];
    unsigned b = blockIdx.x * SPGPU_HOT_GROUPS + g;
    for (unsigned it = 0; b < nblocks; ++it) {
        balanced_block<T, O, SPGPU_BLOCK, SPGPU_BALANCED_ENTRIES, SPGPU_BALANCED_CHUNK, SPGPU_HOT_CHUNK_BATCH, false>(
            b, tid, prod[g], warp_sums[g], sync, row_offsets, col_indices, values, HotX<T, PREFETCH_X>{x, hot}, alpha, beta, y,
            block_row, block_entry, partials);
        if (tid == 0) {
            next[g][it & 1] = atomicAdd(counter, 1u) + gridDim.x * SPGPU_HOT_GROUPS;
        }
        sync();  // next is written, and prod and warp_sums can be reused
        b = next[g][it & 1];
    }
}

// On the device, hot-column storage back to plain columns (when another kernel is chosen):
// cols[i] = hot_cols[cols[i] & ~SPGPU_HOT_FLAG] for flagged entries (grid-stride).
__device__ __forceinline__ void unflag_hot(unsigned long long n, unsigned* __restrict__ cols,
                                           const unsigned* __restrict__ hot_cols) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned c = cols[i];
        if (c & SPGPU_HOT_FLAG) {
            cols[i] = hot_cols[c & ~SPGPU_HOT_FLAG];
        }
    }
}

// counts[cols[i]] += 1 for i < n (grid-stride; counts zeroed before): the entries of each
// column, counted at upload to choose the hot columns (src/gpu/hot.rs).
__device__ __forceinline__ void column_counts(unsigned long long n, const unsigned* __restrict__ cols,
                                              unsigned* __restrict__ counts) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        atomicAdd(counts + ldcs(cols + i), 1u);
    }
}

// Plain columns to hot-column storage, in place: cols[i] = SPGPU_HOT_FLAG | slots[cols[i]]
// where the column is hot (slots[c] != 0xffffffff), unchanged otherwise (grid-stride).
__device__ __forceinline__ void flag_hot(unsigned long long n, unsigned* __restrict__ cols,
                                         const unsigned* __restrict__ slots) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned s = ldg(slots + cols[i]);
        if (s != 0xffffffffu) {
            cols[i] = SPGPU_HOT_FLAG | s;
        }
    }
}

// Entries per chunk of a long row in the SELL kernel (CHUNK in src/gpu/sell.rs).
#define SPGPU_SELL_CHUNK 2048

// SELL-C-sigma with long rows apart (src/gpu/sell.rs describes the storage). The first
// gridDim.x - nslice_blocks blocks each sum one chunk of a long row into partials[chunk];
// the block of a long row's last chunk adds its chunks in order (chunk_done, as in the
// balanced kernel). The nslice_blocks blocks after them run SPGPU_BLOCK sorted rows each,
// one thread per row: a warp is a slice, and its threads walk their slice's slots
// column-major, so each step reads 32 consecutive slots (as ELL does). Chunks go first so
// that they run alongside the slices: after them (as before 2026-11-24), the chunks of
// circuit:3000000 (60 rows of 16K-90K entries, 15% of the entries) ran last, on a GPU
// emptying, and the kernel took 76.4 us (f32) and 104.5 us (f64) on the H200 instead of
// 71.7 and 100.5.
template <typename T, typename O, typename C>
__device__ __forceinline__ void sell(unsigned nsorted, unsigned nslice_blocks, const O* __restrict__ slice_ptr,
                                     const unsigned* __restrict__ perm, C cols, const T* __restrict__ vals, const T* __restrict__ x, T alpha, T beta,
                                     T* __restrict__ y, const O* __restrict__ chunk_entry,
                                     const unsigned* __restrict__ long_cols, const T* __restrict__ long_vals,
                                     const LongRows lr) {
    const unsigned tid = threadIdx.x;
    const unsigned nchunks = gridDim.x - nslice_blocks;
    if (blockIdx.x < nchunks) {
        const unsigned chunk = blockIdx.x;
        const O e0 = ldg(chunk_entry + chunk);
        const unsigned n = unsigned(ldg(chunk_entry + chunk + 1) - e0);  // at most SPGPU_SELL_CHUNK
        __shared__ acc_t warp_sums[SPGPU_BLOCK / 32];
        const acc_t sum = chunk_sum<T, SPGPU_SELL_CHUNK, SPGPU_BLOCK>(long_cols + e0, long_vals + e0, n,
                                                                       PlainX<T>{x}, alpha, tid, warp_sums, BlockSync{});
        if (tid < 32) {
            const unsigned j = find_long_row(lr, chunk);  // warp-uniform: every lane reads the same
            chunk_done(lr.partials, ldg(lr.rows + 3 * j), ldg(lr.rows + 3 * j + 1), ldg(lr.rows + 3 * j + 2), chunk,
                       sum, tid, alpha, beta, y);
        }
        return;
    }
    const unsigned p = (blockIdx.x - nchunks) * SPGPU_BLOCK + tid;
    if (p >= nsorted) {
        return;
    }
    const unsigned s = p / 32;
    const unsigned lane = p % 32;
    const O base = ldg(slice_ptr + s);
    const unsigned width = unsigned((ldg(slice_ptr + s + 1) - base) / 32);
    const unsigned row = ldg(perm + p);
    acc_t sum = 0;
    if (alpha != T(0)) {
        // the tie only in f32 (slot_batch, common.cuh)
        sum = slot_sum<SPGPU_SELL_BATCH, true, sizeof(T) == 4>(cols, vals, x, O(base + lane), O(32), width, row);
    }
    store_axpby(y, row, alpha, sum, beta);
}

// out[i] = in[i] for i < n, widened to 64 bits (grid-stride): 64-bit column indices for
// cuSPARSE's CUSPARSE_INDEX_64I, made on the device.
__device__ __forceinline__ void widen(unsigned long long n, const unsigned* __restrict__ in,
                                      unsigned long long* __restrict__ out) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        out[i] = in[i];
    }
}

// dst[i] = src[map[i]] for i < n (grid-stride), and 0 where map[i] is all ones (a padding
// slot): new values in CSR order (src) moved into the slots of ELL, SELL or column parts
// (DeviceCsr::update_values). I is the map's type (unsigned, or u64 past 2^32 entries).
// The map holds each slot's CSR position; writes are coalesced, reads are not.
template <typename T, typename I>
__device__ __forceinline__ void gather_values(unsigned long long n, const I* __restrict__ map,
                                              const T* __restrict__ src, T* __restrict__ dst) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const I j = map[i];
        dst[i] = j == (I)~(I)0 ? T(0) : src[j];
    }
}

// y[i] = value for i < n (a dense vector fill).
template <typename T>
__device__ __forceinline__ void fill(unsigned n, T value, T* __restrict__ y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = value;
    }
}

// Every SpMV kernel is compiled twice per scalar type: with 32-bit offsets (`unsigned`, the
// name without suffix) for matrices of at most INDEX_LIMIT entries, and with 64-bit offsets
// (`unsigned long long`, the name ending in `_i64`) past it. Row and column indices stay 32-bit.
typedef unsigned long long u64;

// ELLPACK slots from CSR, on the device (the upload's conversion, src/gpu/ell.rs): one
// thread per row writes the row's `width` slots, slot k of row r at k * nrows + r (64-bit
// arithmetic: a one-off pass), holding the row's k-th entry, or padding (column
// SPGPU_ELL_PADDING, or SPGPU_NARROW_PADDING as an offset; value 0) past the row's end.
// Narrow slots store col - r as 16 bits (the host checked that every entry fits).
struct WideSlot {
    typedef unsigned type;
    __device__ __forceinline__ unsigned of(unsigned col, unsigned) const { return col; }
    __device__ __forceinline__ unsigned padding() const { return SPGPU_ELL_PADDING; }
};
struct NarrowSlot {
    typedef unsigned short type;
    __device__ __forceinline__ unsigned short of(unsigned col, unsigned row) const {
        return (unsigned short)(col - row);
    }
    __device__ __forceinline__ unsigned short padding() const { return SPGPU_NARROW_PADDING; }
};
// FarSlot: NarrowSlot with a table of far columns (FarCols): an entry whose offset lies
// outside -(32767 - SPGPU_FAR_SLOTS)..32767 gets the code of its column's place in the
// sorted table `far` of nfar columns, which holds it (the upload made the table from these
// entries: src/gpu/narrow.rs, far_columns).
struct FarSlot {
    typedef unsigned short type;
    const unsigned* __restrict__ far;
    unsigned nfar;
    __device__ __forceinline__ unsigned short of(unsigned col, unsigned row) const {
        const int d = int(col - row);
        if (d >= -(32767 - int(SPGPU_FAR_SLOTS)) && d <= 32767) {
            return (unsigned short)d;
        }
        unsigned lo = 0, hi = nfar;  // the first place whose column is not below col
        while (lo < hi) {
            const unsigned mid = (lo + hi) / 2;
            if (ldg(far + mid) < col) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return (unsigned short)(SPGPU_FAR_CODE + lo);
    }
    __device__ __forceinline__ unsigned short padding() const { return SPGPU_NARROW_PADDING; }
};
// Slots slot0 + k * stride (k < width) of one row (`row`, its entries start..start + len of
// cols and vals): the row's k-th entry while k < len, padding after.
template <typename T, typename S>
__device__ __forceinline__ void write_slots(u64 slot0, u64 stride, unsigned width, unsigned row, u64 start, u64 len,
                                            const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                            typename S::type* __restrict__ out_cols, T* __restrict__ out_vals,
                                            const S enc) {
    for (unsigned k = 0; k < width; ++k) {
        const u64 slot = slot0 + u64(k) * stride;
        if (k < len) {
            out_cols[slot] = enc.of(ldcs(cols + start + k), row);
            out_vals[slot] = ldcs(vals + start + k);
        } else {
            out_cols[slot] = enc.padding();
            out_vals[slot] = T(0);
        }
    }
}

template <typename T, typename S>
__device__ __forceinline__ void ell_from_csr(unsigned nrows, unsigned width, const u64* __restrict__ row_offsets,
                                             const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                             typename S::type* __restrict__ out_cols, T* __restrict__ out_vals) {
    const unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows) {
        return;
    }
    const u64 start = row_offsets[r];
    write_slots<T, S>(r, nrows, width, r, start, row_offsets[r + 1] - start, cols, vals, out_cols, out_vals, S{});
}

// SELL-C-sigma slots from CSR, on the device (src/gpu/sell.rs's upload): one thread per
// sorted position p of the nslices * 32 (row perm[p] when p < nsorted, none past it) writes
// its lane of its slice's slots, slot k at slice_ptr[s] + k * 32 + lane: the row's k-th entry,
// or padding past its end (every slot of a lane with no row).
template <typename T, typename S>
__device__ __forceinline__ void sell_from_csr(unsigned nsorted, unsigned nslices, const u64* __restrict__ slice_ptr,
                                              const unsigned* __restrict__ perm, const u64* __restrict__ row_offsets,
                                              const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                              typename S::type* __restrict__ out_cols, T* __restrict__ out_vals,
                                              const S enc) {
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned s = p / 32, lane = p % 32;
    if (s >= nslices) {
        return;
    }
    const u64 base = slice_ptr[s];
    const unsigned width = unsigned((slice_ptr[s + 1] - base) / 32);
    unsigned row = 0;
    u64 start = 0, len = 0;
    if (p < nsorted) {
        row = perm[p];
        start = row_offsets[row];
        len = row_offsets[row + 1] - start;
    }
    write_slots<T, S>(base + lane, 32, width, row, start, len, cols, vals, out_cols, out_vals, enc);
}

#define SPGPU_CSR_ARGS(T, O)                                                                               \
    unsigned nrows, const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,          \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y
#define SPGPU_CSR_PASS row_offsets, col_indices, values, x, alpha, beta, y

#define SPGPU_VECTOR_KERNEL(T, N, O, SUFFIX)                                                               \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        spmv_csr_vector_tpr##N##_##T##SUFFIX(SPGPU_CSR_ARGS(T, O)) {                                       \
        csr_vector<T, N, O>(nrows, row_offsets, col_indices, values, x, alpha, beta, y);                   \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) spmv_csr16_vector_tpr##N##_##T##SUFFIX(      \
        unsigned nrows, const O *__restrict__ row_offsets, const unsigned short *__restrict__ col_offsets,  \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y) {       \
        csr_vector<T, N, O>(nrows, row_offsets, col_offsets, values, x, alpha, beta, y);                   \
    }

// The balanced kernel with row blocks of BT threads, ENTRIES entries and chunks of CHUNK
// (BLOCKS_PER_SM resident, registers capped to allow it), and its variant with prefetching
// gathers of x (SPGPU_BALANCED_PX_KERNEL).
#define SPGPU_BALANCED_SHAPE_KERNEL(T, O, SUFFIX, BT, ENTRIES, CHUNK, BLOCKS_PER_SM)                      \
    extern "C" __global__ void __launch_bounds__(BT, BLOCKS_PER_SM) spmv_csr_balanced##BT##_##T##SUFFIX( \
        const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,                     \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y,       \
        const unsigned *__restrict__ block_row, const O *__restrict__ block_entry,                       \
        acc_t *__restrict__ partials) {                                                                  \
        csr_balanced<T, O, BT, ENTRIES, CHUNK>(row_offsets, col_indices, values, x, alpha, beta, y,      \
                                               block_row, block_entry, partials);                        \
    }                                                                                                    \
    SPGPU_BALANCED_PX_KERNEL(spmv_csr_balanced##BT, T, O, SUFFIX, BT, ENTRIES, CHUNK, (BT, BLOCKS_PER_SM))

// The balanced kernel NAME with row blocks of BT threads, ENTRIES entries and chunks of CHUNK,
// launch bounds BOUNDS, gathering x with the L2 prefetch hint (ld_gather): NAME_px_<T>.
#define SPGPU_BALANCED_PX_KERNEL(NAME, T, O, SUFFIX, BT, ENTRIES, CHUNK, BOUNDS)                           \
    extern "C" __global__ void __launch_bounds__ BOUNDS NAME##_px_##T##SUFFIX(                            \
        const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,                     \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y,       \
        const unsigned *__restrict__ block_row, const O *__restrict__ block_entry,                       \
        acc_t *__restrict__ partials) {                                                                  \
        csr_balanced<T, O, BT, ENTRIES, CHUNK, false, true>(row_offsets, col_indices, values, x, alpha,  \
                                                            beta, y, block_row, block_entry, partials); \
    }

// The hot-column kernel NAME, with PREFETCH_X.
#define SPGPU_HOT_KERNEL(NAME, T, O, PREFETCH_X)                                                           \
    extern "C" __global__ void __launch_bounds__(SPGPU_HOT_GROUPS * SPGPU_BLOCK, SPGPU_HOT_BLOCKS_PER_SM)  \
        NAME(const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,                \
             const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y,  \
             const unsigned *__restrict__ block_row, const O *__restrict__ block_entry,                  \
             acc_t *__restrict__ partials, unsigned nblocks, const T *__restrict__ hot_x, unsigned nhot, \
             unsigned *__restrict__ counter) {                                                           \
        csr_hot<T, O, PREFETCH_X>(row_offsets, col_indices, values, x, alpha, beta, y, block_row,        \
                                  block_entry, partials, nblocks, hot_x, nhot, counter);                 \
    }

// The SELL kernel NAME, its slot columns passed as COLS_PARAM and read through COLS (a reader
// of common.cuh's WideCols / NarrowCols / FarCols kind); EXTRA_PARAMS: further parameters
// after the long rows (with a leading SPGPU_COMMA), or nothing.
#define SPGPU_COMMA ,
#define SPGPU_SELL_KERNEL(NAME, T, O, COLS_PARAM, COLS, EXTRA_PARAMS)                                     \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        NAME(unsigned nsorted, unsigned nslice_blocks, const O *__restrict__ slice_ptr,                   \
             const unsigned *__restrict__ perm, COLS_PARAM, const T *__restrict__ vals,                  \
             const T *__restrict__ x, T alpha, T beta, T *__restrict__ y, const O *__restrict__ chunk_entry, \
             const unsigned *__restrict__ long_cols, const T *__restrict__ long_vals,                    \
             acc_t *__restrict__ partials, unsigned nlong, const unsigned *__restrict__ long_rows EXTRA_PARAMS) { \
        sell<T, O>(nsorted, nslice_blocks, slice_ptr, perm, COLS, vals, x, alpha, beta, y, chunk_entry,  \
                   long_cols, long_vals, LongRows{nlong, long_rows, partials});                          \
    }

// The SpMV kernels of one scalar type and one offset type O (name suffix SUFFIX).
#define SPGPU_SPMV_KERNELS(T, O, SUFFIX)                                                                   \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        spmv_csr_scalar_##T##SUFFIX(SPGPU_CSR_ARGS(T, O)) {                                                \
        csr_scalar<T, O>(nrows, SPGPU_CSR_PASS);                                                           \
    }                                                                                                      \
    SPGPU_VECTOR_KERNEL(T, 2, O, SUFFIX)                                                                   \
    SPGPU_VECTOR_KERNEL(T, 4, O, SUFFIX)                                                                   \
    SPGPU_VECTOR_KERNEL(T, 8, O, SUFFIX)                                                                   \
    SPGPU_VECTOR_KERNEL(T, 16, O, SUFFIX)                                                                  \
    SPGPU_VECTOR_KERNEL(T, 32, O, SUFFIX)                                                                  \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        spmv_ell_##T##SUFFIX(unsigned nrows, unsigned width, const unsigned *__restrict__ col_indices,    \
                             const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta,      \
                             T *__restrict__ y) {                                                          \
        ell<T, O>(nrows, width, WideCols{col_indices}, values, x, alpha, beta, y);                         \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        spmv_ell16_##T##SUFFIX(unsigned nrows, unsigned width, const unsigned short *__restrict__ col_offsets, \
                               const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta,    \
                               T *__restrict__ y) {                                                        \
        ell<T, O>(nrows, width, NarrowCols{col_offsets}, values, x, alpha, beta, y);                       \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) spmv_csr_balanced_##T##SUFFIX(            \
        const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,                     \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y,       \
        const unsigned *__restrict__ block_row, const O *__restrict__ block_entry,                       \
        acc_t *__restrict__ partials) {                                                                  \
        csr_balanced<T, O, SPGPU_BLOCK, SPGPU_BALANCED_ENTRIES, SPGPU_BALANCED_CHUNK>(                   \
            row_offsets, col_indices, values, x, alpha, beta, y, block_row, block_entry, partials);        \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) spmv_csr_balanced_sweep_##T##SUFFIX(      \
        const O *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,                     \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y,       \
        const unsigned *__restrict__ block_row, const O *__restrict__ block_entry,                       \
        acc_t *__restrict__ partials) {                                                                  \
        csr_balanced<T, O, SPGPU_BLOCK, SPGPU_BALANCED_ENTRIES, SPGPU_BALANCED_CHUNK, true>(             \
            row_offsets, col_indices, values, x, alpha, beta, y, block_row, block_entry, partials);        \
    }                                                                                                    \
    SPGPU_BALANCED_SHAPE_KERNEL(T, O, SUFFIX, 512, 2048, 2048, 4)                                          \
    SPGPU_BALANCED_PX_KERNEL(spmv_csr_balanced, T, O, SUFFIX, SPGPU_BLOCK, SPGPU_BALANCED_ENTRIES,         \
                             SPGPU_BALANCED_CHUNK, (SPGPU_BLOCK))                                          \
    SPGPU_HOT_KERNEL(spmv_csr_hot_##T##SUFFIX, T, O, false)                                                \
    SPGPU_HOT_KERNEL(spmv_csr_hot_px_##T##SUFFIX, T, O, true)                                              \
    SPGPU_SELL_KERNEL(spmv_sell_##T##SUFFIX, T, O, const unsigned *__restrict__ cols, WideCols{cols}, )         \
    SPGPU_SELL_KERNEL(spmv_sell16_##T##SUFFIX, T, O, const unsigned short *__restrict__ col_offsets,              \
                      NarrowCols{col_offsets}, )                                                                 \
    SPGPU_SELL_KERNEL(spmv_sell16f_##T##SUFFIX, T, O, const unsigned short *__restrict__ col_offsets,             \
                      (FarCols{col_offsets, far}), SPGPU_COMMA const unsigned *__restrict__ far)

#define SPGPU_KERNELS(T)                                                                                   \
    SPGPU_SPMV_KERNELS(T, unsigned, )                                                                      \
    SPGPU_SPMV_KERNELS(T, u64, _i64)                                                                       \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) gather_##T(                                 \
        unsigned n, const unsigned *__restrict__ idx, const T *__restrict__ x, T *__restrict__ out,      \
        unsigned *__restrict__ counter) {                                                                \
        const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (i == 0) {                                                                                    \
            *counter = 0;                                                                                \
        }                                                                                                \
        if (i < n) {                                                                                     \
            out[i] = ldg(x + ldg(idx + i));                                                              \
        }                                                                                                \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) ell_from_csr_##T(                          \
        unsigned nrows, unsigned width, const u64 *__restrict__ row_offsets,                             \
        const unsigned *__restrict__ cols, const T *__restrict__ vals, unsigned *__restrict__ out_cols,  \
        T *__restrict__ out_vals) {                                                                      \
        ell_from_csr<T, WideSlot>(nrows, width, row_offsets, cols, vals, out_cols, out_vals);            \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) ell16_from_csr_##T(                        \
        unsigned nrows, unsigned width, const u64 *__restrict__ row_offsets,                             \
        const unsigned *__restrict__ cols, const T *__restrict__ vals,                                   \
        unsigned short *__restrict__ out_cols, T *__restrict__ out_vals) {                               \
        ell_from_csr<T, NarrowSlot>(nrows, width, row_offsets, cols, vals, out_cols, out_vals);          \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) sell_from_csr_##T(                         \
        unsigned nsorted, unsigned nslices, const u64 *__restrict__ slice_ptr,                           \
        const unsigned *__restrict__ perm, const u64 *__restrict__ row_offsets,                          \
        const unsigned *__restrict__ cols, const T *__restrict__ vals, unsigned *__restrict__ out_cols,  \
        T *__restrict__ out_vals) {                                                                      \
        sell_from_csr<T, WideSlot>(nsorted, nslices, slice_ptr, perm, row_offsets, cols, vals, out_cols, \
                                   out_vals, WideSlot{});                                                \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) sell16_from_csr_##T(                       \
        unsigned nsorted, unsigned nslices, const u64 *__restrict__ slice_ptr,                           \
        const unsigned *__restrict__ perm, const u64 *__restrict__ row_offsets,                          \
        const unsigned *__restrict__ cols, const T *__restrict__ vals,                                   \
        unsigned short *__restrict__ out_cols, T *__restrict__ out_vals) {                               \
        sell_from_csr<T, NarrowSlot>(nsorted, nslices, slice_ptr, perm, row_offsets, cols, vals,         \
                                     out_cols, out_vals, NarrowSlot{});                                  \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) sell16f_from_csr_##T(                      \
        unsigned nsorted, unsigned nslices, const u64 *__restrict__ slice_ptr,                           \
        const unsigned *__restrict__ perm, const u64 *__restrict__ row_offsets,                          \
        const unsigned *__restrict__ cols, const T *__restrict__ vals,                                   \
        unsigned short *__restrict__ out_cols, T *__restrict__ out_vals, const unsigned *__restrict__ far, \
        unsigned nfar) {                                                                                 \
        sell_from_csr<T, FarSlot>(nsorted, nslices, slice_ptr, perm, row_offsets, cols, vals, out_cols,  \
                                  out_vals, FarSlot{far, nfar});                                         \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) update_values_##T(                         \
        unsigned long long n, const unsigned *__restrict__ map, const T *__restrict__ src,               \
        T *__restrict__ dst) {                                                                           \
        gather_values<T, unsigned>(n, map, src, dst);                                                    \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) update_values_##T##_i64(                   \
        unsigned long long n, const u64 *__restrict__ map, const T *__restrict__ src,                    \
        T *__restrict__ dst) {                                                                           \
        gather_values<T, u64>(n, map, src, dst);                                                         \
    }                                                                                                    \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) fill_vector_##T(unsigned n, T value,        \
                                                                               T *__restrict__ y) {       \
        fill<T>(n, value, y);                                                                              \
    }

SPGPU_KERNELS(f32)
SPGPU_KERNELS(f64)

extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)
    unflag_hot_columns(unsigned long long n, unsigned* __restrict__ cols, const unsigned* __restrict__ hot_cols) {
    unflag_hot(n, cols, hot_cols);
}

extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)
    count_columns(unsigned long long n, const unsigned* __restrict__ cols, unsigned* __restrict__ counts) {
    column_counts(n, cols, counts);
}

extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)
    flag_hot_columns(unsigned long long n, unsigned* __restrict__ cols, const unsigned* __restrict__ slots) {
    flag_hot(n, cols, slots);
}

extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)
    widen_u32_u64(unsigned long long n, const unsigned* __restrict__ in, u64* __restrict__ out) {
    widen(n, in, out);
}
