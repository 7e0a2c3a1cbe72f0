// The seed demo: sliders k, p, c drive the readouts, the speedup curve and one animated run.

import { latestJSON } from "./api.js";
import { colors, draw, prefersReducedMotion } from "./plot.js";
import { readNumber, writeState } from "./state.js";

const TOKEN_DELAY_MS = 45;
const RUN_TOKENS = 60;
const SIMULATED_CYCLES = 100000;

const sliders = ["k", "p", "c"].map((id) => document.getElementById(id));
const fmt2 = (value) => value.toFixed(2);
let runSeed = Math.round(readNumber("seed", 0, 0, 2 ** 32 - 1));
let animation = { timers: [] };

function values() {
  return { k: Number(sliders[0].value), p: Number(sliders[1].value), c: Number(sliders[2].value) };
}

function setText(id, text) {
  const element = document.getElementById(id);
  if (element) element.textContent = text;
}

function renderReadouts(curve) {
  setText("tokens", fmt2(curve.expected_tokens));
  setText("cost", fmt2(curve.cost_per_cycle));
  setText("speedup", `${fmt2(curve.speedup)}×`);
  setText("best-k", curve.best_k ? String(curve.best_k) : "off");
  setText("best-speedup", `${fmt2(curve.best_speedup)}×`);
  setText("break-even", curve.break_even_acceptance === null ? "none" : fmt2(curve.break_even_acceptance));
  setText("max-cost", curve.max_draft_cost === null ? "none" : fmt2(curve.max_draft_cost));
  const rate = curve.draft_acceptance_rate === null ? "n/a" : fmt2(curve.draft_acceptance_rate);
  setText("acceptance-rate", rate);
  setText("operations", `×${fmt2(curve.operations_increase)}`);
  document.querySelectorAll(".js-acceptance-rate").forEach((element) => { element.textContent = rate; });
  document.querySelectorAll(".js-p").forEach((element) => { element.textContent = fmt2(curve.p); });
}

function renderCurve(curve) {
  const ks = curve.points.map((point) => point.k);
  const at = (k) => curve.points[k].speedup;
  const data = [
    {
      name: `p + ${fmt2(curve.band)}`, x: ks, y: curve.points.map((point) => point.speedup_high),
      mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false,
    },
    {
      name: `band p ± ${fmt2(curve.band)}`, x: ks, y: curve.points.map((point) => point.speedup_low),
      mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: colors.band, hoverinfo: "skip",
    },
    {
      name: "speedup", x: ks, y: curve.points.map((point) => point.speedup),
      mode: "lines+markers", line: { color: colors.accent, width: 3 },
      hovertemplate: "k = %{x}<br>speedup %{y:.2f}×<extra></extra>",
    },
    {
      name: "break-even (S = 1)", x: [ks[0], ks[ks.length - 1]], y: [1, 1],
      mode: "lines", line: { color: colors.breakEven, dash: "dash", width: 2 }, hoverinfo: "skip",
    },
    {
      name: `current k = ${curve.k}`, x: [curve.k], y: [at(curve.k)], mode: "markers",
      marker: { size: 14, color: "rgba(0,0,0,0)", line: { color: colors.ink, width: 2.5 } },
      hovertemplate: "current k = %{x}<br>%{y:.2f}×<extra></extra>",
    },
    {
      name: curve.best_k ? `best k = ${curve.best_k}` : "best: do not speculate",
      x: [curve.best_k], y: [curve.best_speedup], mode: "markers",
      marker: { size: 16, symbol: "star", color: colors.best, line: { color: colors.ink, width: 1 } },
      hovertemplate: "best k = %{x}<br>%{y:.2f}×<extra></extra>",
    },
  ];
  return draw(document.getElementById("curve"), data, {
    xaxis: { title: { text: "draft length k" }, dtick: 1, range: [-0.3, ks[ks.length - 1] + 0.3] },
    yaxis: { title: { text: "speedup ×" }, rangemode: "tozero" },
  });
}

function stopAnimation() {
  animation.timers.forEach((timer) => window.clearTimeout(timer));
  animation = { timers: [] };
}

function tokenEvents(cycle) {
  const events = [];
  for (let i = 0; i < cycle.drafted; i += 1) {
    if (i < cycle.accepted) events.push("accepted");
    else events.push("rejected");
  }
  events.push(cycle.target_token);
  return events;
}

function runChartData(run, cyclesShown) {
  const shown = run.cycles.slice(0, cyclesShown);
  const passes = [0, ...shown.map((cycle) => cycle.total_passes)];
  const tokens = [0, ...shown.map((cycle) => cycle.total_tokens)];
  const lastPass = run.passes;
  return [
    {
      name: "speculative", x: passes, y: tokens, mode: "lines+markers", line: { shape: "hv", color: colors.good, width: 2.5 },
      hovertemplate: "%{x:.2f} passes: %{y} tokens<extra></extra>",
    },
    {
      name: "plain decoding", x: [0, lastPass], y: [0, lastPass], mode: "lines",
      line: { color: colors.muted, dash: "dot" }, hoverinfo: "skip",
    },
  ];
}

