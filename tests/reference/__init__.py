"""Plain NumPy/SciPy reference implementations: slow, obviously right, used to check the kernels."""
