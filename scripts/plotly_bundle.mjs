// Plotly.js for the pages, built once when it is installed (npm's postinstall), never while serving.
//
// Only what the pages draw: Plotly's core (scatter, axes, legend, hover) and bar traces, from the plotly.js
// package that package.json pins, the same Plotly.js version as the plotly Python package the figures are
// written for. npm's ready-made partial bundles carry more (pie, and world calendars for axes the pages never use).
//
// Its start is spread over several tasks. A bundle evaluates every module in the one task that runs the script,
// and on a slow machine that task took 150-240 ms, long enough to freeze a page that is already answering input.
// Here the modules run in stages, each in a task of its own: a stage requires a few modules whose whole
// dependency closure holds no cycle, in the order a plain evaluation finishes them, so each module still runs
// once, after everything it requires, and sees what it would have seen. The last stage runs Plotly's own entry
// (its registrations), sets window.Plotly and resolves window.PlotlyReady with it.
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

import { writeBrotli } from "./precompress.mjs";

const OUTPUT = join("node_modules", ".plotly-partial", "plotly.min.js");
const ENTRY = ["plotly.js/lib/core", "plotly.js/lib/bar"];
// Minified bytes of module code per stage: about 15 ms of evaluation each on this project's machines.
const STAGE_BYTES = 60_000;
const COMMON = {
  bundle: true,
  minify: true,
  target: "es2020",
  loader: { ".css": "empty" }, // a stylesheet of map traces the pages never draw
  define: { global: "window" },
  logLevel: "error",
};

function graph(metafile) {
  const edges = new Map();
  for (const [path, input] of Object.entries(metafile.inputs)) {
    edges.set(path, input.imports.filter((item) => !item.external).map((item) => item.path));
  }
  return edges;
}

// Every module reachable from `path`, itself included.
function closureOf(edges, path, known) {
  if (known.has(path)) return known.get(path);
  const seen = new Set([path]);
  const stack = [path];
  while (stack.length) {
    for (const next of edges.get(stack.pop()) || []) {
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  known.set(path, seen);
  return seen;
}

// The order in which a plain evaluation from `root` finishes its modules (depth first, each after its requires).
function finishingOrder(edges, root) {
  const state = new Map();
  const order = [];
  const visit = (path) => {
    state.set(path, "open");
    for (const next of edges.get(path) || []) if (!state.has(next)) visit(next);
    state.set(path, "done");
    order.push(path);
  };
  visit(root);
  return order;
}

function stages(metafile, output) {
  const edges = graph(metafile);
  const sizes = metafile.outputs[output].inputs;
  const root = [...edges.keys()].find((path) => path.startsWith("<stdin>"));
  const known = new Map();
  const onCycle = new Set(
    [...edges.keys()].filter((path) => (edges.get(path) || []).some((next) => closureOf(edges, next, known).has(path))),
  );
  const done = new Set();
  const result = [];
  let stage = [];
  let bytes = 0;
  for (const path of finishingOrder(edges, root)) {
    if (path === root || done.has(path)) continue;
    const closure = [...closureOf(edges, path, known)];
    if (closure.some((item) => onCycle.has(item))) continue; // left to the last stage, run as Plotly runs it
    const fresh = closure.filter((item) => !done.has(item));
    for (const item of fresh) done.add(item);
    stage.push(path);
    bytes += fresh.reduce((sum, item) => sum + (sizes[item]?.bytesInOutput || 0), 0);
    if (bytes >= STAGE_BYTES) {
      result.push(stage);
      stage = [];
      bytes = 0;
    }
  }
  if (stage.length) result.push(stage);
  return result;
}

function entrySource(staged) {
  const require = (path) => `require(${JSON.stringify(path)});`;
  const list = staged.map((stage) => `() => { ${stage.map((path) => require(`./${path}`)).join(" ")} }`);
  return `
const stages = [\n${list.join(",\n")}\n];
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
window.PlotlyReady = (async () => {
  for (const stage of stages) {
    stage();
    await nextTask();
  }
  const Plotly = require(${JSON.stringify(ENTRY[0])});
  Plotly.register([${ENTRY.slice(1).map((path) => `require(${JSON.stringify(path)})`).join(", ")}]);
  window.Plotly = Plotly;
  return Plotly;
})();
`;
}

async function main() {
  const version = createRequire(import.meta.url)("plotly.js/package.json").version;
  const probe = await esbuild.build({
    ...COMMON,
    stdin: { contents: ENTRY.map((path) => `require(${JSON.stringify(path)});`).join("\n"), resolveDir: "." },
    outfile: "probe.js",
    write: false,
    metafile: true,
  });
  const staged = stages(probe.metafile, "probe.js");
  const built = await esbuild.build({
    ...COMMON,
    stdin: { contents: entrySource(staged), resolveDir: "." },
    format: "iife",
    outfile: OUTPUT,
    write: false,
    legalComments: "eof",
    banner: { js: `/*! plotly.js (scatter, bar; started in ${staged.length + 1} tasks) v${version} | MIT */` },
  });
  mkdirSync(dirname(OUTPUT), { recursive: true });
  writeFileSync(OUTPUT, built.outputFiles[0].contents);
  console.log(`${OUTPUT}: Plotly.js ${version}, ${readFileSync(OUTPUT).length} bytes, ${staged.length + 1} stages`);
  writeBrotli(OUTPUT);
}

await main();
