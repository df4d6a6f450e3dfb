"""Shared plot style: colour-blind-safe palettes and layout defaults for every figure.

Okabe & Ito (2008) "Color Universal Design" palette for up to 8 categories, extended with
plotly's ``Safe`` qualitative palette (Carto, colour-blind safe) beyond that.
"""

from __future__ import annotations

import plotly.express as px

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
FONT_SIZE = 14
HIGHLIGHT = "#D55E00"
NEUTRAL = "#7f7f7f"


def palette(n: int) -> list[str]:
    """``n`` distinct colour-blind-safe colours (cycled when ``n`` exceeds 19)."""
    colours = list(OKABE_ITO) + [c for c in px.colors.qualitative.Safe if c not in OKABE_ITO]
    return [colours[i % len(colours)] for i in range(max(n, 0))]


def base_layout(title: str, **kw) -> dict:
    """Layout defaults: title, readable fonts, white template, legend on top."""
    layout = dict(
        title=dict(text=title, x=0.0, xanchor="left", y=0.98, yanchor="top"),
        template="plotly_white",
        font=dict(size=FONT_SIZE),
        margin=dict(l=60, r=20, t=100, b=60),
        legend=dict(
            orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0, traceorder="normal"
        ),
    )
    layout.update(kw)
    return layout
