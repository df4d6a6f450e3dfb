"""Project rules that no single feature test covers (docs/spec.md 0.1 and 0.5)."""

import importlib
import pkgutil
import subprocess
import sys
import tomllib

import pytest
from numba.core.registry import CPUDispatcher

import engine
from tests.conftest import ROOT


def _engine_modules():
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        yield importlib.import_module(info.name)


@pytest.mark.slow
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


@pytest.mark.slow  # a fresh interpreter imports the first page
def test_the_first_page_imports_no_heavy_engine_parts():
    """Issue 13: nothing compiles before the first page draws.  What app.py and the Data page
    import (the shared sidebar, the data layer, the Data page's figures) must not pull in
    numba, scikit-learn or Dask: they are imported on first use by the other pages."""
    code = (
        "import sys\n"
        "import engine.data, engine.figures.data, pages._shared\n"
        "heavy = [m for m in ('numba', 'sklearn', 'distributed') if m in sys.modules]\n"
        "print(heavy); sys.exit(3 if heavy else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


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


# ---------------------------------------------------------------------------------------
# the import graph: pages -> services -> estimators -> kernels, no arrow back
# ---------------------------------------------------------------------------------------

#: numba kernels and the helpers they share (besides every ``*_kernels`` module).
KERNELS = {
    "engine._cache_dir",
    "engine._numba",
    "engine._random",
    "engine.criteria",
    "engine.cit.asymptotic",
    "engine.cit.permutation",
    "engine.cit.statistics",
    "engine.partition.scans",
}
#: the tree and data structures everything passes around.
FOUNDATIONS = ("engine.tree", "engine.data", "engine.teaching.datasets")
#: builders and scikit-learn estimators.
ESTIMATORS = {
    "engine.cart.candidates",
    "engine.cart.dics",
    "engine.cart.builder",
    "engine.cart.estimator",
    "engine.cit.parameters",
    "engine.cit.stages",
    "engine.cit.thresholds",
    "engine.cit.tree",
    "engine.cit.forest",
    "engine.literati.greedy",
    "engine.literati.search",
    "engine.literati.expansion",
    "engine.literati.interrupt",  # the stop flag of the search's kernel calls
    "engine.literati.states",
    "engine.literati.shapes",
    "engine.literati.anytime",
    "engine.literati.node_bounds",  # per-node bounds and gap shares of the incumbent
    "engine.literati.estimator",
    "engine.partition.growth",
    "engine.partition.base",
    "engine.partition.estimators",
    "engine.partition.pruning",
    "engine.partition.scoring",
    "engine.treegrad._model",
    "engine.treegrad.api",
}
#: what the pages call: model registry, jobs, each method's page computations.
SERVICES = {
    "engine.cluster",
    "engine.compare",  # k-fold cross-validation of the registered models
    "engine.compare_estimate",  # a comparison job's time from the cost curves
    "engine.model_registry",  # ModelSpec / ParamSpec, register_model, available_models
    "engine.baseline_models",  # the scikit-learn, XGBoost and LightGBM entries
    "engine.jobs",  # Job (the thread runner), JobSlots
    "engine.job_context",  # JobContext, drive_steps, ProgressRecorder (both runners)
    "engine.dask_runner",  # Job's Dask runner (worker and client sides)
    "engine.warmup",
    "engine.scale",  # the measured cost curves: time estimates of a method at n rows
    "engine.store",  # the run store: finished jobs' results as data on disk
    "engine.run_format",  # the run store's file format (data only, never a pickle)
    "engine.report",  # the self-contained HTML report
    "engine.images",  # PNG / SVG of figures (kaleido)
    "engine.snippets",  # Reproduce in Python: a run's engine calls as code text
    "engine.cart.profile",
    "engine.cart.registration",
    "engine.cart.service",
    "engine.cit.partykit",  # runs R partykit's ctree (the oracle of tests and benches)
    "engine.cit.report",
    "engine.cit.service",
    "engine.cit.steps",
    "engine.cit.topk",
    "engine.literati.registration",
    "engine.literati.service",
    "engine.literati.certify",  # certify any tree against a search's proven bound
    "engine.literati.objective",  # any tree as a shape tree, its objective (for certify)
    "engine.partition.explore",
    "engine.partition.service",
    "engine.treegrad.explain",
    "engine.treegrad.service",
    # the Learn section: lessons, the build-your-own-tree challenge, questions, scores
    "engine.teaching.challenge",
    "engine.teaching.glossary",
    "engine.teaching.growth",
    "engine.teaching.growth_records",
    "engine.teaching.cart_growth",
    "engine.teaching.lessons",
    "engine.teaching.lessons.model",
    "engine.teaching.lessons.cart",
    "engine.teaching.lessons.literati",
    "engine.teaching.lessons.partition",
    "engine.teaching.lessons.treegrad",
    "engine.teaching.lessons.cit",
    "engine.teaching.lessons.dics",
    "engine.teaching.predict",
    "engine.teaching.quiz",
}
#: arrows back that exist today, each with the task that removes it.
KNOWN_BACK_ARROWS = {
    # estimators that register themselves with the Compare registry (a service); CART's
    # entry already lives in engine/cart/registration.py, these move the same way
    ("engine.cit.tree", "engine.compare"),
    ("engine.cit.forest", "engine.compare"),
    ("engine.partition.estimators", "engine.compare"),
}


def _module_name(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _engine_imports(path) -> set[str]:
    """Every engine module ``path`` imports, at module level or inside a function."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            for full in names:
                target = ROOT / full.replace(".", "/")
                found.add(
                    full if target.with_suffix(".py").exists() or target.is_dir() else node.module
                )
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in ("engine", "pages", "app")}


def _layer(module: str) -> int:
    if module.split(".")[0] in ("pages", "app"):
        return 5
    if module.startswith("engine.figures"):
        return 4
    if module in SERVICES:
        return 3
    if module in ESTIMATORS:
        return 2
    if module.rsplit(".", 1)[-1].endswith("_kernels") or module in KERNELS:
        return 0
    if any(module == f or module.startswith(f + ".") for f in FOUNDATIONS):
        return 1
    return -1  # a package's __init__ (re-exports) or an unclassified module


def test_every_engine_module_has_a_layer():
    """New modules are placed in the graph below (add them to a layer's set)."""
    packages = {"engine"} | {
        info.name for info in pkgutil.walk_packages(engine.__path__, "engine.") if info.ispkg
    }
    unplaced = [
        _module_name(p)
        for p in sorted((ROOT / "engine").rglob("*.py"))
        if _layer(_module_name(p)) < 0 and _module_name(p) not in packages
    ]
    assert not unplaced, f"engine modules in no layer of tests/test_conventions.py: {unplaced}"


def test_imports_point_down_the_layers():
    """kernels (0) < tree/data (1) < estimators (2) < services (3) < figures (4) < pages (5):
    a module imports only its own layer or lower ones (package __init__ files re-export and
    are not checked).  Kernels may use the tree constants (layer 1)."""
    back = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        module = _module_name(path)
        layer = _layer(module)
        if layer < 0:
            continue
        for target in sorted(_engine_imports(path)):
            target_layer = _layer(target)
            if target == "engine":
                continue  # a module may import the whole engine package
            if target_layer < 0 and target.split(".")[0] == "engine":
                # a method package: it re-exports its estimators
                target_layer = 2
            allowed = target_layer <= layer or (layer == 0 and target_layer == 1)
            if not allowed and (module, target) not in KNOWN_BACK_ARROWS:
                back.append(f"{module} -> {target}")
    assert not back, f"imports pointing up the layers: {back}"
    for module, target in KNOWN_BACK_ARROWS:  # the list shrinks as arrows are removed
        assert target in _engine_imports(ROOT / (module.replace(".", "/") + ".py")), (
            f"{module} no longer imports {target}: drop it from KNOWN_BACK_ARROWS"
        )


@pytest.mark.slow
def test_readme_engine_example_runs(tmp_path):
    """The README's Python example runs as printed, from another folder."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", readme, re.S)[0]
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "class:" in done.stdout  # tree_text printed the tree


def test_every_bench_script_writes_its_region_of_docs_benchmarks(tmp_path):
    """docs/benchmarks.md has one region per bench script, and bench/_docs.py replaces
    exactly that region."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_docs", ROOT / "bench" / "_docs.py")
    bench_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_docs)
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in (ROOT / "bench").glob("bench_*.py"))
    assert scripts
    for name in scripts:
        assert text.count(f"<!-- begin bench/{name} -->") == 1, name
        assert text.count(f"<!-- end bench/{name} -->") == 1, name
        assert "update_benchmarks(" in (ROOT / "bench" / name).read_text(encoding="utf-8")
    copy = tmp_path / "benchmarks.md"
    copy.write_text(text, encoding="utf-8")
    bench_docs.update_benchmarks("bench_predict.py", "| new | table |", copy)
    new = copy.read_text(encoding="utf-8")
    begin, end = "<!-- begin bench/bench_predict.py -->", "<!-- end bench/bench_predict.py -->"
    assert new.split(begin)[1].split(end)[0].strip() == "| new | table |"
    assert new.split(end)[1] == text.split(end)[1]  # the rest is untouched
    assert new.split(begin)[0] == text.split(begin)[0]


