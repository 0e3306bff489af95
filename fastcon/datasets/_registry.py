"""The registry of named datasets: their files, where to get them, and `load`.

Each dataset has a `DatasetSpec`: the files it needs (name as stored, sha256, official URLs), the
sub-folder of the data home they live in, the expected shapes and the recipe (in `_recipes`) that
turns the raw files into a `Dataset`. Every file is checked against its sha256 on first use in a
process (`ChecksumError`; ``verify=False`` skips it); a missing file is downloaded, in the form it
arrives in, unless ``download=False`` or ``FASTCON_OFFLINE=1``, else `DatasetFileError` says where
to get it. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import dataclasses
import hashlib
import http.client
import io
import os
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ._dataset import Dataset
from ._fcsr import is_fcsr, read_fcsr

__all__ = ["SpecFile", "DatasetSpec", "SPECS", "DatasetFileError", "ChecksumError", "data_home",
           "list_datasets", "get_spec", "dataset_info", "fetch_file", "load"]

DEFAULT_TIMEOUT = 60.0
SUBSETS = ("train", "test", "all")

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets"


class DatasetFileError(FileNotFoundError):
    """A dataset file is missing locally and was not (or could not be) downloaded.

    The message names the file, the folder it is expected in and its official URLs, and says how
    to get it (``fastcon datasets NAME --download``, or ``FASTCON_DATA`` for another data folder).

    Parameters
    ----------
    message : str
        The error message.
    dataset, path
        Stored as the attributes of the same names.

    Attributes
    ----------
    dataset : str or None
        Registry name of the dataset (e.g. ``"a9a"``).
    path : pathlib.Path or None
        Where the missing file is expected (its stored form).
    """

    def __init__(self, message, *, dataset=None, path=None):
        super().__init__(message)
        self.dataset = dataset
        self.path = path


class ChecksumError(ValueError):
    """A file's sha256 differs from the one the registry expects."""


@dataclass(frozen=True)
class SpecFile:
    """One data file of a dataset.

    Parameters
    ----------
    name : str
        File name as stored in the dataset folder (e.g. ``"a9a.gz"``).
    sha256 : str
        sha256 of the file as stored.
    urls : tuple of str
        Official download URLs, tried in order (mirrors).
    role : {"train", "test"}
        Which subset the file holds; a dataset without a test file keeps all rows in "train".
    raw_sha256 : str, optional
        For a ``.gz`` name: sha256 of the uncompressed content. The plain file (``name``
        without ``.gz``) is then accepted too, and is what a download of a plain source yields.
    member : str, optional
        When the URL serves a zip archive: the base name of the member to extract.
    """

    name: str
    sha256: str
    urls: tuple
    role: str = "train"
    raw_sha256: str | None = None
    member: str | None = None

    def __post_init__(self):
        fetched = self.fetched_name
        if fetched not in dict(self.forms()):
            raise ValueError(f"SpecFile {self.name}: a download yields {fetched!r}, which is not an accepted form")

    @property
    def raw_name(self) -> str:
        return self.name[:-3] if self.name.endswith(".gz") else self.name

    @property
    def fetched_name(self) -> str:
        """Name of the file a download produces (the archive member, else the URL's last part)."""
        return self.member or self.urls[0].rstrip("/").rsplit("/", 1)[-1]

    def forms(self):
        """``[(file name, sha256)]`` of the accepted local forms, stored form first."""
        forms = [(self.name, self.sha256)]
        if self.raw_sha256 and self.raw_name != self.name:
            forms.append((self.raw_name, self.raw_sha256))
        return forms


@dataclass(frozen=True)
class DatasetSpec:
    """A named dataset: files, shapes, encoding notes and the recipe that loads it."""

    name: str
    description: str
    folder: str
    files: tuple
    shapes: dict                 # subset -> (n_samples, n_features) after the recipe
    task: str
    label: str
    groups: str | None
    encoding: str
    source: str                  # the official page
    paper_notes: str = ""
    class_names: tuple = ()
    test_needs_train: bool = False   # the test subset is encoded with statistics of the train file

    @property
    def has_test(self) -> bool:
        return any(f.role == "test" for f in self.files)

    def with_base_url(self, base_url: str) -> "DatasetSpec":
        """The same spec with every file downloaded from ``base_url`` (a local server in tests)."""
        base = base_url.rstrip("/")
        files = tuple(dataclasses.replace(f, urls=(f"{base}/{f.urls[0].rstrip('/').rsplit('/', 1)[-1]}",))
                      for f in self.files)
        return dataclasses.replace(self, files=files)


