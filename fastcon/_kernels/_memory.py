r"""Scratch arrays on transparent huge pages, for tables that kernels read at random rows.

A kernel that gathers rows of a table at random (the transposed weights ``w_t`` of the CSR
multi-class kernels: one row of C doubles per stored entry; the coefficient rows ``S`` read back
column by column) touches a different 4 KiB page on almost every read once the table is larger
than the first-level TLB covers (a few hundred KiB). On 2 MiB pages a 1.6 MB table is one or two
TLB entries (measured: docs/measurements.md).

Linux hands out huge pages to anonymous memory that asks for them (``madvise(MADV_HUGEPAGE)``)
when ``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or ``madvise``; the mapping
is aligned to 2 MiB here so that the table starts on a huge page. Elsewhere (other systems, THP
off, small arrays) the arrays are ordinary ``np.zeros``, with the same values and results.
"""
import mmap

import numpy as np

__all__ = ["HUGE_PAGE", "MIN_HUGE_BYTES", "huge_page_zeros"]

#: Size of a transparent huge page on x86-64 and most aarch64 kernels.
HUGE_PAGE = 1 << 21
#: Arrays smaller than this stay ordinary allocations (a huge page would be mostly unused).
MIN_HUGE_BYTES = 1 << 19


def huge_page_zeros(shape, dtype=np.float64):
    """A zeroed C-contiguous array, on 2 MiB-aligned memory advised for huge pages when large enough.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : numpy dtype

    Returns
    -------
    ndarray
        Writeable, C-contiguous, all zeros. Its memory lives as long as the array (the array's
        ``base`` holds the mapping); pickling copies it into an ordinary array.
    """
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    madvise = getattr(mmap.mmap, "madvise", None)
    if nbytes < MIN_HUGE_BYTES or madvise is None or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.zeros(shape, dtype)
    size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE  # room to align the start to a huge page
    try:
        region = mmap.mmap(-1, size)  # anonymous memory reads as zeros
    except (OSError, ValueError):
        return np.zeros(shape, dtype)
    try:
        region.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # THP compiled out or disabled: ordinary pages, same array
        pass
    raw = np.frombuffer(region, dtype=np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    return raw[start:start + nbytes].view(dtype).reshape(shape)
