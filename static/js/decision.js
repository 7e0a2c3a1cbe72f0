// From serving metrics to a decision: calibration form, draft sources and chain-vs-tree charts.

import { apiUrl, latestJSON } from "./api.js";
import { colors, draw } from "./plot.js";
import { readChoice, readNumber, readParams, writeState } from "./state.js";

const REGIMES = ["memory-bound", "linear", "compute-bound", "roofline"];
const MODES = ["rate", "length", "metrics"];
const TREE_WIDTHS = "2,4";
const DEFAULT_TREE_ACCEPTANCE = "0.6,0.2,0.1,0.05";
const EXAMPLE = { k: 5, drafts: 20000, seed: 7 };
const DEBOUNCE_MS = 150;
const FAMILY_COLORS = [colors.muted, colors.accent, "#6c8ee0", colors.good, "#7fbf9a", colors.best];

// Legend below the axis title, clear of it.
const SMALL_CHART = { legend: { orientation: "h", y: -0.3, yanchor: "top", x: 0 }, margin: { l: 56, r: 16, t: 16, b: 40 } };

const byId = (id) => document.getElementById(id);
const fmt = (value, digits = 2) => (value === null || value === undefined ? "–" : Number(value).toFixed(digits));
let mode = "metrics";
let sourceEdits = {};
let sourceOrder = [];

// ---------------------------------------------------------------------------
// State

function debounce(action) {
  let timer = null;
  return () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(action, DEBOUNCE_MS);
  };
}

function parseEdits(text) {
  const edits = {};
  for (const item of (text || "").split(",")) {
    const [id, p, c] = item.split(":");
    if (id && p !== undefined && c !== undefined && Number.isFinite(Number(p)) && Number.isFinite(Number(c))) {
      edits[id.trim()] = [Number(p), Number(c)];
    }
  }
  return edits;
}

function encodeEdits() {
  return Object.entries(sourceEdits).map(([id, [p, c]]) => `${id}:${p}:${c}`).join(",");
}

function restoreState() {
  byId("dec-c").value = readNumber("dec_c", 0.15, 0, 10);
  byId("dec-regime").value = readChoice("dec_regime", REGIMES, "memory-bound");
  byId("dec-beta").value = readNumber("dec_beta", 0.1, 0, 1);
  byId("dec-batch").value = Math.round(readNumber("dec_batch", 1, 1, 1024));
  byId("dec-kmax").value = Math.round(readNumber("dec_kmax", 16, 1, 64));
  mode = readChoice("cal_mode", MODES, "metrics");
  byId(`cal-mode-${mode}`).checked = true;
  byId("cal-rate").value = readNumber("cal_rate", 0.55, 0, 1);
  byId("cal-length").value = readNumber("cal_length", 3.2, 1, 65);
  byId("cal-k").value = Math.round(readNumber("cal_k", 5, 1, 64));
  const treeAcceptance = readParams().get("tree_p");
  byId("tree-acceptance").value = treeAcceptance && /^[0-9.,\s]+$/.test(treeAcceptance) ? treeAcceptance : DEFAULT_TREE_ACCEPTANCE;
  byId("tree-budget").value = Math.round(readNumber("tree_budget", 64, 1, 256));
  byId("tree-budget-value").textContent = byId("tree-budget").value;
  sourceEdits = parseEdits(readParams().get("src_edit"));
}

function costParams() {
  const regime = byId("dec-regime").value;
  const params = { c: byId("dec-c").value, regime, k_max: byId("dec-kmax").value };
  if (regime === "linear") params.beta = byId("dec-beta").value;
  if (regime === "roofline") params.batch = byId("dec-batch").value;
  return params;
}

