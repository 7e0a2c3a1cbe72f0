"""Where speculation stops paying on the real llama-server: measured across batch sizes, predicted out of sample.

Setups (tests/live_engine.py's engine: SmolLM2-135M F16 target, this machine's CPU, one thread): n-gram lookup
(ngram-simple, lookup of 1 token) on text that repeats (it pays at every batch measured), on a list whose
lines differ in their numbers (some drafts right: the crossover falls inside the grid, earlier for longer
drafts), and the requantized draft model (draft-simple, --spec-draft-p-min 0) on text that does not repeat.
Each runs a server without speculation (k = 0) and one per k,
all with --parallel 16, and `specdec-lab measure --batch`'s sweep over them: B requests at once, for
B = 1, 2, 4, 8, 16; ROUNDS rounds, interleaved (every batch on every server in each round, the order rotated).
SPECDEC_BENCH_SETUPS=draft_novel (names comma-separated) runs only those setups; SPECDEC_BENCH_ROUNDS=5 takes
five rounds instead of three; SPECDEC_BENCH_SAVE=FOLDER writes each setup's measured rounds there as JSON.

RATIO batch_<setup>_k<k>_b<B>_<holdout> predicted measured ratio: the speedup predicted for that cell from a
step cost fitted without it (``loo``) or without any cell at that batch (``lobo``), over the measured speedup
(1 = right).  Batch 1 left out holds the only one-token pass, which no other batch measures; ``lobo_given``
predicts it again with the terms that fit cannot identify given from another setup's sweep on the same engine
and hardware (`measure --batch --given-step-cost`): out of sample twice over, another workload and another run.
The table gives each cell's spread over the rounds taken alone, and per k the crossover batch measured and
predicted from the batches below it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from app.model.cost import step_cost
from app.model.live.measure_batches import BatchAnalysis, analyze_batches
from app.service.clients.measure import Run, Sweep
from tests.live_engine import NOVEL_PROMPT, REPEATING_PROMPT, engine, llama_server

BATCHES = (1, 2, 4, 8, 16)
ROUNDS = int(os.environ.get("SPECDEC_BENCH_ROUNDS", "3"))  # more rounds: a steadier fastest round, a longer run
N_PREDICT = 32
FLAGS = ["--threads", "1", "--parallel", "16", "--ctx-size", "8192"]
LIST_PROMPT = "Shopping list:\n" + "\n".join(f"- {count} apples, {count + 1} pears" for count in range(1, 12))


def _sweep(per_k: dict[int, list[str]], prompts: Sequence[str]) -> Run:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(llama_server([*arguments, *FLAGS])) for arguments in per_k.values()]
        with httpx.Client() as client:
            return Sweep(
                client,
                [server.url for server in servers],
                prompts,
                batches=BATCHES,
                n_predict=N_PREDICT,
                repeats=ROUNDS,
                max_requests=5_000,
                timeout=1_500.0,
                expected_k=sorted(per_k),
            ).run()


def _report(name: str, run: Run, analysis: BatchAnalysis) -> None:
    cost = analysis.step_cost
    print(
        f"\n{name}: {run.requests} requests in {run.seconds:.0f} s; step cost on every cell: "
        f"{step_cost.terms_text(dataclasses.asdict(cost), cost.fitted)} (rms {cost.rms_relative_error or 0:.1%})"
    )
    print(f"{'k':>3} {'batch':>5} {'step ms':>8} {'tok/step':>8} {'measured':>8} {'rounds':>11} {'loo':>6} {'lobo':>6}")
    for cell in analysis.cells:
        if cell.k == 0:
            continue
        rounds = cell.speedup_rounds
        print(
            f"{cell.k:>3} {cell.batch:>5} {cell.step_ms:>8.2f} {cell.tokens_per_step:>8.2f} "
            f"{cell.measured_speedup or 0:>8.3f} {min(rounds):>5.2f}..{max(rounds):<5.2f} "
            f"{cell.predicted_speedup_holdout or 0:>6.3f} {cell.predicted_speedup_batch_holdout or 0:>6.3f}"
        )
    for item in analysis.crossovers:
        print(
            f"k = {item.k}: crossover measured {item.measured}, predicted {item.predicted} from batches "
            f"{list(item.fitted_on)}: "
            + {True: "inside the measured interval", False: "outside the measured interval", None: "not predicted"}[
                item.in_measured_interval
            ]
            + (f" ({item.note})" if item.note else "")
        )
    for error in analysis.holdout_errors:
        print(f"{error.kind}: median {error.median_abs_error or 0:.1%}, worst {error.max_abs_error or 0:.1%}")
    for cell in analysis.cells:
        if cell.k == 0 or cell.measured_speedup is None:
            continue
        for tag, predicted in (("loo", cell.predicted_speedup_holdout), ("lobo", cell.predicted_speedup_batch_holdout)):
            if predicted is not None:
                print(
                    f"RATIO batch_{name}_k{cell.k}_b{cell.batch}_{tag} {predicted:.4f} {cell.measured_speedup:.4f} "
                    f"{predicted / cell.measured_speedup:.3f}"
                )


def main() -> None:
    built = engine()
    ngram = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m"]
    draft = ["--spec-type", "draft-simple", "-md", built.drafts["requantized"], "--spec-draft-p-min", "0"]
    setups = [
        ("ngram_repeating", {0: [], 4: [*ngram, "4"], 8: [*ngram, "8"]}, [REPEATING_PROMPT], False),
        ("ngram_list", {0: [], 2: [*ngram, "2"], 4: [*ngram, "4"], 8: [*ngram, "8"]}, [LIST_PROMPT], False),
        (
            "draft_novel",
            {0: [], 2: [*draft, "--spec-draft-n-max", "2"], 4: [*draft, "--spec-draft-n-max", "4"]},
            [NOVEL_PROMPT],
            True,
        ),
    ]
    chosen = os.environ.get("SPECDEC_BENCH_SETUPS")  # a comma-separated subset of the setups' names, to rerun one
    if chosen:
        setups = [setup for setup in setups if setup[0] in chosen.split(",")]
    saved = os.environ.get("SPECDEC_BENCH_SAVE")  # a folder for each setup's measured rounds
    if saved:
        Path(saved).mkdir(parents=True, exist_ok=True)  # before the first sweep, not after its minutes
    started = time.perf_counter()
    swept: list[tuple[str, Run, BatchAnalysis, bool]] = []
    for name, per_k, prompts, draft_model in setups:
        run = _sweep(per_k, prompts)
        if saved:  # each round's samples as measured, to analyse again without the engine
            rounds = [[dataclasses.asdict(sample) for sample in samples] for samples in run.rounds]
            Path(saved, f"{name}.json").write_text(json.dumps({"draft_model": draft_model, "rounds": rounds}))
        analysis = analyze_batches(run.rounds, draft_model)
        _report(name, run, analysis)
        _report_repeatability(name, run, draft_model)
        swept.append((name, run, analysis, draft_model))
    for index, (name, run, _analysis, draft_model) in enumerate(swept[1:] + swept[:1] if len(swept) > 1 else []):
        donor_name, _run, donor, _draft = swept[index]  # the setup before it, in a ring
        _report_given(name, donor_name, analyze_batches(run.rounds, draft_model, _fitted_terms(donor)))
    print(f"\n{len(setups)} setups in {time.perf_counter() - started:.0f} s")


def _report_repeatability(name: str, run: Run, draft_model: bool) -> None:
    """The measurement against itself: each cell's speedup from the even rounds over that from the odd rounds.

    Beside the holdout errors, it says how far this run's own measurements of one cell disagree; with 3 rounds
    the odd half is a single round, so it overstates the noise of the fastest of three."""
    if len(run.rounds) < 2:
        return
    even = analyze_batches(run.rounds[0::2], draft_model).cells
    odd = analyze_batches(run.rounds[1::2], draft_model).cells
    ratios = [
        (first.k, first.batch, second.measured_speedup, first.measured_speedup)
        for first, second in zip(even, odd, strict=True)
        if first.k and first.measured_speedup and second.measured_speedup
    ]
    if not ratios:
        return
    gaps = [abs(odd_speedup / even_speedup - 1.0) for _k, _batch, odd_speedup, even_speedup in ratios]
    print(
        f"the run against itself (even rounds vs odd rounds, {len(run.rounds[0::2])} and {len(run.rounds[1::2])}): "
        f"median {statistics.median(gaps):.1%}, worst {max(gaps):.1%}"
    )
    for k, batch, odd_speedup, even_speedup in ratios:
        print(
            f"RATIO batch_{name}_k{k}_b{batch}_odd_vs_even {odd_speedup:.4f} {even_speedup:.4f} "
            f"{odd_speedup / even_speedup:.3f}"
        )


def _fitted_terms(analysis: BatchAnalysis) -> dict[str, float]:
    cost = analysis.step_cost
    return {name: getattr(cost, name) for name in cost.fitted}


def _report_given(name: str, donor: str, analysis: BatchAnalysis) -> None:
    held = sorted({term for cell in analysis.cells for term in cell.batch_holdout_given})
    print(f"\n{name}, each batch left out, with the terms it cannot identify given from {donor}: {', '.join(held)}")
    errors = []
    for cell in analysis.cells:
        if cell.k == 0 or cell.measured_speedup is None or cell.predicted_speedup_batch_holdout is None:
            continue
        ratio = cell.predicted_speedup_batch_holdout / cell.measured_speedup
        errors.append(abs(ratio - 1.0))
        if cell.batch_holdout_given:
            print(
                f"RATIO batch_{name}_k{cell.k}_b{cell.batch}_lobo_given {cell.predicted_speedup_batch_holdout:.4f} "
                f"{cell.measured_speedup:.4f} {ratio:.3f}"
            )
    if errors:
        print(f"leave-one-batch-out with given terms: median {statistics.median(errors):.1%}, worst {max(errors):.1%}")


if __name__ == "__main__":
    main()
