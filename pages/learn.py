"""Lessons page: one lesson per method plus one on how CART picks a split; each step asks its
question first, then reveals the live figure computed by the engine (engine/teaching)."""

import streamlit as st

from engine.teaching.glossary import lookup
from engine.teaching.lessons import LESSONS, check_answer, compute_step
from pages._link_params import learn_link
from pages._links import apply_link, mirror_link, page_title, parse_value
from pages._shared import md, require_entrypoint
from pages._teaching import SKIPPED, score_panel, scoreboard, show_answer

require_entrypoint("pages/learn.py")
page_title("Lessons")
st.markdown(
    "Short lessons on the ideas behind each method. Every step explains one point, asks you "
    "to **predict** what the engine will find, then **reveals** the live result on a "
    "curated dataset. Your first answer to each question counts for the session's score."
)
score_slot = st.container()

ids = list(LESSONS)
# the step's widget belongs to the lesson: the lesson the link names (or the one shown)
wanted = st.session_state.get("learn_lesson")
if wanted not in LESSONS:
    link_lesson = learn_link(tuple(ids), ids[0], 1)[0]
    wanted = parse_value(link_lesson, st.query_params.get("lesson", ids[0]))[0]
apply_link("learn", learn_link(tuple(ids), wanted, len(LESSONS[wanted].steps)))
lesson_id = st.selectbox(
    "Lesson",
    ids,
    format_func=lambda i: f"{ids.index(i) + 1}. {LESSONS[i].title}",
    key="learn_lesson",
)
lesson = LESSONS[lesson_id]
st.caption(md(f"{lesson.summary} Method page: {lesson.method}."))

step_key = f"learn_step::{lesson.id}"
if st.session_state.get(step_key) not in range(len(lesson.steps)):
    st.session_state[step_key] = 0
index = st.radio(
    "Step",
    list(range(len(lesson.steps))),
    format_func=lambda i: f"{i + 1}. {lesson.steps[i].title}",
    horizontal=True,
    key=step_key,
)
step = lesson.steps[index]
mirror_link(learn_link(tuple(ids), lesson.id, len(lesson.steps)))
key = f"{lesson.id}/{step.id}"

st.header(f"Step {index + 1} of {len(lesson.steps)}: {step.title}")
st.markdown(step.text)
if step.terms:
    with st.expander("Terms used here"):
        for term in step.terms:
            found = lookup(term)
            if found:
                st.markdown(f"**{md(found[0])}**: {md(found[1])}")

with st.spinner("Computing the step's result..."):
    result = compute_step(lesson.id, step.id)

board = scoreboard()
question = step.question
options = question.options(result)
st.subheader("Predict first")
chosen = st.radio(
    md(question.prompt), options, index=None, key=f"learn_answer::{key}", horizontal=True
)
c1, c2, _ = st.columns([2, 3, 4])
if c1.button("Check my answer", key="learn_check_btn", type="primary"):
    if chosen is None:
        st.warning("Pick an answer first, then press **Check my answer**.")
    else:
        board.record(key, question.prompt, chosen, question.answer(result))
if c2.button("Reveal without answering", key="learn_reveal_btn"):
    board.record(key, question.prompt, SKIPPED, question.answer(result))

attempt = board.attempts.get(key)
if attempt is None:
    st.info("Answer the question (or press **Reveal without answering**) to see the result.")
else:
    verdict = check_answer(question, result, attempt.chosen) if attempt.chosen in options else None
    show_answer(
        correct=verdict is not None and verdict.correct,
        chosen=attempt.chosen,
        answer=attempt.answer,
        explanation=md(question.explanation(result)),
        source="the engine found",
        figures=result.figures,
        table=result.table,
        key=f"learn_fig_view::{key}/",
    )
    if index + 1 < len(lesson.steps):

        def _next(k=step_key, i=index):
            st.session_state[k] = i + 1

        st.button("Next step", key="learn_next_btn", on_click=_next, type="primary")
    else:
        st.success(
            md(f"End of the lesson '{lesson.title}'. Pick another lesson above, or try the ")
            + "**Build your own tree** challenge in the Learn section."
        )

score_panel(score_slot)