function saveState() {
  const regime = byId("dec-regime").value;
  writeState({
    dec_c: byId("dec-c").value,
    dec_regime: regime === "memory-bound" ? null : regime,
    dec_beta: regime === "linear" ? byId("dec-beta").value : null,
    dec_batch: regime === "roofline" ? byId("dec-batch").value : null,
    dec_kmax: byId("dec-kmax").value,
    cal_mode: mode,
    cal_rate: mode === "rate" ? byId("cal-rate").value : null,
    cal_length: mode === "length" ? byId("cal-length").value : null,
    cal_k: mode === "metrics" ? null : byId("cal-k").value,
    tree_p: byId("tree-acceptance").value,
    tree_budget: byId("tree-budget").value,
    src_edit: encodeEdits() || null,
  });
}

function showFields() {
  const regime = byId("dec-regime").value;
  document.querySelectorAll("#decision-cost [data-regime]").forEach((field) => {
    field.hidden = field.dataset.regime !== regime;
  });
  document.querySelectorAll("#calibration-form [data-mode]").forEach((field) => {
    field.hidden = !field.dataset.mode.split(" ").includes(mode);
  });
}

function showError(id, error) {
  const element = byId(id);
  if (error) {
    element.textContent = error.message || String(error);
    element.hidden = false;
  } else {
    element.textContent = "";
    element.hidden = true;
  }
}

function markReady(element) {
  element.dataset.ready = "1";
  element.dataset.renders = String(Number(element.dataset.renders || 0) + 1);
}

// ---------------------------------------------------------------------------
// 1. Calibration

async function loadExample() {
  const p = Math.min(Math.max(Number(byId("cal-example-p").value) || 0.8, 0), 1);
  const response = await fetch(apiUrl("/api/v1/calibrate/example-metrics", { p, ...EXAMPLE }));
  byId("cal-metrics").value = await response.text();
}

async function calibrate() {
  saveState();
  const params = costParams();
  let body;
  try {
    if (mode === "rate") {
      body = await latestJSON("calibration", "/api/v1/calibrate/rate", { ...params, rate: byId("cal-rate").value, k: byId("cal-k").value });
    } else if (mode === "length") {
      body = await latestJSON("calibration", "/api/v1/calibrate/length", { ...params, length: byId("cal-length").value, k: byId("cal-k").value });
    } else {
      const metrics = byId("cal-metrics").value;
      const baseline = byId("cal-baseline").value;
      const init = baseline.trim()
        ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ metrics, baseline }) }
        : { method: "POST", headers: { "content-type": "text/plain; charset=utf-8" }, body: metrics };
      body = await latestJSON("calibration", "/api/v1/calibrate/metrics", params, init);
    }
  } catch (error) {
    showError("calibration-error", error);
    return;
  }
  if (body === null) return;
  showError("calibration-error", null);
  renderCalibration(body);
}

function verdictOf(result) {
  const departure = result.departure;
  if (departure === null) {
    return result.source === "exposition" || result.source === "counters"
      ? ["No per-position counters: independence from token to token cannot be checked.", ""]
      : ["A single rate or length cannot test independence: the i.i.d. model is assumed.", ""];
  }
  const gap = `largest gap between conditional acceptance and p: ${fmt(departure.max_conditional_deviation, 3)}`;
  if (departure.consistent_with_iid === null) return [`One position only: nothing to test (${gap}).`, ""];
  const test = `χ² = ${fmt(departure.chi_square, 1)} on ${departure.degrees_of_freedom} df, p-value ${departure.p_value < 1e-4 ? departure.p_value.toExponential(1) : fmt(departure.p_value, 3)}`;
  return departure.consistent_with_iid
    ? [`Acceptance looks i.i.d. (${test}; ${gap}).`, "consistent"]
    : [`Acceptance is not i.i.d. (${test}; ${gap}): predictions for other k are approximate.`, "departs"];
}

