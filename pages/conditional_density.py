"""Conditional density page: grow a Partition Tree / Forest live, then look at p(y | x)
(docs/spec.md section 2)."""

import math
import warnings

import numpy as np
import pandas as pd
import streamlit as st

from engine.figures.partition import (
    growth_figure,
    pit_figure,
)
from engine.jobs import Job
from engine.partition.service import (
    MAX_LEAVES_CLF,
    MAX_LEAVES_REG,
    MISSING_VALUES_NOTE,
    calibration_scores,
    growth_steps,
    holdout_scores,
    make_model,
    pit_histogram,
    split_rows,
)
from engine.snippets import conditional_density_snippet
from engine.teaching.glossary import link_terms
from pages._conditional_density_sections import (
    draw_comparison_section,
    draw_growth,
    draw_one_feature,
    draw_what_if_slices,
)
from pages._link_params import DENSITY_FLOORS, conditional_density_link
from pages._links import page_title
from pages._runs import keep_runs, restore_runs, result_only
from pages._shared import (
    PageJob,
    ResultPanel,
    SavedSettings,
    csv_download,
    current_dataset,
    dataset_caption,
    job_meta,
    md,
    require_entrypoint,
    scale_notice,
    seed,
    show_job_failure,
    stop_page,
)

P = "pt_"
FLOORS = list(DENSITY_FLOORS)

require_entrypoint("pages/conditional_density.py")
page_title("Conditional density (Partition Tree)")
st.markdown(
    "A regression tree predicts one number per leaf; a **Partition Tree** predicts a whole "
    "distribution p(y | x). It cuts the joint space of features *and* target into boxes "
    '(cells): a split may cut a feature ("x ≤ t") or the target itself ("y ≤ t"), and a '
    "cell's density is the share of its rows divided by the height of its y-interval. The "
    "tree grows best-first, always taking the split that lowers the log-loss most; the "
    "first split is always on y. For a given x, the cells it falls in stack up into a "
    "piecewise-constant density over y (for a class target: class probabilities). A "
    "**Partition Forest** averages many such trees grown on bootstrap samples. Paper: "
    "[Angelim & Leite, *Partition Tree: Conditional Density Estimation over General "
    "Outcome Spaces*, arXiv 2602.04042](https://arxiv.org/abs/2602.04042). Grow "
    "a model below, then move the feature sliders to see how p(y | x) changes."
)

#: The parameter panel's values (every ``pt_`` setting), saved at every run of this page and
#: put back before any widget is drawn (see pages/_jobs.py).
SETTINGS = SavedSettings("_pt_saved_params", prefix=P)
SETTINGS.restore()
#: The growth job (a tree split by split, a forest tree by tree) and the comparison job.
GROWTH = PageJob(
    "pt",
    elsewhere="A growth is still running on {caption} Pick that dataset again to watch it, "
    "or stop it here.",
    stop_label="Stop the growth",
    to_store=result_only,
)
COMPARISON = PageJob(
    "pt_cmp",
    elsewhere="A comparison is still running on {caption} Pick that dataset again to "
    "watch it, or stop it here.",
    stop_label="Stop the comparison",
    to_store=result_only,
)
if restore_runs("conditional_density", GROWTH, COMPARISON):  # ?run=<id>: stored, not refitted
    # new runs of this session count on from the reopened one (its view state is its own)
    st.session_state["_pt_runs"] = max(
        st.session_state.get("_pt_runs", 0), GROWTH.meta.get("run_id", 0)
    )


ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(GROWTH, COMPARISON)
st.markdown(dataset_caption(ds))
st.caption(link_terms(MISSING_VALUES_NOTE))
task = ds.task
SETTINGS.read_link(conditional_density_link(task))
if ds.n_samples < 20:
    st.error(
        f"This dataset has {ds.n_samples} rows; the page needs at least 20 (train, "
        "validation and test rows). Pick a larger dataset."
    )
    stop_page(GROWTH, COMPARISON)

