"""Teaching with TreeLab: lessons, the build-your-own-tree challenge, predict-then-reveal
questions on the user's data, session scores and the glossary (no Streamlit here; the
Learn pages in ``pages/learn*.py`` draw them).

Modules: :mod:`engine.teaching.datasets` (curated data), :mod:`engine.teaching.lessons`
(lessons as data), :mod:`engine.teaching.challenge` (a student's tree, graded against CART
and Literati's proven optimum), :mod:`engine.teaching.predict` (questions on any dataset),
:mod:`engine.teaching.quiz` (the session score), :mod:`engine.teaching.glossary`.
"""
