"""Project rules that no single feature test covers (docs/spec.md 0.1 and 0.5)."""

import importlib
import pkgutil
import subprocess
import sys
import tomllib

from numba.core.registry import CPUDispatcher

import engine
from tests.conftest import ROOT


def _engine_modules():
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        yield importlib.import_module(info.name)


def test_engine_never_imports_streamlit():
    """docs/spec.md 0.1: the engine is a library; importing all of it must not pull in streamlit."""
    code = (
        "import importlib, pkgutil, sys, engine\n"
        "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
        "    importlib.import_module(m.name)\n"
        "sys.exit(3 if 'streamlit' in sys.modules else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:] or "engine imported streamlit"


def test_every_kernel_is_nogil_and_cached():
    """docs/spec.md 0.5: a kernel holding the GIL freezes the server; an uncached one recompiles in
    every process. Checks every numba dispatcher defined in an engine module."""
    kernels = {}
    for module in _engine_modules():
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__:
                kernels[f"{module.__name__}.{name}"] = obj
    assert "engine.tree._kernels._apply_kernel" in kernels
    not_nogil = [k for k, d in kernels.items() if not d.targetoptions.get("nogil")]
    not_cached = [k for k, d in kernels.items() if type(d._cache).__name__ == "NullCache"]
    assert not not_nogil, f"kernels without nogil=True: {not_nogil}"
    assert not not_cached, f"kernels without cache=True: {not_cached}"


def _readme_command(label: str) -> str:
    """The command in the README's code block after the line starting with ``label``."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(label))
    return next(line for line in lines[start:] if line.startswith("python3 -m venv"))


def test_ci_runs_the_readme_test_command():
    """.ci/run must run exactly the README's test command (which installs the dev set)."""
    test_command = _readme_command("Run the tests")
    assert "requirements-dev.txt" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci_lines


def test_runtime_and_development_dependencies_are_separate():
    """requirements.txt holds what the app and engine import; requirements-dev.txt adds the
    test tools on top of it (and pyproject.toml reads its dependencies from the former)."""
    runtime = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    dev = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert dev[next(i for i, line in enumerate(dev) if not line.startswith("#"))] == (
        "-r requirements.txt"
    )
    for tool in ("pytest", "hypothesis", "ruff"):
        assert tool not in runtime
        assert any(line.startswith(tool) for line in dev)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["dependencies"]["file"] == [
        "requirements.txt"
    ]


def test_the_package_lists_every_engine_subpackage():
    """pyproject.toml names the installed packages explicitly (the bundled datasets are mapped
    into engine.data.datasets): a new engine subpackage must be added there or
    ``pip install .`` would leave it out."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    found = {"engine"} | {
        info.name for info in pkgutil.walk_packages(engine.__path__, "engine.") if info.ispkg
    }
    assert found | {"engine.data.datasets"} == listed
    mapped = pyproject["tool"]["setuptools"]["package-dir"]["engine.data.datasets"]
    assert (ROOT / mapped / "catalog.json").is_file()
