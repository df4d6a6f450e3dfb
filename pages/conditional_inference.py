"""Conditional inference page: test-based splits (CIT; ctree's asymptotic tests or the paper's
permutation tests), forests (CIF), how their
feature rankings differ from impurity-based ones, and what top-k features buy downstream
(docs/spec.md section 4)."""

import numpy as np
import pandas as pd
import streamlit as st

from engine.cit.service import (
    CART,
    CIF,
    CIT,
    CLASSIFICATION_LEARNERS,
    MISSING_VALUES_CAPTION,
    NOT_IN_POOL,
    NOT_TESTED,
    REGRESSION_LEARNERS,
    RF,
    TESTED,
    fit_rankings_steps,
    leaf_reason,
    make_rankers,
    node_feature_table,
    rankings_table,
    root_tests,
    selection_bias_steps,
    threshold_table,
    top_k_steps,
)
from engine.figures.cit import (
    cit_tree_figure,
    leaf_distribution_figure,
    null_histogram_figure,
    rankings_figure,
    selection_bias_figure,
    threshold_statistic_figure,
    top_k_figure,
)
from engine.jobs import Job
from engine.scale import PAGE_BUDGET
from engine.snippets import conditional_inference_snippet
from engine.teaching import predict
from engine.teaching.glossary import link_terms
from pages._link_params import conditional_inference_link
from pages._links import page_title
from pages._runs import keep_runs, restore_runs, result_only
from pages._shared import (
    PROJECTION_KEY,
    PageJob,
    ResultPanel,
    SavedSettings,
    current_dataset,
    dataset_caption,
    dataset_digest,
    job_meta,
    labelled_tree,
    md,
    remember_model,
    require_entrypoint,
    scale_notice,
    seed,
    show_job_failure,
    stop_page,
)
from pages._teaching import PredictFirst

TITLE = "Conditional inference (CIT / CIF)"
METHODS = (CIT, CIF, CART, RF)
PRESETS = ("auto", "minimum", "maximum", "fixed B")
#: The two procedures (engine.cit.tree): ctree's (the estimators' defaults) and the paper's.
PROCEDURES = {
    "ctree": "ctree (R partykit): asymptotic p-values, maximally selected split points",
    "paper": "CIT paper: permutation tests in stage A and stage B",
}
#: Widgets each procedure sets when it is chosen (its minimum node sizes and muting).
PROCEDURE_WIDGETS = {
    "ctree": {"ci_mss": 20, "ci_msl": 7, "ci_min_frac": 0.01, "ci_muting": False},
    "paper": {"ci_mss": 2, "ci_msl": 1, "ci_min_frac": 0.0, "ci_muting": True},
}
#: Root-node permutation work (features x permutations x rows) above which we warn.
HEAVY_WORK = 3e9
STATUS_SHORT = {TESTED: "tested", NOT_TESTED: "scan stopped", NOT_IN_POOL: "not in pool"}

#: The page's settings (parameter panel, top-k and selection-bias inputs), saved at every run.
#: Streamlit drops the values of a page's widgets when the user switches page while a job's
#: fragment is polling (keep_widget_state then has nothing left to keep), so they are put
#: back from here. Buttons, jobs, charts and ``*_view`` widgets are not settings.
SETTINGS = SavedSettings(
    "_ci_saved_settings",
    merge=True,
    keys=(
        "ci_procedure",
        "ci_teststat",
        "ci_splitstat",
        "ci_min_frac",
        "ci_selector_clf",
        "ci_splitter_clf",
        "ci_selector_reg",
        "ci_splitter_reg",
        "ci_alpha_sel",
        "ci_alpha_spl",
        "ci_adj_sel",
        "ci_adj_spl",
        "ci_es_sel",
        "ci_es_spl",
        "ci_b_sel_preset",
        "ci_b_sel",
        "ci_b_spl_preset",
        "ci_b_spl",
        "ci_muting",
        "ci_fscan",
        "ci_tscan",
        "ci_max_features",
        "ci_tmethod",
        "ci_mt_kind",
        "ci_mt_k",
        "ci_min_dec",
        "ci_max_depth",
        "ci_mss",
        "ci_msl",
        "ci_n_trees",
        "ci_learner_classification",
        "ci_learner_regression",
        "ci_folds",
        "ci_rerank",
        "ci_topk_methods",
        "ci_n_noise",
    ),
)
#: The page's jobs: the fit (tree, then the rankings' models), top-k, selection bias.  A
#: callback cannot interrupt a fit, so Stop does not wait for them to end.
FIT = PageJob(
    "ci",
    elsewhere="A fit is still running on {caption} Pick that dataset again to watch it, "
    "or stop it here.",
    join_seconds=0,
    to_store=result_only,
)
TOPK = PageJob(
    "ci_topk",
    elsewhere="A top-k run is still running on {caption} Pick that dataset again to watch "
    "it, or stop it here.",
    join_seconds=0,
    to_store=result_only,
)
BIAS = PageJob(
    "ci_bias",
    elsewhere="A selection-bias demonstration is still running on {caption} Pick that "
    "dataset again to watch it, or stop it here.",
    join_seconds=0,
    to_store=result_only,
)

require_entrypoint("pages/conditional_inference.py")
SETTINGS.restore()
restore_runs("conditional_inference", FIT, TOPK, BIAS)  # ?run=<id>: stored, not refitted


def save_settings() -> None:
    """Remember the current values of the page's settings (see ``SETTINGS``)."""
    SETTINGS.save()


