"""Opt-in progress display for long solves: a tqdm bar when available, else periodic lines."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Report solver progress.

    Parameters
    ----------
    total : int
        Expected number of iterations.
    verbose : bool, int or {"bar", "lines"}
        False/0: silent. True/1 or "bar": a tqdm progress bar if tqdm is installed, otherwise
        lines. "lines" or an int >= 2: about ``20`` (or ``verbose``) printed lines per run.
    desc : str
        Label shown in front of the bar or lines.
    stream : file
        Where lines go (stderr by default, so piped stdout stays clean).
    """

    def __init__(self, total: int, verbose=False, desc: str = "", stream=None):
        self.total = max(int(total), 1)
        self.desc = desc
        self.stream = stream or sys.stderr
        self._bar = None
        self._mode = None
        self._t0 = time.perf_counter()
        if not verbose:
            return
        if verbose in (True, 1, "bar"):
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=self.total, desc=desc, file=self.stream, leave=True)
                self._mode = "bar"
                self._done = 0
                return
            except ImportError:
                pass
        lines = verbose if isinstance(verbose, int) and not isinstance(verbose, bool) and verbose >= 2 else 20
        self._every = max(self.total // lines, 1)
        self._mode = "lines"

    @property
    def active(self) -> bool:
        return self._mode is not None

    def update(self, iteration: int, **metrics):
        """Tell the display that ``iteration`` (0-based) is done; ``metrics`` are shown beside it."""
        if self._mode == "bar":
            step = iteration + 1 - self._done
            if step > 0:
                self._bar.update(step)
                self._done = iteration + 1
            if metrics and (iteration % max(self.total // 100, 1) == 0):
                self._bar.set_postfix({k: f"{v:.4g}" for k, v in metrics.items()}, refresh=False)
        elif self._mode == "lines" and ((iteration + 1) % self._every == 0 or iteration + 1 == self.total):
            shown = "  ".join(f"{k}={v:.6g}" for k, v in metrics.items())
            elapsed = time.perf_counter() - self._t0
            print(f"{self.desc} it {iteration + 1}/{self.total}  {shown}  [{elapsed:.1f}s]", file=self.stream)

    def close(self):
        if self._mode == "bar":
            self._bar.close()
        self._mode = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