function renderCalibration(result) {
  byId("cal-p").textContent = fmt(result.acceptance, 3);
  byId("cal-best-k").textContent = result.best_k ? String(result.best_k) : "off";
  byId("cal-best-speedup").textContent = `${fmt(result.best_speedup)}×`;
  byId("cal-observed").textContent = `${fmt(result.mean_acceptance_length)} / ${fmt(result.draft_acceptance_rate)}`;
  const [verdict, kind] = verdictOf(result);
  const verdictElement = byId("cal-iid");
  verdictElement.textContent = `Measured at k = ${result.k}. ${verdict}`;
  verdictElement.className = `verdict ${kind}`;

  const table = byId("cal-positions");
  const rows = result.positions.map((row) => {
    const cells = [String(row.position), fmt(row.rate, 4), fmt(row.iid_rate, 4), fmt(row.conditional, 4)];
    const tr = document.createElement("tr");
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    return tr;
  });
  table.querySelector("tbody").replaceChildren(...rows);
  table.hidden = rows.length === 0;
  byId("cal-notes").replaceChildren(...result.notes.map((note) => Object.assign(document.createElement("li"), { textContent: note })));
  if (mode !== "metrics") {
    byId("cal-json").href = apiUrl(`/api/v1/calibrate/${mode}`, {
      ...costParams(), [mode]: byId(`cal-${mode}`).value, k: byId("cal-k").value,
    });
    byId("cal-json").textContent = `/api/v1/calibrate/${mode}`;
  } else {
    byId("cal-json").href = "/api/v1/calibrate/example-metrics";
    byId("cal-json").textContent = "an example scrape";
  }
  drawCalibrationChart(result);
  drawPositionsChart(result);
}

function drawCalibrationChart(result) {
  const ks = result.predictions.map((row) => row.k);
  const element = byId("calibration-chart");
  const data = [
    {
      name: `speedup at p = ${fmt(result.acceptance, 3)}`, x: ks, y: result.predictions.map((row) => row.speedup),
      mode: "lines+markers", line: { color: colors.accent, width: 3 },
      hovertemplate: "k = %{x}<br>%{y:.2f}×<extra></extra>",
    },
    {
      name: "break-even", x: [ks[0], ks[ks.length - 1]], y: [1, 1], mode: "lines",
      line: { color: colors.breakEven, dash: "dash", width: 2 }, hoverinfo: "skip",
    },
    {
      name: `measured k = ${result.k}`, x: [result.k], y: [result.speedup_at_k], mode: "markers",
      marker: { size: 13, color: "rgba(0,0,0,0)", line: { color: colors.ink, width: 2.5 } },
      hovertemplate: "measured k = %{x}<br>%{y:.2f}× from the observed tokens per step<extra></extra>",
    },
    {
      name: result.best_k ? `recommended k = ${result.best_k}` : "recommended: do not speculate",
      x: [result.best_k], y: [result.best_speedup], mode: "markers",
      marker: { size: 16, symbol: "star", color: colors.best, line: { color: colors.ink, width: 1 } },
      hovertemplate: "k = %{x}<br>%{y:.2f}×<extra></extra>",
    },
  ];
  draw(element, data, {
    xaxis: { title: { text: "draft length k" }, dtick: ks.length > 20 ? 4 : 1 },
    yaxis: { title: { text: "speedup ×" }, rangemode: "tozero" },
    ...SMALL_CHART,
  }).then(() => markReady(element));
}

function drawPositionsChart(result) {
  const element = byId("positions-chart");
  const positions = result.positions.map((row) => row.position);
  const span = positions.length ? [0.7, positions[positions.length - 1] + 0.3] : [0.5, result.k + 0.5];
  const data = [
    {
      name: `i.i.d.: p = ${fmt(result.acceptance, 3)}`, x: span, y: [result.acceptance, result.acceptance],
      mode: "lines", line: { color: colors.muted, dash: "dot", width: 2 }, hoverinfo: "skip",
    },
  ];
  if (positions.length) {
    data.push({
      name: "accepted given the previous one was", x: positions, y: result.positions.map((row) => row.conditional),
      mode: "lines+markers", line: { color: colors.purple, width: 2.5 }, marker: { size: 9 },
      hovertemplate: "position %{x}<br>%{y:.3f}<extra></extra>",
    });
  }
  draw(element, data, {
    xaxis: { title: { text: "draft position" }, dtick: 1, range: span },
    yaxis: { title: { text: "acceptance" }, range: [0, 1.02] },
    ...SMALL_CHART,
    annotations: positions.length ? [] : [{
      text: "no per-position counters", x: 0.5, y: 0.5, xref: "paper", yref: "paper", showarrow: false,
      font: { color: colors.muted },
    }],
  }).then(() => markReady(element));
}

