"""engine/_cache_dir.py: the kernel cache lives in a folder keyed on the engine's sources."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import _cache_dir
from engine._cache_dir import (
    DIGEST_LENGTH,
    STAMP_NAME,
    ensure_cache_dir,
    prune_old_folders,
    source_digest,
)

ROOT = Path(__file__).resolve().parent.parent


def _package(tmp_path):
    package = tmp_path / "src" / "engine"
    package.mkdir(parents=True)
    (package / "a.py").write_text("x = njit(1)\n")
    (package / "b.py").write_text("y = njit(2)\n")
    (package / "plots.py").write_text("z = 0\n")
    return package


def test_the_digest_is_the_sha256_of_the_kernel_files_by_path_and_bytes(tmp_path):
    package = _package(tmp_path)
    expected = hashlib.sha256(b"a.pyx = njit(1)\nb.pyy = njit(2)\n").hexdigest()
    assert source_digest(package) == expected


def test_an_edit_of_another_kernel_file_moves_the_cache_but_a_plain_file_does_not(
    tmp_path, monkeypatch
):
    package = _package(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    first = Path(ensure_cache_dir(package))
    assert first.parent == tmp_path / "cache"
    assert first.name == source_digest(package)[:DIGEST_LENGTH]
    assert (first / STAMP_NAME).read_text().strip() == source_digest(package)
    (first / "a.f-1.py311.nbi").write_bytes(b"index")

    (package / "plots.py").write_text("z = 1\n")  # no kernel there: same folder
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert Path(ensure_cache_dir(package)) == first

    (package / "b.py").write_text("y = njit(3)\n")  # a kernel file other than a.py's
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    second = Path(ensure_cache_dir(package))
    assert second != first and second.parent == first.parent
    assert list(second.rglob("*.nbi")) == []  # the new sources start from an empty cache
    assert (first / "a.f-1.py311.nbi").exists()  # an older server may still be using it
    assert os.environ["NUMBA_CACHE_DIR"] == str(second)


def test_a_folder_already_keyed_on_the_current_sources_is_kept(tmp_path, monkeypatch):
    """A Dask worker inherits the server's NUMBA_CACHE_DIR: no digest folder inside it."""
    package = _package(tmp_path)
    keyed = tmp_path / "cache" / source_digest(package)[:DIGEST_LENGTH]
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(keyed))
    assert ensure_cache_dir(package) == str(keyed)


def test_a_folder_keyed_on_older_sources_gives_its_sibling_not_a_folder_inside(
    tmp_path, monkeypatch
):
    """A Dask worker started by a server that runs older sources inherits that server's
    folder; the worker imports the current sources, whose folder sits beside it."""
    package = _package(tmp_path)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    old = Path(ensure_cache_dir(package))
    (package / "b.py").write_text("y = njit(3)\n")  # the sources change
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(old))  # what the old server's worker inherits
    new = Path(ensure_cache_dir(package))
    assert new == tmp_path / "cache" / source_digest(package)[:DIGEST_LENGTH]
    assert new != old and not any(path.is_dir() for path in old.iterdir())


def test_without_numba_cache_dir_a_working_copy_caches_under_its_pycache(tmp_path, monkeypatch):
    package = _package(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    folder = Path(ensure_cache_dir(package))
    assert folder == package / "__pycache__" / "numba" / source_digest(package)[:DIGEST_LENGTH]


def test_a_read_only_package_caches_in_the_users_cache_folder(tmp_path, monkeypatch):
    package = _package(tmp_path)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    monkeypatch.setattr(_cache_dir, "_writable", lambda folder: package not in folder.parents)
    folder = Path(ensure_cache_dir(package))
    assert folder.parent == tmp_path / "home-cache" / "treelab" / "numba"


def test_older_folders_are_pruned_to_the_newest_few(tmp_path):
    base = tmp_path / "cache"
    names = [f"{index:016x}" for index in range(5)]
    for age, name in enumerate(names):
        (base / name).mkdir(parents=True)
        os.utime(base / name, (1_000_000 - age * 100, 1_000_000 - age * 100))
    (base / "not-a-digest").mkdir()
    removed = prune_old_folders(base, current=names[0], keep=2)
    assert sorted(path.name for path in removed) == names[3:]
    assert sorted(path.name for path in base.iterdir()) == sorted(names[:3] + ["not-a-digest"])


@pytest.mark.slow  # a child process imports the engine
def test_the_engine_in_a_child_process_uses_the_same_folder(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    code = (
        "import os, engine._numba as n; "
        "print(n.CACHE_DIR); print(os.environ['NUMBA_CACHE_DIR']); "
        "import numba.core.config as c; print(c.CACHE_DIR)"
    )
    first = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr[-2000:]
    folder = first.stdout.split()[0]
    assert Path(folder).parent == tmp_path
    assert first.stdout.split() == [folder] * 3  # numba reads the keyed folder
    env["NUMBA_CACHE_DIR"] = folder  # what a Dask worker started by that process inherits
    second = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert second.stdout.split() == [folder] * 3


def test_a_file_that_only_names_njit_in_its_text_does_not_count(tmp_path):
    package = _package(tmp_path)
    before = source_digest(package)
    (package / "notes.py").write_text('"""The folder is keyed on files that use ``njit``."""\n')
    assert source_digest(package) == before
    (package / "kernel.py").write_text("@njit\ndef f(x):\n    return x\n")
    assert source_digest(package) != before
