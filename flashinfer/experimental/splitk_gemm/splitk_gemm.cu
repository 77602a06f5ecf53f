// Split-K GEMM for decode shapes: C[M, N] = A[M, K] @ B[K, N] with M <= 16.
//
// With M this small the product is a stream over B, so the kernel is shaped
// around reading B once at full bandwidth:
// - a block owns a 64-column slab of C and a K range (blockIdx.y); its 8 warps
//   split that range between them in interleaved 16-deep steps (the split-K);
// - B goes straight from global memory to registers, 16 bytes per load, no
//   shared-memory staging: lane (g = lane / 4, s = lane % 4) loads rows
//   k0 + 2s, k0 + 2s + 1, k0 + 8 + 2s, k0 + 9 + 2s at columns 8g .. 8g + 7 of the
//   slab and pairs them with byte permutes into mma B fragments. That works
//   because the slab's columns are permuted inside the mma: fragment f, mma
//   column j holds slab column 8j + f, so lane g naturally owns columns 8g .. 8g+7;
// - A (at most 16 rows, padded with zeros) is read from L1/L2 as mma A fragments;
// - the warps' partial tiles are summed in shared memory; with one K range the
//   block writes bf16 C, with several it adds fp32 partials into a workspace.
//
// Requirements (checked by the host): M <= 16, K % 8 == 0, N % 8 == 0, 16-byte
// aligned pointers, k_per_split a multiple of 16.

#include "common.cuh"

#define WARPS 8
#define SLAB 64
#define UNROLL 4
#define RED_PITCH (SLAB + 1)

__device__ __forceinline__ unsigned word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The operands of one 16-deep step, loaded ahead of use.
struct Step {
  uint4 b[4];       // rows k0+2s, k0+2s+1, k0+8+2s, k0+9+2s; columns 8g..8g+7
  unsigned a[4];    // mma A fragment
};

extern "C" __global__ void __launch_bounds__(WARPS * 32)
fi_splitk_gemm_bf16(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                    unsigned short* __restrict__ C, float* __restrict__ partial,
                    int M, int N, int K, int k_per_split) {
  __shared__ float red[16 * RED_PITCH];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, s = lane & 3;
  const int n_slab = blockIdx.x * SLAB;
  const int k_begin = blockIdx.y * k_per_split;
  const int k_end = min(K, k_begin + k_per_split);
  const int n_lane = n_slab + 8 * g;
  const bool n_ok = n_lane < N;

  for (int i = threadIdx.x; i < 16 * RED_PITCH; i += WARPS * 32) red[i] = 0.f;

  float acc[8][4];
#pragma unroll
  for (int f = 0; f < 8; ++f)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[f][e] = 0.f;

  auto load = [&](Step& st, int k0) {
    const int rows[4] = {k0 + 2 * s, k0 + 2 * s + 1, k0 + 8 + 2 * s, k0 + 9 + 2 * s};
#pragma unroll
    for (int i = 0; i < 4; ++i)
      st.b[i] = (n_ok && rows[i] < k_end) ? __ldg(reinterpret_cast<const uint4*>(B + (size_t)rows[i] * N + n_lane))
                                          : make_uint4(0, 0, 0, 0);
    const int ka = k0 + 2 * s, kb = k0 + 8 + 2 * s;
    const bool lo_ok = g < M, hi_ok = g + 8 < M;
    st.a[0] = (lo_ok && ka < k_end) ? __ldg(reinterpret_cast<const unsigned*>(A + (size_t)g * K + ka)) : 0u;
    st.a[1] = (hi_ok && ka < k_end) ? __ldg(reinterpret_cast<const unsigned*>(A + (size_t)(g + 8) * K + ka)) : 0u;
    st.a[2] = (lo_ok && kb < k_end) ? __ldg(reinterpret_cast<const unsigned*>(A + (size_t)g * K + kb)) : 0u;
    st.a[3] = (hi_ok && kb < k_end) ? __ldg(reinterpret_cast<const unsigned*>(A + (size_t)(g + 8) * K + kb)) : 0u;
  };

  auto compute = [&](const Step& st) {
#pragma unroll
    for (int f = 0; f < 8; ++f) {
      // Column 8g + f of rows (2s, 2s+1) and (8+2s, 9+2s): low half = even row.
      const unsigned sel = (f & 1) ? 0x7632u : 0x5410u;
      const unsigned b0 = __byte_perm(word(st.b[0], f >> 1), word(st.b[1], f >> 1), sel);
      const unsigned b1 = __byte_perm(word(st.b[2], f >> 1), word(st.b[3], f >> 1), sel);
      mma_bf16_16816(acc[f], st.a, b0, b1);
    }
  };

  const int stride = WARPS * 16;
  for (int k0 = k_begin + warp * 16; k0 < k_end; k0 += UNROLL * stride) {
    Step st[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int k = k0 + u * stride;
      if (k < k_end) load(st[u], k);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (k0 + u * stride < k_end) compute(st[u]);
  }

  __syncthreads();  // red[] is zeroed
  // Accumulator f: rows g and g + 8; mma columns 2s and 2s + 1 = slab columns 16s + f and 16s + 8 + f.
#pragma unroll
  for (int f = 0; f < 8; ++f) {
    atomicAdd(&red[g * RED_PITCH + 16 * s + f], acc[f][0]);
    atomicAdd(&red[g * RED_PITCH + 16 * s + 8 + f], acc[f][1]);
    atomicAdd(&red[(g + 8) * RED_PITCH + 16 * s + f], acc[f][2]);
    atomicAdd(&red[(g + 8) * RED_PITCH + 16 * s + 8 + f], acc[f][3]);
  }
  __syncthreads();

  // 16 rows x 32 column pairs, two pairs per thread.
  for (int p = threadIdx.x; p < 16 * (SLAB / 2); p += WARPS * 32) {
    const int row = p / (SLAB / 2), col = 2 * (p % (SLAB / 2));
    const int n = n_slab + col;
    if (row >= M || n >= N) continue;
    const float lo = red[row * RED_PITCH + col], hi = red[row * RED_PITCH + col + 1];
    if (partial != nullptr) {
      atomicAdd(partial + (size_t)row * N + n, lo);
      atomicAdd(partial + (size_t)row * N + n + 1, hi);
    } else {
      *reinterpret_cast<unsigned*>(C + (size_t)row * N + n) = pack_bf16x2(lo, hi);
    }
  }
}
