// Batch size and hardware: the editable preset fields follow their preset. A field's default is its preset's
// value (from the view), so only edits reach the address; an edited field is marked; choosing another preset
// drops the edits of its fields (and, for the accelerator or the target, goes back to the fewest devices that fit).

import { onView } from "./driver.js";

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
  if (select.name === "hw" || select.name === "model") form.elements.namedItem("devices").value = "0";
}, true);

form.addEventListener("input", (event) => {
  if (event.target.dataset.group) mark(event.target);
});

onView((view) => {
  for (const input of form.querySelectorAll("input[data-group]")) {
    input.dataset.default = view.fields[input.name].preset;
    mark(input);
  }
});
