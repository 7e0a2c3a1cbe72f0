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

// Step times pasted here are fitted on this setup by POST /api/v1/step-fit; the fitted values (one overhead for
// target and draft passes alike: the draft step's own is left unset) are written
// into their fields, which then answer as if typed (the address and the view follow).
const FITTED = { bandwidth_efficiency: 3, compute_efficiency: 3, overhead_us: 1 };
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
    for (const [name, digits] of Object.entries(FITTED)) {
      const input = form.elements.namedItem(name);
      input.value = Number(body[name]).toFixed(digits);
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const percent = (value) => `${(100 * value).toFixed(1)}%`;
    const bounds = body.at_bounds.length ? ` At a bound of its range: ${body.at_bounds.join(", ")}.` : "";
    fitResult.textContent =
      `Fitted to ${body.rows} steps (${body.format}): bandwidth efficiency ${fixed(body.bandwidth_efficiency, 3)}, ` +
      `compute efficiency ${fixed(body.compute_efficiency, 3)}, overhead ${fixed(body.overhead_us, 1)} µs; ` +
      `error ${percent(body.rms_relative_error)} RMS, ${percent(body.max_relative_error)} at most.${bounds}`;
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
