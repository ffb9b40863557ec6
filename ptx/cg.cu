// Device kernels of the conjugate-gradient solver (src/solver, launched from
// src/gpu/kernels/blas.rs).
//
// The iteration's scalars live in a small device array `s` of doubles (slots S_* below),
// so an iteration never copies anything to the host: each reduction finishes on the device
// and derives the next scalar there (alpha = rho / p'Ap, beta = rho' / rho), and every
// kernel first reads the status slot and returns at once when the solve has stopped
// (converged, breakdown, non-finite). The host may thus enqueue several iterations between
// two checkpoints and still stop at the exact iteration.
//
// Reductions are deterministic: each block sums its grid-stride share (several elements
// per thread), reduces it with warp shuffles and one shared-memory step, and stores its
// partial; the block that finishes last (an integer atomic ticket, no floating-point
// atomics) adds the partials in a fixed order. The grid size depends on the vector length
// only (cg_grid on the Rust side), so a run repeats bit for bit.
//
// Sums and scalars are double for both element types; vector updates round to T.
//
// Lengths are 32-bit `unsigned` (the launchers refuse anything above UINT_MAX), but every
// grid-stride loop walks them with a 64-bit index (GRID_STRIDE below): a 32-bit index
// would wrap for lengths above 2^32 - (grid * block) and loop forever.
#include "common.cuh"

// Most blocks of a reduction (CG_MAX_BLOCKS on the Rust side).
#define CG_MAX_BLOCKS 1024
#define CG_WARPS (SPGPU_BLOCK / 32)

// Slots of the scalar array (CG_SLOT_* on the Rust side).
#define S_RHO 0
#define S_PAP 1
#define S_ALPHA 2
#define S_BETA 3
#define S_RR 4
#define S_TOL2 5
#define S_STATUS 6
#define S_ITER 7
#define S_DOT 8
#define S_NORM_SCALE 9
#define S_NORM_SSQ 10

// Status codes (Status::from_code on the Rust side).
#define ST_RUNNING 0.0
#define ST_CONVERGED 1.0
#define ST_BREAKDOWN 2.0
#define ST_NONFINITE 3.0

// How the preconditioner enters (PrecondForm on the Rust side).
#define MODE_IDENTITY 0
#define MODE_DIAGONAL 1
#define MODE_GENERAL 2

// How two pairs of partial results combine: sums (SumPair) or scaled sums of squares
// (NormPair, see nrm_merge). Every reduction below is generic over it.
struct SumPair {
    __device__ __forceinline__ void operator()(double& a, double& b, double a2, double b2) const {
        a += a2;
        b += b2;
    }
};

// One warp's pairs combined; lane 0 ends with the totals. Every lane must call it.
template <typename Merge>
__device__ __forceinline__ void warp_reduce2(double& a, double& b, Merge merge) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const double a2 = __shfl_down_sync(0xffffffffu, a, offset);
        const double b2 = __shfl_down_sync(0xffffffffu, b, offset);
        merge(a, b, a2, b2);
    }
}

// Combines the pairs (a, b) of the block (blockDim.x == SPGPU_BLOCK); thread 0 ends with
// the totals. Every thread of the block must call it.
template <typename Merge>
__device__ __forceinline__ void block_reduce2(double& a, double& b, Merge merge) {
    __shared__ double sh[2 * CG_WARPS];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    warp_reduce2(a, b, merge);
    __syncthreads();  // an earlier call may still be reading sh
    if (lane == 0) {
        sh[warp] = a;
        sh[CG_WARPS + warp] = b;
    }
    __syncthreads();
    if (warp == 0) {
        a = lane < CG_WARPS ? sh[lane] : 0.0;
        b = lane < CG_WARPS ? sh[CG_WARPS + lane] : 0.0;
        warp_reduce2(a, b, merge);
    }
}

// Sums a and b over the block; thread 0 ends with the totals.
__device__ __forceinline__ void block_sum2(double& a, double& b) { block_reduce2(a, b, SumPair()); }

// Thread 0 stores the block's totals (a, b) as partials; returns true, in every thread, in
// the one block that finishes last.
__device__ __forceinline__ bool last_block(double a, double b, double* partials, unsigned* ticket) {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = a;
        partials[CG_MAX_BLOCKS + blockIdx.x] = b;
        __threadfence();
        const unsigned done = atomicAdd(ticket, 1u);
        is_last = done == gridDim.x - 1;
    }
    __syncthreads();
    return is_last;
}

