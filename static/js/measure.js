// Step 6 of /decide: start a measurement of the user's servers (POST /api/v1/measure), show its progress and the
// cells as they are measured, let it be cancelled, and show the measured speedups and crossover at the end.

const form = document.getElementById("measure-form");
const POLL_MS = 1000;

function shown(element, visible) {
  if (element) element.hidden = !visible;
}

function number(value, digits) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "–";
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const text of cells) {
    const td = document.createElement("td");
    td.textContent = text;
    tr.append(td);
  }
  return tr;
}

function fill(table, rows) {
  const body = table.querySelector("tbody");
  body.replaceChildren(...rows.map(row));
}

function labelled(message, labels) {
  // "servers: from 2 to 8 servers ..." -> "Servers: from 2 to 8 servers ...": the on-screen label, not the name
  const match = /^`?([a-z_]+)`?: /.exec(message);
  return match && labels[match[1]] ? `${labels[match[1]]}: ${message.slice(match[0].length)}` : message;
}

async function errorText(response, labels) {
  try {
    const body = await response.json();
    const detail = body.detail;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) return detail.map((item) => labelled(item.msg, labels)).join(" ");
  } catch {
    // not JSON: the status says it
  }
  return `The server answered ${response.status}.`;
}

function showJob(job) {
  const bar = document.getElementById("measure-bar");
  bar.value = job.fraction;
  const planned = job.planned ? ` of ${job.planned}` : "";
  document.getElementById("measure-status").textContent =
    `${job.state}: ${job.done}${planned} requests, ${Math.round(job.seconds)} s · ${job.label}`;
  const cells = job.cells.map((cell) => [
    cell.url,
    cell.k === null ? "?" : String(cell.k),
    String(cell.batch),
    String(cell.round),
    number(cell.ms_per_token, 2),
    number(cell.tokens_per_s, 1),
    `${cell.accepted} / ${cell.drafts}`,
  ]);
  fill(document.getElementById("measure-cells"), cells);
  document.getElementById("measure-cell-count").textContent = String(cells.length);
  document.getElementById("measure-cells-when").textContent = job.state === "running" ? " so far" : "";
  shown(document.getElementById("measure-cells-box"), cells.length > 0);
  const error = document.getElementById("measure-error");
  error.textContent = job.error || "";
  shown(error, Boolean(job.error));
  if (job.report && job.report.cells) showReport(job.report);
}

function showReport(report) {
  const speedups = report.cells
    .filter((cell) => cell.k > 0)
    .map((cell) => [
      String(cell.k),
      String(cell.batch),
      number(cell.measured_speedup, 2) +
        (cell.measured_speedup_low === null || cell.measured_speedup_low === undefined
          ? ""
          : ` [${number(cell.measured_speedup_low, 2)}, ${number(cell.measured_speedup_high, 2)}]`),
      number(cell.measured_speedup_end_to_end, 2),
      number(cell.tokens_per_verification, 2),
      number(cell.throughput_tokens_s, 1),
    ]);
  fill(document.getElementById("measure-speedups"), speedups);
  const lines = (report.crossover || []).map((item) =>
    item.crossover_batch_measured === null
      ? `k = ${item.k}: still pays at the largest batch measured`
      : `k = ${item.k}: stops paying from batch ${item.crossover_batch_measured} (measured, per output token)`,
  );
  document.getElementById("measure-crossover").textContent = lines.join("; ");
  const notes = document.getElementById("measure-notes");
  notes.replaceChildren(
    ...(report.notes || []).map((note) => {
      const li = document.createElement("li");
      li.textContent = note;
      return li;
    }),
  );
  showConfig(report.engine_config);
  shown(document.getElementById("measure-result"), true);
}

// The engine's config for the schedule the sweep measured, as the engine takes it, with its notes.
function showConfig(config) {
  const box = document.getElementById("measure-config-box");
  if (!box) return;
  shown(box, Boolean(config));
  if (!config) return;
  document.getElementById("measure-config-title").textContent =
    `The config for the measured schedule (${config.title} ${config.version}):`;
  document.getElementById("measure-config-text").textContent = config.text || config.error || "(nothing to write: see the notes)";
  document.getElementById("measure-config-notes").replaceChildren(
    ...(config.notes || []).map((note) => {
      const li = document.createElement("li");
      li.textContent = note;
      return li;
    }),
  );
}

function finished(running) {
  document.getElementById("measure-start").disabled = running;
  shown(document.getElementById("measure-cancel"), running);
}

async function poll(id) {
  const response = await fetch(`/api/v1/measure/${encodeURIComponent(id)}`, { headers: { accept: "application/json" } });
  if (!response.ok) {
    finished(false);
    return;
  }
  const job = await response.json();
  showJob(job);
  if (job.state === "running") {
    window.setTimeout(() => poll(id), POLL_MS);
  } else {
    finished(false);
  }
}

if (form) {
  const labels = JSON.parse(form.dataset.labels || "{}");
  let current = null;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    let prompts = ""; // the workload goes as the body, one prompt per line
    for (const [name, value] of new FormData(form)) {
      if (name === "prompts") prompts = String(value);
      else if (value !== "") query.set(name, String(value)); // an empty choice: the server tells
    }
    const error = document.getElementById("measure-error");
    for (const id of ["measure-error", "measure-result", "measure-progress", "measure-cells-box"]) {
      shown(document.getElementById(id), false); // nothing of an earlier measurement stays beside this one
    }
    finished(true);
    const response = await fetch(`/api/v1/measure?${query}`, {
      method: "POST",
      headers: { accept: "application/json", "content-type": "text/plain" },
      body: prompts,
    });
    if (response.status !== 202) {
      error.textContent = await errorText(response, labels);
      shown(error, true);
      finished(false);
      return;
    }
    const job = await response.json();
    current = job.id;
    shown(document.getElementById("measure-progress"), true);
    showJob(job);
    window.setTimeout(() => poll(job.id), POLL_MS);
  });
  document.getElementById("measure-cancel").addEventListener("click", async () => {
    if (current) await fetch(`/api/v1/measure/${encodeURIComponent(current)}/cancel`, { method: "POST" });
  });
}
