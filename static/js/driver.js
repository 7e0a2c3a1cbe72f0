// The one generic driver of every page: its controls change, the page's view is fetched, the page is patched.
//
// The server renders each page from one view (app/web/pages/views/) and serves the same view as JSON at
// /api/v1/views/<name>. This module keeps the controls' state in the address (defaults left out), fetches the
// view when a control changes, dims results that no longer match the controls until the new view arrives,
// shows a 422's message (it names the control by its label), and patches the page from the view:
//
//   data-text="a.b"    textContent from view.a.b        data-href="links.x"   href from view.links.x
//   data-show="a.b"    hidden unless view.a.b is truthy  data-list="a.b"       <li> per string of view.a.b
//   data-table="a.b"   rows of view.a.b ({columns, rows: [{class, cells: [{text, class, style, header}]}]})
//   data-figure="x"    Plotly.react with view.figures.x  data-value="a.b"      a control's value from view.a.b
//   data-spans="a.b"   <span> per {text, class} of view.a.b (marked text)
//   data-min="a.b", data-max="a.b"   an input's bounds from the view, where one control's range depends on another
//   data-results       dimmed (class "stale", aria-busy) while the view is out of date
//   data-error         the message of a refused request, hidden otherwise; the control it names gets aria-invalid
//                      (data-error="pointer": only a pointer to the controls where each shows its message beside it)
//   data-steps="a.b"   on a range input without a name, with data-target="x": its positions index view.a.b.steps
//                      and moving it sets control x (a hidden input, say) to that step, so a log-scale slider's
//                      address carries the value itself; view.a.b.position places it
//   data-when="name:a b"  hidden unless the form's control `name` holds a or b (at once, no request needed)
//   data-reset         a button that puts every control of its fieldset back to its default
//   data-load="name"   a link whose text (an example to paste) is loaded into the form's field `name`
//
// A form with data-method="post" sends its named textareas (a pasted scrape: never in the address) as a JSON
// object in the body of a POST to the same /api/v1/views/<name>; the short controls stay in the query.
//
// Page scripts add what only a browser can do (animating a run, copying a config) through onView(), and follow a
// drag through onInput().
//
// Plotly (1.4 MB) is loaded without blocking: the controls, the readouts and the address work before it arrives,
// each chart shows a placeholder of its own size until then, and the latest figure of each chart is drawn once it
// is there. Input events are coalesced: however many arrive in one animation frame, the page is updated once, in
// that frame (timed as the User Timing measure "specdec:input-frame").

const form = document.querySelector("form[data-view]");
const listeners = [];
const inputListeners = [];
const nowListeners = []; // called in the task of each input event
let current = JSON.parse(document.getElementById("view-data").textContent);
let inflight = null;
let requested = null;
let shown = null; // the request whose view is on screen
let changes = 0; // how often the user changed a control
let timer = null;
// Chromium ignores changes of address past 200 in 10 s: the address follows every change at once while fewer than
// ADDRESS_BUDGET were written in the last ADDRESS_WINDOW_MS, and the last change of a long drag when it stops.
const ADDRESS_BUDGET = 100;
const ADDRESS_WINDOW_MS = 10_000;
let addressTimer = 0;
const addressWrites = []; // when the address was written, within the window

const phone = window.matchMedia("(max-width: 720px)");
const plotConfig = () => ({
  displaylogo: false,
  responsive: true,
  // The mode bar covers legends on a phone; on larger screens it shows on hover only.
  displayModeBar: phone.matches ? false : "hover",
  modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
});

function lookup(view, path) {
  return path.split(".").reduce((value, key) => (value === null || value === undefined ? undefined : value[key]), view);
}

function cell(tag, spec, label) {
  const element = document.createElement(spec.header ? "th" : tag);
  if (spec.header) element.scope = "row";
  if (label) element.dataset.label = label; // a stacked table (a phone) shows it before the value
  element.textContent = spec.text;
  if (spec.class) element.className = spec.class;
  if (spec.style) element.setAttribute("style", spec.style);
  return element;
}

function renderTable(table, spec) {
  if (!spec) return;
  if (spec.columns) {
    const head = document.createElement("tr");
    for (const column of spec.columns) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = column;
      head.append(th);
    }
    (table.tHead || table.createTHead()).replaceChildren(head);
  }
  const body = table.tBodies[0] || table.createTBody();
  const labels = spec.columns || [...(table.tHead?.rows[0]?.cells || [])].map((th) => th.textContent);
  body.replaceChildren(...spec.rows.map((row) => {
    const tr = document.createElement("tr");
    if (row.class) tr.className = row.class;
    tr.append(...row.cells.map((item, index) => cell("td", item, labels[index])));
    return tr;
  }));
  if (spec.caption !== undefined && table.caption) table.caption.textContent = spec.caption;
}

