// Shared device helpers of spgpu's kernels.
//
// Conventions every kernel follows:
// - indices are 32-bit unsigned (the host validates every count against INDEX_LIMIT =
//   i32::MAX, so no index or `slot + nrows` sum below overflows 32 bits);
// - read-only arrays are `const T* __restrict__` and read through the read-only data cache
//   (`__ldg`);
// - `y = alpha*A*x + beta*y` with BLAS semantics: `alpha == 0` never reads `A` or `x`,
//   `beta == 0` never reads `y` (NaN in `y` does not spread);
// - sums are accumulated in double precision for both f32 and f64 (`acc_t`): SpMV is
//   memory-bound, so the wider accumulator costs no time and keeps f32 results of long rows
//   within 1e-5 of the f64 reference.
#pragma once

typedef float f32;
typedef double f64;

// The column index of an ELLPACK padding slot (ELL_PADDING on the Rust side).
#define SPGPU_ELL_PADDING 0xffffffffu

// Threads per block of every one-dimensional launch (SPMV_BLOCK on the Rust side).
#define SPGPU_BLOCK 256

// The accumulator type: double for both element types.
typedef double acc_t;

// A read of read-only data through the non-coherent (texture) cache.
template <typename T>
__device__ __forceinline__ T ldg(const T* __restrict__ p) {
    return __ldg(p);
}

// A read of data used once (a matrix's columns and values): cached with the evict-first
// (streaming) policy, so it does not displace data that is read again (x).
template <typename T>
__device__ __forceinline__ T ldcs(const T* __restrict__ p) {
    return __ldcs(p);
}

// A read of a CSR kernel's columns or values (one long stream per row or row block):
// evict-first like ldcs, and in the PTX for sm_80 and newer (ptx/<stem>.sm80.ptx, made with
// -arch=compute_80) with a 128-byte L2 prefetch hint (ld.global.cs.L2::128B), so that the L2
// fills each 128-byte line from DRAM at once instead of in 64-byte halves (the driver's
// default granularity on the H100): fewer L2 fills leave more of the L2's throughput to the
// gathers of x. Not used for SELL and ELL slots, where it did not pay (geo:4000000 f32
// 2% slower on the H100); SELL's long-row chunks (chunk_sum) do use it.
template <typename T>
__device__ __forceinline__ T ld_stream(const T* __restrict__ p) {
    return __ldcs(p);
}
// (The hint needs PTX ISA 7.4, from nvcc 11.4 on; an older nvcc makes the variant without it.)
#if __CUDA_ARCH__ >= 800 && (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 4))
#define SPGPU_L2_PREFETCH 1
#else
#define SPGPU_L2_PREFETCH 0
#endif
#if SPGPU_L2_PREFETCH
#define SPGPU_LD_STREAM(TYPE, PTX_TYPE, CONSTRAINT)                                              \
    __device__ __forceinline__ TYPE ld_stream(const TYPE* __restrict__ p) {                      \
        TYPE r;                                                                                  \
        asm volatile("ld.global.cs.L2::128B." PTX_TYPE " %0, [%1];" : "=" CONSTRAINT(r) : "l"(p)); \
        return r;                                                                                \
    }
SPGPU_LD_STREAM(float, "f32", "f")
SPGPU_LD_STREAM(double, "f64", "d")
SPGPU_LD_STREAM(unsigned, "u32", "r")
SPGPU_LD_STREAM(unsigned short, "u16", "h")
#undef SPGPU_LD_STREAM
#endif

// Four consecutive entries of a stream from p (16-byte aligned for columns and f32 values,
// two 16-byte loads for f64 values), read as ld_stream reads one: the balanced kernels' stream
// blocks (spmv.cu, load_quad).
#if SPGPU_L2_PREFETCH
#define SPGPU_LD_STREAM4(TYPE, VEC, PTX_TYPE, C)                                                            \
    __device__ __forceinline__ void ld_stream4(const TYPE* __restrict__ p, TYPE(&r)[4]) {                     \
        asm volatile("ld.global.cs.L2::128B.v4." PTX_TYPE " {%0, %1, %2, %3}, [%4];"                          \
                     : "=" C(r[0]), "=" C(r[1]), "=" C(r[2]), "=" C(r[3])                                     \
                     : "l"(p));                                                                               \
    }
