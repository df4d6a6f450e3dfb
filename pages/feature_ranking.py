"""Feature ranking page: TreeGrad attributions, TreeGrad-Ranker, insertion/deletion curves and
the numerics of semivalue computation on trees (docs/spec.md section 3)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from engine.figures.treegrad import (
    attribution_figure,
    curves_figure,
    error_depth_figure,
    gamma_tree_figure,
    kendall_figure,
    ranker_figure,
    runtime_figure,
)
from engine.jobs import Job
from engine.snippets import feature_ranking_snippet
from engine.teaching import predict
from engine.teaching.glossary import link_terms
from engine.tree import DumpLimits, TreeArrays, TreeEnsemble, load_model_dump
from engine.treegrad import service
from engine.treegrad.service import (
    MISSING_VALUES_CAPTION,
    MODEL_KINDS,
    PAPER_BETAS,
    TRAINED_KINDS,
    CurveSet,
    MethodParams,
    as_treelab,
    batch_curves,
    curves_steps,
    edge_gammas,
    error_vs_depth_steps,
    explain,
    kendall_matrix,
    model_summary,
    n_outputs,
    path_table,
    runtime_vs_leaves_steps,
)
from pages._link_params import feature_ranking_link, format_edits, parse_edits
from pages._links import page_title, warn_param
from pages._runs import keep_runs, restore_runs
from pages._shared import (
    PROJECTION_KEY,
    PageJob,
    ResultPanel,
    SavedSettings,
    current_dataset,
    dataset_caption,
    dataset_digest,
    dataset_recipe,
    fit_within_budget,
    md,
    remembered_models,
    require_entrypoint,
    seed,
    show_job_failure,
    shown_figure,
    stop_page,
    subsample_meta,
)
from pages._teaching import PredictFirst

PREDICTED = -1
#: The what-if editor's code and label of a missing value (a row's own missing value).
MISSING_CODE = -1
MISSING_LABEL = "(missing)"
DEFAULT_LIMITS = DumpLimits()
#: The last uploaded model dump ``(file name, bytes)``, kept across page switches.
UPLOADED = "_tg_uploaded_dump"
#: Wall-clock budget (seconds) of the page's background jobs (curves, numerics); a job that
#: runs out keeps what it finished.
BATCH_BUDGET = 300.0

require_entrypoint("pages/feature_ranking.py")
#: This page's widget values (every ``tg_`` setting), saved at every run and put back before
#: any widget is drawn (see pages/_jobs.py).
#: The widgets whose options or bounds come from the dataset (class, test row, feature to
#: edit, features shown, batch size) start again from their defaults on another dataset.
SETTINGS = SavedSettings(
    "_tg_saved_params",
    prefix="tg_",
    merge=True,
    per_dataset=("tg_class", "tg_row", "tg_edit_feature", "tg_topk", "tg_batch"),
    # link: read after the dataset caption (SETTINGS.read_link), so its warnings show there
)
SETTINGS.restore()


page_title("Feature ranking (TreeGrad)")
st.markdown(
    "Which features made the model say this? Remove features from a sample and watch the "
    "prediction: for a tree, *removing* a feature means that at every split on it the sample "
    "no longer chooses a side but averages both children, weighted by how many training rows "
    "went each way (the path-dependent game of TreeSHAP). **Shapley**, **Banzhaf** and "
    "**Beta** values average a feature's marginal effect over coalitions with different "
    "weights; **TreeGrad-Ranker** instead climbs the gradient of the game's multilinear "
    "extension to find an *ordering* whose insertion curve rises fast and whose deletion curve "
    "falls fast. TreeGrad computes the gradient for all features in one pass over the leaves, "
    "O(L), and gets Beta Shapley values exactly by Gauss-Legendre quadrature, stable on deep "
    "trees where a Vandermonde solve at Chebyshev nodes breaks down "
    "([TreeGrad-Ranker, ICLR 2026](https://openreview.net/forum?id=OcMeNbkN13))."
)


def background_job(prefix: str, what: str) -> PageJob:
    """One of the page's background jobs (``what`` it computes, for running elsewhere)."""
    return PageJob(
        prefix,
        elsewhere=f"The {what} job is still running; it stops at its time budget "
        f"({BATCH_BUDGET:.0f} s), or stop it here.",
    )


ONE = background_job("tg_one", "sample's curves")
BATCH = background_job("tg_batch", "batch of curves")
NUMERICS = background_job("tg_num", "error-vs-depth demo")
RUNTIME = background_job("tg_rt", "runtime demo")
#: The page's background jobs, for running elsewhere.
JOBS = (ONE, BATCH, NUMERICS, RUNTIME)
if restore_runs("feature_ranking", *JOBS):  # ?run=<id>: the stored curves / demos, not rerun
    if BATCH.job is not None and ONE.job is None:  # the curves tab opens on what was kept
        st.session_state["tg_mode"] = "batch"


ds = current_dataset(allow_missing=True)
if ds is None:
    stop_page(*JOBS)
st.markdown(dataset_caption(ds))
st.caption(link_terms(MISSING_VALUES_CAPTION))
SETTINGS.read_link(feature_ranking_link())
if ds.n_samples < 10:
    st.error(
        f"This dataset has {ds.n_samples} rows; a train/test split needs at least 10. "
        "Pick a bigger dataset or upload more rows."
    )
    stop_page(*JOBS)
digest = dataset_digest(ds)
SETTINGS.for_dataset(digest)
class_names = None if ds.classes_ is None else [str(c) for c in ds.classes_]