page_title(TITLE)
st.markdown(
    "A **conditional inference tree** (Hothorn, Hornik & Zeileis 2006) splits a node only "
    "when a **test of independence** says the target depends on some feature. *Stage A* "
    "tests every feature and picks the one with the smallest p-value, if it beats the level "
    "after adjusting for the number of features tested; otherwise the node stays a leaf. "
    "*Stage B* chooses the split point on that feature. Two procedures: **ctree** (the "
    "default, as R partykit's `ctree`): asymptotic p-values of a linear association "
    "statistic (chi-square or multivariate normal limit, exact for strong splits too) and "
    "the cut point with the largest two-sample statistic; the **CIT paper** "
    "([Milletich et al., arXiv 2607.01417](https://arxiv.org/abs/2607.01417)): Monte Carlo "
    "permutation tests at both stages (shuffle the target B times; p-values never below "
    "1/(B+1)). Because the choice is made by p-values, not by the largest impurity "
    "decrease, features with many distinct values get no head start: CART's **selection "
    "bias** disappears. Click a node to see every feature's test there; compare the "
    "rankings with CART and random forests; check what the top-k features buy downstream."
)

ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(FIT, TOPK, BIAS)
st.markdown(dataset_caption(ds))
st.caption(link_terms(MISSING_VALUES_CAPTION))
clf = ds.task == "classification"
if ds.n_samples < 10:
    st.error(
        f"This dataset has {ds.n_samples} rows; the tests need at least 10. "
        "Pick a larger dataset or drop fewer rows."
    )
    stop_page(FIT, TOPK, BIAS)


SETTINGS.read_link(conditional_inference_link(ds.task, ds.n_features))


def apply_procedure() -> None:
    """Set the widgets the chosen procedure presets (its node sizes and muting)."""
    st.session_state.update(PROCEDURE_WIDGETS[st.session_state["ci_procedure"]])


procedure = st.radio(
    "Procedure",
    list(PROCEDURES),
    format_func=PROCEDURES.get,
    key="ci_procedure",
    horizontal=True,
    on_change=apply_procedure,
    help=link_terms(
        "ctree: R partykit's defaults (asymptotic tests, minimum 20 rows to split and 7 per "
        "leaf, no feature muting); fast on large tables. CIT paper: Monte Carlo permutation "
        "tests of the feature and of every threshold (min. 2 rows to split, 1 per leaf, feature "
        "muting); slower, p-values floored at 1/(B+1). Choosing one sets those parameters."
    ),
)
ctree = procedure == "ctree"

