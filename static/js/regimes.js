// When verification stops being free: presets, batch slider, speedup-vs-batch chart, schedule and two-regime table.
// Every control's value lives in the URL as rg_<API parameter name>; every number comes from the API.
// The server paints the same numbers first (page_context in app/routers/regimes.py, text as written here by the
// "Page text" helpers of app/regimes_report.py); tests/browser/test_regimes.py checks that both agree.

import { apiUrl, latestJSON } from "./api.js";
import { colors, draw } from "./plot.js";
import { readParams, writeState } from "./state.js";

const PREFIX = "rg_";
const BATCH_MAX = 1024;
const K_MAX = 12;
const TABLE_K_MAX = 8;
const DEBOUNCE_MS = 120;

const ACCELERATOR_FIELDS = [
  ["bandwidth_tb_s", "Bandwidth (TB/s)", 0.001],
  ["bf16_tflops", "Dense BF16 TFLOPS", 0.1],
  ["memory_gb", "Memory (GB)", 1],
];
const MODEL_FIELDS = [
  ["total_params_b", "Total parameters (B)", 0.01],
  ["active_params_b", "Active parameters (B)", 0.01],
  ["layers", "Layers", 1],
  ["query_heads", "Query heads", 1],
  ["kv_heads", "KV heads", 1],
  ["head_dim", "Head dim", 1],
  ["kv_tensors", "KV tensors (2 = K and V, 1 = latent)", 1],
  ["experts", "Experts (1 = dense)", 1],
  ["experts_per_token", "Experts per token", 1],
];
const FIELD_GROUPS = { hw: ACCELERATOR_FIELDS, model: MODEL_FIELDS, draft: MODEL_FIELDS };

// Plain controls: API name -> default (strings for selects, numbers for inputs).
const DEFAULTS = {
  hw: "h100-sxm", model: "dense-8b", draft: "dense-1b", weights: "bf16", kv_cache: "bf16",
  devices: 0, context: 1024, bandwidth_efficiency: 0.8, compute_efficiency: 0.6, overhead_us: 50,
  p: 0.8, k: 4, batch: 1,
  regime_a: "memory-bound", regime_b: "compute-bound", beta_a: 0.5, beta_b: 0.5, batch_a: 1, batch_b: 256, c: 0.15,
};
const SELECTS = ["hw", "model", "draft", "weights", "kv_cache", "regime_a", "regime_b"];
const NUMBERS = ["devices", "context", "bandwidth_efficiency", "compute_efficiency", "overhead_us",
  "beta_a", "beta_b", "batch_a", "batch_b", "c"];

const section = document.getElementById("regimes");
const byId = (name) => document.getElementById(`rg-${name}`);
const fmt2 = (value) => value.toFixed(2);
let presets = null;
let timer = null;

// ---------------------------------------------------------------- state

const batchFromSlider = (position) => Math.min(BATCH_MAX, Math.max(1, Math.round(2 ** (position / 10))));
const sliderFromBatch = (batch) => Math.round(10 * Math.log2(batch));

function presetOf(group, key) {
  const list = group === "hw" ? presets.accelerators : presets.models;
  return list.find((item) => item.key === key);
}

function readUrlValue(name) {
  const raw = readParams().get(PREFIX + name);
  return raw === null || raw.trim() === "" ? null : raw;
}

function fillSelect(name, options) {
  const select = byId(name);
  select.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
}

function fillFieldInputs(group) {
  const grid = document.querySelector(`#rg-${group}-fields .rg-field-grid`);
  const inputs = [];
  for (const [field, label, step] of FIELD_GROUPS[group]) {
    const id = `rg-${group}_${field}`;
    const wrapper = document.createElement("div");
    const labelElement = document.createElement("label");
    labelElement.htmlFor = id;
    labelElement.textContent = label;
    const input = document.createElement("input");
    input.type = "number";
    input.id = id;
    input.name = `${group}_${field}`;
    input.step = String(step);
    input.min = "0";
    input.dataset.group = group;
    input.dataset.field = field;
    wrapper.append(labelElement, input);
    inputs.push(wrapper);
  }
  grid.replaceChildren(...inputs);
}

