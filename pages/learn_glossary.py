"""Glossary page: the terms the lessons and the method pages use (engine/teaching/glossary.py)."""

import streamlit as st

from engine.teaching.glossary import GLOSSARY, sorted_terms
from pages._link_params import glossary_link
from pages._links import apply_link, mirror_link
from pages._shared import md, require_entrypoint

require_entrypoint("pages/learn_glossary.py")
LINK = glossary_link()
apply_link("glossary", LINK)
st.title("Glossary")
st.markdown("The terms the lessons, the challenge and the method pages use, in plain words.")
query = st.text_input("Search", key="learn_gl_query", placeholder="e.g. impurity, p-value")
mirror_link(LINK)
wanted = query.strip().lower()
shown = [
    t for t in sorted_terms() if not wanted or wanted in t.lower() or wanted in GLOSSARY[t].lower()
]
if not shown:
    st.info(md(f"No term matches '{query}'. Clear the search to see every term."))
for term in shown:
    st.markdown(f"**{md(term)}**: {md(GLOSSARY[term])}")
