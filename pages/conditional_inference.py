"""Conditional inference page: test-based splits (CIT; ctree's asymptotic tests or the paper's
permutation tests), forests (CIF), how their
feature rankings differ from impurity-based ones, and what top-k features buy downstream
(docs/spec.md section 4)."""

import streamlit as st

from engine.cit.service import (
    CART,
    CIF,
    CIT,
    MISSING_VALUES_CAPTION,
    RF,
    fit_rankings_steps,
    leaf_reason,
    root_tests,
)
from engine.jobs import Job
from engine.scale import PAGE_BUDGET
from engine.snippets import conditional_inference_snippet
from engine.teaching import predict
from engine.teaching.glossary import link_terms
from pages._conditional_inference_features import (
    draw_rankings,
    draw_selection_bias,
    draw_top_k,
    finished_result,
    job_controls,
)
from pages._conditional_inference_node import draw_node_tests, draw_tree
from pages._link_params import conditional_inference_link
from pages._links import page_title
from pages._runs import keep_runs, restore_runs, result_only
from pages._shared import (
    PageJob,
    ResultPanel,
    SavedSettings,
    current_dataset,
    dataset_caption,
    dataset_digest,
    job_meta,
    labelled_tree,
    remember_model,
    require_entrypoint,
    scale_notice,
    seed,
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


def permutations_input(preset_column, fixed_column, stage: str, key: str, preset_help, ctree):
    """The permutations B per test of one stage (``stage``: 'A' or 'B'): a preset in
    ``preset_column`` (widget ``<key>_preset``) and a fixed B in ``fixed_column`` (widget
    ``key``, used with 'fixed B'); both are off for ctree.  Returns the estimator's
    ``n_resamples_*`` value: the preset's name or the fixed B (int)."""
    preset = preset_column.selectbox(
        f"Permutations (stage {stage})",
        PRESETS,
        key=f"{key}_preset",
        help=link_terms(preset_help),
        disabled=ctree,
    )
    fixed = fixed_column.number_input(
        f"Fixed B (stage {stage})",
        1,
        100_000,
        99,
        step=1,
        key=key,
        disabled=ctree or preset != "fixed B",
        help=link_terms("Used when 'fixed B' is chosen."),
    )
    return int(fixed) if preset == "fixed B" else preset


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
    resamples_sel = permutations_input(c[0], c[1], "A", "ci_b_sel", preset_help, ctree)
    resamples_spl = permutations_input(c[2], c[3], "B", "ci_b_spl", preset_help, ctree)
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
    n_resamples_selector=resamples_sel,
    n_resamples_splitter=resamples_spl,
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
            f"**Procedure: ctree.** At the root: {drawn} features tested with **asymptotic "
            f"p-values** ({params['teststat']} statistic, "
            + ("chi-square" if params["teststat"] == "quadratic" else "multivariate normal")
            + f" limit; no permutations, no floor), {adjusted}; the split point is the cut with "
            f"the largest {params['splitter']} two-sample statistic."
        )
    )
else:
    st.caption(
        link_terms(
            f"**Procedure: the CIT paper's permutation tests.** At the root: {drawn} features "
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
nodes = draw_tree(est=est, meta=meta, names=names, panel=panel, tree=tree, why_leaf=why_leaf)


# -- 3. one node -----------------------------------------------------------------------------
draw_node_tests(
    est=est, meta=meta, names=names, nodes=nodes, panel=panel, tree=tree, why_leaf=why_leaf
)

# -- 4. rankings -------------------------------------------------------------------------------
draw_rankings(methods=METHODS, fit=fit, names=names, panel=panel, running=running)

# -- 5. top-k ------------------------------------------------------------------------------------
draw_top_k(
    methods=METHODS,
    topk_job=TOPK,
    categorical=categorical,
    clf=clf,
    digest=digest,
    ds=ds,
    fit=fit,
    meta=meta,
    n_trees=n_trees,
    panel=panel,
    params=params,
    save_settings=save_settings,
)

# -- 6. selection bias ------------------------------------------------------------------------
draw_selection_bias(
    bias_job=BIAS,
    categorical=categorical,
    ds=ds,
    panel=panel,
    params=params,
    save_settings=save_settings,
)
