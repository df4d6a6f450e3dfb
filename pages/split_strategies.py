"""Split strategies page: which thresholds each candidate strategy tries, which it picks, and
what that costs or saves (docs/spec.md section 5, DICS)."""

import streamlit as st

from engine.cart import service
from engine.cart.service import (
    candidates_table,
    node_mask,
    split_profile,
    strategies_for,
    strategy_plan,
)
from engine.figures.splits import (
    candidates_figure,
    gain_curve_figure,
    strategy_tradeoff_figure,
    threshold_scan_figure,
)
from engine.figures.tree import tree_figure
from engine.snippets import split_strategies_snippet
from engine.teaching.glossary import link_terms
from pages._link_params import SPLIT_DEFAULTS, split_strategies_link
from pages._links import page_title
from pages._scale import comparison_notice
from pages._shared import (
    HALF_COLUMN_WIDTH,
    PROJECTION_KEY,
    PageJob,
    ResultPanel,
    SavedSettings,
    clicked_node,
    csv_download,
    current_dataset,
    cv_job_panel,
    dataset_caption,
    dataset_digest,
    folds_slider,
    labelled_tree,
    md,
    require_entrypoint,
    reset_on_dataset_change,
    seed,
    shown_figure,
    stop_page,
    subsample_meta,
)

DEFAULTS = SPLIT_DEFAULTS
HELP = {
    "exhaustive": "every midpoint between consecutive distinct values (classic CART)",
    "quantile": "k quantiles of the node's values (default k = 16)",
    "histogram": "inner edges of k equal-width bins (default k = 16)",
    "random": "k midpoints drawn at random (seeded)",
    "dics_paper": "DICS: k-means on all features once per fit, boundaries between the m "
    "farthest centroid pairs",
    "kmeans1d": "1-D k-means on the node's values; boundaries between adjacent centroids",
    "class_centroid": "boundaries between adjacent class means (label-aware)",
    "kde_valley": "valleys (local minima) of a kernel density estimate of the values",
}

require_entrypoint("pages/split_strategies.py")
#: The parameters in the page's link (the other ``ss_`` widgets are kept by the app).
SETTINGS = SavedSettings(
    "_ss_link",
    keys=(
        "ss_strategies",
        "ss_k",
        "ss_criterion",
        "ss_depth",
        "ss_msl",
        "ss_cv_depth",
        "ss_cv_folds",
        "ss_cv_budget",
    ),
)
SETTINGS.restore()
page_title("Split strategies")
st.markdown(
    "A decision tree picks, at every node, the feature and **threshold** with the largest "
    "impurity decrease. Classic CART tries every midpoint between distinct values; "
    "*data-informed* strategies try only a few candidates placed where the data suggest a "
    "boundary: centroids of k-means clusters, class centroids or valleys of the density "
    "([DICS, Mazumder & Yu, arXiv 2608.20258](https://arxiv.org/abs/2608.20258)). Pick a node "
    "and a feature to see each strategy's candidates on the feature's histogram and on the "
    "impurity-decrease curve, play the threshold scan, then grow whole trees with each "
    "strategy under cross-validation to see what the savings cost in accuracy."
)


#: The whole-tree comparison (section 4), a cross-validation job.
CV_JOB = PageJob(
    "ss",
    elsewhere="A comparison is still running on {caption} Pick that dataset again to "
    "watch it, or stop it here.",
)
CV_JOB.restore_run("split_strategies")  # ?run=<id>: the stored comparison, not refitted


ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(CV_JOB)
st.markdown(dataset_caption(ds))
st.caption(link_terms(service.MISSING_VALUES_NOTE))
continuous = [j for j in range(ds.n_features) if not ds.is_categorical[j]]
if not continuous:
    st.warning(
        "Every feature of this dataset is categorical. Candidate thresholds are for "
        "continuous features (categorical ones are split by ordering their categories); "
        "pick a dataset or target with numeric features."
    )
    stop_page(CV_JOB)

