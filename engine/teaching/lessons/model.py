"""The Learn section's lesson model: figures, step results, questions, steps, lessons,
verdicts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a step: ``builder`` names a function of :mod:`engine.figures` (see
    ``engine.figures.teaching.BUILDERS``) and ``kwargs`` its arguments."""

    builder: str
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class StepResult:
    """What a step computed: its ``figures``, the ``facts`` its question and explanation
    read (plain numbers and names), and an optional ``table`` to show under the figures."""

    figures: list[FigureSpec]
    facts: dict[str, Any]
    table: pd.DataFrame | None = None


@dataclass(frozen=True)
class Question:
    """One multiple-choice question about a step's result.

    ``options`` and ``answer`` are functions of the :class:`StepResult` (so the answer is
    whatever the engine computed); ``explanation`` says why, with the computed numbers.
    """

    prompt: str
    options: Callable[[StepResult], list[str]]
    answer: Callable[[StepResult], str]
    explanation: Callable[[StepResult], str]


@dataclass(frozen=True)
class Step:
    """A lesson step: ``id`` (unique within the lesson), ``title``, ``text`` (a few
    sentences of Markdown), ``compute`` (no arguments, returns a :class:`StepResult`),
    ``question`` and the glossary ``terms`` the text uses."""

    id: str
    title: str
    text: str
    compute: Callable[[], StepResult]
    question: Question
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lesson:
    """A lesson: ``id``, ``title``, the ``method`` page it belongs to, a one-line
    ``summary`` and its ``steps``."""

    id: str
    title: str
    method: str
    summary: str
    steps: tuple[Step, ...]

    def step(self, step_id: str) -> Step:
        """The step called ``step_id``; raises ``KeyError`` naming the lesson's steps."""
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(
            f"lesson {self.id!r} has no step {step_id!r}; steps: {[s.id for s in self.steps]}"
        )


@dataclass(frozen=True)
class Verdict:
    """The outcome of one answer: ``correct``, the computed ``answer`` and the
    ``explanation``."""

    correct: bool
    answer: str
    explanation: str


def check_answer(question: Question, result: StepResult, chosen: str) -> Verdict:
    """Compare ``chosen`` with the answer computed from ``result``.

    Raises ``ValueError`` when ``chosen`` is not one of the question's options.
    """
    options = question.options(result)
    if chosen not in options:
        raise ValueError(f"{chosen!r} is not an option of this question; options: {options}")
    answer = question.answer(result)
    return Verdict(chosen == answer, answer, question.explanation(result))


def _fmt(v: float) -> str:
    return f"{v:.3g}"


YES, NO = "Yes", "No"


def _yes_no(flag: bool) -> str:
    return YES if flag else NO
