"""`specdec-lab measure URL [URL ...]`: measure acceptance, costs and speedup per draft length on live llama-servers.

The sweep runs one server per k (this llama-server takes no per-request draft length; see
:mod:`app.service.clients.measure`), and :mod:`app.model.live.measure` turns the counts and times into the acceptance
profile, tokens per verification, the draft cost c, the verification cost v(k), the measured speedup
and the closed form's prediction.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import httpx

from app.cli.arguments import add_input, add_inputs, add_repeated
from app.cli.arguments import bounded as _bounded
from app.cli.command import fail
from app.cli.render import render_batches, render_text
from app.model.cost import step_cost
from app.model.live.measure import MeasureError, analyze, metrics_delta, step_times_csv
from app.model.live.measure_batches import batch_step_times_csv
from app.service import live_inputs
from app.service.clients.measure import (
    BUILTIN_PROMPTS,
    MeasureClientError,
    Progress,
    Run,
    Sweep,
    pooled,
    read_prompts,
)
from app.service.live_inputs import MAX_SWEEP_BATCH, MAX_SWEEP_K
from app.service.measure_jobs import batch_report
from app.service.schemas.fill import filled
from app.service.schemas.measure import SweepReport, SweepServer

EXIT_INCOMPLETE = 1  # a batch sweep that stopped before every cell: what it measured is still written


def _int_list(low: int, high: int, example: str) -> Callable[[str], list[int]]:
    """Parses a comma-separated list of integers from ``low`` to ``high``, sorted and each once."""
    parse = _bounded(int, low, high)

    def parsed(text: str) -> list[int]:
        values = [int(parse(item.strip())) for item in text.split(",") if item.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"give at least one {example}")
        return sorted(set(values))

    return parsed


_k_list = _int_list(0, MAX_SWEEP_K, "k, e.g. 0,1,2,4,8")
_batch_list = _int_list(1, MAX_SWEEP_BATCH, "batch size, e.g. 1,2,4,8,16")


def add_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    description = (
        "measure each draft length on live servers (llama-server, vLLM, SGLang or TensorRT-LLM; one server per "
        "k; k = 0 is a server without speculation): acceptance profile, tokens per verification, draft cost c, "
        "verification cost v(k), measured and predicted speedup; with --batch, per batch size and where "
        "speculation stops paying"
    )
    parser = subparsers.add_parser("measure", help=description, description=description)
    parser.add_argument(
        "urls",
        nargs="+",
        metavar="URL",
        help="server addresses, one per k (k = 0 without speculation): llama-server (started with --metrics), vLLM, "
        "SGLang or TensorRT-LLM; each one's engine, k and version are read from the server",
    )
    parser.add_argument(
        "--k",
        type=_k_list,
        metavar="LIST",
        help="draft lengths the servers must cover, e.g. 0,1,2,4,8 (default: whatever they serve); this "
        "llama-server build takes no per-request speculative.n_max, so each k is a server started with it",
    )
    parser.add_argument(
        "--batch",
        type=_batch_list,
        metavar="LIST",
        help="batch sizes, e.g. 1,2,4,8,16: B requests at once on each server (started with --parallel of at "
        "least the largest); gives per (k, batch) the throughput, step time, acceptance, measured and predicted "
        "speedup, and per k the batch where speculation stops paying",
    )
    parser.add_argument("--prompts", metavar="FILE", help="workload, one prompt per line (default: built-in prompts)")
    add_inputs(parser, live_inputs.WORKLOAD)
    add_input(parser, live_inputs.MEASURE_ENGINE)
    add_input(parser, live_inputs.MEASURE_METHOD)
    add_repeated(
        parser,
        "--server-log",
        "FILE",
        "a llama-server log at -lv 4 (repeat for each server; matched by its 'listening on' line): the "
        "engine's own draft-generation time, which separates c from v(k)",
    )
    add_input(parser, live_inputs.MEASURED_C)
    parser.add_argument(
        "--write-calibration",
        metavar="FILE",
        help="write one k's /metrics counter deltas in llama.cpp's Prometheus format (specdec-lab calibrate --from)",
    )
    add_input(parser, live_inputs.CALIBRATION_K)
    parser.add_argument(
        "--write-step-fit",
        metavar="FILE",
        help="write batch,tokens,ms: a plain step and each k's verification pass (specdec-lab step-fit); with "
        "--batch, every measured step of every batch",
    )
    parser.add_argument(
        "--given-step-cost",
        metavar="FILE",
        help="with --batch: an earlier `measure --batch --format json` of the same engine and hardware; its "
        "fitted step-cost terms are held wherever this sweep cannot identify them (for example the one-token pass "
        "of plain decoding at batch 1, when batch 1 is left out or not measured)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    parser.set_defaults(handler=run_measure)


def _swept(arguments: argparse.Namespace, **particular: Any) -> tuple[list[str], Run]:
    """The prompts read and what the sweep measured, over the servers, workload and bounds the arguments give."""

    prompts = read_prompts(arguments.prompts) if arguments.prompts else list(BUILTIN_PROMPTS)
    with httpx.Client() as client:
        measured = Sweep(
            client,
            arguments.urls,
            prompts,
            n_predict=arguments.n_predict,
            repeats=arguments.repeats,
            max_requests=arguments.max_requests,
            timeout=arguments.timeout,
            expected_k=arguments.k,
            progress=None if arguments.no_progress else stderr_progress(),
            engine=arguments.engine,
            **particular,
        ).run()
    return prompts, measured


def _reason(error: Exception) -> str:
    """What a failed sweep says: the HTTP error, the file and why it failed, or the measurement's own message."""

    if isinstance(error, httpx.HTTPError):
        return f"HTTP: {error}"
    if isinstance(error, OSError):
        return f"{error.filename}: {error.strerror}"
    return str(error)