// Plotly arrives when it arrives (an async script in the page's head), and starts over several tasks before it
// resolves window.PlotlyReady (scripts/plotly_bundle.mjs); null if it could not be loaded or started.
const started = () => (window.PlotlyReady ? window.PlotlyReady.catch(() => null) : window.Plotly || null);
const plotly = new Promise((resolve) => {
  const script = document.getElementById("plotly-script");
  if (window.PlotlyReady || window.Plotly || !script) {
    resolve(started());
    return;
  }
  script.addEventListener("load", () => resolve(started()));
  script.addEventListener("error", () => resolve(null));
}).then((library) => {
  if (!library) {
    for (const element of document.querySelectorAll("[data-figure], .chart")) element.dataset.failed = "1";
  }
  return library;
});
const waiting = new Map(); // chart element -> the figure to draw once Plotly is there, and the promise of it
// The charts that waited for Plotly are drawn one per task once it has arrived, in the order they were asked for:
// drawn in the task that ran Plotly's own start, they made one task of half a second on a slow machine, and the
// page answered no input all that time.
let drawTurn = Promise.resolve();
const nextTask = () => new Promise((resolve) => window.setTimeout(resolve, 0));

// On a phone a legend of long names would take a line each above a small chart: a smaller font packs more a line.
function forScreen(layout) {
  if (!phone.matches || !layout || !layout.legend) return layout;
  const font = { ...(layout.legend.font || {}), size: 10 };
  return { ...layout, legend: { ...layout.legend, font, tracegroupgap: 0, itemwidth: 30 } };
}

function react(element, figure) {
  return window.Plotly.react(element, figure.data, forScreen(figure.layout), plotConfig()).then(() => {
    element.dataset.ready = "1";
  });
}

// Draws a figure now, or, before Plotly has arrived, once it has: only the latest figure of each chart is drawn,
// and every caller's promise settles when it is.
export function drawFigure(element, figure) {
  if (!figure) return Promise.resolve();
  const entry = waiting.get(element); // still waiting for its turn, even once Plotly is there: it draws this one
  if (entry) {
    entry.figure = figure;
    return entry.drawn;
  }
  if (window.Plotly) return react(element, figure);
  const created = { figure };
  created.drawn = plotly.then((library) => {
    if (!library) {
      waiting.delete(element);
      return undefined;
    }
    const drawn = drawTurn.then(nextTask).then(() => {
      waiting.delete(element); // a figure given until now is the one drawn
      return react(element, created.figure);
    });
    drawTurn = drawn.catch(() => undefined);
    return drawn;
  });
  waiting.set(element, created);
  return created.drawn;
}

function patch(view) {
  for (const element of document.querySelectorAll("[data-text]")) {
    const value = lookup(view, element.dataset.text);
    if (value !== undefined && value !== null) element.textContent = String(value);
  }
  for (const element of document.querySelectorAll("[data-href]")) {
    const value = lookup(view, element.dataset.href);
    if (value) element.href = value;
  }
  for (const element of document.querySelectorAll("[data-show]")) {
    element.hidden = !lookup(view, element.dataset.show);
  }
  for (const element of document.querySelectorAll("[data-list]")) {
    const items = lookup(view, element.dataset.list) || [];
    element.replaceChildren(...items.map((text) => Object.assign(document.createElement("li"), { textContent: text })));
    element.hidden = items.length === 0;
  }
  for (const element of document.querySelectorAll("[data-table]")) renderTable(element, lookup(view, element.dataset.table));
  for (const element of document.querySelectorAll("[data-spans]")) {
    const items = lookup(view, element.dataset.spans) || [];
    element.replaceChildren(...items.map((item) => Object.assign(document.createElement("span"), { textContent: item.text, className: item.class || "" })));
  }
  for (const element of document.querySelectorAll("[data-min], [data-max]")) {
    for (const bound of ["min", "max"]) {
      const value = element.dataset[bound] ? lookup(view, element.dataset[bound]) : undefined;
      if (value !== undefined && value !== null) element[bound] = String(value);
    }
  }
  for (const element of document.querySelectorAll("[data-value]")) {
    const value = lookup(view, element.dataset.value);
    if (value !== undefined && document.activeElement !== element) element.value = String(value);
  }
  for (const slider of document.querySelectorAll("[data-steps]")) {
    const spec = lookup(view, slider.dataset.steps);
    if (spec && document.activeElement !== slider) slider.value = String(spec.position);
    const target = form?.elements.namedItem(slider.dataset.target);
    if (target) slider.setAttribute("aria-valuetext", target.value);
  }
  return Promise.all([...document.querySelectorAll("[data-figure]")].map(
    (element) => drawFigure(element, lookup(view, `figures.${element.dataset.figure}`)),
  ));
}

