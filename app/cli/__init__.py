"""The `specdec-lab` command: serve the app, or print the model's tables in a terminal."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from app.cli import engines as cli_engines
from app.cli import measure as cli_measure
from app.cli import render as cli_render
from app.cli import rollout as cli_rollout
from app.cli.arguments import add_input, add_inputs, add_repeated, assignment, input_values
from app.cli.engines import add_step_fit_argument, run_calibrate_from, step_fitted
from app.model import limits
from app.model.arithmetic import draft_sources, trees
from app.model.cost.regimes import RegimeName
from app.model.counters import calibration
from app.service import core_inputs, decision_inputs, plan_inputs, regime_inputs, regimes, setup_inputs
from app.service.core import build_curve, build_optimal_k, build_speedup
from app.service.decision import (
    calibration_out,
    cost_regime,
    sources_out,
    trees_out,
)
from app.service.engines import calibrate_scrape
from app.service.inputs import Input, InputError
from app.service.regimes import (
    SetupError,
    SetupRequest,
    build_setup,
    schedule_csv,
    schedule_out,
)

Handler = Callable[[argparse.Namespace], int]


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows every option's default, also for options without help text."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, argparse.SUPPRESS) or not action.option_strings:
            return text
        if isinstance(action, argparse._StoreConstAction | argparse._HelpAction | argparse._VersionAction):
            return text
        return (text + " " if text else "") + "(default: %(default)s)"

    def _format_action(self, action: argparse.Action) -> str:
        if (
            not action.help
            and action.option_strings
            and action.default not in (None, argparse.SUPPRESS)
            and not isinstance(action, argparse._StoreConstAction)
        ):
            action.help = "(default: %(default)s)"
        return super()._format_action(action)


def _subcommand(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    return subparsers.add_parser(name, help=help_text, description=help_text, formatter_class=DefaultsFormatter)


def add_serve_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(subparsers, "serve", "serve the page and the API with uvicorn")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"), help="address to listen on (HOST)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")), help="port (PORT)")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "1")), help="processes (WORKERS)")
    parser.set_defaults(handler=run_serve)


def run_serve(arguments: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run("app.web.main:app", host=arguments.host, port=arguments.port, workers=arguments.workers)
    return 0


def _write_report(arguments: argparse.Namespace, report: Any, text: Callable[[], str]) -> int:
    """The report as the API's JSON with --format json, else its text (made only then); a newline after either."""
    sys.stdout.write((report.model_dump_json(indent=2) if arguments.format == "json" else text()) + "\n")
    return 0


# ---------------------------------------------------------------------------
# table and schedule: cost regimes, batch size and the roofline


def _add_roofline_arguments(parser: argparse.ArgumentParser) -> None:

    group = parser.add_argument_group("roofline: presets, formats and serving conditions")
    add_inputs(group, setup_inputs.SERVING)
    add_repeated(
        group,
        "--set",
        "FIELD=VALUE",
        "override one preset field, as in the API: hw_bandwidth_tb_s=4, model_layers=40, draft_total_params_b=3",
        dest="overrides",
        type=assignment(setup_inputs.OVERRIDES, "preset field"),
    )
    parser.add_argument("--format", choices=["text", "csv", "json"], default="text", help="output format")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="colour in text output")


def _setup_request(arguments: argparse.Namespace) -> SetupRequest:
    """The setup of the options and of each --set (read and bounded by the preset fields' declarations)."""
    return setup_inputs.request({**input_values(arguments, setup_inputs.SERVING), **dict(arguments.overrides)})


def _use_color(arguments: argparse.Namespace) -> bool:
    if arguments.color != "auto":
        return bool(arguments.color == "always")
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def add_table_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(
        subparsers, "table", "speedup over p x k under two named regimes side by side (win turning into loss)"
    )
    # the left-hand table, then the right
    add_inputs(parser, (*regime_inputs.LEFT, *regime_inputs.RIGHT, regime_inputs.C, *regime_inputs.ROWS))
    _add_roofline_arguments(parser)
    parser.set_defaults(handler=run_table)


def _write_roofline(
    arguments: argparse.Namespace, report: Any, csv: Callable[[Any], str], text: Callable[[Any, bool], str]
) -> int:
    """The report as the API's JSON, as CSV or as (coloured) text, as --format asks."""
    if arguments.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif arguments.format == "csv":
        sys.stdout.write(csv(report))
    else:
        sys.stdout.write(text(report, _use_color(arguments)))
    return 0


