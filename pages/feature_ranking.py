"""Feature ranking page: TreeGrad attributions, TreeGrad-Ranker, insertion/deletion curves and
the numerics of semivalue computation on trees (docs/spec.md section 3)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import streamlit as st

from engine.figures.treegrad import (
    curves_figure,
)
from engine.snippets import feature_ranking_snippet
from engine.teaching import predict
from engine.teaching.glossary import link_terms
from engine.tree import DumpLimits, TreeEnsemble, load_model_dump
from engine.tree.model_dump import EXPECTED_FORMATS
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
    explain,
    model_summary,
    n_outputs,
)
from pages._feature_ranking_parameters import draw_method_parameters
from pages._feature_ranking_tabs import (
    CurvesContext,
    draw_attributions_tab,
    draw_curves_tab,
    draw_numerics_tab,
    draw_ranker_tab,
    draw_tree_tab,
)
from pages._link_params import feature_ranking_link, format_edits, parse_edits
from pages._links import page_title, warn_param
from pages._runs import keep_runs, restore_runs
from pages._shared import (
    PageJob,
    ResultPanel,
    SavedSettings,
    csv_download,
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
        "Models fitted on other pages (Conditional inference, Optimal shape trees) on this "
        "same dataset are offered "
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
        text = str(exc).rstrip(".") + "."
        if "save_model(" not in text and "dump_model()" not in text:  # a malformed model
            text += f" The page reads {EXPECTED_FORMATS}."
        st.error(f"Cannot read this model: {md(text)}")
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
    if kind in MODEL_KINDS and not fit_within_budget(
        ds, kind, int(depth), int(n_est), fit_share=1.0 - float(test_size)
    ):
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
    score_txt = f"test {metric} **{score:.3f}** on {len(te_idx):,} held-out rows"
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
    # the first test row whose paths test the most features: where the methods can differ
    opening_row = service.teaching_row(model, ds.X, test_rows)
    SETTINGS.link_fixed("tg_row", opening_row, "is not a test row of this split")
    st.session_state["tg_row"] = opening_row


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

alpha, beta, lr, n_random, p, steps = draw_method_parameters()
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
draw_attributions_tab(
    settings=SETTINGS,
    edited=edited,
    ex=ex,
    fmt_value=fmt_value,
    game_label=game_label,
    n=n,
    names=names,
    panel=panel,
    row=row,
    tabs=tabs,
    x=x,
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
    csv_download("Download curves (CSV)", cs.to_frame(), dl_name, key=f"{key}_dl")


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


draw_curves_tab(
    CurvesContext(
        model=model,
        model_key=model_key,
        ds=ds,
        ci=ci,
        params=params,
        curve_output=curve_output,
        curve_label=curve_label,
        n_random=n_random,
        batch_budget=BATCH_BUDGET,
        job_outcome=job_outcome,
        live_view=live_view,
        other_dataset=other_dataset,
        show_curves=show_curves,
    ),
    batch_job=BATCH,
    one_job=ONE,
    predicted=PREDICTED,
    settings=SETTINGS,
    classification=classification,
    cls_choice=cls_choice,
    cs_one=cs_one,
    edited=edited,
    is_boost=is_boost,
    n=n,
    n_nodes=n_nodes,
    param_values=param_values,
    row=row,
    tabs=tabs,
    te_idx=te_idx,
    test_rows=test_rows,
    x=x,
)

# -- ranker ----------------------------------------------------------------------------------
draw_ranker_tab(ex=ex, names=names, panel=panel, params=params, row=row, tabs=tabs)

# -- tree ------------------------------------------------------------------------------------
draw_tree_tab(
    ci=ci,
    class_names=class_names,
    cname=cname,
    ds=ds,
    is_boost=is_boost,
    model=model,
    n=n,
    names=names,
    panel=panel,
    row=row,
    tabs=tabs,
    x=x,
)

# -- numerics --------------------------------------------------------------------------------
draw_numerics_tab(
    batch_budget=BATCH_BUDGET,
    numerics_job=NUMERICS,
    runtime_job=RUNTIME,
    job_outcome=job_outcome,
    live_view=live_view,
    panel=panel,
    tabs=tabs,
)
SETTINGS.save()
