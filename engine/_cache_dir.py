"""Where numba keeps the engine's compiled kernels (imported before numba itself).

Kept apart from :mod:`engine._numba` so that ``import engine`` can fix the folder without
importing numba (about a second): whoever imports numba first (the engine, or a library
such as shap) must find ``NUMBA_CACHE_DIR`` already set when the package folder is
read-only (a container's installed copy), or ``cache=True`` fails with "no locator
available".
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def ensure_cache_dir() -> str | None:
    """Point ``NUMBA_CACHE_DIR`` at a writable folder when the package folder is not.

    Returns the folder in use, or ``None`` when numba may cache next to the sources.
    An explicit ``NUMBA_CACHE_DIR`` set by the user is always kept.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    package_dir = Path(__file__).resolve().parent
    if os.access(package_dir, os.W_OK):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for candidate in (
        os.path.join(base, "treelab", "numba"),
        os.path.join(tempfile.gettempdir(), "treelab-numba"),
    ):
        try:
            os.makedirs(candidate, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK):
            os.environ["NUMBA_CACHE_DIR"] = candidate
            return candidate
    return None
