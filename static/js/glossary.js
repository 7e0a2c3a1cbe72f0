// The words a newcomer may not know (v(k), τ, SpS, Wilson score...), explained on hover and on focus.
//
// The terms and their patterns are written once, in app/web/pages/glossary.py, and reach the page as the JSON of
// #glossary-data; /glossary lists them. In each section of the page the first place a term is written (matched
// against the text a reader sees, across <var> and <sub>) becomes focusable and shows the term's explanation in
// one shared tooltip; a template may also mark a term itself with <span class="term" data-term="id">. Results the
// driver rewrites are looked at again once the page has settled.

const data = document.getElementById("glossary-data");
const terms = data ? JSON.parse(data.textContent) : [];
const byId = new Map(terms.map((term) => [term.id, term]));
const matchers = terms.map((term) => ({ term, pattern: new RegExp(term.patterns.map((p) => `(?:${p})`).join("|"), "u") }));

// Where a term is never looked for: form fields, code, links and buttons (their own action), charts, tooltips.
const SKIP = "script, style, textarea, input, select, option, code, pre, a, button, summary, output, svg, "
  + ".js-plotly-plot, .term, .token, [hidden], [data-glossary-skip], #glossary-tip";
// The elements whose text is read as one: a term may run across the inline elements inside them.
const BLOCKS = "p, li, dt, dd, th, td, caption, figcaption, h1, h2, h3, h4, label, legend, small, .readout-label, div, "
  + "section, main";
const INLINE = new Set(["VAR", "SUB", "SUP", "EM", "I", "B", "STRONG", "SPAN"]);
const BOUND = "[data-text], [data-spans], [data-list], [data-table], [data-show]";
const root = document.getElementById("main");
let tip = null;
let scheduled = 0;

function tooltip() {
  if (tip) return tip;
  tip = document.createElement("div");
  tip.id = "glossary-tip";
  tip.className = "glossary-tip";
  tip.setAttribute("role", "tooltip");
  tip.hidden = true;
  document.body.append(tip);
  return tip;
}

function show(element) {
  const term = byId.get(element.dataset.term);
  if (!term) return;
  const box = tooltip();
  const name = Object.assign(document.createElement("strong"), { textContent: term.name });
  box.replaceChildren(name, document.createTextNode(` ${term.definition}`));
  box.hidden = false;
  const rect = element.getBoundingClientRect();
  const width = box.offsetWidth;
  const left = Math.min(Math.max(rect.left, 8), document.documentElement.clientWidth - width - 8);
  box.style.left = `${Math.max(left, 8) + window.scrollX}px`;
  box.style.top = `${rect.bottom + window.scrollY + 6}px`;
  box.dataset.term = term.id;
}

function hide() {
  if (tip) tip.hidden = true;
}

function prepare(element) {
  if (element.dataset.glossaryReady) return;
  element.dataset.glossaryReady = "1";
  element.tabIndex = 0;
  element.setAttribute("aria-describedby", "glossary-tip");
  tooltip();
}

function blockOf(node) {
  return node.parentElement.closest(BLOCKS);
}

// The text nodes a reader sees, grouped by the block they are read in.
function textBlocks() {
  const blocks = new Map();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.data.trim() && !node.parentElement.closest(SKIP)
      ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT),
  });
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const block = blockOf(node);
    if (!block) continue;
    if (!blocks.has(block)) blocks.set(block, []);
    blocks.get(block).push(node);
  }
  return blocks;
}

// A match that starts (ends) a <var> or <sub> takes the whole element, so that no empty copy of it is left.
function widen(range) {
  let node = range.startContainer;
  if (range.startOffset === 0) {
    while (node.parentElement && INLINE.has(node.parentElement.tagName) && !node.parentElement.matches(BOUND)
      && node.parentElement.firstChild === node) node = node.parentElement;
    range.setStartBefore(node);
  }
  node = range.endContainer;
  if (range.endOffset === node.length) {
    while (node.parentElement && INLINE.has(node.parentElement.tagName) && !node.parentElement.matches(BOUND)
      && node.parentElement.lastChild === node) node = node.parentElement;
    range.setEndAfter(node);
  }
}

// Wraps text[start, end) of a block's nodes in a term; false when it would cut through text the driver rewrites.
function wrap(nodes, start, end, term) {
  let offset = 0;
  let first = null;
  let last = null;
  for (const node of nodes) {
    const next = offset + node.data.length;
    if (!first && start < next) first = { node, at: start - offset };
    if (!last && end <= next) last = { node, at: end - offset };
    offset = next;
  }
  if (!first || !last) return false;
  const inside = nodes.slice(nodes.indexOf(first.node), nodes.indexOf(last.node) + 1);
  const bound = inside[0].parentElement.closest(BOUND);
  if (inside.some((node) => node.parentElement.closest(BOUND) !== bound)) return false;
  const range = document.createRange();
  range.setStart(first.node, first.at);
  range.setEnd(last.node, last.at);
  widen(range);
  const element = document.createElement("span");
  element.className = "term";
  element.dataset.term = term.id;
  element.append(range.extractContents());
  range.insertNode(element);
  prepare(element);
  return true;
}

function scopeOf(element) {
  return element.closest("section") || root;
}

// One pass: the first place, in a section without it yet, where a term is written; true if one was marked (the
// text nodes have changed: read them again).
function markOne() {
  const marked = new Map(); // section -> ids of the terms it has
  for (const element of root.querySelectorAll(".term[data-term]")) {
    const scope = scopeOf(element);
    if (!marked.has(scope)) marked.set(scope, new Set());
    marked.get(scope).add(element.dataset.term);
  }
  for (const [block, nodes] of textBlocks()) {
    const have = marked.get(scopeOf(block)) || new Set();
    const text = nodes.map((node) => node.data).join("");
    for (const { term, pattern } of matchers) {
      if (have.has(term.id)) continue;
      const found = pattern.exec(text);
      if (found && found[0] && wrap(nodes, found.index, found.index + found[0].length, term)) return true;
    }
  }
  return false;
}

export function scan() {
  if (!root || matchers.length === 0) return;
  for (const element of root.querySelectorAll(".term[data-term]")) prepare(element);
  for (let pass = 0; pass < 200 && markOne(); pass += 1);
}

function scanSoon() {
  window.clearTimeout(scheduled);
  scheduled = window.setTimeout(() => {
    observer.disconnect();
    scan();
    observer.takeRecords();
    observe();
  }, 150);
}

const observer = new MutationObserver(scanSoon);

function observe() {
  if (root) observer.observe(root, { childList: true, characterData: true, subtree: true });
}

function start() {
  scan();
  observe();
  document.addEventListener("mouseover", (event) => {
    const term = event.target.closest?.(".term[data-term]");
    if (term) show(term);
  });
  document.addEventListener("mouseout", (event) => {
    const term = event.target.closest?.(".term[data-term]");
    if (term && !term.contains(event.relatedTarget) && document.activeElement !== term) hide();
  });
  document.addEventListener("focusin", (event) => {
    if (event.target.matches?.(".term[data-term]")) show(event.target);
  });
  document.addEventListener("focusout", (event) => {
    if (event.target.matches?.(".term[data-term]")) hide();
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") hide();
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
