"""The session score of predict-then-reveal questions: a question is asked before its
result is shown, the first answer counts, later ones only reveal.

A :class:`Scoreboard` lives in the page's session state (one per student and browser tab);
it holds plain data, so it survives reruns and can be shown as a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Attempt:
    """One answered question: its ``key`` (``'lesson/step'`` or ``'predict/...'``),
    the ``chosen`` and the computed ``answer`` options, ``correct``."""

    key: str
    prompt: str
    chosen: str
    answer: str
    correct: bool


@dataclass
class Scoreboard:
    """Answers of one session, the first per question counted.

    ``attempts`` maps a question key to its first :class:`Attempt`.
    """

    attempts: dict[str, Attempt] = field(default_factory=dict)

    def record(
        self, key: str, prompt: str, chosen: str, answer: str, correct: bool | None = None
    ) -> Attempt:
        """Record an answer; returns the attempt that counts (the first one for ``key``:
        answering again after the reveal changes nothing).

        ``correct`` defaults to ``chosen == answer``; a question with several right
        options (a tie) passes it (``answer`` then names them all)."""
        if key not in self.attempts:
            right = chosen == answer if correct is None else bool(correct)
            self.attempts[key] = Attempt(key, prompt, chosen, answer, right)
        return self.attempts[key]

    def answered(self, key: str) -> bool:
        return key in self.attempts

    @property
    def n_answered(self) -> int:
        return len(self.attempts)

    @property
    def n_correct(self) -> int:
        return sum(a.correct for a in self.attempts.values())

    def summary(self, prefix: str = "") -> tuple[int, int]:
        """(correct, answered) among the keys starting with ``prefix``."""
        rows = [a for k, a in self.attempts.items() if k.startswith(prefix)]
        return sum(a.correct for a in rows), len(rows)

    def to_frame(self):
        """The attempts as a DataFrame (question, your answer, computed answer, correct)."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "question": a.prompt,
                    "your answer": a.chosen,
                    "answer": a.answer,
                    "correct": a.correct,
                }
                for a in self.attempts.values()
            ],
            columns=["question", "your answer", "answer", "correct"],
        )

    def reset(self) -> None:
        self.attempts.clear()
