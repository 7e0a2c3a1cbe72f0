// Section "Exactness and real acceptance": the exact rule against wrong rules, a chain with rollback,
// a real n-gram draft/target pair, and bursty acceptance. Every number comes from the API.
import { latestJSON } from "./api.js";
import { colors, draw } from "./plot.js";
import { readNumber, writeState } from "./state.js";

const VOCABS = [2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000];
const TRIALS = [10000, 100000, 500000];
const CHAIN_VOCAB_MAX = 200;
const CYCLES_LISTED = 12;
const RULE_NAMES = { exact: "Exact rule", argmax: "Accept on argmax", resample_target: "Resample from p" };
const RULE_COLORS = { exact: colors.good, argmax: colors.bad, resample_target: colors.purple };

const byId = (id) => document.getElementById(id);
// Small charts keep their legend above the plot, clear of the axis title.
const LEGEND_ON_TOP = { legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 }, margin: { l: 56, r: 16, t: 36, b: 48 } };

// The URL records what the reader changed, not the defaults a first visit starts from.
let persist = false;
function saveState(values) {
  if (persist) writeState(values);
}

function fixed(value, digits = 2) {
  return value === null || value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);
}

function debounce(action, wait) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(action, wait);
  };
}

function showError(id, error) {
  const element = byId(id);
  if (error) {
    element.textContent = error.message || String(error);
    element.hidden = false;
  } else {
    element.hidden = true;
    element.textContent = "";
  }
}

// A range input with its <output>; `format` renders the value shown beside the label.
function range(id, format) {
  const input = byId(id);
  const output = byId(`${id}-value`);
  const refresh = () => {
    output.textContent = format(Number(input.value));
  };
  return {
    input,
    refresh,
    get value() {
      return Number(input.value);
    },
    set value(number) {
      input.value = String(number);
      refresh();
    },
  };
}

function markReady(element, extra = {}) {
  element.dataset.ready = "1";
  for (const [key, value] of Object.entries(extra)) element.dataset[key] = String(value);
}

// --- the exact rule and the chain share the distribution family ---------------------------------

const vocab = range("exact-vocab", (index) => VOCABS[index].toLocaleString("en"));
const targetTemperature = range("exact-target-temp", (value) => value.toFixed(2));
const draftTemperature = range("exact-draft-temp", (value) => value.toFixed(2));
const distance = range("exact-distance", (value) => value.toFixed(2));
const trialsSelect = byId("exact-trials");
const exactSeed = byId("exact-seed");
const chainK = range("chain-k", (value) => String(value));

function nearestVocabIndex(value) {
  let best = 0;
  VOCABS.forEach((size, index) => {
    if (Math.abs(Math.log(size) - Math.log(value)) < Math.abs(Math.log(VOCABS[best]) - Math.log(value))) best = index;
  });
  return best;
}

function familyParams() {
  return {
    vocab: VOCABS[vocab.value],
    target_temperature: targetTemperature.value,
    draft_temperature: draftTemperature.value,
    draft_distance: distance.value,
    seed: Math.trunc(Number(exactSeed.value)) || 0,
  };
}

function writeFamilyState() {
  const family = familyParams();
  saveState({
    xvocab: family.vocab,
    xtt: family.target_temperature,
    xdt: family.draft_temperature,
    xdist: family.draft_distance,
    xtrials: Number(trialsSelect.value),
    xseed: family.seed,
    chk: chainK.value,
  });
}

function renderRules(body) {
  const exact = body.rules[0];
  byId("exact-acceptance").textContent = `${fixed(exact.acceptance, 3)} ± ${fixed(exact.acceptance_standard_error, 3)}`;
  byId("exact-overlap").textContent = fixed(body.overlap, 3);
  const rows = body.rules.map((rule) => {
    const row = document.createElement("tr");
    row.dataset.rule = rule.rule;
    const cells = [
      RULE_NAMES[rule.rule],
      `${fixed(rule.acceptance, 3)} (${fixed(rule.acceptance_expected, 3)})`,
      fixed(rule.bias, 3),
      rule.p_value < 1e-4 ? rule.p_value.toExponential(1) : fixed(rule.p_value, 3),
    ];
    for (const text of cells) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    const verdict = document.createElement("td");
    verdict.className = `verdict ${rule.passes ? "verdict-pass" : "verdict-fail"}`;
    verdict.textContent = rule.passes ? "passes" : "fails";
    row.append(verdict);
    return row;
  });
  byId("exact-rules").replaceChildren(...rows);
}

