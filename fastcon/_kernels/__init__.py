"""Numba kernels: pure functions on numpy arrays. Nothing here imports from the rest of fastcon."""
from ._linalg import (
    CSR, chunk_scratch, csr_matvec, csr_matvec2, csr_rmatvec, dense_matvec, dense_matvec2, dense_rmatvec,
    n_chunks_for,
)
from ._losses import (
    HINGE, LOGISTIC, LOSS_CODES, SIGMOID, SQUARED_HINGE, csr_loss_value, csr_loss_value_grad,
    dense_loss_value, dense_loss_value_grad, loss_workspace, margin_loss,
)
from ._projections import project_ball, project_balls, project_box, project_column_balls

__all__ = [
    "CSR", "n_chunks_for", "chunk_scratch",
    "csr_matvec", "csr_matvec2", "csr_rmatvec", "dense_matvec", "dense_matvec2", "dense_rmatvec",
    "HINGE", "LOGISTIC", "SIGMOID", "SQUARED_HINGE", "LOSS_CODES", "margin_loss", "loss_workspace",
    "csr_loss_value", "csr_loss_value_grad", "dense_loss_value", "dense_loss_value_grad",
    "project_ball", "project_balls", "project_box", "project_column_balls",
]