// In the last block: the totals over all blocks, combined in a fixed order (thread 0 ends
// with them), and the ticket reset for the next reduction.
template <typename Merge>
__device__ __forceinline__ void grid_reduce2(double& a, double& b, const double* partials, unsigned* ticket,
                                             Merge merge) {
    __threadfence();
    a = 0.0;
    b = 0.0;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
        merge(a, b, __ldcg(&partials[i]), __ldcg(&partials[CG_MAX_BLOCKS + i]));
    }
    block_reduce2(a, b, merge);
    if (threadIdx.x == 0) {
        *ticket = 0;
    }
}

// In the last block: the sums over all blocks (see grid_reduce2).
__device__ __forceinline__ void grid_totals(double& a, double& b, const double* partials, unsigned* ticket) {
    grid_reduce2(a, b, partials, ticket, SumPair());
}

__device__ __forceinline__ bool stopped(const double* s) {
    return s[S_STATUS] != ST_RUNNING;
}

// A grid-stride loop over [0, n) with a 64-bit index (see the top of the file).
typedef unsigned long long idx_t;
#define GRID_STRIDE(i, n)                                                                        \
    for (idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x, i##_end = (idx_t)(n); i < i##_end; \
         i += (idx_t)gridDim.x * blockDim.x)

// z as the mode defines it: dinv .* r, r, or the vector z.
template <typename T>
__device__ __forceinline__ T precond_z(int mode, T ri, const T* __restrict__ z, const T* __restrict__ dinv,
                                       idx_t i) {
    return mode == MODE_DIAGONAL ? ldg(dinv + i) * ri : (mode == MODE_GENERAL ? ldg(z + i) : ri);
}

// After the reduction of p'Ap: alpha = rho / p'Ap, or the status that stops the solve.
__device__ __forceinline__ void finish_alpha(double* s, double pap) {
    s[S_PAP] = pap;
    if (!isfinite(pap)) {
        s[S_STATUS] = ST_NONFINITE;
    } else if (pap <= 0.0) {
        s[S_STATUS] = ST_BREAKDOWN;
    } else {
        s[S_ALPHA] = s[S_RHO] / pap;
    }
}

// p = z, rho = r'z, rr = r'r, iteration 0; converged when rr <= tol2.
template <typename T>
__device__ void cg_start(unsigned n, const T* __restrict__ r, const T* __restrict__ z, const T* __restrict__ dinv,
                         int mode, T* __restrict__ p, double tol2, double* s, double* partials, unsigned* ticket,
                         double* hist, unsigned hist_cap) {
    double rz = 0.0, rr = 0.0;
    GRID_STRIDE(i, n) {
        const T ri = r[i];
        const T zi = precond_z(mode, ri, z, dinv, i);
        p[i] = zi;
        rz += double(ri) * double(zi);
        rr += double(ri) * double(ri);
    }
    block_sum2(rz, rr);
    if (!last_block(rz, rr, partials, ticket)) return;
    grid_totals(rz, rr, partials, ticket);
    if (threadIdx.x == 0) {
        s[S_TOL2] = tol2;
        s[S_RHO] = rz;
        s[S_RR] = rr;
        s[S_ITER] = 0.0;
        if (hist_cap > 0) hist[0] = rr;
        s[S_STATUS] = !(isfinite(rr) && isfinite(rz)) ? ST_NONFINITE : (rr <= tol2 ? ST_CONVERGED : ST_RUNNING);
    }
}

// p'q reduced into alpha.
template <typename T>
__device__ void cg_alpha(unsigned n, const T* __restrict__ p, const T* __restrict__ q, double* s, double* partials,
                         unsigned* ticket) {
    if (stopped(s)) return;
    double pq = 0.0, unused = 0.0;
    GRID_STRIDE(i, n) { pq += double(p[i]) * double(q[i]); }
    block_sum2(pq, unused);
    if (!last_block(pq, unused, partials, ticket)) return;
    grid_totals(pq, unused, partials, ticket);
    if (threadIdx.x == 0) finish_alpha(s, pq);
}