// ---------------------------------------------------------------------------
// 2. Draft sources

async function loadSources() {
  saveState();
  const params = costParams();
  delete params.c; // each source brings its own draft cost
  let body;
  try {
    body = await latestJSON("sources", "/api/v1/draft-sources", { ...params, overrides: encodeEdits() || null });
  } catch (error) {
    showError("sources-error", error);
    return;
  }
  if (body === null) return;
  showError("sources-error", null);
  byId("sources-json").href = apiUrl("/api/v1/draft-sources", { ...params, overrides: encodeEdits() || null });
  if (!sourceOrder.length) sourceOrder = body.sources.map((source) => source.id);
  const byKey = Object.fromEntries(body.sources.map((source) => [source.id, source]));
  renderSourcesTable(sourceOrder.map((id) => byKey[id]));
  renderCitations(sourceOrder.map((id) => byKey[id]), body.derivation);
  drawSourcesChart(sourceOrder.map((id) => byKey[id]));
}

function numberInput(source, field, label) {
  const input = document.createElement("input");
  Object.assign(input, { type: "number", min: "0", max: field === "acceptance" ? "1" : "10", step: "0.001" });
  input.id = `src-${source.id}-${field === "acceptance" ? "p" : "c"}`;
  input.setAttribute("aria-label", `${label} of ${source.name}`);
  return input;
}

function renderSourcesTable(sources) {
  const tbody = byId("sources-table").querySelector("tbody");
  for (const source of sources) {
    let row = tbody.querySelector(`tr[data-id="${source.id}"]`);
    if (!row) {
      row = document.createElement("tr");
      row.dataset.id = source.id;
      const cells = ["name", "tau", "speedup", "depth", "p", "c", "per-cost", "best-k", "best-speedup"].map((key) => {
        const cell = document.createElement(key === "name" ? "th" : "td");
        if (key === "name") cell.scope = "row";
        cell.dataset.key = key;
        return cell;
      });
      cells[4].append(numberInput(source, "acceptance", "Acceptance p"));
      cells[5].append(numberInput(source, "draft_cost", "Draft cost c"));
      row.append(...cells);
      tbody.append(row);
    }
    const set = (key, text) => { row.querySelector(`[data-key="${key}"]`).textContent = text; };
    set("name", source.name);
    set("tau", fmt(source.mean_accepted_tokens));
    set("speedup", `${fmt(source.measured_speedup)}×`);
    set("depth", source.tree_nodes ? `${source.reference_depth} (tree of ${source.tree_nodes})` : String(source.reference_depth));
    set("per-cost", source.accepted_per_draft_cost === null ? "free" : fmt(source.accepted_per_draft_cost));
    set("best-k", source.best_k ? String(source.best_k) : "off");
    set("best-speedup", `${fmt(source.best_speedup)}×`);
    for (const [suffix, value] of [["p", source.acceptance], ["c", source.draft_cost]]) {
      const input = byId(`src-${source.id}-${suffix}`);
      if (document.activeElement !== input) input.value = Number(value.toFixed(4));
    }
    row.classList.toggle("edited", source.edited);
  }
}