def _f(name, sha256, *urls, role="train", raw_sha256=None, member=None):
    return SpecFile(name, sha256, tuple(urls), role, raw_sha256, member)


SPECS = {spec.name: spec for spec in [
    DatasetSpec(
        "a9a", "UCI Adult in LIBSVM's binarized form (123 binary features).", "a9a",
        (_f("a9a.gz", "b301f3e87350539f3ebc751d07b4691a8c66f0bf38c1d179c86bbf5e2d9623b2",
            f"{_LIBSVM}/binary/a9a",
            raw_sha256="f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"),
         _f("a9a.t.gz", "92967561181c73a60149cc8221b936eb746573fda8cbf483115d673f42b26c3f",
            f"{_LIBSVM}/binary/a9a.t", role="test",
            raw_sha256="1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9")),
        {"train": (32561, 123), "test": (16281, 123), "all": (48842, 123)}, "binary",
        "+1 income >50K / -1 <=50K (as in the file)",
        "sex from feature 72 (Female): 0 male 21,790 / 1 female 10,771 (train); test 5,421 female",
        "CSR, LIBSVM values as-is, n_features=123 (a9a.t never uses feature 123).",
        f"{_LIBSVM}/binary.html#a9a",
        "SSG and partial-fairness papers: n = 48,842 = a9a + a9a.t, d = 123, groups male/female. "
        "Some copies of a9a.t pad the first row with '123:0'; the hash is of the unpadded file."),
    DatasetSpec(
        "adult", "UCI Adult census income, raw (14 attributes).", "adult",
        (_f("adult.data.gz", "c7a2b4716a97f930123e0baf879188d701e798172631a654fc703d4b082907f3",
            f"{_UCI}/adult/adult.data",
            raw_sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
         _f("adult.test.gz", "8a2c1bffa6e7ce5abfa43881ae5e87c4311ebc2b3cd526c9c40a43f19f06f799",
            f"{_UCI}/adult/adult.test", role="test",
            raw_sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05")),
        {"train": (32561, 108), "test": (16281, 108), "all": (48842, 108)}, "binary",
        "+1 income >50K / -1 <=50K (test labels' trailing '.' removed)",
        "sex: 0 male 21,790 / 1 female 10,771 (train); test 10,860 / 5,421",
        "6 numerics min-max (train min/max, not clipped on test) + 8 categoricals one-hot with the "
        "sorted train categories, '?' a category of its own -> d = 108; sex stays a feature.",
        "https://archive.ics.uci.edu/dataset/2/adult",
        "GBM-Bregman paper: 48,842 rows, sensitive attribute sex, standard train/test split "
        "(its code label-encodes the categoricals instead).", test_needs_train=True),
    DatasetSpec(
        "compas", "ProPublica COMPAS two-year recidivism, ProPublica's row filter.", "compas",
        (_f("compas-scores-two-years.csv.gz",
            "706137877c1ffafbb8580f2523644bbe34e639dad00922abc6079f8f31d75514",
            "https://raw.githubusercontent.com/propublica/compas-analysis/master/compas-scores-two-years.csv",
            raw_sha256="c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d"),),
        {"all": (6172, 16)}, "binary", "+1 two_year_recid = 1 / -1 otherwise",
        "race: 0 Caucasian 2,103 / 1 non-Caucasian 4,069",
        "filter |days_b_screening_arrest| <= 30, is_recid != -1, c_charge_degree != 'O', "
        "score_text != 'N/A' (7,214 -> 6,172 rows); features sex=Female, age, age_cat (3), race (6), "
        "juv_fel/juv_misd/juv_other/priors counts, c_charge_degree=F -> d = 16; numerics min-max.",
        "https://github.com/propublica/compas-analysis",
        "SPIDER paper: n = 6,172, d = 16, Caucasian vs non-Caucasian, 2:1 split (4,115 / 2,057). "
        "The SSG paper's COMPAS (n = 11,757, d = 14) is compas-scores.csv, not this file."),
    DatasetSpec(
        "german", "UCI Statlog German credit (symbolic attributes).", "german",
        (_f("german.data", "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
            f"{_UCI}/statlog/german/german.data"),),
        {"all": (1000, 61)}, "binary", "+1 good credit (1) / -1 bad (2)",
        "sex from attribute 9: 0 male (A91, A93, A94) 690 / 1 female (A92, A95) 310",
        "7 numerics min-max + 13 categoricals one-hot (A-codes present in the file, sorted) -> d = 61.",
        "https://archive.ics.uci.edu/dataset/144/statlog+german+credit+data",
        "SSG paper: d = 21 after an unstated (ordinal) encoding; groups male vs female."),
    DatasetSpec(
        "bank", "UCI Bank Marketing, bank-additional-full (20 attributes).", "bank_marketing",
        (_f("bank-additional-full.csv.gz", "25ef5a7f820659c9010405d079b068761b9e4a75c232a6271ee6a77fc3de52ae",
            f"{_UCI}/00222/bank-additional.zip",
            raw_sha256="74adfc578bf77a7ff4bb1ba4a9f8709d9e3c6907342959c2c8416847e0afb4d8",
            member="bank-additional-full.csv"),),
        {"all": (41188, 63)}, "binary", "+1 y = yes (subscribed) / -1 no",
        "age: 0 age in [25, 60] 39,210 / 1 outside 1,978",
        "10 numerics min-max (duration kept, pdays 999 kept) + 10 categoricals one-hot incl. "
        "'unknown' -> d = 63.",
        "https://archive.ics.uci.edu/dataset/222/bank+marketing",
        "SSG / partial-fairness papers: d = 54 after an unstated encoding (not reproduced)."),
    DatasetSpec(
        "law_school", "LSAC bar passage study, cleaned by Le Quy et al. (2022).", "law_school",
        (_f("law_school_clean.csv.gz", "6d0a79b483e93368bf61aecedbc32c65a12ffebd947de3038643fa9d3e60405a",
            "https://raw.githubusercontent.com/tailequy/fairness_dataset/"
            "abb5a18b822ba56a221c5311082e192e85000b95/experiments/data/law_school_clean.csv",
            raw_sha256="23c1b173f3480beb7afc4957b107a9917dfc4a8dc9d87ea6034ec35222152452"),),
        {"all": (20798, 12)}, "binary", "+1 pass_bar = 1 / -1 otherwise",
        "race: 0 White 17,491 / 1 Non-White 3,307",
        "10 numerics min-max + race one-hot (2) -> d = 12.",
        "https://github.com/tailequy/fairness_dataset",
        "Partial-fairness paper: 20,798 rows, 12 attributes (2d + 2 = 26), White vs non-White."),
    DatasetSpec(
        "pendigits", "UCI pen-based handwritten digits (16 pen coordinates).", "pendigits",
        (_f("pendigits.tra", "e2b9eb9f0d0467e2b64a4816a3420edf2b8043447576f4b84337aba44a9f97d3",
            f"{_UCI}/pendigits/pendigits.tra"),
         _f("pendigits.tes", "8bd03229c5c5291fefe43e45465dd948d2645bf23328b9d993e0b777666b2015",
            f"{_UCI}/pendigits/pendigits.tes", role="test")),
        {"train": (7494, 16), "test": (3498, 16), "all": (10992, 16)}, "multiclass", "digit 0-9",
        None, "features / 100 -> [0, 1], dense.", "https://archive.ics.uci.edu/dataset/81",
        "IQRC paper: LIBSVM pendigits (same rows), apparently unscaled; train split only.",
        class_names=tuple(str(k) for k in range(10))),
    DatasetSpec(
        "segment", "UCI Statlog image segmentation (19 region features).", "segment",
        (_f("segment.dat", "d8985260e6e47056da89a4e4124c82ee88fd6072e0db139484c50ff4b390cd82",
            f"{_UCI}/statlog/segment/segment.dat"),),
        {"all": (2310, 19)}, "multiclass", "class 1-7 -> 0-6",
        None, "columns min-max to [-1, 1] over all rows (like LIBSVM segment.scale); constant -> 0.",
        "https://archive.ics.uci.edu/dataset/147",
        "IQRC paper: LIBSVM segment.scale, d = 19 (the paper's d = 7 is a typo).",
        class_names=("brickface", "sky", "foliage", "cement", "window", "path", "grass")),
    DatasetSpec(
        "usps", "USPS handwritten digits, ESL version (16x16 grey levels).", "usps",
        (_f("zip.train.gz", "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
            "https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz",
            "https://web.stanford.edu/~hastie/ElemStatLearn/datasets/zip.train.gz",
            raw_sha256="abc9f5c75b997cabe66b5d01727d5a681c69298e1641a8d37b55433a52129dc0"),
         _f("zip.test.gz", "8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f",
            "https://hastie.su.domains/ElemStatLearn/datasets/zip.test.gz",
            "https://web.stanford.edu/~hastie/ElemStatLearn/datasets/zip.test.gz", role="test",
            raw_sha256="6bde17b4f1cd68e0630cd2751d6495b5795d9165ab2dc4a0be8b7002b732f4cc")),
        {"train": (7291, 256), "test": (2007, 256), "all": (9298, 256)}, "multiclass", "digit 0-9",
        None, "values in [-1, 1] kept as is, dense.",
        "https://hastie.su.domains/ElemStatLearn/data.html",
        "IQRC paper: LIBSVM usps (same split, labels 1-10 there); train split only.",
        class_names=tuple(str(k) for k in range(10))),
    DatasetSpec(
        "drybean", "UCI Dry Bean (16 shape features of 7 bean varieties).", "dry_bean",
        (_f("Dry_Bean_Dataset.arff.gz", "2f602fb12d54d5553b699264494d63a81a152b384a49d1e50c3b094ebebdcf3b",
            "https://archive.ics.uci.edu/static/public/602/dry+bean+dataset.zip",
            f"{_UCI}/00602/DryBeanDataset.zip",
            raw_sha256="0c15e09b28d93da342fdd5e7b5a97a993bc8ab07f2c4d317dcb3467f94412795",
            member="Dry_Bean_Dataset.arff"),),
        {"all": (13611, 16)}, "multiclass", "class by sorted name -> 0-6",
        None, "16 features standardized (mean 0, population std 1) over all rows.",
        "https://archive.ics.uci.edu/dataset/602/dry+bean+dataset",
        "GBM-Bregman paper: StandardScaler, alphabetical labels, but only the first 15 features.",
        class_names=("BARBUNYA", "BOMBAY", "CALI", "DERMASON", "HOROZ", "SEKER", "SIRA")),
]}

_ALIASES = {"bank_marketing": "bank", "dry_bean": "drybean", "law": "law_school", "lawschool": "law_school"}


def _offline() -> bool:
    """``$FASTCON_OFFLINE`` is set to a true value: missing files are not downloaded by default."""
    return os.environ.get("FASTCON_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def data_home(data_home=None) -> Path:
    """The data folder: the argument, else ``$FASTCON_DATA``, else ``~/.cache/fastcon``.

    Parameters
    ----------
    data_home : str or path-like, optional
        The data folder to use; default ``$FASTCON_DATA``, else ``~/.cache/fastcon``.
    """
    if data_home is None:
        data_home = os.environ.get("FASTCON_DATA") or "~/.cache/fastcon"
    return Path(data_home).expanduser()


_resolve_home = data_home  # `load` and `dataset_info` have a parameter of the same name


def list_datasets() -> list:
    """Names accepted by `load`, in registry order."""
    return list(SPECS)


def get_spec(name) -> DatasetSpec:
    key = str(name).strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in SPECS:
        raise ValueError(f"name: unknown dataset {name!r}; known datasets: {', '.join(SPECS)}")
    return SPECS[key]


# ------------------------------------------------------------------------------- file access
_verified: set = set()


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _where_to_get(spec_file, folder) -> str:
    lines = [f"  put it at:   {Path(folder) / spec_file.name}"]
    if spec_file.raw_name != spec_file.name and spec_file.raw_sha256:
        lines.append(f"  (or, uncompressed, at {Path(folder) / spec_file.raw_name})")
    for url in spec_file.urls:
        lines.append(f"  get it from: {url}" + (f" (member {spec_file.member} of the zip archive)"
                                                 if spec_file.member else ""))
    return "\n".join(lines)


def _check_local(path, sha, spec_file, dataset):
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _verified:
        return
    got = _sha256(path)
    if got != sha:
        raise ChecksumError(
            f"dataset {dataset!r}: {path} has sha256 {got}, expected {sha}. The file is damaged or a "
            f"different version: delete it to download it again, or replace it:\n"
            f"{_where_to_get(spec_file, path.parent)}\nPass verify=False to load it anyway.")
    _verified.add(key)


def _http_get(url, timeout) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "fastcon-datasets"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read()


def _member(payload, member) -> bytes:
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        # Match on the base name: the archives nest members in a folder, and UCI zips also carry
        # __MACOSX/._name resource forks, whose base name differs.
        for info in zf.infolist():
            if info.filename.rsplit("/", 1)[-1] == member and "__MACOSX" not in info.filename:
                return zf.read(info)
    raise KeyError(f"no member {member!r} in the archive")


def _write_atomic(target: Path, content: bytes):
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a data file is meant to be shared
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fetch_file(spec_file: SpecFile, folder, download=None, *, dataset="?", verify=True,
               timeout=DEFAULT_TIMEOUT) -> Path:
    """Local path of ``spec_file`` in ``folder``, downloading it when missing.

    Parameters
    ----------
    spec_file : SpecFile
    folder : path-like
        The dataset's folder (``data_home / spec.folder``).
    download : bool, optional
        Try the official URLs when no accepted form of the file is present. Default: yes, unless
        the environment variable ``FASTCON_OFFLINE`` is ``1``.
    dataset : str
        Dataset name, for messages.
    verify : bool
        Check the sha256 of an existing local file (downloads are always checked).
    timeout : float
        Seconds per HTTP request.

    Returns
    -------
    Path
        The stored form if present, else the plain form, else the freshly downloaded file.

    Raises
    ------
    DatasetFileError
        The file is missing and downloading is off or failed; the message says where to put
        which file and where to get it.
    ChecksumError
        A local file or every download had the wrong sha256; a bad download writes nothing.
    """
    folder = Path(folder)
    for fname, sha in spec_file.forms():
        path = folder / fname
        if path.is_file():
            if verify:
                _check_local(path, sha, spec_file, dataset)
            return path
    head = f"dataset {dataset!r}: file {spec_file.name} not found in {folder}"
    other_home = "set FASTCON_DATA (or pass data_home=) to use another data folder."
    command = " ".join(["fastcon datasets", *([dataset] if dataset in SPECS else []), "--download"]
                       + ([] if folder.parent == _resolve_home() else ["--data-home", str(folder.parent)]))

    def missing(detail, hint):
        return DatasetFileError(f"{head}{detail}\n{_where_to_get(spec_file, folder)}\n{hint}",
                                dataset=dataset, path=folder / spec_file.name)

    offline = download is None and _offline()
    if download is None:
        download = not offline
    if not download:
        raise missing(f" and downloading is off ({'FASTCON_OFFLINE=1' if offline else 'download=False'}).",
                      f"Download it with `{command}`, or {other_home}")
    fname, sha = next(f for f in spec_file.forms() if f[0] == spec_file.fetched_name)
    failures, mismatches = [], []
    for url in spec_file.urls:
        try:
            payload = _http_get(url, timeout)
            content = _member(payload, spec_file.member) if spec_file.member else payload
        except (OSError, ValueError, KeyError, http.client.HTTPException, zipfile.BadZipFile) as exc:
            failures.append(f"{url}: {exc}")
            continue
        got = hashlib.sha256(content).hexdigest()
        if got != sha:
            mismatches.append(f"{url}: sha256 {got}, expected {sha}")
            continue
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(folder / fname, content)
        except OSError as exc:
            raise missing(f"; downloaded it but could not write {folder / fname}: {exc}",
                          f"Make the folder writable, or {other_home}") from exc
        return folder / fname
    if mismatches:
        raise ChecksumError(f"{head}; the download does not match the expected file, nothing was "
                            "written:\n  " + "\n  ".join(mismatches + failures) + "\n"
                            f"Get a matching copy by hand:\n{_where_to_get(spec_file, folder)}")
    raise missing(" and the download failed:\n  " + "\n  ".join(failures),
                  f"Put the file there by hand, or {other_home}")


# ------------------------------------------------------------------------------- public API
def _roles(spec, subset):
    if subset not in SUBSETS:
        raise ValueError(f"subset: expected one of {SUBSETS}, got {subset!r}")
    if not spec.has_test:
        if subset == "test":
            raise ValueError(f"subset: dataset {spec.name!r} has no test split; load subset='all' and "
                             "use Dataset.split(fractions, seed) instead")
        return ("train",)
    if subset == "test":
        return ("train", "test") if spec.test_needs_train else ("test",)
    return ("train",) if subset == "train" else ("train", "test")


def _model_loader(name):
    """The loader to name when ``name`` is a path to a saved model (an estimator's ``save``), else None.

    Only the archive's list of entries is read: ``header.json`` (or ``__header__.npy``, an earlier
    linear model) marks a model file, which `fastcon.load_model` reads.
    """
    if not isinstance(name, (str, os.PathLike)):
        return None
    try:
        with zipfile.ZipFile(os.fspath(name)) as archive:
            entries = set(archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    return "fastcon.load_model" if entries & {"header.json", "__header__.npy"} else None


def load(name, data_home=None, subset="train", download=None, verify=True) -> Dataset:
    """Load a named dataset as a `Dataset`.

    Parameters
    ----------
    name : str or os.PathLike
        One of `list_datasets` (``"bank_marketing"`` and ``"dry_bean"`` are accepted too), or the
        path of a ``.fcsr`` file (`fastcon.datasets.read_fcsr`: memory-mapped, checked against its
        checksums when ``verify``; ``data_home`` and ``download`` do not apply).
    data_home : path-like, optional
        Data folder; default ``$FASTCON_DATA``, else ``~/.cache/fastcon``. Files live in
        ``data_home / <folder>`` (see `dataset_info`).
    subset : {"train", "test", "all"}
        The official train or test file, or both stacked (train first). A dataset without a test
        file returns all its rows for "train" and "all", and raises ValueError for "test".
    download : bool, optional
        Download missing files from their official URLs (sha256-verified, written atomically).
        Default: yes, unless the environment variable ``FASTCON_OFFLINE`` is ``1``.
    verify : bool
        Check the sha256 of local files (once per process and file); of every section of a ``.fcsr``
        file (one read of the file).

    Returns
    -------
    Dataset
        Encoded as documented in the recipe and in ``dataset_info(name)["encoding"]``.

    Raises
    ------
    DatasetFileError
        A file is missing and downloading is off or failed (a `FileNotFoundError`).
    ChecksumError
        A file has the wrong sha256.
    ValueError
        An unknown name; when ``name`` is the path of a model file written by an estimator's
        ``save``, the message names the loader to use (`fastcon.load_model`).
    """
    from ._recipes import RECIPES

    if isinstance(name, (str, os.PathLike)) and (os.fspath(name).endswith(".fcsr") or is_fcsr(name)):
        if subset != "train":
            raise ValueError(f"subset: a .fcsr file holds one dataset (got subset={subset!r}); split it with "
                             "Dataset.split")
        return read_fcsr(name, verify=verify)
    try:
        spec = get_spec(name)
    except ValueError:
        loader = _model_loader(name)
        if loader is not None:
            raise ValueError(f"name: {os.fspath(name)!r} is a model file written by an estimator's save(), not a "
                             f"dataset; read it with {loader}({os.fspath(name)!r})") from None
        raise
    folder = _resolve_home(data_home) / spec.folder
    files = {f.role: fetch_file(f, folder, download, dataset=spec.name, verify=verify)
             for f in spec.files if f.role in _roles(spec, subset)}
    return RECIPES[spec.name](files, subset if spec.has_test else "all")


def dataset_info(name, data_home=None) -> dict:
    """Description, shapes, groups, encoding and file locations (present or where to put them).

    Parameters
    ----------
    name : str
        Registry name of the dataset (see `list_datasets`).
    data_home : str or path-like, optional
        The data folder (see `data_home`).

    Returns
    -------
    dict
        Keys: name, description, task, label, groups, encoding, source, paper_notes,
        class_names, subsets, shapes, n_features, folder, available, files (one dict per file:
        name, role, path (found or expected), present, urls, member, sha256, raw_sha256).
    """
    spec = get_spec(name)
    folder = _resolve_home(data_home) / spec.folder
    files = []
    for f in spec.files:
        found = next((folder / n for n, _ in f.forms() if (folder / n).is_file()), None)
        files.append({"name": f.name, "role": f.role, "path": str(found or folder / f.name),
                      "present": found is not None, "urls": list(f.urls), "member": f.member,
                      "sha256": f.sha256, "raw_sha256": f.raw_sha256})
    return {
        "name": spec.name, "description": spec.description, "task": spec.task, "label": spec.label,
        "groups": spec.groups, "encoding": spec.encoding, "source": spec.source,
        "paper_notes": spec.paper_notes, "class_names": list(spec.class_names),
        "subsets": list(SUBSETS) if spec.has_test else ["train", "all"],
        "shapes": dict(spec.shapes), "n_features": next(iter(spec.shapes.values()))[1],
        "folder": str(folder), "available": all(f["present"] for f in files), "files": files,
    }
