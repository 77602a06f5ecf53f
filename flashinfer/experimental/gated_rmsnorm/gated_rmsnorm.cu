// Gated RMSNorm over the last dimension, one block per row (bf16 in/out, fp32 math):
//   y = x * rsqrt(mean(x^2) + eps) * weight * silu(z),   silu(z) = z / (1 + exp(-z))
// x, z and y move as 16-byte vectors; the first CACHED_VECS vectors of x per thread
// stay in registers between the two passes. Variants (macros, picked by kernel.py and
// compared on a GPU by benchmarks/kernel_sweep.py):
//   Z_FIRST    1: z's cached vectors are loaded in the first pass beside x;
//              0: z is read in the second pass only.
//   FAST_SILU  1: silu through __fdividef; 0: IEEE division.
//   MAX_THREADS: the block size the kernel is compiled for (launch bound).
#include "common.cuh"

#ifndef CACHED_VECS
#define CACHED_VECS 4
#endif
#ifndef Z_FIRST
#define Z_FIRST 1
#endif
#ifndef FAST_SILU
#define FAST_SILU 1
#endif
#ifndef MAX_THREADS
#define MAX_THREADS 1024
#endif

__device__ __forceinline__ float silu(float z) {
#if FAST_SILU
  return __fdividef(z, 1.f + __expf(-z));
#else
  return z / (1.f + __expf(-z));
#endif
}

extern "C" __global__ void __launch_bounds__(MAX_THREADS)
fi_gated_rmsnorm_bf16(const uint4* __restrict__ x, const uint4* __restrict__ z,
                      const uint4* __restrict__ weight, uint4* __restrict__ y,
                      int hidden_vecs, float inv_hidden, float eps) {
  const size_t row_offset = (size_t)blockIdx.x * hidden_vecs;
  const uint4* zr = z + row_offset;
  uint4* yr = y + row_offset;
  rmsnorm_row<CACHED_VECS, Z_FIRST != 0>(x + row_offset, zr, hidden_vecs, inv_hidden, eps,
                                         [&](const uint4& xv, const uint4& zv, int v, float scale) {
    float xf[8], zf[8], wf[8];
    unpack_bf16x8(xv, xf);
    unpack_bf16x8(Z_FIRST ? zv : zr[v], zf);
    unpack_bf16x8(weight[v], wf);
#pragma unroll
    for (int j = 0; j < 8; ++j) xf[j] = xf[j] * scale * wf[j] * silu(zf[j]);
    yr[v] = pack_bf16x8(xf);
  });
}
