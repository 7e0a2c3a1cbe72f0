"""`specdec-lab rollout`: which classes get speculation, and a canary that proves it before it spreads.

`rollout plan` judges each class from what Prometheus (or a pasted scrape) counted: turn on, leave off or measure
first, the surest gains first. `rollout check --prometheus URL --canary MATCHER --control MATCHER` compares, per
class, the replicas that run speculation with those that do not: exit 0 promote, 1 roll back, 3 hold, 2 when
Prometheus does not answer or the input is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from app.cli.arguments import add_input, add_roofline_arguments, bounded, setup_request
from app.cli.command import fail
from app.model.counters.calibration import MAX_EXPOSITION_BYTES, CalibrationError
from app.model.engines import UnknownVersionError
from app.model.live import rollout
from app.service import plan_inputs, rollout_inputs, rollout_plan
from app.service.clients import rollout as rollout_client
from app.service.clients.prometheus import Prometheus, PrometheusError
from app.service.regimes import SetupError, build_setup
from app.service.schemas.rollout import RolloutCheckOut, RolloutPlanOut


def add_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rollout", help="roll speculation out per class: a canary check over Prometheus", description=__doc__
    )
    commands = parser.add_subparsers(dest="rollout_command", required=True)
    check = commands.add_parser(
        "check",
        help="compare canary replicas (speculation on) with control replicas (off), per class: promote, roll back "
        "or hold",
        description="Per class, the canary's speedup over control from each engine's own decode-time series "
        "(an interval over intervals of the window), and the canary's acceptance against its calibrated interval. "
        "Exit 0 promote, 1 roll back, 3 hold, 2 when Prometheus does not answer or the input is refused.",
    )
    add_input(check, rollout_inputs.PROMETHEUS, help="the Prometheus server's root URL, as http://host:9090")
    add_input(check, rollout_inputs.CANARY, help='label matchers of the canary replicas, as role="canary"')
    add_input(check, rollout_inputs.CONTROL, help='label matchers of the control replicas, as role="control"')
    add_input(check, plan_inputs.LABEL)
    add_input(
        check,
        rollout_inputs.WINDOW,
        help=f"how far back to compare, as 30m or 1800 (at most {rollout.MAX_WINDOW_S:g} s; at least "
        f"{rollout.MIN_INTERVALS} intervals)",
    )
    add_input(
        check,
        rollout_inputs.INTERVAL,
        help=f"the rate interval: one ratio per interval, from {rollout.MIN_INTERVAL_S:g} s to "
        f"{rollout.MAX_INTERVAL_S:g} s (at least twice the scrape interval)",
    )
    add_input(
        check,
        rollout_inputs.CALIBRATED,
        help="LOW,HIGH: the canary's calibrated acceptance interval (default: the "
        "first half of the window's, the second half judged against it)",
    )
    _add_engine(check, "the engine (default: the one scraped)")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(handler=run_check)
    planned = commands.add_parser(
        "plan",
        help="per class: measured acceptance, batches run, schedule, expected gain and a verdict, in rollout order",
        description="Per class (--label): the measured acceptance with its interval, the batch sizes it ran (the "
        "running-requests gauge over the window), the plan's schedule and config for that acceptance on your setup, "
        "the gain weighted over those batches with the cost model's stated error, and a verdict (turn on, leave "
        "off, measure first); the surest gains first.",
    )
    source = planned.add_mutually_exclusive_group(required=True)
    add_input(
        source, rollout_inputs.PROMETHEUS, required=False, help="the Prometheus server's root URL, as http://host:9090"
    )
    source.add_argument("--from", dest="source", help="a pasted scrape holding several classes: a file, or - for stdin")
    add_input(planned, plan_inputs.LABEL)
    add_input(planned, rollout_inputs.PLAN_WINDOW, help="with --prometheus: how far back, as 1h or 3600")
    add_input(
        planned, rollout_inputs.INTERVAL, help="with --prometheus: how often the running-requests gauge is sampled"
    )
    add_input(planned, plan_inputs.K_MAX)
    _add_engine(planned, "with --prometheus: the engine")
    add_roofline_arguments(planned)
    planned.set_defaults(handler=run_plan)


def _add_engine(parser: argparse.ArgumentParser, help: str) -> None:
    """--engine (optional here: the scrape names it) and --engine-version, as the plan declares them, and the
    --timeout of each query."""
    add_input(parser, plan_inputs.ENGINE, required=False, help=help)
    add_input(parser, plan_inputs.ENGINE_VERSION, help="with --engine: the engine version (default: the newest)")
    parser.add_argument(
        "--timeout", type=bounded(float, 0.1, 120), default=10.0, help="seconds each query may take (0.1 to 120)"
    )


R = TypeVar("R", bound=BaseModel)


def _refuse(message: str, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(json.dumps({"error": message, "exit_code": 2}, indent=2) + "\n")
    return fail("rollout", message)


def run_check(arguments: argparse.Namespace) -> int:

    as_json = arguments.format == "json"
    try:
        if arguments.engine_version and not arguments.engine:
            raise rollout.RolloutInputError("--engine-version", "needs --engine")
        request = rollout_client.check_request(
            arguments.canary,
            arguments.control,
            arguments.label,
            arguments.window,
            arguments.interval,
            arguments.calibrated,
            arguments.engine,
            arguments.engine_version,
        )
        report = rollout_client.check(Prometheus(arguments.prometheus, timeout=arguments.timeout), request)
    except (rollout.RolloutInputError, PrometheusError, UnknownVersionError) as error:
        return _refuse(str(error), as_json)
    return _write(report, check_text, as_json, report.exit_code)


def run_plan(arguments: argparse.Namespace) -> int:

    as_json = arguments.format == "json"
    try:
        if arguments.engine_version and not arguments.engine:
            raise rollout.RolloutInputError("--engine-version", "needs --engine")
        rollout.class_label("--label", arguments.label)
        built = build_setup(setup_request(arguments))
        if arguments.prometheus is not None:
            window, interval = rollout.window_and_interval(arguments.window, arguments.interval)
            prometheus = Prometheus(arguments.prometheus, timeout=arguments.timeout)
            engine, version, classes, asked = rollout_plan.from_prometheus(
                prometheus, arguments.label, window, interval, arguments.engine, arguments.engine_version
            )
        else:
            text = sys.stdin.read() if arguments.source == "-" else _read(arguments.source)
            engine, version, classes = rollout_plan.from_scrape(text, arguments.label)
            asked = []
        report = rollout_plan.plan_classes(engine, version, classes, built, arguments.label, arguments.k_max)
        report.queries = asked
    except (
        rollout.RolloutInputError,
        PrometheusError,
        UnknownVersionError,
        SetupError,
        CalibrationError,
        OSError,
    ) as error:
        return _refuse(str(error), as_json)
    return _write(report, plan_text, as_json, 0)


def _write(report: R, described: Callable[[R], str], as_json: bool, code: int) -> int:
    """The report as JSON or in words (only the one asked for is made); the exit code."""
    sys.stdout.write((report.model_dump_json(indent=2, by_alias=True) if as_json else described(report)) + "\n")
    return code


def _read(path: str) -> str:
    """The file's text, at most one byte past the largest exposition read (which then says it is too large)."""

    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(MAX_EXPOSITION_BYTES + 1)


