r"""Checks that run before a library sees a saved model's text, and the machine's thread limit.

LightGBM's model-text parser (``GBDT::LoadModelFromString``, ``Tree::Tree(const char*)`` in its
C++ sources) trusts its input: a line without ``=`` makes it scan past the end of the buffer, the
``tree_sizes`` header sends threads to offsets that a truncated file does not have, and arrays
shorter than ``num_leaves`` are read past their end. A truncated model file aborted the Python
interpreter (exit 134), and tampered child indices would be followed out of bounds at prediction.
`check_lightgbm_text` therefore accepts only text of the shape LightGBM writes, with every array of
the length its tree says, child indices that form one binary tree, split features and categorical
indices in range and ``tree_sizes`` equal to the blocks' byte lengths; anything else is a
ValueError whose message says what is wrong. XGBoost's JSON reader raises on damaged input, except
on an empty buffer (abort): `check_xgboost_text` parses the JSON in Python first.

``n_threads`` of 10**6 made LightGBM segfault: `thread_limit` is the number of CPUs this process
may run on (``os.sched_getaffinity``, else ``os.cpu_count()``), and `check_threads` refuses more.
"""
from __future__ import annotations

import json
import math
import os
import re

from ..solvers._validation import check_count

__all__ = ["thread_limit", "check_threads", "check_lightgbm_text", "check_xgboost_text"]


