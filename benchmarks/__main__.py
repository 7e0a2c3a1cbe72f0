"""Run every benchmarks/bench_*.py and print one table of the RATIO lines they report.

Each benchmark runs in its own interpreter (`main()` of the module), so one cannot warm caches, leak
threads or servers, or crash the others.  Its output is shown as it comes; lines of the form

    RATIO <name> <project> <bound> <ratio>

are collected: `project` is what this project measured, `bound` what it is held against in the same run
(a bare numpy call, a bare endpoint, a time budget...), `ratio` their quotient.

Usage: python -m benchmarks [NAME ...] [--output PATH | --output -]
NAME filters by module (e.g. `api` or `bench_api`); when all run, the table is also written to
benchmarks/results.md (or --output PATH; --output - for none).  The exit status is non-zero when a benchmark failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUTPUT = HERE / "results.md"
TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class Ratio:
    module: str
    name: str
    project: str
    bound: str
    ratio: str


@dataclass(frozen=True)
class Outcome:
    module: str
    seconds: float
    ratios: list[Ratio]
    error: str | None
    summary: str | None = None  # the benchmark's last line when it reads "<name>: ...", repeated at the end


def discover(filters: list[str]) -> list[str]:
    modules = sorted(path.stem for path in HERE.glob("bench_*.py"))
    if not filters:
        return modules
    wanted = {name if name.startswith("bench_") else f"bench_{name}" for name in filters}
    unknown = wanted - set(modules)
    if unknown:
        raise SystemExit(f"no such benchmark: {', '.join(sorted(unknown))} (have: {', '.join(modules)})")
    return [module for module in modules if module in wanted]


def parse_ratio(module: str, line: str) -> Ratio | None:
    parts = line.split()
    if len(parts) != 5 or parts[0] != "RATIO":
        return None
    return Ratio(module, *parts[1:])


def run_module(module: str) -> Outcome:
    code = f"import benchmarks.{module} as bench; bench.main()"
    started = time.perf_counter()
    print(f"\n== {module}", flush=True)
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    ratios = []
    tail: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        print(f"   {line}", end="", flush=True)
        tail = [*tail[-19:], line.rstrip()]
        ratio = parse_ratio(module, line)
        if ratio is not None:
            ratios.append(ratio)
    try:
        status = process.wait(timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        status = -9
    seconds = time.perf_counter() - started
    error = None
    if status != 0:
        error = f"exit status {status}: {tail[-1] if tail else ''}"
    elif not ratios:
        error = "printed no RATIO line"
    last = next((line for line in reversed(tail) if line), "")
    summary = last if last.startswith(f"{module.removeprefix('bench_')}: ") else None
    return Outcome(module, seconds, ratios, error, summary)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def table(outcomes: list[Outcome]) -> list[str]:
    rows = [("name", "project", "bound", "ratio")]
    for outcome in outcomes:
        rows.extend((ratio.name, ratio.project, ratio.bound, ratio.ratio) for ratio in outcome.ratios)
        if outcome.error:
            rows.append((outcome.module, "FAILED", outcome.error[:60], "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append(
                "|"
                + "|".join("-" * (width + 1) + (":" if column else "-") for column, width in enumerate(widths))
                + "|"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Run the benchmarks, print one table.")
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all), e.g. api worst_case")
    parser.add_argument(
        "--output", help="markdown file for the table (default: benchmarks/results.md when all run); '-' for none"
    )
    arguments = parser.parse_args(argv)
    modules = discover(arguments.names)
    output = arguments.output or ("-" if arguments.names else str(DEFAULT_OUTPUT))
    started = dt.datetime.now(dt.UTC)
    outcomes = [run_module(module) for module in modules]
    lines = table(outcomes)
    header = f"{started:%Y-%m-%d %H:%M} UTC on {machine()}"
    print(f"\n{header}\n")
    print("\n".join(lines))
    timings = ", ".join(f"{outcome.module} {outcome.seconds:.0f} s" for outcome in outcomes)
    print(f"\nran {len(outcomes)} benchmarks: {timings}")
    for outcome in outcomes:  # one line a script can read, last
        if outcome.summary:
            print(outcome.summary)
    if output != "-":
        text = "\n".join(
            [
                "# Benchmark results",
                "",
                f"Measured {header} by `make bench` (`python -m benchmarks`).",
                "`project` is this project's figure, `bound` what it is held against in the same run, `ratio` their",
                "quotient; units and bounds are stated in each benchmark's docstring and output.",
                "",
                *lines,
                "",
            ]
        )
        Path(output).write_text(text)
    failed = [outcome.module for outcome in outcomes if outcome.error]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
