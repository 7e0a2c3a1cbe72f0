"""Engine commands of `specdec-lab`: calibrate --from, config, step-fit, watch, rules and dashboard."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from app.cli.arguments import (
    add_color,
    add_input,
    add_inputs,
    add_roofline_arguments,
    add_setup_arguments,
    add_step_fit_argument,
    built_setup,
    input_values,
    read_as,
    read_source,
)
from app.cli.command import REFUSALS, Command, Refused, fail, refusal, register
from app.model.cost import step_cost
from app.model.cost.regimes import RooflineSetup
from app.model.counters.calibration import CalibrationError
from app.model.counters.counts import Measurement
from app.model.engines import UnknownVersionError
from app.model.engines.reports import MAX_CLASSES
from app.model.live.rollout import calibrated_interval
from app.model.live.watch import IntervalReport, ScrapeFailed, WatchState, read_scrape, scrape_engines, watch_scrapes
from app.model.rules import promql
from app.service import decision_inputs, live_inputs, plan, plan_inputs, rollout_inputs
from app.service.clients import prometheus as prometheus_watch
from app.service.decision import CostRegime, cost_regime
from app.service.engines import calibrate_report
from app.service.fetch import FetchError, check_url, fetch_text
from app.service.plan_inputs import PLAN, WATCH
from app.service.regimes import SetupError
from app.service.schemas.engines import EngineCalibrationOut, EngineConfigOut, StepFitOut
from app.service.step_fit import step_fit_out


def calibrate_from(arguments: argparse.Namespace, regime: CostRegime) -> EngineCalibrationOut:
    """`specdec-lab calibrate --from FILE_OR_URL`: any engine's report, detected by format."""
    text = read_source(arguments.source)
    if getattr(arguments, "baseline", None):
        text = json.dumps({"report": text, "baseline": read_source(arguments.baseline)})
    return calibrate_report(
        text,
        regime,
        arguments.k_max,
        k=arguments.k,
        label=arguments.label,
        cycles=arguments.cycles,
        draft_lengths=decision_inputs.draft_lengths(getattr(arguments, "draft_lengths", None)),
        engine_version=getattr(arguments, "engine_version", None),
    ).out


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register config, step-fit and watch; they take the same setup arguments as `schedule`."""
    register(subparsers, CONFIG, argparse.HelpFormatter)
    register(subparsers, STEP_FIT, argparse.HelpFormatter)

    read = ", ".join(scrape_engines())
    watch = subparsers.add_parser(
        "watch",
        help=f"poll a live server's /metrics ({read}), or a Prometheus over a fleet, and say when speculation stops "
        "paying",
    )
    watch.add_argument("url", nargs="?", help="http(s) URL of the server's /metrics (or give --prometheus)")
    add_input(
        watch,
        rollout_inputs.PROMETHEUS,
        required=False,
        metavar="URL",
        help="ask this Prometheus (http://host:9090) for every instance and class instead of polling one /metrics",
    )
    add_input(
        watch, plan_inputs.ENGINE, required=False, help="with --prometheus: the engine (default: the one scraped)"
    )
    add_input(watch, plan_inputs.ENGINE_VERSION, help="with --prometheus and --engine: the engine version")
    add_inputs(watch, live_inputs.WATCH)
    watch.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a regression was seen")
    add_input(
        watch,
        rollout_inputs.CALIBRATED,
        help="LOW,HIGH: acceptance interval to hold (default: the first interval's)",
        type=read_as(rollout_inputs.CALIBRATED, calibrated_interval),
    )
    add_input(watch, decision_inputs.CLASS_LABEL)
    watch.add_argument("--label-value", help="watch only this value of --label")
    add_input(watch, live_inputs.SERVE_PORT)
    add_roofline_arguments(watch)
    watch.set_defaults(handler=run_watch)

    for name, help_text in (
        ("rules", "Prometheus recording and alerting rules for your setup and schedule (YAML)"),
        ("dashboard", "a Grafana dashboard (JSON) over the rules of the same arguments"),
    ):
        command = subparsers.add_parser(name, help=help_text)
        _add_rules_arguments(command)
        add_roofline_arguments(command)
        add_step_fit_argument(command)
        command.set_defaults(handler=run_rules)


def _add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """What one plan depends on (app.service.plan_inputs.PLAN): config, rules and dashboard take the same inputs
    as the API, and a report to calibrate from."""

    add_inputs(parser, PLAN)
    parser.add_argument(
        "--from",
        dest="source",
        metavar="FILE_OR_URL",
        help="calibrate from this engine report and decide in one step (its p and per-position profile)",
    )


def _add_rules_arguments(parser: argparse.ArgumentParser) -> None:

    _add_plan_arguments(parser)
    add_inputs(parser, WATCH)
    parser.add_argument("--output", metavar="FILE", help="write to FILE instead of standard output")


def _plan(arguments: argparse.Namespace, watching: bool) -> plan.Plan:
    """The plan of config (``watching`` False), rules or dashboard, from the options and the setup; with --from,
    calibrated from that report first (where p came from is said on stderr).  Raises what the executor refuses:
    the report, the profile, the tree or the rules' inputs that cannot be read."""
    built = built_setup(arguments)
    values = input_values(arguments, (*plan_inputs.PLAN, *(plan_inputs.WATCH if watching else ())))
    profile = None
    if arguments.source:
        values["p"], measured, where = _calibrated_profile(arguments.source, arguments.k_max)
        profile = None if arguments.profile else measured  # --profile, when given, is the one
        print(where, file=sys.stderr)
    build = plan_inputs.watch_request if watching else plan_inputs.request
    return plan.build(build(values, profile), built)


