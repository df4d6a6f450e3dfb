"""Project rules that no single feature test covers (SPEC 0.1 and 0.5)."""

import importlib
import pkgutil
import subprocess
import sys

from numba.core.registry import CPUDispatcher

import engine
from tests.conftest import ROOT


def _engine_modules():
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        yield importlib.import_module(info.name)


def test_engine_never_imports_streamlit():
    """SPEC 0.1: the engine is a library; importing all of it must not pull in streamlit."""
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
    """SPEC 0.5: a kernel holding the GIL freezes the server; an uncached one recompiles in
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
