"""No function of `fastcon._kernels` takes more than ``MAX_PARAMETERS`` parameters (issue 37).

A kernel that needs more groups what belongs together into a module-level ``NamedTuple`` (numba
types it field by field): `fastcon._kernels._linalg.CSR`, `fastcon._kernels._multiclass_np.PairwiseTerm`,
and so on. Read from the source with ``ast``, so helpers count as much as public kernels, and
nothing is imported or compiled.
"""
import ast
import importlib.util
from pathlib import Path

MAX_PARAMETERS = 10
# Located without importing fastcon (no numba compilation, no package import time).
KERNELS = Path(importlib.util.find_spec("fastcon").origin).parent / "_kernels"


def parameter_count(node):
    """Positional (positional-only included) and keyword-only parameters of a ``def`` or ``lambda``."""
    a = node.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)


def functions(tree):
    """``(name, line, count)`` of every function in a module, nested ones and lambdas included."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield getattr(node, "name", "<lambda>"), node.lineno, parameter_count(node)


def offenders(max_parameters=MAX_PARAMETERS):
    found = []
    for path in sorted(KERNELS.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        found += [f"{path.name}:{line} {name} ({count} parameters)"
                  for name, line, count in functions(tree) if count > max_parameters]
    return found


def test_the_kernel_modules_are_found():
    names = {path.name for path in KERNELS.glob("*.py")}
    assert {"_linalg.py", "_losses.py", "_multiclass_np.py", "_simd.py"} <= names


def test_no_kernel_function_takes_more_than_ten_parameters():
    bad = offenders()
    assert not bad, (f"{len(bad)} function(s) of fastcon/_kernels take more than {MAX_PARAMETERS} parameters; "
                     "group related ones into a module-level NamedTuple:\n  " + "\n  ".join(bad))


def test_the_count_sees_every_kind_of_parameter():
    """The checker counts positional-only, ordinary and keyword-only parameters, in nested functions too."""
    source = ("def outer(a, /, b, *rest, c, **extra):\n"
              "    def inner(p, q=1, *, r=2):\n"
              "        return lambda s, t: s\n")
    counts = {name: count for name, _, count in functions(ast.parse(source))}
    assert counts == {"outer": 3, "inner": 3, "<lambda>": 2}
    eleven = "def f(" + ", ".join(f"x{i}" for i in range(11)) + "):\n    pass\n"
    assert [count for _, _, count in functions(ast.parse(eleven))] == [11]