def run_rules(arguments: argparse.Namespace) -> int:
    """`specdec-lab rules` (YAML, or JSON as the API with --format json) and `specdec-lab dashboard` (JSON)."""

    name = arguments.command
    if arguments.format == "csv":
        return fail(name, "--format must be text or json")
    try:
        decided = _plan(arguments, watching=True)
        made = decided.rules
    except REFUSALS as error:  # an unknown version, method or tree, a report or setup refused: named
        return fail(name, refusal(error))
    if name == "dashboard":
        text = decided.dashboard_text()
    elif arguments.format == "json":
        text = decided.rules_out().model_dump_json(indent=2) + "\n"
    else:
        text = made.text
    if arguments.output:
        try:
            Path(arguments.output).write_text(text, encoding="utf-8")
        except OSError as error:
            return fail(name, f"cannot write {arguments.output}: {error.strerror}")
        print(f"wrote {arguments.output}", file=sys.stderr)
        return 0
    sys.stdout.write(text)
    return 0


def _calibrated_profile(source: str, k_max: int) -> tuple[float, tuple[float, ...], str]:
    """p and the per-position profile of an engine report, and a line saying where they came from."""

    report = calibrate_report(read_source(source), cost_regime("memory-bound", 0.0), k_max).out
    profile = tuple(position.rate for position in report.calibration.positions)
    where = f"p = {report.p:.4f} from {report.format_description} ({report.engine})"
    return report.p, profile, where + (f", profile measured up to k = {len(profile)}" if profile else "")


def _config_options(parser: argparse.ArgumentParser) -> None:
    _add_plan_arguments(parser)
    add_setup_arguments(parser)
    add_color(parser)
    add_step_fit_argument(parser)


def _config_text(arguments: argparse.Namespace, out: EngineConfigOut) -> str:
    lines = [out.headline, f"{out.engine} {out.engine_version} (known: {', '.join(out.engine_versions)})", ""]
    lines.append(out.text.rstrip() if out.speculate else "(leave speculation off)")
    lines += [f"note: {note}" for note in out.notes]
    if out.accuracy is not None:
        lines.append(f"how good: {out.accuracy.summary}")
    lines += [f"keys checked against {source}" for source in out.sources]
    return "\n".join(lines)


CONFIG = Command(
    "config",
    "the schedule on your setup as vLLM, SGLang, TensorRT-LLM or llama.cpp take it",
    _config_options,
    lambda arguments: _plan(arguments, watching=False).config_out(),
    _config_text,
)


def _step_fit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", metavar="FILE", help="CSV (batch,tokens,ms), vLLM dynamic config JSON or SGLang JSONL"
    )
    add_inputs(parser, decision_inputs.STEP_FIT)
    add_setup_arguments(parser)
    add_color(parser)


def _step_fit(arguments: argparse.Namespace) -> StepFitOut:
    built = built_setup(arguments)
    return step_fit_out(read_source(arguments.source), built, arguments.p, arguments.k_max, arguments.batch_max)


def _step_fit_text(arguments: argparse.Namespace, out: StepFitOut) -> str:
    lines = [
        f"{out.rows} rows ({out.format}): bandwidth efficiency {out.bandwidth_efficiency:.3f}, "
        f"compute efficiency {out.compute_efficiency:.3f}, overhead {out.overhead_us:.1f} us per pass",
        f"fit error: rms {100 * out.rms_relative_error:.2f}%, max {100 * out.max_relative_error:.2f}%",
    ]
    if out.step_cost is not None:
        terms = out.step_cost
        lines.append(
            f"named terms: {step_cost.terms_text(terms.model_dump(), digits=3)} "
            f"(rms {100 * (terms.rms_relative_error or 0.0):.2f}%)"
        )
    if out.schedule is not None:
        lines.append(out.schedule.headline)
    lines += [f"note: {note}" for note in out.notes]
    return "\n".join(lines)


