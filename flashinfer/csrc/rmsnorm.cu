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
  const uint4* xr = x + row_offset;
  uint4* yr = y + row_offset;

  uint4 cached[CACHED_VECS];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < CACHED_VECS; ++i) {
    const int v = threadIdx.x + i * blockDim.x;
    if (v < hidden_vecs) {
      cached[i] = xr[v];
      ss += sum_squares_bf16x8(cached[i]);
    }
  }
  for (int v = threadIdx.x + CACHED_VECS * blockDim.x; v < hidden_vecs; v += blockDim.x)
    ss += sum_squares_bf16x8(xr[v]);

  const float scale = rsqrtf(block_sum(ss) * inv_hidden + eps);

  auto normalize = [&](const uint4& xv, int v) {
    float xf[8], wf[8];
    unpack_bf16x8(xv, xf);
    unpack_bf16x8(weight[v], wf);
#pragma unroll
    for (int j = 0; j < 8; ++j) xf[j] = xf[j] * scale * wf[j];
    yr[v] = pack_bf16x8(xf);
  };
#pragma unroll
  for (int i = 0; i < CACHED_VECS; ++i) {
    const int v = threadIdx.x + i * blockDim.x;
    if (v < hidden_vecs) normalize(cached[i], v);
  }
  for (int v = threadIdx.x + CACHED_VECS * blockDim.x; v < hidden_vecs; v += blockDim.x)
    normalize(xr[v], v);
}
