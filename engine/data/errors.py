""":class:`DataError` and the helpers that word its messages (quoted names, lists)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class DataError(ValueError):
    """Bad input data, with a message meant for the person who supplied it.

    The message names the column (or file) and says how to fix the problem in one or two
    plain sentences; the app shows it verbatim.  ``column`` is the offending column name
    when there is exactly one, else ``None``.
    """

    def __init__(self, message: str, column: str | None = None):
        super().__init__(message)
        self.column = column


def _q(name: Any) -> str:
    """Quote a column or value name for a message: ``'age'``."""
    text = str(name)
    if len(text) > 60:
        text = text[:57] + "..."
    return "'" + text + "'"


def _names(names: Sequence[Any], limit: int = 8) -> str:
    """``'a', 'b' and 3 more`` for messages."""
    shown = ", ".join(_q(n) for n in names[:limit])
    if len(names) > limit:
        shown += f" and {len(names) - limit} more"
    return shown


def _file_label(name: str | None) -> str:
    return f"The file {_q(name)}" if name else "The file"


def _inf_error(infs: list[tuple[str, int]]) -> DataError:
    if len(infs) == 1:
        col, n = infs[0]
        return DataError(
            f"Column {_q(col)} has {n} infinite value{'s' if n != 1 else ''} "
            "(inf or -inf); replace them or remove those rows.",
            column=col,
        )
    parts = ", ".join(f"{_q(c)} ({n})" for c, n in infs[:8])
    more = f" and {len(infs) - 8} more" if len(infs) > 8 else ""
    return DataError(
        f"Columns {parts}{more} have infinite values (inf or -inf); replace them or "
        "remove those rows."
    )


def _rows(n: int) -> str:
    return f"{n:,} row{'s' if n != 1 else ''}"