function resetFieldInputs(group) {
  const preset = presetOf(group, byId(group).value);
  for (const [field] of FIELD_GROUPS[group]) {
    const input = byId(`${group}_${field}`);
    input.value = String(preset[field]);
    input.classList.remove("rg-edited");
  }
}

// API parameters for the current controls; preset fields only where they differ from the preset.
function currentParams() {
  const params = {};
  for (const name of [...SELECTS, ...NUMBERS]) params[name] = byId(name).value;
  for (const group of Object.keys(FIELD_GROUPS)) {
    const preset = presetOf(group, byId(group).value);
    for (const [field] of FIELD_GROUPS[group]) {
      const input = byId(`${group}_${field}`);
      const edited = input.value !== "" && Number(input.value) !== preset[field];
      input.classList.toggle("rg-edited", edited);
      if (edited) params[`${group}_${field}`] = input.value;
    }
  }
  params.p = byId("p").value;
  params.k = byId("k").value;
  params.batch = String(batchFromSlider(Number(byId("batch").value)));
  return params;
}

function saveState(params) {
  const values = {};
  for (const key of readParams().keys()) if (key.startsWith(PREFIX)) values[key] = null;
  for (const [name, value] of Object.entries(params)) {
    const fallback = DEFAULTS[name];
    const isDefault = fallback !== undefined && (typeof fallback === "number" ? Number(value) === fallback : value === fallback);
    values[PREFIX + name] = isDefault ? null : value;
  }
  writeState(values);
}

function restoreState() {
  for (const name of SELECTS) {
    const select = byId(name);
    const wanted = readUrlValue(name);
    const allowed = Array.from(select.options, (option) => option.value);
    select.value = allowed.includes(wanted) ? wanted : DEFAULTS[name];
  }
  for (const name of NUMBERS) {
    const wanted = readUrlValue(name);
    byId(name).value = wanted !== null && Number.isFinite(Number(wanted)) ? wanted : String(DEFAULTS[name]);
  }
  for (const group of Object.keys(FIELD_GROUPS)) {
    resetFieldInputs(group);
    for (const [field] of FIELD_GROUPS[group]) {
      const wanted = readUrlValue(`${group}_${field}`);
      if (wanted !== null && Number.isFinite(Number(wanted))) {
        byId(`${group}_${field}`).value = wanted;
        byId(`${group}-fields`).open = true;
      }
    }
  }
  const p = Number(readUrlValue("p"));
  byId("p").value = readUrlValue("p") !== null && p >= 0 && p <= 1 ? String(p) : String(DEFAULTS.p);
  const k = Number(readUrlValue("k"));
  byId("k").value = Number.isInteger(k) && k >= 1 && k <= 16 ? String(k) : String(DEFAULTS.k);
  const batch = Number(readUrlValue("batch"));
  byId("batch").value = String(sliderFromBatch(Number.isInteger(batch) && batch >= 1 && batch <= BATCH_MAX ? batch : 1));
}

// ---------------------------------------------------------------- rendering

function setText(name, text) {
  byId(name).textContent = text;
}

function showError(error) {
  const box = byId("error");
  if (error) {
    box.textContent = error.message;
    box.hidden = false;
  } else {
    box.textContent = "";
    box.hidden = true;
  }
}

function syncRegimeInputs() {
  for (const side of ["a", "b"]) {
    const regime = byId(`regime_${side}`).value;
    byId(`beta_${side}`).hidden = regime !== "linear";
    document.querySelector(`label[for="rg-beta_${side}"]`).hidden = regime !== "linear";
    byId(`batch_${side}`).hidden = regime !== "roofline";
    document.querySelector(`label[for="rg-batch_${side}"]`).hidden = regime !== "roofline";
  }
}

