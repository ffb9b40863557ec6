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