# -- parameters --------------------------------------------------------------------------
with st.expander(f"Parameters ({procedure} procedure)", expanded=False):
    c = st.columns(4)
    if ctree:
        teststat = c[0].selectbox(
            "Test statistic (stage A)",
            ["quadratic", "maximum"],
            key="ci_teststat",
            help=link_terms(
                "Form of the standardised linear statistic of each feature and the target "
                "(ctree's teststat): quadratic (chi-square p-value, degrees of freedom = rank "
                "of its covariance) or maximum (largest standardised entry, multivariate normal "
                "p-value). For a numeric feature the quadratic statistic is (n - 1) eta^2 "
                "(classes) or (n - 1) r^2 (numeric target)."
            ),
        )
        splitstat = c[1].selectbox(
            "Split statistic (stage B)",
            ["quadratic", "maximum"],
            key="ci_splitstat",
            help=link_terms(
                "The cut point of the chosen feature with the largest two-sample statistic "
                "in this form (ctree's splitstat); categorical features: the best split of "
                "their categories into two groups. No test in stage B."
            ),
        )
        selector = splitter = None
    elif clf:
        selector = c[0].selectbox(
            "Selector (stage A)",
            ["mc", "mi"],
            key="ci_selector_clf",
            help=link_terms(
                "Association of a feature with the class. mc: correlation ratio "
                "sqrt(between-class / total sum of squares); mi: mutual information of the "
                "binned feature and the class. Categorical features always use mutual "
                "information of their categories."
            ),
        )
        splitter = c[1].selectbox(
            "Splitter (stage B)",
            ["gini", "entropy"],
            key="ci_splitter_clf",
            help=link_terms(
                "Impurity of the children; stage B tests the weighted "
                "child impurity of each threshold."
            ),
        )
    else:
        selector = c[0].selectbox(
            "Selector (stage A)",
            ["pc"],
            key="ci_selector_reg",
            help=link_terms(
                "pc: |Pearson correlation| of the feature and the target. Categorical "
                "features use the correlation ratio of the target across their categories."
            ),
        )
        splitter = c[1].selectbox(
            "Splitter (stage B)",
            ["mse"],
            key="ci_splitter_reg",
            help=link_terms("Squared error of the children."),
        )
    alpha_sel = c[2].number_input(
        "alpha (stage A)",
        0.0001,
        0.5,
        0.05,
        step=0.01,
        format="%.4f",
        key="ci_alpha_sel",
        help=link_terms(
            "Level of the feature-selection test. A node splits only when the best "
            "feature's p-value is below alpha (adjusted for the number of features tested when "
            "Bonferroni is on: ctree compares 1 - (1 - p)^m with alpha, the paper p with "
            "alpha / m). Smaller alpha: smaller trees."
        ),
    )
    alpha_spl = c[3].number_input(
        "alpha (stage B)",
        0.0001,
        0.5,
        0.05,
        step=0.01,
        format="%.4f",
        key="ci_alpha_spl",
        disabled=ctree,
        help=link_terms(
            "Level of the threshold test (divided by the number of candidate thresholds "
            "when Bonferroni is on)."
        ),
    )
    c = st.columns(4)
    adj_sel = c[0].checkbox(
        "Bonferroni in stage A",
        True,
        key="ci_adj_sel",
        help=link_terms(
            "Adjust for the m features tested at the node (controls the chance of any "
            "false split at a node): ctree compares 1 - (1 - p)^m with alpha, the paper p with "
            "alpha / m."
        ),
    )
    adj_spl = c[1].checkbox(
        "Bonferroni in stage B",
        True,
        key="ci_adj_spl",
        disabled=ctree,
        help=link_terms("Compare p-values with alpha / |C|, |C| = candidate thresholds."),
    )
    es_sel = c[2].checkbox(
        "Adaptive stopping (stage A)",
        True,
        key="ci_es_sel",
        disabled=ctree,
        help=link_terms(
            "Stop permuting once a Beta-CDF rule is 95% sure whether p is "
            "below the level (almost always the same decisions, far fewer "
            "permutations)."
        ),
    )
    es_spl = c[3].checkbox(
        "Adaptive stopping (stage B)",
        True,
        key="ci_es_spl",
        disabled=ctree,
        help=link_terms("The same rule for the threshold tests."),
    )
    c = st.columns(4)
    preset_help = (
        "Permutations B per test: presets at the (adjusted) level a: minimum "
        "ceil(1/a), auto max(ceil(1/a), ceil(z^2 (1-a)/a)), maximum ceil(1/(4a^2)); "
        "or a fixed B (multiplied by the number of tests when Bonferroni is on, as "
        "in citrees). More permutations: more precise p-values, slower fits."
    )
    pre_sel = c[0].selectbox(
        "Permutations (stage A)",
        PRESETS,
        key="ci_b_sel_preset",
        help=link_terms(preset_help),
        disabled=ctree,
    )
    b_sel = c[1].number_input(
        "Fixed B (stage A)",
        1,
        100_000,
        99,
        step=1,
        key="ci_b_sel",
        disabled=ctree or pre_sel != "fixed B",
        help=link_terms("Used when 'fixed B' is chosen."),
    )
    pre_spl = c[2].selectbox(
        "Permutations (stage B)",
        PRESETS,
        key="ci_b_spl_preset",
        help=link_terms(preset_help),
        disabled=ctree,
    )
    b_spl = c[3].number_input(
        "Fixed B (stage B)",
        1,
        100_000,
        99,
        step=1,
        key="ci_b_spl",
        disabled=ctree or pre_spl != "fixed B",
        help=link_terms("Used when 'fixed B' is chosen."),
    )
    c = st.columns(4)
    muting = c[0].checkbox(
        "Feature muting",
        False,
        key="ci_muting",
        help=link_terms(
            "A feature that is not significant at a node is not tested "
            "again below it (subtree-local)."
        ),
    )
    fscan = c[1].checkbox(
        "Feature scanning",
        True,
        key="ci_fscan",
        disabled=ctree,
        help=link_terms(
            "Test features in decreasing order of their raw statistic and "
            "stop at the first significant one (needs adaptive stopping to "
            "pay off)."
        ),
    )
    tscan = c[2].checkbox(
        "Threshold scanning",
        True,
        key="ci_tscan",
        disabled=ctree,
        help=link_terms(
            "Test thresholds from the best raw impurity and stop at the first significant one."
        ),
    )
    max_features = c[3].selectbox(
        "Features per node",
        ["all", "sqrt", "log2"],
        key="ci_max_features",
        help=link_terms(
            "Features drawn (without replacement) for stage A at "
            "each node of the tree. The forest always uses sqrt."
        ),
    )
    c = st.columns(4)
    tmethod = c[0].selectbox(
        "Threshold candidates",
        ["exact", "histogram", "percentile", "random"],
        key="ci_tmethod",
        disabled=ctree,
        help=link_terms(
            "exact: every midpoint between distinct values; histogram: edges of k equal-"
            "width bins; percentile: k percentiles; random: k midpoints at random. Features "
            "with at most 4 values always use every midpoint."
        ),
    )
    mt_kind = c[1].selectbox(
        "Number k of candidates",
        ["sqrt", "log2", "fixed k"],
        key="ci_mt_kind",
        disabled=ctree or tmethod == "exact",
        help=link_terms(
            "k for histogram / percentile / random: sqrt or log2 of the "
            "number of distinct values at the node, or a fixed k (the "
            "paper uses 256), capped at the number of midpoints as in "
            "citrees."
        ),
    )
    mt_k = c[2].number_input(
        "Fixed k",
        1,
        10_000,
        256,
        step=1,
        key="ci_mt_k",
        disabled=ctree or tmethod == "exact" or mt_kind != "fixed k",
    )
    min_dec = c[3].number_input(
        "Min. impurity decrease",
        0.0,
        1e6,
        0.0,
        step=0.01,
        format="%.4f",
        key="ci_min_dec",
        help=link_terms(
            "A significant split is still refused when it lowers the impurity by less than this."
        ),
    )
    c = st.columns(5)
    max_depth = c[0].number_input(
        "Max depth (0 = none)",
        0,
        50,
        0,
        step=1,
        key="ci_max_depth",
        help=link_terms("Stop splitting at this depth; 0: the tests decide."),
    )
    mss = c[1].number_input(
        "Min. rows to split",
        2,
        100_000,
        20,
        step=1,
        key="ci_mss",
        help=link_terms("Nodes with fewer rows are leaves (ctree's minsplit 20; the paper 2)."),
    )
    msl = c[2].number_input(
        "Min. rows per leaf",
        1,
        100_000,
        7,
        step=1,
        key="ci_msl",
        help=link_terms(
            "Split points that leave fewer rows on a side are not candidates (ctree's "
            "minbucket 7; the paper 1)."
        ),
    )
    min_frac = c[3].number_input(
        "Min. child fraction",
        0.0,
        0.49,
        0.01,
        step=0.01,
        format="%.3f",
        key="ci_min_frac",
        help=link_terms(
            "A child keeps at least this fraction of its parent's rows (ctree's minprob "
            "0.01; the paper 0)."
        ),
    )
    n_trees = c[4].number_input(
        "Trees in the forests",
        5,
        500,
        50,
        step=5,
        key="ci_n_trees",
        help=link_terms(
            "Trees of the conditional inference forest and of the "
            "random forest used for the rankings."
        ),
    )

params = dict(
    p_value="asymptotic" if ctree else "permutation",
    splitter=splitter,
    alpha_selector=float(alpha_sel),
    alpha_splitter=float(alpha_spl),
    adjust_alpha_selector=adj_sel,
    adjust_alpha_splitter=adj_spl,
    n_resamples_selector=int(b_sel) if pre_sel == "fixed B" else pre_sel,
    n_resamples_splitter=int(b_spl) if pre_spl == "fixed B" else pre_spl,
    early_stopping_selector="adaptive" if es_sel else None,
    early_stopping_splitter="adaptive" if es_spl else None,
    feature_muting=muting,
    feature_scanning=fscan,
    threshold_scanning=tscan,
    threshold_method=tmethod,
    max_thresholds=None if mt_kind == "sqrt" else ("log2" if mt_kind == "log2" else int(mt_k)),
    max_features=None if max_features == "all" else max_features,
    max_depth=int(max_depth) or None,
    min_samples_split=int(mss),
    min_samples_leaf=int(msl),
    min_child_fraction=float(min_frac),
    min_impurity_decrease=float(min_dec),
)
if ctree:  # ctree's tests and split points; the permutation settings do not apply
    params.update(teststat=teststat, splitter=splitstat)
    for name in (
        "alpha_splitter",
        "adjust_alpha_splitter",
        "n_resamples_selector",
        "n_resamples_splitter",
        "early_stopping_selector",
        "early_stopping_splitter",
        "feature_scanning",
        "threshold_scanning",
        "threshold_method",
        "max_thresholds",
    ):
        params.pop(name)
