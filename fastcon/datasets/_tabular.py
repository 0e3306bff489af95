"""Recipes for the fairness tables (adult, compas, german, bank, law_school): raw file -> `Dataset`.

Every recipe here follows the same conventions, so the datasets are interchangeable in experiments:

* labels are float ±1, +1 being the "favourable"/positive outcome named in each docstring;
* categorical columns are one-hot encoded with the categories of the *fitting* table in sorted
  order (feature name ``"column=value"``); a category never seen while fitting encodes as all zeros;
* numeric columns are min-max scaled to [0, 1] with the fitting table's min and max (a constant
  column becomes 0); values of another table (adult's test file) may fall slightly outside [0, 1]
  and are deliberately not clipped, so the map stays affine;
* the sensitive attribute stays a feature (the papers do the same) and also becomes ``groups``:
  group 0 is the majority / privileged group, group 1 the protected one;
* X is dense C-contiguous float64.

Raw files are read with the stdlib ``csv`` module; gzip-compressed and plain copies are both
accepted (detected from the magic bytes, not the file name), so a file downloaded from the official
source works as well as a recompressed copy.
"""
from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import numpy as np

from ._dataset import Dataset

__all__ = ["open_text", "TableEncoder", "load_adult", "load_compas", "load_german", "load_bank",
           "load_law_school"]


def open_text(path) -> io.TextIOBase:
    """Open ``path`` as text, transparently gunzipping when it starts with the gzip magic bytes."""
    path = Path(path)
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    # newline="" lets csv handle the CRLF of bank-additional-full.csv itself.
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline="")
    return open(path, "r", encoding="utf-8", errors="replace", newline="")


def read_rows(path, delimiter=",", skipinitialspace=False):
    """All non-blank rows of a delimited file as lists of stripped strings."""
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=skipinitialspace)
        return [[c.strip() for c in row] for row in reader if row and any(c.strip() for c in row)]


def columns(header, rows, path):
    """``{name: array of str}``; a duplicated header name refers to its first occurrence."""
    width = len(header)
    for lineno, row in enumerate(rows, start=2):
        if len(row) != width:
            raise ValueError(f"{path}: row {lineno} has {len(row)} fields, expected {width}")
    data = np.array(rows, dtype=str).reshape(len(rows), width)
    first = {}
    for j, name in enumerate(header):
        first.setdefault(name, j)
    return {name: data[:, j] for name, j in first.items()}


class TableEncoder:
    """One-hot / indicator / min-max encoder of string columns, fitted on one table.

    Parameters
    ----------
    spec : list of (column, kind)
        ``kind`` is ``"numeric"`` (min-max to [0, 1]), ``"onehot"`` (one indicator per sorted
        category) or ``("indicator", value)`` (a single 0/1 column ``column == value``).
        Output columns follow the order of ``spec``.
    """

    def __init__(self, spec):
        self.spec = list(spec)

    def fit(self, table):
        self.params = {}
        for col, kind in self.spec:
            if kind == "numeric":
                v = table[col].astype(np.float64)
                self.params[col] = (float(v.min()), float(v.max()))
            elif kind == "onehot":
                self.params[col] = sorted(set(table[col].tolist()))
        return self

    @property
    def feature_names(self):
        names = []
        for col, kind in self.spec:
            if kind == "numeric":
                names.append(col)
            elif kind == "onehot":
                names.extend(f"{col}={c}" for c in self.params[col])
            else:
                names.append(f"{col}={kind[1]}")
        return names

    def transform(self, table):
        blocks = []
        for col, kind in self.spec:
            v = table[col]
            if kind == "numeric":
                lo, hi = self.params[col]
                x = v.astype(np.float64)
                blocks.append(((x - lo) / (hi - lo) if hi > lo else np.zeros_like(x))[:, None])
            elif kind == "onehot":
                cats = np.array(self.params[col], dtype=str)
                blocks.append((v[:, None] == cats[None, :]).astype(np.float64))
            else:
                blocks.append((v == kind[1]).astype(np.float64)[:, None])
        return np.ascontiguousarray(np.hstack(blocks))


def _binary_dataset(enc, table, y, groups, group_names, name):
    return Dataset(enc.transform(table), y, groups=groups, group_names=group_names, name=name,
                   feature_names=enc.feature_names, task="binary")


