"""Small closed-form terms for solver tests (known minimisers and multipliers)."""
import numpy as np

from fastcon.problems import custom_term


def linear(grad, offset=0.0):
    """The term grad @ x + offset."""
    grad = np.asarray(grad, dtype=np.float64)

    def value_and_subgradient(x, out):
        out[:] = grad
        return float(grad @ x + offset)
    return custom_term(lambda x: float(grad @ x + offset), value_and_subgradient, grad.size)


def squared_distance(center):
    """The term ||x - center||^2."""
    center = np.asarray(center, dtype=np.float64)

    def value_and_subgradient(x, out):
        out[:] = 2.0 * (x - center)
        return float((x - center) @ (x - center))
    return custom_term(lambda x: float((x - center) @ (x - center)), value_and_subgradient, center.size)
