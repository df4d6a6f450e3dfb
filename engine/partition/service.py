"""What the Conditional density page computes (Partition Tree / Forest, docs/spec.md
section 2): the page's one entry point to the method.

The split, the job steps, the density grid, the cells and the slices table are in
:mod:`engine.partition.explore` and re-exported here; this module adds what the page
computed itself: the test scores with the density floor (:func:`holdout_scores`), the slices
of p(y | x) at the query rows (:func:`query_slices`), class probabilities over the whole
class list (:func:`class_grid`) and the comparison table (:func:`comparison_table`).
Every function works without Streamlit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from engine.partition.base import MAX_LEAVES_CLF, MAX_LEAVES_REG, MISSING_VALUES_NOTE
from engine.partition.explore import (
    MIN_ROWS,
    calibration_scores,
    comparison_steps,
    density_grid,
    growth_steps,
    make_model,
    section_cells,
    slice_frame,
    split_rows,
)
from engine.partition.scoring import pit_histogram

__all__ = [
    "MAX_LEAVES_CLF",
    "MAX_LEAVES_REG",
    "MIN_ROWS",
    "MISSING_VALUES_NOTE",
    "HoldoutScores",
    "calibration_scores",
    "class_grid",
    "pit_histogram",
    "comparison_steps",
    "comparison_table",
    "density_grid",
    "growth_steps",
    "make_model",
    "query_slices",
    "section_cells",
    "slice_frame",
    "split_rows",
    "holdout_scores",
]


class HoldoutScores(NamedTuple):
    """Test NLL of a model and how much of it the density floor decides.

    ``nll``: mean negative log density (nats per unit of y; log-loss for classes) with
    densities floored at the floor; ``n_out``: test rows outside the model's support;
    ``n_floored``: rows whose density is below the floor; ``n_small``: of them, those with
    a positive density; ``n_empty``: rows in empty cells (density 0) inside the support.
    """

    nll: float
    n_out: int
    n_floored: int
    n_small: int
    n_empty: int


def holdout_scores(model, X, y, floor: float) -> HoldoutScores:
    """:class:`HoldoutScores` of ``model`` on ``X`` (float64 ``(n, d)``), ``y`` (``(n,)``).

    The floor is a density per unit of y, so it can decide the NLL for rows *inside* the
    support too: empty cells (density 0) and, on a target in large units, every row (a y
    range of 1e12 gives densities of about 1e-13 < 1e-9).
    """
    nll, n_out = model.nll(X, y, floor=floor)
    density = model.density(X, y)
    return HoldoutScores(
        float(nll),
        int(n_out),
        int(np.sum(density < floor)),
        int(np.sum((density > 0) & (density < floor))),
        max(int(np.sum(density == 0)) - int(n_out), 0),
    )


def query_slices(model, queries, y, classes=None) -> list[dict]:
    """p(y | x) at each query, as the slice figures take it.

    ``queries``: ``(label, x, row)`` with ``x`` float64 ``(d,)`` and ``row`` the dataset
    row whose true target is shown; ``y``: the dataset's targets; ``classes``: the class
    names (classification; probabilities then cover every class, 0 for classes the model
    never saw) or None (regression: bin edges and heights of the density).
    """
    slices = []
    for label, xq, r in queries:
        s = model.slice(xq)
        if classes is not None:
            proba = np.zeros(len(classes))
            proba[model.classes_.astype(np.int64)] = s["proba"]
            slices.append(
                {
                    "label": label,
                    "classes": classes,
                    "proba": proba,
                    "true_class": classes[int(y[r])],
                }
            )
        else:
            slices.append(
                {
                    "label": label,
                    "edges": s["edges"],
                    "heights": s["heights"],
                    "true_y": float(y[r]),
                    "true_label": f"row {r}",
                }
            )
    return slices


def class_grid(model, x, feature: int, values, n_classes: int) -> np.ndarray:
    """:func:`density_grid` of a classifier over every class: float64
    ``(n_classes, len(values))``, 0 for classes the model never saw."""
    z = density_grid(model, x, feature, values, None)
    full = np.zeros((n_classes, len(values)))
    full[model.classes_.astype(np.int64)] = z
    return full


def comparison_table(rows) -> pd.DataFrame:
    """The comparison job's rows as the page's table: model, test NLL, rows out of
    support, fit seconds, accuracy or RMSE, for a numeric target CRPS, mean pinball loss
    and the PIT's KS distance, description."""
    df = pd.DataFrame(rows)
    first = ["model", "test_nll", "n_out_of_support", "fit_seconds"]
    extra = [c for c in ("accuracy", "rmse", "crps", "pinball", "pit_ks") if c in df]
    return df[first + extra + ["description"]]
