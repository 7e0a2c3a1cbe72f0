// In embed mode, tell the parent page how tall the demo is so the iframe can fit it.
//
// The parent receives {type: "specdec-lab:height", height} (CSS pixels) whenever the height changes.
// A parent that starts listening late can post {type: "specdec-lab:request-height"} to get it again.
// The height is not a secret, so any parent may receive it ("*"); parents should still check event.origin.

const HEIGHT_MESSAGE = "specdec-lab:height";
const REQUEST_MESSAGE = "specdec-lab:request-height";

let lastHeight = 0;

function postHeight(force = false) {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height <= 0 || (height === lastHeight && !force)) return;
  lastHeight = height;
  window.parent.postMessage({ type: HEIGHT_MESSAGE, height }, "*");
}

if (document.body.classList.contains("embed") && window.parent !== window) {
  new ResizeObserver(() => postHeight()).observe(document.documentElement);
  window.addEventListener("load", () => postHeight());
  window.addEventListener("message", (event) => {
    if (event.source === window.parent && event.data && event.data.type === REQUEST_MESSAGE) postHeight(true);
  });
}