// q = A p for CSR (one thread per row, row sums in double) fused with p'q -> alpha.
template <typename T>
__device__ void cg_spmv_csr_alpha(unsigned nrows, const unsigned* __restrict__ offsets,
                                  const unsigned* __restrict__ cols, const T* __restrict__ vals,
                                  const T* __restrict__ p, T* __restrict__ q, double* s, double* partials,
                                  unsigned* ticket) {
    if (stopped(s)) return;
    double pq = 0.0, unused = 0.0;
    GRID_STRIDE(row, nrows) {
        const unsigned end = ldg(offsets + row + 1);
        acc_t sum = 0.0;
        for (unsigned k = ldg(offsets + row); k < end; ++k) {
            sum += acc_t(ldg(vals + k)) * acc_t(ldg(p + ldg(cols + k)));
        }
        const T qi = T(sum);
        q[row] = qi;
        pq += double(ldg(p + row)) * double(qi);
    }
    block_sum2(pq, unused);
    if (!last_block(pq, unused, partials, ticket)) return;
    grid_totals(pq, unused, partials, ticket);
    if (threadIdx.x == 0) finish_alpha(s, pq);
}

// q = A p for column-major ELLPACK (padding slots skipped) fused with p'q -> alpha; C: how
// the columns are stored (WideCols or NarrowCols, common.cuh). The rows' sums are those of
// spmv_ell (slot_sum); the kernels are bounded to 8 blocks per SM (32 registers), so that on
// the 132-SM H100 and H200 CG_MAX_BLOCKS blocks are resident at once (slot_sum took 40
// registers in f64 unbounded). Residency only matters for speed: the grid's reduction waits
// for no block.
#define CG_ELL_BLOCKS_PER_SM 8
template <typename T, typename C>
__device__ void cg_spmv_ell_alpha(unsigned nrows, unsigned width, C cols, const T* __restrict__ vals,
                                  const T* __restrict__ p, T* __restrict__ q, double* s, double* partials,
                                  unsigned* ticket) {
    if (stopped(s)) return;
    double pq = 0.0, unused = 0.0;
    GRID_STRIDE(row, nrows) {
        // row < nrows; (width + 1) * nrows fits 32 bits (checked)
        const acc_t sum =
            slot_sum<SPGPU_ELL_BATCH, false, true>(cols, vals, p, unsigned(row), nrows, width, unsigned(row));
        const T qi = T(sum);
        q[row] = qi;
        pq += double(ldg(p + row)) * double(qi);
    }
    block_sum2(pq, unused);
    if (!last_block(pq, unused, partials, ticket)) return;
    grid_totals(pq, unused, partials, ticket);
    if (threadIdx.x == 0) finish_alpha(s, pq);
}

// x += alpha p; r -= alpha q; rr = r'r; rz = r'z (z = dinv .* r or r, unless general);
// counts the iteration, records rr, derives beta and the status.
template <typename T>
__device__ void cg_update(unsigned n, T* __restrict__ x, T* __restrict__ r, const T* __restrict__ p,
                          const T* __restrict__ q, const T* __restrict__ dinv, int mode, double* s, double* partials,
                          unsigned* ticket, double* hist, unsigned hist_cap) {
    if (stopped(s)) return;
    const T alpha = T(s[S_ALPHA]);
    double rr = 0.0, rz = 0.0;
    GRID_STRIDE(i, n) {
        x[i] = x[i] + alpha * ldg(p + i);
        const T ri = r[i] - alpha * ldg(q + i);
        r[i] = ri;
        rr += double(ri) * double(ri);
        if (mode == MODE_DIAGONAL) {
            rz += double(ri) * double(ldg(dinv + i) * ri);
        } else if (mode == MODE_IDENTITY) {
            rz += double(ri) * double(ri);
        }
    }
    block_sum2(rr, rz);
    if (!last_block(rr, rz, partials, ticket)) return;
    grid_totals(rr, rz, partials, ticket);
    if (threadIdx.x == 0) {
        const double it = s[S_ITER] + 1.0;
        s[S_ITER] = it;
        s[S_RR] = rr;
        if (it < double(hist_cap)) hist[(unsigned)it] = rr;
        if (!isfinite(rr)) {
            s[S_STATUS] = ST_NONFINITE;
            return;
        }
        if (mode != MODE_GENERAL) {
            if (!isfinite(rz)) {
                s[S_STATUS] = ST_NONFINITE;
                return;
            }
            s[S_BETA] = rz / s[S_RHO];
            s[S_RHO] = rz;
        }
        if (rr <= s[S_TOL2]) s[S_STATUS] = ST_CONVERGED;
    }
}