# -- model ---------------------------------------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=32)
def split_rows(_ds, key: str, test_size: float, random_state: int):
    """:func:`engine.treegrad.service.split_rows`, cached on the dataset digest ``key``."""
    return service.split_rows(_ds, test_size, random_state)


@st.cache_resource(show_spinner="Fitting the model...", max_entries=24)
def fit_model(
    _ds,
    key: str,
    kind: str,
    depth: int,
    leaves: int,
    n_estimators: int,
    learning_rate: float,
    test_size: float,
    random_state: int,
):
    """:func:`engine.treegrad.service.fit_model`, cached on the dataset digest ``key``."""
    return service.fit_model(
        _ds, kind, depth, leaves, n_estimators, learning_rate, test_size, random_state
    )


@st.cache_resource(show_spinner="Reading the model...", max_entries=8)
def uploaded_model(data: bytes, name: str):
    """An uploaded XGBoost / LightGBM dump as a TreeEnsemble (bounded; ValueError if bad)."""
    return load_model_dump(data, name)


@st.cache_resource(show_spinner=False, max_entries=24)
def treelab_model(_model, key: str):
    """The model converted once to TreeLab arrays (TreeGrad packs them once per class)."""
    return as_treelab(_model)


st.subheader("1. Model")
remembered = remembered_models(ds)
sources = ["train", "remembered", "upload"]
source = st.radio(
    "Model",
    sources,
    horizontal=True,
    key="tg_source",
    format_func=lambda s: {
        "train": "Train a model here",
        "remembered": f"A model fitted on another page ({len(remembered)})",
        "upload": "Upload an XGBoost / LightGBM dump",
    }[s],
    help=link_terms(
        "Models fitted on other pages (e.g. Compare) on this same dataset are offered "
        "here. Uploads: XGBoost's model JSON or UBJSON (save_model('model.json')) or "
        "LightGBM's dump_model() as JSON; never a pickle."
    ),
)
c = st.columns(6)
test_size = c[5].slider(
    "Test share",
    0.1,
    0.5,
    0.25,
    0.05,
    key="tg_test",
    help=link_terms(
        "Share of rows held out (seeded split); samples are picked among these test rows."
    ),
)
if source == "upload":
    upload = st.file_uploader(
        "Model dump (.json, .ubj)",
        type=["json", "ubj"],
        # not a "tg_" key: a file uploader's value cannot be put back (the file is kept in
        # UPLOADED instead)
        key="model_dump_upload",
        max_upload_size=DEFAULT_LIMITS.max_bytes // 2**20,
        help=link_terms(
            "Trained on this dataset's columns, in the same order. Limits: "
            f"{DEFAULT_LIMITS.max_bytes // 2**20} MiB, {DEFAULT_LIMITS.max_trees:,} trees, "
            f"{DEFAULT_LIMITS.max_nodes:,} nodes."
        ),
    )
    if upload is not None:
        st.session_state[UPLOADED] = (upload.name, upload.getvalue())
    elif UPLOADED in st.session_state:
        st.caption(
            link_terms(f"Using the model uploaded earlier: {md(st.session_state[UPLOADED][0])}.")
        )
    if UPLOADED not in st.session_state:
        st.info(
            "Upload a model trained on this dataset: in Python, "
            "`xgb_model.save_model('model.json')`, or for LightGBM "
            "`json.dump(lgb_model.booster_.dump_model(), open('model.json', 'w'))`."
        )
        stop_page(*JOBS)
    upload_name, data = st.session_state[UPLOADED]
    try:
        raw_model = uploaded_model(data, upload_name)
    except ValueError as exc:
        st.error(f"Cannot read this model: {md(exc)}")
        stop_page(*JOBS)
    split = split_rows(ds, digest, float(test_size), seed())
    tr_idx, te_idx = split.train, split.test
    model_key = f"{digest}:upload:{hashlib.blake2b(data, digest_size=8).hexdigest()}"
    rows_note = None
    score_txt = f"uploaded from **{md(upload_name)}**; it may have been trained on the test rows"
elif source == "remembered":
    if not remembered:
        st.info(
            "No model has been fitted on this dataset on another page yet: fit one on "
            "**Compare models** (or another method page) first, or train one here."
        )
        stop_page(*JOBS)
    label = st.selectbox(
        "Fitted model",
        list(remembered),
        key="tg_remembered_view",
        help=link_terms("Models are offered only for the dataset they were fitted on."),
    )
    entry = remembered[label]
    raw_model = entry["model"]
    split = split_rows(ds, digest, float(test_size), seed())
    tr_idx, te_idx = split.train, split.test
    model_key = f"{digest}:remembered:{label}:{id(raw_model)}"
    rows_note = None
    score_txt = (
        f"fitted on **{entry['source']}**; the test rows below may include rows it was trained on"
    )