# ---------------------------------------------------------------------------------------
# pages only draw, figures only draw (issue 15 points 2 and 3)
# ---------------------------------------------------------------------------------------

#: The method packages; each has one ``service`` module with what its page computes.
METHOD_PACKAGES = ("cart", "cit", "literati", "partition", "treegrad")
#: Calls that fit, route rows through a tree, or compute what a figure shows (attributions,
#: gammas, densities, the split of rows): a figure builder takes their results instead.
COMPUTING_CALLS = {
    "apply",
    "decision_path",
    "density",
    "density_grid",
    "edge_gammas",
    "explain",
    "fit",
    "fit_predict",
    "fit_transform",
    "leaf_gammas",
    "nll",
    "node_rows",
    "predict",
    "predict_proba",
    "rows_by_node",
    "section_cells",
    "shape_apply",
    "split_profile",
    "train_test_rows",
    "treegrad",
}
#: numpy's binning and routing: a figure gets bins from the engine (e.g.
#: ``engine.literati.shapes.shape_histogram``, ``SplitProfile.histogram``).
NUMPY_BINNING = {"digitize", "histogram", "histogram2d", "histogramdd", "searchsorted"}


def _python_files(folder: str):
    return sorted((ROOT / folder).glob("*.py"))


def _tree(path):
    import ast

    return ast.parse(path.read_text(encoding="utf-8"))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_attribute(node) -> bool:
    """``obj._name`` on anything but ``self`` (a class's own helpers are its business)."""
    import ast

    return (
        isinstance(node, ast.Attribute)
        and _private(node.attr)
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    )


