"""TreeLab engine: data layer, tree arrays, background jobs and tree methods.

The engine never imports streamlit; every function here can be used from a notebook.
"""

from engine import _numba  # noqa: F401  (sets NUMBA_CACHE_DIR before any kernel compiles)