else:
    kind = c[0].selectbox(
        "Model type", list(TRAINED_KINDS), format_func=TRAINED_KINDS.get, key="tg_kind"
    )
    depth = c[1].number_input(
        "Max depth (0 = none)",
        0,
        60,
        6,
        step=1,
        key="tg_depth",
        help=link_terms("Deeper trees use more features per path; 0 grows out."),
    )
    leaves = c[2].number_input(
        "Max leaves (0 = none)",
        0,
        100_000,
        0,
        step=8,
        key="tg_leaves",
        help=link_terms("Caps the number of leaves per tree (best-first growth)."),
    )
    n_est = c[3].number_input(
        "Trees",
        1,
        500,
        50,
        step=10,
        key="tg_trees",
        disabled=kind == "tree",
        help=link_terms("Number of trees of a forest or boosting model."),
    )
    lr_gb = c[4].number_input(
        "Learning rate",
        0.01,
        1.0,
        0.1,
        step=0.05,
        key="tg_gblr",
        disabled=kind not in ("boosting", "xgboost", "lightgbm"),
        help=link_terms("Boosting shrinkage."),
    )
    if leaves == 1:
        st.error("Max leaves must be 0 (no limit) or at least 2.")
        stop_page(*JOBS)
    if kind in MODEL_KINDS and not fit_within_budget(ds, kind, int(depth), int(n_est)):
        stop_page(*JOBS)
    try:
        raw_model, tr_idx, te_idx, score, rows_note = fit_model(
            ds,
            digest,
            kind,
            int(depth),
            int(leaves),
            int(n_est),
            float(lr_gb),
            float(test_size),
            seed(),
        )
    except ValueError as exc:
        st.error(f"Cannot fit the model: {md(exc)}")
        stop_page(*JOBS)
    model_key = f"{digest}:{kind}:{depth}:{leaves}:{n_est}:{lr_gb}:{test_size}:{seed()}"
    metric = "accuracy" if ds.task == "classification" else "R\u00b2"
    score_txt = f"test {metric} **{score:.3f}** on {len(te_idx)} held-out rows"
if note := split_rows(ds, digest, float(test_size), seed()).note:
    st.info(md(note))
if rows_note:
    st.info(md(rows_note))
try:
    model = treelab_model(raw_model, model_key)
    summary = model_summary(model)
except (TypeError, ValueError) as exc:
    st.error(f"TreeGrad cannot explain this model: {md(exc)}")
    stop_page(*JOBS)
if summary["n_features"] != ds.n_features:
    st.error(
        f"The model expects {summary['n_features']} features but the dataset has "
        f"{ds.n_features}; refit it on this dataset."
    )
    stop_page(*JOBS)
is_boost = isinstance(model, TreeEnsemble) and model.kind == "boosting"
st.caption(
    link_terms(
        f"{summary['trees']} tree(s), {summary['leaves']:,} leaves, max depth "
        f"{summary['max_depth']}; {score_txt}."
        + (
            " Categorical features are split on their integer codes (label order)."
            if ds.is_categorical.any()
            else ""
        )
    )
)

# -- class and sample ------------------------------------------------------------------------
n_out = n_outputs(model)
classification = model.task == "classification"
cls_choice = None
if classification:
    if class_names is None or len(class_names) != n_out:
        class_names = [str(k) for k in range(n_out)]
    opts = [PREDICTED, *range(n_out)]
    if st.session_state.get("tg_class") not in opts:
        SETTINGS.link_fixed(
            "tg_class", PREDICTED, f"is not a class of this model (0 to {n_out - 1})"
        )
        st.session_state["tg_class"] = PREDICTED
    cls_choice = st.selectbox(
        "Explain the output for class",
        opts,
        key="tg_class",
        format_func=lambda k: (
            "the predicted class of each sample" if k == PREDICTED else class_names[k]
        ),
        help=link_terms(
            "Attributions explain one output: the class probability (tree, forest) or the "
            "class's raw log-odds score (gradient boosting)."
        ),
    )

st.subheader("2. Sample")
test_rows = [int(r) for r in te_idx]
y_lab = ds.target_labels()
if st.session_state.get("tg_row") not in test_rows:
    SETTINGS.link_fixed("tg_row", test_rows[0], "is not a test row of this split")
    st.session_state["tg_row"] = test_rows[0]


def fmt_target(v) -> str:
    return f"{v:.4g}" if isinstance(v, float | np.floating) else str(v)


c1, c2, c3 = st.columns([2, 2, 2])
row = c1.selectbox(
    "Test row",
    test_rows,
    key="tg_row",
    format_func=lambda r: f"row {r} (target {fmt_target(y_lab[r])})",
    help=link_terms("A held-out row; edit its feature values below (what-if)."),
)
x0 = ds.X[row].copy()
n = ds.n_features
names = list(ds.feature_names)
prefix = f"tg_x::{digest[:10]}::{row}::"
if st.session_state.get("tg_edit_feature") not in range(n):
    st.session_state["tg_edit_feature"] = 0
j_edit = c2.selectbox(
    "Feature to edit (what-if)",
    list(range(n)),
    key="tg_edit_feature",
    format_func=lambda j: names[j],
)
linked_edits = SETTINGS.take_from_link("tg_edits")
if linked_edits:  # the what-if edits of a link, put in the editors before they are drawn
    categories = [ds.categories[j] if ds.is_categorical[j] else None for j in range(n)]
    edits, problems = parse_edits(linked_edits, n, categories)
    for item, problem in problems:
        warn_param("edits", item, problem, None)
    for j, value in edits.items():
        if value is None and not np.isnan(x0[j]):  # as the editor: missing only if it was
            warn_param("edits", f"{j}=na", f"is not offered: {names[j]} is not missing", None)
            continue
        st.session_state[prefix + str(j)] = MISSING_CODE if value is None else value
ekey = prefix + str(j_edit)
row_missing = bool(np.isnan(x0[j_edit]))
if ds.is_categorical[j_edit]:
    labels = ds.categories[j_edit]
    codes = list(range(len(labels)))
    if row_missing:  # the row's own value first: missing
        codes = [MISSING_CODE, *codes]
    if st.session_state.get(ekey) not in codes:
        st.session_state[ekey] = MISSING_CODE if row_missing else int(x0[j_edit])
    c3.selectbox(
        f"Value of {names[j_edit]}",
        codes,
        key=ekey,
        format_func=lambda k: MISSING_LABEL if k == MISSING_CODE else labels[k],
    )
