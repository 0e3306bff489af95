"""Docstring "Parameters" sections name exactly the signature's parameters (issue 37).

Every public name in the ``__all__`` of the modules below is checked with ``numpydoc.docscrape``: a function
against its own signature, a class against the signature of its constructor (documented in the class docstring,
scikit-learn style; a record without a "Parameters" section documents its fields under "Attributes"). Self/cls are left out; ``*args``/``**kwargs`` are documented with or without their stars
(``**options`` also stands for ``**kwargs``); one entry may name several parameters (``a, b : float``); the order is
free. A function without parameters needs no section.
"""
import importlib
import inspect
import warnings

import pytest

docscrape = pytest.importorskip("numpydoc.docscrape")

MODULES = ["fastcon", "fastcon.solvers", "fastcon.problems", "fastcon.metrics", "fastcon.datasets",
           "fastcon.estimators", "fastcon.boosting"]


def _public_objects():
    seen = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            obj = getattr(obj, "py_func", obj)  # a numba dispatcher documents its Python function
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            key = f"{getattr(obj, '__module__', modname)}.{getattr(obj, '__qualname__', name)}"
            seen.setdefault(key, (f"{modname}.{name}", obj))
    return sorted(seen.values(), key=lambda item: item[0])


def _signature_names(obj):
    """The parameters a docstring must name: ``{key: accepted spellings}``."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = {}
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            names["*" + p.name] = "*"
        elif p.kind is p.VAR_KEYWORD:
            names["**" + p.name] = "**"
        else:
            names[p.name] = ""
    return names


def _documented_names(doc, is_class):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown sections are not this test's business
        parsed = docscrape.NumpyDocString(doc or "")
    entries = parsed["Parameters"]
    if is_class and not entries:
        # A record (NamedTuple, dataclass) documents its fields, which are its constructor's parameters,
        # under "Attributes"
        entries = parsed["Attributes"]
    names = []
    for param in entries:
        names.extend(n.strip() for n in param.name.split(",") if n.strip())
    return names


def _mismatch(obj):
    if inspect.isclass(obj):
        if obj.__init__ is object.__init__ and obj.__new__ is object.__new__:
            return None
        expected = _signature_names(obj)
    else:
        expected = _signature_names(obj)
    if expected is None:
        return None
    documented = _documented_names(inspect.getdoc(obj), inspect.isclass(obj))
    if not expected and not documented:
        return None
    var_pos = next((k for k, v in expected.items() if v == "*"), None)
    var_kw = next((k for k, v in expected.items() if v == "**"), None)
    matched, unknown = set(), []
    for name in documented:
        if name.startswith("**") and var_kw is not None:
            key = var_kw
        elif name.startswith("*") and var_pos is not None:
            key = var_pos
        elif var_kw is not None and name == var_kw[2:]:
            key = var_kw
        elif var_pos is not None and name == var_pos[1:]:
            key = var_pos
        else:
            key = name
        if key in expected:
            matched.add(key)
        else:
            unknown.append(name)
    missing = [n for n in expected if n not in matched]
    if missing or unknown:
        return missing, unknown
    return None


def test_docstring_parameters_match_signatures():
    problems = []
    for qualname, obj in _public_objects():
        result = _mismatch(obj)
        if result is not None:
            missing, unknown = result
            problems.append(f"{qualname}: missing {missing}, unknown {unknown}")
    assert not problems, f"{len(problems)} docstring(s) disagree with their signature:\n" + "\n".join(problems)