def run_table(arguments: argparse.Namespace) -> int:

    try:
        built = regimes.build_setup(_setup_request(arguments))
        rows = regimes.p_values_for(arguments.p_min, arguments.p_max, arguments.p_step, regimes.MAX_TABLE_ROWS)
    except regimes.SetupError as error:
        print(f"specdec-lab table: error: {error}", file=sys.stderr)
        return 2
    side_a, side_b = (
        regimes.build_regime(
            regimes.RegimeRequest(
                RegimeName(getattr(arguments, f"regime_{side}")),
                getattr(arguments, f"beta_{side}"),
                getattr(arguments, f"batch_{side}"),
            ),
            arguments.c,
            built,
        )
        for side in ("a", "b")
    )
    table = regimes.table_out(rows, arguments.k_max, side_a, side_b, built)
    return _write_roofline(arguments, table, regimes.table_csv, cli_render.render_table_text)


def add_schedule_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(subparsers, "schedule", "best draft length per batch size on the roofline (0 = off)")
    acceptance = parser.add_argument_group("acceptance: p, or a rate or mean length measured at --k; and a profile")
    add_input(acceptance, plan_inputs.P)
    add_inputs(acceptance, (plan_inputs.RATE, plan_inputs.MEAN_LENGTH, plan_inputs.K, plan_inputs.PROFILE))
    add_input(parser, core_inputs.K_MAX)
    add_input(parser, plan_inputs.BATCH_MAX)
    _add_roofline_arguments(parser)
    add_step_fit_argument(parser)
    parser.set_defaults(handler=run_schedule)


def run_schedule(arguments: argparse.Namespace) -> int:

    try:
        request = _setup_request(arguments)
        assert isinstance(request, SetupRequest)
        built = build_setup(request)
        acceptance = plan_inputs.measured_acceptance(
            arguments.p, arguments.rate, arguments.mean_length, arguments.k, arguments.profile
        )
    except SetupError as error:
        print(f"specdec-lab schedule: error: {error}", file=sys.stderr)
        return 2
    except InputError as error:
        print(f"specdec-lab schedule: error: --{error.name.replace('_', '-')}: {error.message}", file=sys.stderr)
        return 2
    built = step_fitted(arguments, built, "schedule")
    if built is None:
        return 2
    schedule = schedule_out(acceptance, arguments.k_max, arguments.batch_max, built)
    return _write_roofline(arguments, schedule, schedule_csv, cli_render.render_schedule_text)


# ---------------------------------------------------------------------------
# calibrate, sources and trees: from serving metrics to a decision


def _add_cost_arguments(parser: argparse.ArgumentParser, regime: Input = core_inputs.REGIME) -> None:
    group = parser.add_argument_group("cost of a cycle")
    add_inputs(group, (core_inputs.C, regime, core_inputs.BETA, core_inputs.COST_BATCH))
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")


