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
from app.cli.arguments import (
    add_color,
    add_input,
    add_inputs,
    add_repeated,
    add_setup_arguments,
    add_step_fit_argument,
    built_setup,
)
from app.cli.command import Command, Refused, register, use_color
from app.cli.engines import calibrate_from
from app.model import limits
from app.model.arithmetic import draft_sources
from app.model.cost.regimes import RegimeName
from app.model.counters import calibration
from app.service import core_inputs, decision_inputs, plan_inputs, regime_inputs, regimes
from app.service.core import build_curve, build_optimal_k, build_speedup
from app.service.decision import (
    CostRegime,
    calibration_out,
    cost_regime,
    sources_out,
    trees_out,
)
from app.service.engines import calibrate_scrape
from app.service.inputs import Input
from app.service.regimes import schedule_csv, schedule_out
from app.service.schemas.decision import CalibrationOut, DraftSourcesOut, TreesOut
from app.service.schemas.engines import EngineCalibrationOut
from app.service.schemas.regimes import ScheduleOut, TableOut

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


# ---------------------------------------------------------------------------
# table and schedule: cost regimes, batch size and the roofline


def _table_options(parser: argparse.ArgumentParser) -> None:
    # the left-hand table, then the right
    add_inputs(parser, (*regime_inputs.LEFT, *regime_inputs.RIGHT, regime_inputs.C, *regime_inputs.ROWS))
    add_setup_arguments(parser)
    add_color(parser)


def _table(arguments: argparse.Namespace) -> TableOut:
    built = built_setup(arguments)
    rows = regimes.p_values_for(arguments.p_min, arguments.p_max, arguments.p_step, limits.MAX_TABLE_ROWS)
    side_a, side_b = (
        regimes.RegimeRequest(
            RegimeName(getattr(arguments, f"regime_{side}")),
            getattr(arguments, f"beta_{side}"),
            getattr(arguments, f"batch_{side}"),
        )
        for side in ("a", "b")
    )
    return regimes.two_regime_table(side_a, side_b, arguments.c, rows, arguments.k_max, built)


def _schedule_options(parser: argparse.ArgumentParser) -> None:
    acceptance = parser.add_argument_group("acceptance: p, or a rate or mean length measured at --k; and a profile")
    add_input(acceptance, plan_inputs.P)
    add_inputs(acceptance, (plan_inputs.RATE, plan_inputs.MEAN_LENGTH, plan_inputs.K, plan_inputs.PROFILE))
    add_input(parser, core_inputs.K_MAX)
    add_input(parser, plan_inputs.BATCH_MAX)
    add_setup_arguments(parser)
    add_color(parser)
    add_step_fit_argument(parser)


def _schedule(arguments: argparse.Namespace) -> ScheduleOut:
    built = built_setup(arguments)
    acceptance = plan_inputs.measured_acceptance(
        arguments.p, arguments.rate, arguments.mean_length, arguments.k, arguments.profile
    )
    return schedule_out(acceptance, arguments.k_max, arguments.batch_max, built)


# ---------------------------------------------------------------------------
# calibrate, sources and trees: from serving metrics to a decision


def _add_cost_arguments(parser: argparse.ArgumentParser, regime: Input = core_inputs.REGIME) -> None:
    group = parser.add_argument_group("cost of a cycle")
    add_inputs(group, (core_inputs.C, regime, core_inputs.BETA, core_inputs.COST_BATCH))


def _regime(arguments: argparse.Namespace) -> CostRegime:
    return cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)


def _calibrate_options(parser: argparse.ArgumentParser) -> None:
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


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _calibrate(arguments: argparse.Namespace) -> CalibrationOut | EngineCalibrationOut:
    regime = _regime(arguments)
    if arguments.source is not None:
        return calibrate_from(arguments, regime)
    if arguments.metrics is not None:
        text = _read_text(arguments.metrics)
        baseline = _read_text(arguments.baseline) if arguments.baseline else None
        result = calibrate_scrape(
            text, regime.c, arguments.k_max, regime.verify, arguments.k, baseline, arguments.model_name
        )
    elif arguments.k is None:
        raise Refused("--k is required with --rate and --length")
    elif arguments.rate is not None:
        result = calibration.calibrate_from_rate(arguments.rate, arguments.k, regime.c, arguments.k_max, regime.verify)
    else:
        result = calibration.calibrate_from_length(
            arguments.length, arguments.k, regime.c, arguments.k_max, regime.verify
        )
    return calibration_out(result, regime)


