"""Numba kernels: pure functions on numpy arrays. Nothing here imports from the rest of fastcon."""