STEP_FIT = Command(
    "step-fit", "fit efficiencies and overhead to measured step times", _step_fit_options, _step_fit, _step_fit_text
)


class _Gauges:
    """specdec_lab_* gauges on a private registry, served on 127.0.0.1."""

    def __init__(self, port: int) -> None:
        from prometheus_client import CollectorRegistry, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.speedup = Gauge(
            "specdec_lab_expected_speedup", "Speedup the interval's acceptance implies", registry=self.registry
        )
        self.acceptance = Gauge("specdec_lab_acceptance", "Acceptance p of the last interval", registry=self.registry)
        self.batch = Gauge("specdec_lab_batch", "vllm:num_requests_running at the last scrape", registry=self.registry)
        self.pays = Gauge(
            "specdec_lab_speculation_pays", "1 while the implied speedup exceeds 1", registry=self.registry
        )
        self.regression = Gauge("specdec_lab_regression", "1 after a regression was seen", registry=self.registry)
        result = start_http_server(port, addr="127.0.0.1", registry=self.registry)
        self.server = result[0] if isinstance(result, tuple) else None
        self.port = self.server.server_address[1] if self.server is not None else port

    def show(self, reports: list[IntervalReport], state: WatchState) -> None:
        """The interval's reports on the gauges: with several classes, the one that pays least."""
        measured = [report for report in reports if report.speedup is not None]
        if not measured:
            return
        worst = min(measured, key=lambda report: report.speedup or 0.0)
        self.speedup.set(worst.speedup or 0.0)
        self.acceptance.set(worst.p or 0.0)
        self.batch.set(worst.batch or 0)
        self.pays.set(1.0 if (worst.speedup or 0.0) > 1 else 0.0)
        self.regression.set(1.0 if state.regressions else 0.0)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _gauges(arguments: argparse.Namespace) -> _Gauges | None:
    if arguments.serve_port is None:
        return None
    gauges = _Gauges(arguments.serve_port)
    print(f"serving specdec_lab_* gauges on http://127.0.0.1:{gauges.port}/metrics", flush=True)
    return gauges


def run_watch(arguments: argparse.Namespace) -> int:

    if arguments.prometheus is not None and arguments.url is not None:
        return fail("watch", "give a /metrics URL or --prometheus URL, not both")
    if arguments.prometheus is None and arguments.url is None:
        return fail("watch", "give the server's /metrics URL, or --prometheus URL")
    if arguments.prometheus is not None and arguments.engine_version and not arguments.engine:
        return fail("watch", "--engine-version needs --engine")
    calibrated = arguments.calibrated
    try:
        if arguments.url is not None:
            check_url(arguments.url)
        built = built_setup(arguments)
    except (FetchError, SetupError, Refused) as error:
        return fail("watch", str(error))
    gauges: list[_Gauges] = []  # opened once the source is known to answer (the Prometheus found)
    try:
        if arguments.prometheus is not None:
            state = _watch_prometheus(arguments, built.setup, calibrated, gauges)
            what = "class intervals"
        else:
            gauges += [g for g in (_gauges(arguments),) if g is not None]
            state = watch_scrapes(
                partial(_scrape, arguments, timeout=min(5.0, max(arguments.interval, 0.5))),
                built.setup,
                interval=arguments.interval,
                samples=arguments.samples,
                calibrated=calibrated,
                emit=lambda text: print(text, flush=True),
                on_reports=gauges[0].show if gauges else lambda reports, state: None,
            )
            what = "intervals"
    except (prometheus_watch.PrometheusError, UnknownVersionError) as error:
        return fail("watch", str(error))
    finally:
        for opened in gauges:
            opened.close()
    if state.regressions:
        print(f"{state.regressions} of {state.index} {what} regressed", flush=True)
    return 1 if state.regressions and arguments.fail_on_regression else 0


def _scrape(arguments: argparse.Namespace, timeout: float) -> Measurement:
    try:
        return read_scrape(fetch_text(arguments.url, timeout=timeout), arguments.label, arguments.label_value)
    except FetchError as error:
        raise ScrapeFailed(str(error)) from None
    except CalibrationError as error:
        raise ScrapeFailed(error.message) from None


