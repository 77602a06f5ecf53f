// C[M, N] = A[M, K] @ B[K, N] on Hopper's warpgroup tensor-core instructions
// (wgmma, sm_90a): bf16 inputs and output, fp32 accumulation.
//
// A block computes a 128 x BN tile with two warpgroups (64 rows each, one
// m64nBNk16 wgmma per 16-deep step). K advances in 64-deep slices through a
// STAGES-deep cp.async pipeline. Every shared tile is built from 128-byte rows
// stored with the 128-byte swizzle (16-byte chunk c of row r at chunk c ^ (r % 8))
// that the shared-memory descriptors name:
// - A is K-major: a tile row is one matrix row's 64-deep K slice.
// - B_MN_MAJOR=0: the host passes Bt = B transposed ([N, K], row-major) and B is
//   K-major like A.
// - B_MN_MAJOR=1: B is read as stored ([K, N], row-major) and wgmma transposes it
//   (imm-trans-b = 1): the B tile is BN / 64 blocks of 64 columns, each 64 K rows
//   of 128 bytes; a descriptor's "leading" offset steps between column blocks and
//   its "stride" offset between groups of 8 K rows.
// Each step's wgmma group stays in flight while the next slice is issued
// (wait_group 1), so the slice loaded at step kt goes to the stage read at step
// kt - 2: the pipeline runs STAGES - 2 ahead.
// Ragged edges are zero-filled on load and masked on store; K % 8 == 0, N % 8 == 0
// and 16-byte aligned rows are required (checked by the host).
#include "common.cuh"

#define BM 128
#ifndef BN
#define BN 256
#endif
#define BK 64
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef B_MN_MAJOR
#define B_MN_MAJOR 0
#endif
#define THREADS 256
#define A_TILE_BYTES (BM * BK * 2)
#define B_TILE_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
static_assert(STAGES >= 3, "the pipeline keeps one wgmma group in flight");

// Shared-memory matrix descriptor, 128-byte swizzle: `stride` bytes between groups of
// 8 rows, `leading` bytes between 64-element blocks along a row (MN-major only;
// K-major swizzled layouts ignore it). Both fields count 16-byte units.
__device__ __forceinline__ unsigned long long smem_descriptor(unsigned addr, unsigned leading, unsigned stride) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(leading >> 4) << 16) |
         ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

#define STR2(x) #x
#define STR(x) STR2(x)
#define TRANS_B STR(B_MN_MAJOR)  // wgmma's imm-trans-b: B is MN-major in shared memory

__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[16][4], unsigned long long da, unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, " TRANS_B ";\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
      : "l"(da), "l"(db));
}

__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[32][4], unsigned long long da, unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, " TRANS_B ";\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]),
        "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
        "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]),
        "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]),
        "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]),
        "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]),
        "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
        "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]),
        "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
      : "l"(da), "l"(db));
}

#if BN == 256
#define WGMMA wgmma_m64n256k16
#else
#define WGMMA wgmma_m64n128k16
#endif
static_assert(BN % 64 == 0, "B tiles are whole 64-column blocks");

// Copy rows [row0, row0 + rows) x K slice [k0, k0 + 64) of a K-major matrix with
// `limit` rows into a swizzled shared tile at `tile` (16-byte chunks, zero-filled outside).
template <int ROWS>
__device__ __forceinline__ void load_rows(unsigned tile, const bf16_bits* __restrict__ src, int row0, int limit,
                                          int k0, int K) {
#pragma unroll
  for (int i = 0; i < ROWS * 8 / THREADS; ++i) {
    const int c = threadIdx.x + i * THREADS, r = c >> 3, chunk = c & 7;
    const int gr = row0 + r, gk = k0 + chunk * 8;
    const bool ok = gr < limit && gk < K;
    copy16_async(tile + r * 128 + ((chunk ^ (r & 7)) << 4), ok ? src + (size_t)gr * K + gk : src, ok);
  }
}

