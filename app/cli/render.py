"""The command line's renderings for a terminal: the regimes' tables and schedule (with colour), the calibration,
the draft sources and the trees, and what measure measured (one request at a time, or over batches).  The
application layer answers records; the command line writes them as text for a person at a terminal."""

from __future__ import annotations

from dataclasses import asdict

from app.model import limits
from app.model.arithmetic import trees
from app.model.cost import fitting, step_cost
from app.model.live.measure_batches import MAX_PREDICTED_BATCH, CellResult
from app.service.regimes import off_range_text
from app.service.schemas.core import Curve, OptimalK, Speedup
from app.service.schemas.decision import CalibrationOut, DraftSourcesOut, TreesOut
from app.service.schemas.engines import EngineCalibrationOut
from app.service.schemas.measure import BatchReport, SweepReport
from app.service.schemas.regimes import ScheduleOut, SetupOut, TableOut

# ---------------------------------------------------------------------------
# The regimes: the p x k table and the schedule

GREEN, RED, BOLD, DIM, RESET = "\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{RESET}" if color and style else text


def _speedup_style(value: float) -> str:
    return GREEN if value > 1.0 else RED if value < 1.0 else ""


def describe_setup_line(setup: SetupOut) -> str:
    terms = [
        f"{term.label.split(' (')[0].lower()} {getattr(setup, term.name):g} us"
        for term in limits.COST_TERMS
        if getattr(setup, term.name) not in (None, term.default)
    ]
    return (
        f"{setup.accelerator.name} x{setup.devices}, {setup.target.name} ({setup.weights}) drafted by "
        f"{setup.draft.name} ({setup.draft_weights}), context {setup.context_tokens:,}, "
        f"efficiency {setup.bandwidth_efficiency:g} bandwidth / {setup.compute_efficiency:g} compute, "
        f"overhead {setup.step_overhead_us:g} us" + "".join(f", {term}" for term in terms)
    )


def render_table_text(table: TableOut, color: bool) -> str:
    """Both regimes' p x k speedups as aligned tables; green wins, red losses."""
    width = 7
    lines: list[str] = []
    highlight = table.highlight
    for regime, grid in ((table.regime_a, table.speedup_a), (table.regime_b, table.speedup_b)):
        lines.append(_paint(f"{regime.label}, c = {regime.draft_cost:.4g}", BOLD, color))
        lines.append("p \\ k".rjust(6) + "".join(f"{k:>{width}d}" for k in table.k_values))
        for p, row in zip(table.p_values, grid, strict=True):
            cells = []
            for k, value in zip(table.k_values, row, strict=True):
                text = f"{value:.2f}x".rjust(width)
                style = _speedup_style(value)
                if highlight and highlight.p == p and highlight.k == k:
                    style += BOLD
                cells.append(_paint(text, style, color))
            lines.append(f"{p:>6.2f}" + "".join(cells))
        lines.append("")
    if highlight:
        lines.append(
            f"win to loss: at p = {highlight.p:g}, k = {highlight.k}: {highlight.speedup_a:.2f}x under "
            f"{table.regime_a.name} becomes {highlight.speedup_b:.2f}x under {table.regime_b.name} "
            f"({table.win_to_loss_cells} cells flip)"
        )
    else:
        lines.append("no cell wins under the first regime and loses under the second")
    if table.setup is not None:
        lines.append(_paint("roofline: " + describe_setup_line(table.setup), DIM, color))
    return "\n".join(lines) + "\n"


