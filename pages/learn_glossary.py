"""Glossary page: the terms the lessons and the method pages use (engine/teaching/glossary.py)."""

import streamlit as st

from engine.teaching.glossary import GLOSSARY, anchor, sorted_terms
from pages._link_params import glossary_link
from pages._links import apply_link, mirror_link, page_title
from pages._shared import md, require_entrypoint

require_entrypoint("pages/learn_glossary.py")
LINK = glossary_link()
apply_link("glossary", LINK)
page_title("Glossary")
st.markdown(
    "The terms the lessons, the challenge and the method pages use, in plain words. The "
    "help texts and captions of the method pages link here, to the term they use."
)
query = st.text_input("Search", key="learn_gl_query", placeholder="e.g. impurity, p-value")
mirror_link(LINK)
wanted = query.strip().lower()
shown = [
    t for t in sorted_terms() if not wanted or wanted in t.lower() or wanted in GLOSSARY[t].lower()
]
if not shown:
    st.info(md(f"No term matches '{query}'. Clear the search to see every term."))
for term in shown:  # each term a heading with its anchor: glossary#<anchor> opens at it
    st.subheader(md(term), anchor=anchor(term))
    st.markdown(md(GLOSSARY[term]))
