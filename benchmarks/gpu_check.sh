#!/usr/bin/env bash
# One device session: the GPU tests, then the kernel benchmark. Logs go to $OUT.
# Usage (repository root): OUT=/some/dir bash benchmarks/gpu_check.sh
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1 FLASHINFER_JIT_CACHE_DIR="$OUT/jit-cache"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/nvidia-smi.txt"
python3 -c "import torch, cuda.bindings; from cuda.bindings import nvrtc; print('torch', torch.__version__, 'cuda-bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion())" 2>&1 | tee "$OUT/versions.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="" --import-mode=importlib \
    tests/flashinfer/test_kernels_gpu.py tests/experimental/splitk_gemm tests/experimental/gated_rmsnorm \
    "tests/flashinfer/test_autotuner.py::test_mm_bf16_tuning_on_cuda_times_with_events_and_respects_the_gate" 2>&1 | tee "$OUT/tests.log" | tail -40
timeout 240 python3 benchmarks/kernels.py 2>&1 | tee "$OUT/kernels.log"
# End to end: tune a decode step with the gate set, then load that cache in a process without it.
timeout 120 python3 benchmarks/autotune_decode_gpu.py tune "$OUT/decode-cache.json" 2>&1 | tee "$OUT/autotune.log"
timeout 60 python3 benchmarks/autotune_decode_gpu.py load "$OUT/decode-cache.json" 2>&1 | tee -a "$OUT/autotune.log"
rm -rf "$OUT/jit-cache"