function renderHistogram(body) {
  const labels = [...body.histogram_tokens.map((_, index) => `#${index + 1}`), "rest"];
  const data = [
    {
      type: "bar",
      name: "target p",
      x: labels,
      y: [...body.target, body.target_rest],
      marker: { color: "rgba(90, 99, 117, 0.35)" },
      hovertemplate: "%{x}: %{y:.4f}<extra>target</extra>",
    },
    {
      type: "scatter",
      mode: "lines",
      name: "draft q",
      x: labels,
      y: [...body.draft, body.draft_rest],
      line: { color: colors.muted, dash: "dot", width: 1 },
      hovertemplate: "%{x}: %{y:.4f}<extra>draft</extra>",
    },
    ...body.rules.map((rule) => ({
      type: "scatter",
      mode: "markers",
      name: RULE_NAMES[rule.rule],
      x: labels,
      y: [...rule.histogram, rule.histogram_rest],
      marker: { color: RULE_COLORS[rule.rule], size: rule.rule === "exact" ? 9 : 7, symbol: rule.rule === "exact" ? "circle" : "x" },
      hovertemplate: `%{x}: %{y:.4f}<extra>${RULE_NAMES[rule.rule]}</extra>`,
    })),
  ];
  const element = byId("exact-histogram");
  draw(element, data, {
    xaxis: { title: { text: "token, by target rank" }, type: "category" },
    yaxis: { title: { text: "probability" }, rangemode: "tozero" },
  }).then(() => markReady(element, { vocab: body.vocab }));
}

async function updateExact() {
  writeFamilyState();
  try {
    const body = await latestJSON("exact-rule", "/api/v1/exact-rule", {
      ...familyParams(),
      trials: Number(trialsSelect.value),
      histogram_tokens: 30,
    });
    if (body === null) return;
    showError("exact-error", null);
    renderRules(body);
    renderHistogram(body);
  } catch (error) {
    showError("exact-error", error);
  }
}

function cycleRow(cycle, k) {
  const item = document.createElement("li");
  const lengths = document.createElement("span");
  lengths.className = "lengths";
  const drafted = cycle.start_length + k;
  lengths.textContent = cycle.bonus
    ? `length ${cycle.start_length} → ${drafted} → ${cycle.end_length}`
    : `length ${cycle.start_length} → ${drafted} ↩ ${cycle.start_length + cycle.accepted} → ${cycle.end_length}`;
  item.append(lengths);
  cycle.drafted.forEach((token, index) => {
    const box = document.createElement("span");
    let kind = "accepted";
    if (index === cycle.accepted && !cycle.bonus) kind = "rejected";
    else if (index > cycle.accepted) kind = "discarded";
    box.className = `chain-token ${kind}`;
    box.textContent = String(token);
    box.title = `${kind} draft`;
    item.append(box);
  });
  const emitted = document.createElement("span");
  emitted.className = `chain-token ${cycle.bonus ? "bonus" : "correction"}`;
  emitted.textContent = String(cycle.emitted);
  emitted.title = cycle.bonus ? "bonus token" : "target's correction";
  item.append(emitted);
  return item;
}

