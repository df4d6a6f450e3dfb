"""PNG and SVG images of plotly figures (issue 16 point 4), rendered by plotly's ``kaleido``.

kaleido 1.x drives a headless Chrome through ``choreographer``; TreeLab points it at
Debian's Chromium: the browser is ``$BROWSER_PATH`` (choreographer's variable) when set,
else ``/usr/bin/chromium`` when it exists, else whatever kaleido finds on ``PATH``.
MathJax is off (kaleido would fetch it from a CDN), so rendering needs no network.
Each image of :func:`figure_image` starts its own browser (about 1-3 s);
:func:`figures_zip` renders many figures in one browser session (a page's "Download figures"
buttons).  :data:`MAX_CONCURRENT` renders run at once, the others wait.

The tree figure is readable at 200+ nodes when it is drawn with labels and sized by
:func:`tree_image_size` (one label width per leaf, one row height per level)::

    width, height = tree_image_size(tree)
    fig = tree_figure(tree, show_labels=True, height=height, width=width)
    png = figure_png(fig, width=width, height=height)
"""

from __future__ import annotations

import io
import os
import threading
import time
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Debian's Chromium (``apt-get install chromium``).
DEBIAN_CHROMIUM = "/usr/bin/chromium"
#: choreographer's variable naming the browser to drive.
BROWSER_ENV = "BROWSER_PATH"
#: Image size when the figure sets none (pixels).
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1200, 700
#: Largest side of an image (Chromium's canvas limit is 16384 px; pixels = size x scale).
MAX_SIDE = 16000
#: Renders at once (each is a Chromium process).
MAX_CONCURRENT = 2
#: Seconds one render may take.
TIMEOUT = 120.0
#: kaleido's own timeout (starting the browser, a render); TreeLab's deadlines are above.
BROWSER_TIMEOUT = 120.0
#: Seconds allowed for closing the browser after a cancelled render.
BROWSER_CLOSE_WAIT = 30.0
FORMATS = ("png", "svg")

_slots = threading.BoundedSemaphore(MAX_CONCURRENT)


class ImageExportError(RuntimeError):
    """The image could not be rendered; the message says why (no browser, timeout...)."""


def browser_path() -> str | None:
    """The browser kaleido will drive: ``$BROWSER_PATH``, else Debian's Chromium if
    installed, else ``None`` (kaleido then searches ``PATH``)."""
    if os.environ.get(BROWSER_ENV):
        return os.environ[BROWSER_ENV]
    if os.path.exists(DEBIAN_CHROMIUM):
        return DEBIAN_CHROMIUM
    return None


def available() -> bool:
    """Whether a browser to render images is installed (the pages disable their image
    downloads, with a note, when not)."""
    import shutil

    path = browser_path()
    if path is not None:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    return any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))


def _size(fig, width, height) -> tuple[int, int]:
    layout = fig.layout
    width = int(width or layout.width or DEFAULT_WIDTH)
    height = int(height or layout.height or DEFAULT_HEIGHT)
    if not (16 <= width <= MAX_SIDE and 16 <= height <= MAX_SIDE):
        raise ValueError(
            f"image size {width} x {height} px is outside 16..{MAX_SIDE} px per side; "
            "collapse part of the tree or choose a smaller size"
        )
    return width, height