def render_schedule_text(schedule: ScheduleOut, color: bool) -> str:
    """The schedule as aligned rows: batch range, k (off when 0), speedup at both ends."""
    lines = [
        _paint(f"Best draft length by batch size at p = {schedule.p:g} (k up to {schedule.k_max})", BOLD, color),
        _paint(describe_setup_line(schedule.setup), DIM, color),
        f"{'batch':>13}  {'k':>3}  {'speedup':>15}",
    ]
    for step in schedule.steps:
        batches = f"{step.batch_from}-{step.batch_to}" if step.batch_to > step.batch_from else str(step.batch_from)
        k_text = (str(step.k) + ("+" if step.limit_reached else "")) if step.k else "off"
        speedups = f"{step.speedup_at_from:.2f}x-{step.speedup_at_to:.2f}x"
        style = _speedup_style(step.speedup_at_to) if step.k else RED
        lines.append(f"{batches:>13}  {_paint(f'{k_text:>3}', style, color)}  {speedups:>15}")
    interval = off_range_text(schedule.off_ranges)
    if schedule.off_from_batch is not None:
        lines.append(f"speculation off from batch {schedule.off_from_batch}" + (f" ({interval})" if interval else ""))
    elif schedule.batch_limit:
        lines.append(f"speculation still pays at batch {schedule.batch_limit}" + (f" ({interval})" if interval else ""))
    lines.append(schedule.headline)
    if schedule.limit_reached:
        lines.append(
            f"limit reached: k+ is k_max = {schedule.k_search_max}, the longest draft searched; "
            "a longer draft may do better (raise --k-max)"
        )
    if schedule.accuracy is not None:
        # the defaults are the fitted terms; the plain roofline's, to see what they change
        terms = " ".join(
            f"--{name.replace('_', '-')} {value:g}" for name, value in asdict(fitting.PLAIN_ROOFLINE).items()
        )
        lines.append(_paint(schedule.accuracy.summary, DIM, color))
        if schedule.accuracy.source == "defaults":
            lines.append(_paint(f"the plain roofline, to compare: {terms}", DIM, color))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The calibration, the draft sources and the trees


def _number(value: float | None, digits: int = 3, missing: str = "-") -> str:
    return missing if value is None else f"{value:.{digits}f}"


def render_calibration_text(result: CalibrationOut) -> str:
    lines = [
        f"p = {result.acceptance:.4f}  (from {result.source} at k = {result.k}; {result.estimator})",
        f"draft acceptance rate {result.draft_acceptance_rate:.4f}, mean acceptance length "
        f"{result.mean_acceptance_length:.4f} tokens per verification",
        f"regime: {result.regime.label}, c = {result.regime.c:g}",
    ]
    if result.best_k:
        lines.append(f"recommended k = {result.best_k}: speedup {result.best_speedup:.3f}x")
        if result.limit_reached:
            lines.append(
                f"limit reached: k_max = {result.k_search_max} is the longest draft searched; a longer one may do "
                "better (raise --k-max)"
            )
    else:
        lines.append("recommended: do not speculate (no k beats plain decoding)")
    if result.positions:
        lines.append("")
        lines.append("position  accepted/draft  conditional  i.i.d. p^i")
        for position in result.positions:
            lines.append(
                f"{position.position:>8}  {position.rate:>14.4f}  "
                f"{_number(position.conditional, 4):>11}  {position.iid_rate:>10.4f}"
            )
    if result.departure is not None:
        departure = result.departure
        verdict = {True: "consistent with", False: "departs from", None: "cannot be tested against"}[
            departure.consistent_with_iid
        ]
        lines.append(
            f"acceptance {verdict} i.i.d.: chi-square {_number(departure.chi_square, 2)} on "
            f"{departure.degrees_of_freedom} df, p-value {_number(departure.p_value, 4)}, "
            f"max |conditional - p| {departure.max_conditional_deviation:.4f}"
        )
    lines.append("")
    lines.append("   k  tokens/cycle  cost/cycle  speedup")
    for row in result.predictions:
        marker = "  <- best" if row.k == result.best_k and row.k else ""
        lines.append(
            f"{row.k:>4}  {row.expected_tokens:>12.3f}  {row.cost_per_cycle:>10.3f}  {row.speedup:>7.3f}{marker}"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)