function renderChain(body) {
  byId("chain-summary").textContent =
    `${body.generated} tokens in ${body.cycles.length} cycles (${fixed(body.mean_tokens_per_cycle)} per cycle), ` +
    `${body.rollbacks} rollbacks; acceptance ${fixed(body.acceptance, 3)}, mean Σ min(p, q) ${fixed(body.mean_overlap, 3)}.`;
  const actionColors = {
    draft: colors.muted,
    accept: colors.good,
    reject: colors.bad,
    rollback: colors.bad,
    correct: colors.accent,
    bonus: colors.purple,
  };
  const element = byId("chain-length");
  draw(
    element,
    [
      {
        type: "scatter",
        mode: "lines+markers",
        name: "sequence length",
        x: body.steps.map((_, index) => index),
        y: body.steps.map((step) => step.length),
        line: { shape: "hv", color: colors.ink, width: 1.5 },
        marker: { size: 6, color: body.steps.map((step) => actionColors[step.action]) },
        text: body.steps.map((step) => `${step.action} token ${step.token} at ${step.position}`),
        hovertemplate: "step %{x}: length %{y}<br>%{text}<extra></extra>",
      },
    ],
    {
      showlegend: false,
      xaxis: { title: { text: "step (draft, verdict, rollback, correction, bonus)" } },
      yaxis: { title: { text: "sequence length" } },
    },
  ).then(() => markReady(element, { rollbacks: body.rollbacks }));
  byId("chain-cycles").replaceChildren(...body.cycles.slice(0, CYCLES_LISTED).map((cycle) => cycleRow(cycle, body.k)));
}

async function updateChain() {
  writeFamilyState();
  const family = familyParams();
  try {
    const body = await latestJSON("chain", "/api/v1/chain", {
      ...family,
      vocab: Math.min(family.vocab, CHAIN_VOCAB_MAX),
      k: chainK.value,
      tokens: 40,
    });
    if (body !== null) renderChain(body);
  } catch (error) {
    showError("exact-error", error);
  }
}

// --- the n-gram pair ------------------------------------------------------------------------------

const ngramK = range("ngram-k", (value) => String(value));
const ngramTemperature = range("ngram-temperature", (value) => value.toFixed(2));
const ngramDraft = range("ngram-draft", (value) => String(value));
const ngramTarget = range("ngram-target", (value) => String(value));
const ngramSeed = byId("ngram-seed");

function renderNgram(body) {
  byId("ngram-corpus").textContent = body.corpus_characters.toLocaleString("en");
  byId("ngram-acceptance").textContent = `${fixed(body.acceptance, 3)} ± ${fixed(body.acceptance_standard_error, 3)}`;
  byId("ngram-tokens").textContent = `${fixed(body.mean_tokens_per_cycle)} ± ${fixed(body.tokens_standard_error)}`;
  byId("ngram-closed-form").textContent = fixed(body.closed_form_tokens);
  byId("ngram-autocorrelation").textContent = fixed(body.autocorrelation);
  byId("ngram-bursty").textContent = fixed(body.bursty_tokens);
  byId("ngram-overlap").textContent = fixed(body.mean_overlap, 3);

  const positions = body.per_position.filter((position) => position.verified > 0);
  const element = byId("ngram-positions");
  draw(
    element,
    [
      {
        type: "bar",
        name: "measured",
        x: positions.map((position) => position.position),
        y: positions.map((position) => position.acceptance),
        error_y: {
          type: "data",
          array: positions.map((position) =>
            Math.sqrt((position.acceptance * (1 - position.acceptance)) / position.verified),
          ),
          color: colors.muted,
        },
        marker: { color: colors.good },
        text: positions.map((position) => `${position.accepted} / ${position.verified}`),
        hovertemplate: "position %{x}: %{y:.3f} (%{text})<extra></extra>",
      },
      {
        type: "scatter",
        mode: "lines+markers",
        name: "mean Σ min(p, q)",
        x: positions.map((position) => position.position),
        y: positions.map((position) => position.mean_overlap),
        line: { color: colors.accent },
      },
      {
        type: "scatter",
        mode: "lines",
        name: "overall acceptance",
        x: [0.5, body.k + 0.5],
        y: [body.acceptance, body.acceptance],
        line: { color: colors.ink, dash: "dash", width: 1 },
      },
    ],
    {
      ...LEGEND_ON_TOP,
      xaxis: { title: { text: "draft position in the cycle" }, dtick: 1, range: [0.5, body.k + 0.5] },
      yaxis: { title: { text: "acceptance" }, range: [0, 1.05] },
    },
  ).then(() => markReady(element));

  const spans = body.segments.map((segment) => {
    const span = document.createElement("span");
    span.className = `mark ${segment.kind}`;
    span.textContent = segment.text;
    return span;
  });
  const text = byId("ngram-text");
  text.replaceChildren(...spans);
  markReady(text, { cycles: body.cycles });
}

