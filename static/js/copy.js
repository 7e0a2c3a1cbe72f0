// A button with data-copy="<element id>" copies that element's text: to the clipboard where the browser
// allows it, otherwise by selecting the text so that the user can copy it by hand.

function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

function status(button, text) {
  const shown = button.parentElement ? button.parentElement.querySelector("[role=status]") : null;
  if (shown) shown.textContent = text;
}

async function copy(button) {
  const target = document.getElementById(button.dataset.copy);
  if (!target) return;
  const text = target.textContent;
  try {
    if (!navigator.clipboard) throw new Error("no clipboard");
    await navigator.clipboard.writeText(text);
    status(button, "Copied.");
  } catch {
    const folded = target.closest("details");
    if (folded) folded.open = true; // a selection the user cannot see cannot be copied by hand
    selectText(target);
    status(button, "Selected: press Ctrl+C (⌘C) to copy.");
  }
}

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (button) copy(button);
});
