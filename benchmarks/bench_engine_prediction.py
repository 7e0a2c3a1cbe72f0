"""The closed form's speedup against the speedup measured on the real llama-server, per draft length.

Setups (tests/live_engine.py's engine: SmolLM2-135M F16 target on this machine's CPU): each draft model
(draft-simple, --spec-draft-p-min 0), n-gram lookup (ngram-simple, lookup of 1 token, drafts up to k) on
text that repeats, and on text that does not.  Each setup runs a server without speculation (k = 0) and
one per k = 1, 2, 4, 8, at -lv 4 (the engine's own draft time) and one thread, and `specdec-lab measure`'s
sweep over them: every prompt on every server in turn (rotated), ROUNDS rounds, each prompt's fastest
round counted.

RATIO engine_<setup>_k<k> predicted measured ratio: the closed form E / (L c + v0 + beta L) with E from the
measured acceptance profile, c from the engine's draft time and v fitted over the setup's k, against the
measured speedup (plain ms per token over speculative ms per token).  ``_mixed``: the same costs with the
measured share of decoding steps that verified a draft, the others one plain step each.  The table's
``holdout`` fits v without that k (the k predicted from the other k's costs and its own acceptance); the
spread is each ratio's range over the rounds taken one at a time.  No bound: the ratio is the figure
(1 = the prediction is right).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

import httpx

from app.model.live.measure import Analysis, MeasureError, analyze
from app.service.clients.measure import Run, Sweep, samples_from
from tests.live_engine import NOVEL_PROMPT, REPEATING_PROMPT, engine, llama_server

KS = (1, 2, 4, 8)
# -lv 4 for the engine's draft time; one thread, since this build's OpenMP threads spin at their barriers and
# two of them on two shared cores slow down a hundredfold whenever anything else runs
FLAGS = ["-lv", "4", "--threads", "1"]
ROUNDS = 3
N_PREDICT = 64
NOVEL = (
    NOVEL_PROMPT,
    "Explain in plain words why the sky is blue and why sunsets are red.",
    "The history of the printing press begins",
)
REPEATING = (
    REPEATING_PROMPT,
    "Say it again: " + " ".join(["the cat sat on the mat."] * 10),
    "Days: " + " ".join(["Monday Tuesday Wednesday Thursday Friday Saturday Sunday"] * 8),
)


def _draft(path: str) -> list[list[str]]:
    base = ["--spec-type", "draft-simple", "-md", path, "--spec-draft-p-min", "0"]
    return [[*base, "--spec-draft-n-max", str(k)] for k in KS]


def _ngram() -> list[list[str]]:
    base = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1"]
    return [[*base, "--spec-ngram-simple-size-m", str(k)] for k in KS]


def _sweep(per_k: Sequence[list[str]], prompts: Sequence[str]) -> Run:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(llama_server([*arguments, *FLAGS])) for arguments in [[], *per_k]]
        with httpx.Client() as client:
            return Sweep(
                client,
                [server.url for server in servers],
                prompts,
                n_predict=N_PREDICT,
                repeats=ROUNDS,
                max_requests=500,
                timeout=900.0,
                logs=[str(server.log_path) for server in servers],
                expected_k=[0, *KS],
            ).run()


def _ratios(analysis: Analysis) -> dict[int, tuple[float, float]]:
    """(closed form, mixed form) over measured, per k."""
    return {
        result.k: (
            result.predicted_speedup / result.measured_speedup,
            result.predicted_speedup_mixed / result.measured_speedup,
        )
        for result in analysis.results
        if result.k > 0 and result.predicted_speedup is not None and result.predicted_speedup_mixed is not None
    }


def _range(values: list[float]) -> str:
    return f"{min(values):.3f}..{max(values):.3f}" if values else "-"


def _report(name: str, run: Run) -> None:
    analysis = analyze(run.samples)
    rounds: list[dict[int, tuple[float, float]]] = []
    for index in range(ROUNDS):
        with contextlib.suppress(MeasureError):
            rounds.append(_ratios(analyze(samples_from(run.servers, run.records, repeats=[index]))))
    print(
        f"\n{name}: plain {analysis.plain_ms_per_token:.2f} ms/token, c = {analysis.c:.4f} (pooled), "
        f"v0 = {analysis.v0:.3f}, beta = {analysis.beta:.3f}; {run.requests} requests in {run.seconds:.0f} s"
    )
    print(
        f"{'k':>3} {'tok/verif':>9} {'L':>5} {'share':>5} {'c':>6} {'v(k)':>6} {'measured':>8} {'predicted':>9} "
        f"{'mixed':>6} {'holdout':>7}  spread over rounds: predicted/measured, mixed/measured"
    )
    for result in analysis.results:
        if result.k == 0 or result.tokens_per_verification is None:
            continue
        closed = [ratios[result.k][0] for ratios in rounds if result.k in ratios]
        mixed = [ratios[result.k][1] for ratios in rounds if result.k in ratios]
        holdout = result.predicted_speedup_holdout
        print(
            f"{result.k:>3} {result.tokens_per_verification:>9.3f} {result.mean_draft_length:>5.2f} "
            f"{result.draft_share:>5.2f} {result.c:>6.3f} {result.v:>6.3f} {result.measured_speedup:>8.3f} "
            f"{result.predicted_speedup:>9.3f} {result.predicted_speedup_mixed:>6.3f} "
            f"{holdout if holdout is not None else float('nan'):>7.3f}  {_range(closed)}, {_range(mixed)}"
        )
    print(
        f"best k: measured {analysis.best_k_measured}, predicted {analysis.best_k_predicted} (closed form), "
        f"{analysis.best_k_predicted_mixed} (mixed)"
    )
    for result in analysis.results:
        if result.k == 0 or result.predicted_speedup is None or result.predicted_speedup_mixed is None:
            continue
        measured = result.measured_speedup
        for suffix, predicted in (("", result.predicted_speedup), ("_mixed", result.predicted_speedup_mixed)):
            print(f"RATIO engine_{name}_k{result.k}{suffix} {predicted:.4f} {measured:.4f} {predicted / measured:.3f}")


def main() -> None:
    built = engine()
    setups = [
        ("draft_requantized", _draft(built.drafts["requantized"]), NOVEL),
        ("draft_truncated", _draft(built.drafts["truncated"]), NOVEL),
        ("ngram_repeating", _ngram(), REPEATING),
        ("ngram_novel", _ngram(), NOVEL),
    ]
    started = time.perf_counter()
    for name, per_k, prompts in setups:
        _report(name, _sweep(per_k, prompts))
    print(f"\n{len(setups)} setups in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
