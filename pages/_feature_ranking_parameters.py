"""The Method parameters expander of the Feature ranking page (pages/feature_ranking.py)."""

from __future__ import annotations

import streamlit as st

from engine.teaching.glossary import link_terms


def draw_method_parameters():
    """The Method parameters expander of the Feature ranking page: TreeGrad's alpha, beta, the ranker's p, learning rate and steps, and the random orderings of the curves' baseline; returns their values (alpha, beta, lr, n_random, p, steps)."""
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
    return alpha, beta, lr, n_random, p, steps
