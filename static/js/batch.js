// Batch size and hardware: the editable preset fields follow their preset. A field's default is its preset's
// value (from the view), so only edits reach the address; an edited field is marked; choosing another preset
// drops the edits of its fields. The Devices count the user set is kept across a change of accelerator or target:
// where it no longer holds them, the note beside it says so and its button sets the fewest that do.

import { onView, state, view } from "./driver.js";

const form = document.querySelector('form[data-view="batch"]');

function mark(input) {
  input.classList.toggle("edited", input.value !== input.dataset.default);
}

function fieldsOf(group) {
  return form.querySelectorAll(`input[data-group="${group}"]`);
}

// Capture phase: the edits are gone before the driver reads the controls for the address and the view.
form.addEventListener("input", (event) => {
  const select = event.target;
  if (select.tagName !== "SELECT" || fieldsOf(select.name).length === 0) return;
  for (const input of fieldsOf(select.name)) {
    input.value = input.dataset.default;
    mark(input);
  }
}, true);

form.addEventListener("input", (event) => {
  if (event.target.dataset.group) mark(event.target);
});

document.getElementById("devices-fit")?.addEventListener("click", () => {
  const count = view().readouts.devices_fit;
  if (!count) return;
  const devices = form.elements.namedItem("devices");
  devices.value = count;
  devices.dispatchEvent(new Event("input", { bubbles: true }));
  devices.focus();
});

onView((view) => {
  for (const input of form.querySelectorAll("input[data-group]")) {
    input.dataset.default = view.fields[input.name].preset;
    mark(input);
  }
});

// Step times pasted here (or read from a file) are fitted on this setup by POST /api/v1/step-fit; the answer's
// query (the fitted terms, the terms the measured steps hold at 0, the steps and the fit's out-of-sample error)
// is written into their fields, which then answer as if typed (the address and the view follow).
const FITTED = { bandwidth_efficiency: 3, compute_efficiency: 3, overhead_us: 1 };
const MEASURED = ["fit_steps", "fit_error"];

// A term typed over a fitted one is no longer the measurement's: the page then answers from terms given.
form.addEventListener("input", (event) => {
  const name = event.target.name;
  if (!event.isTrusted || MEASURED.includes(name) || !fittedNames().has(name)) return;
  for (const mark of MEASURED) {
    const input = form.elements.namedItem(mark);
    if (input && input.value !== "") {
      input.value = "";
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }
});

function fittedNames() {
  return new Set((form.dataset.fitted || "").split(",").filter(Boolean));
}
const fitButton = document.getElementById("step-fit-run");
const fitResult = document.getElementById("step-fit-result");

async function fitStepTimes() {
  const text = document.getElementById("step-times").value;
  const setup = state();
  for (const name of Object.keys(FITTED)) setup.delete(name); // fitted, not given
  fitButton.disabled = true;
  fitResult.textContent = "Fitting…";
  try {
    const response = await fetch(`/api/v1/step-fit?${setup}`, {
      method: "POST",
      headers: { "content-type": "text/plain", accept: "application/json" },
      body: text,
    });
    const body = await response.json();
    if (!response.ok) {
      const items = Array.isArray(body.detail) ? body.detail : [];
      fitResult.textContent = items.length ? items.map((item) => item.msg).join("; ") : String(body.detail);
      return;
    }
    const fitted = new URLSearchParams(body.query);
    form.dataset.fitted = [...fitted.keys()].filter((name) => !MEASURED.includes(name)).join(",");
    for (const name of MEASURED) if (!fitted.has(name)) fitted.set(name, ""); // one batch size: not measured
    for (const [name, value] of fitted) {
      const input = form.elements.namedItem(name);
      if (!input) continue;
      input.value = name in FITTED ? Number(value).toFixed(FITTED[name]) : value;
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const percent = (value) => `${(100 * value).toFixed(1)}%`;
    const bounds = body.at_bounds.length ? ` At a bound of its range: ${body.at_bounds.join(", ")}.` : "";
    fitResult.textContent =
      `Fitted to ${body.rows} steps (${body.format}): bandwidth efficiency ${fixed(body.bandwidth_efficiency, 3)}, ` +
      `compute efficiency ${fixed(body.compute_efficiency, 3)}, overhead ${fixed(body.overhead_us, 1)} µs; ` +
      `error ${percent(body.rms_relative_error)} RMS, ${percent(body.max_relative_error)} at most` +
      (body.holdout_error === null ? "." : `; out of sample ${percent(body.holdout_error)}.`) +
      bounds;
  } catch (error) {
    fitResult.textContent = `Could not reach the server: ${error.message}`;
  } finally {
    fitButton.disabled = false;
  }
}

function fixed(value, digits) {
  return Number(value).toFixed(digits);
}

fitButton?.addEventListener("click", fitStepTimes);

document.getElementById("step-times-file")?.addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  document.getElementById("step-times").value = await file.text();
  await fitStepTimes();
});
