"""Compare page: k-fold cross-validation of several tree models on the active dataset."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

from engine import warmup
from engine.compare import (
    MISSING_VALUES_CAPTION,
    available_models,
    folds_label,
    plan_comparison,
    shown_summary,
    summary_header,
)
from engine.figures.compare import cv_summary_figure
from engine.figures.tree import tree_figure
from engine.images import available as images_available
from engine.images import figure_png, tree_image_size
from engine.snippets import compare_snippet
from pages._link_params import compare_link
from pages._links import page_title
from pages._scale import comparison_notice
from pages._shared import (
    HALF_COLUMN_WIDTH,
    PageJob,
    ResultPanel,
    SavedSettings,
    csv_download,
    current_dataset,
    cv_job_panel,
    dataset_caption,
    folds_slider,
    kernels_ready,
    labelled_tree,
    require_entrypoint,
    seed,
    stop_page,
)

require_entrypoint("pages/compare.py")
#: The parameters in the page's link (the other ``cmp_`` widgets are kept by the app).
SETTINGS = SavedSettings("_cmp_link", keys=("cmp_budget",))
SETTINGS.restore()
page_title("Compare models")
st.markdown(
    "Cross-validate several tree models on the same folds of the active dataset: every model "
    "is fitted on k-1 folds and scored on the held-out fold, k times. Classification reports "
    "accuracy and log-loss, regression R² and RMSE, plus fit time and tree size. The run is a "
    "background job: the table fills in fold by fold and **Stop** keeps what is done. "
    "See [scikit-learn's cross-validation guide]"
    "(https://scikit-learn.org/stable/modules/cross_validation.html)."
)

#: The cross-validation job.
CV_JOB = PageJob(
    "cmp",
    elsewhere="A comparison is still running on {caption} Pick that dataset again to "
    "watch it, or stop it here.",
)
CV_JOB.restore_run("compare")  # ?run=<id>: the stored comparison, drawn without refitting
ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(CV_JOB)
st.markdown(dataset_caption(ds))
st.caption(MISSING_VALUES_CAPTION)

specs = available_models(ds.task)
SETTINGS.read_link(compare_link(ds.task))
labels = {s.key: s.label for s in specs}
chosen = st.multiselect(
    "Models",
    list(labels),
    default=list(labels)[:3],
    format_func=labels.get,
    key="cmp_models",
    help="Every model sees the same folds.",
)
n_splits = folds_slider(
    st, "cmp_folds", ds, help="More folds: more training data per fit, more fits."
)
budget = st.number_input(
    "Time budget (seconds)",
    5,
    3600,
    120,
    step=5,
    key="cmp_budget",
    help="The job stops after this long and keeps the folds it finished.",
)
SETTINGS.save()

params: dict[str, dict] = {}
for spec in specs:
    if spec.key not in chosen or not spec.params:
        continue
    with st.expander(f"Parameters: {spec.label}"):
        st.caption(spec.description)
        cols = st.columns(len(spec.params))
        values = {}
        for col, p in zip(cols, spec.params, strict=True):
            key = f"cmp_{spec.key}_{p.name}"
            if p.kind == "choice":
                values[p.name] = col.selectbox(
                    p.name, p.choices, key=key, help=p.help, index=p.choices.index(p.default)
                )
            elif p.kind == "float":
                values[p.name] = col.number_input(
                    p.name,
                    float(p.low),
                    float(p.high),
                    float(p.default),
                    key=key,
                    help=p.help,
                    format="%.4g",
                )
            else:
                default = 0 if p.default is None else int(p.default)
                values[p.name] = col.number_input(
                    p.name, int(p.low), int(p.high), default, step=1, key=key, help=p.help
                )
        params[spec.key] = values

kernels = [g for key in chosen for g in warmup.MODEL_GROUPS.get(key, ())]
ready = kernels_ready(kernels, "the chosen models")
result, meta = cv_job_panel(
    CV_JOB,
    ds,
    lambda: plan_comparison(
        ds,
        {k: params.get(k, {}) for k in chosen},
        n_splits=n_splits,
        random_state=seed(),
        refit="trees",  # the page draws the single trees only
    ),
    budget=budget,
    idle_text="Choose models and press **Run**.",
    can_run=bool(chosen) and ready,
    estimate=comparison_notice(
        ds, {k: params.get(k, {}) for k in chosen}, n_splits, "cmp", refit="trees"
    ),
)
snap = CV_JOB.job.snapshot()

st.subheader("Results")
panel = ResultPanel("compare", meta)
if meta["caption"] != dataset_caption(ds):
    st.info(
        "These results are for the dataset the comparison ran on, not the active one. "
        "Press **Run** to compare the models on the active dataset."
    )
st.markdown(f"On {meta['caption']}")
if meta.get("plan"):
    panel.snippet(compare_snippet(meta))
n_planned = result.n_folds or meta.get("n_folds")
st.caption(
    f"Mean over {folds_label(result.summary, n_planned)} (± std columns; the folds column "
    "counts each model's finished folds, the rows column the rows it was fitted and scored "
    "on; — where a model has 1 fold: no spread); "
    + {"cancelled": "stopped after", "timeout": "out of time after", "error": "failed after"}.get(
        snap.status, "finished in"
    )
    + f" {snap.elapsed:.1f} s."
)
shown = shown_summary(result.summary.drop(columns=["key"], errors="ignore"))
panel.table(  # a model with 1 fold: no std
    shown,
    name="summary",
    hide_index=True,
    width="stretch",
    column_config={column: summary_header(column) for column in shown.columns},
)
panel.chart(cv_summary_figure(result.summary, meta["task"], n_planned), key="cmp_fig")
panel.record_table("folds", result.folds)  # in the report; on the page as CSV only
for warning in result.warnings:
    panel.note(warning)
CV_JOB.keep_run("compare")
csv_download("Download per-fold results (CSV)", result.folds, "compare_folds.csv")
csv_download("Download summary (CSV)", result.summary, "compare_summary.csv", key="dl_summary")


def counted_missing(tree, X):
    """``tree`` with ``n_missing`` (the hover's "N training rows routed so") counted on
    ``X`` when it recorded none (a scikit-learn tree) and was refitted on every row."""
    if (
        tree.n_missing is None
        and tree.routes_missing
        and int(tree.n_node_samples[0]) == len(X)
        and np.isnan(X).any()
    ):
        return dataclasses.replace(tree, n_missing=tree.missing_counts(X))
    return tree


single_trees = {k: m for k, m in result.models.items() if hasattr(m, "tree_")}
scored = list(dict.fromkeys(result.folds["key"])) if "key" in result.folds else []
not_drawn = [labels.get(k, k) for k in scored if k not in single_trees]
if single_trees:
    st.subheader("Fitted trees (refit on all rows)")
if not_drawn and result.complete:
    st.caption(
        f"{', '.join(not_drawn)}: scored on the folds only. The page refits on all rows "
        "only the trees it draws (in Python, `plan_comparison(..., refit=True)` refits "
        "every model)."
    )
if single_trees:
    keys = list(single_trees)
    shown = st.multiselect(
        "Trees to draw (two side by side)",
        keys,
        default=keys[:2],
        max_selections=2,
        key="cmp_tree_models",
        format_func=lambda k: labels.get(k, k),
    )
    trees = {k: counted_missing(labelled_tree(single_trees[k], meta), meta["X"]) for k in shown}
    deepest = max((t.max_depth for t in trees.values()), default=0)
    c1, c2 = st.columns(2)
    depth = None  # a stump or a single leaf has nothing to collapse (and a slider needs min < max)
    if deepest >= 2:
        depth = c1.slider(
            "Collapse below depth",
            1,
            deepest,
            min(4, deepest),
            key="cmp_collapse",
            help="Subtrees deeper than this are drawn as one triangle.",
        )
    n = meta["X"].shape[0]
    row = c2.number_input(
        "Highlight the path of row",
        0,
        n - 1,
        0,
        key="cmp_row",
        help="Row index in the prepared dataset.",
    )
    for col, (key, tree) in zip(st.columns(max(len(trees), 1)), trees.items(), strict=False):
        with col:
            fig = tree_figure(
                tree,
                feature_names=meta["feature_names"],
                class_names=meta["classes"],
                highlight_path=tree.decision_path(meta["X"][int(row)]),
                collapse_depth=None if depth is None else int(depth),
                title=f"{labels.get(key, key)}: {tree.node_count} nodes, "
                f"{tree.n_leaves} leaves, depth {tree.max_depth}",
                width=HALF_COLUMN_WIDTH if len(trees) > 1 else None,
            )
            panel.chart(fig, key=f"cmp_tree_fig_{key}")
            st.download_button(
                "Download tree (JSON)",
                tree.to_json(),
                file_name=f"{key}_tree.json",
                mime="application/json",
                on_click="ignore",
                key=f"dl_tree_{key}",
            )

            def tree_png(tree=tree, key=key, depth=depth):
                width, height = tree_image_size(
                    tree, feature_names=meta["feature_names"], collapse_depth=depth
                )
                image = tree_figure(
                    tree,
                    feature_names=meta["feature_names"],
                    class_names=meta["classes"],
                    collapse_depth=None if depth is None else int(depth),
                    show_labels=True,
                    height=height,
                    width=width,
                    title=f"{labels.get(key, key)}: {tree.node_count} nodes",
                )
                return figure_png(image, width=width, height=height)

            st.download_button(
                "Download tree (PNG)",
                tree_png,
                file_name=f"{key}_tree.png",
                mime="image/png",
                on_click="ignore",
                key=f"dl_tree_png_{key}",
                disabled=not images_available(),
                help="Every node labelled, sized to the tree"
                if images_available()
                else "Images need Chromium on the server (apt-get install chromium).",
            )
            with st.expander("Node table"):
                panel.table(
                    pd.DataFrame(tree.to_frame()),
                    name=f"nodes_{key}",
                    hide_index=True,
                    width="stretch",
                )
