// C[M, N] = A[M, K] @ B[K, N]: bf16 row-major inputs and output, fp32 accumulation
// on tensor cores (mma.sync m16n8k16).
//
// Each block computes a BM x BN tile with WARPS_M x WARPS_N warps, each owning a
// (BM / WARPS_M) x (BN / WARPS_N) warp tile. K advances in BK slices through a
// STAGES-deep cp.async pipeline in dynamic shared memory; fragments come from
// ldmatrix (.trans for B, which is stored K-major). Shared rows are padded by 16
// bytes so the eight row addresses of every ldmatrix fall in distinct banks.
// Blocks are ordered in groups of GROUP_M tile rows so that concurrently running
// blocks share A and B tiles in L2. With FRAG_PIPELINE the fragments of 16-deep
// step i + 1 are read from shared memory while the tensor cores work on step i.
// The host (flashinfer/gemm.py, GemmConfig) picks the macros; every combination
// it lists is checked on a GPU by benchmarks/kernel_sweep.py.
//
// Requirements (checked by the host): K % 8 == 0, N % 8 == 0 and 16-byte aligned
// base pointers, so every 16-byte copy is either fully inside or fully outside
// the matrices. Ragged edges (M, N, K not multiples of the tile) are zero-filled
// on load and masked on store.
#include "common.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64  // K depth of one pipeline stage (32 or 64)
#endif
#ifndef STAGES
#define STAGES 4  // pipeline depth; shared memory = STAGES * (A + B tile)
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef FRAG_PIPELINE
#define FRAG_PIPELINE 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // blocks per multiprocessor the register allocation must allow
#endif
#define THREADS (WARPS_M * WARPS_N * 32)
#define WM (BM / WARPS_M)  // warp tile
#define WN (BN / WARPS_N)
#define MI (WM / 16)  // m16 row blocks per warp
#define NI (WN / 8)   // n8 column blocks per warp
#define A_COPIES (BM * BK / 8 / THREADS)  // 16-byte copies per thread per stage
#define B_COPIES (BK * BN / 8 / THREADS)
static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16 x 16");
static_assert(A_COPIES * THREADS * 8 == BM * BK && B_COPIES * THREADS * 8 == BK * BN,
              "tile copies must split evenly over the threads");
#define A_PITCH (BK + 8)  // elements per shared row of the A tile
#define B_PITCH (BN + 8)  // elements per shared row of the B tile
#define A_STAGE (BM * A_PITCH)
#define B_STAGE (BK * B_PITCH)

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
fi_mm_bf16(const bf16_bits* __restrict__ A, const bf16_bits* __restrict__ B,
                   bf16_bits* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16_bits* sA = reinterpret_cast<bf16_bits*>(smem);
  bf16_bits* sB = sA + STAGES * A_STAGE;

  // Grouped tile order: GROUP_M tile rows walk the N tiles together.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n;
  const int pid = blockIdx.x;
  const int first_m = (pid / per_group) * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  const int m0 = (first_m + (pid % per_group) % group_rows) * BM;
  const int n0 = ((pid % per_group) / group_rows) * BN;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_row = (warp / WARPS_N) * WM, warp_col = (warp % WARPS_N) * WN;
  const int ktiles = (K + BK - 1) / BK;

  // Every thread copies A_COPIES 16-byte chunks of the A tile and B_COPIES of the B tile.
  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * BK;
    bf16_bits* a_dst = sA + stage * A_STAGE;
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
      const int c = tid + i * THREADS, r = c / (BK / 8), col = (c % (BK / 8)) * 8;
      const int gm = m0 + r, gk = k0 + col;
      const bool ok = gm < M && gk < K;
      copy16_async(shared_address(a_dst + r * A_PITCH + col), ok ? A + (size_t)gm * K + gk : A, ok);
    }
    bf16_bits* b_dst = sB + stage * B_STAGE;
#pragma unroll
    for (int i = 0; i < B_COPIES; ++i) {
      const int c = tid + i * THREADS, r = c / (BN / 8), col = (c % (BN / 8)) * 8;
      const int gk = k0 + r, gn = n0 + col;
      const bool ok = gk < K && gn < N;
      copy16_async(shared_address(b_dst + r * B_PITCH + col), ok ? B + (size_t)gk * N + gn : B, ok);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    commit_copies();
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    wait_copies<STAGES - 2>();  // tile kt has landed (for this thread's copies)
    __syncthreads();            // ... for all threads; stage (kt - 1) % STAGES is free
    const int next = kt + STAGES - 1;
    if (next < ktiles) load_tile(next % STAGES, next);
    commit_copies();

    const bf16_bits* a_s = sA + (kt % STAGES) * A_STAGE;
    const bf16_bits* b_s = sB + (kt % STAGES) * B_STAGE;
    // Fragments of the 16-deep step at kk: A as MI row blocks, B as NI column blocks.
    auto load_fragments = [&](unsigned (&af)[MI][4], unsigned (&bf)[NI][2], int kk) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const int row = warp_row + mi * 16 + (lane & 15);
        ldmatrix_x4(af[mi], shared_address(a_s + row * A_PITCH + kk + (lane >> 4) * 8));
      }
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj) {
        unsigned r[4];
        const int col = warp_col + nj * 16 + (lane >> 4) * 8;
        ldmatrix_x4_trans(r, shared_address(b_s + (kk + (lane & 15)) * B_PITCH + col));
        bf[2 * nj][0] = r[0];
        bf[2 * nj][1] = r[1];
        bf[2 * nj + 1][0] = r[2];
        bf[2 * nj + 1][1] = r[3];
      }
    };
    auto multiply = [&](const unsigned (&af)[MI][4], const unsigned (&bf)[NI][2]) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) mma_bf16_16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    };
#if FRAG_PIPELINE
    unsigned af[2][MI][4], bf[2][NI][2];
    load_fragments(af[0], bf[0], 0);
#pragma unroll
    for (int step = 0; step < BK / 16; ++step) {
      if (step + 1 < BK / 16) load_fragments(af[(step + 1) & 1], bf[(step + 1) & 1], (step + 1) * 16);
      multiply(af[step & 1], bf[step & 1]);
    }
#else
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4], bf[NI][2];
      load_fragments(af, bf, kk);
      multiply(af, bf);
    }
#endif
  }
  wait_copies<0>();

  // Accumulator (mi, ni): rows lane/4 and lane/4 + 8, columns 2 * (lane % 4) + {0, 1}.
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const int row = m0 + warp_row + mi * 16 + (lane >> 2);
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int col = n0 + warp_col + ni * 8 + (lane & 3) * 2;
      if (col >= N) continue;
      if (row < M)
        *reinterpret_cast<unsigned*>(C + (size_t)row * N + col) = pack_bf16x2(acc[mi][ni][0], acc[mi][ni][1]);
      if (row + 8 < M)
        *reinterpret_cast<unsigned*>(C + (size_t)(row + 8) * N + col) = pack_bf16x2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  }
}