// The controls' state as the address carries it: every named control whose value differs from its default.
export function state() {
  const params = new URLSearchParams();
  if (!form) return params;
  for (const element of form.elements) {
    if (!element.name || element.disabled || element.dataset.default === undefined) continue;
    if ((element.type === "radio" || element.type === "checkbox") && !element.checked) continue;
    if (element.value !== element.dataset.default) params.set(element.name, element.value);
  }
  return params;
}

function writeAddress(params) {
  const kept = new URLSearchParams(window.location.search);
  for (const key of [...kept.keys()]) {
    if (form && form.elements.namedItem(key)) kept.delete(key);
  }
  for (const [key, value] of params) kept.set(key, value);
  const query = kept.toString();
  window.history.replaceState(null, "", `${window.location.pathname}${query ? `?${query}` : ""}${window.location.hash}`);
}

let staleShown = null;

function setStale(stale) {
  if (stale === staleShown) return; // once per change of state, not on every frame of a drag
  staleShown = stale;
  // Results the page computes itself (data-local) are right already: only what waits for the server dims.
  for (const element of document.querySelectorAll("[data-results]:not([data-local])")) {
    element.classList.toggle("stale", stale);
    element.setAttribute("aria-busy", stale ? "true" : "false");
  }
}

// data-error="pointer": where every refused control shows its message beside itself, the region names the controls
// instead of saying the message a second time.
function pointerText(items) {
  const labels = [];
  for (const { name } of items) {
    const control = form?.elements.namedItem(name);
    const label = control instanceof Element && control.id ? form.querySelector(`label[for="${control.id}"]`) : null;
    if (!label) return "";
    labels.push(label.textContent.trim());
  }
  if (!labels.length) return "";
  const [verb, them] = labels.length > 1 ? ["are", "them"] : ["is", "it"];
  return `The results return once ${labels.join(" and ")} ${verb} corrected (see beside ${them}).`;
}

// A refused input: its message at the top and beside each control it names, and every result hidden (Copy
// buttons disabled with them) until the controls are accepted again, so that nothing stale passes for an answer.
function showError(message, items = []) {
  const pointer = pointerText(items);
  for (const element of document.querySelectorAll("[data-error]")) {
    const text = element.dataset.error === "pointer" && pointer ? pointer : message || "";
    element.textContent = text;
    element.hidden = !text;
  }
  for (const note of document.querySelectorAll(".control-error")) {
    const control = form?.elements.namedItem(note.dataset.for);
    if (control instanceof Element) {
      const rest = (control.getAttribute("aria-describedby") || "").split(" ").filter((id) => id && id !== note.id);
      if (rest.length) control.setAttribute("aria-describedby", rest.join(" "));
      else control.removeAttribute("aria-describedby");
    }
    note.remove();
  }
  const names = items.map((item) => item.name);
  for (const element of form ? form.elements : []) {
    if (names.includes(element.name)) element.setAttribute("aria-invalid", "true");
    else element.removeAttribute("aria-invalid");
  }
  for (const { name, text } of items) {
    const control = form?.elements.namedItem(name);
    if (!(control instanceof Element)) continue;
    const note = Object.assign(document.createElement("p"), { className: "control-error", textContent: text });
    note.id = `${name}-error`;
    note.dataset.for = name;
    control.setAttribute("aria-describedby", [control.getAttribute("aria-describedby"), note.id].filter(Boolean).join(" "));
    (control.closest(".control, .metrics-field, td") || control.parentElement).append(note);
  }
  const refused = items.length > 0;
  for (const element of document.querySelectorAll("[data-results]")) {
    element.classList.toggle("failed", refused);
    element.toggleAttribute("inert", refused);
  }
  for (const button of document.querySelectorAll("button[data-copy]")) {
    if (refused && button.closest("[data-results]")) button.disabled = true;
    else button.disabled = false;
  }
}

