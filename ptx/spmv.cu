// SpMV kernels: y = alpha*A*x + beta*y for CSR (scalar and vector) and ELLPACK, f32 and f64.
//
// Every kernel is `extern "C"` and named `<op>_<format>_<variant>_<scalar>`; the Rust side
// builds the names in one function (src/gpu/kernels/mod.rs, `kernel_name`) and launches
// them with SPGPU_BLOCK threads per block. The semantics shared by all of them are in
// common.cuh.
#include "common.cuh"

// Scalar CSR: one thread per row. Good for short, uniform rows: a warp's 32 rows are
// contiguous in memory, so its loads stay within a few cache lines.
template <typename T>
__device__ __forceinline__ void csr_scalar(unsigned nrows, const unsigned* __restrict__ row_offsets,
                                           const unsigned* __restrict__ col_indices,
                                           const T* __restrict__ values, const T* __restrict__ x, T alpha,
                                           T beta, T* __restrict__ y) {
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) {
        return;
    }
    acc_t sum = 0;
    if (alpha != T(0)) {
        const unsigned end = ldg(row_offsets + row + 1);
        unsigned j = ldg(row_offsets + row);
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
template <typename T, unsigned TPR>
__device__ __forceinline__ void csr_vector(unsigned nrows, const unsigned* __restrict__ row_offsets,
                                           const unsigned* __restrict__ col_indices,
                                           const T* __restrict__ values, const T* __restrict__ x, T alpha,
                                           T beta, T* __restrict__ y) {
    const unsigned row = blockIdx.x * (SPGPU_BLOCK / TPR) + threadIdx.x / TPR;
    const unsigned lane = threadIdx.x % TPR;
    const bool active = row < nrows;
    acc_t sum = 0;
    if (active && alpha != T(0)) {
        const unsigned start = ldg(row_offsets + row);
        const unsigned end = ldg(row_offsets + row + 1);
#pragma unroll 4
        for (unsigned j = start + lane; j < end; j += TPR) {
            sum += acc_t(ldg(values + j)) * acc_t(ldg(x + ldg(col_indices + j)));
        }
    }
    sum = group_sum<TPR>(sum);
    if (active && lane == 0) {
        store_axpby(y, row, alpha, sum, beta);
    }
}

// ELLPACK, column-major: one thread per row; slot k of row i is at k*nrows + i, so a warp
// reads 32 consecutive slots. Every slot's column and value are loaded unconditionally (a
// padding slot holds value 0), so the loads of all slots are independent and overlap;
// only the read of x is skipped for padding (column SPGPU_ELL_PADDING).
template <typename T>
__device__ __forceinline__ void ell(unsigned nrows, unsigned width, const unsigned* __restrict__ col_indices,
                                    const T* __restrict__ values, const T* __restrict__ x, T alpha, T beta,
                                    T* __restrict__ y) {
    const unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) {
        return;
    }
    acc_t sum = 0;
    if (alpha != T(0)) {
        unsigned slot = row;
#pragma unroll 4
        for (unsigned k = 0; k < width; ++k, slot += nrows) {
            const unsigned c = ldg(col_indices + slot);
            const T v = ldg(values + slot);
            if (c != SPGPU_ELL_PADDING) {
                sum += acc_t(v) * acc_t(ldg(x + c));
            }
        }
    }
    store_axpby(y, row, alpha, sum, beta);
}

// y[i] = value for i < n (a dense vector fill).
template <typename T>
__device__ __forceinline__ void fill(unsigned n, T value, T* __restrict__ y) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = value;
    }
}

#define SPGPU_CSR_ARGS(T)                                                                                  \
    unsigned nrows, const unsigned *__restrict__ row_offsets, const unsigned *__restrict__ col_indices,   \
        const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta, T *__restrict__ y
#define SPGPU_CSR_PASS row_offsets, col_indices, values, x, alpha, beta, y

#define SPGPU_VECTOR_KERNEL(T, N)                                                                          \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) spmv_csr_vector_tpr##N##_##T(SPGPU_CSR_ARGS(T)) { \
        csr_vector<T, N>(nrows, SPGPU_CSR_PASS);                                                           \
    }

#define SPGPU_KERNELS(T)                                                                                   \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) spmv_csr_scalar_##T(SPGPU_CSR_ARGS(T)) {     \
        csr_scalar<T>(nrows, SPGPU_CSR_PASS);                                                              \
    }                                                                                                      \
    SPGPU_VECTOR_KERNEL(T, 2)                                                                              \
    SPGPU_VECTOR_KERNEL(T, 4)                                                                              \
    SPGPU_VECTOR_KERNEL(T, 8)                                                                              \
    SPGPU_VECTOR_KERNEL(T, 16)                                                                             \
    SPGPU_VECTOR_KERNEL(T, 32)                                                                             \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK)                                              \
        spmv_ell_##T(unsigned nrows, unsigned width, const unsigned *__restrict__ col_indices,            \
                     const T *__restrict__ values, const T *__restrict__ x, T alpha, T beta,              \
                     T *__restrict__ y) {                                                                  \
        ell<T>(nrows, width, col_indices, values, x, alpha, beta, y);                                      \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(SPGPU_BLOCK) fill_vector_##T(unsigned n, T value,        \
                                                                               T *__restrict__ y) {       \
        fill<T>(n, value, y);                                                                              \
    }

SPGPU_KERNELS(f32)
SPGPU_KERNELS(f64)