else:
    col = ds.X[:, j_edit]
    observed = col[~np.isnan(col)]
    if ekey not in st.session_state or (st.session_state[ekey] is None and not row_missing):
        st.session_state[ekey] = None if row_missing else float(x0[j_edit])
    c3.number_input(
        f"Value of {names[j_edit]}",
        key=ekey,
        value=None,
        format="%.6g",
        placeholder=MISSING_LABEL,
        help=link_terms(
            (
                f"Training range {observed.min():.4g} .. {observed.max():.4g}. "
                if observed.size
                else ""
            )
            + "Values outside it follow the outermost branch."
            + (
                " This row's value is missing: leave the box empty to keep it so."
                if row_missing
                else ""
            )
        ),
    )
x = x0.copy()
for j in range(n):
    v = st.session_state.get(prefix + str(j))
    if v is not None:
        x[j] = np.nan if ds.is_categorical[j] and v == MISSING_CODE else float(v)
edited = np.flatnonzero((x != x0) & ~(np.isnan(x) & np.isnan(x0)))
st.session_state["tg_edits"] = format_edits(
    {
        int(j): (None if np.isnan(x[j]) else int(x[j])) if ds.is_categorical[j] else float(x[j])
        for j in edited
    }
)


def reset_edits(pfx: str = prefix) -> None:
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(pfx)]:
        del st.session_state[key]
    SETTINGS.forget(pfx)


def fmt_value(j: int, v: float) -> str:
    if np.isnan(v):
        return MISSING_LABEL
    if ds.is_categorical[j]:
        return str(ds.categories[j][int(v)])
    return f"{v:.4g}"


if edited.size:
    st.info(
        "What-if: "
        + "; ".join(
            f"**{names[j]}** {fmt_value(j, x0[j])} \u2192 {fmt_value(j, x[j])}" for j in edited
        )
    )
    st.button("Reset to the row's values", key="tg_reset_btn", on_click=reset_edits)

if classification:
    proba = model.predict_proba(x[None])[0]
    pred = int(np.argmax(proba))
    ci = pred if cls_choice == PREDICTED else int(cls_choice)
    cname = class_names[ci]
    game_label = f"raw score (log-odds) of {cname}" if is_boost else f"P({cname})"
    st.markdown(
        f"Prediction: **{class_names[pred]}** (P = {proba[pred]:.3f}); explaining "
        f"**{cname}** on the {game_label} scale."
    )
else:
    ci = 0
    cname = ds.target
    game_label = f"predicted {ds.target}"
    st.markdown(f"Prediction: **{float(model.predict(x[None])[0]):.4g}** (target {md(ds.target)}).")

with st.expander("Method parameters", expanded=False):
    c = st.columns(6)
    alpha = c[0].number_input(
        "Beta alpha",
        1,
        64,
        4,
        step=1,
        key="tg_alpha",
        help=link_terms(
            "Integer >= 1. Beta(16,1) weights small coalitions, "
            "(1,16) large ones; (1,1) is Shapley."
        ),
    )
    beta = c[1].number_input(
        "Beta beta",
        1,
        64,
        1,
        step=1,
        key="tg_beta",
        help=link_terms("Integer >= 1 (Kwon & Zou's convention)."),
    )
    p = c[2].slider(
        "Weighted Banzhaf p",
        0.0,
        1.0,
        0.3,
        0.05,
        key="tg_p",
        help=link_terms("Each other feature is present with probability p (0.5 = Banzhaf)."),
    )
    lr = c[3].number_input(
        "Ranker learning rate",
        0.001,
        100.0,
        5.0,
        step=0.5,
        key="tg_lr",
        help=link_terms("Step size of gradient ascent / Adam (paper: 5)."),
    )
    steps = c[4].number_input(
        "Ranker steps T",
        1,
        1000,
        100,
        step=10,
        key="tg_steps",
        help=link_terms("Iterations (paper: 100). T = 1 gives the Banzhaf value."),
    )
    n_random = c[5].number_input(
        "Random rankings",
        0,
        200,
        16,
        step=4,
        key="tg_nrandom",
        help=link_terms("Random orderings averaged for the baseline curve (0 hides it)."),
    )
params = MethodParams(int(alpha), int(beta), float(p), float(lr), int(steps))
SETTINGS.save()
curve_output = "game"
if is_boost and classification:
    curve_output = st.radio(
        "Curves on the scale of",
        ["probability", "game"],
        horizontal=True,
        key="tg_curve_out",
        format_func={
            "probability": "probability (softmax/sigmoid, as the paper)",
            "game": "raw score (the attributed game)",
        }.get,
        help=link_terms(
            "Boosting attributions are on the raw score; the paper scores the rankings on "
            "the predicted probability, computed on the same feature subsets."
        ),
    )
curve_label = f"P({cname})" if curve_output == "probability" else game_label


@st.cache_data(show_spinner="Computing attributions...", max_entries=64)
def sample_explanation(key: str, x_bytes: bytes, ci: int, param_values: tuple):
    return explain(model, np.frombuffer(x_bytes, dtype=np.float64), ci, MethodParams(*param_values))


@st.cache_data(show_spinner="Computing insertion and deletion curves...", max_entries=64)
def sample_curves(
    key: str,
    x_bytes: bytes,
    ci: int,
    param_values: tuple,
    output: str,
    n_random: int,
    rnd_seed: int,
):
    xs = np.frombuffer(x_bytes, dtype=np.float64)
    return batch_curves(
        model,
        xs[None],
        ci,
        params=MethodParams(*param_values),
        output=output,
        n_random=n_random,
        seed=rnd_seed,
    )