available = list(strategies_for(ds.task))
SETTINGS.read_link(split_strategies_link(ds.task))
with st.expander("Parameters", expanded=True):
    c1, c2 = st.columns([3, 1])
    strategies = c1.multiselect(
        "Strategies",
        available,
        default=[s for s in DEFAULTS[ds.task] if s in available],
        key="ss_strategies",
        format_func=lambda s: s,
        help=link_terms("; ".join(f"{s}: {HELP[s]}" for s in available) + "."),
    )
    k = c2.number_input(
        "Candidates k (0 = default)",
        0,
        256,
        0,
        step=1,
        key="ss_k",
        help=link_terms(
            "The strategy's k: quantiles, histogram bins, random draws or "
            "kmeans1d clusters; 0 uses each strategy's default. exhaustive, "
            "class_centroid and kde_valley have no k. In the whole-tree "
            "comparison dics_paper samples k dictionary entries per node; the "
            "node view shows its whole dictionary."
        ),
    )
    c3, c4, c5 = st.columns(3)
    criterion = "squared_error"
    if ds.task == "classification":
        criterion = c3.selectbox(
            "Impurity",
            ["gini", "entropy"],
            key="ss_criterion",
            help=link_terms("Gini impurity or entropy (log-loss) of the class mix."),
        )
    depth = c4.slider(
        "Depth of the tree used to pick a node",
        1,
        6,
        3,
        key="ss_depth",
        help=link_terms("An exhaustive CART of this depth is drawn below; click a node."),
    )
    min_leaf = c5.number_input(
        "Minimum rows per leaf",
        1,
        500,
        1,
        step=1,
        key="ss_msl",
        help=link_terms("Thresholds that leave fewer rows on a side are not candidates."),
    )
SETTINGS.save()
if not strategies:  # sections 2-3 need one; section 4 keeps its results (and Stop)
    st.info("Choose at least one strategy.")
k_arg = int(k) or None
digest = dataset_digest(ds)
# the node and its feature belong to this dataset's tree: another dataset starts at the root
reset_on_dataset_change("split_strategies", digest, ("ss_node", "ss_feature::", "_ss_last_click"))


@st.cache_resource(show_spinner="Growing the exhaustive tree...", max_entries=16)
def node_picker_tree(_ds, key: str, depth: int, criterion: str, min_leaf: int):
    """:func:`engine.cart.service.node_picker_tree`, cached on the dataset digest ``key``."""
    return service.node_picker_tree(_ds, depth, criterion, min_leaf)


@st.cache_resource(show_spinner="Building the DICS dictionary...", max_entries=16)
def global_dictionary(_ds, key: str, random_state: int):
    """:func:`engine.cart.service.global_dictionary`, cached on the dataset digest ``key``."""
    return service.global_dictionary(_ds, random_state)


tree = node_picker_tree(ds, digest, depth, criterion, int(min_leaf))
#: The page's results: the node's candidates (sections 2-3), then the whole-tree comparison.
panel = ResultPanel("split_strategies", {"caption": dataset_caption(ds), **subsample_meta(ds)})
class_names = None if ds.classes_ is None else [str(c) for c in ds.classes_]

st.subheader("1. Pick a node")
st.caption(link_terms("Click a node in the tree (or choose it below). The root holds every row."))
fig = tree_figure(
    tree,
    feature_names=ds.feature_names,
    class_names=class_names,
    title=f"Exhaustive CART, depth {depth}: {tree.node_count} nodes",
)
fig.update_traces(unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="scatter"))
event = st.plotly_chart(
    shown_figure(fig), on_select="rerun", selection_mode="points", key="ss_tree_fig"
)
clicked = clicked_node(event)
if clicked is not None and clicked != st.session_state.get("_ss_last_click"):
    st.session_state["_ss_last_click"] = clicked
    st.session_state["ss_node"] = clicked
if st.session_state.get("ss_node", 0) >= tree.node_count:
    st.session_state["ss_node"] = 0


def node_label(n: int) -> str:
    rows = int(tree.n_node_samples[n])
    if tree.is_leaf[n]:
        return f"node {n} (leaf, {rows} rows)"
    return f"node {n} ({rows} rows, split: {tree.rule(n, ds.feature_names)})"