def add_calibrate_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(
        subparsers,
        "calibrate",
        "infer p from a draft acceptance rate, a mean acceptance length or a vLLM /metrics scrape",
    )
    measured = parser.add_mutually_exclusive_group(required=True)
    for measurement in (decision_inputs.RATE, decision_inputs.LENGTH):
        add_input(measured, measurement, required=False)
    measured.add_argument(
        "--metrics", metavar="FILE", help="Prometheus text from a vLLM server's /metrics ('-' = stdin)"
    )
    measured.add_argument(
        "--from",
        dest="source",
        metavar="FILE_OR_URL",
        help="any engine's report (vLLM, SGLang, TensorRT-LLM, llama.cpp), detected by format; a URL is fetched",
    )
    add_inputs(parser, (decision_inputs.CLASS_LABEL, decision_inputs.CYCLES))
    add_input(
        parser,
        decision_inputs.BASELINE,
        metavar="FILE",
        help=f"{decision_inputs.BASELINE.help}: a file holding it (with --metrics or --from)",
    )
    add_input(parser, plan_inputs.K)
    add_inputs(
        parser,
        (decision_inputs.DRAFT_LENGTHS, plan_inputs.ENGINE_VERSION, decision_inputs.MODEL_NAME, decision_inputs.K_MAX),
    )
    _add_cost_arguments(parser)
    parser.set_defaults(handler=run_calibrate)


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def run_calibrate(arguments: argparse.Namespace) -> int:

    if arguments.source is not None:
        return run_calibrate_from(arguments)
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    try:
        if arguments.metrics is not None:
            text = _read_text(arguments.metrics)
            baseline = _read_text(arguments.baseline) if arguments.baseline else None
            result = calibrate_scrape(
                text, regime.c, arguments.k_max, regime.verify, arguments.k, baseline, arguments.model_name
            )
        elif arguments.k is None:
            print("specdec-lab calibrate: error: --k is required with --rate and --length", file=sys.stderr)
            return 2
        elif arguments.rate is not None:
            result = calibration.calibrate_from_rate(
                arguments.rate, arguments.k, regime.c, arguments.k_max, regime.verify
            )
        else:
            result = calibration.calibrate_from_length(
                arguments.length, arguments.k, regime.c, arguments.k_max, regime.verify
            )
    except OSError as error:
        print(f"specdec-lab calibrate: error: cannot read {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    except ValueError as error:  # CalibrationError included
        print(f"specdec-lab calibrate: error: {error}", file=sys.stderr)
        return 2
    report = calibration_out(result, regime)
    return _write_report(arguments, report, lambda: cli_render.render_calibration_text(report))


def add_sources_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(
        subparsers, "sources", "draft model, n-gram lookup, Medusa and EAGLE side by side (cited measurements)"
    )
    add_input(parser, decision_inputs.K_MAX)
    add_repeated(
        parser, "--override", "ID:P:C", "edit a source's acceptance and draft cost, e.g. eagle:0.8:0.1 (repeatable)"
    )
    _add_cost_arguments(parser)
    parser.set_defaults(handler=run_sources)


def run_sources(arguments: argparse.Namespace) -> int:

    try:
        overrides = draft_sources.parse_overrides(",".join(arguments.override))
        draft_sources.with_overrides(overrides)
    except ValueError as error:
        print(f"specdec-lab sources: error: {error}", file=sys.stderr)
        return 2
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    report = sources_out(arguments.k_max, regime, overrides)
    return _write_report(arguments, report, lambda: cli_render.render_sources_text(report))


def add_trees_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(
        subparsers, "trees", "chain, fixed-width, most-tokens and best-speedup token trees for a budget, with bounds"
    )
    add_inputs(parser, decision_inputs.TREES_TEXT)
    _add_cost_arguments(parser, decision_inputs.TREE_REGIME)
    parser.set_defaults(handler=run_trees)


def run_trees(arguments: argparse.Namespace) -> int:

    try:
        acceptance = trees.positional_acceptance(
            [float(item) for item in arguments.acceptance.split(",") if item.strip()]
        )
        widths = list(dict.fromkeys(int(item) for item in arguments.widths.split(",") if item.strip()))
        if any(not 2 <= width <= trees.MAX_WIDTH for width in widths):
            raise ValueError(f"widths must be from 2 to {trees.MAX_WIDTH}")
        if len(widths) > limits.MAX_TREE_WIDTHS:
            raise ValueError(f"give at most {limits.MAX_TREE_WIDTHS} widths")
    except ValueError as error:
        print(f"specdec-lab trees: error: {error}", file=sys.stderr)
        return 2
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    report = trees_out(acceptance, arguments.budget, regime, widths)
    return _write_report(arguments, report, lambda: cli_render.render_trees_text(report, arguments.every))


# ---------------------------------------------------------------------------
# speedup, curve and optimal-k: the closed form, as the API answers it


def _add_closed_form_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (json as the API)")


def _add_p_and_c(parser: argparse.ArgumentParser, with_k: bool) -> None:
    """--p, then --k (when asked), then --c, at the closed form's defaults."""
    add_inputs(parser, (core_inputs.P, core_inputs.K, core_inputs.C) if with_k else (core_inputs.P, core_inputs.C))


def add_speedup_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(subparsers, "speedup", "tokens per cycle, cost per cycle and speedup at (p, k, c)")
    _add_p_and_c(parser, with_k=True)
    _add_closed_form_output(parser)
    parser.set_defaults(handler=run_speedup)


def run_speedup(arguments: argparse.Namespace) -> int:

    result = build_speedup(arguments.p, arguments.k, arguments.c)
    return _write_report(
        arguments,
        result,
        lambda: (
            f"p = {result.p:g}, k = {result.k}, c = {result.c:g}: {result.expected_tokens:.4f} tokens per cycle, "
            f"{result.cost_per_cycle:.4f} target passes, speedup {result.speedup:.4f}x"
        ),
    )


def _best_k_text(best_k: int, speedup: float, k_search_max: int, limit_reached: bool) -> str:
    if best_k == 0:
        return f"best k: do not speculate (no k in 1..{k_search_max} beats plain decoding)"
    text = f"best k = {best_k} of 1..{k_search_max}: speedup {speedup:.4f}x"
    if limit_reached:
        text += (
            f"\nlimit reached: best k is k_max = {k_search_max}, the longest draft searched; a longer one may do better"
        )
    return text


def add_optimal_k_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(subparsers, "optimal-k", "draft length with the highest speedup (0 = do not speculate)")
    _add_p_and_c(parser, with_k=False)
    add_input(parser, core_inputs.K_MAX)
    _add_closed_form_output(parser)
    parser.set_defaults(handler=run_optimal_k)


def run_optimal_k(arguments: argparse.Namespace) -> int:

    result = build_optimal_k(arguments.p, arguments.c, arguments.k_max)
    line = _best_k_text(result.best_k, result.speedup, result.k_search_max, result.limit_reached)
    return _write_report(arguments, result, lambda: f"p = {result.p:g}, c = {result.c:g}: {line}")


def add_curve_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = _subcommand(
        subparsers, "curve", "speedup for k = 0..k_max with the p +/- band envelope, and the demo's readouts"
    )
    _add_p_and_c(parser, with_k=True)
    add_inputs(parser, (core_inputs.CHART_K_MAX, core_inputs.BAND, core_inputs.C_OPS))
    _add_closed_form_output(parser)
    parser.set_defaults(handler=run_curve)


def _maybe(value: float | None, digits: int = 4) -> str:
    return "none" if value is None else f"{value:.{digits}f}"


def run_curve(arguments: argparse.Namespace) -> int:

    curve = build_curve(arguments.p, arguments.k, arguments.c, arguments.k_max, arguments.band, arguments.c_ops)
    if arguments.format == "json":
        sys.stdout.write(curve.model_dump_json(indent=2) + "\n")
        return 0
    lines = [
        f"p = {curve.p:g} (band {curve.p_low:g} to {curve.p_high:g}), k = {curve.k}, c = {curve.c:g}",
        f"tokens per cycle {curve.expected_tokens:.4f}, target passes {curve.cost_per_cycle:.4f}, "
        f"speedup {curve.speedup:.4f}x",
        _best_k_text(curve.best_k, curve.best_speedup, curve.k_search_max, curve.limit_reached),
        f"break-even acceptance {_maybe(curve.break_even_acceptance)}, largest draft cost that breaks even "
        f"{_maybe(curve.max_draft_cost)}, operations x{curve.operations_increase:.4f} at c_ops = {curve.c_ops:g}",
        "",
        f"{'k':>3}  {'speedup':>8}  {'low':>8}  {'high':>8}  {'tokens':>8}  {'cost':>8}",
    ]
    for point in curve.points:
        lines.append(
            f"{point.k:>3}  {point.speedup:>8.4f}  {point.speedup_low:>8.4f}  {point.speedup_high:>8.4f}  "
            f"{point.expected_tokens:>8.4f}  {point.cost_per_cycle:>8.4f}"
        )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec-lab", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve_command(subparsers)
    add_speedup_command(subparsers)
    add_curve_command(subparsers)
    add_optimal_k_command(subparsers)
    add_table_command(subparsers)
    add_schedule_command(subparsers)
    add_calibrate_command(subparsers)
    add_sources_command(subparsers)
    add_trees_command(subparsers)

    cli_engines.add_commands(subparsers, _add_roofline_arguments, _setup_request)

    cli_measure.add_command(subparsers)

    cli_rollout.add_command(subparsers, _add_roofline_arguments, _setup_request)
    for command in subparsers.choices.values():  # every --help shows the defaults, whichever module added it
        command.formatter_class = DefaultsFormatter
        for action in command._actions:  # and those of a command's own commands (rollout check, rollout plan)
            if isinstance(action, argparse._SubParsersAction):
                for nested in action.choices.values():
                    nested.formatter_class = DefaultsFormatter
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    handler: Handler = arguments.handler
    return handler(arguments)
