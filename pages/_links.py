"""Page state in the link: widget values mirrored in the URL's query string.

Each page declares its result-determining widgets once, as :class:`LinkParam` entries
(widget key, short URL name, type, default, allowed values or range), in its
:class:`pages._jobs.SavedSettings` (``link=``).  On the page's first run in a session the
values in the URL are parsed and checked -- by type, range and options, never evaluated --
and set on the widgets; every bad or unknown parameter is named in a warning with the value
used instead.  After the widgets are drawn, their values go back into the URL (a value
equal to its default is left out), so the address bar is always a link to the page as set.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable

import streamlit as st

#: Query parameters that are not widgets: ``run`` reopens a stored run, ``live`` takes back
#: a job still running (pages/_runs.py).
RESERVED_NAMES = frozenset({"run", "live"})
#: URL names of the sidebar's settings (pages/_shared.py ``sidebar``).
SIDEBAR_NAMES = frozenset({"ds", "target", "task", "missing", "seed", "projection"})
_INTEGER = re.compile(r"[+-]?\d+")
#: Digits beyond which a whole number is only compared with the bounds (never converted).
_MAX_DIGITS = 20
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
_READ = "_link_read::"
#: Session-state keys: the page the session opened on, and whether it is still shown.
_LANDING, _ON_LANDING = "_link_landing", "_link_on_landing"
#: Session-state keys: the number of this script run, and the link's warnings kept to be
#: shown again (:func:`show_link_warnings`).
_RUN, _KEPT = "_link_run", "_link_warnings"
#: Longest free text taken from a link (a longer one is cut and the cut reported).
MAX_TEXT = 200
#: Separator of the items of a list parameter (``?models=cart,cit``).
LIST_SEPARATOR = ","


@dataclasses.dataclass(frozen=True)
class LinkParam:
    """One widget mirrored in the URL.

    Parameters
    ----------
    key : str
        The widget's key in ``st.session_state``.
    name : str
        Its short name in the query string (``?depth=4``).
    kind : type
        ``int``, ``float``, ``bool``, ``str`` or ``list``: how the text is parsed.  A
        ``list`` (a multiselect) is written as comma-separated items, each one of
        ``options``.
    default : object
        The widget's default; a value equal to it is left out of the URL.
    options : tuple, dict or callable, optional
        The allowed values (or a function returning them, for options known only when the
        page runs).  A dict maps each value's short text in the URL to the widget's value
        (a radio whose options are long labels: ``{"root": "the root's (counting)"}``).
    doc : str, optional
        What the parameter sets, for the list in docs/deploy.md (defaults to the key).
    low, high : float, optional
        The allowed range of a number (a value outside it is moved to the nearest bound).
    """

    key: str
    name: str
    kind: type
    default: object
    options: tuple | Callable[[], Iterable] | None = None
    low: float | None = None
    high: float | None = None
    doc: str = ""

    def codes(self) -> dict:
        """URL text -> widget value of every allowed value (empty: any value of the kind)."""
        options = self.options() if callable(self.options) else self.options
        if isinstance(options, dict):
            return {str(text): value for text, value in options.items()}
        return {format_item(value): value for value in options or ()}

    def allowed(self) -> tuple:
        """The allowed widget values (empty: any value of the kind)."""
        return tuple(self.codes().values())


def format_item(value) -> str:
    """One value (or list item) as URL text."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _shown(texts) -> str:
    texts = list(texts)
    more = f" and {len(texts) - 12} more" if len(texts) > 12 else ""
    return ", ".join(texts[:12]) + more


def format_value(param: LinkParam, value) -> str:
    """``value`` as its text in the query string."""
    if param.kind is list:
        return LIST_SEPARATOR.join(_code(param, item) for item in value or ())
    if param.kind is bool:
        return "1" if value else "0"
    if param.kind is float:
        return repr(float(value))
    return _code(param, value)


def _code(param: LinkParam, value) -> str:
    """The URL text of one allowed value (its short code when ``options`` is a dict)."""
    options = param.options() if callable(param.options) else param.options
    if isinstance(options, dict):
        for text, option in options.items():
            if option == value:
                return str(text)
    return format_item(value)