#else
#define SPGPU_LD_STREAM4(TYPE, VEC, PTX_TYPE, C)                                                            \
    __device__ __forceinline__ void ld_stream4(const TYPE* __restrict__ p, TYPE(&r)[4]) {                     \
        const VEC q = __ldcs(reinterpret_cast<const VEC*>(p));                                               \
        r[0] = q.x, r[1] = q.y, r[2] = q.z, r[3] = q.w;                                                      \
    }
#endif
SPGPU_LD_STREAM4(unsigned, uint4, "u32", "r")
SPGPU_LD_STREAM4(float, float4, "f32", "f")
#undef SPGPU_LD_STREAM4
__device__ __forceinline__ void ld_stream4(const double* __restrict__ p, double (&r)[4]) {
#if SPGPU_L2_PREFETCH
    asm volatile("ld.global.cs.L2::128B.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
    asm volatile("ld.global.cs.L2::128B.v2.f64 {%0, %1}, [%2];" : "=d"(r[2]), "=d"(r[3]) : "l"(p + 2));
#else
    const double2 a = __ldcs(reinterpret_cast<const double2*>(p));
    const double2 b = __ldcs(reinterpret_cast<const double2*>(p + 2));
    r[0] = a.x, r[1] = a.y, r[2] = b.x, r[3] = b.y;
#endif
}

// A gather of x (read again by other entries: through the non-coherent cache, ldg). With
// PREFETCH, in the PTX for sm_80 and newer, with the same 128-byte L2 prefetch hint as
// ld_stream (ld.global.nc.L2::128B): the balanced kernels' variants `_px`, which the plan
// runs when x takes 40% to 65% of the L2 (85% in blocks of 512 threads; src/gpu/balance.rs,
// PREFETCH_X_L2_SHARE and PREFETCH_X_LOCAL_MAX_SHARE). There
// the matrix streams evict part of x between its reads, and a miss that fills the whole
// 128-byte line brings back the neighbours that later gathers read. Past that, where less
// of x stays, the extra 64 bytes are mostly wasted DRAM traffic (up to 25% slower on the
// H100 with x at 2.6 times the L2).
template <bool PREFETCH, typename T>
__device__ __forceinline__ T ld_gather(const T* __restrict__ p) {
    return __ldg(p);
}
#if SPGPU_L2_PREFETCH
#define SPGPU_LD_GATHER(TYPE, PTX_TYPE, CONSTRAINT)                                              \
    template <>                                                                                  \
    __device__ __forceinline__ TYPE ld_gather<true, TYPE>(const TYPE* __restrict__ p) {          \
        TYPE r;                                                                                  \
        asm("ld.global.nc.L2::128B." PTX_TYPE " %0, [%1];" : "=" CONSTRAINT(r) : "l"(p));         \
        return r;                                                                                \
    }
SPGPU_LD_GATHER(float, "f32", "f")
SPGPU_LD_GATHER(double, "f64", "d")
#undef SPGPU_LD_GATHER
#endif

// The two ways ELL and SELL slots store their columns (src/gpu/narrow.rs on the Rust side).
// `load<STREAM>(slot)` reads a slot's stored code (`raw_t`; STREAM reads with the evict-first
// policy, ldcs, instead of ldg), and `decode(raw, row, col)` says whether the code, in a slot
// of row `row`, is an entry, and puts its column in `col`. PADDING is the code of padding.
//
// WideCols: the column itself, SPGPU_ELL_PADDING in padding slots.
struct WideCols {
    static constexpr bool NARROW = false;
    const unsigned* __restrict__ c;
    typedef unsigned raw_t;
    static constexpr raw_t PADDING = SPGPU_ELL_PADDING;
    template <bool STREAM, typename S>
    __device__ __forceinline__ raw_t load(S slot) const {
        return STREAM ? ldcs(c + slot) : ldg(c + slot);
    }
    __device__ __forceinline__ bool decode(raw_t raw, unsigned, unsigned& col) const {
        col = raw;
        return raw != SPGPU_ELL_PADDING;
    }
};

// The 16-bit padding of NarrowCols (NARROW_PADDING on the Rust side): -32768, which no
// offset takes.
#define SPGPU_NARROW_PADDING 0x8000u

// NarrowCols: the column's offset from the row, `col - row` in -32767..=32767, as a 16-bit
// two's complement; SPGPU_NARROW_PADDING in padding slots. For matrices whose entries all lie
// that close to the diagonal (grids, meshes, banded systems), a slot then takes 2 bytes
// fewer of the memory traffic.
struct NarrowCols {
    static constexpr bool NARROW = true;
    const unsigned short* __restrict__ c;
    typedef unsigned short raw_t;
    static constexpr raw_t PADDING = SPGPU_NARROW_PADDING;
    template <bool STREAM, typename S>
    __device__ __forceinline__ raw_t load(S slot) const {
        return STREAM ? ldcs(c + slot) : ldg(c + slot);
    }
    __device__ __forceinline__ bool decode(raw_t d, unsigned row, unsigned& col) const {
        col = row + unsigned(int(short(d)));
        return d != SPGPU_NARROW_PADDING;
    }
};

// The most far columns of a FarCols table (FAR_SLOTS on the Rust side), and the slot of the
// first (FAR_CODE).
#define SPGPU_FAR_SLOTS 255u
#define SPGPU_FAR_CODE 0x8001u

// FarCols: NarrowCols whose slots SPGPU_FAR_CODE + k (k < SPGPU_FAR_SLOTS, offsets -32767 to -32513,
// which the other offsets then leave out) name column far[k] of a table of far columns: for
// SELL slots of a band whose rows also hold entries in a few far columns (the power and
// ground nets of a circuit).
struct FarCols {
    static constexpr bool NARROW = true;
    const unsigned short* __restrict__ c;
    const unsigned* __restrict__ far;
    typedef unsigned short raw_t;
    static constexpr raw_t PADDING = SPGPU_NARROW_PADDING;
    template <bool STREAM, typename S>
    __device__ __forceinline__ raw_t load(S slot) const {
        return STREAM ? ldcs(c + slot) : ldg(c + slot);
    }
    __device__ __forceinline__ bool decode(raw_t d, unsigned row, unsigned& col) const {
        const unsigned code = unsigned(d) - SPGPU_FAR_CODE;
        col = code < SPGPU_FAR_SLOTS ? ldg(far + code) : row + unsigned(int(short(d)));
        return d != SPGPU_NARROW_PADDING;
    }
};

// Writes `y[row] = alpha*sum + beta*y[row]`, never reading `y[row]` when `beta == 0` and
// never using `sum` when `alpha == 0`.
template <typename T>
__device__ __forceinline__ void store_axpby(T* __restrict__ y, unsigned row, T alpha, acc_t sum, T beta) {
    acc_t r = alpha != T(0) ? acc_t(alpha) * sum : acc_t(0);
    if (beta != T(0)) {
        r += acc_t(beta) * acc_t(y[row]);
    }
    y[row] = T(r);
}

// Sums `v` over each aligned group of `WIDTH` lanes of a warp (WIDTH a power of two, at
// most 32); lane 0 of each group gets the total. Every lane of the warp must call it.
template <unsigned WIDTH>
__device__ __forceinline__ acc_t group_sum(acc_t v) {
#pragma unroll
    for (unsigned offset = WIDTH / 2; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffffu, v, offset, WIDTH);
    }
    return v;
}