function drawRun(run, cyclesShown) {
  return draw(document.getElementById("run"), runChartData(run, cyclesShown), {
    margin: { l: 56, r: 16, t: 36, b: 48 },
    xaxis: { title: { text: "target passes (time)" }, range: [0, Math.max(run.passes, 1) * 1.02] },
    yaxis: { title: { text: "tokens" }, range: [0, run.tokens * 1.05] },
  });
}

function summarize(run, cyclesShown) {
  const cycle = run.cycles[cyclesShown - 1];
  if (!cycle) return "";
  const speed = cycle.total_tokens / cycle.total_passes;
  return `${cycle.total_tokens} tokens in ${fmt2(cycle.total_passes)} passes: ${fmt2(speed)}× (cycle ${cyclesShown} of ${run.cycles.length})`;
}

function animateRun(run) {
  stopAnimation();
  const strip = document.getElementById("run-tokens");
  strip.replaceChildren();
  const immediate = prefersReducedMotion();
  let delay = 0;
  run.cycles.forEach((cycle, index) => {
    const events = tokenEvents(cycle);
    events.forEach((kind, position) => {
      const show = () => {
        const token = document.createElement("span");
        token.className = `token ${kind}${position === 0 ? " cycle-start" : ""}`;
        token.title = kind;
        strip.append(token);
      };
      if (immediate) show();
      else animation.timers.push(window.setTimeout(show, delay));
      delay += TOKEN_DELAY_MS;
    });
    const finishCycle = () => {
      drawRun(run, index + 1);
      setText("run-summary", summarize(run, index + 1));
    };
    if (immediate) {
      if (index === run.cycles.length - 1) finishCycle();
    } else animation.timers.push(window.setTimeout(finishCycle, delay));
  });
  if (!immediate) drawRun(run, 0);
}

function renderSimulation(simulation) {
  const ks = simulation.histogram.map((_, index) => index);
  const [low, high] = simulation.interval_95;
  setText(
    "simulation-summary",
    `${fmt2(simulation.mean_tokens_per_cycle)} tokens per cycle (95% interval ${low.toFixed(3)} to ${high.toFixed(3)}); ` +
      `closed form ${fmt2(simulation.expected_tokens)}; speedup ${fmt2(simulation.empirical_speedup)}×`,
  );
  return draw(document.getElementById("histogram"), [
    { name: "simulated", type: "bar", x: ks, y: simulation.histogram, marker: { color: colors.good }, opacity: 0.8 },
    {
      name: "closed form", x: ks, y: simulation.histogram_expected, mode: "markers",
      marker: { color: colors.ink, size: 9, symbol: "diamond" },
    },
  ], {
    margin: { l: 64, r: 16, t: 36, b: 48 },
    xaxis: { title: { text: "accepted drafts per cycle" }, dtick: 1 },
    yaxis: { title: { text: "cycles" } },
    bargap: 0.15,
  });
}

async function refreshSimulation() {
  const simulation = await latestJSON("simulate", "/api/v1/simulate", {
    ...values(), cycles: SIMULATED_CYCLES, seed: runSeed,
  });
  if (simulation === null) return;
  await renderSimulation(simulation);
  document.getElementById("histogram").dataset.k = String(simulation.k);
}

function updateJsonLinks(state) {
  const query = new URLSearchParams({ k: state.k, p: state.p, c: state.c });
  document.getElementById("curve-json").href = `/api/v1/curve?${query}`;
  query.set("cycles", SIMULATED_CYCLES);
  document.getElementById("simulate-json").href = `/api/v1/simulate?${query}`;
}

let lastRun = null;

async function refreshRun() {
  const run = await latestJSON("run", "/api/v1/run", { ...values(), tokens: RUN_TOKENS, seed: runSeed });
  if (run === null) return;
  lastRun = run;
  animateRun(run);
}

async function refresh() {
  const state = values();
  setText("k-value", String(state.k));
  setText("p-value", fmt2(state.p));
  setText("c-value", fmt2(state.c));
  writeState(state);
  updateJsonLinks(state);
  const curve = await latestJSON("curve", "/api/v1/curve", { ...state, k_max: 12, band: 0.1 });
  if (curve === null) return;
  renderReadouts(curve);
  await renderCurve(curve);
  document.getElementById("curve").dataset.k = String(curve.k);
}

let runTimer = null;
function scheduleRun() {
  window.clearTimeout(runTimer);
  runTimer = window.setTimeout(() => {
    refreshRun();
refreshSimulation();
    refreshSimulation();
  }, 250);
}

sliders.forEach((slider) => {
  slider.addEventListener("input", () => {
    refresh();
    scheduleRun();
  });
});

document.getElementById("replay").addEventListener("click", () => {
  if (lastRun) animateRun(lastRun);
  else refreshRun();
refreshSimulation();
});

document.getElementById("new-run").addEventListener("click", () => {
  runSeed = (runSeed + 1) % 2 ** 32;
  writeState({ seed: runSeed });
  refreshRun();
refreshSimulation();
  refreshSimulation();
});

document.getElementById("demo-controls").addEventListener("submit", (event) => event.preventDefault());

const initial = JSON.parse(document.getElementById("demo-initial").textContent);
renderReadouts(initial);
renderCurve(initial).then(() => { document.getElementById("curve").dataset.ready = "1"; });
refreshRun();
refreshSimulation();