c1, c2 = st.columns(2)
node = c1.selectbox("Node", list(range(tree.node_count)), key="ss_node", format_func=node_label)
mask = node_mask(tree, ds.X, node)
names = [ds.feature_names[j] for j in continuous]
used = int(tree.feature[node]) if not tree.is_leaf[node] else -1
fkey = f"ss_feature::{node}"
if st.session_state.get(fkey) not in names:
    st.session_state[fkey] = ds.feature_names[used] if used in continuous else names[0]
fname = c2.selectbox(
    "Feature",
    names,
    key=fkey,
    help=link_terms("Defaults to the feature the exhaustive tree splits on here."),
)
j = ds.feature_names.index(fname)


def node_sections() -> None:
    """Sections 2 and 3 for the chosen node and feature.  A node they cannot profile (a
    leaf with one row) ends them, not the page: st.stop() here hid section 4, the CV
    results and a running job's Stop button."""
    if not strategies:
        return
    if mask.sum() < 2:
        st.info(f"Node {node} has {int(mask.sum())} row(s): nothing to split.")
        return

    dictionary = global_dictionary(ds, digest, seed()) if "dics_paper" in strategies else None
    try:
        profile = split_profile(
            ds.X[mask],
            ds.y[mask],
            j,
            strategies,
            task=ds.task,
            n_classes=ds.n_classes if ds.task == "classification" else None,
            criterion=criterion,
            k=k_arg,
            min_samples_leaf=int(min_leaf),
            random_state=seed(),
            dictionary=dictionary,
            feature_name=fname,
            is_categorical=ds.is_categorical,
        )
    except ValueError as exc:
        st.error(f"Cannot profile this split: {md(exc)}")
        return

    st.subheader(f"2. Candidates at node {node} on {md(fname)}")
    n_node = int(mask.sum())
    if n_node < 2 * int(min_leaf):
        st.warning(
            f"Node {node} has {n_node} rows, fewer than twice the minimum of {int(min_leaf)} "
            "rows per leaf: no threshold is allowed here, so no strategy has a candidate "
            "and the impurity-decrease curve is empty. Lower **Minimum rows per leaf** or "
            "pick a larger node."
        )
    elif any(r.fallback for r in profile.results.values()):
        fell = ", ".join(s for s, r in profile.results.items() if r.fallback)
        st.caption(
            link_terms(
                f"No candidate of their own on this feature at this node (or none allowed by "
                f"the minimum rows per leaf): {fell}. Shown with the 16-quantile fallback the "
                "tree builder uses (for dics_paper the builder falls back only when no feature "
                "has a dictionary candidate at the node)."
            )
        )
    panel.chart(candidates_figure(profile, class_names=class_names), key="ss_cand_fig")
    panel.chart(gain_curve_figure(profile), key="ss_gain_fig")
    table = profile.to_frame()
    panel.table(table.round(4), name="candidates", hide_index=True, width="stretch")
    long = candidates_table(profile)
    csv_download(
        "Download candidates (CSV)", long, f"candidates_node{node}_{fname}.csv", key="ss_dl_cand"
    )

    st.subheader("3. Threshold scan (teaching mode)")
    st.caption(
        link_terms(
            "Press Play: a threshold sweeps the feature; rows left of the line go to the left "
            "child. Underneath, the impurity decrease of that split is traced; its peak is the "
            "exhaustive choice."
        )
    )
    panel.chart(threshold_scan_figure(profile, class_names=class_names), key="ss_scan_fig")


node_sections()

st.subheader("4. Whole trees under cross-validation")
st.caption(
    link_terms(
        "Grow a tree with each strategy on the same folds: accuracy (or R²), thresholds "
        "evaluated and fit time. Runs in the background; Stop keeps the finished folds."
    )
)
c1, c2, c3 = st.columns(3)
cv_depth = c1.slider(
    "Tree depth",
    1,
    20,
    8,
    key="ss_cv_depth",
    help=link_terms("The DICS paper compares trees of depth 8."),
)
folds = folds_slider(c2, "ss_cv_folds", ds)
budget = c3.number_input("Time budget (seconds)", 5, 3600, 120, step=5, key="ss_cv_budget")


