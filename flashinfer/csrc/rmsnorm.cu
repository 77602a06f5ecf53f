// RMSNorm over the last dimension of a contiguous bf16 matrix, one block per row:
//   y = x * rsqrt(mean(x^2) + eps) * weight      (fp32 arithmetic, bf16 in/out)
// Rows move as 16-byte vectors; the first CACHED_VECS vectors of each thread stay
// in registers between the two passes, so rows up to CACHED_VECS * 8 * blockDim.x
// elements are read from memory once.
#include "common.cuh"

#ifndef CACHED_VECS
#define CACHED_VECS 4
#endif

extern "C" __global__ void __launch_bounds__(1024)
fi_rmsnorm_bf16(const uint4* __restrict__ x, const uint4* __restrict__ weight,
                uint4* __restrict__ y, int hidden_vecs, float inv_hidden, float eps) {
  const size_t row_offset = (size_t)blockIdx.x * hidden_vecs;
  uint4* yr = y + row_offset;
  rmsnorm_row<CACHED_VECS, false>(x + row_offset, nullptr, hidden_vecs, inv_hidden, eps,
                                  [&](const uint4& xv, const uint4&, int v, float scale) {
    float xf[8], wf[8];
    unpack_bf16x8(xv, xf);
    unpack_bf16x8(weight[v], wf);
#pragma unroll
    for (int j = 0; j < 8; ++j) xf[j] = xf[j] * scale * wf[j];
    yr[v] = pack_bf16x8(xf);
  });
}