def render_sources_text(result: DraftSourcesOut) -> str:
    lines = [
        f"regime: {result.regime.label}; k searched up to {result.k_max}",
        "",
        f"{'source':<48} {'tau':>5} {'S meas':>6} {'d':>3} {'p':>6} {'c':>6} "
        f"{'acc/cost':>8} {'best k':>6} {'S best':>6}",
    ]
    for row in result.sources:
        per_cost = _number(row.accepted_per_draft_cost, 2)
        name = row.name + (" (edited)" if row.edited else "")
        lines.append(
            f"{name:<48} {row.mean_accepted_tokens:>5.2f} {row.measured_speedup:>6.2f} {row.reference_depth:>3} "
            f"{row.acceptance:>6.3f} {row.draft_cost:>6.3f} {per_cost:>8} {row.best_k:>6} {row.best_speedup:>6.3f}"
        )
    limited = [row.id for row in result.sources if row.limit_reached]
    if limited:
        lines.append(
            f"limit reached for {', '.join(limited)}: best k is k_max = {result.k_max}, the longest draft searched "
            "(raise --k-max)"
        )
    lines.append("")
    lines.append(
        "acc/cost: accepted drafts per unit of draft cost at the measured depth d; it leaves the verification pass "
        "out, so sources are ranked by speedup (tokens per unit of draft and verification cost)"
    )
    lines.extend(
        f"{row.id}: {row.method}. Measured: {row.measurement}; depth: {row.depth_source}" for row in result.sources
    )
    return "\n".join(lines)