def thread_limit():
    """CPUs this process may run on: ``len(os.sched_getaffinity(0))``, else ``os.cpu_count()``, at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, int(n))


def check_threads(value, name="n_threads"):
    """An integer in [1, `thread_limit`()]; above the limit a ValueError naming ``name`` and the limit."""
    n = check_count(name, value)
    limit = thread_limit()
    if n > limit:
        raise ValueError(f"{name}: at most {limit} (the CPUs this process may use, os.sched_getaffinity), "
                         f"got {n}")
    return n


# ------------------------------------------------------------------------------------- LightGBM text
_INT = re.compile(r"-?\d{1,10}\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d{1,3})?\Z|[-+]?inf\Z|nan\Z", re.I)
_HEADER_KEYS = {"version", "num_class", "num_tree_per_iteration", "label_index", "max_feature_idx", "objective",
                "average_output", "feature_names", "monotone_constraints", "feature_infos", "tree_sizes"}
_TREE_KEYS = {"num_leaves", "num_cat", "split_feature", "split_gain", "threshold", "decision_type", "left_child",
              "right_child", "leaf_value", "leaf_weight", "leaf_count", "internal_value", "internal_weight",
              "internal_count", "cat_boundaries", "cat_threshold", "is_linear", "shrinkage", "leaf_const",
              "num_features", "leaf_features", "leaf_coeff"}
#: LightGBM's tree parser reads at most this many key=value lines per tree
_MAX_TREE_LINES = 22
_PARAMETER = re.compile(r"\[[A-Za-z0-9_]+: [^\n]*\]\Z")


def _tokens(value, loose):
    # LightGBM writes single spaces; a linear tree's leaf_features / leaf_coeff group the leaves'
    # values with two spaces and end with spaces (its reader skips them)
    return value.split() if loose else (value.split(" ") if value else [])


def _ints(where, key, value, n, lo=-(2 ** 31), hi=2 ** 31 - 1, loose=False):
    tokens = _tokens(value, loose)
    if len(tokens) != n:
        raise ValueError(f"{where}: {key} has {len(tokens)} values, expected {n}")
    out = []
    for t in tokens:
        if not _INT.match(t) or not lo <= int(t) <= hi:
            raise ValueError(f"{where}: {key} has {t[:20]!r}, expected an integer in [{lo}, {hi}]")
        out.append(int(t))
    return out


def _floats(where, key, value, n, finite=False, loose=False):
    tokens = _tokens(value, loose)
    if len(tokens) != n:
        raise ValueError(f"{where}: {key} has {len(tokens)} values, expected {n}")
    out = []
    for t in tokens:
        if not _FLOAT.match(t) or (finite and not math.isfinite(float(t))):
            raise ValueError(f"{where}: {key} has {t[:20]!r}, expected a {'finite ' if finite else ''}number")
        out.append(float(t))
    return out


def _one(where, key, value, lo, hi):
    return _ints(where, key, value, 1, lo, hi)[0]


def _check_tree(where, fields, n_features):
    for key in ("num_leaves", "num_cat", "leaf_value"):
        if key not in fields:
            raise ValueError(f"{where}: no {key}")
    L = _one(where, "num_leaves", fields["num_leaves"], 1, 2 ** 31 - 1)
    n_cat = _one(where, "num_cat", fields["num_cat"], 0, 2 ** 31 - 1)
    _floats(where, "leaf_value", fields["leaf_value"], L, finite=True)
    if "shrinkage" in fields:
        _floats(where, "shrinkage", fields["shrinkage"], 1)
    linear = _one(where, "is_linear", fields["is_linear"], 0, 1) if "is_linear" in fields else 0
    if L == 1 and not linear:
        return   # LightGBM reads nothing else of a one-leaf tree (its other arrays are written empty)
    for key, count, kind in (("leaf_weight", L, float), ("leaf_count", L, int)):
        if key in fields:
            (_floats if kind is float else _ints)(where, key, fields[key], count)
    if L > 1:
        for key in ("left_child", "right_child", "split_feature", "threshold"):
            if key not in fields:
                raise ValueError(f"{where}: no {key} (num_leaves={L})")
        left = _ints(where, "left_child", fields["left_child"], L - 1, -L, L - 2)
        right = _ints(where, "right_child", fields["right_child"], L - 1, -L, L - 2)
        _ints(where, "split_feature", fields["split_feature"], L - 1, 0, n_features - 1)
        threshold = _floats(where, "threshold", fields["threshold"], L - 1)
        for key, kind in (("split_gain", float), ("internal_value", float), ("internal_weight", float),
                          ("internal_count", int)):
            if key in fields:
                (_floats if kind is float else _ints)(where, key, fields[key], L - 1)
        decision = (_ints(where, "decision_type", fields["decision_type"], L - 1, 0, 127)
                    if "decision_type" in fields else [0] * (L - 1))
        for node, d in enumerate(decision):
            if d > 15 or (d >> 2) & 3 == 3:
                raise ValueError(f"{where}: decision_type {d} of node {node} is not one LightGBM writes")
            if d & 1:   # categorical split: the threshold indexes cat_boundaries
                t = threshold[node]
                if not (t == int(t) and 0 <= t < n_cat):
                    raise ValueError(f"{where}: node {node}'s categorical threshold {t} not in [0, {n_cat})")
        # one binary tree from the root: every node and leaf reached exactly once
        seen_nodes, seen_leaves, stack = {0}, set(), [0]
        while stack:
            node = stack.pop()
            for child in (left[node], right[node]):
                if child >= 0:
                    if child in seen_nodes:
                        raise ValueError(f"{where}: node {child} is reached twice (not a tree)")
                    seen_nodes.add(child)
                    stack.append(child)
                else:
                    if ~child in seen_leaves:
                        raise ValueError(f"{where}: leaf {~child} is reached twice (not a tree)")
                    seen_leaves.add(~child)
        if len(seen_nodes) != L - 1 or len(seen_leaves) != L:
            raise ValueError(f"{where}: the children reach {len(seen_nodes)} of {L - 1} nodes and "
                             f"{len(seen_leaves)} of {L} leaves")
    if n_cat > 0:
        for key in ("cat_boundaries", "cat_threshold"):
            if key not in fields:
                raise ValueError(f"{where}: no {key} (num_cat={n_cat})")
        bounds = _ints(where, "cat_boundaries", fields["cat_boundaries"], n_cat + 1, 0)
        if bounds[0] != 0 or any(b < a for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"{where}: cat_boundaries must start at 0 and not decrease")
        _ints(where, "cat_threshold", fields["cat_threshold"], bounds[-1], 0, 2 ** 32 - 1)
    if linear:
        _floats(where, "leaf_const", fields.get("leaf_const", ""), L)
        counts = _ints(where, "num_features", fields.get("num_features", ""), L, 0, n_features)
        total = sum(counts)
        if total:
            _ints(where, "leaf_features", fields.get("leaf_features", ""), total, 0, n_features - 1, loose=True)
            _floats(where, "leaf_coeff", fields.get("leaf_coeff", ""), total, loose=True)


def check_lightgbm_text(text, n_outputs=None):
    """Raise a ValueError unless ``text`` has the shape of a LightGBM model text (module docstring).

    Parameters
    ----------
    text : str
    n_outputs : int, optional
        The ensemble's outputs: 1 (``num_class=1``) or J (``num_class=J``).

    Returns
    -------
    int
        The number of features the model reads (``max_feature_idx + 1``).
    """
    if not isinstance(text, str):
        raise ValueError(f"LightGBM model text: expected str, got {type(text).__name__}")
    bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text)
    if bad:
        raise ValueError(f"LightGBM model text: control character {bad.group()!r} at offset {bad.start()}")
    lines = text.split("\n")
    if lines[0] != "tree":
        raise ValueError(f"LightGBM model text: starts with {lines[0][:40]!r}, not 'tree'")
    header, k = {}, 1
    while k < len(lines) and lines[k] != "":
        line = lines[k]
        key, eq, value = line.partition("=")
        if key not in _HEADER_KEYS or (not eq and key != "average_output"):
            raise ValueError(f"LightGBM model text: header line {k + 1} {line[:40]!r} is not one LightGBM writes")
        if key in header:
            raise ValueError(f"LightGBM model text: header key {key!r} twice")
        if "=" in value and key != "feature_names":
            raise ValueError(f"LightGBM model text: header line {k + 1} has more than one '='")
        header[key] = value
        k += 1
    for key in ("version", "num_class", "num_tree_per_iteration", "label_index", "max_feature_idx",
                "feature_names", "feature_infos"):
        if key not in header:
            raise ValueError(f"LightGBM model text: the header has no {key}")
    where = "LightGBM model text"
    n_class = _one(where, "num_class", header["num_class"], 1, 2 ** 20)
    per_iteration = _one(where, "num_tree_per_iteration", header["num_tree_per_iteration"], 1, 2 ** 20)
    if per_iteration != n_class:
        raise ValueError(f"{where}: num_tree_per_iteration={per_iteration} differs from num_class={n_class}")
    if n_outputs is not None and n_class != n_outputs:
        raise ValueError(f"{where}: num_class={n_class}, but the ensemble has {n_outputs} output(s)")
    _one(where, "label_index", header["label_index"], 0, 0)
    n_features = _one(where, "max_feature_idx", header["max_feature_idx"], 0, 2 ** 31 - 2) + 1
    for key in ("feature_names", "feature_infos"):
        if len(header[key].split(" ")) != n_features:
            raise ValueError(f"{where}: {key} has {len(header[key].split(' '))} entries, expected {n_features}")
    if "monotone_constraints" in header:
        _ints(where, "monotone_constraints", header["monotone_constraints"], n_features, -1, 1)
    if lines[k:k + 1] != [""]:
        raise ValueError(f"{where}: ends in the header")
    k += 1
    # trees: "Tree=i", key=value lines, two empty lines
    sizes, t = [], 0
    while k < len(lines) and lines[k].startswith("Tree="):
        if lines[k] != f"Tree={t}":
            raise ValueError(f"{where}: {lines[k][:20]!r} where 'Tree={t}' belongs")
        where_t = f"{where}: Tree={t}"
        start, fields = k, {}
        k += 1
        while k < len(lines) and lines[k] != "":
            key, eq, value = lines[k].partition("=")
            if not eq or key not in _TREE_KEYS or key in fields or "=" in value:
                raise ValueError(f"{where_t}: line {lines[k][:40]!r} is not one LightGBM writes (or repeats a key)")
            fields[key] = value
            k += 1
        if len(fields) > _MAX_TREE_LINES:
            raise ValueError(f"{where_t}: {len(fields)} lines, LightGBM reads at most {_MAX_TREE_LINES}")
        if lines[k:k + 2] != ["", ""]:
            raise ValueError(f"{where_t}: truncated (no empty lines after the tree)")
        k += 2
        _check_tree(where_t, fields, n_features)
        sizes.append(sum(len(line) + 1 for line in lines[start:k]))
        t += 1
    if t % n_class:
        raise ValueError(f"{where}: {t} trees is not a multiple of num_class={n_class}")
    if "tree_sizes" in header:
        written = _ints(where, "tree_sizes", header["tree_sizes"], t, 0) if header["tree_sizes"] else []
        if len(written) != t or written != sizes:
            raise ValueError(f"{where}: tree_sizes {written[:5]}... do not match the {t} trees' sizes {sizes[:5]}...")
    while k < len(lines) - 1 and lines[k] == "":   # a linear tree ends with one more empty line
        k += 1
    if lines[k:k + 2] != ["end of trees", ""]:
        raise ValueError(f"{where}: {lines[k][:40]!r} after {t} trees, expected 'end of trees'" if k < len(lines)
                         else f"{where}: truncated after {t} trees (no 'end of trees')")
    k += 2
    # trailer: optional feature importances, the parameters, pandas_categorical
    if lines[k:k + 1] == ["feature_importances:"]:
        k += 1
        while k < len(lines) and lines[k] != "":
            name, eq, count = lines[k].rpartition("=")
            if not eq or not _INT.match(count):
                raise ValueError(f"{where}: feature importance line {lines[k][:40]!r}")
            k += 1
        k += 1
    if lines[k:k + 1] == ["parameters:"]:
        k += 1
        while k < len(lines) and lines[k] != "end of parameters":
            if lines[k] and not _PARAMETER.match(lines[k]):
                raise ValueError(f"{where}: parameter line {lines[k][:40]!r} is not '[name: value]'")
            k += 1
        if k == len(lines):
            raise ValueError(f"{where}: truncated in the parameters (no 'end of parameters')")
        k += 1
        if lines[k:k + 1] == [""]:
            k += 1
    rest = lines[k:]
    if rest not in ([], [""], ["pandas_categorical:null"], ["pandas_categorical:null", ""]):
        raise ValueError(f"{where}: unexpected text after the trees: {rest[0][:40]!r}"
                         if rest[0] else f"{where}: unexpected text after the trees")
    return n_features


def check_xgboost_text(text):
    """Raise a ValueError unless ``text`` is a JSON object with XGBoost's ``learner`` and ``version``."""
    if not isinstance(text, str):
        raise ValueError(f"XGBoost model: expected str, got {type(text).__name__}")
    try:
        model = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"XGBoost model: not JSON ({exc})") from None
    if not isinstance(model, dict) or not isinstance(model.get("learner"), dict) or "version" not in model:
        raise ValueError("XGBoost model: a JSON object without 'learner' and 'version'")