# -- parameters ------------------------------------------------------------------------------
with st.expander("Parameters", expanded=True):
    c1, c2, c3, c4 = st.columns(4)
    kind = c1.radio(
        "Model",
        ["tree", "forest"],
        key=P + "kind",
        horizontal=True,
        format_func={"tree": "Partition Tree", "forest": "Partition Forest"}.get,
        help=link_terms(
            "A single tree (grown split by split), or a forest of trees on "
            "bootstrap samples (grown tree by tree)."
        ),
    )
    default_leaves = MAX_LEAVES_CLF if task == "classification" else MAX_LEAVES_REG
    max_leaves = c2.number_input(
        "Maximum leaves",
        2,
        4096,
        default_leaves,
        step=1,
        key=f"{P}max_leaves_{task}",
        help=link_terms(
            "Leaf budget of the best-first growth (k splits give k + 1 leaves). Regression "
            f"default {MAX_LEAVES_REG}, classification {MAX_LEAVES_CLF} (it usually stops "
            "earlier: no split with positive gain is left)."
        ),
    )
    max_depth = c3.number_input(
        "Maximum depth (0 = unlimited)",
        0,
        100,
        0,
        step=1,
        key=P + "max_depth",
        help=link_terms("Depth limit of every tree."),
    )
    min_xy = c4.number_input(
        "Min rows per cell (XY set)",
        0,
        10_000,
        1,
        step=1,
        key=P + "min_xy",
        help=link_terms(
            "A split is refused if a child cell would hold fewer training rows (x in A_X and "
            "y in A_Y) than this."
        ),
    )
    c1, c2, c3, c4 = st.columns(4)
    min_x = c1.number_input(
        "Min rows per X set",
        1,
        10_000,
        1,
        step=1,
        key=P + "min_x",
        help=link_terms("Minimum rows whose x lies in a child's feature region, whatever their y."),
    )
    min_y = c2.number_input(
        "Min rows per Y set",
        1,
        10_000,
        1,
        step=1,
        key=P + "min_y",
        help=link_terms("Minimum rows whose y lies in a child's target interval (or class set)."),
    )
    regression = task == "regression"
    mvf = c3.number_input(
        "Min volume fraction",
        0.0,
        0.5,
        0.1 if regression else 0.0,
        step=0.01,
        format="%.3f",
        key=f"{P}mvf_{task}",
        disabled=not regression,
        help=link_terms(
            "A y-split is refused when a child's y-interval is narrower than this fraction "
            "of the whole y range (stops needle-thin spikes). Regression only."
        ),
    )
    bexp = c4.number_input(
        "Boundary expansion f",
        0.0,
        2.0,
        0.1,
        step=0.05,
        format="%.3f",
        key=P + "bexp",
        disabled=not regression,
        help=link_terms(
            "The density lives on [min y - d, max y + d] with d = f x (max - min) / 2; a test "
            "y outside this box has density 0 (counted as out of support). Regression only."
        ),
    )
    if kind == "forest":
        c1, c2, c3, c4 = st.columns(4)
        n_est = c1.number_input(
            "Trees",
            1,
            500,
            50,
            step=1,
            key=P + "n_estimators",
            help=link_terms("Number of trees in the forest."),
        )
        max_samples = c2.number_input(
            "Bootstrap fraction",
            0.05,
            1.0,
            0.8,
            step=0.05,
            key=P + "max_samples",
            help=link_terms(
                "Each tree is grown on this fraction of the training rows, drawn with replacement."
            ),
        )
        max_features = c3.number_input(
            "Feature fraction per split",
            0.05,
            1.0,
            0.8,
            step=0.05,
            key=P + "max_features",
            help=link_terms(
                "Each split searches a random fraction of the features (redrawn per split); "
                "the target is always searched."
            ),
        )
        aggregation = c4.selectbox(
            "Aggregation",
            ["unnormalised", "normalised"],
            key=P + "aggregation",
            format_func={
                "unnormalised": "average densities, then normalise (paper)",
                "normalised": "average normalised slices (alternative)",
            }.get,
            help=link_terms(
                "The paper averages the trees' unnormalised densities and normalises once; "
                "averaging each tree's normalised slice is a different estimator."
            ),
        )
    else:
        n_est, max_samples, max_features, aggregation = 50, 0.8, 0.8, "unnormalised"
    c1, c2, c3, c4 = st.columns(4)
    test_frac = c1.slider(
        "Test fraction",
        0.1,
        0.5,
        0.2,
        step=0.05,
        key=P + "test_frac",
        help=link_terms(
            "Rows held out for the slices' default x and for the "
            "comparison (split with the sidebar's seed)."
        ),
    )
    val_frac = c2.slider(
        "Validation fraction",
        0.0,
        0.5,
        0.2,
        step=0.05,
        key=P + "val_frac",
        help=link_terms(
            "Share of the remaining rows used only for the validation curve "
            "while growing (not for training)."
        ),
    )
    keep_best = c2.checkbox(
        "Keep the best validation size",
        True,
        key=P + "keep_best",
        help=link_terms(
            "The tree grows to the leaf budget, then keeps the number of leaves with the "
            "lowest validation NLL (the star on the growth curve). Trees only."
        ),
    )
    floor = c3.select_slider(
        "Density floor",
        FLOORS,
        value=1e-9,
        key=P + "floor",
        format_func=lambda v: f"{v:g}",
        help=link_terms(
            "A test y outside the model's support has density 0 and log 0 = -inf; the NLL "
            "uses max(density, floor) so averages stay finite. Such rows are counted as "
            "'out of support'."
        ),
    )
    budget = c4.number_input(
        "Time budget (seconds)",
        5,
        3600,
        120,
        step=5,
        key=P + "budget",
        help=link_terms("The growth stops after this long and keeps the model so far."),
    )

