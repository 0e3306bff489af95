"""The import contracts of pyproject.toml (`[tool.importlinter]`, issue 37) hold: `lint-imports` passes.

The contracts are the layers of the architecture (docs/design.md: imports only point down), `_kernels` importing nothing
else of fastcon, metrics importing only `_kernels` and `datasets`, `import fastcon` not reaching the
experiments or the command line, and the core layers not importing the optional heavy dependencies.
import-linter is in the `test` extra, so CI runs this; elsewhere it is skipped when not installed.
"""
import ast
import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _lint_imports():
    if importlib.util.find_spec("importlinter") is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]' installs it)")
    # the console script of this interpreter's environment first, then the one on PATH
    here = pathlib.Path(sys.executable).parent / "lint-imports"
    return str(here) if here.exists() else shutil.which("lint-imports")


def test_import_contracts_are_kept():
    exe = _lint_imports()
    assert exe, "import-linter is installed but its `lint-imports` command was not found"
    run = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"lint-imports failed:\n{run.stdout}\n{run.stderr}"
    assert "0 broken" in run.stdout, run.stdout


def _load_pyproject():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_ignored_imports_of_optional_dependencies_stay_inside_functions():
    """import-linter does not tell a function-level import from a module-level one, so the contracts
    ignore the few lazy imports of dask, matplotlib and tqdm by the core layers. Each ignored import of
    an external package must stay inside a function: at module level it would cost every `import
    fastcon` that package, or fail without the optional extra."""
    contracts = _load_pyproject()["tool"]["importlinter"]["contracts"]
    checked = 0
    for contract in contracts:
        for entry in contract.get("ignore_imports", []):
            importer, imported = (part.strip() for part in entry.split("->"))
            if imported.split(".")[0] == "fastcon":
                continue
            path = ROOT / (importer.replace(".", "/") + ".py")
            if not path.exists():
                path = ROOT / importer.replace(".", "/") / "__init__.py"
            tree = ast.parse(path.read_text(), filename=str(path))
            module_level = [node.lineno for node in _module_level_imports(tree)
                            if imported in _imported_packages(node)]
            assert not module_level, f"{path.relative_to(ROOT)}:{module_level} imports {imported} at module level"
            checked += 1
    assert checked, "no ignored import of an optional dependency was found: update this test"


def _module_level_imports(tree):
    """Import statements executed when the module is imported (outside any function body)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _imported_packages(node):
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    return {node.module.split(".")[0]} if node.level == 0 and node.module else set()