// Copy K rows [k0, k0 + 64) x columns [n0, n0 + BN) of the row-major [K, N] matrix B
// into the MN-major tile at `tile`: BN / 64 column blocks of 64 swizzled 128-byte rows.
__device__ __forceinline__ void load_columns(unsigned tile, const bf16_bits* __restrict__ src, int n0, int N, int k0,
                                             int K) {
#pragma unroll
  for (int i = 0; i < BK * BN / 8 / THREADS; ++i) {
    const int c = threadIdx.x + i * THREADS, r = c / (BN / 8), column_chunk = c % (BN / 8);
    const int block = column_chunk >> 3, chunk = column_chunk & 7;
    const int gk = k0 + r, gn = n0 + column_chunk * 8;
    const bool ok = gk < K && gn < N;
    copy16_async(tile + block * (BK * 128) + r * 128 + ((chunk ^ (r & 7)) << 4), ok ? src + (size_t)gk * N + gn : src,
                 ok);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
fi_mm_bf16_sm90(const bf16_bits* __restrict__ A, const bf16_bits* __restrict__ B,
                bf16_bits* __restrict__ C, int M, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  // The 128-byte swizzle pattern repeats every 1024 bytes: align the stages to it.
  const unsigned smem = (shared_address(smem_raw) + 1023) & ~1023u;

  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n;
  const int pid = blockIdx.x;
  const int first_m = (pid / per_group) * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  const int m0 = (first_m + (pid % per_group) % group_rows) * BM;
  const int n0 = ((pid % per_group) / group_rows) * BN;

  const int warpgroup = threadIdx.x >> 7;
  const int ktiles = (K + BK - 1) / BK;

  auto load_tile = [&](int stage, int kt) {
    const unsigned base = smem + stage * STAGE_BYTES;
    load_rows<BM>(base, A, m0, M, kt * BK, K);
#if B_MN_MAJOR
    load_columns(base + A_TILE_BYTES, B, n0, N, kt * BK, K);
#else
    load_rows<BN>(base + A_TILE_BYTES, B, n0, N, kt * BK, K);  // B holds Bt, [N, K]
#endif
  };

  float acc[BN / 8][4];
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < ktiles) load_tile(s, s);
    commit_copies();
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    wait_copies<STAGES - 3>();  // this thread's copies of slice kt have landed
    // Make them visible to the tensor cores' (async proxy) reads, then to all threads.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();  // also: every warpgroup finished the wgmma of slice kt - 2
    const int next = kt + STAGES - 2;
    if (next < ktiles) load_tile(next % STAGES, next);
    commit_copies();

    const unsigned a_tile = smem + (kt % STAGES) * STAGE_BYTES + warpgroup * 64 * 128;
    const unsigned b_tile = smem + (kt % STAGES) * STAGE_BYTES + A_TILE_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {  // A: 16 bf16 = 32 bytes along the swizzled row
#if B_MN_MAJOR
      const unsigned long long db = smem_descriptor(b_tile + kk * 16 * 128, BK * 128, 1024);  // 16 K rows down
#else
      const unsigned long long db = smem_descriptor(b_tile + kk * 32, 16, 1024);
#endif
      WGMMA(acc, smem_descriptor(a_tile + kk * 32, 16, 1024), db);
    }
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  wait_copies<0>();

  // Accumulator (j, e): row 16 * warp + lane / 4 (+ 8 for e >= 2), column 8 j + 2 (lane % 4) + e % 2.
  const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) & 3;
  const int row = m0 + warpgroup * 64 + warp * 16 + (lane >> 2);
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = n0 + j * 8 + (lane & 3) * 2;
    if (col >= N) continue;
    if (row < M) *reinterpret_cast<unsigned*>(C + (size_t)row * N + col) = pack_bf16x2(acc[j][0], acc[j][1]);
    if (row + 8 < M)
      *reinterpret_cast<unsigned*>(C + (size_t)(row + 8) * N + col) = pack_bf16x2(acc[j][2], acc[j][3]);
  }
}
