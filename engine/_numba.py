"""Numba conventions shared by every kernel of the engine (docs/spec.md section 0.5).

* ``NUMBA_CACHE_DIR`` is set to a writable folder *before* numba is imported when the
  package folder is read-only; otherwise ``cache=True`` makes the import fail with
  ``RuntimeError: cannot cache function ...: no locator available``.
* ``njit`` is ``numba.njit(cache=True, nogil=True)``: every kernel releases the GIL so a
  long call never freezes the Streamlit server, and is cached on disk across processes.
* ``PARALLEL_LOCK`` serialises every call of a ``parallel=True`` kernel in the process:
  numba's ``workqueue`` threading layer aborts the process when two threads enter a
  parallel region at once.  Call parallel kernels through :func:`call_parallel`.
* :func:`register_warmup` registers a function that calls kernels on tiny inputs with the
  exact dtypes used later (float64 C-contiguous X, int64 codes); :mod:`engine.warmup`
  groups them per page and runs them in the background.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from engine._cache_dir import ensure_cache_dir as _ensure_cache_dir  # noqa: E402

CACHE_DIR = _ensure_cache_dir()


def _clear_stale_cache(package_dir: Path | None = None, cache_dir: str | None = None) -> bool:
    """Drop every cached kernel of the engine when any engine source file changed.

    numba keys a cached function on its *own* file only: after an edit of
    ``criteria.py``, a kernel of ``cart.py`` that inlines a ``criteria`` kernel would load
    its stale machine code.  A digest of the ``engine/**/*.py`` files that define kernels
    (mention ``njit``) is kept beside the cache; when it differs, the engine's ``*.nbi``/``*.nbc`` files are deleted, so the next
    call recompiles.  Installed copies that nobody edits keep their cache.  Returns True when
    files were deleted.
    """
    import hashlib

    package_dir = package_dir or Path(__file__).resolve().parent
    if cache_dir is None:
        cache_dir = CACHE_DIR
    digest = hashlib.sha256()
    for src in sorted(package_dir.rglob("*.py")):
        text = src.read_bytes()
        if b"njit" not in text:
            continue  # no kernel here (figures, estimators' Python): no cached code depends on it
        digest.update(src.relative_to(package_dir).as_posix().encode())
        digest.update(text)
    root = package_dir if cache_dir is None else Path(cache_dir)
    stamp = (root / "__pycache__" if cache_dir is None else root) / "treelab-sources.sha256"
    current = digest.hexdigest()
    try:
        if stamp.read_text().strip() == current:
            return False
    except OSError:
        pass
    removed = False
    for cached in list(root.rglob("*.nbi")) + list(root.rglob("*.nbc")):
        if cache_dir is None or package_dir.name in cached.as_posix():
            try:
                cached.unlink()
                removed = True
            except OSError:
                pass
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current + "\n")
    except OSError:
        pass
    return removed


_clear_stale_cache()

import numba  # noqa: E402  (must come after the cache folder is set)

#: Process-wide lock for ``parallel=True`` kernels (see module docstring).
PARALLEL_LOCK = threading.RLock()


def njit(fn: Callable | None = None, **kwargs):
    """``numba.njit`` with the engine defaults ``cache=True, nogil=True``.

    Use as ``@njit`` or ``@njit(parallel=True)``; extra keyword arguments go to numba.
    """
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    if fn is not None:
        return numba.njit(**kwargs)(fn)
    return numba.njit(**kwargs)


def call_parallel(kernel: Callable, *args):
    """Call a ``parallel=True`` kernel while holding :data:`PARALLEL_LOCK`."""
    with PARALLEL_LOCK:
        return kernel(*args)


_WARMUPS: list[tuple[str, Callable[[], object]]] = []


def register_warmup(name: str):
    """Decorator: register a zero-argument function that calls kernels on tiny inputs.

    The function must use exactly the dtypes and layouts of real calls (float64
    C-contiguous features, int64 codes) so that no new specialisation is compiled later.
    """

    def deco(fn: Callable[[], object]):
        _WARMUPS.append((name, fn))
        return fn

    return deco