def parse_value(param: LinkParam, text: str):
    """``(value, problem)``: the value ``text`` stands for, and why it was not used as
    written (``None`` when it was).  Never raises; a bad text gives the default."""
    text = str(text).strip()
    if param.kind is list:
        return _parse_list(param, text)
    options = param.options() if callable(param.options) else param.options
    if isinstance(options, dict):  # short codes for the widget's values
        codes = param.codes()
        if text not in codes:
            return param.default, f"is not one of {_shown(codes)}"
        return codes[text], None
    if param.kind is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE, None
        return param.default, "is not 1 or 0"
    if param.kind in (int, float):
        if param.kind is int and _INTEGER.fullmatch(text):
            if len(text.lstrip("+-").lstrip("0")) > _MAX_DIGITS:  # beyond every bound
                bound = param.low if text.startswith("-") else param.high
                if bound is None:
                    return param.default, "is too large"
                value = -(10**_MAX_DIGITS) if text.startswith("-") else 10**_MAX_DIGITS
            else:
                value = int(text)
        elif param.kind is float:
            try:
                value = float(text)
            except ValueError:
                return param.default, "is not a number"
            if not math.isfinite(value):
                return param.default, "is not a finite number"
        else:
            return param.default, "is not a whole number"
        if param.low is not None and value < param.low:
            return param.kind(param.low), f"is below the least allowed value {param.low:g}"
        if param.high is not None and value > param.high:
            return param.kind(param.high), f"is above the greatest allowed value {param.high:g}"
        codes = param.codes()
        if codes and value not in codes.values():
            return param.default, f"is not one of {_shown(codes)}"
        return value, None
    codes = param.codes()
    if codes:
        if text not in codes:
            return param.default, f"is not one of {_shown(codes)}"
        return codes[text], None
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT], f"is longer than {MAX_TEXT} characters (it is cut there)"
    return text, None


def _parse_list(param: LinkParam, text: str):
    """A comma-separated list: each item one of the options, repeats dropped; the bad items
    are named and left out (all bad: the default)."""
    codes = param.codes()
    items = [item.strip() for item in text.split(LIST_SEPARATOR) if item.strip()]
    bad = list(dict.fromkeys(item for item in items if item not in codes))
    good = list(dict.fromkeys(codes[item] for item in items if item in codes))
    if not bad:
        return good, None
    value = good if good else list(param.default)
    named = _shown(f"'{_cut(item)}'" for item in bad)
    word = "item" if len(bad) == 1 else "items"
    return value, f"has the {word} {named}, not among {_shown(codes)}"


#: Longest text of a link's value quoted in a warning (a longer one is cut there).
MAX_QUOTED = 80


def _cut(text: str) -> str:
    """``text`` as quoted in a warning: cut at :data:`MAX_QUOTED` characters, saying so."""
    text = str(text)
    if len(text) <= MAX_QUOTED:
        return text
    return f"{text[:MAX_QUOTED]}... ({len(text):,} characters)"


def warn_param(name: str, text: str, problem: str, used: str | None) -> None:
    """A visible warning naming the parameter, its bad value and the value used instead
    (``used`` is ``None`` when the parameter is ignored)."""
    from pages._shared import md

    if used is None:
        instead = "it is ignored"
    else:
        instead = f"{md(_cut(used)) if used else 'nothing'} is used instead"
    message = (
        f"**Link parameter {md(_cut(name))}:** the value '{md(_cut(text))}' {md(problem)}; "
        f"{instead}."
    )
    _show(message)
    kept = _kept()
    if message not in [m for _, m in kept["messages"]]:
        kept["messages"].append((st.session_state.get(_RUN, 0), message))


#: Names people try for a sidebar setting (``?dataset=iris``): the name it has.
ALIASES = {"dataset": "ds", "data": "ds", "y": "target", "random_state": "seed"}


def unknown_message(name: str, text: str, names) -> str:
    """The warning for a link parameter ``name`` (value ``text``) that is not one of ``names`` (the page's
    and the sidebar's): the nearest names (:func:`difflib.get_close_matches`, also on the
    words of a name such as ``max_depth``), then every name the page takes."""
    import difflib

    from pages._shared import md

    names = sorted(names)
    words = [name.lower(), *(w for w in re.split(r"[_\W]+", name.lower()) if len(w) >= 4)]
    near = [ALIASES[name.lower()]] if ALIASES.get(name.lower()) in names else []
    for word in words:
        for match in difflib.get_close_matches(word, names, n=3, cutoff=0.75):
            if match not in near:
                near.append(match)
    hint = f" (did you mean {', '.join(f'`{m}`' for m in near[:3])}?)" if near else ""
    return (
        f"**Link parameter {md(_cut(name))}** (value '{md(_cut(text))}'): this page has no "
        f"parameter of that name{hint}; it is ignored. The page's link parameters: {', '.join(f'`{n}`' for n in names)}."
    )


def warn_unknown(name: str, text: str, names) -> None:
    """A visible warning for a link parameter of a name the page does not take."""
    message = unknown_message(name, text, names)
    _show(message)
    kept = _kept()
    if message not in [m for _, m in kept["messages"]]:
        kept["messages"].append((st.session_state.get(_RUN, 0), message))


#: Session-state keys: the link's warnings of this run waiting for the page's title, and
#: the run in which the page drew its title.
_PENDING = "_link_pending"
_TITLED = "_link_titled_run"


def _show(message: str) -> None:
    """Draw a link warning under the page's title: at once when the title is drawn in this
    run, else kept until :func:`page_title` draws it (the sidebar and ``apply_link`` run
    before the page's title)."""
    if st.session_state.get(_TITLED) == st.session_state.get(_RUN, 0):
        st.warning(message)
    else:
        st.session_state.setdefault(_PENDING, []).append(message)


