"""Helpers shared by the Learn pages: the session's scoreboard and its panel."""

import streamlit as st

from engine.teaching.quiz import Scoreboard

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
