// Small device helpers shared by FlashInfer's NVRTC kernels.
// Self-contained (no CUDA headers): bf16 values travel as raw 16-bit patterns
// and are converted with shifts and the cvt.rn.bf16x2.f32 instruction (sm_80+).
#pragma once

typedef unsigned short bf16_bits;

// Two bf16 packed in a 32-bit word -> two floats (low half first).
__device__ __forceinline__ void unpack_bf16x2(unsigned v, float& lo, float& hi) {
  lo = __uint_as_float(v << 16);
  hi = __uint_as_float(v & 0xffff0000u);
}

// Two floats -> two bf16 (round to nearest even) packed in a 32-bit word.
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// A 16-byte vector of eight bf16 values, as eight floats.
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float (&f)[8]) {
  unpack_bf16x2(v.x, f[0], f[1]);
  unpack_bf16x2(v.y, f[2], f[3]);
  unpack_bf16x2(v.z, f[4], f[5]);
  unpack_bf16x2(v.w, f[6], f[7]);
}

__device__ __forceinline__ uint4 pack_bf16x8(const float (&f)[8]) {
  return make_uint4(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]),
                    pack_bf16x2(f[4], f[5]), pack_bf16x2(f[6], f[7]));
}

__device__ __forceinline__ float sum_squares_bf16x8(const uint4& v) {
  float f[8];
  unpack_bf16x8(v, f);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = fmaf(f[i], f[i], s);
  return s;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block; every thread gets the total. Call once per kernel
// (the scratch array is reused without a trailing barrier).
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  return warp_sum(lane < warps ? partial[lane] : 0.f);
}

// The two passes of an RMSNorm-style kernel over one row of `hidden_vecs` 16-byte
// vectors, one block per row: pass one sums x^2 (keeping each thread's first CACHED
// vectors in registers), pass two calls `apply(xv, gv, v, scale)` for every vector v
// with scale = rsqrt(mean(x^2) + eps). With WITH_GATE, gv is vector v of a second
// row `gr` (a gate), whose cached vectors are loaded in pass one beside x so that
// their reads overlap the reduction; without it gv is zero and `gr` is unused.
// Shared by rmsnorm and its experimental variants.
template <int CACHED, bool WITH_GATE, typename Apply>
__device__ __forceinline__ void rmsnorm_row(const uint4* __restrict__ xr, const uint4* __restrict__ gr,
                                            int hidden_vecs, float inv_hidden, float eps, Apply apply) {
  uint4 cached[CACHED], gates[CACHED];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < CACHED; ++i) {
    const int v = threadIdx.x + i * blockDim.x;
    gates[i] = make_uint4(0u, 0u, 0u, 0u);
    if (v < hidden_vecs) {
      cached[i] = xr[v];
      if (WITH_GATE) gates[i] = gr[v];
    }
  }
#pragma unroll
  for (int i = 0; i < CACHED; ++i)
    if (threadIdx.x + i * blockDim.x < hidden_vecs) ss += sum_squares_bf16x8(cached[i]);
  for (int v = threadIdx.x + CACHED * blockDim.x; v < hidden_vecs; v += blockDim.x)
    ss += sum_squares_bf16x8(xr[v]);

  const float scale = rsqrtf(block_sum(ss) * inv_hidden + eps);
#pragma unroll
  for (int i = 0; i < CACHED; ++i) {
    const int v = threadIdx.x + i * blockDim.x;
    if (v < hidden_vecs) apply(cached[i], gates[i], v, scale);
  }
  for (int v = threadIdx.x + CACHED * blockDim.x; v < hidden_vecs; v += blockDim.x)
    apply(xr[v], WITH_GATE ? gr[v] : make_uint4(0u, 0u, 0u, 0u), v, scale);
}

// cp.async helpers shared by the GEMM kernels (sm_80+).
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// 16-byte global -> shared copy; copies zeros when !valid (src-size 0).
__device__ __forceinline__ void copy16_async(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void wait_copies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// D += A * B for one m16n8k16 tile: bf16 operands, fp32 accumulators.
// Not volatile under FI_MMA_FREE_SCHEDULE (a pure register operation), so the
// compiler may reorder it against the ldmatrix loads.
#ifdef FI_MMA_FREE_SCHEDULE
#define FI_MMA_ASM asm
#else
#define FI_MMA_ASM asm volatile
#endif
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  FI_MMA_ASM(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
