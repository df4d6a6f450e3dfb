"""Literati: anytime optimal shape generalized trees via AO* (docs/spec.md section 1).

Public API: :class:`LiteratiClassifier` (scikit-learn estimator), :class:`LiteratiSearch`
(stepwise search for the live page, from :meth:`LiteratiClassifier.start`),
:class:`GreedyShapeTreeClassifier` (the greedy shape tree baseline in the same candidate
space), :func:`shape_route` (routing of one shape function) and :data:`TRACE_COLUMNS`.
"""

from engine.literati.estimator import (
    TRACE_COLUMNS,
    GreedyShapeTreeClassifier,
    LiteratiClassifier,
    LiteratiSearch,
    shape_route,
)

__all__ = [
    "TRACE_COLUMNS",
    "GreedyShapeTreeClassifier",
    "LiteratiClassifier",
    "LiteratiSearch",
    "shape_route",
]
