"""Partial cross-validation results (after Stop): fold counts, no spread from one fold."""

import numpy as np

from engine.compare import folds_label, summarise
from engine.figures.compare import cv_summary_figure


def _rows(model, accuracies):
    return [
        {
            "model": model,
            "key": model,
            "fold": i + 1,
            "fit_seconds": 0.1,
            "n_leaves": 3,
            "depth": 2,
            "accuracy": a,
            "log_loss": 0.5,
        }
        for i, a in enumerate(accuracies)
    ]


def test_partial_summary_counts_folds_and_has_no_std_from_one_fold():
    rows = _rows("A", [0.8]) + _rows("B", [0.6, 0.7, 0.9])
    result = summarise(rows, "classification", complete=False, n_folds=5)
    s = result.summary.set_index("model")
    assert s.loc["A", "folds"] == 1 and s.loc["B", "folds"] == 3
    assert np.isnan(s.loc["A", "accuracy_std"]) and np.isnan(s.loc["A", "log_loss_std"])
    assert np.isclose(s.loc["B", "accuracy_std"], np.std([0.6, 0.7, 0.9]))
    assert folds_label(result.summary, result.n_folds) == "1\u20133 of 5 folds"
    title = cv_summary_figure(result.summary, "classification", 5).layout.title.text
    assert "1\u20133 of 5 folds" in title and "(3 folds" not in title


def test_folds_label_names_the_folds_that_ran():
    three = summarise(_rows("A", [0.8, 0.7, 0.9]), "classification").summary
    assert folds_label(three, 5) == "3 of 5 folds"
    assert folds_label(three, 3) == "3 folds"
    assert folds_label(three) == "3 folds"
    one = summarise(_rows("A", [0.8]), "classification").summary
    assert folds_label(one, 5) == "1 of 5 folds"


def test_shown_summary_dashes_the_missing_spread_without_a_pandas_warning():
    import warnings

    from engine.compare import NO_SPREAD, shown_summary

    rows = _rows("A", [0.8]) + _rows("B", [0.61234567, 0.7, 0.9])
    summary = summarise(rows, "classification", complete=False, n_folds=5).summary
    before = summary.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Pandas4Warning of fillna("—") on a float column
        shown = shown_summary(summary).set_index("model")
    assert shown.loc["A", "accuracy_std"] == NO_SPREAD
    assert shown.loc["A", "log_loss_std"] == NO_SPREAD
    assert shown.loc["B", "accuracy_std"] == f"{np.std([0.61234567, 0.7, 0.9]):.4f}"
    import pyarrow

    pyarrow.Table.from_pandas(shown)  # what st.dataframe needs: no column mixes types
    assert shown.loc["B", "accuracy"] == round(np.mean([0.61234567, 0.7, 0.9]), 4)
    assert summary.equals(before)  # the summary itself is not changed


def test_summary_headers_are_words_not_code_names():
    from engine.compare import summary_header

    assert summary_header("fit_seconds") == "fit time (s)"
    assert summary_header("accuracy_std") == "accuracy (std)"
    assert summary_header("log_loss_std") == "log loss (std)"
    assert summary_header("n_leaves") == "leaves"
    assert summary_header("model") == "model"