# ------------------------------------------------------------------------------------ adult
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
_ADULT_NUMERIC = {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"}


def _read_adult(path):
    rows = read_rows(path, skipinitialspace=True)
    # adult.test opens with the line "|1x3 Cross validator".
    rows = [r for r in rows if not r[0].startswith("|")]
    table = columns(ADULT_COLUMNS, rows, path)
    # Test labels end with a period (">50K."); train labels do not.
    table["income"] = np.char.rstrip(table["income"], ".")
    return table


def load_adult(files, subset):
    """UCI Adult (``adult.data`` / ``adult.test``) -> d = 108 dense features.

    Label: income ``>50K`` -> +1, ``<=50K`` -> -1. Features: the 6 numerics (age, fnlwgt,
    education-num, capital-gain, capital-loss, hours-per-week) min-max scaled with the *train*
    min/max, and the 8 categoricals one-hot with the *train* categories in sorted order, ``?``
    (missing) being a category of its own: workclass 9, education 16, marital-status 7,
    occupation 15, relationship 6, race 5, sex 2, native-country 42 -> 6 + 102 = 108 columns
    (the d = 108 of the fairness prototypes). Test rows use the train encoder, so train and test
    have the same columns. Groups: sex, 0 = "male", 1 = "female" (train 21,790 / 10,771).
    """
    train = _read_adult(files["train"])
    enc = TableEncoder([(c, "numeric" if c in _ADULT_NUMERIC else "onehot") for c in ADULT_COLUMNS[:-1]])
    enc.fit(train)
    parts = [train] if subset in ("train", "all") else []
    if subset in ("test", "all"):
        parts.append(_read_adult(files["test"]))
    table = {c: np.concatenate([p[c] for p in parts]) for c in ADULT_COLUMNS}
    y = np.where(table["income"] == ">50K", 1.0, -1.0)
    groups = (table["sex"] == "Female").astype(np.int64)
    return _binary_dataset(enc, table, y, groups, ["male", "female"], f"adult[{subset}]")


# ----------------------------------------------------------------------------------- compas
COMPAS_FEATURES = [("sex", ("indicator", "Female")), ("age", "numeric"), ("age_cat", "onehot"),
                   ("race", "onehot"), ("juv_fel_count", "numeric"), ("juv_misd_count", "numeric"),
                   ("juv_other_count", "numeric"), ("priors_count", "numeric"),
                   ("c_charge_degree", ("indicator", "F"))]


def load_compas(files, subset):
    """ProPublica ``compas-scores-two-years.csv`` -> 6,172 rows x d = 16 dense features.

    Rows: ProPublica's filter (``-30 <= days_b_screening_arrest <= 30``, empty values excluded as
    in their R code; ``is_recid != -1``; ``c_charge_degree != "O"``; ``score_text != "N/A"``)
    keeps exactly 6,172 of 7,214 rows. Label: ``two_year_recid`` 1 -> +1 (re-offended), 0 -> -1.
    Features (16, matching the d = 16 of the SPIDER paper's COMPAS): ``sex=Female`` indicator,
    ``age`` (min-max), ``age_cat`` one-hot (3), ``race`` one-hot (6, race kept as a feature),
    ``juv_fel_count``, ``juv_misd_count``, ``juv_other_count``, ``priors_count`` (min-max) and
    a ``c_charge_degree=F`` (felony) indicator. The COMPAS scores themselves (decile_score,
    score_text, v_*) are not features. The header repeats ``decile_score`` and ``priors_count``;
    the first occurrence is used (the two ``priors_count`` columns are identical in this file).
    Groups: race, 0 = "Caucasian" (2,103), 1 = "non-Caucasian" (4,069).
    """
    rows = read_rows(files["train"])
    table = columns(rows[0], rows[1:], files["train"])
    days = table["days_b_screening_arrest"]
    has_days = days != ""
    days_f = np.where(has_days, days, "nan").astype(np.float64)
    keep = (has_days & (days_f >= -30) & (days_f <= 30) & (table["is_recid"] != "-1")
            & (table["c_charge_degree"] != "O") & (table["score_text"] != "N/A"))
    table = {c: v[keep] for c, v in table.items()}
    enc = TableEncoder(COMPAS_FEATURES).fit(table)
    y = np.where(table["two_year_recid"] == "1", 1.0, -1.0)
    groups = (table["race"] != "Caucasian").astype(np.int64)
    return _binary_dataset(enc, table, y, groups, ["Caucasian", "non-Caucasian"], "compas")


# ----------------------------------------------------------------------------------- german
GERMAN_COLUMNS = ["checking_status", "duration", "credit_history", "purpose", "credit_amount",
                  "savings", "employment_since", "installment_rate", "personal_status_sex",
                  "other_debtors", "residence_since", "property", "age", "other_installment_plans",
                  "housing", "existing_credits", "job", "people_liable", "telephone",
                  "foreign_worker", "credit_risk"]
_GERMAN_NUMERIC = {"duration", "credit_amount", "installment_rate", "residence_since", "age",
                   "existing_credits", "people_liable"}


def load_german(files, subset):
    """UCI Statlog ``german.data`` (symbolic) -> 1,000 rows x d = 61 dense features.

    Label: attribute 21, 1 (good) -> +1, 2 (bad) -> -1. Features: the 7 numeric attributes
    (2, 5, 8, 11, 13, 16, 18) min-max scaled, the 13 categorical ones (``A1x`` codes) one-hot with
    the categories present in the file, sorted: 4+5+10+5+5+4+3+4+3+3+4+2+2 = 54 -> d = 61
    (A47 and A95 never occur). The paper's d = 21 came from an ordinal encoding. Groups: sex from
    attribute 9 "personal status and sex": A92, A95 -> 1 = "female" (310), A91, A93, A94 ->
    0 = "male" (690).
    """
    rows = read_rows(files["train"], delimiter=" ", skipinitialspace=True)
    table = columns(GERMAN_COLUMNS, rows, files["train"])
    enc = TableEncoder([(c, "numeric" if c in _GERMAN_NUMERIC else "onehot") for c in GERMAN_COLUMNS[:-1]])
    enc.fit(table)
    y = np.where(table["credit_risk"] == "1", 1.0, -1.0)
    groups = np.isin(table["personal_status_sex"], ["A92", "A95"]).astype(np.int64)
    return _binary_dataset(enc, table, y, groups, ["male", "female"], "german")


# ------------------------------------------------------------------------------------- bank
_BANK_CATEGORICAL = {"job", "marital", "education", "default", "housing", "loan", "contact", "month",
                     "day_of_week", "poutcome"}


def load_bank(files, subset):
    """UCI ``bank-additional-full.csv`` -> 41,188 rows x d = 63 dense features.

    Label: ``y`` yes -> +1 (subscribed a term deposit), no -> -1. Features: all 20 columns; the
    10 numerics (age, duration, campaign, pdays, previous, emp.var.rate, cons.price.idx,
    cons.conf.idx, euribor3m, nr.employed) min-max scaled, the 10 categoricals one-hot with every
    category present, ``unknown`` included: job 12, marital 4, education 8, default 3, housing 3,
    loan 3, contact 2, month 10, day_of_week 5, poutcome 3 -> 53 + 10 = 63. The papers' d = 54
    comes from an unstated encoding that this does not try to guess. ``duration`` is kept
    although UCI notes it is only known after the call (drop the column for a realistic model).
    ``pdays`` = 999 ("never contacted") is kept as a number, as in the raw file. Groups: age,
    0 = "age 25-60" (inclusive, 39,210), 1 = "age <25 or >60" (1,978).
    """
    rows = read_rows(files["train"], delimiter=";")
    header, rows = rows[0], rows[1:]
    table = columns(header, rows, files["train"])
    enc = TableEncoder([(c, "onehot" if c in _BANK_CATEGORICAL else "numeric") for c in header if c != "y"])
    enc.fit(table)
    y = np.where(table["y"] == "yes", 1.0, -1.0)
    age = table["age"].astype(np.float64)
    groups = ((age < 25) | (age > 60)).astype(np.int64)
    return _binary_dataset(enc, table, y, groups, ["age 25-60", "age <25 or >60"], "bank")


# ------------------------------------------------------------------------------- law school
_LAW_NUMERIC = ["decile1b", "decile3", "lsat", "ugpa", "zfygpa", "zgpa", "fulltime", "fam_inc", "male",
                "tier"]


def load_law_school(files, subset):
    """``law_school_clean.csv`` (Le Quy et al. 2022) -> 20,798 rows x d = 12 dense features.

    Label: ``pass_bar`` 1 -> +1 (passed the bar exam), 0 -> -1. Features: the 10 numeric columns
    (decile1b, decile3, lsat, ugpa, zfygpa, zgpa, fulltime, fam_inc, male, tier) min-max scaled,
    and ``race`` one-hot (``race=Non-White``, ``race=White``) -> d = 12, the paper's 12
    attributes. Groups: race, 0 = "White" (17,491), 1 = "Non-White" (3,307); the file's ``race``
    column holds exactly these two values.
    """
    rows = read_rows(files["train"])
    table = columns(rows[0], rows[1:], files["train"])
    enc = TableEncoder([(c, "numeric") for c in _LAW_NUMERIC] + [("race", "onehot")]).fit(table)
    y = np.where(table["pass_bar"].astype(np.float64) == 1.0, 1.0, -1.0)
    groups = (table["race"] != "White").astype(np.int64)
    return _binary_dataset(enc, table, y, groups, ["White", "Non-White"], "law_school")