def check_text(report: RolloutCheckOut) -> str:
    """The report in words: one line per class, then the verdict."""
    decode = report.decode_time
    lines = [
        f"canary {report.canary} against control {report.control} per {report.label}, "
        f"{report.window_s:g} s in {report.interval_s:g} s intervals; per-token decode time from "
        f"{decode.seconds} over {decode.tokens}" + (f" less {decode.first_tokens}" if decode.first_tokens else "")
    ]
    for item in report.classes:
        name = item.class_ or "(no class label)"
        lines.append(f"{report.label}={name}: {item.verdict}: {item.reason}")
        lines += [f"  note: {note}" for note in item.notes]
    lines.append(f"verdict: {report.verdict} (exit {report.exit_code})")
    return "\n".join(lines)


def plan_text(report: RolloutPlanOut) -> str:
    """The plan in words: one entry per class, the surest gains first."""
    lines = [
        f"rollout plan for {report.engine} {report.engine_version} per {report.label} on {report.setup}",
        f"cost model: {report.cost_model}",
    ]
    for index, row in enumerate(report.classes, start=1):
        name = row.class_ or "(no class label)"
        seen = rollout_plan.acceptance_seen(row, lambda value: f"{value:.3f}")
        lines.append(f"{index}. {report.label}={name}: {row.verdict}: {row.reason}")
        lines.append(f"   p {seen}, {row.drafts or 0.0:,.0f} drafts; batches {rollout_plan.batches_seen(row)}")
        if row.config is not None:
            lines.append(f"   config: {' '.join(row.config.flags) or row.config.text}")
    return "\n".join(lines)
