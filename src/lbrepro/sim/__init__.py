"""Numba simulation kernels, one per state representation."""