function request(signal) {
  const init = { signal, headers: { accept: "application/json" } };
  if (form.dataset.method !== "post") return init;
  const texts = [...form.querySelectorAll("textarea[name]")].map((element) => [element.name, element.value]);
  init.headers["content-type"] = "application/json";
  return { ...init, method: "POST", body: JSON.stringify(Object.fromEntries(texts)) };
}

function requestKey(signal = undefined) {
  const params = state();
  const url = `/api/v1/views/${form.dataset.view}${params.toString() ? `?${params}` : ""}`;
  const init = request(signal);
  return { url, init, key: `${url}\n${init.body || ""}` };
}

async function fetchView() {
  const generation = changes;
  const controller = new AbortController();
  const { url, init, key } = requestKey(controller.signal);
  if (key === shown) { // the controls came back to the view on screen
    inflight?.abort();
    inflight = null;
    requested = null;
    showError("");
    setStale(false);
    return;
  }
  if (key === requested && inflight) return; // already on its way
  inflight?.abort();
  requested = key;
  inflight = controller;
  try {
    const response = await fetch(url, init);
    const body = await response.json();
    // A view for controls that have moved on since is never painted: theirs is on its way.
    if (controller.signal.aborted || requestKey().key !== key) return;
    if (!response.ok) {
      const items = Array.isArray(body.detail) ? body.detail : [];
      const detail = items.length ? items.map((item) => item.msg).join("; ") : String(body.detail);
      const refused = items.map((item) => ({ name: item.loc?.[1], text: item.msg })).filter((item) => item.name);
      showError(detail || `request failed with status ${response.status}`, refused);
      requested = null;
      return;
    }
    showError("");
    current = body;
    shown = key;
    // The address says what is on screen once the view for it is painted, whatever its throttle had pending.
    window.clearTimeout(addressTimer);
    addressWrites.push(performance.now());
    writeAddress(state());
    await patch(body);
    listeners.forEach((listener) => listener(body, { initial: false }));
    // Patching and page scripts may set controls themselves; only the user's changes leave the view stale.
    if (changes === generation) setStale(false);
  } catch (error) {
    if (error.name === "AbortError") return;
    showError(`Could not reach the server: ${error.message}`);
    requested = null;
  } finally {
    if (inflight === controller) inflight = null;
  }
}

// The address follows a change at once, within the browser's budget (above); past it, once the oldest write leaves
// the window, with the controls as they are then.
function followAddress() {
  const now = performance.now();
  window.clearTimeout(addressTimer);
  while (addressWrites.length && now - addressWrites[0] >= ADDRESS_WINDOW_MS) addressWrites.shift();
  if (addressWrites.length < ADDRESS_BUDGET) {
    addressWrites.push(now);
    writeAddress(state());
  } else {
    addressTimer = window.setTimeout(followAddress, addressWrites[0] + ADDRESS_WINDOW_MS - now);
  }
}

// Called when a control changed: the address follows, the view after a short pause; a request for controls that
// have changed since is cancelled at once.
export function refresh(delay = Number(form?.dataset.debounce || 80)) {
  if (!form) return;
  changes += 1;
  followAddress();
  setStale(true);
  if (inflight && requestKey().key !== requested) {
    inflight.abort();
    inflight = null;
    requested = null;
  }
  window.clearTimeout(timer);
  timer = window.setTimeout(fetchView, delay);
}

export function onView(listener) {
  listeners.push(listener);
  if (document.readyState !== "loading") listener(current, { initial: true });
}

// Called once per animation frame in which controls changed, with the controls that did, after the driver has
// written their outputs and the address; what it returns (a promise, say) is waited for by the frame's timing.
export function onInput(listener) {
  inputListeners.push(listener);
}

// Called in the task of each input event, with the control it changed: for what a page computes itself and
// cheaply (the demo's readouts), so that it is on screen before the next frame.
export function onInputNow(listener) {
  nowListeners.push(listener);
}

export function view() {
  return current;
}

const outputs = new Map(); // control name -> its <output> elements

function liveOutputs(element) {
  if (!outputs.has(element.name)) {
    outputs.set(element.name, [...document.querySelectorAll(`output[data-control="${element.name}"]`)]);
  }
  for (const output of outputs.get(element.name)) {
    const text = Number(element.value).toFixed(Number(output.dataset.digits || 0));
    if (output.textContent !== text) output.textContent = text;
  }
}

