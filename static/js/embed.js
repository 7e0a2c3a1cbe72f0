// In embed mode, tell the parent page how tall the demo is so the iframe can fit it.

const MESSAGE_TYPE = "specdec-lab:height";

function postHeight() {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  window.parent.postMessage({ type: MESSAGE_TYPE, height }, "*");
}

if (document.body.classList.contains("embed") && window.parent !== window) {
  new ResizeObserver(postHeight).observe(document.documentElement);
  window.addEventListener("load", postHeight);
}