def test_every_method_package_has_a_service_module():
    """One module with what the method's page computes, named the same in every package."""
    for package in METHOD_PACKAGES:
        assert (ROOT / "engine" / package / "service.py").is_file(), package
        assert f"engine.{package}.service" in SERVICES, package


def test_pages_import_public_names_only():
    """Pages import no underscore module or name from the engine, and reach a method only
    through its package (its public estimators) or its ``service`` module."""
    import ast

    bad = []
    for path in _python_files("pages") + [ROOT / "app.py"]:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names if a.name.startswith("engine")]
                names = []
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if any(_private(p) for p in parts):
                    bad.append(f"{path.name}: {module}")
                if (
                    len(parts) >= 3
                    and parts[1] in METHOD_PACKAGES
                    and (ROOT / "engine" / parts[1] / f"{parts[2]}.py").exists()
                    and parts[2] != "service"
                ):
                    bad.append(f"{path.name}: {module} (use engine.{parts[1]}.service)")
            bad += [f"{path.name}: {n}" for n in names if _private(n)]
    assert not bad, f"pages importing private or non-service engine names: {sorted(set(bad))}"


def test_pages_use_no_private_attribute():
    """No ``obj._name`` in a page (a private method of an estimator, a private field of a
    tree): what a page needs has a public name in the engine."""
    import ast

    bad = [
        f"{path.name}:{node.lineno} .{node.attr}"
        for path in _python_files("pages")
        for node in ast.walk(_tree(path))
        if _private_attribute(node)
    ]
    assert not bad, f"private attributes used by pages: {bad}"


def test_figures_only_draw():
    """Figure builders read no private attribute of engine objects, import no private name
    from outside the figures package, call nothing that fits, routes rows or computes what
    they show (:data:`COMPUTING_CALLS`: they take those results as arguments) and bin no
    rows themselves (:data:`NUMPY_BINNING`: the engine's functions do)."""
    import ast

    private, imports, calls = [], [], []
    for path in _python_files("engine/figures"):
        for node in ast.walk(_tree(path)):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if _private_attribute(node):
                private.append(f"{where} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                outside = not node.module.startswith("engine.figures")
                if any(_private(p) for p in node.module.split(".")) or (
                    outside and any(_private(a.name) for a in node.names)
                ):
                    imports.append(f"{where} {node.module}")
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                on_numpy = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") in (
                    "np",
                    "numpy",
                )
                if (name in NUMPY_BINNING) if on_numpy else (name in COMPUTING_CALLS):
                    calls.append(f"{where} {name}()")
    assert not private, f"figures reading private attributes: {private}"
    assert not imports, f"figures importing private engine names: {imports}"
    assert not calls, f"figures computing instead of drawing: {calls}"


def test_every_page_figure_goes_through_projection_mode():
    # the sidebar's Projection mode restyles a figure in pages._jobs.shown_figure; a page
    # calling st.plotly_chart on a bare figure would stay small on a projector
    import re

    calls = []
    for path in sorted((ROOT / "pages").glob("*.py")):
        text = path.read_text()
        for match in re.finditer(r"plotly_chart\(\s*([^\s,)]+)", text):
            calls.append((path.name, match.group(1)))
    assert len(calls) >= 12
    bare = [(name, first) for name, first in calls if not first.startswith("shown_figure(")]
    assert bare == [], bare
