"""Lessons of the Learn section, as data: each lesson a short sequence of steps, each step a
few sentences, a live result computed by the engine's public estimators on a curated
dataset, the figures that draw it (named by their builder in ``engine.figures``) and one
question whose answer is read off the computed result, never typed in.

The page asks the question *before* it reveals the figures (predict, then reveal), checks
the answer with :func:`check_answer` and keeps the score (:mod:`engine.teaching.quiz`).

Lessons (``LESSONS``, in display order):

* ``cart_split``: how CART picks a split (the impurity decrease over every threshold;
  the root feature).
* ``literati``: greedy is not optimal (xor), the proven optimum and its gap, shape
  functions (sandwich).
* ``partition``: a conditional density beats a point prediction (bimodal,
  heteroscedastic).
* ``treegrad``: why Shapley, Banzhaf and the Ranker disagree on a sample; insertion and
  deletion curves.
* ``cit``: CART prefers many-valued noise, a permutation test does not.
* ``dics``: what candidate thresholds save and cost.

One module per lesson (``cart``, ``literati``, ``partition``, ``treegrad``, ``cit``,
``dics``), the lesson model in ``model``; this package lists them and computes steps.

Every step computes in well under a second once the kernels are compiled (the fits are
small); :func:`compute_step` caches the results per process.
"""

from __future__ import annotations

from functools import lru_cache

from engine.teaching.lessons.cart import CART_SPLIT
from engine.teaching.lessons.cit import CIT
from engine.teaching.lessons.dics import DICS
from engine.teaching.lessons.literati import LITERATI
from engine.teaching.lessons.model import (
    NO,
    YES,
    FigureSpec,
    Lesson,
    Question,
    Step,
    StepResult,
    Verdict,
    check_answer,
)
from engine.teaching.lessons.partition import PARTITION
from engine.teaching.lessons.treegrad import TREEGRAD

__all__ = [
    "CART_SPLIT",
    "CIT",
    "DICS",
    "LESSONS",
    "LITERATI",
    "NO",
    "PARTITION",
    "TREEGRAD",
    "YES",
    "FigureSpec",
    "Lesson",
    "Question",
    "Step",
    "StepResult",
    "Verdict",
    "check_answer",
    "compute_step",
    "lesson",
]

#: Every lesson, by id, in display order.
LESSONS: dict[str, Lesson] = {
    lesson.id: lesson for lesson in (CART_SPLIT, LITERATI, PARTITION, TREEGRAD, CIT, DICS)
}


def lesson(lesson_id: str) -> Lesson:
    """The lesson called ``lesson_id``; raises ``KeyError`` naming the lessons."""
    if lesson_id not in LESSONS:
        raise KeyError(f"no lesson {lesson_id!r}; lessons: {list(LESSONS)}")
    return LESSONS[lesson_id]


@lru_cache(maxsize=64)
def compute_step(lesson_id: str, step_id: str) -> StepResult:
    """The result of step ``step_id`` of lesson ``lesson_id`` (computed once per process;
    the steps are deterministic).  Raises ``KeyError`` for an unknown lesson or step."""
    return lesson(lesson_id).step(step_id).compute()