def page_title(title: str) -> None:
    """The page's title, then the link's warnings of this run (every page's first line)."""
    st.title(title)
    st.session_state[_TITLED] = st.session_state.get(_RUN, 0)
    for message in st.session_state.pop(_PENDING, []):
        st.warning(message)


def _kept() -> dict:
    """The link's warnings of the landing page: ``messages`` (run number, text) and
    ``values`` (widget key -> the value the link's fix gave it)."""
    return st.session_state.setdefault(_KEPT, {"messages": [], "values": {}})


def watch_link_value(key: str, value) -> None:
    """The link's value for widget ``key`` was replaced by ``value`` (and warned about):
    its warnings are shown again only while the widget still holds ``value``."""
    _kept()["values"][key] = value


def show_link_warnings(page: str) -> None:
    """Show the link's warnings of earlier runs again (under the page's title): a
    page that reruns by itself (a job it starts on arrival, its live view) would otherwise
    wipe them before they are read.  They are shown while the session stays on the page
    its link opened and every widget whose value a warning replaced still holds that
    value; a change of one of them, or a switch to another page, ends them."""
    kept = st.session_state.get(_KEPT)
    if kept is None:
        return
    unchanged = all(
        st.session_state.get(key, value) == value for key, value in kept["values"].items()
    )
    if not (st.session_state.get(_ON_LANDING) and page == st.session_state.get(_LANDING)):
        unchanged = False
    if not unchanged:
        del st.session_state[_KEPT]
        return
    now = st.session_state.get(_RUN, 0)
    for run, message in kept["messages"]:
        if run < now:
            _show(message)


def read_param(param: LinkParam, *, force: bool = False) -> bool:
    """Set the widget of ``param`` from the URL, warning about a bad value; True when the
    URL had it.  Only when the widget has no value yet, unless ``force``."""
    text = st.query_params.get(param.name)
    if text is None or (param.key in st.session_state and not force):
        return False
    value, problem = parse_value(param, text)
    if problem is not None:
        used = "the page's default" if value is None else format_value(param, value)
        warn_param(param.name, text, problem, used)
        if value is not None:
            watch_link_value(param.key, value)
    if value is None:  # a default the page works out (the dataset's first test row...)
        st.session_state.pop(param.key, None)
        return False
    st.session_state[param.key] = value
    return True


def note_page(page: str) -> None:
    """Record the page shown in this run (app.py, before the sidebar): while the session
    is still on the page its link opened, an unknown parameter is the link's and is warned
    about; after a switch to another page, the names of the page left behind that are
    still in the URL are dropped without a word."""
    landing = st.session_state.setdefault(_LANDING, page)
    on_landing = st.session_state.get(_ON_LANDING, True) and page == landing
    st.session_state[_ON_LANDING] = on_landing
    st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1
    st.session_state.pop(_PENDING, None)  # a run that stopped before its title drew them


def apply_link(page: str, params: Iterable[LinkParam]) -> dict:
    """On ``page``'s first run in this session, set its widgets from the URL.

    A name of the URL that is not a parameter of the page (nor the sidebar's, nor
    ``run``) is dropped; it is named in a warning when the page is the one the session's
    link opened (:func:`note_page`), not after a switch from another page.

    Parameters
    ----------
    page : str
        Names the page (the session remembers that its link was read).
    params : iterable of LinkParam
        The page's widgets in the URL.

    Returns
    -------
    dict
        The widget values set from the URL (key -> value); empty after the first run.
    """
    params = tuple(params)
    if st.session_state.get(_READ + page):
        return {}
    st.session_state[_READ + page] = True
    known = RESERVED_NAMES | SIDEBAR_NAMES | {p.name for p in params}
    opened_here = st.session_state.get(_ON_LANDING, True)
    for name, text in list(st.query_params.to_dict().items()):
        if name not in known:
            if opened_here:  # else another page's setting, left in the URL by the switch
                warn_unknown(name, text, known - RESERVED_NAMES)
            st.query_params.pop(name, None)
    applied = {}
    for param in params:
        if read_param(param, force=True):
            applied[param.key] = st.session_state[param.key]
    return applied


def _same(param: LinkParam, value, default) -> bool:
    if param.kind is list:
        return isinstance(value, list | tuple) and list(value) == list(default or ())
    return value == default


def mirror_link(params: Iterable[LinkParam]) -> None:
    """Put the widgets' current values in the URL; a default value is left out."""
    for param in params:
        value = st.session_state.get(param.key)
        same = _same(param, value, param.default)
        text = None if value is None or same else format_value(param, value)
        if text is None:
            st.query_params.pop(param.name, None)
        elif st.query_params.get(param.name) != text:
            st.query_params[param.name] = text
