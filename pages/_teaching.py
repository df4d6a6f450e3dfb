"""Helpers shared by the Learn pages: the session's scoreboard and its panel."""

import streamlit as st

from engine.figures.teaching import step_figure
from engine.teaching.quiz import Scoreboard
from pages._shared import md, shown_figure

#: What the scoreboard records when a student reveals a result without answering.
SKIPPED = "(revealed without answering)"


def scoreboard() -> Scoreboard:
    """This session's :class:`Scoreboard` (lessons and predictions share it)."""
    board = st.session_state.get("learn_scoreboard")
    if not isinstance(board, Scoreboard):
        board = st.session_state["learn_scoreboard"] = Scoreboard()
    return board


def _reset() -> None:
    scoreboard().reset()


def score_panel(container=None) -> None:
    """The session score in one line, the answers in an expander, and a reset button, in
    ``container`` (a placeholder drawn at the top and filled at the end of the run, so the
    score includes the answer just given)."""
    board = scoreboard()
    correct, answered = board.n_correct, board.n_answered
    with (
        container or st.container(),
        st.expander(
            f"Your score this session: {correct} correct of {answered} answered", expanded=False
        ),
    ):
        if answered:
            st.dataframe(board.to_frame(), hide_index=True)
        else:
            st.caption("No question answered yet.")
        st.button("Reset my score", key="learn_reset_score_btn", on_click=_reset)


def show_answer(
    *, correct: bool, chosen, answer, explanation: str, source: str, figures, table, key: str
) -> None:
    """A student's answer and what it is measured against: right, revealed without
    answering (``chosen`` is :data:`SKIPPED`) or not quite (``source`` says who found
    ``answer``, e.g. "the engine found"); then ``explanation`` (Markdown), the step's
    figures (lesson figure specs, drawn with keys ``<key><i>``) and its ``table``
    (a DataFrame or None)."""
    if correct:
        st.success(f"**Right.** {explanation}")
    elif chosen == SKIPPED:
        st.info(f"**The answer: {md(answer)}.** {explanation}")
    else:
        st.error(
            f"**Not quite:** you answered {md(chosen)}, {source} **{md(answer)}**. {explanation}"
        )
    for i, spec in enumerate(figures):
        st.plotly_chart(shown_figure(step_figure(spec)), key=f"{key}{i}")
    if table is not None:
        st.dataframe(table, hide_index=True)


class PredictFirst:
    """The optional "Predict first" expander of a method page (Conditional inference,
    Optimal shape trees, Feature ranking): questions asked before the page's result is
    shown (:class:`engine.teaching.predict.PageQuestion`), answered by that result, and
    counted in the session's score the Learn pages keep.

    Off by default, so it never gets in the way.  When the student turns it on, the result
    of the current settings stays hidden until the answers are locked in; the verdicts
    are drawn just above the result.  A result already shown (the mode was off) asks no
    question: the student changes a setting for a fresh one.

    Usage: ``pf = PredictFirst("ci")`` where the settings end (draws the expander; page
    inputs may be drawn ``with pf.box:``), ``pf.ask(questions, key)`` with the key of the
    current settings (:func:`engine.teaching.predict.result_key`), then, where the result
    is drawn, ``pf.reveal(key_of_result, answer)`` with ``answer(question) ->
    PageAnswer``; it stops the page (``stop``) while an answer is missing.
    """

    def __init__(self, page: str, *, what: str = "the result") -> None:
        self.page = page
        self.what = what
        self.locks = st.session_state.setdefault(f"_{page}_predict_locks", {})
        self.seen = st.session_state.setdefault(f"_{page}_predict_seen", set())
        on_key = f"{page}_predict_on"
        self.box = st.expander(
            "Predict first (optional)", expanded=bool(st.session_state.get(on_key))
        )
        with self.box:
            self.enabled = st.toggle(
                f"Ask me before showing {what}",
                key=on_key,
                help="Answer a question about the result before you see it; your first "
                "answer counts in this session's score, shared with the Learn pages.",
            )

    def asking(self, key: str) -> bool:
        """Whether :meth:`ask` will draw questions for ``key`` (the mode is on, no answer
        is locked in for it and its result was not shown yet): a page draws its own
        inputs for a question (the feature asked about) only then."""
        return self.enabled and not self.locks.get(key) and key not in self.seen

    def ask(self, questions, key: str) -> None:
        """Draw ``questions`` (for the settings whose result key is ``key``) and the
        **Lock in** button, or the answers already locked in for them, or why nothing is
        asked (the result was shown already).  ``questions`` may be ``None`` when
        :meth:`asking` is false."""
        if not self.enabled:
            return
        with self.box:
            locked = self.locks.get(key)
            if locked:
                st.markdown(
                    "**Locked in:** "
                    + "; ".join(f"{md(q.prompt)} **{md(chosen)}**" for q, chosen in locked)
                )
                return
            if key in self.seen:
                st.caption(
                    f"You have already seen {self.what} for these settings: change a "
                    "setting (or the dataset) for a fresh question."
                )
                return
            chosen = [
                st.selectbox(
                    md(q.prompt),
                    q.options,
                    index=None,
                    placeholder="Choose your answer",
                    key=f"{self.page}_predict_{q.kind}",
                )
                for q in questions
            ]
            if st.button("Lock in my answer", key=f"{self.page}_predict_lock_btn", type="primary"):
                if any(c is None for c in chosen):
                    st.warning("Answer every question first, then press **Lock in my answer**.")
                else:
                    self.locks[key] = list(zip(questions, chosen, strict=True))
                    st.rerun()

    def reveal(self, key: str, answer, *, stop=st.stop) -> None:
        """Before the result whose key is ``key`` is drawn: with the mode on and no answer
        locked in for it, say so and ``stop()``; else score the locked answers
        (``answer(question)`` gives the :class:`PageAnswer`) and draw the verdicts."""
        if not self.enabled:
            self.seen.add(key)
            return
        locked = self.locks.get(key)
        if not locked:
            if key in self.seen:
                return
            st.info(f"**Predict first** is on: lock in your answer above to see {self.what}.")
            stop()
            return
        board = scoreboard()
        for q, chosen in locked:
            result = answer(q)
            attempt = board.record(
                q.key(self.page, key), q.prompt, chosen, result.answer, result.correct(chosen)
            )
            if attempt.correct:
                st.success(f"**Right** ({md(chosen)}). {md(result.explanation)}")
            else:
                st.error(
                    f"**Not quite:** you answered {md(attempt.chosen)}, the result says "
                    f"**{md(result.answer)}**. {md(result.explanation)}"
                )
        self.seen.add(key)
        st.caption(
            f"Your score this session: {board.n_correct} correct of {board.n_answered} "
            "answered (shared with the Learn pages)."
        )
