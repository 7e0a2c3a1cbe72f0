"""The look every chart shares, for figures built as plain data (Plotly's JSON figure format).

A figure is ``{"data": [...traces], "layout": {...}}``; the page's driver hands it to ``Plotly.react``
as it is.  Building plain dictionaries is about a hundred times faster than going through
``plotly.graph_objects`` (measured by ``benchmarks/bench_figures.py``), and the JSON is the same.
"""

from __future__ import annotations

from typing import Any

Figure = dict[str, Any]
Trace = dict[str, Any]

COLORS = {
    "ink": "#1c2230",
    "muted": "#5a6375",
    "grid": "#e3e7ef",
    "accent": "#2f5fd0",
    "band": "rgba(47, 95, 208, 0.15)",
    "break_even": "#c0392b",
    "good": "#2e8b57",
    "bad": "#c0392b",
    "best": "#f0a500",
    "purple": "#8e44ad",
    "unfit": "rgba(90, 99, 117, 0.12)",
    "reference": "rgba(90, 99, 117, 0.35)",
}


def axis(title: str, **extra: Any) -> dict[str, Any]:
    """An axis with its title kept clear of the tick labels and inside the chart on a phone."""
    return {
        "title": {"text": title, "standoff": 8},
        "automargin": True,
        "gridcolor": COLORS["grid"],
        "zeroline": False,
        **extra,
    }


def figure(
    data: list[Trace],
    x_title: str,
    y_title: str,
    x: dict[str, Any] | None = None,
    y: dict[str, Any] | None = None,
    **layout: Any,
) -> Figure:
    """A figure whose legend sits above the plot area, clear of both axis titles."""
    return {
        "data": data,
        "layout": {
            "margin": {"l": 8, "r": 8, "t": 8, "b": 8},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
            "font": {"family": "system-ui, sans-serif", "size": 13, "color": COLORS["ink"]},
            "legend": {"orientation": "h", "x": 0, "y": 1, "xanchor": "left", "yanchor": "bottom"},
            "hovermode": "closest",
            "xaxis": axis(x_title, **(x or {})),
            "yaxis": axis(y_title, **(y or {})),
            **layout,
        },
    }


def line(name: str, x: list[Any], y: list[Any], **style: Any) -> Trace:
    return {"type": "scatter", "name": name, "x": x, "y": y, "mode": "lines", **style}


def marked(
    name: str, x: list[Any], y: list[Any], hover: str, symbol: str = "star", size: int = 16, **style: Any
) -> Trace:
    """Points outlined in ink over a curve: the best choice (a star in the best colour) or where something turns."""
    color = style.pop("color", COLORS["best"])
    edge = {"color": COLORS["ink"], "width": 1}
    marker = {"size": size, "symbol": symbol, "color": color, "line": edge}
    return line(name, x, y, mode="markers", marker=marker, hovertemplate=hover, **style)


def break_even(low: float, high: float, name: str = "break-even", width: float = 2, **style: Any) -> Trace:
    """The dashed line at speedup 1 from ``low`` to ``high`` on the x axis: below it speculation costs time."""
    dash = {"color": COLORS["break_even"], "dash": "dash", "width": width}
    return line(name, [low, high], [1, 1], line=dash, hoverinfo="skip", **style)
