"""Held-out rows: a split stratified by (group, label), and the checks that each part can measure the rates."""
from __future__ import annotations

import numpy as np

__all__ = ["stratified_split", "check_all_groups_present", "check_held_out_part"]


def stratified_split(codes, labels, fraction, random_state):
    """``(kept rows, held-out rows)``: ``fraction`` of every (group, label) cell held out, at least one row kept;
    ``(None, None)`` without a fraction.

    Parameters
    ----------
    codes : int array of shape (n,)
        Group codes.
    labels : int array of shape (n,)
        Class ids 0..J-1.
    fraction : float or None
    random_state : int, Generator or None
        Seeds ``numpy.random.default_rng`` (a Generator is used and advanced).
    """
    if fraction is None:
        return None, None
    rng = np.random.default_rng(random_state)
    cell = codes * (int(labels.max()) + 1) + labels
    kept, held = [], []
    for c in np.unique(cell):
        rows = np.flatnonzero(cell == c)
        rng.shuffle(rows)
        k = min(int(round(fraction * rows.size)), rows.size - 1)
        held.append(rows[:k])
        kept.append(rows[k:])
    return np.sort(np.concatenate(kept)), np.sort(np.concatenate(held))


def check_all_groups_present(codes, n_groups, part="training"):
    """``codes`` of the training or validation rows, checked to hold every group: a split can leave
    a small group without training rows (its rates could not be constrained) or without validation
    rows (the gap measured there would ignore it and could report the bound met)."""
    present = np.unique(codes)
    if present.size == n_groups:
        return codes
    advice = "use a smaller fraction" if part == "training" else "use a larger fraction, or none"
    raise ValueError(f"validation_fraction: the {part} part has no rows of group(s) "
                     f"{sorted(set(range(n_groups)) - set(present.tolist()))}; {advice}")


#: The labels whose rows a rate constraint's rates are conditioned on (1: positives, 0: negatives).
_RATE_LABELS = {"equal_opportunity": (1,), "false_positive_parity": (0,), "equalized_odds": (0, 1)}


def check_held_out_part(codes, y01, check_rows, n_groups, constraint):
    """The validation rows hold every group, and every (group, label) cell the constraint's rates
    count that the data have: else the gap measured there ignores that group or has no rate."""
    check_all_groups_present(codes[check_rows], n_groups, "validation")
    part_codes, part_y = codes[check_rows], y01[check_rows]
    for label in _RATE_LABELS.get(constraint, ()):
        missing = sorted(set(np.unique(codes[y01 == label]).tolist())
                         - set(np.unique(part_codes[part_y == label]).tolist()))
        if missing:
            kind = "positive" if label == 1 else "negative"
            raise ValueError(f"validation_fraction: the validation part has no {kind} rows of group(s) {missing}, "
                             f"whose rates {constraint} compares; use a larger fraction, or none")