// Slots per batch of slot_sum: 8 in the ELL kernels, 4 in the SELL kernels. H200, two
// rounds, 26 ELL and SELL matrices (2026-11-26, docs/gpu-notes.md): SELL with
// 8 lost 2-6% in f32 on the circuits and 3% on stencil27:100 against 4; ELL with 4 lost on
// long rows (longrows:50000:7 f32 214.8 against 191.0 us) and lap2d (50.2 against 46.1 us).
#define SPGPU_ELL_BATCH 8
#define SPGPU_SELL_BATCH 4

// The low 32 bits of a value.
__device__ __forceinline__ unsigned low_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned low_bits(double v) { return unsigned(__double_as_longlong(v)); }

// `code` made to depend on the load of `value` without changing it: `zero` is 0 at run time,
// but the compiler cannot know it (the tie of slot_batch below and of load_quad in
// spmv.cu; why, there).
template <typename R, typename T>
__device__ __forceinline__ R tied(R code, T value, unsigned zero) {
    return R(low_bits(value) & zero) + code;
}

// One batch of slot_sum: slots slot + j * stride for j < n (n <= BATCH; FULL: n == BATCH, and
// no slot is checked). Every column and value is loaded first, then the gathers of x.
//
// `zero` is 0, but the compiler cannot know it: each slot's column code gets
// `low_bits(value) & zero` added, so that it depends on the value's load. Without that tie,
// ptxas issued some of a batch's value loads only after a load that waits for the columns
// (a far-column table read or a gather): two DRAM round trips per batch instead of one. That
// is what Nsight Compute's stall samples showed for the old loop on circuit:3000000 (H200,
// 2026-11-26), and nvcc 11.8's SASS of the batched loop without the tie. With it, the
// driver-compiled SASS issues the batch's column and value loads together. The sums do not
// change: the code is the same number. TIE turns it off: the SELL kernels tie only in f32
// (f64 untied, H100, two rounds, 16 SELL matrices, 2026-11-26, docs/gpu-notes.md:
// 0.995x the time in geometric mean, banded:300000:100 0.971x, random geometric graphs
// 0.987x-0.994x, circuits 1.000x-1.009x; on the H200 the untied batches of a second run had been
// faster there too).
template <unsigned BATCH, bool FULL, bool STREAM, bool TIE, typename T, typename S, typename C>
__device__ __forceinline__ void slot_batch(C cols, const T* __restrict__ vals, const T* __restrict__ x, S slot,
                                           S stride, unsigned n, unsigned row, unsigned zero, acc_t& sum) {
    typename C::raw_t raw[BATCH];
    T v[BATCH];
#pragma unroll
    for (unsigned j = 0; j < BATCH; ++j) {
        raw[j] = C::PADDING;
        v[j] = T(0);
        if (FULL || j < n) {
            raw[j] = cols.template load<STREAM>(slot + j * stride);
            v[j] = STREAM ? ldcs(vals + slot + j * stride) : ldg(vals + slot + j * stride);
        }
    }
#pragma unroll
    for (unsigned j = 0; j < BATCH; ++j) {
        unsigned c;
        if (TIE) {
            raw[j] = tied(raw[j], v[j], zero);
        }
        if (cols.decode(raw[j], row, c)) {
            sum += acc_t(v[j]) * acc_t(ldg(x + c));
        }
    }
}

