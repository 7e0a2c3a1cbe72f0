"""The rollout plan: its arithmetic (app.model.live.rollout_plan), and `specdec-lab rollout plan` on a pasted scrape
with two classes and on a real Prometheus (Debian's, on 127.0.0.1) scraping a stand-in vLLM exporter with two
classes, one that pays and one that does not: they come in rollout order, judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.model.cost import published
from app.model.live import rollout_plan
from app.service.regimes import SetupRequest, build_setup
from tests.test_prometheus_live import instant, prometheus, serving, wait_for

SETUP = build_setup(SetupRequest()).setup  # the default: an 8B target, a 1B draft on one H100
K = 4
RATE = 300.0  # drafts per second per class
CLASSES = {"chat": (0.85, 4), "code": (0.2, 16)}  # p and the running batch: one pays, one does not


def exposition(seconds: float, classes: dict[str, tuple[float, int]] = CLASSES) -> str:
    """vLLM's /metrics (vllm/v1/spec_decode/metrics.py: labels model_name and engine) after ``seconds`` of drafts
    at RATE per class, i.i.d. acceptance p at K, and the class's running batch."""
    families: dict[str, tuple[str, list[str]]] = {}

    def add(name: str, kind: str, labels: str, value: float) -> None:
        families.setdefault(name, (kind, []))[1].append(f"{name}{{{labels}}} {value!r}")

    for name, (p, batch) in classes.items():
        drafts = RATE * seconds
        reached = [drafts * p ** (i + 1) for i in range(K)]
        labels = f'model_name="{name}",engine="0"'
        add("vllm:num_requests_running", "gauge", labels, float(batch))
        add("vllm:spec_decode_num_drafts_total", "counter", labels, drafts)
        add("vllm:spec_decode_num_draft_tokens_total", "counter", labels, drafts * K)
        add("vllm:spec_decode_num_accepted_tokens_total", "counter", labels, sum(reached))
        for i in range(K):
            add("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter", f'{labels},position="{i}"', reached[i])
    lines: list[str] = []
    for name, (kind, samples) in families.items():
        lines += [f"# HELP {name} {name}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n"


def sglang_exposition(seconds: float, classes: dict[str, tuple[float, int]] = CLASSES) -> str:
    """SGLang 2026-05's /metrics (python/sglang/srt/observability/metrics_collector.py @ 016d8605: the counters
    sglang:spec_verify_calls_total and sglang:generation_tokens_total, the gauges sglang:spec_num_steps,
    sglang:spec_accept_length and sglang:num_running_reqs) after ``seconds`` of verifications at RATE per class,
    each giving the tokens an i.i.d. acceptance p at K gives on average; the class's running batch."""
    lines: list[str] = []
    kinds = {
        "sglang:num_running_reqs": "gauge",
        "sglang:spec_num_steps": "gauge",
        "sglang:spec_accept_length": "gauge",
        "sglang:spec_verify_calls_total": "counter",
        "sglang:generation_tokens_total": "counter",
    }
    for name, kind in kinds.items():
        lines += [f"# HELP {name} {name}", f"# TYPE {name} {kind}"]
        for label, (p, batch) in classes.items():
            verifications = RATE * seconds
            tokens = verifications * sum(p**i for i in range(K + 1))
            value = {
                "sglang:num_running_reqs": float(batch),
                "sglang:spec_num_steps": float(K),
                "sglang:spec_accept_length": tokens / verifications,
                "sglang:spec_verify_calls_total": verifications,
                "sglang:generation_tokens_total": tokens,
            }[name]
            lines.append(f'{name}{{model_name="{label}",tp_rank="0"}} {value!r}')
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Arithmetic


def test_batches_seen_leave_idle_out_and_count_what_does_not_fit_at_the_last_batch_that_does() -> None:
    batches = rollout_plan.Batches.of([0.0, 1.2, 4.0, 4.4, 3.6, 300.0, float("nan")])
    assert batches.counts == {1: 1, 4: 3, 300: 1} and batches.samples == 5
    assert batches.quantiles() == {"p50": 4, "p90": 300, "p99": 300}
    assert batches.weights(100) == [(1, 0.2), (4, 0.6), (100, 0.2)]


def test_the_gain_is_weighted_over_the_batches_and_widened_by_the_cost_model_error() -> None:
    batches = rollout_plan.Batches.of([1.0, 1.0, 8.0])
    best_k, best_speedup = [4] * 8, [2.0] * 7 + [1.5]
    gain = rollout_plan.weighted_gain(best_k, best_speedup, SETUP, batches, 0.7, 0.9, 0.1)
    assert gain is not None and gain.point == pytest.approx(2 / 3 * 2.0 + 1 / 3 * 1.5)
    assert gain.low < gain.at_low < gain.at_high < gain.high and gain.low <= gain.point * 0.9
    off = rollout_plan.weighted_gain([0] * 8, [1.0] * 8, SETUP, batches, 0.7, 0.9, 0.1)
    assert off is not None and off.low == off.high == off.point == 1.0  # plain decoding: no model error
    assert rollout_plan.weighted_gain(best_k, best_speedup, SETUP, rollout_plan.Batches.of([]), 0.7, 0.9, 0.1) is None


def test_the_verdicts_and_the_rollout_order() -> None:
    sure = rollout_plan.Gain(2.0, 1.8, 2.2, 1.6, 2.5, 0.13)
    surer = rollout_plan.Gain(3.0, 2.8, 3.2, 2.4, 3.6, 0.13)
    close = rollout_plan.Gain(1.05, 0.98, 1.1, 0.9, 1.25, 0.13)
    losing = rollout_plan.Gain(0.8, 0.75, 0.85, 0.65, 0.96, 0.13)
    assert rollout_plan.judge(sure, 1000, True).verdict == rollout_plan.TURN_ON
    assert rollout_plan.judge(close, 1000, True).verdict == rollout_plan.MEASURE_FIRST
    assert rollout_plan.judge(losing, 1000, True).verdict == rollout_plan.LEAVE_OFF
    few = rollout_plan.judge(sure, rollout_plan.MIN_DRAFTS - 1, True)
    assert few.verdict == rollout_plan.MEASURE_FIRST and f"at least {rollout_plan.MIN_DRAFTS}" in few.reason
    assert rollout_plan.judge(None, 0, False).verdict == rollout_plan.MEASURE_FIRST
    judged = {"sure": sure, "surer": surer, "close": close, "losing": losing}
    order = sorted(
        judged,
        key=lambda name: rollout_plan.order_key(rollout_plan.judge(judged[name], 1000, True).verdict, judged[name]),
    )
    assert order == ["surer", "sure", "close", "losing"]


# ---------------------------------------------------------------------------
# The command


def _check_two_classes(report: dict[str, object], profile_length: int = K) -> None:
    classes = report["classes"]
    assert isinstance(classes, list) and [row["class"] for row in classes] == ["chat", "code"], classes
    chat, code = classes
    why = {name: chat.get(name) for name in ("verdict", "reason", "gain", "drafts", "acceptance", "intervals")}
    assert chat["verdict"] == rollout_plan.TURN_ON and chat["gain"]["low"] > 1.0, why
    assert chat["acceptance"]["p"] == pytest.approx(0.85, abs=0.01) and chat["acceptance"]["low"] < 0.85
    assert len(chat["acceptance"]["profile"]) == profile_length and chat["config"]["flags"]  # turned on, configured
    assert chat["batches"]["quantiles"]["p50"] == 4
    assert code["verdict"] == rollout_plan.LEAVE_OFF and code["config"] is None, code
    assert code["batches"]["quantiles"]["p50"] == 16
    assert "each source predicted by terms fitted on the others" in str(report["cost_model"])
    # the error of the setup's own class (the default: a separate draft model on an H100), as /batch states it
    assert "of this class (draft-model drafts, any engine, NVIDIA Hopper, short context)" in str(report["cost_model"])
    # the class's median (150 points, about 12%), not every point's (541 points, about 11%)
    assert chat["gain"]["model_error"] != pytest.approx(published.shipped_accuracy().median_error)
    assert 0.05 < chat["gain"]["model_error"] < 0.5


def test_a_pasted_scrape_with_two_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metrics.txt"
    path.write_text(exposition(10.0))
    assert main(["rollout", "plan", "--from", str(path), "--format", "json"]) == 0
    _check_two_classes(json.loads(capsys.readouterr().out))
    assert main(["rollout", "plan", "--from", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.index("model_name=chat: turn on") < out.index("model_name=code: leave off")
    assert "config: --speculative-config" in out
    path.write_text("not a scrape {")
    assert main(["rollout", "plan", "--from", str(path)]) == 2
    assert "not Prometheus text" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_prometheus_with_two_classes(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    """vLLM counts drafts and positions (4 queries: drafts, positions, draft tokens, the running batch); SGLang
    verifications (5: verifications, generated tokens, the lowest and highest k, the running batch)."""
    made, judged, queries = {
        "vllm": (exposition, _check_two_classes, 4),
        "sglang": (sglang_exposition, _check_two_sglang_classes, 5),
    }[engine]
    with serving(made) as target, prometheus({engine: [target]}, []) as url:
        # seven scrapes held by Prometheus, not seven seconds: a busy machine starts it late or skips a scrape, so
        # the 5 s window is read from scrapes, not from a guess at the clock
        wait_for(lambda: bool(instant(url, "count_over_time(up[10s]) >= 7")), 60, "seven scrapes of the stand-in")
        code = main(["rollout", "plan", "--prometheus", url, "--window", "5s", "--interval", "1s", "--format", "json"])
        captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    judged(report)
    assert report["engine"] == engine and len(report["queries"]) == queries
    assert report["classes"][0]["drafts"] >= rollout_plan.MIN_DRAFTS


def _check_two_sglang_classes(report: dict[str, object]) -> None:
    """SGLang counts no positions: p is the i.i.d. p that gives the tokens per verification at the k its gauge
    shows, with an interval from the verifications counted, and the same judgement as for an engine that counts
    positions."""
    _check_two_classes(report, profile_length=0)  # no profile
    chat, code = report["classes"]
    assert chat["acceptance"]["p"] == pytest.approx(0.85, abs=0.005) and chat["acceptance"]["k"] == K
    assert chat["acceptance"]["low"] < 0.85 < chat["acceptance"]["high"]
    assert code["acceptance"]["p"] == pytest.approx(CLASSES["code"][0], abs=0.005)


def test_a_pasted_sglang_scrape_with_two_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "metrics.txt"
    path.write_text(sglang_exposition(10.0))
    assert main(["rollout", "plan", "--from", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # the newest version whose counters the scrape holds: 2026-08 exports 2026-05's series unchanged
    assert report["engine"] == "sglang" and report["engine_version"] == "2026-08"
    _check_two_sglang_classes(report)
    # a gauge that shows two k in one class: its tokens per verification mixes them, so it is not read
    mixed = sglang_exposition(10.0) + 'sglang:spec_num_steps{model_name="chat",tp_rank="1"} 2.0\n'
    path.write_text(mixed)
    assert main(["rollout", "plan", "--from", str(path), "--format", "json"]) == 0
    chat = next(row for row in json.loads(capsys.readouterr().out)["classes"] if row["class"] == "chat")
    assert chat["acceptance"] is None and chat["verdict"] == rollout_plan.MEASURE_FIRST, chat
    assert "the k running changed over the window (2, 4)" in chat["reason"], chat
