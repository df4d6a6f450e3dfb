"""Predict, then reveal, on the sidebar's dataset: a question is asked before the fit is
shown and the answer is checked against the fit (engine/teaching/predict.py)."""

import streamlit as st

from engine.data import DataError
from engine.teaching import predict
from pages._link_params import PREDICT_KINDS, learn_predict_link
from pages._links import apply_link, mirror_link, page_title
from pages._shared import (
    current_dataset,
    dataset_caption,
    dataset_digest,
    md,
    require_entrypoint,
)
from pages._teaching import SKIPPED, score_panel, scoreboard, show_answer

require_entrypoint("pages/learn_predict.py")
LINK = learn_predict_link()
apply_link("learn_predict", LINK)
page_title("Predict, then reveal")
st.markdown(
    "Questions about **your** dataset (the one chosen in the sidebar). Answer first; then "
    "the page fits the model and shows what it found. Your first answer counts for the "
    "session's score, shared with the lessons."
)
score_slot = st.container()
ds = current_dataset()
if ds is None:
    st.stop()
st.markdown(dataset_caption(ds))

KINDS = PREDICT_KINDS
kind = st.radio(
    "Question", list(KINDS), format_func=KINDS.get, horizontal=True, key="learn_pr_kind"
)
digest = dataset_digest(ds)
classes = None if ds.classes_ is None else [str(c) for c in ds.classes_]


@st.cache_resource(show_spinner=False, max_entries=32)
def _question(kind: str, digest: str, row: int, alpha: float, _ds):
    if kind == "root":
        return predict.root_feature(
            _ds.X,
            _ds.y,
            _ds.feature_names,
            _ds.task,
            class_names=classes,
            is_categorical=_ds.is_categorical,
            key=digest,
        )
    if kind == "top":
        return predict.top_feature(
            _ds.X, _ds.y, _ds.feature_names, _ds.task, row, class_names=classes, key=digest
        )
    return predict.p_value_significant(
        _ds.X,
        _ds.y,
        _ds.feature_names,
        _ds.task,
        alpha=alpha,
        is_categorical=_ds.is_categorical,
        key=digest,
    )


row, alpha = 0, 0.05
if kind == "top":
    row = int(
        st.number_input(
            "Row (0-based)", 0, ds.n_samples - 1, 0, step=1, key=f"learn_pr_row::{digest}"
        )
    )
elif kind == "p":
    alpha = float(
        st.select_slider("alpha", [0.001, 0.01, 0.05, 0.1], value=0.05, key="learn_pr_alpha")
    )
mirror_link(LINK)
try:
    with st.spinner("Fitting (the answer is hidden until you answer)..."):
        q = _question(kind, digest, row, alpha, ds)
except (ValueError, DataError) as exc:
    st.warning(f"This question cannot be asked on this dataset: {md(exc)}")
    score_panel(score_slot)
    st.stop()

board = scoreboard()
chosen = st.radio(md(q.prompt), q.options, index=None, key=f"learn_pr_answer::{q.key}")
c1, c2, _ = st.columns([2, 3, 4])
if c1.button("Check my answer", key="learn_pr_check_btn", type="primary"):
    if chosen is None:
        st.warning("Pick an answer first, then press **Check my answer**.")
    else:
        board.record(q.key, q.prompt, chosen, q.shown_answer, q.correct(chosen))
if c2.button("Reveal without answering", key="learn_pr_reveal_btn"):
    board.record(q.key, q.prompt, SKIPPED, q.shown_answer, False)

attempt = board.attempts.get(q.key)
if attempt is None:
    st.info("Answer the question (or press **Reveal without answering**) to see the fit.")
else:
    show_answer(
        correct=attempt.correct,
        chosen=attempt.chosen,
        answer=q.shown_answer,
        explanation=md(q.explanation),
        source="the fit says",
        figures=q.figures,
        table=q.table,
        key="learn_pr_fig_view::",
    )
score_panel(score_slot)