// The sum of one row's `width` slots slot, slot + stride, ... (ELL and SELL; `width` is the
// same for every thread of a warp): whole batches of BATCH slots, then one batch of the
// slots left, each batch's loads before its gathers. The products are added in slot order.
// Before 2026-11-26 the loop was `#pragma unroll 4` over single slots: its remainder loop
// waited for each slot's column before loading the slot's value and x: about half of the
// stall samples on lap3d:150 (7 slots), a quarter on circuit:3000000 and a fifth on
// geo:4000000 were in that loop. H200, against it (same runs as above): circuits
// 0.90x-0.92x the time in f32 and 0.92x-0.95x in f64, lap3d:150 f32 0.83x, stencil27:100
// f32 0.91x, geometric mean 0.93x (f32) and 0.97x-0.98x (f64).
template <unsigned BATCH, bool STREAM, bool TIE, typename T, typename S, typename C>
__device__ __forceinline__ acc_t slot_sum(C cols, const T* __restrict__ vals, const T* __restrict__ x, S slot,
                                          S stride, unsigned width, unsigned row) {
    const unsigned zero = row >> 31;  // rows are below 2^31 (INDEX_LIMIT)
    acc_t sum = 0;
    unsigned k = 0;
#pragma unroll 1
    for (; k + BATCH <= width; k += BATCH, slot += BATCH * stride) {
        slot_batch<BATCH, true, STREAM, TIE>(cols, vals, x, slot, stride, BATCH, row, zero, sum);
    }
    if (k < width) {
        slot_batch<BATCH, false, STREAM, TIE>(cols, vals, x, slot, stride, width - k, row, zero, sum);
    }
    return sum;
}