function keepOrdersApart(changed) {
  if (ngramDraft.value < ngramTarget.value) return;
  if (changed === "draft") ngramTarget.value = Math.min(7, ngramDraft.value + 1);
  if (ngramDraft.value >= ngramTarget.value) ngramDraft.value = Math.max(1, ngramTarget.value - 1);
}

async function updateNgram() {
  const params = {
    k: ngramK.value,
    temperature: ngramTemperature.value,
    draft_order: ngramDraft.value,
    target_order: ngramTarget.value,
    seed: Math.trunc(Number(ngramSeed.value)) || 0,
  };
  saveState({ ngk: params.k, ngtemp: params.temperature, ngdraft: params.draft_order, ngtarget: params.target_order, ngseed: params.seed });
  try {
    const body = await latestJSON("ngram", "/api/v1/ngram", { ...params, tokens: 1000 });
    if (body === null) return;
    showError("ngram-error", null);
    renderNgram(body);
  } catch (error) {
    showError("ngram-error", error);
  }
}

// --- bursty acceptance ----------------------------------------------------------------------------

const rho = range("rho", (value) => value.toFixed(2));
const rhoP = range("rho-p", (value) => value.toFixed(2));
const rhoK = range("rho-k", (value) => String(value));

function rhoMinimum(p) {
  if (p <= 0 || p >= 1) return 0;
  return -Math.min(p, 1 - p) / Math.max(p, 1 - p);
}

// The slider's lower end follows p; a rho the new p cannot have moves up to the bound.
function fitRhoToP() {
  const lowest = Math.ceil(rhoMinimum(rhoP.value) * 100 - 1e-9) / 100;
  rho.input.min = String(lowest);
  if (rho.value < lowest) rho.value = lowest;
  rho.refresh();
}

function renderBursty(body) {
  const [low, high] = body.interval_95;
  byId("rho-simulated").textContent = `${fixed(body.mean_tokens_per_cycle)} ± ${fixed((high - low) / 2)}`;
  byId("rho-exact").textContent = fixed(body.expected_tokens);
  byId("rho-iid").textContent = fixed(body.iid_expected_tokens);
  const percent = body.iid_error * 100;
  byId("rho-error").textContent = `${percent >= 0 ? "+" : "−"}${Math.abs(percent).toFixed(1)}%`;
  const element = byId("bursty-chart");
  draw(
    element,
    [
      {
        type: "scatter",
        mode: "lines",
        name: "exact, Markov",
        x: body.curve.map((point) => point.rho),
        y: body.curve.map((point) => point.expected_tokens),
        line: { color: colors.accent, width: 2.5 },
      },
      {
        type: "scatter",
        mode: "lines",
        name: "i.i.d. closed form",
        x: [body.rho_min, body.rho_max],
        y: [body.iid_expected_tokens, body.iid_expected_tokens],
        line: { color: colors.breakEven, dash: "dash" },
      },
      {
        type: "scatter",
        mode: "markers",
        name: "simulated",
        x: [body.rho],
        y: [body.mean_tokens_per_cycle],
        error_y: { type: "data", array: [high - body.mean_tokens_per_cycle], arrayminus: [body.mean_tokens_per_cycle - low] },
        marker: { color: colors.best, size: 11, line: { color: colors.ink, width: 1 } },
      },
    ],
    {
      ...LEGEND_ON_TOP,
      xaxis: { title: { text: "lag-1 correlation of acceptances ρ" }, range: [body.rho_min - 0.02, 1.02] },
      yaxis: { title: { text: "tokens per cycle" }, rangemode: "tozero" },
    },
  ).then(() => markReady(element, { rho: body.rho }));
}