else:
    params.update(selector=selector, splitter=splitter)
save_settings()
categorical = ds.is_categorical if ds.is_categorical.any() else None
try:
    m_root, a_root, b_root = root_tests(ds.task, params, ds.n_features, categorical=categorical)
    param_error = None
except ValueError as exc:
    param_error = str(exc)
if param_error:
    st.error(f"**These parameters cannot be used:** {param_error}")
    st.stop()
drawn = f"{m_root}" if m_root == ds.n_features else f"{m_root} of {ds.n_features}"
if ctree:
    adjusted = (
        f"adjusted as partykit does, 1 - (1 - p)^m with m = {m_root}, and compared with "
        f"alpha = {params['alpha_selector']:.3g}"
        if adj_sel
        else f"compared with alpha = {params['alpha_selector']:.3g} (no adjustment)"
    )
    st.caption(
        link_terms(
            f"**Running: ctree.** At the root: {drawn} features tested with **asymptotic "
            f"p-values** ({params['teststat']} statistic, "
            + ("chi-square" if params["teststat"] == "quadratic" else "multivariate normal")
            + f" limit; no permutations, no floor), {adjusted}; the split point is the cut with "
            f"the largest {params['splitter']} two-sample statistic."
        )
    )
else:
    st.caption(
        link_terms(
            f"**Running: the CIT paper's permutation tests.** At the root: {drawn} features "
            f"tested at level {a_root:.3g}, up to {b_root:,} permutations each"
            + (" (adaptive stopping usually needs far fewer)" if es_sel else "")
            + f". Monte Carlo p-values cannot go below 1/(B+1) = {1 / (b_root + 1):.2g}, so "
            "they do not rank strong associations; ctree's asymptotic p-values do."
        )
    )
if not ctree and not es_sel and 1.0 / (b_root + 1) >= a_root:
    st.warning(
        f"With {b_root:,} permutations the smallest possible p-value is 1/(B+1) = "
        f"{1 / (b_root + 1):.3g}, not below the root's level {a_root:.3g}: no split can "
        "ever be significant. Raise B (or use a preset, or adaptive stopping, which "
        "raises B to at least 1/level)."
    )
if not ctree and not es_sel and b_root * m_root * ds.n_samples > HEAVY_WORK:
    st.warning(
        "Without adaptive stopping every test runs all its permutations: about "
        f"{b_root * m_root * ds.n_samples:.1e} row-permutations at the root alone. The "
        "fit may take minutes and cannot be interrupted half-way; consider adaptive "
        "stopping or a smaller preset."
    )

digest = dataset_digest(ds)

# -- predict first (optional): the root's feature, a p-value's significance -----------------
#: The key of the fit these settings make (the tree depends on the data, parameters, seed).
predict_key = predict.result_key(digest, params, seed())
PREDICT = PredictFirst("ci", what="the tree")
questions = None  # drawn only while no answer is locked in and the result is unseen
if PREDICT.asking(predict_key):
    with PREDICT.box:
        asked = st.selectbox(
            "Feature asked about in the p-value question",
            ds.feature_names,
            key="ci_predict_feature",
            help=link_terms(
                "The second question asks whether this feature's p-value at the root is "
                "below alpha (stage A's level)."
            ),
        )
    questions = [
        predict.root_split_question(ds.feature_names, model="the conditional inference tree"),
        predict.significance_question(asked, params["alpha_selector"], adjusted=bool(adj_sel)),
    ]
PREDICT.ask(questions, predict_key)  # or what is locked in, or why nothing is asked


# -- job helper --------------------------------------------------------------------------
def draw_progress(snap) -> None:
    latest = snap.latest or {"done": 0, "total": 1, "message": "starting..."}
    st.progress(
        min(1.0, latest["done"] / max(latest["total"], 1)),
        text=f"{latest['message']} ({snap.elapsed:.1f} s)",
    )


def job_controls(
    page_job: PageJob, label: str, start, *, help_text: str | None = None, redraw_on=None
):
    """The kit's Run / Stop buttons and progress fragment for ``page_job``; ``start()``
    returns ``(Job, meta)`` (or raises ValueError, shown as an error).  The whole page is
    redrawn when the job ends or when ``redraw_on(latest snapshot)`` changes (e.g. a new
    partial result to show).  Returns the job (None before the first run) and whether it
    runs."""
    page_job.controls(
        label,
        start,
        help=link_terms(help_text),
        columns=(1.4, 1, 5),
        on_error=lambda exc: st.error(str(exc)),
    )
    running = page_job.running
    if running:
        page_job.live(draw_progress, redraw_on=redraw_on)
    return page_job.job, running


def finished_result(job, what: str):
    """The job's result (or what Stop kept), after showing its status; None if nothing."""
    snap = job.snapshot()
    if snap.status == "error":
        show_job_failure(snap, what, "use fewer permutations, trees or rows")
        return snap.result
    if snap.status in ("cancelled", "timeout"):
        why = "was stopped" if snap.status == "cancelled" else "ran out of time"
        st.warning(f"{what} {why}; showing what finished.")
    return snap.result


# -- 1. fit --------------------------------------------------------------------------------
st.subheader("1. Fit the tree and the rankings")


def start_fit():
    meta = {
        **job_meta(ds),
        "y": ds.y,
        "digest": digest,
        "params": dict(params),
        "n_trees": int(n_trees),
        "ds_option": st.session_state.get("ds"),
        "seed": seed(),
        "predict_key": predict_key,
    }
    job = Job(
        fit_rankings_steps,
        ds.X,
        ds.y,
        ds.task,
        params,
        categorical=categorical,
        n_estimators=int(n_trees),
        random_state=seed(),
        budget=600.0,
        name="ci_fit",
    )
    return job, meta


