// Shared Plotly look; Plotly itself is served from the installed plotly package.

export const colors = {
  ink: "#1c2230",
  muted: "#5a6375",
  grid: "#e3e7ef",
  accent: "#2f5fd0",
  band: "rgba(47, 95, 208, 0.15)",
  breakEven: "#c0392b",
  good: "#2e8b57",
  bad: "#c0392b",
  best: "#f0a500",
  purple: "#8e44ad",
};

export const config = {
  displaylogo: false,
  responsive: true,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
};

export function layout(overrides = {}) {
  return {
    margin: { l: 56, r: 16, t: 36, b: 48 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "system-ui, sans-serif", size: 13, color: colors.ink },
    legend: { orientation: "h", x: 0, y: 1.02, xanchor: "left", yanchor: "bottom" },
    hovermode: "closest",
    ...overrides,
    xaxis: { gridcolor: colors.grid, zeroline: false, ...(overrides.xaxis || {}) },
    yaxis: { gridcolor: colors.grid, zeroline: false, ...(overrides.yaxis || {}) },
  };
}

export function draw(element, data, layoutOverrides = {}) {
  return window.Plotly.react(element, data, layout(layoutOverrides), config);
}

export function prefersReducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}