def run_measure(arguments: argparse.Namespace) -> int:

    if arguments.batch:
        return run_measure_batches(arguments)
    if arguments.given_step_cost:
        return fail("measure", "--given-step-cost needs --batch: it holds terms of the step cost across batch sizes")
    if arguments.method:
        return fail(
            "measure",
            "--method needs --batch: it names the drafter in the config of the schedule measured over batches",
        )
    try:
        prompts, run = _swept(arguments, logs=arguments.server_log)
        notes = list(run.notes)
        kinds = {server.kind for server in run.servers if server.speculative}
        timed = any(sample.draft_ms is not None for sample in run.samples)
        draft_cost, source = arguments.c, "given (--c)"
        if timed and arguments.c is not None:
            notes.append("--c not used: the engine's own draft time was measured")
        if draft_cost is None and not timed and kinds and all(kind.startswith("ngram") for kind in kinds):
            draft_cost, source = 0.0, "assumed 0 for n-gram lookup (give --server-log for the engine's draft time)"
        analysis = analyze(run.samples, draft_cost, source)
        if run.stopped:
            notes.append(f"stopped early: {run.stopped}")
        notes += analysis.notes
        if arguments.write_calibration:
            measured = [sample for sample in run.samples if sample.k > 0 and sample.drafts > 0]
            wanted = arguments.calibration_k or max((sample.k for sample in measured), default=0)
            chosen = next((sample for sample in measured if sample.k == wanted), None)
            if chosen is None:
                raise MeasureError(f"--calibration-k {wanted}: no server at that k drafted")
            Path(arguments.write_calibration).write_text(metrics_delta(chosen), encoding="utf-8")
        if arguments.write_step_fit:
            Path(arguments.write_step_fit).write_text(step_times_csv(analysis), encoding="utf-8")
    except (MeasureClientError, MeasureError, httpx.HTTPError, OSError) as error:
        return fail("measure", _reason(error))
    report = filled(
        SweepReport,
        analysis,
        servers=[filled(SweepServer, server, draft_time_from_log=server.log is not None) for server in run.servers],
        workload={"prompts": len(prompts), "n_predict": arguments.n_predict, "repeats": arguments.repeats},
        requests=run.requests,
        seconds=run.seconds,
        stopped=run.stopped,
        samples=run.samples,
        notes=notes,
    )
    if arguments.format == "json":
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
        return 0
    sys.stdout.write(render_text(report) + "\n")
    return 0


