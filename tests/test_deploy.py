"""Deployment files: the Dockerfile's promises (checked on the file: CI has no container
engine), the upload limit, and the warm-up command the image runs at build time."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _instructions():
    """(instruction, argument) pairs with continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_base_user_health_and_address():
    steps = _instructions()
    words = [w for w, _ in steps]
    args = dict(a.split("=", 1) for w, a in steps if w == "ARG" and "=" in a)
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", args["PYTHON_IMAGE"])
    assert steps[words.index("FROM")][1] == "${PYTHON_IMAGE}"
    user = words.index("USER")
    assert steps[user][1] not in ("root", "0")
    assert user < words.index("CMD")
    # the kernel cache is built as the app's user, after the code is in place
    warm = next(i for i, (w, a) in enumerate(steps) if w == "RUN" and "engine.warmup" in a)
    assert warm > user and warm > max(i for i, w in enumerate(words) if w == "COPY")
    health = next(a for w, a in steps if w == "HEALTHCHECK")
    assert "/_stcore/health" in health
    cmd = next(a for w, a in steps if w == "CMD")
    assert "--server.address=0.0.0.0" in cmd and "app.py" in cmd
    assert "EXPOSE" in words and "8501" in next(a for w, a in steps if w == "EXPOSE")
    env = " ".join(a for w, a in steps if w == "ENV")
    assert "NUMBA_CACHE_DIR=/home/" in env  # writable by the app's user, baked at build


def _requirement_names(path):
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-r"):
            names.add(re.split(r"[<>=~ \[]", line)[0].lower())
    return names


def test_dockerfile_copies_what_the_app_needs_and_no_test_tools():
    copied = {a.split()[0] for w, a in _instructions() if w == "COPY"}
    assert {"app.py", "engine", "pages", "assets", ".streamlit", "requirements.txt"} <= copied
    assert not any("requirements-dev" in a for _, a in _instructions())
    run = next(a for w, a in _instructions() if w == "RUN" and "pip install" in a)
    assert "-r requirements.txt" in run
    runtime = _requirement_names(ROOT / "requirements.txt")
    development = _requirement_names(ROOT / "requirements-dev.txt")
    # the test and lint tools stay out of the image; the dev file pulls the runtime in
    assert {"pytest", "pytest-playwright", "hypothesis", "ruff", "pystreed"} <= development
    assert not runtime & {"pytest", "pytest-playwright", "hypothesis", "ruff", "pystreed"}
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text()
    # every package the app imports at run time (shap and shapiq: the TreeGrad numerics tab)
    assert {"streamlit", "numba", "scikit-learn", "distributed", "plotly", "shap", "shapiq"} <= (
        runtime
    )
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".git", "**/*.nbi", "**/*.nbc"} <= set(ignored)


def test_upload_limit_equals_the_engines_cap():
    from engine.data import MAX_BYTES

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    # Streamlit's maxUploadSize is in MiB (x 1024 x 1024)
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_BYTES


@pytest.mark.slow  # a fresh interpreter imports Streamlit
def test_the_server_skips_streamlits_full_collection_after_each_script_run():
    """A full ``gc.collect(2)`` after every script run (Streamlit's default) cost 0.1-0.4 s
    with the engine loaded, at every fragment poll of a job's live view: most of a core per
    watching session (docs/benchmarks.md, Load).  The server started from the repository
    reads the option off."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    read = subprocess.run(
        [
            sys.executable,
            "-c",
            "from streamlit import config; print(config.get_option('runner.postScriptGC'))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.stdout.strip().splitlines()[-1] == "False", read.stderr


@pytest.mark.slow  # a fresh process compiles a kernel group
def test_warmup_command_compiles_the_named_groups(tmp_path):
    """``python -m engine.warmup --groups ...`` (the image's build step, here on one group
    with an empty cache) reports each group, prerequisites first, and fills the cache."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "engine.warmup", "--groups", "tree.apply", "--report"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [ln.split()[:2] for ln in proc.stdout.splitlines()] == [["compiled", "tree.apply"]]
    # the cache folder is keyed on the engine's sources (engine/_cache_dir.py)
    from engine._cache_dir import DIGEST_LENGTH, source_digest

    folder = tmp_path / source_digest()[:DIGEST_LENGTH]
    assert list(folder.rglob("*.nbi")) and list(folder.rglob("*.nbc"))
    # the marker that lets a later start load the group here without a compiler process
    assert (folder / "treelab-warm-tree.apply").read_text() == (
        folder / "treelab-sources.sha256"
    ).read_text()