fit_seconds = scale_notice(  # one conditional inference tree per forest tree, and one
    ds,
    "cit",
    budget=600.0,
    what=f"the fit (the tree, then a forest of {int(n_trees)} conditional inference trees; "
    "CART and the random forest beside them have no curve)",
    repeats=1 + int(n_trees),
    key="ci_subsample_btn",
    lower_bound=True,
)
meta = st.session_state.get(FIT.meta_key)
# a fit that would take longer than an in-page action waits for Fit (and the offer above)
if fit_seconds < PAGE_BUDGET and (
    FIT.job is None or (meta is not None and meta["digest"] != digest)
):
    # first visit, or another dataset: fit right away (the tree takes well under a second
    # on the bundled data; the forests follow in the background)
    if FIT.job is not None:
        FIT.job.cancel()
    FIT.launch(*start_fit())
job, running = job_controls(
    FIT,
    "Fit",
    start_fit,
    help_text="Fit the conditional inference tree, then CART, a random "
    "forest and the conditional inference forest for the "
    "rankings (in the background).",
    redraw_on=lambda latest: len((latest or {}).get("importances", ())),
)
meta = st.session_state.get(FIT.meta_key)
if job is None:
    fit = None
elif running:
    fit = job.snapshot().latest
else:
    fit = finished_result(job, "The fit")
if not fit or fit.get("tree") is None:
    if not running:
        st.info("Press **Fit** to grow the tree.")
    st.stop()
if meta["params"] != params or meta["n_trees"] != int(n_trees):
    st.caption(link_terms("The parameters changed since this fit; press **Fit** to refit."))
est = fit["tree"]
if meta.get("predict_key"):  # a run stored before the questions has none

    def page_answer(question):
        if question.kind == "root":
            return predict.root_split_answer(est.tree_, meta["feature_names"])
        return predict.significance_answer(est, meta["feature_names"], question.subject)

    PREDICT.reveal(meta["predict_key"], page_answer)
st.caption(link_terms(f"Fitted on {meta['caption']}"))
if not running:
    keep_runs("conditional_inference", FIT, TOPK, BIAS)  # the fit, top-k and bias runs
panel = ResultPanel("conditional_inference", meta)
if "seed" in meta:  # a run stored before the snippets has no seed
    panel.snippet(conditional_inference_snippet(meta))
tree = labelled_tree(est, meta)
names = meta["feature_names"]


def why_leaf(v: int) -> str:
    """:func:`leaf_reason` for node ``v`` of the fitted tree."""
    return leaf_reason(
        est.node_records_[v],
        tree.impurity[v],
        rows=int(tree.n_node_samples[v]),
        depth=int(tree.depth[v]),
        est=est,
    )


if not running and job.snapshot().status == "done" and meta.get("_remembered") != id(est):
    label = f"CIT, {meta['caption'].split('**')[1]}, {tree.n_leaves} leaves"
    remember_model(label, est, ds, TITLE)
    meta["_remembered"] = id(est)

# -- 2. the tree -----------------------------------------------------------------------------
st.subheader("2. The tree")
if tree.node_count == 1:
    rec0 = est.node_records_[0]
    st.info(
        f"The tree is a single leaf: at the root, {why_leaf(0)}."
        + (
            " Below are the root's tests; a larger alpha, more permutations or turning "
            "Bonferroni off lets weaker associations split."
            if rec0.get("p_values")
            else ""
        )
    )
nodes = list(range(tree.node_count))
if st.session_state.get("_ci_tree_id") != id(est):
    st.session_state["ci_node_view"] = 0  # a new fit starts at the root
    st.session_state["_ci_tree_id"] = id(est)
elif st.session_state.get("ci_node_view") not in nodes:
    # Streamlit forgot the *_view widget on another page: back to this tree's last node
    last = st.session_state.get("_ci_node", 0)
    st.session_state["ci_node_view"] = last if last in nodes else 0
fig = cit_tree_figure(
    est,
    tree=tree,
    feature_names=names,
    class_names=meta["classes"],
    highlight_node=st.session_state["ci_node_view"],
)
fig.update_traces(unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="scatter"))


def on_tree_click():
    """Select the clicked node (a callback runs before the page, so the selectbox below
    and the highlight follow at once, even while the forests are still being fitted)."""
    event = st.session_state.get("ci_tree_fig_view")
    points = (event.selection.points if event and event.selection else None) or []
    clicked = next(
        (int(p["customdata"]) for p in points if isinstance(p.get("customdata"), int | float)), None
    )
    if clicked is not None and 0 <= clicked < tree.node_count:
        st.session_state["ci_node_view"] = clicked


panel.chart(fig, on_select=on_tree_click, selection_mode="points", key="ci_tree_fig_view")
panel.chart(
    leaf_distribution_figure(
        tree,
        tree.apply(meta["X"]),
        meta["y"],
        class_names=meta["classes"],
        target=meta.get("target"),
    ),
    key="ci_leaves",
)
st.download_button(
    "Download the tree (JSON)",
    tree.to_json(indent=1).encode(),
    file_name="conditional_inference_tree.json",
    mime="application/json",
    on_click="ignore",
    key="ci_tree_dl",
)


# -- 3. one node -----------------------------------------------------------------------------
def node_label(v: int) -> str:
    rows = int(tree.n_node_samples[v])
    if tree.is_leaf[v]:
        return f"node {v}: leaf, {rows} rows"
    routed = est.node_records_[v].get("n_missing_routed", 0)
    by_rule = f", {routed} routed by the missing-value rule" if routed else ""
    return (
        f"node {v}: {tree.rule(v, names)}, {rows} rows{by_rule}, p = {est.p_value_selector_[v]:.3g}"
    )


