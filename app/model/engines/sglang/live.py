"""What a live SGLang server says of its speculation, as ``measure`` reads it between requests.

SGLang exports no per-position counts; since PR #25689 it counts its verifications, ``sglang:spec_verify_calls_total``,
beside ``sglang:generation_tokens_total``, and since PR #25940 the draft length running now as the gauge
``sglang:spec_num_steps`` (``python/sglang/srt/observability/metrics_collector.py``); the verifications are
added when a request finishes, so a window's counts are whole once its requests have returned.  Every generated
token is either a verification's own or an accepted draft token or a request's first (from its prompt's pass), so
over a window the accepted draft tokens are the generated tokens less the verifications less the window's
requests.  A release before those (2026-03) exports neither, and its speculating server cannot be told from a plain
one here.  The ``sglang:spec_accept_length`` gauge covers SGLang's own logging interval, not a window of ours,
and is not read.
"""

from __future__ import annotations

from app.model.engines.base import LiveFormat, SpecCounts
from app.model.engines.live import samples, summed
from app.model.engines.sglang.versions import METRICS

PREFIX = "sglang:"
VERIFY = "sglang:spec_verify_calls_total"
GENERATED = "sglang:generation_tokens_total"
STEPS = "sglang:spec_num_steps"


def _steps(text: str) -> int | None:
    read = samples(text, PREFIX, "an SGLang server")
    values = [sample.value for sample in read if sample.name == STEPS]
    return round(max(values)) if values and max(values) >= 1 else None


def spec_counts(text: str) -> SpecCounts | None:
    """Verifications, draft tokens (verifications x the steps running) and generated tokens less verifications (each
    request's first token still in it: see LiveFormat.first_tokens_in_accepted); None where it does not speculate."""
    read = samples(text, PREFIX, "an SGLang server")
    verify = summed(read, VERIFY)
    if verify is None:  # no request has finished yet, or no speculation (or a release before 2026-05: no gauge)
        return SpecCounts(0, 0, 0, ()) if _steps(text) else None
    generated = summed(read, GENERATED) or 0.0
    steps = _steps(text) or 0
    return SpecCounts(int(verify), int(verify) * steps, int(generated - verify), ())


def _k(text: str, counts: SpecCounts | None) -> int | None:
    return _steps(text) if counts is not None else None


LIVE = LiveFormat(
    engine="sglang",
    title="SGLang",
    metrics_path="/metrics",
    marker=PREFIX,
    native=False,
    counts=spec_counts,
    k_of=_k,
    sources=(METRICS,),
    first_tokens_in_accepted=True,
    version_path="/get_server_info",  # every server argument and "version"; no /version route at 0025436e
    setup_hint="start SGLang with --enable-metrics (a release with sglang:spec_verify_calls_total and spec_num_steps)",
)
