// The demo's closed form in the browser, so that a drag never waits for the network.
//
// The one deliberate copy of the Python model (app/model/arithmetic/closed_form.py): E[T], cost, speedup, best k and
// break-even under free verification, and the arithmetic factor. tests/browser/test_closed_form_parity.py holds it to the Python model
// on thousands of generated points, to 1e-12 relative, in the real browser.

export const K_SEARCH_MAX = 64;
const BISECTION_STEPS = 200;

export function expectedTokens(p, k) {
  if (k === 0 || p === 0) return 1;
  if (p === 1) return k + 1;
  const oneMinusP = 1 - p;
  if (p < 0.5) return (1 - p ** (k + 1)) / oneMinusP;
  return -Math.expm1((k + 1) * Math.log1p(-oneMinusP)) / oneMinusP;
}

export function costPerCycle(k, c) {
  return k === 0 ? 1 : k * c + 1;
}

export function speedup(p, k, c) {
  return k === 0 ? 1 : expectedTokens(p, k) / costPerCycle(k, c);
}

// Whether a longer draft beats a shorter one, decided through the gain and loss terms as the Python model
// does (closed_form.beats), never by subtracting two rounded speedups.
function beats(p, longer, shorter, c) {
  const loss = expectedTokens(p, shorter) * ((longer - shorter) * c);
  if (loss < 0) return true;
  if (p === 0) return false;
  if (loss === 0) return true;
  const logGain = (shorter + 1) * Math.log(p)
    + Math.log(expectedTokens(p, longer - shorter - 1))
    + Math.log(costPerCycle(shorter, c));
  return logGain > Math.log(loss);
}

export function bestK(p, c, kMax = K_SEARCH_MAX) {
  let chosen = 0;
  for (let k = 1; k <= kMax; k += 1) {
    if (beats(p, k, chosen, c)) chosen = k;
  }
  return [chosen, speedup(p, chosen, c)];
}

function bisectIncreasing(fn, target, low, high) {
  for (let step = 0; step < BISECTION_STEPS; step += 1) {
    const middle = 0.5 * (low + high);
    if (middle === low || middle === high) break;
    if (fn(middle) < target) low = middle;
    else high = middle;
  }
  return 0.5 * (low + high);
}

export function breakEvenAcceptance(k, c) {
  if (k === 0) return null;
  const cost = costPerCycle(k, c);
  if (expectedTokens(1, k) === cost) return 1; // k c + 1 = k + 1: only p = 1 breaks even
  if (expectedTokens(1, k) < cost) return null;
  if (expectedTokens(0, k) >= cost) return 0;
  return bisectIncreasing((p) => expectedTokens(p, k), cost, 0, 1);
}

// Leviathan Thm 3.11: arithmetic operations against plain decoding, (k c_ops + k + 1) / E[T].
export function operationsIncrease(p, k, cOps = 0) {
  return (k * cOps + k + 1) / expectedTokens(p, k);
}

export function draftAcceptanceRate(p, k) {
  return k === 0 ? null : (p * expectedTokens(p, k - 1)) / k;
}