st.subheader("3. Why this node split (or did not)")
st.caption(link_terms("Click a node in the tree, or choose it here."))
node = st.selectbox("Node", nodes, key="ci_node_view", format_func=node_label)
st.session_state["_ci_node"] = node
rec = est.node_records_[node]
table = node_feature_table(est, node, names)
if table.empty:
    st.info(f"Node {node} has no tests: {why_leaf(node)}.")
else:
    n_tested = int((table["status"] == "tested").sum())
    chosen = table.loc[table["chosen"], "feature"]
    asymptotic = rec.get("p_value_method") == "asymptotic"
    adjusted = bool(est.adjust_alpha_selector)
    alpha = float(table["alpha"].iloc[0])
    # one scale: the p-value that decides (adjusted under Bonferroni) beside the level alpha
    adj_name = "adjusted p (1-(1-p)^m)" if asymptotic else "adjusted p (m x p, Bonferroni)"
    decided = adj_name if adjusted else "p-value"
    verdict = (
        f"**{md(chosen.iloc[0])}** was chosen ("
        + ("adjusted " if adjusted else "")
        + f"p = {float(table.loc[table['chosen'], 'p_bonferroni'].iloc[0]):.3g} < alpha = "
        f"{alpha:.3g})"
        if len(chosen)
        else why_leaf(node)
    )
    how = (
        f"tested with asymptotic p-values ({rec.get('teststat', 'quadratic')} statistic)"
        if asymptotic
        else "permutation-tested"
    )
    scale = (
        f" (each p-value adjusted for the {rec['n_tested']} features drawn"
        + ("" if asymptotic else f"; the same as p < alpha / m = {rec['alpha_selector']:.3g}")
        + ")"
        if adjusted
        else ""
    )
    routed = rec.get("n_missing_routed", 0)
    st.markdown(
        f"Stage A at node {node}: {rec['n_tested']} features drawn, {n_tested} "
        f"{how} at level alpha = {alpha:.3g}{scale}; {verdict}."
        + (
            f" The split routed {routed} rows with a missing "
            f"{md(names[int(tree.feature[node])])} by the missing-value rule "
            f"({rec.get('n_missing_left', 0)} to the left)."
            if routed and not tree.is_leaf[node]
            else ""
        )
    )
    show = table.drop(columns=["level", "at_floor"]).rename(
        columns={"p_value": "p-value", "p_bonferroni": adj_name, "alpha": "level alpha"}
    )
    show["status"] = show["status"].map(STATUS_SHORT)
    if not adjusted:  # without Bonferroni the column would repeat p
        show = show.drop(columns=adj_name)
    if asymptotic:  # no permutations to count
        show = show.drop(columns="permutations")

    def highlight(row):
        colour = "background-color: #FBD9BF" if row["chosen"] else ""
        return [colour] * len(row)

    number = st.column_config.NumberColumn
    panel.table(
        # "—" for a feature that was not tested (st.dataframe writes None)
        show.style.apply(highlight, axis=1).format(
            {c: "{:.4g}" for c in ("p-value", adj_name) if c in show}, na_rep="—"
        ),
        name="node_tests",
        hide_index=True,
        width="stretch",
        key="ci_node_table",
        column_config={
            "index": None,
            "statistic": number(
                format="%.4f",
                help=(
                    "ctree's quadratic / maximum statistic (asymptotic tests) or the raw "
                    "selector statistic (permutation tests)."
                ),
            ),
            "p-value": number(
                help=(
                    "Asymptotic p-value (chi-square or multivariate normal limit) or Monte "
                    "Carlo permutation p-value (1 + #{T_b >= T}) / (B + 1); unadjusted; —: "
                    "not tested."
                ),
            ),
            adj_name: number(
                help=(
                    "1 - (1 - p)^m (partykit's adjustment) or min(1, m p), m = features "
                    "drawn at the node; significant when below the level alpha beside it."
                ),
            ),
            "level alpha": number(
                format="%.3g",
                help=(
                    f"The level the {decided} column is compared with: significant when "
                    "below it. Under Bonferroni, m p < alpha is the same test as p < alpha / m."
                ),
            ),
            "permutations": number(
                help=("Permutations run (adaptive stopping ends early once the decision is clear).")
            ),
            "status": st.column_config.TextColumn(width="medium"),
        },
    )
    floored = table[table["at_floor"]]
    if len(floored):
        b_values = sorted({int(b) for b in floored["permutations"]})
        floor = 1.0 / (b_values[0] + 1)
        which = ", ".join(md(f) for f in floored["feature"][:4]) + (
            f" and {len(floored) - 4} more" if len(floored) > 4 else ""
        )
        st.caption(
            link_terms(
                f"p = {floor:.3g} for {which} is the **permutation floor** 1/(B+1) with B = "
                + " or ".join(f"{b:,}" for b in b_values)
                + ": none of the B shuffled targets gave a statistic as large as the observed "
                "one, and a Monte Carlo p-value (1 + #{T_b >= T}) / (B + 1) cannot go lower. The "
                "true p-value is smaller still; only more permutations (Permutations B) can "
                "show how small"
                + (
                    f". Adjusted for the {rec['n_tested']} features, the floor is "
                    f"{min(1.0, rec['n_tested'] * floor):.3g}."
                    if adjusted
                    else "."
                )
            )
        )
    st.caption(
        link_terms(
            "Status: *tested*; *scan stopped*: drawn, but feature scanning stopped at an "
            "earlier significant feature (statistic only; turn scanning off to test every "
            "feature); *not in pool*: muted by an ancestor's test, constant at this node, or "
            "not drawn (features per node). Categorical features use another statistic "
            "(mutual information or the correlation ratio of y), so compare p-values, not "
            "statistics, across feature types."
        )
    )
    st.download_button(
        "Download this node's tests (CSV)",
        table.to_csv(index=False).encode(),
        file_name=f"cit_node{node}_tests.csv",
        mime="text/csv",
        on_click="ignore",
        key="ci_node_dl",
    )
    nulls = rec.get("nulls", {})
    options = [int(f) for f in table.loc[table["status"] == "tested", "index"] if f in nulls]
    # side by side; one above the other in projection mode (half the width cut the titles)
    c1, c2 = (
        (st.container(), st.container()) if st.session_state.get(PROJECTION_KEY) else st.columns(2)
    )
    with c1:
        if asymptotic:
            st.caption(
                link_terms(
                    "Asymptotic tests have no permutation null distribution: the p-value is the "
                    + (
                        "chi-square tail of the quadratic statistic (degrees of freedom = rank of "
                        "its covariance)."
                        if rec.get("teststat") == "quadratic"
                        else "multivariate normal tail of the maximum statistic."
                    )
                    + " Choose the CIT paper's procedure to see permutation nulls."
                )
            )
        elif options:
            if st.session_state.get("ci_null_feature_view") not in options:
                # Streamlit forgot the *_view widget on another page: back to the last choice
                last = st.session_state.get("_ci_null_feature")
                st.session_state["ci_null_feature_view"] = last if last in options else options[0]
            f = st.selectbox(
                "Null distribution of",
                options,
                key="ci_null_feature_view",
                format_func=lambda j: names[j],
                help=link_terms(
                    "The feature's selector statistic under permutations of "
                    "the target at this node."
                ),
            )
            st.session_state["_ci_null_feature"] = f
            row = table[table["index"] == f].iloc[0]
            panel.chart(
                null_histogram_figure(
                    nulls[f],
                    row["statistic"],
                    p_value=row["p_value"],
                    tail="right",
                    name="selector statistic",
                    level=rec["alpha_selector"],
                    title=f"Stage A, node {node}: {names[f]}",
                ),
                key="ci_null_fig",
            )
    with c2:
        if "candidate_thresholds" in rec and len(rec["candidate_thresholds"]):
            f_split = int(rec["features"][int(np.argmin(rec["p_values"]))])
            if not tree.is_leaf[node]:
                f_split = int(tree.feature[node])
            cats = meta["categories"][f_split]
            panel.chart(
                threshold_statistic_figure(
                    rec,
                    feature_name=names[f_split],
                    parent_impurity=float(tree.impurity[node]),
                    category_labels=cats,
                ),
                key="ci_thr_fig",
            )
            tnull = rec.get("threshold_null")
            if tnull is not None and "chosen_threshold" in rec:
                trow = threshold_table(est, node)
                trow = trow[trow["chosen"]].iloc[0]
                panel.chart(
                    null_histogram_figure(
                        tnull,
                        trow["statistic"],
                        p_value=trow["p_value"],
                        tail="left",
                        name="weighted child impurity",
                        level=rec["alpha_splitter"],
                        title=f"Stage B, node {node}: chosen threshold on {names[f_split]}",
                    ),
                    key="ci_thr_null_fig",
                )
        elif "chosen_categories" in rec:
            cats = meta["categories"][int(tree.feature[node])]
            left = ", ".join(md(cats[c]) for c in rec["chosen_categories"])
            st.caption(
                link_terms(
                    f"Stage B: the split of the categories into two groups with the largest "
                    f"{rec['split_statistic']} statistic ({rec['split_statistic_value']:.4g}) "
                    f"sends {{{left}}} left."
                )
            )
        elif rec.get("p_values"):
            st.caption(link_terms(f"Stage B did not run here: {why_leaf(node)}."))