function renderReadouts(sweep) {
  const point = sweep.current;
  setText("p-value", fmt2(sweep.p));
  setText("k-value", String(sweep.k));
  setText("batch-value", String(sweep.batch));
  setText("speedup", `${fmt2(point.speedup)}×`);
  setText("best-k", point.best_k ? `${point.best_k} (${fmt2(point.best_speedup)}×)` : "off");
  setText("crossover", sweep.crossover_batch === null ? `pays to ${sweep.batch_max}` : String(sweep.crossover_batch));
  setText("best-crossover", sweep.best_crossover_batch === null ? `pays to ${sweep.batch_max}` : String(sweep.best_crossover_batch));
  setText("draft-cost", fmt2(point.draft_cost));
  setText("verify-cost", fmt2(point.verification_cost));
  setText("step", `${point.target_step_ms.toFixed(2)} ms plain, ${point.verify_step_ms.toFixed(2)} ms verifying`);
  setText("bound", point.verify_compute_bound ? "compute-bound" : "memory-bound");
  const capacity = sweep.setup.memory_capacity_gb;
  setText("memory", `${point.memory_needed_gb.toFixed(1)} / ${capacity.toFixed(0)} GB${point.fits ? "" : " (does not fit)"}`);
  const setup = sweep.setup;
  setText("devices-used", `${setup.devices} × ${setup.accelerator.name}${setup.devices_auto ? " (auto)" : ""}`);
}

function renderChart(sweep, references) {
  const element = document.getElementById("regimes-chart");
  const batches = sweep.batches;
  const at = (batch) => sweep.speedup[batches.indexOf(batch)];
  const data = [
    {
      name: `speedup at k = ${sweep.k}`, x: batches, y: sweep.speedup, mode: "lines",
      line: { color: colors.accent, width: 3 }, hovertemplate: "batch %{x}<br>%{y:.2f}×<extra></extra>",
    },
    {
      name: "best k at each batch", x: batches, y: sweep.best_speedup, mode: "lines",
      line: { color: colors.best, width: 2, dash: "dashdot" }, customdata: sweep.best_k,
      hovertemplate: "batch %{x}<br>best k = %{customdata}: %{y:.2f}×<extra></extra>",
    },
    {
      name: "break-even (S = 1)", x: [1, sweep.batch_max], y: [1, 1], mode: "lines",
      line: { color: colors.breakEven, dash: "dash", width: 2 }, hoverinfo: "skip",
    },
  ];
  for (const [index, reference] of references.entries()) {
    data.push({
      name: `${index === 0 ? "left" : "right"}: ${reference.label} ${fmt2(reference.speedup)}×`,
      x: [1, sweep.batch_max], y: [reference.speedup, reference.speedup], mode: "lines",
      line: { color: index === 0 ? colors.good : colors.purple, dash: "dot", width: 1.5 }, hoverinfo: "skip",
    });
  }
  if (sweep.crossover_batch !== null) {
    data.push({
      name: `crossover at batch ${sweep.crossover_batch}`, x: [sweep.crossover_batch], y: [at(sweep.crossover_batch)],
      mode: "markers", marker: { size: 13, symbol: "x", color: colors.bad, line: { color: colors.ink, width: 1 } },
      hovertemplate: "stops paying from batch %{x}<extra></extra>",
    });
  }
  data.push({
    name: `batch ${sweep.batch}`, x: [sweep.batch], y: [sweep.current.speedup], mode: "markers",
    marker: { size: 14, color: "rgba(0,0,0,0)", line: { color: colors.ink, width: 2.5 } },
    hovertemplate: "batch %{x}<br>%{y:.2f}×<extra></extra>",
  });
  const shapes = [];
  if (sweep.crossover_batch !== null) {
    shapes.push({
      type: "line", xref: "x", yref: "paper", x0: sweep.crossover_batch, x1: sweep.crossover_batch, y0: 0, y1: 1,
      line: { color: colors.bad, dash: "dot", width: 1.5 },
    });
  }
  if (sweep.max_batch_that_fits < sweep.batch_max) {
    shapes.push({
      type: "rect", xref: "x", yref: "paper", x0: Math.max(sweep.max_batch_that_fits, 1), x1: sweep.batch_max, y0: 0, y1: 1,
      fillcolor: "rgba(90, 99, 117, 0.12)", line: { width: 0 }, layer: "below",
    });
  }
  const ticks = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
  return draw(element, data, {
    shapes,
    margin: { l: 56, r: 16, t: 16, b: 112 },
    legend: { orientation: "h", y: -0.32, x: 0 },
    xaxis: {
      title: { text: "batch size B (log scale)" }, type: "log", range: [0, Math.log10(sweep.batch_max)],
      tickvals: ticks, ticktext: ticks.map(String),
    },
    yaxis: { title: { text: "speedup ×" }, rangemode: "tozero" },
  }).then(() => {
    element.dataset.ready = "1";
    element.dataset.key = `${sweep.setup.accelerator.key}|${sweep.setup.target.key}|${sweep.k}|${sweep.batch}`;
  });
}