def _calibration_text(arguments: argparse.Namespace, report: CalibrationOut | EngineCalibrationOut) -> str:
    if isinstance(report, CalibrationOut):
        return cli_render.render_calibration_text(report)
    return cli_render.render_engine_calibration(report)


def _sources_options(parser: argparse.ArgumentParser) -> None:
    add_input(parser, decision_inputs.K_MAX)
    add_repeated(
        parser, "--override", "ID:P:C", "edit a source's acceptance and draft cost, e.g. eagle:0.8:0.1 (repeatable)"
    )
    _add_cost_arguments(parser)


def _sources(arguments: argparse.Namespace) -> DraftSourcesOut:
    overrides = draft_sources.parse_overrides(",".join(arguments.override))
    draft_sources.with_overrides(overrides)
    return sources_out(arguments.k_max, _regime(arguments), overrides)


def _trees_options(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, decision_inputs.TREES_TEXT)
    _add_cost_arguments(parser, decision_inputs.TREE_REGIME)


def _trees(arguments: argparse.Namespace) -> TreesOut:
    acceptance = plan_inputs.tree_acceptance(arguments.acceptance, "acceptance")
    return trees_out(acceptance, arguments.budget, _regime(arguments), plan_inputs.tree_widths(arguments.widths))


# ---------------------------------------------------------------------------
# speedup, curve and optimal-k: the closed form, as the API answers it


def _p_and_c(with_k: bool, *more: Input) -> Callable[[argparse.ArgumentParser], None]:
    """--p, then --k (when asked), then --c, at the closed form's defaults, then ``more``."""
    first = (core_inputs.P, core_inputs.K, core_inputs.C) if with_k else (core_inputs.P, core_inputs.C)
    return lambda parser: add_inputs(parser, (*first, *more))


AS_THE_API = "output format (json as the API)"
COMMANDS: tuple[Command[Any], ...] = (
    Command(
        "speedup",
        "tokens per cycle, cost per cycle and speedup at (p, k, c)",
        _p_and_c(True),
        lambda a: build_speedup(a.p, a.k, a.c),
        lambda a, report: cli_render.render_speedup(report),
        format_help=AS_THE_API,
        refusals=(),
    ),
    Command(
        "curve",
        "speedup for k = 0..k_max with the p +/- band envelope, and the demo's readouts",
        _p_and_c(True, core_inputs.CHART_K_MAX, core_inputs.BAND, core_inputs.C_OPS),
        lambda a: build_curve(a.p, a.k, a.c, a.k_max, a.band, a.c_ops),
        lambda a, report: cli_render.render_curve(report),
        format_help=AS_THE_API,
        refusals=(),
    ),
    Command(
        "optimal-k",
        "draft length with the highest speedup (0 = do not speculate)",
        _p_and_c(False, core_inputs.K_MAX),
        lambda a: build_optimal_k(a.p, a.c, a.k_max),
        lambda a, report: cli_render.render_optimal_k(report),
        format_help=AS_THE_API,
        refusals=(),
    ),
    Command(
        "table",
        "speedup over p x k under two named regimes side by side (win turning into loss)",
        _table_options,
        _table,
        lambda a, report: cli_render.render_table_text(report, use_color(a)),
        csv=regimes.table_csv,
    ),
    Command(
        "schedule",
        "best draft length per batch size on the roofline (0 = off)",
        _schedule_options,
        _schedule,
        lambda a, report: cli_render.render_schedule_text(report, use_color(a)),
        csv=schedule_csv,
    ),
    Command(
        "calibrate",
        "infer p from a draft acceptance rate, a mean acceptance length, a vLLM /metrics scrape or any engine's "
        "report (--from)",
        _calibrate_options,
        _calibrate,
        _calibration_text,
    ),
    Command(
        "sources",
        "draft model, n-gram lookup, Medusa and EAGLE side by side (cited measurements)",
        _sources_options,
        _sources,
        lambda a, report: cli_render.render_sources_text(report),
    ),
    Command(
        "trees",
        "chain, fixed-width, most-tokens and best-speedup token trees for a budget, with bounds",
        _trees_options,
        _trees,
        lambda a, report: cli_render.render_trees_text(report, a.every),
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec-lab", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve_command(subparsers)
    for declared in COMMANDS:
        register(subparsers, declared, DefaultsFormatter)

    cli_engines.add_commands(subparsers)

    cli_measure.add_command(subparsers)

    cli_rollout.add_command(subparsers)
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
