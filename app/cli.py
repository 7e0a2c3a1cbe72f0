"""The `specdec-lab` command: serve the app, or print the model's tables in a terminal."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


def add_serve_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("serve", help="serve the page and the API with uvicorn")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WORKERS", "1")))
    parser.set_defaults(handler=run_serve)


def run_serve(arguments: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run("app.web.main:app", host=arguments.host, port=arguments.port, workers=arguments.workers)
    return 0


# ---------------------------------------------------------------------------
# table and schedule: cost regimes, batch size and the roofline


def _bounded(kind: type[float] | type[int], low: float, high: float) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not low <= value <= high:  # also rejects nan
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}; got {text}")
        return value

    return parse


def _add_roofline_arguments(parser: argparse.ArgumentParser) -> None:
    from app.model.presets import ACCELERATORS, MODELS, WEIGHT_FORMATS

    group = parser.add_argument_group("roofline: presets, formats and serving conditions")
    group.add_argument("--hw", choices=list(ACCELERATORS), default="h100-sxm", help="accelerator preset")
    group.add_argument("--model", choices=list(MODELS), default="dense-8b", help="target model preset")
    group.add_argument("--draft", choices=list(MODELS), default="dense-1b", help="draft model preset")
    group.add_argument("--weights", choices=list(WEIGHT_FORMATS), default="bf16", help="target weight format")
    group.add_argument("--draft-weights", choices=list(WEIGHT_FORMATS), help="draft weight format (default: --weights)")
    group.add_argument("--kv-cache", choices=["bf16", "fp8"], default="bf16", help="KV-cache format")
    group.add_argument("--devices", type=_bounded(int, 0, 64), default=0, help="devices, 0 = fewest that fit")
    group.add_argument("--context", type=_bounded(int, 0, 1_048_576), default=1024, help="context tokens")
    group.add_argument("--bandwidth-efficiency", type=_bounded(float, 1e-6, 1.0), default=0.8)
    group.add_argument("--compute-efficiency", type=_bounded(float, 1e-6, 1.0), default=0.6)
    group.add_argument("--overhead-us", type=_bounded(float, 0.0, 100_000.0), default=50.0, help="per forward pass")
    group.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override one preset field, as in the API: hw_bandwidth_tb_s=4, model_layers=40, draft_total_params_b=3",
    )
    parser.add_argument("--format", choices=["text", "csv", "json"], default="text", help="output format")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="colour in text output")


def _setup_request(arguments: argparse.Namespace) -> object:
    from app.web.services.regimes import SetupError, SetupRequest

    overrides: dict[str, float | int | None] = {}
    for item in arguments.overrides:
        name, equals, raw = item.partition("=")
        if not equals:
            raise SetupError(item, "expected FIELD=VALUE")
        try:
            number = float(raw)
        except ValueError:
            raise SetupError(name, f"{raw!r} is not a number") from None
        overrides[name] = int(number) if number.is_integer() and name.split("_", 1)[-1] in INTEGER_FIELDS else number
    return SetupRequest(
        hw=arguments.hw,
        model=arguments.model,
        draft=arguments.draft,
        weights=arguments.weights,
        draft_weights=arguments.draft_weights,
        kv_cache=arguments.kv_cache,
        devices=arguments.devices,
        context=arguments.context,
        bandwidth_efficiency=arguments.bandwidth_efficiency,
        compute_efficiency=arguments.compute_efficiency,
        overhead_us=arguments.overhead_us,
        overrides=overrides,
    )


INTEGER_FIELDS = ("layers", "query_heads", "kv_heads", "head_dim", "kv_tensors", "experts", "experts_per_token")


def _use_color(arguments: argparse.Namespace) -> bool:
    if arguments.color != "auto":
        return bool(arguments.color == "always")
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def add_table_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    regimes = ["memory-bound", "compute-bound", "linear", "roofline"]
    parser = subparsers.add_parser(
        "table", help="speedup over p x k under two named regimes side by side (win turning into loss)"
    )
    parser.add_argument("--regime-a", choices=regimes, default="memory-bound")
    parser.add_argument("--regime-b", choices=regimes, default="compute-bound")
    parser.add_argument("--c", type=_bounded(float, 0.0, 10.0), default=0.15, help="draft cost (not roofline)")
    parser.add_argument("--beta-a", type=_bounded(float, 0.0, 1.0), default=0.5, help="linear regime A: v = 1 + beta k")
    parser.add_argument("--beta-b", type=_bounded(float, 0.0, 1.0), default=0.5, help="linear regime B")
    parser.add_argument("--batch-a", type=_bounded(int, 1, 1024), default=1, help="roofline regime A batch size")
    parser.add_argument("--batch-b", type=_bounded(int, 1, 1024), default=256, help="roofline regime B batch size")
    parser.add_argument("--p-min", type=_bounded(float, 0.0, 1.0), default=0.5)
    parser.add_argument("--p-max", type=_bounded(float, 0.0, 1.0), default=0.95)
    parser.add_argument("--p-step", type=_bounded(float, 0.001, 1.0), default=0.05)
    parser.add_argument("--k-max", type=_bounded(int, 1, 32), default=8)
    _add_roofline_arguments(parser)
    parser.set_defaults(handler=run_table)


def run_table(arguments: argparse.Namespace) -> int:
    from app.model.regimes import RegimeName
    from app.web.services.regimes import (
        MAX_TABLE_ROWS,
        RegimeRequest,
        SetupError,
        SetupRequest,
        build_regime,
        build_setup,
        p_values_for,
        render_table_text,
        table_csv,
        table_out,
    )

    try:
        request = _setup_request(arguments)
        assert isinstance(request, SetupRequest)
        built = build_setup(request)
        rows = p_values_for(arguments.p_min, arguments.p_max, arguments.p_step, MAX_TABLE_ROWS)
    except SetupError as error:
        print(f"specdec-lab table: error: {error}", file=sys.stderr)
        return 2
    side_a = build_regime(
        RegimeRequest(RegimeName(arguments.regime_a), arguments.beta_a, arguments.batch_a), arguments.c, built
    )
    side_b = build_regime(
        RegimeRequest(RegimeName(arguments.regime_b), arguments.beta_b, arguments.batch_b), arguments.c, built
    )
    table = table_out(rows, arguments.k_max, side_a, side_b, built)
    if arguments.format == "json":
        sys.stdout.write(table.model_dump_json(indent=2) + "\n")
    elif arguments.format == "csv":
        sys.stdout.write(table_csv(table))
    else:
        sys.stdout.write(render_table_text(table, _use_color(arguments)))
    return 0


def add_schedule_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("schedule", help="best draft length per batch size on the roofline (0 = off)")
    parser.add_argument("--p", type=_bounded(float, 0.0, 1.0), default=0.8, help="acceptance probability")
    parser.add_argument("--k-max", type=_bounded(int, 1, 64), default=8)
    parser.add_argument("--batch-max", type=_bounded(int, 1, 1024), default=1024)
    _add_roofline_arguments(parser)
    parser.set_defaults(handler=run_schedule)


def run_schedule(arguments: argparse.Namespace) -> int:
    from app.web.services.regimes import (
        SetupError,
        SetupRequest,
        build_setup,
        render_schedule_text,
        schedule_csv,
        schedule_out,
    )

    try:
        request = _setup_request(arguments)
        assert isinstance(request, SetupRequest)
        built = build_setup(request)
    except SetupError as error:
        print(f"specdec-lab schedule: error: {error}", file=sys.stderr)
        return 2
    schedule = schedule_out(arguments.p, arguments.k_max, arguments.batch_max, built)
    if arguments.format == "json":
        sys.stdout.write(schedule.model_dump_json(indent=2) + "\n")
    elif arguments.format == "csv":
        sys.stdout.write(schedule_csv(schedule))
    else:
        sys.stdout.write(render_schedule_text(schedule, _use_color(arguments)))
    return 0


# ---------------------------------------------------------------------------
# calibrate, sources and trees: from serving metrics to a decision

COST_REGIMES = ["memory-bound", "compute-bound", "linear", "roofline"]


def _add_cost_arguments(parser: argparse.ArgumentParser, c_default: float) -> None:
    group = parser.add_argument_group("cost of a cycle")
    group.add_argument("--c", type=_bounded(float, 0.0, 10.0), default=c_default, help="draft cost per draft step")
    group.add_argument("--regime", choices=COST_REGIMES, default="memory-bound", help="verification cost regime")
    group.add_argument("--beta", type=_bounded(float, 0.0, 1.0), default=0.5, help="linear regime: v(k) = 1 + beta k")
    group.add_argument(
        "--batch", type=_bounded(int, 1, 1024), default=1, help="roofline regime batch size (H100, 8B target, 1B draft)"
    )
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format")


def add_calibrate_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="infer p from a draft acceptance rate, a mean acceptance length or a vLLM /metrics scrape"
    )
    measured = parser.add_mutually_exclusive_group(required=True)
    measured.add_argument("--rate", type=_bounded(float, 0.0, 1.0), help="draft acceptance rate, accepted / drafted")
    measured.add_argument("--length", type=_bounded(float, 1.0, 65.0), help="mean acceptance length (tokens per step)")
    measured.add_argument(
        "--metrics", metavar="FILE", help="Prometheus text from a vLLM server's /metrics ('-' = stdin)"
    )
    measured.add_argument(
        "--from",
        dest="source",
        metavar="FILE_OR_URL",
        help="any engine's report (vLLM, SGLang, TensorRT-LLM, llama.cpp), detected by format; a URL is fetched",
    )
    parser.add_argument("--label", default="model_name", help="with --from: label that splits classes")
    parser.add_argument("--cycles", type=_bounded(float, 1e-9, 1e15), help="with --from: verifications behind a mean")
    parser.add_argument(
        "--baseline", metavar="FILE", help="an earlier /metrics scrape to subtract (with --metrics or --from)"
    )
    parser.add_argument(
        "--k", type=_bounded(int, 1, 64), help="draft length of the measurement (num_speculative_tokens)"
    )
    parser.add_argument("--model-name", help="model_name label to pick when the scrape covers several models")
    parser.add_argument("--k-max", type=_bounded(int, 1, 64), default=16, help="largest draft length to predict")
    _add_cost_arguments(parser, 0.15)
    parser.set_defaults(handler=run_calibrate)


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def run_calibrate(arguments: argparse.Namespace) -> int:
    from app.model import calibration
    from app.web.services.decision import calibration_out, cost_regime, render_calibration_text

    if arguments.source is not None:
        from app.cli_engines import run_calibrate_from

        return run_calibrate_from(arguments)
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    try:
        if arguments.metrics is not None:
            text = _read_text(arguments.metrics)
            baseline = _read_text(arguments.baseline) if arguments.baseline else None
            result = calibration.calibrate_from_exposition(
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
    if arguments.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_calibration_text(report) + "\n")
    return 0


def add_sources_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sources", help="draft model, n-gram lookup, Medusa and EAGLE side by side (cited measurements)"
    )
    parser.add_argument("--k-max", type=_bounded(int, 1, 64), default=16, help="largest draft length searched")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="ID:P:C",
        help="edit a source's acceptance and draft cost, e.g. eagle:0.8:0.1 (repeatable)",
    )
    _add_cost_arguments(parser, 0.15)
    parser.set_defaults(handler=run_sources)


def run_sources(arguments: argparse.Namespace) -> int:
    from app.model import draft_sources
    from app.web.services.decision import cost_regime, render_sources_text, sources_out

    try:
        overrides = draft_sources.parse_overrides(",".join(arguments.override))
        draft_sources.with_overrides(overrides)
    except ValueError as error:
        print(f"specdec-lab sources: error: {error}", file=sys.stderr)
        return 2
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    report = sources_out(arguments.k_max, regime, overrides)
    if arguments.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_sources_text(report) + "\n")
    return 0


def add_trees_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "trees", help="chain, fixed-width and optimal token trees for a verification budget, with bounds"
    )
    parser.add_argument(
        "--acceptance", default="0.6,0.2,0.1,0.05", help="positional acceptance P1 >= P2 >= ..., comma-separated"
    )
    parser.add_argument("--budget", type=_bounded(int, 0, 256), default=64, help="largest tree in drafted tokens")
    parser.add_argument("--widths", default="2,4", help="widths of the fixed-width trees, comma-separated (2 to 16)")
    parser.add_argument("--every", type=_bounded(int, 1, 256), default=8, help="print every n-th budget")
    _add_cost_arguments(parser, 0.05)
    parser.set_defaults(handler=run_trees)


def run_trees(arguments: argparse.Namespace) -> int:
    from app.model import trees
    from app.web.services.decision import cost_regime, render_trees_text, trees_out

    try:
        acceptance = trees.positional_acceptance(
            [float(item) for item in arguments.acceptance.split(",") if item.strip()]
        )
        widths = [int(item) for item in arguments.widths.split(",") if item.strip()]
        if any(not 2 <= width <= trees.MAX_WIDTH for width in widths):
            raise ValueError(f"widths must be from 2 to {trees.MAX_WIDTH}")
    except ValueError as error:
        print(f"specdec-lab trees: error: {error}", file=sys.stderr)
        return 2
    regime = cost_regime(arguments.regime, arguments.c, beta=arguments.beta, batch=arguments.batch)
    report = trees_out(acceptance, arguments.budget, regime, widths)
    if arguments.format == "json":
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render_trees_text(report, arguments.every) + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specdec-lab", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_serve_command(subparsers)
    add_table_command(subparsers)
    add_schedule_command(subparsers)
    add_calibrate_command(subparsers)
    add_sources_command(subparsers)
    add_trees_command(subparsers)
    from app import cli_engines

    cli_engines.add_commands(subparsers, _add_roofline_arguments, _setup_request)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    handler: Handler = arguments.handler
    return handler(arguments)


if __name__ == "__main__":
    sys.exit(main())