// General preconditioner: rho' = r'z, beta = rho'/rho.
template <typename T>
__device__ void cg_rho(unsigned n, const T* __restrict__ r, const T* __restrict__ z, double* s, double* partials,
                       unsigned* ticket) {
    if (stopped(s)) return;
    double rz = 0.0, unused = 0.0;
    GRID_STRIDE(i, n) { rz += double(r[i]) * double(z[i]); }
    block_sum2(rz, unused);
    if (!last_block(rz, unused, partials, ticket)) return;
    grid_totals(rz, unused, partials, ticket);
    if (threadIdx.x == 0) {
        if (!isfinite(rz)) {
            s[S_STATUS] = ST_NONFINITE;
        } else {
            s[S_BETA] = rz / s[S_RHO];
            s[S_RHO] = rz;
        }
    }
}

// p = z + beta p.
template <typename T>
__device__ void cg_direction(unsigned n, T* __restrict__ p, const T* __restrict__ r, const T* __restrict__ z,
                             const T* __restrict__ dinv, int mode, const double* s) {
    if (stopped(s)) return;
    const T beta = T(s[S_BETA]);
    GRID_STRIDE(i, n) { p[i] = precond_z(mode, ldg(r + i), z, dinv, i) + beta * p[i]; }
}

// s[S_DOT] = a'b (setup and final residual; ignores the status).
template <typename T>
__device__ void cg_dot(unsigned n, const T* __restrict__ a, const T* __restrict__ b, double* s, double* partials,
                       unsigned* ticket) {
    double ab = 0.0, unused = 0.0;
    GRID_STRIDE(i, n) { ab += double(ldg(a + i)) * double(ldg(b + i)); }
    block_sum2(ab, unused);
    if (!last_block(ab, unused, partials, ticket)) return;
    grid_totals(ab, unused, partials, ticket);
    if (threadIdx.x == 0) s[S_DOT] = ab;
}

// out = a .* b.
template <typename T>
__device__ void cg_hadamard(unsigned n, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out) {
    GRID_STRIDE(i, n) { out[i] = ldg(a + i) * ldg(b + i); }
}

// Scaled sums of squares (the LAPACK dnrm2 recurrence): a pair (scale, ssq) stands for
// scale^2 * ssq, with scale = the largest |v| seen, so nothing overflows for finite input.
// A NaN makes ssq NaN; an infinity makes scale infinite.
__device__ __forceinline__ void nrm_add(double& scale, double& ssq, double v) {
    const double a = fabs(v);
    if (a == 0.0) return;
    if (scale < a) {
        const double r = scale / a;
        ssq = 1.0 + ssq * r * r;
        scale = a;
    } else {
        const double r = a / scale;
        ssq += r * r;
    }
}

// (scale, ssq) += (s2, q2), both scaled sums.
__device__ __forceinline__ void nrm_merge(double& scale, double& ssq, double s2, double q2) {
    if (scale < s2) {
        const double r = scale / s2;
        ssq = q2 + ssq * r * r;
        scale = s2;
    } else {
        const double r = scale > 0.0 ? s2 / scale : 0.0;
        ssq += q2 * r * r;  // q2 * 0 keeps a NaN of q2
    }
}

struct NormPair {
    __device__ __forceinline__ void operator()(double& scale, double& ssq, double s2, double q2) const {
        nrm_merge(scale, ssq, s2, q2);
    }
};

// s[S_NORM_SCALE], s[S_NORM_SSQ] = ||a|| as a scaled sum, in a fixed order (setup and
// final residual; ignores the status).
template <typename T>
__device__ void cg_norm(unsigned n, const T* __restrict__ a, double* s, double* partials, unsigned* ticket) {
    double scale = 0.0, ssq = 0.0;
    GRID_STRIDE(i, n) { nrm_add(scale, ssq, double(ldg(a + i))); }
    block_reduce2(scale, ssq, NormPair());
    if (!last_block(scale, ssq, partials, ticket)) return;
    grid_reduce2(scale, ssq, partials, ticket, NormPair());
    if (threadIdx.x == 0) {
        s[S_NORM_SCALE] = scale;
        s[S_NORM_SSQ] = ssq;
    }
}