function renderCitations(sources, derivation) {
  byId("sources-citations").replaceChildren(...sources.map((source) => {
    const item = document.createElement("li");
    item.textContent = `${source.name}: ${source.method}. τ = ${source.mean_accepted_tokens} and speedup ${source.measured_speedup}× from ${source.measurement}. Depth: ${source.depth_source}.`;
    return item;
  }));
  byId("sources-derivation").textContent = derivation;
}

function drawSourcesChart(sources) {
  const element = byId("sources-chart");
  // The short name in brackets ("EAGLE-2", "PLD", ...) keeps the axis labels level.
  const names = sources.map((source) => (source.name.match(/\(([^)]+)\)$/) || [null, source.name])[1]);
  const data = [
    {
      type: "bar", name: "accepted drafts per unit of draft cost", x: names,
      y: sources.map((source) => source.accepted_per_draft_cost), marker: { color: colors.accent },
      hovertemplate: "%{y:.2f} accepted per unit of draft cost<extra></extra>",
    },
    {
      name: "best predicted speedup", x: names, y: sources.map((source) => source.best_speedup), yaxis: "y2",
      mode: "markers", marker: { symbol: "diamond", size: 13, color: colors.best, line: { color: colors.ink, width: 1 } },
      hovertemplate: "%{y:.2f}× at its best k<extra></extra>",
    },
  ];
  draw(element, data, {
    margin: { l: 56, r: 56, t: 16, b: 40 },
    yaxis: { title: { text: "accepted / unit draft cost" }, rangemode: "tozero" },
    yaxis2: { title: { text: "best speedup ×" }, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false, tickformat: ".1f" },
    legend: { orientation: "h", y: -0.12, yanchor: "top", x: 0 },
  }).then(() => markReady(element));
}

const reloadSources = debounce(loadSources);

// Delegated from the table: its rows may come from the server's first paint.
function onSourceEdit(event) {
  const row = event.target.closest("tr[data-id]");
  if (!row || !(event.target instanceof HTMLInputElement)) return;
  const id = row.dataset.id;
  const p = Number(byId(`src-${id}-p`).value);
  const c = Number(byId(`src-${id}-c`).value);
  if (byId(`src-${id}-p`).value === "" || byId(`src-${id}-c`).value === "") return;
  if (!(p >= 0 && p <= 1 && c >= 0 && c <= 10)) {
    showError("sources-error", new Error(`acceptance must be from 0 to 1 and draft cost from 0 to 10 for ${id}`));
    return;
  }
  sourceEdits[id] = [p, c];
  reloadSources();
}

// ---------------------------------------------------------------------------
// 3. Trees

async function loadTrees() {
  saveState();
  byId("tree-budget-value").textContent = byId("tree-budget").value;
  const params = { ...costParams(), acceptance: byId("tree-acceptance").value, budget: byId("tree-budget").value, widths: TREE_WIDTHS };
  delete params.k_max;
  let body;
  try {
    body = await latestJSON("trees", "/api/v1/trees", params);
  } catch (error) {
    showError("trees-error", error);
    return;
  }
  if (body === null) return;
  showError("trees-error", null);
  byId("trees-json").href = apiUrl("/api/v1/trees", params);
  renderTrees(body);
}

