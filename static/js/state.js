// Page state lives in the query string so that any view can be shared or embedded as is.

export function readParams() {
  return new URLSearchParams(window.location.search);
}

// A number from the URL, or the fallback when missing, malformed or out of range.
export function readNumber(name, fallback, min = -Infinity, max = Infinity) {
  const raw = readParams().get(name);
  if (raw === null || raw.trim() === "") return fallback;
  const value = Number(raw);
  return Number.isFinite(value) && value >= min && value <= max ? value : fallback;
}

// One of the allowed strings from the URL, or the fallback.
export function readChoice(name, allowed, fallback) {
  const raw = readParams().get(name);
  return allowed.includes(raw) ? raw : fallback;
}

// Merge values into the query string without a navigation; null or undefined removes a key.
export function writeState(values) {
  const params = readParams();
  for (const [name, value] of Object.entries(values)) {
    if (value === null || value === undefined) params.delete(name);
    else params.set(name, String(value));
  }
  const query = params.toString();
  const url = `${window.location.pathname}${query ? `?${query}` : ""}${window.location.hash}`;
  window.history.replaceState(null, "", url);
}