function showWhen() {
  for (const element of document.querySelectorAll("[data-when]")) {
    const [name, values] = element.dataset.when.split(":");
    const control = form?.elements.namedItem(name);
    if (control) element.hidden = !values.split(" ").includes(control.value);
  }
}

// ---------------------------------------------------------------- input, one update per animation frame
//
// The first change after a quiet frame is answered at once; changes that follow it within the same frame (a fast
// drag, a held key) wait for the next animation frame and are answered together there: never more than one
// update per frame, and a single change is not delayed by a frame.

const touched = new Set(); // controls changed since the last update
let updatedThisFrame = false;
let frame = 0;
let fallback = 0;

function nextFrame() {
  if (frame) return;
  const run = () => {
    window.cancelAnimationFrame(frame);
    window.clearTimeout(fallback);
    frame = 0;
    fallback = 0;
    updatedThisFrame = false;
    if (touched.size) applyInputs();
  };
  frame = window.requestAnimationFrame(run);
  fallback = window.setTimeout(run, 100); // a page in the background gets no frames
}

// The controls changed since the last update: outputs, the address, the view request, then the page scripts.
async function applyInputs() {
  updatedThisFrame = true;
  nextFrame();
  const start = performance.now();
  const changed = [];
  for (const element of touched) {
    const control = changedControl(element);
    if (!control) continue;
    liveOutputs(control);
    changed.push(control);
  }
  touched.clear();
  if (changed.length === 0) return;
  showWhen();
  refresh();
  await Promise.all(inputListeners.map((listener) => listener(changed)));
  performance.measure("specdec:input-frame", { start, end: performance.now() });
}

// The control a change sets: the element itself, or the control a steps slider (data-steps) sets from its position.
function changedControl(element) {
  if (!element.dataset.steps) return element;
  const target = form.elements.namedItem(element.dataset.target);
  const steps = lookup(current, element.dataset.steps)?.steps;
  if (!target || !steps) return null;
  target.value = String(steps[Number(element.value)]);
  element.setAttribute("aria-valuetext", target.value);
  return target;
}

// What is cheap follows in the same task as the input event: the control's outputs, the page's own readouts
// (onInputNow) and the address; charts and the view wait for the frame (applyInputs).
function onInputEvent(event) {
  const element = event.target;
  if (!element.name && !element.dataset.steps) return;
  const control = changedControl(element);
  if (control) {
    liveOutputs(control);
    for (const listener of nowListeners) listener([control]);
    if (updatedThisFrame) followAddress(); // otherwise applyInputs, just below, writes it
  }
  touched.add(element);
  if (!updatedThisFrame) applyInputs();
}

if (form) {
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", onInputEvent);
  form.addEventListener("change", (event) => {
    if (event.target.name && event.target.tagName === "SELECT") {
      showWhen();
      refresh();
    }
  });
  form.addEventListener("click", async (event) => {
    const reset = event.target.closest("button[data-reset]");
    const load = event.target.closest("a[data-load]");
    if (reset) {
      for (const element of reset.closest("fieldset")?.elements || []) {
        if (element.dataset.default !== undefined) element.value = element.dataset.default;
      }
      refresh();
    }
    if (load) {
      event.preventDefault();
      try {
        const response = await fetch(load.href);
        form.elements.namedItem(load.dataset.load).value = await response.text();
        refresh();
      } catch (error) {
        showError(`Could not reach the server: ${error.message}`);
      }
    }
  });
}

// A chart drawn while its <details> was closed had no width: it takes the width it has once opened.
document.addEventListener("toggle", (event) => {
  if (!event.target.open || !window.Plotly) return;
  for (const chart of event.target.querySelectorAll("[data-figure][data-ready]")) window.Plotly.Plots.resize(chart);
}, true);

if (document.body.classList.contains("embed")) {
  for (const link of document.querySelectorAll("a[href]")) {
    link.target = "_blank";
    link.rel = "noopener";
  }
}

function start() {
  // A value the server had to correct (its note says so) is written back to the address as shown.
  if (form && current.notes && current.notes.length) writeAddress(state());
  if (form) shown = requestKey().key;
  showWhen();
  patch(current).then(() => {
    document.body.dataset.ready = "1";
  });
  listeners.forEach((listener) => listener(current, { initial: true }));
  document.body.dataset.live = "1"; // the controls answer from here on, whether or not Plotly has arrived
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