// a *= alpha (an exact power of two when the solver equilibrates a system).
template <typename T>
__device__ void cg_scale(unsigned n, double alpha, T* __restrict__ a) {
    GRID_STRIDE(i, n) { a[i] = T(double(a[i]) * alpha); }
}

#define CG_KERNELS(T)                                                                                              \
    extern "C" __global__ void cg_start_##T(unsigned n, const T* r, const T* z, const T* dinv, int mode, T* p,     \
                                            double tol2, double* s, double* partials, unsigned* ticket,            \
                                            double* hist, unsigned hist_cap) {                                     \
        cg_start<T>(n, r, z, dinv, mode, p, tol2, s, partials, ticket, hist, hist_cap);                            \
    }                                                                                                              \
    extern "C" __global__ void cg_alpha_##T(unsigned n, const T* p, const T* q, double* s, double* partials,       \
                                            unsigned* ticket) {                                                    \
        cg_alpha<T>(n, p, q, s, partials, ticket);                                                                 \
    }                                                                                                              \
    extern "C" __global__ void cg_spmv_csr_alpha_##T(unsigned nrows, const unsigned* offsets, const unsigned* cols, \
                                                     const T* vals, const T* p, T* q, double* s, double* partials,  \
                                                     unsigned* ticket) {                                           \
        cg_spmv_csr_alpha<T>(nrows, offsets, cols, vals, p, q, s, partials, ticket);                               \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK, CG_ELL_BLOCKS_PER_SM)                               \
        cg_spmv_ell_alpha_##T(unsigned nrows, unsigned width, const unsigned* cols, const T* vals, const T* p,     \
                              T* q, double* s, double* partials, unsigned* ticket) {                              \
        cg_spmv_ell_alpha<T>(nrows, width, WideCols{cols}, vals, p, q, s, partials, ticket);                       \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK, CG_ELL_BLOCKS_PER_SM)                               \
        cg_spmv_ell16_alpha_##T(unsigned nrows, unsigned width, const unsigned short* col_offsets,                 \
                                const T* vals, const T* p, T* q, double* s, double* partials,                      \
                                unsigned* ticket) {                                                                \
        cg_spmv_ell_alpha<T>(nrows, width, NarrowCols{col_offsets}, vals, p, q, s, partials, ticket);              \
    }                                                                                                              \
    extern "C" __global__ void cg_update_##T(unsigned n, T* x, T* r, const T* p, const T* q, const T* dinv,        \
                                             int mode, double* s, double* partials, unsigned* ticket,              \
                                             double* hist, unsigned hist_cap) {                                    \
        cg_update<T>(n, x, r, p, q, dinv, mode, s, partials, ticket, hist, hist_cap);                              \
    }                                                                                                              \
    extern "C" __global__ void cg_rho_##T(unsigned n, const T* r, const T* z, double* s, double* partials,         \
                                          unsigned* ticket) {                                                      \
        cg_rho<T>(n, r, z, s, partials, ticket);                                                                   \
    }                                                                                                              \
    extern "C" __global__ void cg_direction_##T(unsigned n, T* p, const T* r, const T* z, const T* dinv, int mode, \
                                                const double* s) {                                                 \
        cg_direction<T>(n, p, r, z, dinv, mode, s);                                                                \
    }                                                                                                              \
    extern "C" __global__ void cg_dot_##T(unsigned n, const T* a, const T* b, double* s, double* partials,         \
                                          unsigned* ticket) {                                                      \
        cg_dot<T>(n, a, b, s, partials, ticket);                                                                   \
    }                                                                                                              \
    extern "C" __global__ void cg_hadamard_##T(unsigned n, const T* a, const T* b, T* out) {                       \
        cg_hadamard<T>(n, a, b, out);                                                                              \
    }                                                                                                              \
    extern "C" __global__ void cg_norm_##T(unsigned n, const T* a, double* s, double* partials, unsigned* ticket) { \
        cg_norm<T>(n, a, s, partials, ticket);                                                                     \
    }                                                                                                              \
    extern "C" __global__ void cg_scale_##T(unsigned n, double alpha, T* a) {                                      \
        cg_scale<T>(n, alpha, a);                                                                                  \
    }

CG_KERNELS(f32)
CG_KERNELS(f64)
