// Gated RMSNorm over the last dimension, one block per row (bf16 in/out, fp32 math):
//   y = x * rsqrt(mean(x^2) + eps) * weight * silu(z),   silu(z) = z / (1 + exp(-z))
// x, z and y move as 16-byte vectors. x's first CACHED_VECS vectors per thread stay
// in registers between the two passes; z is read only in the second pass.
#include "common.cuh"

#ifndef CACHED_VECS
#define CACHED_VECS 4
#endif

extern "C" __global__ void __launch_bounds__(1024)
fi_gated_rmsnorm_bf16(const uint4* __restrict__ x, const uint4* __restrict__ z,
                      const uint4* __restrict__ weight, uint4* __restrict__ y,
                      int hidden_vecs, float inv_hidden, float eps) {
  const size_t row_offset = (size_t)blockIdx.x * hidden_vecs;
  const uint4* zr = z + row_offset;
  uint4* yr = y + row_offset;
  rmsnorm_row<CACHED_VECS>(x + row_offset, hidden_vecs, inv_hidden, eps,
                           [&](const uint4& xv, int v, float scale) {
    float xf[8], zf[8], wf[8];
    unpack_bf16x8(xv, xf);
    unpack_bf16x8(zr[v], zf);
    unpack_bf16x8(weight[v], wf);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float silu = zf[j] / (1.f + __expf(-zf[j]));
      xf[j] = xf[j] * scale * wf[j] * silu;
    }
    yr[v] = pack_bf16x8(xf);
  });
}
