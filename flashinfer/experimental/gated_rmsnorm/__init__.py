"""Experimental ``flashinfer.gated_rmsnorm``: RMSNorm(x) * weight * SiLU(z).

The public entry point is `flashinfer.norm.gated_rmsnorm` (it validates and
hands off to `kernel.run`); this package holds the rest: the torch path, the
NVRTC kernel and its launcher. See README.md for the user contract.
"""