def figure_image(
    fig, format: str = "png", *, width: int | None = None, height: int | None = None, scale=None
) -> bytes:
    """The figure as PNG or SVG bytes.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    format : {'png', 'svg'}
    width, height : int, optional
        Pixels (CSS pixels of the layout); default the figure's own size, else 1200 x 700.
    scale : float, optional
        PNG pixel density; default 2 (sharp on slides) while the PNG stays under
        8000 px per side, else 1.  Ignored for SVG.

    Returns
    -------
    bytes
        PNG (``\\x89PNG`` signature) or SVG (``<svg ...>`` text, UTF-8) of ``width x
        height`` (times ``scale`` for PNG).  Sliders and buttons are drawn in their current
        state; animation frames are not part of an image.

    Raises
    ------
    ValueError
        Unknown format or a size outside 16..16000 px.
    ImageExportError
        No browser (install Debian's ``chromium`` or set ``BROWSER_PATH``), or the
        render failed or timed out.
    """
    import kaleido

    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    width, height = _size(fig, width, height)
    if scale is None:
        scale = 2 if format == "png" and max(width, height) * 2 <= 8000 else 1
    opts = {"format": format, "width": width, "height": height, "scale": float(scale)}
    with _slots:
        try:
            data = kaleido.calc_fig_sync(fig, opts=opts, kopts=_kaleido_options())
        except Exception as exc:  # choreographer / kaleido errors have many types
            raise _explain(exc) from exc
    if not isinstance(data, bytes | bytearray) or not data:
        raise ImageExportError("the renderer returned no image")
    return bytes(data)


def _kaleido_options() -> dict[str, Any]:
    kopts: dict[str, Any] = {"mathjax": False, "timeout": BROWSER_TIMEOUT}
    path = browser_path()
    if path is not None:
        kopts["path"] = path
    return kopts


def _explain(exc: Exception) -> ImageExportError:
    name = type(exc).__name__
    if "NotFound" in name or "not found" in str(exc).lower():
        return ImageExportError(
            "no browser to render images: install Debian's chromium "
            f"(apt-get install chromium) or set {BROWSER_ENV} to a Chrome / Chromium "
            f"executable ({exc})"
        )
    return ImageExportError(f"the image could not be rendered: {name}: {exc}")


def _render_many(figures: Sequence, format: str) -> list[bytes | str]:
    """Render ``figures`` in one browser session: per figure its bytes, or a sentence
    saying why it could not be rendered.  Raises ImageExportError when the browser does
    not start."""
    import asyncio

    import kaleido

    sizes: list[tuple[int, int] | str] = []
    for fig in figures:
        try:
            sizes.append(_size(fig, None, None))
        except ValueError as exc:
            sizes.append(str(exc))

    async def render() -> list[bytes | str]:
        out: list[bytes | str] = []
        async with kaleido.Kaleido(n=1, **_kaleido_options()) as session:
            for fig, size in zip(figures, sizes, strict=True):
                if isinstance(size, str):
                    out.append(size)
                    continue
                width, height = size
                scale = 2 if format == "png" and max(width, height) * 2 <= 8000 else 1
                opts = {"format": format, "width": width, "height": height, "scale": scale}
                try:
                    data = await asyncio.wait_for(session.calc_fig(fig, opts=opts), TIMEOUT)
                except TimeoutError:
                    out.append(f"rendering took more than {TIMEOUT:.0f} s")
                except Exception as exc:  # one figure failing does not stop the others
                    out.append(str(_explain(exc)))
                else:
                    out.append(bytes(data) if data else "the renderer returned no image")
        return out

    # a thread of its own: the caller may already run an event loop (Streamlit, tests)
    result: dict[str, Any] = {}

    # The whole session has a deadline inside the event loop: when it passes, the render is
    # cancelled, which closes the browser and ends the thread (none is left behind).
    deadline = TIMEOUT * (1 + len(figures))

    def run() -> None:
        started = time.monotonic()
        try:
            result["images"] = asyncio.run(asyncio.wait_for(render(), deadline))
        except Exception as exc:  # the deadline, or the browser did not start
            if isinstance(exc, TimeoutError) or time.monotonic() - started >= deadline:
                # a browser still starting when the deadline cancels it reports that as a
                # failed start: the deadline is the cause either way
                result["error"] = ImageExportError(
                    f"rendering {len(figures)} figures took more than {deadline:.0f} s"
                )
            else:
                result["error"] = exc

    with _slots:
        worker = threading.Thread(target=run, name="figure-images", daemon=True)
        worker.start()
        # the loop's own deadline ends the thread; the extra wait covers closing the browser
        worker.join(deadline + BROWSER_CLOSE_WAIT)
    if worker.is_alive():
        raise ImageExportError(f"rendering {len(figures)} figures took too long")
    if "error" in result:
        error = result["error"]
        if isinstance(error, ImageExportError):
            raise error
        raise _explain(error) from error
    return result["images"]