def make_plan():
    return strategy_plan(
        ds,
        strategies,
        max_depth=cv_depth,
        min_samples_leaf=int(min_leaf),
        n_candidates=int(k),
        criterion=criterion,
        n_splits=folds,
        random_state=seed(),
    )


result, meta = cv_job_panel(
    CV_JOB,
    ds,
    make_plan,
    budget=budget,
    can_run=bool(strategies),
    idle_text="Press **Run** to compare whole trees.",
    estimate=comparison_notice(
        ds,
        service.strategy_models(
            strategies,
            max_depth=cv_depth,
            min_samples_leaf=int(min_leaf),
            n_candidates=int(k),
            **({"criterion": criterion} if ds.task == "classification" else {}),
        ),
        folds,
        "ss",
        what=f"growing {len(strategies)} trees on each of {folds} folds and on all rows",
    ),
)
st.caption(link_terms(f"Results for {meta['caption']}"))
panel.meta = meta
metric = "accuracy" if meta["task"] == "classification" else "r2"
from engine.compare import folds_label, shown_summary, summary_header  # noqa: E402 (loaded with the job's results)

n_planned = result.n_folds or meta.get("n_folds")
st.caption(
    link_terms(
        f"Mean over {folds_label(result.summary, n_planned)} (the folds column counts each "
        "model's finished folds; — in a std column where a model has 1 fold: no spread)."
    )
)
cols = [
    "model",
    metric,
    metric + "_std",
    "folds",
    "candidates",
    "fit_seconds",
    "n_leaves",
    "depth",
]
shown = shown_summary(result.summary[[c for c in cols if c in result.summary]])  # 1 fold: "—"
panel.table(
    shown,
    name="summary",
    hide_index=True,
    width="stretch",
    column_config={column: summary_header(column) for column in shown.columns},
)
panel.chart(strategy_tradeoff_figure(result.summary, meta["task"]), key="ss_tradeoff")
CV_JOB.keep_run("split_strategies")
if meta.get("plan"):
    panel.snippet(split_strategies_snippet(meta))
csv_download(
    "Download per-fold results (CSV)", result.folds, "split_strategies_cv.csv", key="ss_dl_cv"
)
if result.models:
    labels = meta["labels"]
    keys = list(result.models)
    job, picked = CV_JOB.job, st.session_state.get("_ss_tree_picks")
    for i, wkey in enumerate(("ss_left_tree", "ss_right_tree")):
        if picked is None or picked[0] is not job:
            # a new result starts from its first two trees.  Set the values, do not leave
            # them to the widgets' defaults: the pickers were not on the page while the job
            # ran, and the browser then kept showing the last result's pick (a tree that may
            # not exist any more) above another tree.
            st.session_state[wkey] = keys[min(i, len(keys) - 1)]
        elif st.session_state.get(wkey) not in keys:
            # the same result after another page: Streamlit dropped the pickers' values
            st.session_state[wkey] = picked[1 + i]
    # side by side; one above the other in projection mode (half a screen is too narrow
    # for the larger node labels)
    stacked = bool(st.session_state.get(PROJECTION_KEY))
    c1, c2 = (st.container(), st.container()) if stacked else st.columns(2)
    for col, wkey in ((c1, "ss_left_tree"), (c2, "ss_right_tree")):
        with col:
            pick = st.selectbox(
                "Tree", keys, key=wkey, format_func=lambda key: labels.get(key, key)
            )
            t = labelled_tree(result.models[pick], meta)
            panel.chart(
                tree_figure(
                    t,
                    feature_names=meta["feature_names"],
                    class_names=meta["classes"],
                    collapse_depth=4,
                    title=f"{labels.get(pick, pick)}: {t.n_leaves} leaves, depth {t.max_depth}",
                    width=None if stacked else HALF_COLUMN_WIDTH,
                ),
                key=f"{wkey}_fig",
            )
    st.session_state["_ss_tree_picks"] = (
        job,
        st.session_state["ss_left_tree"],
        st.session_state["ss_right_tree"],
    )