function renderTrees(result) {
  const bound = (value) => (value === null ? "unbounded" : fmt(value));
  byId("trees-summary").textContent =
    `Best: ${result.best_family} with ${result.best_budget} drafted tokens per step, ${fmt(result.best_speedup)}× `
    + `(optimal tree depth ${result.optimal_shape.depth}). A chain never yields more than ${bound(result.chain_bound)} tokens `
    + `per step, a binary tree ${bound(result.binary_tree_bound)}, any tree ${bound(result.full_bound)}.`;
  const budgets = result.families[0].values.map((_, index) => index);
  const tokens = result.families.map((family, index) => ({
    name: family.name, x: budgets, y: family.kind === "optimal" ? result.optimal_values : family.values, mode: "lines",
    line: { color: FAMILY_COLORS[index % FAMILY_COLORS.length], width: family.kind === "optimal" ? 3.5 : 2, dash: family.kind === "independent_sequences" ? "dot" : "solid" },
    hovertemplate: `${family.name}<br>n = %{x}: %{y:.3f} tokens<extra></extra>`,
  }));
  for (const [name, value, color] of [["chain bound 1/(1−P1)", result.chain_bound, colors.muted], ["binary bound 1/(1−P1−P2)", result.binary_tree_bound, colors.accent]]) {
    if (value !== null) {
      tokens.push({
        name, x: [0, budgets[budgets.length - 1]], y: [value, value], mode: "lines",
        line: { color, dash: "dash", width: 1.5 }, hovertemplate: `${name} = ${fmt(value, 3)}<extra></extra>`,
      });
    }
  }
  const treesChart = byId("trees-chart");
  draw(treesChart, tokens, {
    xaxis: { title: { text: "tokens verified per step (budget n)" } },
    yaxis: { title: { text: "expected tokens per step" }, rangemode: "tozero" },
    ...SMALL_CHART,
  }).then(() => markReady(treesChart));
  const speedups = result.families.map((family, index) => ({
    name: family.name, x: budgets, y: family.speedups, mode: "lines",
    line: { color: FAMILY_COLORS[index % FAMILY_COLORS.length], width: family.kind === "optimal" ? 3.5 : 2, dash: family.kind === "independent_sequences" ? "dot" : "solid" },
    hovertemplate: `${family.name}<br>n = %{x}: %{y:.2f}×<extra></extra>`,
  }));
  speedups.push({
    name: "break-even", x: [0, budgets[budgets.length - 1]], y: [1, 1], mode: "lines",
    line: { color: colors.breakEven, dash: "dash", width: 1.5 }, hoverinfo: "skip",
  });
  speedups.push({
    name: `best: ${result.best_family}, n = ${result.best_budget}`, x: [result.best_budget], y: [result.best_speedup],
    mode: "markers", marker: { size: 15, symbol: "star", color: colors.best, line: { color: colors.ink, width: 1 } },
    hovertemplate: "n = %{x}<br>%{y:.2f}×<extra></extra>",
  });
  const speedupChart = byId("trees-speedup-chart");
  draw(speedupChart, speedups, {
    xaxis: { title: { text: "tokens verified per step (budget n)" } },
    yaxis: { title: { text: "speedup ×" }, rangemode: "tozero" },
    ...SMALL_CHART,
  }).then(() => markReady(speedupChart));
}

// ---------------------------------------------------------------------------
// Wiring

function refreshAll() {
  calibrate();
  loadSources();
  loadTrees();
}

async function start() {
  restoreState();
  showFields();
  if (mode === "metrics" && !byId("cal-metrics").value.trim()) await loadExample();
  const refresh = debounce(refreshAll);
  byId("decision-cost").addEventListener("input", () => { showFields(); refresh(); });
  byId("decision-cost").addEventListener("change", () => { showFields(); refresh(); });
  byId("calibration-form").addEventListener("change", (event) => {
    if (event.target.name === "cal-mode") {
      mode = event.target.value;
      showFields();
      if (mode === "metrics" && !byId("cal-metrics").value.trim()) loadExample().then(calibrate);
      else calibrate();
    }
  });
  byId("calibration-form").addEventListener("submit", (event) => {
    event.preventDefault();
    calibrate();
  });
  byId("cal-example").addEventListener("click", () => loadExample().then(calibrate));
  const reloadTrees = debounce(loadTrees);
  byId("trees-form").addEventListener("input", reloadTrees);
  byId("trees-form").addEventListener("submit", (event) => { event.preventDefault(); loadTrees(); });
  byId("sources-reset").addEventListener("click", () => { sourceEdits = {}; loadSources(); });
  byId("sources-table").addEventListener("input", onSourceEdit);
  refreshAll();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