#: Node visits of one sample's curves above which they run as a background job (about 2 s
#: on a loaded 2-core machine at ~50 ns per node visit).
SYNC_CURVE_WORK = 3e7
n_nodes = sum(t.node_count for t in (model.trees if isinstance(model, TreeEnsemble) else [model]))
curve_work = n_nodes * 2 * (n + 1) * (6 + len(PAPER_BETAS) + int(n_random))
sync_curves = curve_work < SYNC_CURVE_WORK
param_values = dataclasses.astuple(params)

# -- predict first (optional): which feature ranks first ------------------------------------
#: The key of the attributions these settings give (model, sample, class, method parameters).
predict_key = predict.result_key(model_key, x.tobytes().hex(), int(ci), param_values)
PREDICT = PredictFirst("tg", what="the attributions")
questions = None  # drawn only while no answer is locked in and the result is unseen
if PREDICT.asking(predict_key):
    with PREDICT.box:
        method_asked = st.selectbox(
            "Method asked about",
            params.labels(),
            key="tg_predict_method",
            help=link_terms("The question asks which feature this attribution method ranks first."),
        )
    questions = [predict.first_rank_question(names, method_asked)]
PREDICT.ask(questions, predict_key)  # or what is locked in, or why nothing is asked
try:
    ex = sample_explanation(model_key, x.tobytes(), int(ci), param_values)
    cs_one = (
        sample_curves(
            model_key, x.tobytes(), int(ci), param_values, curve_output, int(n_random), seed()
        )
        if sync_curves
        else None
    )
except ValueError as exc:
    st.error(f"Cannot compute the attributions: {md(exc)}")
    stop_page(*JOBS)

PREDICT.reveal(
    predict_key,
    lambda question: predict.first_rank_answer(ex.scores, names, question.subject),
    stop=lambda: stop_page(*JOBS),
)
tabs = st.tabs(
    ["Attributions", "Insertion / deletion", "Ranker convergence", "Tree and gamma", "Numerics"]
)
panel = ResultPanel(
    "feature_ranking", {"caption": dataset_caption(ds), "row": row, **subsample_meta(ds)}
)
if source == "train":  # a remembered or uploaded model comes from elsewhere: no snippet
    panel.snippet(
        feature_ranking_snippet(
            {
                "recipe": dataset_recipe(ds),
                "kind": kind,
                "depth": int(depth),
                "leaves": int(leaves),
                "n_estimators": int(n_est),
                "learning_rate": float(lr_gb),
                "test_size": float(test_size),
                "seed": seed(),
                "x": [float(v) for v in x],
                "class_index": int(ci),
                "method_params": dataclasses.asdict(params),
            }
        )
    )

# -- attributions ----------------------------------------------------------------------------
with tabs[0]:
    c1, c2 = st.columns([1, 1])
    top_k = n
    if n > 1:
        if not 1 <= st.session_state.get("tg_topk", 1) <= n:
            SETTINGS.link_fixed("tg_topk", min(n, 15), f"is more than the {n} features")
            st.session_state["tg_topk"] = min(n, 15)
        top_k = c1.slider(
            "Features shown",
            1,
            n,
            min(n, 15),
            key="tg_topk",
            help=link_terms("Features with the largest |attribution| over all methods."),
        )
    normalise = c2.toggle("Scale each method by its max |value|", key="tg_norm")
    value_label = f"contribution to {game_label}"
    panel.chart(
        attribution_figure(
            ex.scores,
            names,
            top_k=int(top_k),
            normalise=normalise,
            title=f"Attributions of row {row} ({'edited, ' if edited.size else ''}{value_label})",
            value_label="attribution",
        ),
        key="tg_attr_fig",
    )
    sh = ex.scores["Shapley"]
    st.caption(
        link_terms(
            f"Shapley efficiency: f(\u2205) + \u03a3\u03c6 = {float(ex.f_empty):.6g} + "
            f"{float(sh.sum()):.6g} = {float(ex.f_empty + sh.sum()):.6g}; f(all features) = "
            f"{float(ex.f_full):.6g}. Hatched bars are negative. Ranker scores are the running mean of "
            "the symmetric gradient, so they rank features; their size is not an additive "
            "share."
        )
    )
    # the heat map beside its explanation; above it in projection mode (too narrow)
    c1, c2 = (
        (st.container(), st.container())
        if st.session_state.get(PROJECTION_KEY)
        else st.columns([3, 2])
    )
    tau = kendall_matrix(ex.scores)
    panel.chart(kendall_figure(tau), key="tg_tau_fig", where=c1)
    table = pd.DataFrame(
        {"feature": names, "value": [fmt_value(j, x[j]) for j in range(n)]}
        | {k: v for k, v in ex.scores.items()}
    )
    unused = [names[j] for j in range(n) if all(s[j] == 0 for s in ex.scores.values())]
    c2.markdown(
        "**Kendall tau** compares orderings: 1 = same ranking, 0 = unrelated, "
        "-1 = reversed. Linear attributions (Shapley, Banzhaf, Beta) usually agree "
        "closely; the Ranker reorders features whose effect depends on others."
    )
    if unused:
        c2.caption(
            link_terms(
                f"{len(unused)} feature(s) score 0 for every method (never on this "
                f"sample's relevant paths): {', '.join(unused[:12])}"
                + ("..." if len(unused) > 12 else "")
            )
        )
    panel.table(
        table.round(6),
        name="scores",
        hide_index=True,
        width="stretch",
        height=min(420, 35 * (n + 1) + 3),
    )
    st.download_button(
        "Download scores (CSV)",
        table.to_csv(index=False).encode(),
        file_name=f"treegrad_scores_row{row}.csv",
        mime="text/csv",
        on_click="ignore",
        key="tg_scores_dl",
    )


