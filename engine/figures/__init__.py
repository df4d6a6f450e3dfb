"""Plotly figure builders: pure functions of engine results -> ``go.Figure`` (or text)."""

from engine.figures.tree import tree_figure, tree_text

__all__ = ["tree_figure", "tree_text"]