function renderSchedule(schedule) {
  const rows = schedule.steps.map((step) => {
    const row = document.createElement("tr");
    const range = step.batch_to > step.batch_from ? `${step.batch_from}–${step.batch_to}` : String(step.batch_from);
    const cells = [range, step.k ? String(step.k) : "off", `${fmt2(step.speedup_at_from)}× → ${fmt2(step.speedup_at_to)}×`];
    for (const text of cells) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    row.classList.add(step.k ? "rg-on" : "rg-off");
    return row;
  });
  byId("schedule").tBodies[0].replaceChildren(...rows);
}

// Green above 1, red below, stronger the further from 1 (log scale, saturating at 3x / one third).
function cellColor(value) {
  const strength = Math.min(Math.abs(Math.log(value)) / Math.log(3), 1);
  const alpha = (0.12 + 0.55 * strength).toFixed(2);
  if (value > 1) return `rgba(46, 139, 87, ${alpha})`;
  if (value < 1) return `rgba(192, 57, 43, ${alpha})`;
  return "transparent";
}

function renderRegimeTable(tableElement, regime, grid, table) {
  tableElement.caption.textContent = `${regime.label}, c = ${regime.draft_cost.toFixed(3)}`;
  const head = document.createElement("tr");
  const corner = document.createElement("th");
  corner.scope = "col";
  corner.textContent = "p \\ k";
  head.append(corner);
  for (const k of table.k_values) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = String(k);
    head.append(th);
  }
  tableElement.tHead.replaceChildren(head);
  const highlight = table.highlight;
  const rows = table.p_values.map((p, rowIndex) => {
    const row = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = fmt2(p);
    row.append(th);
    grid[rowIndex].forEach((value, column) => {
      const cell = document.createElement("td");
      cell.textContent = fmt2(value);
      cell.style.backgroundColor = cellColor(value);
      cell.className = value > 1 ? "rg-win" : value < 1 ? "rg-loss" : "";
      if (highlight && highlight.p === p && highlight.k === table.k_values[column]) cell.classList.add("rg-highlight");
      row.append(cell);
    });
    return row;
  });
  tableElement.tBodies[0].replaceChildren(...rows);
}

function renderTable(table) {
  renderRegimeTable(byId("table-a"), table.regime_a, table.speedup_a, table);
  renderRegimeTable(byId("table-b"), table.regime_b, table.speedup_b, table);
  const highlight = table.highlight;
  setText(
    "table-summary",
    highlight
      ? `At p = ${fmt2(highlight.p)}, k = ${highlight.k}: a ${fmt2(highlight.speedup_a)}× win ${table.regime_a.name} turns into a ` +
        `${fmt2(highlight.speedup_b)}× loss ${table.regime_b.name}; ${table.win_to_loss_cells} cells flip from win to loss.`
      : "No cell wins on the left and loses on the right.",
  );
  byId("tables").dataset.ready = "1";
  byId("tables").dataset.key = `${table.regime_a.label}|${table.regime_b.label}`;
}

