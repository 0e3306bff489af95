"""Refusing sizes this machine cannot hold, before anything of that size is allocated.

A user sets counts that become arrays — levels and groups of a partial-fairness block, thresholds of
a ROC grid, iterations of a schedule evaluated before a solver's loop. A count too large for memory
is a `ValueError` naming it, raised before the allocation, instead of a bare `MemoryError` minutes
later or a machine driven into swap (which looks like a hang).
"""
from __future__ import annotations

import os

__all__ = ["check_memory", "format_bytes", "physical_memory"]


def physical_memory() -> int | None:
    """This machine's physical memory in bytes, or None where the OS does not say (``os.sysconf``)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(field, what, n_bytes, share=2):
    """A ValueError naming ``field`` when ``n_bytes`` exceed ``1/share`` of the physical memory.

    Parameters
    ----------
    field : str
        The argument that sets the size; the message starts with it.
    what : str
        What the arrays are, for the message.
    n_bytes : int
        Their size.
    share : int
        The arrays may take at most ``1/share`` of the memory: 2 for the one large working set of a
        problem, more where several arrays of that size coexist (a solver's schedules).

    No check where the OS does not report its memory.
    """
    total = physical_memory()
    if total is not None and n_bytes > total // share:
        part = "half" if share == 2 else f"1/{share}"
        raise ValueError(f"{field}: {what} would need {format_bytes(n_bytes)}, more than {part} of this "
                         f"machine's memory ({format_bytes(total)})")


def format_bytes(n_bytes) -> str:
    """``"3.2 GiB"``, ``"57.8 PiB"``: a byte count as a person reads it."""
    value, unit = float(n_bytes), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024.0 or unit == "EiB":
            break
        value /= 1024.0
    return f"{value:.1f} {unit}" if unit != "bytes" else f"{int(n_bytes)} bytes"