def _watch_prometheus(
    arguments: argparse.Namespace, setup: RooflineSetup, calibrated: tuple[float, float] | None, gauges: list[_Gauges]
) -> WatchState:
    """`specdec-lab watch --prometheus URL`: every instance and class from Prometheus, one line per class."""
    prometheus = prometheus_watch.Prometheus(arguments.prometheus, timeout=min(10.0, max(arguments.interval, 1.0)))
    target = prometheus_watch.detect(
        prometheus, arguments.engine, arguments.engine_version, arguments.label, arguments.label_value
    )
    print(
        f"watching {target.engine} {target.version} in Prometheus at {prometheus.url} every "
        f"{arguments.interval:g} s, per instance and {arguments.label}",
        flush=True,
    )
    gauges += [g for g in (_gauges(arguments),) if g is not None]
    return _run_watch(
        prometheus,
        target,
        setup,
        interval=arguments.interval,
        samples=arguments.samples,
        since=arguments.since,
        calibrated=calibrated,
        emit=lambda text: print(text, flush=True),
        on_reports=gauges[0].show if gauges else lambda reports, state: None,
    )


# ---------------------------------------------------------------------------
# watch --prometheus: the loop over intervals and its lines


def _how(target: prometheus_watch.Target, seconds: float) -> str:
    """Which the watch does, in words: read the rules' recorded series, or evaluate their expressions."""
    if target.recorded:
        return (
            f"reading the series recorded by the specdec-lab rules ({promql.RULES_LABEL}="
            f"{', '.join(target.recorded)}), each over the window the rules were written with"
        )
    return (
        f"the specdec-lab rules are not loaded in this Prometheus (or not per instance and {target.label}): "
        f"evaluating the expressions of their recording rules over each {max(1, round(seconds))} s interval "
        "(load `specdec-lab rules` to read recorded series)"
    )


def _who(key: prometheus_watch.Key, label: str) -> str:
    instance, value = key
    return f"{instance}" if label == "instance" or not value else f"{instance} {label}={value}"


def _report_interval(
    interval: prometheus_watch.Interval,
    target: prometheus_watch.Target,
    setup: RooflineSetup,
    state: WatchState,
    emit: Callable[[str], None],
) -> list[IntervalReport]:
    """One line per class, each judged by the watch's one evaluator (``WatchState.judge``)."""
    state.index += 1
    classes = interval.classes()
    if not classes:
        emit(f"interval {state.index:>4}: no spec-decode series in Prometheus this interval")
        return []
    if len(classes) > MAX_CLASSES:
        emit(f"interval {state.index:>4}: {len(classes)} classes; reporting the first {MAX_CLASSES}")
        classes = classes[:MAX_CLASSES]
    reports = []
    for key in classes:
        reset = interval.values.get(promql.COUNTER_RESETS, {}).get(key, 0.0) > 0
        report, text = state.judge(
            key,
            partial(prometheus_watch.class_report, interval, key, target, setup),
            who=_who(key, target.label),
            tail="; counters reset in the window read (restart?): increase() counts across it" if reset else "",
        )
        emit(text)
        reports.append(report)
    return reports


def _run_watch(
    prometheus: prometheus_watch.Prometheus,
    target: prometheus_watch.Target,
    setup: RooflineSetup,
    *,
    interval: float,
    samples: int,
    since: float,
    calibrated: tuple[float, float] | None,
    emit: Callable[[str], None],
    on_reports: Callable[[list[IntervalReport], WatchState], None] = lambda reports, state: None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> WatchState:
    """History (``since`` seconds, in range queries), then ``samples`` live intervals (instant queries).

    Raises PrometheusError when Prometheus fails MAX_FAILURES intervals in a row (or the history)."""
    state = WatchState(calibrated)
    emit(_how(target, interval))
    start = clock()
    steps = min(prometheus_watch.MAX_HISTORY, int(since // interval))
    if steps >= 1:
        times = [start - interval * (steps - index) for index in range(steps)]
        for answered in prometheus_watch.evaluate(prometheus, target, interval, times):
            on_reports(_report_interval(answered, target, setup, state, emit), state)
    for sample in range(samples):
        due = start + interval * sample
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        try:
            answered = prometheus_watch.evaluate(prometheus, target, interval, [due])[0]
        except prometheus_watch.PrometheusError as error:
            state.index += 1
            state.failures += 1
            emit(f"interval {state.index:>4}: Prometheus query failed: {error}")
            if state.failures >= prometheus_watch.MAX_FAILURES:
                raise prometheus_watch.PrometheusError(f"{error} ({state.failures} intervals in a row)") from None
            continue
        state.failures = 0
        on_reports(_report_interval(answered, target, setup, state, emit), state)
    return state
