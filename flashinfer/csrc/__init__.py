"""CUDA sources of the stable kernels (``*.cu``, ``*.cuh``), compiled at run time by
`flashinfer.jit`. A package only so that the sources ship as package data."""
