"""Numba conventions shared by every kernel of the engine (docs/spec.md section 0.5).

* ``NUMBA_CACHE_DIR`` is set *before* numba is imported, to a writable folder keyed on the
  engine's kernel sources (:mod:`engine._cache_dir`): an edit of any kernel file gives a
  new, empty cache, and a read-only package folder cannot make ``cache=True`` fail with
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

import sys
import threading
from collections.abc import Callable

from engine._cache_dir import ensure_cache_dir as _ensure_cache_dir

_NUMBA_IMPORTED_BEFORE = "numba" in sys.modules
CACHE_DIR = _ensure_cache_dir()

import numba  # noqa: E402  (must come after the cache folder is set)

if _NUMBA_IMPORTED_BEFORE and CACHE_DIR:
    # numba was imported first (by shap, or a notebook): it read NUMBA_CACHE_DIR then.
    numba.core.config.reload_config()

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
