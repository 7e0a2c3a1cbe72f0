// The demo's browser-only parts: readouts and the curve follow a drag at once (from the closed form's ES
// module, once per animation frame), and the run is animated token by token. Everything else comes from the
// page's view.

import * as closedForm from "./closed_form.js";
import { drawFigure, onInput, onInputNow, onView, refresh, view } from "./driver.js";

const TOKEN_DELAY_MS = 45;
const RUN_MS = 3500; // a long run (low p) is revealed faster, so that it never takes longer than this
const sliders = ["k", "p", "c"].map((id) => document.getElementById(id)).filter(Boolean);
const times = (value) => `${value.toFixed(2)}×`;
let timers = [];

const readoutElements = new Map(); // readout key -> the elements that show it

function setReadout(key, text) {
  if (!readoutElements.has(key)) {
    readoutElements.set(key, [...document.querySelectorAll(`[data-text="readouts.${key}"]`)]);
  }
  for (const element of readoutElements.get(key)) {
    if (element.textContent !== text) element.textContent = text;
  }
}

// The readouts the server's view carries, computed here while a slider moves (held equal by a browser test).
function localReadouts(p, k, c, kSearchMax) {
  const [best, bestSpeedup] = closedForm.bestK(p, c, kSearchMax);
  const breakEven = closedForm.breakEvenAcceptance(k, c);
  const rate = closedForm.draftAcceptanceRate(p, k);
  return {
    tokens: closedForm.expectedTokens(p, k).toFixed(2),
    cost: closedForm.costPerCycle(k, c).toFixed(2),
    speedup: times(closedForm.speedup(p, k, c)),
    best_k: best === 0 ? "off" : best === kSearchMax ? `≥ ${best}` : String(best),
    best_speedup: times(bestSpeedup),
    break_even: breakEven === null ? "none" : breakEven.toFixed(2),
    acceptance_rate: rate === null ? "n/a" : rate.toFixed(2),
    operations: times(closedForm.operationsIncrease(p, k)),
    p: p.toFixed(2),
  };
}

function localCurve(figure, p, k, c, chart) {
  const [best, bestSpeedup] = closedForm.bestK(p, c, chart.k_search_max);
  const kMax = Math.max(chart.k_min, k, best);
  const ks = Array.from({ length: kMax + 1 }, (_, index) => index);
  const curveAt = (acceptance) => ks.map((j) => closedForm.speedup(acceptance, j, c));
  const speedups = curveAt(p);
  const next = structuredClone(figure);
  for (const trace of next.data) {
    if (trace.meta === "band_high") Object.assign(trace, { x: ks, y: curveAt(Math.min(p + chart.band, 1)) });
    if (trace.meta === "band_low") Object.assign(trace, { x: ks, y: curveAt(Math.max(p - chart.band, 0)) });
    if (trace.meta === "speedup") Object.assign(trace, { x: ks, y: speedups });
    if (trace.meta === "break_even") trace.x = [0, kMax];
    if (trace.meta === "current") Object.assign(trace, { x: [k], y: [speedups[k]], name: `current k = ${k}` });
    if (trace.meta === "best") {
      Object.assign(trace, { x: [best], y: [bestSpeedup], name: best ? `best k = ${best}` : "best: do not speculate" });
    }
  }
  next.layout.xaxis.range = [-0.3, kMax + 0.3];
  return next;
}

// In the task of each input event: the readouts, cheap arithmetic, are on screen before the next frame.
function onSliderInput(changed) {
  if (!changed.some((element) => sliders.includes(element))) return;
  const [k, p, c] = sliders.map((slider) => Number(slider.value));
  const readouts = localReadouts(p, k, c, view().chart.k_search_max);
  for (const [key, text] of Object.entries(readouts)) setReadout(key, text);
}

// Once per animation frame of a drag, whatever number of input events it had: the curve.
function onDrag(changed) {
  if (!changed.some((element) => sliders.includes(element))) return undefined;
  const current = view();
  const [k, p, c] = sliders.map((slider) => Number(slider.value));
  const curve = document.getElementById("curve");
  if (!curve || !current.figures.curve) return undefined;
  return drawFigure(curve, localCurve(current.figures.curve, p, k, c, current.chart)).then(() => {
    curve.dataset.k = String(k);
  });
}

onInputNow(onSliderInput);
onInput(onDrag);

// ---------------------------------------------------------------- the run, token by token

function stopAnimation() {
  timers.forEach((timer) => window.clearTimeout(timer));
  timers = [];
}

function drawRun(run, figure, shown) {
  const partial = structuredClone(figure);
  const trace = partial.data.find((item) => item.meta === "run");
  trace.x = trace.x.slice(0, shown + 1);
  trace.y = trace.y.slice(0, shown + 1);
  return drawFigure(document.getElementById("run"), partial);
}

// The strip's tokens: per cycle the accepted drafts, the rejected one, the drafts after it (narrow: never
// checked) and the target's own token.
function buildStrip(run) {
  const strip = document.getElementById("run-tokens");
  const tokens = [];
  run.strip.forEach((kinds, cycle) => {
    kinds.forEach((kind, position) => {
      const token = document.createElement("span");
      token.className = `token ${kind}${position === 0 ? " cycle-start" : ""}`;
      token.title = kind;
      token.dataset.cycle = String(cycle);
      tokens.push(token);
    });
  });
  strip.replaceChildren(...tokens);
  return tokens;
}

// Every token is laid out from the start and only revealed in turn, so the run's height never changes; the
// summary says where the animation is from its first frame (cycle 0), and a long run is revealed faster.
function animate(current) {
  stopAnimation();
  const { run } = current;
  const figure = current.figures.run;
  const tokens = buildStrip(run);
  const summary = document.getElementById("run-summary");
  const reduced = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  const done = () => { document.getElementById("run").dataset.cycles = String(run.strip.length); };
  if (reduced || run.strip.length === 0) {
    summary.textContent = run.summaries[run.summaries.length - 1] || run.start;
    drawRun(run, figure, run.strip.length).then(done);
    return;
  }
  tokens.forEach((token) => token.classList.add("pending"));
  summary.textContent = run.start;
  drawRun(run, figure, 0);
  const step = Math.min(TOKEN_DELAY_MS, RUN_MS / Math.max(tokens.length, 1));
  let delay = 0;
  let index = 0;
  run.strip.forEach((kinds, cycle) => {
    kinds.forEach(() => {
      const token = tokens[index];
      timers.push(window.setTimeout(() => token.classList.remove("pending"), delay));
      index += 1;
      delay += step;
    });
    timers.push(window.setTimeout(() => {
      summary.textContent = run.summaries[cycle];
      const drawn = drawRun(run, figure, cycle + 1);
      if (cycle === run.strip.length - 1) drawn.then(done);
    }, delay));
  });
}

onView((current) => {
  document.getElementById("curve")?.setAttribute("data-k", String(current.controls.k.value));
  document.getElementById("histogram")?.setAttribute("data-k", String(current.controls.k.value));
  if (document.getElementById("run-tokens") && current.run) animate(current);
});

document.getElementById("replay")?.addEventListener("click", () => animate(view()));
document.getElementById("new-run")?.addEventListener("click", () => {
  const seed = document.getElementById("seed");
  if (!seed) return;
  // The run on screen is not the new one: nothing of it is said while the new one is on its way.
  stopAnimation();
  document.getElementById("run-summary").textContent = "Drawing a new run…";
  seed.value = String((Number(seed.value) + 1) % 2 ** 32);
  refresh(0);
});