def render_trees_text(result: TreesOut, every: int = 8) -> str:
    lines = [
        f"positional acceptance P = {', '.join(f'{value:g}' for value in result.acceptance)}; "
        f"regime: {result.regime.label}, c = {result.regime.c:g} per tree level",
        f"bounds: chain 1/(1-P1) = {_number(result.chain_bound)}, binary tree 1/(1-(P1+P2)) = "
        f"{_number(result.binary_tree_bound)}, any tree 1/(1-sum P) = {_number(result.full_bound)}",
        f"verification: {result.verification_assumption}",
        "",
        "expected tokens per verification by budget n (drafted tokens):",
    ]
    budgets = sorted({*range(0, result.budget + 1, every), result.budget})
    header = f"{'tree':<28}" + "".join(f"{n:>8}" for n in budgets)
    lines.append(header)
    for family in result.families:
        values = result.most_tokens_values if family.kind == "best_speedup" else family.values
        name = f"{trees.MOST_TOKENS_TREE} (any depth)" if family.kind == "best_speedup" else family.name
        lines.append(f"{name:<28}" + "".join(f"{values[n]:>8.3f}" for n in budgets))
    lines.append("")
    lines.append(
        f"speedup by budget (the {trees.BEST_SPEEDUP_TREE}: depth chosen for speed, one draft step per level):"
    )
    lines.append(header)
    for family in result.families:
        lines.append(f"{family.name:<28}" + "".join(f"{family.speedups[n]:>8.3f}" for n in budgets))
    lines.append("")
    lines.append(
        f"best: {result.best_family} with {result.best_budget} drafted tokens, speedup {result.best_speedup:.3f}x; "
        f"the {trees.BEST_SPEEDUP_TREE} there has depth {result.best_speedup_shape.depth}"
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# measure: one request at a time, and over batches


def render_text(report: SweepReport) -> str:
    kinds = {server.k: server.kind for server in report.servers}
    lines = [
        f"plain decoding: {report.plain_ms_per_token:.2f} ms per token; {report.requests} requests in "
        f"{report.seconds:.0f} s",
        f"c: {_number(report.c)} ({report.c_source})",
        f"cost model: {report.cost_model}"
        + (
            f": v0 = {report.v0:.3f}, beta = {report.beta:.3f}"
            if report.v0 is not None and report.beta is not None
            else f": a = {report.cycle_intercept:.3f}, gamma = {report.cycle_slope:.3f}"
        ),
        "",
        f"{'k':>3}  {'drafter':<13} {'tok/verif':>9} {'L':>5} {'share':>5} {'c':>6} {'v(k)':>6} {'v model':>7} "
        f"{'measured':>8} {'predicted':>9} {'mixed':>6} {'holdout':>7}  profile",
    ]
    for item in report.results:
        profile = " ".join(f"{value:.2f}" for value in item.profile[:12])
        lines.append(
            f"{item.k:>3}  {kinds.get(item.k, '?'):<13} {_number(item.tokens_per_verification):>9} "
            f"{_number(item.mean_draft_length, 2):>5} {_number(item.draft_share, 2):>5} "
            f"{_number(item.c):>6} {_number(item.v, 2):>6} {_number(item.v_model, 2):>7} "
            f"{_number(item.measured_speedup):>8} {_number(item.predicted_speedup):>9} "
            f"{_number(item.predicted_speedup_mixed):>6} {_number(item.predicted_speedup_holdout):>7}  {profile}"
        )
    lines += [
        "",
        f"best k: measured {report.best_k_measured}, predicted {report.best_k_predicted} (closed form), "
        f"{report.best_k_predicted_mixed} (with the steps that had no draft)",
        "share: verifications over decoding steps; mixed: the prediction with that share, the rest plain steps; "
        "holdout: v(k) fitted without that k",
    ]
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def _batch_holdout_mark(cell: CellResult) -> str:
    return "*" if cell.batch_holdout_kept else "+" if cell.batch_holdout_given else ""


def render_batches(report: BatchReport) -> str:
    titles = {"llamacpp": "llama-server", "vllm": "vLLM"}
    served = "; ".join(
        f"{server.url}: {titles.get(server.engine, server.engine)}"
        + (f" {server.version}" if server.version else "")
        + (f", k = {server.k}" if server.speculative else ", no speculation")
        for server in report.servers
    )
    cost = report.step_cost
    cells = report.cells or []
    lines = [
        *([f"servers: {served}"] if served else []),
        f"{report.requests} requests in {report.seconds:.0f} s; step cost fitted on every cell: "
        + (step_cost.terms_text(cost.model_dump(), [*cost.fitted, *cost.given]) if cost is not None else "none"),
        "",
        f"{'k':>3} {'batch':>5} {'tok/s':>8} {'step ms':>8} {'tok/step':>8} {'measured':>8} {'spread':>11} "
        f"{'e2e':>6} {'holdout':>7} {'batch-out':>9}  profile",
    ]
    for cell in cells:
        spread = cell.speedup_rounds
        profile = " ".join(f"{value:.2f}" for value in cell.profile[:8])
        lines.append(
            f"{cell.k:>3} {cell.batch:>5} {cell.throughput_tokens_s:>8.1f} {cell.step_ms:>8.2f} "
            f"{cell.tokens_per_step:>8.2f} {_number(cell.measured_speedup):>8} "
            f"{(f'{min(spread):.2f}..{max(spread):.2f}' if spread else '-'):>11} "
            f"{_number(cell.measured_speedup_end_to_end):>6} "
            f"{_number(cell.predicted_speedup_holdout):>7} "
            f"{_number(cell.predicted_speedup_batch_holdout) + _batch_holdout_mark(cell):>9}"
            f"  {profile}"
        )
    lost = {why for cell in cells for why in cell.batch_holdout_kept.values()}
    if lost:
        lines.append("* predicted without a term the other batches cannot identify: " + "; ".join(sorted(lost)))
    held = sorted({name for cell in cells for name in cell.batch_holdout_given})
    if held:
        lines.append("+ predicted with given terms the other batches cannot identify: " + ", ".join(held))
    lines.append("")
    for item in report.crossover or []:
        measured = item.crossover_batch_measured
        predicted = item.crossover_batch_predicted
        fitted = ",".join(map(str, item.fitted_on_batches))
        if measured is None:
            said = "pays at every measured batch" if item.fitted_on_batches else "none"
        elif item.fitted_on_batches:
            said = f"stops paying at batch {measured}"
        else:
            said = "does not pay at any measured batch"
        if item.note:  # no prediction was made, and the note says why
            guess = f"not predicted: {item.note}"
        elif predicted is None:
            guess = f"predicted to pay up to batch {MAX_PREDICTED_BATCH} (fitted on batches {fitted})"
        else:
            guess = f"predicted to stop at batch {predicted} (fitted on batches {fitted})"
        lines.append(f"k = {item.k}: measured: {said}; {guess}")
    if any(cell.measured_speedup_end_to_end is not None for cell in cells):
        lines.append(
            "measured is the decoding phase's speedup (time per output token after the first), which the crossover "
            "refers to; e2e is end to end (wall-clock per output token, prompts included)"
        )
    best = ", ".join(f"{row.batch}: {row.measured} ({row.predicted})" for row in report.best_k_by_batch or [])
    lines.append(f"best k per batch, measured (predicted with that batch left out): {best}")
    for error in report.holdout_errors or []:
        if error.cells and error.median_abs_error is not None and error.max_abs_error is not None:
            lines.append(
                f"{error.kind}: median error {error.median_abs_error:.1%}, worst {error.max_abs_error:.1%} "
                f"over {error.cells} cells"
            )
    config = report.engine_config
    if config:
        lines.append(f"the engine's config for the measured schedule ({config.title} {config.version}):")
        written = config.text or config.error or "(nothing to write: see the notes)"
        lines += [f"  {line}" for line in written.splitlines()]
        lines += [f"  note: {note}" for note in config.notes]
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The closed form: speedup, optimal k and the curve


def _best_k_text(best_k: int, speedup: float, k_search_max: int, limit_reached: bool) -> str:
    if best_k == 0:
        return f"best k: do not speculate (no k in 1..{k_search_max} beats plain decoding)"
    text = f"best k = {best_k} of 1..{k_search_max}: speedup {speedup:.4f}x"
    if limit_reached:
        text += (
            f"\nlimit reached: best k is k_max = {k_search_max}, the longest draft searched; a longer one may do better"
        )
    return text


def render_speedup(result: Speedup) -> str:
    return (
        f"p = {result.p:g}, k = {result.k}, c = {result.c:g}: {result.expected_tokens:.4f} tokens per cycle, "
        f"{result.cost_per_cycle:.4f} target passes, speedup {result.speedup:.4f}x"
    )


def render_optimal_k(result: OptimalK) -> str:
    line = _best_k_text(result.best_k, result.speedup, result.k_search_max, result.limit_reached)
    return f"p = {result.p:g}, c = {result.c:g}: {line}"


def render_curve(curve: Curve) -> str:
    lines = [
        f"p = {curve.p:g} (band {curve.p_low:g} to {curve.p_high:g}), k = {curve.k}, c = {curve.c:g}",
        f"tokens per cycle {curve.expected_tokens:.4f}, target passes {curve.cost_per_cycle:.4f}, "
        f"speedup {curve.speedup:.4f}x",
        _best_k_text(curve.best_k, curve.best_speedup, curve.k_search_max, curve.limit_reached),
        f"break-even acceptance {_number(curve.break_even_acceptance, 4, 'none')}, largest draft cost that breaks "
        f"even {_number(curve.max_draft_cost, 4, 'none')}, operations x{curve.operations_increase:.4f} at c_ops = "
        f"{curve.c_ops:g}",
        "",
        f"{'k':>3}  {'speedup':>8}  {'low':>8}  {'high':>8}  {'tokens':>8}  {'cost':>8}",
    ]
    for point in curve.points:
        lines.append(
            f"{point.k:>3}  {point.speedup:>8.4f}  {point.speedup_low:>8.4f}  {point.speedup_high:>8.4f}  "
            f"{point.expected_tokens:>8.4f}  {point.cost_per_cycle:>8.4f}"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# An engine's report calibrated (calibrate --from)


def _p_text(p: float, low: float | None, high: float | None) -> str:
    return (
        f"{p:.4f} [{low:.4f}, {high:.4f}] (95%)" if low is not None and high is not None else f"{p:.4f} (no interval)"
    )


def render_engine_calibration(report: EngineCalibrationOut) -> str:
    version = f" {report.engine_version}" if report.engine_version else ""
    lines = [f"{report.format_description} ({report.engine}{version})"]
    for item in report.classes if len(report.classes) > 1 else []:
        lines.append(f"  {report.label_name}={item.label}: {_p_text(item.p, item.p_low, item.p_high)}, k = {item.k}")
    lines.append(f"p = {_p_text(report.p, report.p_low, report.p_high)} at k = {report.k} ({report.k_source})")
    departure = report.calibration.departure
    if departure is not None and departure.p_value is not None:
        verdict = "consistent with" if departure.consistent_with_iid else "departs from"
        lines.append(f"per-position acceptance {verdict} i.i.d. (chi-square p-value {departure.p_value:.3g})")
    best = report.calibration
    lines.append(f"best k: {best.best_k} ({best.best_speedup:.2f}x) under {best.regime.label}")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines) + "\n"
