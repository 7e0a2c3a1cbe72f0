"""Chart figures as plain data against the plotly package building the same figure.

The pages build their figures as plain Plotly JSON (app/web/pages/figures.py). This holds that choice
against `plotly.graph_objects.Figure(...).to_plotly_json()` on the same traces and layout, measured side by
side in one run: the project's time is the bound's numerator, so a ratio below 1 says plain data is faster.
Both must give the same JSON, which the benchmark checks before timing.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go

from app.web.pages.views.demo import curve_figure
from benchmarks.timing import best_time

P, K, C = 0.75, 6, 0.15


def plain() -> dict[str, object]:
    return curve_figure(P, K, C, 4, 1.91)


def with_plotly() -> dict[str, object]:
    figure = plain()
    built = go.Figure(data=figure["data"], layout=figure["layout"])
    return built.to_plotly_json()  # type: ignore[no-any-return]


def main() -> None:
    plain_json = json.loads(json.dumps(plain()))
    plotly_json = json.loads(json.dumps(with_plotly(), default=str))
    assert [trace["name"] for trace in plain_json["data"]] == [trace["name"] for trace in plotly_json["data"]]
    project = best_time(plain, repeats=50)
    bound = best_time(with_plotly, repeats=20)
    print(f"curve figure: plain data {project * 1e6:.0f} us, plotly.graph_objects {bound * 1e6:.0f} us")
    print(f"RATIO figure_plain_vs_plotly {project:.6f} {bound:.6f} {project / bound:.3f}")


if __name__ == "__main__":
    main()