# -- insertion / deletion --------------------------------------------------------------------
def show_curves(cs: CurveSet, label: str, key: str, dl_name: str) -> None:
    c1, c2 = st.columns(2)
    for col, which in ((c1, "insertion"), (c2, "deletion")):
        panel.chart(
            curves_figure(cs.curves, which, y_label=label, n_rows=cs.n_rows),
            key=f"{key}_{which}",
            where=col,
        )
    auc = cs.auc_table()
    panel.table(auc.round(5), name=f"{key}_auc", hide_index=True, width="stretch")
    st.download_button(
        "Download curves (CSV)",
        cs.to_frame().to_csv(index=False).encode(),
        file_name=dl_name,
        mime="text/csv",
        on_click="ignore",
        key=f"{key}_dl",
    )


def live_view(page_job: PageJob, render, what: str) -> None:
    """Poll ``page_job`` and render its latest snapshot with a progress bar."""

    def draw(snap) -> None:
        latest = snap.latest or {"done": 0, "total": 1}
        st.progress(
            latest["done"] / max(latest["total"], 1),
            text=f"{what}: {latest['done']}/{latest['total']}, {snap.elapsed:.1f} s",
        )
        if snap.latest is not None:
            render(snap.latest, partial=True)

    page_job.live(draw)


def other_dataset(meta: dict, what: str) -> bool:
    """Say so (and return True) when a job's result was computed on another dataset: its
    ``meta["key"][0]`` is the model key, which starts with the digest of the dataset."""
    key = meta.get("key")
    if not key or str(key[0]).startswith(digest):
        return False
    st.info(
        f"These {what} were computed on another dataset: {meta.get('caption', '')} "
        "Press **Run** to compute them on this one."
    )
    return True


def job_outcome(page_job: PageJob, what: str):
    """(result, meta) of a finished job, after showing its status (``what``: the unit of
    its items, e.g. 'rows'); None when none ran."""
    job = page_job.job
    if job is None or not job.finished:
        return None
    snap = job.snapshot()
    if snap.status == "error":
        show_job_failure(snap, "The computation", "use fewer rows or a smaller model")
        return None
    if snap.status in ("cancelled", "timeout"):
        done = snap.latest["done"] if snap.latest else 0
        total = f" of {snap.latest['total']}" if snap.latest else ""
        st.warning(
            ("Stopped" if snap.status == "cancelled" else "Out of time budget")
            + f": showing the {done}{total} {what} that finished."
        )
    keep_runs("feature_ranking", *JOBS)  # every finished job of the page, in one run
    res = snap.result
    if isinstance(res, dict) and "result" in res:  # stopped: the last snapshot of the curves
        res = res["result"]
    return res, page_job.meta