# -- 4. rankings -------------------------------------------------------------------------------
st.subheader("4. Feature rankings: CIT, CIF, CART, random forest")
imps = {m: fit["importances"][m] for m in METHODS if m in fit["importances"]}
if running:
    st.caption(link_terms("The forests are still being fitted; the table fills in as they finish."))
rank = rankings_table(imps, names)
st.caption(
    link_terms(
        "Normalised importances (each method sums to 1). CIT / CIF: impurity decrease of "
        "the significant splits (not weighted by node size); CART / random forest: "
        "scikit-learn's mean decrease in impurity (fully grown trees; categorical codes "
        "treated as numbers). Fit times: "
        + ", ".join(f"{m} {s:.2f} s" for m, s in fit["seconds"].items())
        + "."
    )
)
panel.chart(rankings_figure(rank, list(imps)), key="ci_rank_fig")
shown_rank = rank.round(4)
for column in [c for c in shown_rank if c.endswith(" rank")]:  # no order for importance 0
    shown_rank[column] = ["not used" if pd.isna(v) else str(int(v)) for v in rank[column]]
panel.table(shown_rank, name="rankings", hide_index=True, width="stretch", key="ci_rank_table")
st.download_button(
    "Download the rankings (CSV)",
    rank.to_csv(index=False).encode(),
    file_name="cit_rankings.csv",
    mime="text/csv",
    on_click="ignore",
    key="ci_rank_dl",
)
unused = [m for m, v in imps.items() if not np.any(np.asarray(v) > 0)]
if unused:
    st.caption(
        link_terms(
            f"{' and '.join(unused)} {'has' if len(unused) == 1 else 'have'} no split, so "
            "all importances are 0 and there is no ranking (a top-k run would keep the "
            "features in column order)."
        )
    )
if any(rank[f"{m} rank"].isna().any() for m in imps if m not in unused):
    st.caption(
        link_terms(
            "A rank is *not used* where the method gives the feature no importance (it never "
            "splits on it)."
        )
    )

# -- 5. top-k ------------------------------------------------------------------------------------
st.subheader("5. What the top-k features buy downstream")
st.caption(
    link_terms(
        "For each k, a fixed learner is trained on the k top-ranked features of each method "
        "and scored by cross-validation (features standardised on the training fold). The "
        "paper's protocol re-ranks on every training fold."
    )
)
learners = CLASSIFICATION_LEARNERS if clf else REGRESSION_LEARNERS
metric = "balanced accuracy" if clf else "R²"
c = st.columns([2, 3, 2, 2])  # room for every chosen k (the box hid "10" at 1280 px)
learner = c[0].selectbox(
    "Learner",
    learners,
    key=f"ci_learner_{ds.task}",
    help=link_terms(
        "The CIT paper's benchmark learners: logistic: logistic "
        "regression (balanced class weights); svm / svr: RBF support "
        "vector machine (C = 1); knn: 5 nearest neighbours, "
        "distance-weighted; ridge: ridge regression (alpha = 1)."
    ),
)
k_all = [k for k in (1, 2, 3, 5, 10, 20, 50) if k <= ds.n_features]
if ds.n_features not in k_all:
    k_all.append(ds.n_features)