# ---------------------------------------------------------------------------
# --batch: the sweep over batch sizes


def run_measure_batches(arguments: argparse.Namespace) -> int:

    try:
        given = _given_step_cost(arguments.given_step_cost) if arguments.given_step_cost else None
    except ValueError as error:
        return fail("measure", f"--given-step-cost {arguments.given_step_cost}: {error}")
    try:
        drafter = live_inputs.drafter_for(arguments.engine, arguments.method)
    except ValueError as error:
        return fail("measure", f"--method {arguments.method}: {error}")
    try:
        prompts, run = _swept(arguments, batches=arguments.batch)
    except (MeasureClientError, httpx.HTTPError, OSError) as error:
        return fail("measure", _reason(error))
    said = ["--server-log not used with --batch: the draft time is inside each cell's step time"]
    workload = {"prompts": len(prompts), "n_predict": arguments.n_predict, "repeats": arguments.repeats}
    report, analysis, failure = batch_report(
        run, arguments.batch, workload, given, said if arguments.server_log else (), drafter
    )
    samples = [sample for round_ in run.rounds for sample in round_]
    try:
        if analysis is not None and arguments.write_step_fit:
            Path(arguments.write_step_fit).write_text(batch_step_times_csv(analysis), encoding="utf-8")
        if analysis is not None and arguments.write_calibration:
            drafted = sorted({sample.k for sample in samples if sample.k > 0 and sample.drafts > 0})
            wanted = arguments.calibration_k or max(drafted, default=0)
            if wanted not in drafted:
                raise MeasureError(f"--calibration-k {wanted}: no server at that k drafted")
            Path(arguments.write_calibration).write_text(
                metrics_delta(pooled(wanted, [r for r in run.records if run.servers[r.server].k == wanted])),
                encoding="utf-8",
            )
    except MeasureError as error:
        failure = f"{failure}; {error}" if failure else str(error)
    except OSError as error:
        return fail("measure", _reason(error))
    if arguments.format == "json":
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    elif report.cells is not None:
        sys.stdout.write(render_batches(report) + "\n")
    if failure:
        print(f"specdec-lab measure: incomplete: {failure} (what was measured is written above)", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _given_step_cost(path: str) -> dict[str, float]:
    """The fitted terms of an earlier `measure --batch --format json` (its "step_cost"), by name."""

    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not a readable JSON file ({error})") from error
    cost = report.get("step_cost") if isinstance(report, dict) else None
    if not isinstance(cost, dict) or not isinstance(cost.get("fitted"), list):
        raise ValueError('no "step_cost" with its "fitted" terms: give the JSON of `measure --batch --format json`')
    try:
        return step_cost.given_terms({str(name): cost.get(name) for name in cost["fitted"]})
    except step_cost.StepCostError as error:
        raise ValueError(f"step_cost.{error}") from None


def stderr_progress(stream: TextIO | None = None) -> Progress:
    """A plain-text progress bar on stderr: redrawn in place on a terminal, a line per tenth otherwise."""
    out = stream if stream is not None else sys.stderr
    started = time.monotonic()
    shown = {"tenth": -1}
    tty = bool(getattr(out, "isatty", lambda: False)())

    def show(done: int, total: int, label: str) -> None:
        width = 30
        share = done / total if total else 1.0
        bar = "#" * round(width * share) + "." * (width - round(width * share))
        text = f"measure [{bar}] {done}/{total} requests, {time.monotonic() - started:.0f} s, {label}"
        if tty:
            out.write("\r" + text.ljust(100) + ("\n" if label == "done" else ""))
            out.flush()
        elif int(share * 10) > shown["tenth"] or label == "done":
            shown["tenth"] = int(share * 10)
            out.write(text + "\n")
            out.flush()

    return show