with tabs[1]:
    mode = st.radio(
        "Curves for",
        ["sample", "batch"],
        horizontal=True,
        key="tg_mode",
        format_func={
            "sample": f"this sample (row {row}{', edited' if edited.size else ''})",
            "batch": "the mean over a batch of test rows",
        }.get,
    )
    st.caption(
        link_terms(
            "Insert features one by one in each method's ranking order (insertion: start from no "
            "feature, f(\u2205), end at the prediction) or delete them (deletion: start at the "
            "prediction). A good ranking makes insertion rise fast (high AUC) and deletion fall fast "
            "(low AUC); AUC is the mean of the n + 1 points. Shapley-type values rank by *average* "
            "marginal effect; the Ranker maximises (f(S) - f(N\\S))/2 over coalitions directly, "
            "which is aimed at ins - del on the attributed game (compare in the table; on another "
            "scale, such as boosting's probability, or with few relevant features, linear "
            "attributions can match it). "
            + (
                "The black dashed curves are the best achievable values of any ranking (brute force "
                "over all subsets of each size)."
                if n <= 12
                else f"(Brute-force best envelopes need at most 12 features; this dataset has {n}.)"
            )
        )
    )
    if mode == "sample" and cs_one is not None:
        show_curves(cs_one, curve_label, "tg_one", f"treegrad_curves_row{row}.csv")
    elif mode == "sample":
        one_key = (model_key, x.tobytes(), int(ci), param_values, curve_output, int(n_random))
        st.caption(
            link_terms(
                f"This model has {n_nodes:,} nodes: the {2 * (n + 1)} curve points of "
                f"{6 + len(PAPER_BETAS) + int(n_random)} rankings take a few seconds, so they "
                "run in the background. Press Run (again after an edit)."
            )
        )

        def start_one():
            job = Job(
                curves_steps,
                model,
                x[None].copy(),
                int(ci),
                params=params,
                output=curve_output,
                n_random=int(n_random),
                seed=seed(),
                chunk=1,
                budget=BATCH_BUDGET,
                name="tg_one",
            )
            return job, {"key": one_key, "caption": dataset_caption(ds)}

        ONE.controls("Run", start_one, columns=(1, 1, 5))
        if ONE.running:
            live_view(ONE, lambda s, partial: None, "sample")
        out = job_outcome(ONE, "samples")
        if out is not None and isinstance(out[0], CurveSet):
            if not other_dataset(out[1], "curves") and out[1].get("key") != one_key:
                st.caption(
                    link_terms(
                        "These curves are for the sample as it was when Run was pressed; "
                        "press Run to update them."
                    )
                )
            show_curves(out[0], curve_label, "tg_one", f"treegrad_curves_row{row}.csv")
    else:
        n_test = len(test_rows)
        cA, cB = st.columns([2, 3])
        max_batch = min(500, n_test)
        # the kept value may come from a dataset with more test rows
        if not 1 <= st.session_state.get("tg_batch", 1) <= max_batch:
            SETTINGS.link_fixed("tg_batch", min(50, max_batch), f"is more than {max_batch} rows")
            st.session_state["tg_batch"] = min(50, max_batch)
        if max_batch > 1:
            size = cA.slider(
                "Rows in the batch",
                1,
                max_batch,
                min(50, max_batch),
                key="tg_batch",
                help=link_terms("The first rows of the seeded test split."),
            )
        else:
            size = 1
            cA.caption(link_terms("The test split has a single row: the batch is that row."))
        cB.caption(
            link_terms(
                "The batch runs in the background (Stop keeps the finished rows). Each row "
                "is explained at the chosen class"
                + (" (its own predicted class)" if cls_choice == PREDICTED else "")
                + "; what-if edits apply to the single sample only."
            )
        )

        def start_batch():
            Xb = ds.X[te_idx[: int(size)]]
            if classification and cls_choice == PREDICTED:
                cls = np.argmax(model.predict_proba(Xb), axis=1).astype(np.int64)
            else:
                cls = ci
            job = Job(
                curves_steps,
                model,
                Xb,
                cls,
                params=params,
                output=curve_output,
                n_random=int(n_random),
                seed=seed(),
                chunk=2,
                budget=BATCH_BUDGET,
                name="tg_batch",
            )
            meta = {
                "label": curve_label
                if cls_choice != PREDICTED or not classification
                else (
                    "raw score of the predicted class"
                    if is_boost and curve_output == "game"
                    else "P(predicted class)"
                ),
                "key": (model_key, int(size), params, curve_output, cls_choice),
                "caption": f"{dataset_caption(ds)} Model: "
                f"{MODEL_KINDS.get(getattr(model, 'kind', 'tree'), 'tree model')}.",
            }
            return job, meta

        BATCH.controls("Run", start_batch, columns=(1, 1, 5))

        def render_batch(latest, partial=False):
            meta = BATCH.meta
            res = latest["result"] if isinstance(latest, dict) else latest
            if res is None:
                return
            if partial:  # the live view: AUCs of the rows so far (the charts come at the end)
                st.dataframe(res.auc_table().round(5), hide_index=True, width="stretch")
            else:
                show_curves(
                    res, meta.get("label", curve_label), "tg_batch", "treegrad_curves_batch.csv"
                )

        job = BATCH.job
        if BATCH.running:
            live_view(BATCH, render_batch, "rows")
        out = job_outcome(BATCH, "rows")
        if out is None and job is None:
            st.info("Press **Run** to compute the mean curves over the batch.")
        elif out is not None and out[0] is not None:
            res, meta = out
            if not other_dataset(meta, "curves") and meta.get("key") != (
                model_key,
                int(size),
                params,
                curve_output,
                cls_choice,
            ):
                st.caption(
                    link_terms(
                        "These curves were computed with other settings; press Run to update them."
                    )
                )
            render_batch(res)
            per_row = res.per_row_auc
            st.download_button(
                "Download per-row AUCs (CSV)",
                per_row.to_csv(index=False).encode(),
                file_name="treegrad_batch_auc.csv",
                mime="text/csv",
                on_click="ignore",
                key="tg_rows_dl",
            )

# -- ranker ----------------------------------------------------------------------------------
with tabs[2]:
    heat = st.radio("Heat map of", ["Ranker Adam", "Ranker GA"], horizontal=True, key="tg_heat")
    panel.chart(
        ranker_figure(
            {"Ranker GA": ex.ga, "Ranker Adam": ex.adam},
            names,
            heat=heat,
            top_k=20,
            title=f"TreeGrad-Ranker on row {row}: lr {params.lr:g}, T = {params.steps}",
        ),
        key="tg_ranker_fig",
    )
    st.caption(
        link_terms(
            "z_i is the probability that feature i is *present*; the Ranker starts at "
            "z = 0.5 (its first step's gradient is the Banzhaf value) and climbs J(z) = "
            "(fbar(z) - fbar(1 - z))/2, the multilinear extension of f(S) - f(N\\S). Adam's "
            "first step is about lr \u00b7 sign(gradient), so it jumps to a vertex of the "
            "cube at once; plain gradient ascent moves in proportion to the gradient, whose "
            "size depends on the output's units."
        )
    )