SETTINGS.save()
tree_params = dict(
    max_leaves=int(max_leaves),
    max_depth=int(max_depth) or None,
    min_samples_xy=int(min_xy),
    min_samples_x=int(min_x),
    min_samples_y=int(min_y),
    min_volume_fraction=float(mvf) if regression else None,
    boundary_expansion=float(bexp),
    select_size="best_validation" if keep_best else "last",
)
forest_params = {
    **tree_params,
    "n_estimators": int(n_est),
    "max_samples": float(max_samples),
    "max_features": float(max_features),
    "aggregation": aggregation,
}


# -- growth job ------------------------------------------------------------------------------
def on_grow_error(exc: ValueError) -> None:
    st.error(f"Cannot grow: {md(exc)}")
    st.stop()


def start_growth():
    """The growth job (not started) on a new seeded split, and its meta."""
    tr, va, te, split_note = split_rows(
        ds.n_samples,
        ds.y,
        test_fraction=float(test_frac),
        val_fraction=float(val_frac),
        seed=seed(),
        stratify=task == "classification",
        class_names=None if ds.classes_ is None else [str(c) for c in ds.classes_],
    )
    params = forest_params if kind == "forest" else tree_params
    model = make_model(
        kind,
        task,
        params,
        categorical=ds.is_categorical if ds.is_categorical.any() else None,
        random_state=seed(),
    )
    val_every = max(1, int(max_leaves) // 200)
    Xv, yv = (ds.X[va], ds.y[va]) if len(va) else (None, None)
    job = Job(
        growth_steps,
        model,
        ds.X[tr],
        ds.y[tr],
        Xv,
        yv,
        floor=float(floor),
        val_every=val_every,
        budget=float(budget),
        name="pt_grow",
    )
    meta = {
        **job_meta(ds),
        "y": ds.y,
        "train": tr,
        "val": va,
        "test": te,
        "split_note": split_note,
        "kind": kind,
        "is_categorical": ds.is_categorical.copy(),
        "tree_params": tree_params,
        "forest_params": forest_params,
        "floor": float(floor),
        "seed": seed(),
        "test_fraction": float(test_frac),
        "val_fraction": float(val_frac),
        "val_every": val_every,
        "run_id": st.session_state.get("_pt_runs", 0) + 1,
        "max_leaves": int(max_leaves),
        "n_estimators": int(n_est),
    }
    st.session_state["_pt_runs"] = meta["run_id"]
    old_cmp = st.session_state.pop(COMPARISON.key, None)  # it compared on the old split
    if old_cmp is not None:
        old_cmp.cancel()
    return job, meta


# the curve was measured at 32 leaves (rows scanned grow with the depth), on the rows the
# growth fits: the training share of the test / validation split (a forest's trees each
# on their bootstrap fraction of it, on their fraction of the features)
_train_share = (1.0 - float(test_frac)) * (1.0 - float(val_frac))
_leaf_factor = max(1.0, math.log2(max(int(max_leaves), 2)) / 5)
scale_notice(
    ds,
    "partition",
    budget=float(budget),
    what=f"growing {int(max_leaves)} leaves"
    + (
        f" in each of {int(n_est)} trees (each on {float(max_samples):.0%} of the training rows)"
        if kind == "forest"
        else ""
    ),
    repeats=_leaf_factor * (int(n_est) * float(max_features) if kind == "forest" else 1.0),
    key="pt_subsample_btn",
    fit_share=_train_share * (float(max_samples) if kind == "forest" else 1.0),
)
GROWTH.controls("Grow", start_growth, on_error=on_grow_error)


if GROWTH.running:
    GROWTH.live(lambda snap: draw_growth(snap, GROWTH.meta, P), caption="Growing on {caption}")
    st.stop()
job = GROWTH.job
if job is None:
    st.info(
        "Set the parameters and press **Grow**: the tree grows split by split (a forest "
        "tree by tree) with its train and validation NLL drawn live."
    )
    st.stop()

snap = job.snapshot()
meta = GROWTH.meta
if snap.status == "error":
    show_job_failure(snap, "Growing", "lower the maximum leaves or the number of trees")
    if snap.error_kind == "exception" or snap.result is None:
        st.stop()
    st.info("Showing the model as it was when the job stopped.")
if snap.result is None:
    st.warning("The job stopped before the first step; press **Grow** again.")
    st.stop()
res = snap.result
model = res["model"]
forest = res["forest"]
if snap.status in ("cancelled", "timeout"):
    why = (
        "was stopped" if snap.status == "cancelled" else f"ran out of its {job.budget:.0f} s budget"
    )
    st.warning(f"The growth {why}; showing the model grown so far.")

# -- results ---------------------------------------------------------------------------------
panel = ResultPanel("conditional_density", meta)
if "test_fraction" in meta:  # a run stored before the snippets has no split fractions
    panel.snippet(conditional_density_snippet(meta))
names = meta["feature_names"]
X, y = meta["X"], meta["y"]
tr, va, te = meta["train"], meta["val"], meta["test"]
is_cat = meta["is_categorical"]
categories = meta["categories"]
classes = meta["classes"]
target = meta["target"]
mfloor = meta["floor"]
discrete = meta["task"] == "classification"
# the floor can decide the NLL inside the support too (see floor_warning() below)
nll_test, n_out, n_floored, n_small, n_empty = holdout_scores(model, X[te], y[te], mfloor)


def floor_warning() -> str | None:
    """Why the density floor, not the model, sets part of the test NLL (None if it does not
    beyond the out-of-support rows)."""
    if not n_small and not n_empty:
        return None
    text = (
        f"**The density floor decides the test NLL:** {n_floored} of the {len(te)} test "
        f"rows are at the floor {mfloor:g} (each adds -log {mfloor:g} = "
        f"{-np.log(mfloor):.4g}), not only the {n_out} out of support."
    )
    if n_floored == len(te):
        text += " Every test row is floored, so the test NLL is that constant whatever the model."
    if n_small:
        text += f" {n_small} of them have a positive density below the floor"
        if not discrete:
            width = float(model.y_box_[1] - model.y_box_[0])
            text += (
                f": {target} spans about {width:.3g} units, so densities per unit of "
                f"{target} are near {1 / width:.2g}"
            )
        text += (
            ". Choose a smaller density floor (below the densities) or, if none is "
            f"small enough, rescale {target} (e.g. to millions)."
        )
    if n_empty:
        text += (
            f" {n_empty} fall in cells with no training rows (density 0 inside the "
            "y box): raise **Min rows per cell (XY set)** or lower **Maximum leaves**."
        )
    return text


st.subheader("Result")
if meta["caption"] != dataset_caption(ds):
    st.info(
        "The model below was grown on another dataset (see the next line); press **Grow** "
        "to grow one on the current dataset."
    )
st.caption(
    link_terms(
        f"Grown on {meta['caption']} Split (seed {meta['seed']}): {len(tr)} train, "
        f"{len(va)} validation, {len(te)} test rows."
    )
)
if meta.get("split_note"):
    st.info(meta["split_note"])
m1, m2, m3, m4, m5 = st.columns(5)
if forest:
    m1.metric(
        "Trees", len(model.trees_), help=link_terms("Trees grown (Stop keeps those finished).")
    )
else:
    kept, grown = model.partition_tree_.n_leaves, model.n_leaves_grown_
    m1.metric(
        "Leaves",
        kept if kept == grown else f"{kept} of {grown}",
        help=link_terms(
            "Cells of the partition"
            + (f"; kept at the best validation NLL of the {grown} grown." if kept < grown else ".")
        ),
    )
m2.metric(
    "Test log-loss" if discrete else "Test NLL",
    f"{nll_test:.4f}",
    help=link_terms(
        "Mean of -log p(y | x) over the test rows, density floored at "
        f"{mfloor:g}"
        + (
            ""
            if discrete
            else "; nats per row, per unit of y: compare models only on the same y scale"
        )
        + "."
    ),
)
m3.metric(
    "Test rows out of support",
    n_out,
    help=link_terms(
        "Test y outside the model's y box (or a class unseen in training): density 0, "
        "floored in the NLL."
    ),
)
m4.metric(
    "Test rows at the floor",
    n_floored,
    help=link_terms(
        f"Test rows whose density (or probability) is below the floor {mfloor:g}, so "
        "the NLL counts the floor for them: the rows out of support, rows in empty "
        "cells, and rows whose density is small because of the units of the target."
    ),
)
m5.metric(
    "Fit time (s)",
    f"{res['fit_seconds']:.2f}",
    help=link_terms("Wall-clock time of the growth, including the validation NLL at each step."),
)
if (msg := floor_warning()) is not None:
    st.warning(msg)
if not forest and model.partition_tree_.n_leaves == 1:
    st.info(
        "The tree did not split: no split met the limits with a positive gain. The first "
        "split is always on y, so a large **Min volume fraction** (y-intervals that "
        "narrow are refused) or a **Min rows** setting above half the training rows "
        "stops it at the root; the density is then uniform over the y box (equal class "
        "probabilities for a class target)."
    )
panel.chart(growth_figure(model.trace_, forest=forest), key=P + "growth_fig")
keep_runs("conditional_density", GROWTH, COMPARISON)  # the grown model and the comparison
if not discrete:
    sc = calibration_scores(model, X[te], y[te])
    s1, s2, s3 = st.columns(3)
    s1.metric(
        "Test CRPS",
        f"{sc['crps']:.4g}",
        help=link_terms(
            "Mean continuous ranked probability score, in units of y (lower is better)."
        ),
    )
    s2.metric(
        "Mean pinball loss",
        f"{sc['pinball']:.4g}",
        help=link_terms(
            "Quantile loss at levels 0.05, 0.10, ..., 0.95, in units of y (lower is better)."
        ),
    )
    s3.metric(
        "PIT KS distance",
        f"{sc['pit_ks']:.3f}",
        help=link_terms(
            "Kolmogorov-Smirnov distance of the PIT values F(y | x) from uniform: 0 = calibrated."
        ),
    )
    panel.chart(pit_figure({"test rows": pit_histogram(sc["pit"])}), key=P + "pit_fig")
unit = "n_trees" if forest else "n_leaves"
trace_df = pd.DataFrame(model.trace_, columns=[unit, "train_nll", "val_nll"])
csv_download(
    "Download growth trace (CSV)", trace_df, "partition_growth_trace.csv", key=P + "trace_dl"
)

# -- what-if slices --------------------------------------------------------------------------
st.subheader("Conditional density p(y | x): what if?")
st.caption(
    link_terms(
        "Pick a test row: the sliders take its feature values. Move a slider to ask "
        "'what if this feature were different?' -- the density redraws. Pin an x to keep "
        "its curve for comparison."
    )
)
run_id = meta["run_id"]
imp = np.asarray(model.feature_importances_)
order = list(np.argsort(-imp, kind="stable"))  # features by importance (the feature picker)
if st.session_state.get("_pt_run_seen") != run_id:  # a new model: reset the view state
    st.session_state["_pt_run_seen"] = run_id
    st.session_state["_pt_pins"] = []
    # Their options depend on the model.  Set them, do not delete them: a deleted value
    # restarts at the default in the script, but the browser is not told and keeps showing
    # the previous model's row and feature over the new model's slices until the next click.
    st.session_state[P + "row_view"] = te[0]
    st.session_state[P + "overlay_view"] = []
    st.session_state[P + "feature_view"] = order[0]
    st.session_state[P + "tree_view"] = 0
    st.session_state.pop("_pt_row_loaded", None)
# Streamlit forgets the *_view widgets (row, feature values, overlay, feature, tree) while
# another page is shown; for the same model, put them back as the user left them (otherwise
# the sliders came back at their minimum while the row stayed: a silent, wrong "edited x").
VIEW = SavedSettings("_pt_view_saved", prefix=P, suffix="_view")
VIEW.restore(scope=run_id)


def save_view() -> None:
    """Remember the current values of the result-view widgets (see ``VIEW``)."""
    VIEW.save(scope=run_id)


def y_text(i: int) -> str:
    return str(classes[int(y[i])]) if discrete else f"{y[i]:.4g}"


row = st.selectbox(
    "Test row",
    list(te),
    key=P + "row_view",
    format_func=lambda i: f"row {i} ({target} = {y_text(i)})",
    help=link_terms("The default x: a row the model has not seen."),
)
lo_all, hi_all = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
# a missing value of the chosen row is shown at its column's median (the sliders need a
# number); the caption below says so
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # a column with no value: 0
    median = np.nan_to_num(np.nanmedian(X, axis=0))
fill = np.where(is_cat, np.round(median), median)


def row_values(i: int) -> np.ndarray:
    return np.where(np.isnan(X[i]), fill, X[i])


def load_row(i: int) -> None:
    v = row_values(i)
    for j in range(len(names)):
        st.session_state[f"{P}x{j}_view"] = int(v[j]) if is_cat[j] else float(v[j])


if st.session_state.get("_pt_row_loaded") != (run_id, row) or any(
    f"{P}x{j}_view" not in st.session_state for j in range(len(names))
):
    st.session_state["_pt_row_loaded"] = (run_id, row)
    load_row(row)

d = len(names)
with st.expander(f"Feature values x ({d} feature{'s' if d != 1 else ''})", expanded=d <= 12):
    cols = st.columns(4)
    x = np.empty(d)
    for j in range(d):
        col = cols[j % 4]
        key = f"{P}x{j}_view"
        if is_cat[j]:
            labels = categories[j]
            x[j] = col.selectbox(
                names[j],
                list(range(len(labels))),
                key=key,
                format_func=lambda c, lab=labels: lab[c],
            )
        else:
            lo, hi = float(lo_all[j]), float(hi_all[j])
            if hi <= lo:
                hi = lo + 1.0
            integral = np.all(X[:, j] == np.round(X[:, j]))
            step = 1.0 if integral and hi - lo <= 200 else float((hi - lo) / 100)
            if st.session_state.get(key) is not None:
                st.session_state[key] = float(np.clip(st.session_state[key], lo, hi))
            x[j] = col.slider(names[j], lo, hi, step=step, key=key, format="%.5g")
if np.isnan(X[row]).any():
    st.caption(
        link_terms(
            "This row has missing values: the sliders show them at the column's median, and "
            "the density drawn is for those values."
        )
    )
edited = not np.allclose(x, row_values(row))
b1, b2, b3, _ = st.columns([1.3, 1, 1.2, 4])
if b1.button("Reset to the test row", key=P + "reset_btn", disabled=not edited):
    load_row(row)
    st.rerun()
if b2.button("Pin this x", key=P + "pin_btn"):
    pins = st.session_state["_pt_pins"]
    label = f"pin {len(pins) + 1}: row {row}" + (" (edited)" if edited else "")
    pins.append({"label": label, "x": x.copy(), "row": int(row), "edited": edited})
if b3.button("Clear pins", key=P + "clear_btn", disabled=not st.session_state["_pt_pins"]):
    st.session_state["_pt_pins"] = []
    st.rerun()
overlay = st.multiselect(
    "Overlay other test rows",
    [i for i in te if i != row],
    key=P + "overlay_view",
    max_selections=6,
    format_func=lambda i: f"row {i} ({target} = {y_text(i)})",
    help=link_terms("Their densities are drawn beside the current x."),
)

save_view()
draw_what_if_slices(
    prefix=P,
    X=X,
    classes=classes,
    discrete=discrete,
    edited=edited,
    model=model,
    overlay=overlay,
    panel=panel,
    row=row,
    target=target,
    x=x,
    y=y,
)

# -- one feature at a time -------------------------------------------------------------------
draw_one_feature(
    prefix=P,
    X=X,
    categories=categories,
    classes=classes,
    discrete=discrete,
    forest=forest,
    hi_all=hi_all,
    imp=imp,
    is_cat=is_cat,
    lo_all=lo_all,
    model=model,
    names=names,
    order=order,
    panel=panel,
    save_view=save_view,
    target=target,
    tr=tr,
    x=x,
    y=y,
)

# -- comparison ------------------------------------------------------------------------------
draw_comparison_section(
    comparison_job=COMPARISON,
    prefix=P,
    X=X,
    classes=classes,
    discrete=discrete,
    forest=forest,
    is_cat=is_cat,
    meta=meta,
    mfloor=mfloor,
    model=model,
    panel=panel,
    run_id=run_id,
    te=te,
    tr=tr,
    y=y,
)
