"""Reading and sniffing a CSV file before pandas parses it: the raw bytes within a size
bound, well-known binary formats refused, the text encoding, the delimiter (``csv.Sniffer``
checked by field counts), the decimal mark and thousands separator, and the raw header.
Used by :func:`engine.data.parsing.load_csv`; every function raises
:class:`engine.data.errors.DataError` with a message that says how to fix the file."""

from __future__ import annotations

import codecs
import csv
import io
import re
import unicodedata
from pathlib import Path
from typing import Any

import pandas as pd

from engine.data.errors import DataError, _file_label, _q
from engine.data.values import CURRENCY_SYMBOLS

DELIMITERS = ",;\t|"
DELIMITER_NAMES = {",": "comma (,)", ";": "semicolon (;)", "\t": "tab", "|": "pipe (|)"}
SNIFF_BYTES = 64 * 1024


def read_source(source: Any, max_bytes: int, name: str | None) -> tuple[bytes, str | None]:
    """Return the raw bytes of ``source`` and a display name for messages."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
    elif isinstance(source, (str, Path)):
        path = Path(source)
        name = name or path.name
        if not path.is_file():
            raise DataError(
                f"The file {_q(path)} was not found. Check the path, or upload the file again."
            )
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(_too_big_message(name, size, max_bytes))
        raw = path.read_bytes()
    elif hasattr(source, "getvalue") or hasattr(source, "read"):
        name = name or getattr(source, "name", None)
        if hasattr(source, "getvalue"):
            raw = source.getvalue()
        else:
            if hasattr(source, "seek"):
                source.seek(0)
            raw = source.read()
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        raw = bytes(raw)
    else:
        raise TypeError(
            "load_csv expects bytes, a path (str or pathlib.Path) or a file object, "
            f"not {type(source).__name__}."
        )
    if len(raw) > max_bytes:
        raise DataError(_too_big_message(name, len(raw), max_bytes))
    return raw, name


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _too_big_message(name: str | None, size: int, limit: int) -> str:
    return (
        f"{_file_label(name)} is {_mb(size)}, more than the limit of {_mb(limit)}. "
        "Upload a smaller file: a sample of the rows, or only the columns you need."
    )


def refuse_binary(raw: bytes, name: str | None) -> None:
    """Raise DataError for well-known binary formats (Excel, zip, gzip, ...)."""
    label = _file_label(name)
    if raw.startswith(b"PK\x03\x04"):
        raise DataError(
            f"{label} is an Excel (.xlsx) or zip file, not a CSV text file. "
            "Open it in your spreadsheet program and save it as CSV, then upload that."
        )
    if raw.startswith(b"\xd0\xcf\x11\xe0"):
        raise DataError(
            f"{label} is an old Excel (.xls) file, not a CSV text file. "
            "Open it in your spreadsheet program and save it as CSV, then upload that."
        )
    if raw.startswith(b"\x1f\x8b") or raw.startswith(b"BZh") or raw.startswith(b"\xfd7zXZ"):
        raise DataError(f"{label} is compressed. Unpack it first and upload the CSV inside.")
    if raw.startswith(b"PAR1"):
        raise DataError(f"{label} is a Parquet file, not CSV. Export it as CSV first.")


def _garbage(text: str) -> bool:
    """True when decoded text holds too many control characters to be a CSV file."""
    if "\x00" in text:
        return True
    sample = text[:SNIFF_BYTES]
    bad = sum(1 for ch in sample if ch not in "\t\n\r" and unicodedata.category(ch) == "Cc")
    return bad > max(2, 0.01 * len(sample))


def decode_text(raw: bytes, encoding: str | None, name: str | None) -> tuple[str, str]:
    """Decode ``raw``; return ``(text, encoding_used)``.  Raises DataError."""
    label = _file_label(name)
    if encoding not in (None, "", "auto"):
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            raise DataError(
                f"Unknown text encoding {_q(encoding)}. Use for example 'utf-8', 'cp1252' "
                "or 'latin-1', or leave the encoding empty to detect it."
            ) from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{label} cannot be read as {encoding} text (byte {exc.start} is not valid). "
                "Choose another encoding, or leave it empty to detect it."
            ) from None
        if codec in ("utf-8", "utf_8") and text.startswith("\ufeff"):
            text = text[1:]
        used = encoding
    else:
        text = used = None
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                text, used = raw.decode("utf-16"), "utf-16"
            except UnicodeDecodeError:
                text = None
        if text is None:
            if b"\x00" in raw:
                raise DataError(
                    f"{label} contains binary data, not text. Upload a CSV text file "
                    "(in a spreadsheet program: Save as > CSV)."
                )
            for candidate in ("utf-8-sig", "cp1252", "latin-1"):
                try:
                    text = raw.decode(candidate)
                except UnicodeDecodeError:
                    continue
                used = candidate
                if candidate == "utf-8-sig" and not raw.startswith(b"\xef\xbb\xbf"):
                    used = "utf-8"
                break
        assert text is not None and used is not None  # latin-1 decodes anything
        if text.startswith("\ufeff"):
            text = text[1:]
    if _garbage(text):
        raise DataError(
            f"{label} does not look like a text CSV file (it contains binary data). "
            "Upload a CSV file (in a spreadsheet program: Save as > CSV)."
        )
    return text, used


def sniff_sample(text: str) -> str:
    """The first ~64 KB of ``text``, cut at a line end."""
    if len(text) <= SNIFF_BYTES:
        return text
    head = text[:SNIFF_BYTES]
    cut = max(head.rfind("\n"), head.rfind("\r"))
    return head[:cut] if cut > 0 else head


def sample_rows(sample: str, delimiter: str, limit: int = 2000) -> list[list[str]]:
    """Rows of the sample split by the csv module (blank lines skipped)."""
    out: list[list[str]] = []
    try:
        for row in csv.reader(
            io.StringIO(sample, newline=""), delimiter=delimiter, skipinitialspace=True
        ):
            if row and any(cell.strip() for cell in row):
                out.append(row)
                if len(out) >= limit:
                    break
    except csv.Error:
        return out
    return out


def _consistency(rows: list[list[str]]) -> tuple[float, int]:
    """(share of rows with as many fields as the header, header width)."""
    if not rows:
        return 0.0, 0
    width = len(rows[0])
    same = sum(1 for r in rows if len(r) == width or (len(r) == width + 1 and r[-1] == ""))
    return same / len(rows), width


def detect_delimiter(sample: str) -> str:
    """csv.Sniffer over the sample, checked by field counts; count-based fallback."""
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except Exception:  # the sniffer raises csv.Error (and worse) on odd input
        sniffed = None
    scores = {}
    for d in DELIMITERS:
        share, width = _consistency(sample_rows(sample, d, limit=500))
        scores[d] = (share, width)
    if sniffed in scores:
        share, width = scores[sniffed]
        if width > 1 and share >= 0.9:
            return sniffed
    good = [
        (share, width, -i, d)
        for i, (d, (share, width)) in enumerate(scores.items())
        if width > 1 and share >= 0.9
    ]
    if good:
        return max(good)[3]
    fair = [
        (share, width, -i, d)
        for i, (d, (share, width)) in enumerate(scores.items())
        if width > 1 and share >= 0.5
    ]
    if fair:
        return max(fair)[3]
    return ","


_RE_COMMA_DEC = re.compile(r"^[-+]?(\d{1,3}(\.\d{3})+|\d+),\d+$")
_RE_DOT_DEC = re.compile(r"^[-+]?\d*\.\d+([eE][-+]?\d+)?$")
_RE_DOT_GROUP = re.compile(r"^[-+]?\d{1,3}(\.\d{3})+(,\d+)?$")
_RE_COMMA_GROUP = re.compile(r"^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$")
_RE_COMMA_PLAIN = re.compile(r"^[-+]?\d+,\d+$")
_RE_DOT_PLAIN = re.compile(r"^[-+]?\d+\.\d+$")


_UNIT_AROUND = re.compile(
    "^(?:"
    + "|".join(re.escape(u) for u in CURRENCY_SYMBOLS)
    + r")\s*|\s*(?:%|"
    + "|".join(re.escape(u) for u in CURRENCY_SYMBOLS)
    + ")$"
)


def detect_number_format(
    rows: list[list[str]], delimiter: str, decimal: str | None, thousands: str | None
) -> tuple[str, str | None, list[tuple[str, str]]]:
    """Decide the decimal mark and thousands separator from sample fields (a currency mark
    or percent sign around a number is ignored: '1.204,50 €' counts as '1.204,50').
    Returns ``(decimal, thousands, notes)``, each note ``(change, message)``."""
    notes: list[tuple[str, str]] = []
    written = [c.strip() for r in rows[1:] for c in r]
    cells = [_UNIT_AROUND.sub("", c) for c in written]
    as_written = dict(zip(cells, written, strict=True))  # for messages: '$2,802', not '2,802'

    if decimal is None:
        decimal = "."
        if delimiter != ",":
            comma = [c for c in cells if _RE_COMMA_DEC.match(c)]
            dot = any(_RE_DOT_DEC.match(c) and not _RE_DOT_GROUP.match(c) for c in cells)
            if comma and not dot:
                decimal = ","
                notes.append(
                    (
                        "decimal comma",
                        f"Numbers such as {_q(as_written[comma[0]])} were read with a "
                        "decimal comma "
                        "(1,5 = 1.5).",
                    )
                )
    if thousands is None:
        sep = "." if decimal == "," else ","
        group_re = _RE_DOT_GROUP if sep == "." else _RE_COMMA_GROUP
        plain_re = _RE_DOT_PLAIN if sep == "." else _RE_COMMA_PLAIN
        # '1.234' cannot be a number when the decimal mark is ',' (and '1,234' when it
        # is '.'), so grouping is the only reading, unless another number contradicts it
        grouped = [c for c in cells if group_re.match(c)]
        contradict = any(plain_re.match(c) and not group_re.match(c) for c in cells)
        if grouped and not contradict:
            thousands = sep
            notes.append(
                (
                    "thousands separator",
                    f"Numbers such as {_q(as_written[grouped[0]])} were read with {_q(sep)} as the "
                    "thousands separator.",
                )
            )
    return decimal, (thousands or None), notes


def parser_message(exc: Exception, name: str | None, delimiter: str) -> str:
    """The user-facing message for a pandas/csv parser error ``exc`` on file ``name``: the
    line whose field count differs from the header, an unclosed quote, or a general hint
    to choose the delimiter."""
    text = str(exc)
    label = _file_label(name)
    dname = DELIMITER_NAMES.get(delimiter, _q(delimiter))
    m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if m:
        return (
            f"{label} could not be read as a table: line {m.group(2)} has {m.group(3)} "
            f"values but the header has {m.group(1)} (separator: {dname}). Fix that line, "
            "or choose the right delimiter yourself."
        )
    m = re.search(r"EOF inside string starting at row (\d+)", text)
    if m:
        return (
            f'{label} could not be read as a table: a quote (") opened near line '
            f"{int(m.group(1)) + 1} is never closed. Fix the quotes in that line."
        )
    return (
        f"{label} could not be read as a table (separator: {dname}). Check that it is a "
        "CSV file, or choose the delimiter yourself."
    )


def raw_header(text: str, delimiter: str, name: str | None) -> list[str]:
    """The header cells as pandas reads them (spaces stripped), before any renaming."""
    try:
        head = pd.read_csv(
            io.StringIO(text),
            sep=delimiter,
            header=None,
            nrows=1,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            skipinitialspace=True,
            skip_blank_lines=True,
            index_col=False,
            engine="c",
        )
    except pd.errors.EmptyDataError:
        return []
    except (pd.errors.ParserError, csv.Error, ValueError, OverflowError) as exc:
        raise DataError(parser_message(exc, name, delimiter)) from None
    if len(head) == 0:
        return []
    return [str(c).strip() for c in head.iloc[0].tolist()]