async function updateBursty() {
  fitRhoToP();
  const params = { p: rhoP.value, k: rhoK.value, rho: rho.value };
  saveState({ rho: params.rho, rhop: params.p, rhok: params.k });
  try {
    const body = await latestJSON("bursty", "/api/v1/bursty", { ...params, cycles: 200000, seed: 0 });
    if (body === null) return;
    showError("bursty-error", null);
    renderBursty(body);
  } catch (error) {
    showError("bursty-error", error);
  }
}

// --- wiring ---------------------------------------------------------------------------------------

function restoreState() {
  vocab.value = nearestVocabIndex(readNumber("xvocab", 50, 2, 2000));
  targetTemperature.value = readNumber("xtt", 1, 0.2, 3);
  draftTemperature.value = readNumber("xdt", 1, 0.2, 3);
  distance.value = readNumber("xdist", 1, 0, 4);
  const trials = readNumber("xtrials", 100000, 10000, 500000);
  trialsSelect.value = String(TRIALS.includes(trials) ? trials : 100000);
  exactSeed.value = String(Math.trunc(readNumber("xseed", 0, 0, 4294967295)));
  chainK.value = Math.round(readNumber("chk", 4, 1, 12));
  ngramK.value = Math.round(readNumber("ngk", 4, 1, 8));
  ngramTemperature.value = readNumber("ngtemp", 0.5, 0.2, 2);
  ngramDraft.value = Math.round(readNumber("ngdraft", 3, 1, 6));
  ngramTarget.value = Math.round(readNumber("ngtarget", 6, 2, 7));
  keepOrdersApart("target");
  ngramSeed.value = String(Math.trunc(readNumber("ngseed", 0, 0, 4294967295)));
  rhoP.value = readNumber("rhop", 0.75, 0.05, 0.99);
  rhoK.value = Math.round(readNumber("rhok", 6, 1, 16));
  fitRhoToP();
  rho.value = Math.max(readNumber("rho", 0.5, -1, 1), Number(rho.input.min));
}

function init() {
  restoreState();
  for (const form of ["exact-controls", "chain-controls", "ngram-controls", "bursty-controls"]) {
    const markChanged = () => {
      persist = true;
    };
    byId(form).addEventListener("input", markChanged, { capture: true });
    byId(form).addEventListener("change", markChanged, { capture: true });
    byId(form).addEventListener("submit", (event) => event.preventDefault());
  }
  const exactLater = debounce(updateExact, 150);
  const chainLater = debounce(updateChain, 150);
  for (const control of [vocab, targetTemperature, draftTemperature, distance]) {
    control.input.addEventListener("input", () => {
      control.refresh();
      exactLater();
      chainLater();
    });
  }
  trialsSelect.addEventListener("change", exactLater);
  exactSeed.addEventListener("change", () => {
    exactLater();
    chainLater();
  });
  chainK.input.addEventListener("input", () => {
    chainK.refresh();
    chainLater();
  });

  const ngramLater = debounce(updateNgram, 200);
  for (const [control, name] of [
    [ngramK, "k"],
    [ngramTemperature, "temperature"],
    [ngramDraft, "draft"],
    [ngramTarget, "target"],
  ]) {
    control.input.addEventListener("input", () => {
      control.refresh();
      keepOrdersApart(name);
      ngramLater();
    });
  }
  ngramSeed.addEventListener("change", ngramLater);
  byId("ngram-show-discarded").addEventListener("change", (event) => {
    byId("ngram-text").classList.toggle("show-discarded", event.target.checked);
  });

  const burstyLater = debounce(updateBursty, 120);
  for (const control of [rho, rhoP, rhoK]) {
    control.input.addEventListener("input", () => {
      control.refresh();
      burstyLater();
    });
  }

  updateExact();
  updateChain();
  updateNgram();
  updateBursty();
}

init();
