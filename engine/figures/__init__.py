"""Plotly figure builders: pure functions of engine results -> ``go.Figure`` (or text).

``tree_figure`` and ``tree_text`` are imported on first use, so that ``engine.figures.data``
(the Data page's plots) does not import the tree module and numba.
"""

__all__ = ["tree_figure", "tree_text"]


def __getattr__(name: str):
    if name in __all__:
        from engine.figures import tree

        return getattr(tree, name)
    raise AttributeError(f"module 'engine.figures' has no attribute {name!r}")
