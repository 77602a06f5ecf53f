"""Experimental split-K GEMM backend of `flashinfer.mm_bf16` (``backend="splitk"``).

Kept light on purpose: core imports `support` (the checker) at module level,
which runs this file too. The kernel and its launcher live in `kernel`, imported
only when the backend runs. See README.md for the user contract.
"""