def _zip_entry(name: str) -> zipfile.ZipInfo:
    """A zip member dated now, readable by everyone once unpacked (``writestr`` with a bare
    name leaves the file mode 0, which unzip turns into owner-only)."""
    import time

    entry = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o644 << 16
    return entry


def figures_zip(named_figures: Sequence[tuple[str, Any]], format: str = "png") -> bytes:
    """A zip of the figures as PNG or SVG images, rendered in one browser session.

    Parameters
    ----------
    named_figures : sequence of (name, plotly Figure)
        The file of each is ``<nn>-<name>.<format>`` (``nn``: its position, from 01; the
        name made safe for a file name).
    format : {'png', 'svg'}

    Returns
    -------
    bytes
        The zip.  A figure that cannot be rendered (too large, a render error) is left
        out and ``problems.txt`` in the zip says which and why.

    Raises
    ------
    ValueError
        Unknown format, or no figure.
    ImageExportError
        No browser, or the browser did not start.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if not named_figures:
        raise ValueError("there is no figure to render")
    images = _render_many([fig for _, fig in named_figures], format)
    buffer = io.BytesIO()
    problems = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for i, ((name, _), image) in enumerate(zip(named_figures, images, strict=True)):
            slug = "".join(c.lower() if c.isalnum() else "-" for c in str(name))
            slug = "-".join(part for part in slug.split("-") if part)[:60] or "figure"
            file_name = f"{i + 1:02d}-{slug}.{format}"
            if isinstance(image, str):
                problems.append(f"{file_name}: {image}")
            else:
                archive.writestr(_zip_entry(file_name), image)
        if problems:
            text = "Not rendered:\n" + "\n".join(problems) + "\n"
            archive.writestr(_zip_entry("problems.txt"), text)
    return buffer.getvalue()


def figure_png(fig, *, width: int | None = None, height: int | None = None, scale=None) -> bytes:
    """PNG bytes of ``fig`` (see :func:`figure_image`)."""
    return figure_image(fig, "png", width=width, height=height, scale=scale)


def figure_svg(fig, *, width: int | None = None, height: int | None = None) -> bytes:
    """SVG bytes (UTF-8 text) of ``fig`` (see :func:`figure_image`)."""
    return figure_image(fig, "svg", width=width, height=height)


def tree_image_size(tree, *, feature_names=None, collapse_depth: int | None = None):
    """``(width, height)`` in pixels for an image of ``tree_figure(tree, show_labels=True)``
    in which no two labels overlap.

    The tree figure puts its leaves one x unit apart and its levels one y unit apart;
    a leaf's label (class or mean) needs about 60 px, a split's rule (``feature <=
    threshold``) needs half its text width per unit (two splits on one level are at least
    two leaves apart).  Height: 140 px per level plus the title and legend.  Both are
    bounded by :data:`MAX_SIDE` (a tree too wide for that should be drawn collapsed).

    ``tree``: a :class:`engine.tree.TreeArrays`; ``collapse_depth`` as in ``tree_figure``
    (levels below it are not drawn).
    """
    depth = tree.depth
    leaf = tree.children_left == -1
    if collapse_depth is None:
        terminal = int(leaf.sum())
        levels = int(depth.max())
    else:
        terminal = int(
            np.count_nonzero((leaf & (depth < collapse_depth)) | (depth == collapse_depth))
        )
        levels = int(min(depth.max(), collapse_depth))
    names = tree.feature_labels(None if feature_names is None else list(feature_names))
    used = {int(f) for f in tree.feature[~leaf]}
    longest = max((len(names[f]) for f in used), default=8) + len(" <= 0.0000")
    per_leaf = max(60, 6 * longest // 2 + 12)
    width = min(MAX_SIDE, max(900, 80 + per_leaf * terminal))
    height = min(MAX_SIDE, max(480, 220 + 140 * levels))
    return int(width), int(height)
