// JSON from the page's own API; a newer request for the same key cancels the older one.

const inflight = new Map();

export class ApiError extends Error {
  constructor(status, detail) {
    const messages = Array.isArray(detail) ? detail.map((item) => item.msg).join("; ") : String(detail);
    super(messages || `request failed with status ${status}`);
    this.status = status;
  }
}

export function apiUrl(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined) query.set(name, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

// Resolves to the parsed body, or to null when a newer request with the same key replaced this one.
export async function latestJSON(key, path, params = {}, init = {}) {
  inflight.get(key)?.abort();
  const controller = new AbortController();
  inflight.set(key, controller);
  try {
    const response = await fetch(apiUrl(path, params), { ...init, signal: controller.signal });
    const body = await response.json();
    if (!response.ok) throw new ApiError(response.status, body.detail);
    return body;
  } catch (error) {
    if (error.name === "AbortError") return null;
    throw error;
  } finally {
    if (inflight.get(key) === controller) inflight.delete(key);
  }
}