# -- tree ------------------------------------------------------------------------------------
with tabs[3]:
    trees = model.trees if isinstance(model, TreeEnsemble) else [model]
    ids = list(range(len(trees)))
    note = ""
    if is_boost and model.base.shape[0] > 1:  # multiclass boosting: the explained class's trees
        ids = [k for k in ids if int(model.tree_output[k]) == ci]
        note = f" (the trees adding to the raw score of {cname})"
    k_tree, pos = ids[0], 1
    if len(ids) > 1:
        pos = int(
            st.number_input(
                f"Tree of the ensemble{note}: 1..{len(ids)}",
                1,
                len(ids),
                1,
                step=1,
                key="tg_tree_view",
                help=link_terms(
                    "The game averages (forest) or sums (boosting) the "
                    "trees; each has its own path and gammas."
                ),
            )
        )
        k_tree = ids[pos - 1]
    tree: TreeArrays = trees[k_tree]
    tree = dataclasses.replace(
        tree,
        feature_names=names,
        categories=[ds.categories.get(j) for j in range(n)],
        classes_=None
        if tree.task != "classification" or class_names is None
        else np.array(class_names, dtype=object),
    )
    collapse = st.toggle("Collapse below depth 4", value=tree.node_count > 63, key="tg_collapse")
    which = f"Tree {pos} of {len(ids)}" if len(ids) > 1 else "The tree"
    panel.chart(
        gamma_tree_figure(
            tree,
            edge_gammas(tree, x),
            tree.decision_path(x),
            collapse_depth=4 if collapse else None,
            title=f"{which}: {tree.n_leaves} leaves, depth {tree.max_depth}; path of row {row}",
        ),
        key="tg_tree_fig",
    )
    st.caption(
        link_terms(
            "\u03b3 on an edge = cover(parent) / cover(child) where the sample takes the "
            "edge, 0 where it does not. A leaf's factor for feature j is "
            "(1 - z_j + z_j \u00b7 \u03b3_j), \u03b3_j the product over the path's edges on "
            "j: z_j = 0 removes j (the leaf keeps its cover share), z_j = 1 keeps it (the "
            "leaf counts only if the sample reaches it). Hover a node for the \u03b3 of "
            "its incoming edge; the whole path is listed below (also past collapsed "
            "subtrees)."
        )
    )
    edges = path_table(tree, x, names)
    panel.table(
        edges,
        name="path",
        hide_index=True,
        width="stretch",
        height=min(400, 35 * (len(edges) + 1) + 3),
    )

# -- numerics --------------------------------------------------------------------------------
with tabs[4]:
    st.markdown(
        "**Why stable numerics matter.** On deep trees a path can hold many features; "
        "computing Beta semivalues by interpolating each path's polynomial at Chebyshev nodes "
        "with a Vandermonde solve (Linear TreeShap's approach) loses digits exponentially with "
        "depth, while TreeGrad-Shap's Gauss-Legendre quadrature and TreeProb's roots of unity "
        "stay exact. Errors are measured against brute force over all 2^10 subsets, on "
        "decision trees grown on a synthetic 10-feature problem with 30% label noise (so "
        "unconstrained trees get about 60 levels deep)."
    )
    c1, c2 = st.columns(2)
    depth_opts = [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 0]
    depths = c1.multiselect(
        "Max depths (0 = grown out)",
        depth_opts,
        default=[5, 10, 20, 30, 45, 0],
        key="tg_num_depths",
    )
    rows_num = c2.select_slider(
        "Training rows", [5000, 10000, 20000, 40000], 40000, key="tg_num_rows"
    )

    def start_num() -> Job:
        if not depths:
            raise ValueError("Choose at least one depth.")
        return Job(
            error_vs_depth_steps,
            [d or None for d in sorted(depths, key=lambda d: d or 999)],
            int(rows_num),
            3,
            seed(),
            budget=BATCH_BUDGET,
            name="tg_num",
        )

    NUMERICS.controls("Run", start_num, columns=(1, 1, 5))
    if NUMERICS.running:
        live_view(
            NUMERICS,
            lambda s, partial: st.plotly_chart(
                shown_figure(error_depth_figure(s["rows"])), key="tg_num_live"
            ),
            "depths",
        )
    out = job_outcome(NUMERICS, "depths")
    if out is not None and out[0] is not None:
        df = out[0] if isinstance(out[0], pd.DataFrame) else out[0]["rows"]
        panel.chart(error_depth_figure(df), key="tg_num_fig")
        panel.table(
            df,
            name="error_vs_depth",
            hide_index=True,
            width="stretch",
            column_config={
                "max_abs_error": st.column_config.NumberColumn("max |error|", format="%.2e")
            },
        )
        st.download_button(
            "Download errors (CSV)",
            df.to_csv(index=False).encode(),
            file_name="treegrad_error_vs_depth.csv",
            mime="text/csv",
            on_click="ignore",
            key="tg_num_dl",
        )
    st.markdown(
        "**Runtime vs number of leaves**: one sample, all features. TreeGrad's "
        "gradient is one O(L) pass; TreeGrad-Shap is O(L D); shap's TreeExplainer "
        "(path-dependent, C++) is O(L D\u00b2)."
    )
    leaves_opts = [100, 300, 1000, 3000, 10000, 30000]
    leaves_sel = st.multiselect(
        "Leaves", leaves_opts, default=[100, 1000, 10000], key="tg_rt_leaves"
    )

    def start_rt() -> Job:
        if not leaves_sel:
            raise ValueError("Choose at least one tree size.")
        return Job(
            runtime_vs_leaves_steps,
            sorted(leaves_sel),
            20,
            5,
            seed(),
            budget=BATCH_BUDGET,
            name="tg_rt",
        )

    RUNTIME.controls("Run", start_rt, columns=(1, 1, 5))
    if RUNTIME.running:
        live_view(
            RUNTIME,
            lambda s, partial: st.plotly_chart(
                shown_figure(runtime_figure(s["rows"])), key="tg_rt_live"
            ),
            "sizes",
        )
    out = job_outcome(RUNTIME, "tree sizes")
    if out is not None and out[0] is not None:
        df = out[0] if isinstance(out[0], pd.DataFrame) else out[0]["rows"]
        panel.chart(runtime_figure(df), key="tg_rt_fig")
        panel.table(
            df,
            name="runtime_vs_leaves",
            hide_index=True,
            width="stretch",
            column_config={"seconds": st.column_config.NumberColumn("seconds", format="%.2e")},
        )
        st.download_button(
            "Download timings (CSV)",
            df.to_csv(index=False).encode(),
            file_name="treegrad_runtime.csv",
            mime="text/csv",
            on_click="ignore",
            key="tg_rt_dl",
        )
SETTINGS.save()
