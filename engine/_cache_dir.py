"""Where numba keeps the engine's compiled kernels (imported before numba itself).

Kept apart from :mod:`engine._numba` so that ``import engine`` can fix the folder without
importing numba (about a second): whoever imports numba first (the engine, or a library
such as shap) must find ``NUMBA_CACHE_DIR`` already set, or numba reads the old value.

The folder is keyed on the engine's sources.  numba keys a cached kernel on its *own*
file only: after an edit of ``criteria.py``, a kernel of ``cart/`` that inlines a
``criteria`` kernel would load its stale machine code.  So the cache lives in
``<base>/<digest>``, where ``<digest>`` is a SHA-256 prefix of every engine source file
that defines kernels (calls ``njit`` or decorates with it).  Sources that change get a new, empty folder; a
process started before the edit (a long-lived server, its Dask workers) keeps writing to
the folder of the sources it runs, so it can never put old machine code where the new
sources look.  ``<base>`` is ``NUMBA_CACHE_DIR`` when the user sets it, else
``engine/__pycache__/numba`` when the package folder is writable (a working copy), else
``~/.cache/treelab/numba`` (an installed, read-only copy, such as the Docker image's).
The folders of older sources are removed, the newest :data:`KEEP_OLD` kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

#: Hex digits of the source digest that name a cache folder.
DIGEST_LENGTH = 16
#: Folders of older sources kept besides the current one (a server still running them).
KEEP_OLD = 2
#: The file in the cache folder holding the full digest (the warm-up's markers copy it).
STAMP_NAME = "treelab-sources.sha256"
_DIGEST_FOLDER = re.compile(rf"[0-9a-f]{{{DIGEST_LENGTH}}}")


def source_digest(package_dir: Path | None = None) -> str:
    """SHA-256 (hex, 64 characters) of the engine's kernel sources.

    Every ``*.py`` file under ``package_dir`` (default: this package) that calls ``njit``
    or decorates with it counts, by its relative path and bytes; other files (figures, the
    estimators' Python, a docstring that only names it) hold no cached code.
    """
    package_dir = package_dir or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for source in sorted(package_dir.rglob("*.py")):
        text = source.read_bytes()
        if b"@njit" not in text and b"njit(" not in text:  # not a word in a docstring
            continue
        digest.update(source.relative_to(package_dir).as_posix().encode())
        digest.update(text)
    return digest.hexdigest()


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _default_bases(package_dir: Path) -> list[Path]:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [
        package_dir / "__pycache__" / "numba",
        Path(base) / "treelab" / "numba",
        Path(tempfile.gettempdir()) / "treelab-numba",
    ]


def prune_old_folders(base: Path, current: str, keep: int = KEEP_OLD) -> list[Path]:
    """Remove the cache folders of older sources under ``base`` but the ``keep`` newest.

    Only folders named like a digest are touched; returns the removed folders.
    """
    try:
        old = [
            entry
            for entry in base.iterdir()
            if entry.is_dir() and _DIGEST_FOLDER.fullmatch(entry.name) and entry.name != current
        ]
        old.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
    except OSError:
        return []
    removed = []
    for entry in old[keep:]:
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def ensure_cache_dir(package_dir: Path | None = None) -> str | None:
    """Point ``NUMBA_CACHE_DIR`` at ``<base>/<digest>`` for the current engine sources.

    Idempotent: a ``NUMBA_CACHE_DIR`` already ending in the current digest (set by this
    function in a parent process, such as the server of a Dask worker) is kept as it is;
    one this function set for other sources (a folder named like a digest, holding
    :data:`STAMP_NAME`) is replaced by the current sources' folder beside it.
    Writes the full digest to :data:`STAMP_NAME` in the folder.

    Returns
    -------
    str or None
        The folder in use, or ``None`` when no writable folder was found (numba then
        caches next to the sources, or not at all).
    """
    package_dir = package_dir or Path(__file__).resolve().parent
    digest = source_digest(package_dir)
    name = digest[:DIGEST_LENGTH]
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given and (
        Path(given).name == name
        # set by this function for other sources (a Dask worker started by a server that
        # runs older sources): its base, not a folder inside it
        or (_DIGEST_FOLDER.fullmatch(Path(given).name) and (Path(given) / STAMP_NAME).is_file())
    ):
        bases = [Path(given).parent]
    elif given:
        bases = [Path(given)]
    else:
        bases = _default_bases(package_dir)
    for base in bases:
        folder = base / name
        if not _writable(folder):
            continue
        stamp = folder / STAMP_NAME
        try:
            if not stamp.exists() or stamp.read_text().strip() != digest:
                stamp.write_text(digest + "\n")
        except OSError:
            pass
        prune_old_folders(base, name)
        os.environ["NUMBA_CACHE_DIR"] = str(folder)
        return str(folder)
    return None
