"""A vLLM /metrics scrape back to p, read by vLLM's adapter (``app.model.engines.vllm.reports.read_scrape``) and
calibrated by ``app.service.engines.calibrate_scrape``, the reading behind POST /api/v1/calibrate/metrics and
specdec-lab calibrate --metrics; clear errors for expositions that cannot be used.

Moved from tests/test_calibration.py with the reader (app.model.counters.calibration.parse_exposition before): the same
inputs, the same expected numbers and messages."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.arithmetic import closed_form
from app.model.counters import calibration
from app.model.counters.calibration import CalibrationError, ErrorKind
from app.model.engines.vllm.reports import read_scrape
from app.service.engines import calibrate_scrape


def v1_text(
    drafts: float,
    draft_tokens: float,
    accepted: float,
    positions: list[float] | None = None,
    model_name: str = "m",
) -> str:
    """A hand-made V1 exposition with the given totals, one engine."""
    labels = f'engine="0",model_name="{model_name}"'
    lines = [
        "# TYPE vllm:spec_decode_num_drafts_total counter",
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}",
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}",
    ]
    for position, value in enumerate(positions or []):
        lines.append(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{position}"}} {value}')
    return "\n".join(lines) + "\n"


def expected_positions(p: float, k: int, drafts: int) -> list[float]:
    return [round(drafts * p ** (i + 1)) for i in range(k)]


# ---------------------------------------------------------------------------
# (c): expositions


@pytest.mark.parametrize("p", [0.0, 0.3, 0.62, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_synthetic_exposition_recovers_p(p: float, k: int) -> None:
    text = calibration.example_exposition(p, k, drafts=1_000_000, engines=3)
    result = calibrate_scrape(text, c=0.1, k_max=16)
    assert result.k == k
    assert result.acceptance == pytest.approx(p, abs=2e-6)
    assert len(result.positions) == k
    assert result.counters is not None and result.counters.series == 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_exposition_recovers_p_and_passes_the_iid_test(seed: int) -> None:
    p, k, drafts = 0.73, 6, 200_000
    text = calibration.example_exposition(p, k, drafts=drafts, seed=seed)
    result = calibrate_scrape(text, c=0.1, k_max=16)
    standard_error = math.sqrt(p * (1 - p) / (drafts * closed_form.expected_tokens(p, k - 1)))
    assert abs(result.acceptance - p) < 5 * standard_error
    assert result.departure is not None
    assert result.departure.degrees_of_freedom == k - 1
    assert result.departure.consistent_with_iid is True
    assert result.departure.max_conditional_deviation < 0.02


def test_positions_report_conditional_acceptance() -> None:
    text = calibration.example_exposition(0.8, 4, drafts=100_000)
    result = calibrate_scrape(text, c=0.1, k_max=8)
    first, second = result.positions[:2]
    assert (first.position, second.position) == (1, 2)
    assert first.rate == pytest.approx(0.8)
    assert second.rate == pytest.approx(0.64)
    assert second.conditional == pytest.approx(0.8)
    assert second.iid_rate == pytest.approx(result.acceptance**2)


def test_non_iid_acceptance_is_flagged() -> None:
    # Acceptance that rises once the first token is in (bursty): conditional 0.5 then 0.9.
    drafts, k = 100_000, 4
    at_least = [drafts * 0.5 * 0.9**i for i in range(k)]
    text = v1_text(drafts, drafts * k, sum(at_least), at_least)
    result = calibrate_scrape(text, c=0.1, k_max=8)
    assert result.departure is not None
    assert result.departure.consistent_with_iid is False
    assert result.departure.p_value is not None and result.departure.p_value < 1e-6
    assert result.departure.max_conditional_deviation > 0.1
    assert result.acceptance_from_mean_length != pytest.approx(result.acceptance, abs=1e-3)


def test_without_positions_p_comes_from_the_mean_length() -> None:
    p, k, drafts = 0.7, 5, 10_000
    accepted = drafts * (closed_form.expected_tokens(p, k) - 1)
    result = calibrate_scrape(v1_text(drafts, drafts * k, accepted), c=0.1, k_max=8)
    assert result.k == k
    assert result.acceptance == pytest.approx(p, abs=1e-9)
    assert result.departure is None
    assert any("cannot be measured" in note for note in result.notes)


def test_baseline_is_subtracted() -> None:
    before = v1_text(1000, 4000, 400, [300, 70, 20, 10])
    drafts = 50_000
    positions = expected_positions(0.9, 4, drafts)
    totals = [a + b for a, b in zip([300, 70, 20, 10], positions, strict=True)]
    after = v1_text(1000 + drafts, 4000 + 4 * drafts, 400 + sum(positions), totals)
    result = calibrate_scrape(after, c=0.1, k_max=8, baseline=before)
    assert result.acceptance == pytest.approx(0.9, abs=1e-4)


def test_v0_exposition() -> None:
    text = calibration.example_exposition(0.7, 4, drafts=500_000, schema="v0")
    result = calibrate_scrape(text, c=0.1, k_max=8)
    assert result.k == 4
    assert result.acceptance == pytest.approx(0.7, abs=1e-5)
    assert result.acceptance_from_draft_rate == pytest.approx(0.7, abs=1e-5)


def test_given_k_must_match_positions() -> None:
    text = calibration.example_exposition(0.7, 4)
    assert calibrate_scrape(text, c=0.1, k_max=8, k=4).k == 4
    with pytest.raises(CalibrationError) as error:
        calibrate_scrape(text, c=0.1, k_max=8, k=5)
    assert error.value.kind is ErrorKind.INCONSISTENT


def test_model_name_selects_one_model() -> None:
    text = calibration.example_exposition(0.6, 3, model_name="a") + calibration.example_exposition(
        0.9, 3, model_name="b"
    ).replace("vllm:num_requests_running", "vllm:num_requests_running_b")
    with pytest.raises(CalibrationError) as error:
        calibrate_scrape(text, c=0.1, k_max=8)
    assert error.value.kind is ErrorKind.AMBIGUOUS_MODEL
    assert calibrate_scrape(text, c=0.1, k_max=8, model_name="b").acceptance == pytest.approx(0.9, abs=1e-4)


def test_untyped_exposition_without_help_lines_parses() -> None:
    text = "\n".join(line for line in calibration.example_exposition(0.5, 2).splitlines() if not line.startswith("#"))
    assert calibrate_scrape(text, c=0.1, k_max=8).acceptance == pytest.approx(0.5, abs=1e-4)


# ---------------------------------------------------------------------------
# Bad expositions: each its own clear message

BAD_EXPOSITIONS: dict[str, tuple[str, ErrorKind, str]] = {
    "empty": ("", ErrorKind.EMPTY, "empty"),
    "blank": ("  \n\t\n", ErrorKind.EMPTY, "empty"),
    "comments only": ("# HELP x y\n# TYPE x counter\n", ErrorKind.NO_SAMPLES, "no samples"),
    "prose": ("hello world, these are not metrics", ErrorKind.UNPARSEABLE, "not a Prometheus text exposition"),
    "html": ("<html><body>502 Bad Gateway</body></html>", ErrorKind.UNPARSEABLE, "not a Prometheus text exposition"),
    "json": ('{"drafts": 1}', ErrorKind.UNPARSEABLE, "not a Prometheus text exposition"),
    "unrelated": (
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\nvllm:num_requests_running 2\n",
        ErrorKind.UNRELATED,
        "no vLLM spec-decode counters",
    ),
    "missing drafts": (
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 10\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 5\n',
        ErrorKind.MISSING_COUNTER,
        "missing counter vllm:spec_decode_num_drafts_total",
    ),
    "missing accepted": (
        'vllm:spec_decode_num_drafts_total{engine="0"} 10\nvllm:spec_decode_num_draft_tokens_total{engine="0"} 50\n',
        ErrorKind.MISSING_COUNTER,
        "missing counter vllm:spec_decode_num_accepted_tokens_total",
    ),
    "negative": (v1_text(10, 50, -3), ErrorKind.NEGATIVE, "negative"),
    "implausible": (v1_text(1e16, 5e16, 1e16), ErrorKind.IMPLAUSIBLE, "no real counter"),
    "not a number": (v1_text(10, 50, float("nan")), ErrorKind.NON_FINITE, "must be finite"),
    "zero drafts": (v1_text(0, 0, 0), ErrorKind.ZERO_DRAFTS, "has not speculated yet"),
    "accepted beyond drafted": (v1_text(10, 50, 80), ErrorKind.INCONSISTENT, "exceed drafted tokens"),
    "positions rising": (v1_text(10, 30, 12, [4, 5, 3]), ErrorKind.INCONSISTENT, "exceeds position 0"),
    "positions beyond drafts": (v1_text(10, 30, 12, [11, 1, 0]), ErrorKind.INCONSISTENT, "exceeds drafts"),
    "positions do not sum": (v1_text(10, 30, 12, [5, 3, 1]), ErrorKind.INCONSISTENT, "sum to 9"),
    "too many tokens per draft": (v1_text(10, 60, 12, [5, 4, 3]), ErrorKind.INCONSISTENT, "more than k = 3"),
    "fractional draft length": (v1_text(10, 35, 12), ErrorKind.UNKNOWN_K, "give k"),
    "position label": (
        v1_text(10, 20, 5).replace(
            "\n", '\nvllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="x"} 1\n', 1
        ),
        ErrorKind.BAD_LABEL,
        "position label",
    ),
    "position gap": (
        v1_text(10, 30, 6, [4, 2]).replace('position="1"', 'position="2"'),
        ErrorKind.BAD_LABEL,
        "without gaps",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_EXPOSITIONS))
def test_bad_exposition_gets_its_own_message(case: str) -> None:
    text, kind, fragment = BAD_EXPOSITIONS[case]
    with pytest.raises(CalibrationError) as error:
        calibrate_scrape(text, c=0.1, k_max=8)
    assert error.value.kind is kind, error.value.message
    assert fragment in error.value.message


def test_bad_exposition_messages_are_distinct_by_kind() -> None:
    messages: dict[ErrorKind, set[str]] = {}
    for text, kind, _ in BAD_EXPOSITIONS.values():
        with pytest.raises(CalibrationError) as error:
            calibrate_scrape(text, c=0.1, k_max=8)
        messages.setdefault(kind, set()).add(error.value.message)
    every = [message for group in messages.values() for message in group]
    assert len(set(every)) == len(every)
    assert len(messages) >= 10


def test_too_large_exposition() -> None:
    text = "# " + "x" * calibration.MAX_EXPOSITION_BYTES
    with pytest.raises(CalibrationError) as error:
        read_scrape(text)
    assert error.value.kind is ErrorKind.TOO_LARGE


def test_counter_reset_between_scrapes() -> None:
    with pytest.raises(CalibrationError) as error:
        calibrate_scrape(v1_text(10, 40, 5), c=0.1, k_max=8, baseline=v1_text(100, 400, 50))
    assert error.value.kind is ErrorKind.COUNTER_RESET
    assert "restarted" in error.value.message


def test_v0_without_k_or_efficiency() -> None:
    text = (
        "vllm:spec_decode_num_draft_tokens_total 400\n"
        "vllm:spec_decode_num_accepted_tokens_total 280\n"
        "vllm:spec_decode_num_emitted_tokens_total 300\n"
    )
    with pytest.raises(CalibrationError) as error:
        calibrate_scrape(text, c=0.1, k_max=8)
    assert error.value.kind is ErrorKind.UNKNOWN_K
    assert calibrate_scrape(text, c=0.1, k_max=8, k=4).k == 4


@settings(max_examples=60)
@given(st.text(max_size=300))
def test_arbitrary_text_never_escapes_as_another_error(text: str) -> None:
    try:
        calibrate_scrape(text, c=0.1, k_max=8)
    except CalibrationError as error:
        assert error.message