function setLinks(params, tableParams) {
  const schedule = { ...params, k_max: TABLE_K_MAX };
  delete schedule.k;
  delete schedule.batch;
  byId("schedule-csv").href = apiUrl("/api/v1/regimes/schedule", { ...schedule, format: "csv" });
  byId("schedule-json").href = apiUrl("/api/v1/regimes/schedule", schedule);
  byId("table-csv").href = apiUrl("/api/v1/regimes/table", { ...tableParams, format: "csv" });
  byId("table-json").href = apiUrl("/api/v1/regimes/table", tableParams);
}

// ---------------------------------------------------------------- refresh

function splitParams(params) {
  const setup = { ...params };
  const table = {};
  for (const name of ["regime_a", "regime_b", "beta_a", "beta_b", "batch_a", "batch_b", "c"]) {
    table[name] = setup[name];
    delete setup[name];
  }
  return { setup, table };
}

async function refresh() {
  syncRegimeInputs();
  const params = currentParams();
  saveState(params);
  const { setup, table } = splitParams(params);
  const { p, k, batch, ...roofline } = setup;
  const tableParams = { ...roofline, ...table, k_max: TABLE_K_MAX };
  setLinks({ ...roofline, p }, tableParams);
  try {
    const [sweep, schedule, tableBody] = await Promise.all([
      latestJSON("rg-sweep", "/api/v1/regimes/speedup-vs-batch", { ...setup, k_max: K_MAX, batch_max: BATCH_MAX }),
      latestJSON("rg-schedule", "/api/v1/regimes/schedule", { ...roofline, p, k_max: TABLE_K_MAX }),
      latestJSON("rg-table", "/api/v1/regimes/table", { ...tableParams, p, k }),
    ]);
    if ([sweep, schedule, tableBody].includes(null)) return;
    showError(null);
    byId("devices").placeholder = String(sweep.setup.devices);
    renderReadouts(sweep);
    renderSchedule(schedule);
    renderTable(tableBody);
    const marked = tableBody.marked;
    await renderChart(sweep, [
      { label: tableBody.regime_a.label, speedup: marked.speedup_a },
      { label: tableBody.regime_b.label, speedup: marked.speedup_b },
    ]);
  } catch (error) {
    showError(error);
  }
}

function scheduleRefresh() {
  window.clearTimeout(timer);
  timer = window.setTimeout(refresh, DEBOUNCE_MS);
}

async function start() {
  presets = await latestJSON("rg-presets", "/api/v1/presets");
  fillSelect("hw", presets.accelerators.map((item) => [item.key, item.name]));
  fillSelect("model", presets.models.map((item) => [item.key, item.name]));
  fillSelect("draft", presets.models.map((item) => [item.key, item.name]));
  fillSelect("weights", Object.entries(presets.weight_formats).map(([key, bytes]) => [key, `${key} (${bytes} B)`]));
  fillSelect("kv_cache", Object.entries(presets.kv_cache_formats).map(([key, bytes]) => [key, `${key} (${bytes} B)`]));
  for (const side of ["a", "b"]) fillSelect(`regime_${side}`, presets.regimes.map((name) => [name, name]));
  for (const group of Object.keys(FIELD_GROUPS)) fillFieldInputs(group);
  restoreState();
  for (const group of Object.keys(FIELD_GROUPS)) {
    byId(group).addEventListener("change", () => {
      resetFieldInputs(group);
      if (group === "model" || group === "hw") byId("devices").value = "0";
      scheduleRefresh();
    });
  }
  section.addEventListener("input", (event) => {
    if (event.target.matches("input")) scheduleRefresh();
  });
  section.addEventListener("change", (event) => {
    if (event.target.matches("select") && !Object.keys(FIELD_GROUPS).includes(event.target.name)) scheduleRefresh();
  });
  for (const form of section.querySelectorAll("form")) form.addEventListener("submit", (event) => event.preventDefault());
  await refresh();
}

start().catch(showError);