ks = c[1].multiselect(
    "k values",
    k_all,
    default=[k for k in (1, 2, 3, 5, 10) if k in k_all] or k_all[:1],
    key="ci_ks_view",
    help=link_terms("Numbers of top-ranked features to keep."),
)
folds = c[2].slider("Folds", 2, 10, 5, key="ci_folds")
rerank = c[3].checkbox(
    "Re-rank on every training fold",
    True,
    key="ci_rerank",
    help=link_terms(
        "The paper's protocol (honest, slower: every method is refitted "
        "per fold). Off: use the rankings above, fitted on all rows "
        "(optimistic, fast)."
    ),
)
topk_methods = st.multiselect(
    "Methods", list(METHODS), default=list(METHODS), key="ci_topk_methods"
)
save_settings()


def start_topk():
    if not ks:
        raise ValueError("Choose at least one k.")
    if not topk_methods:
        raise ValueError("Choose at least one method.")
    rankers = make_rankers(
        ds.task, params, categorical=categorical, n_estimators=int(n_trees), random_state=seed()
    )
    if not rerank:
        if meta["digest"] != digest:
            raise ValueError("The rankings above were fitted on another dataset; press Fit.")
        missing = [m for m in topk_methods if m not in fit["importances"]]
        if missing:
            raise ValueError(
                f"No ranking above for {', '.join(missing)} yet (the fit was "
                "stopped or is still running): wait for it, press Fit, remove "
                "them from Methods, or re-rank on every training fold."
            )
        rankers = {
            m: np.argsort(-fit["importances"][m], kind="stable")
            for m in topk_methods
            if m in fit["importances"]
        }
    rankers = {m: r for m, r in rankers.items() if m in topk_methods}
    job = Job(
        top_k_steps,
        ds.X,
        ds.y,
        ds.task,
        rankers,
        sorted(ks),
        learner=learner,
        n_folds=int(folds),
        random_state=seed(),
        budget=900.0,
        name="ci_topk",
    )
    meta_topk = {
        "caption": dataset_caption(ds),
        "metric": metric,
        "learner": learner,
        "folds": int(folds),
    }
    return job, meta_topk


tjob, trunning = job_controls(TOPK, "Run top-k", start_topk)
if tjob is not None:
    tres = tjob.snapshot().latest if trunning else finished_result(tjob, "The top-k run")
    tmeta = TOPK.meta
    if tres and tres.get("curves"):
        st.caption(
            link_terms(f"Results for {tmeta['caption'].rstrip('.')}; learner {tmeta['learner']}.")
        )
        partial = [
            f"{m} ({len(cv['scores'])} of {tmeta['folds']} folds)"
            for m, cv in tres["curves"].items()
            if not cv.get("complete", True)
        ]
        if partial:
            st.caption(link_terms("Not every fold finished: " + ", ".join(partial) + "."))
        for note in tres.get("notes", []):
            st.info(note)
        panel.chart(top_k_figure(tres["curves"], metric=tmeta["metric"]), key="ci_topk_fig")
        ttable = pd.DataFrame({"k": next(iter(tres["curves"].values()))["k"]})
        for m, cv in tres["curves"].items():
            ttable[m] = np.round(cv["mean"], 4)
            ttable[f"{m} sd"] = np.round(cv["std"], 4)
        panel.table(ttable, name="top_k", hide_index=True, width="stretch", key="ci_topk_table")
        st.download_button(
            "Download the top-k scores (CSV)",
            ttable.to_csv(index=False).encode(),
            file_name="cit_top_k.csv",
            mime="text/csv",
            on_click="ignore",
            key="ci_topk_dl",
        )
else:
    st.info("Press **Run top-k** to score the rankings downstream.")

# -- 6. selection bias ------------------------------------------------------------------------
st.subheader("6. CART's selection bias, live")
st.caption(
    link_terms(
        "Adds pure-noise features (continuous uniform: every value distinct) to the current "
        "data and fits a fully grown CART and the conditional inference tree with the "
        "parameters above. CART's greedy search finds spurious splits among many distinct "
        "values, so noise collects importance; the tests give it (almost) none."
    )
)
n_noise = st.number_input("Noise features to add", 1, 200, 10, step=1, key="ci_n_noise")
save_settings()


def start_bias():
    job = Job(
        selection_bias_steps,
        ds.X,
        ds.y,
        ds.task,
        params,
        int(n_noise),
        categorical=categorical,
        random_state=seed(),
        budget=600.0,
        name="ci_bias",
    )
    meta_bias = {
        "caption": dataset_caption(ds),
        "names": list(ds.feature_names),
        "n_noise": int(n_noise),
    }
    return job, meta_bias


bjob, brunning = job_controls(BIAS, "Add noise and refit", start_bias)
if bjob is not None and not brunning:
    bres = finished_result(bjob, "The demonstration")
    bmeta = BIAS.meta
    if bres and len(bres.get("importances", {})) == 2:
        k = bmeta["n_noise"]
        bnames = bmeta["names"] + [f"noise {i + 1}" for i in range(k)]
        is_noise = np.r_[np.zeros(len(bmeta["names"]), bool), np.ones(k, bool)]
        st.caption(
            link_terms(f"Results for {bmeta['caption'].rstrip('.')}, plus {k} noise features.")
        )
        share = {m: float(v[is_noise].sum()) for m, v in bres["importances"].items()}
        st.markdown(
            " · ".join(f"**{m}** puts {s:.0%} of its importance on noise" for m, s in share.items())
        )
        panel.chart(selection_bias_figure(bres["importances"], bnames, is_noise), key="ci_bias_fig")
        btable = pd.DataFrame(
            {
                "feature": bnames,
                "noise": is_noise,
                **{m: np.round(v, 4) for m, v in bres["importances"].items()},
            }
        )
        panel.table(
            btable, name="selection_bias", hide_index=True, width="stretch", key="ci_bias_table"
        )
elif bjob is None:
    st.info("Press **Add noise and refit** to run the demonstration.")
