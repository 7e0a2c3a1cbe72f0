"""The batch report's config for the schedule a sweep measured: written for the measured server's engine and
version, and read back by each engine's own reading (tests/engines/engine_reading.py, its source's rules)."""

from __future__ import annotations

import pytest

from app.model.engines.base import Exported
from app.model.engines.llamacpp import reports as llamacpp_reports
from app.model.engines.sglang import reports as sglang_reports
from app.model.engines.trtllm import reports as trtllm_reports
from app.model.engines.vllm import reports as vllm_reports
from app.model.live.measure_batches import BatchAnalysis, analyze_batches, measured_schedule
from app.service.clients.measure import Server
from app.service.measure_jobs import measured_config
from app.service.schemas.measure import MeasuredConfig
from tests.engines import engine_reading
from tests.test_measure_batches import BATCHES, _cell

FORMS = {
    "llamacpp": llamacpp_reports.LIVE,
    "vllm": vllm_reports.LIVE,
    "sglang": sglang_reports.LIVE,
    "trtllm": trtllm_reports.LIVE,
}


def _falling() -> BatchAnalysis:
    """k = 4 pays most at batches 1 and 2, k = 2 from 4 to 64 (the step cost of tests/test_measure_batches.py)."""
    return analyze_batches([[_cell(k, batch) for k in (0, 2, 4) for batch in BATCHES]], draft_model=False)


def _stopping() -> BatchAnalysis:
    """k = 4 alone: it pays up to batch 32 and not at 64."""
    return analyze_batches([[_cell(k, batch) for k in (0, 4) for batch in BATCHES]], draft_model=False)


def _servers(engine: str, version: str | None = None, kind: str = "speculative") -> list[Server]:
    form = FORMS[engine]
    return [
        Server("http://127.0.0.1:1", False, "plain", 0, live_format=form, version=version),
        Server("http://127.0.0.1:2", True, kind, 4, live_format=form, version=version),
    ]


def _exported(config: MeasuredConfig) -> Exported:
    return Exported(config.config, config.flags, config.text or "", files=config.files)


def test_the_measured_schedule_takes_each_batch_from_the_next_measured_batch_up() -> None:
    best_k, steps = measured_schedule(_stopping())
    assert len(best_k) == 64
    assert best_k[:32] == [4] * 32 and best_k[32:] == [0] * 32  # 33-63 take batch 64's: speculation off
    assert [(step.batch_from, step.batch_to, step.k) for step in steps] == [(1, 32, 4), (33, 64, 0)]
    best_k, steps = measured_schedule(_falling())
    assert best_k[:2] == [4, 4] and set(best_k[2:]) == {2}


@pytest.mark.parametrize(("engine", "method"), [("vllm", "ngram"), ("sglang", "NGRAM"), ("trtllm", "NGram")])
def test_each_engine_reads_the_measured_config_back_as_the_schedule_it_runs(engine: str, method: str) -> None:
    analysis = _falling()
    best_k, _steps = measured_schedule(analysis)
    config = measured_config(_servers(engine), analysis, method)
    assert config is not None and config.error is None, config
    assert config.engine == engine and config.method == method
    read = engine_reading.READERS[engine](_exported(config), len(best_k), (config.version,))
    assert list(read) == config.runs  # the adapter's read-back is the engine's own
    differs = [batch for batch, (ran, wanted) in enumerate(zip(read, best_k, strict=True), start=1) if ran != wanted]
    assert differs == config.differs_at
    if engine == "vllm":  # vLLM takes a k per batch size: the measured schedule as it is
        assert list(read) == best_k
        assert "--max-num-seqs 64: the largest batch measured" in config.notes


def test_a_llama_server_config_runs_its_drafter_and_keeps_the_server_where_speculation_paid() -> None:
    config = measured_config(_servers("llamacpp", "b11312", "ngram-simple"), _stopping())
    assert config is not None and config.version == "2026-10"  # b11312, named by its build
    assert config.flags == ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-m", "4", "--parallel", "32"]
    assert config.batch == 32 and config.runs == [4] * 64 and config.differs_at == list(range(33, 65))


def test_a_version_the_product_does_not_know_is_said_and_the_newest_written() -> None:
    config = measured_config(_servers("vllm", "0.99.1"), _falling(), "ngram")
    assert config is not None and config.version == "2026-08"
    assert any("version 0.99.1 is not one the product knows" in note for note in config.notes)
    known = measured_config(_servers("vllm", "0.32.0"), _falling(), "ngram")
    assert known is not None and known.version == "2026-08" and not any("0.32" in n for n in known.notes)


def test_a_server_that_names_several_drafters_or_none_is_written_for_one_and_says_so() -> None:
    several = measured_config(_servers("llamacpp", "b11312", "ngram-simple,ngram-mod"), _stopping())
    assert several is not None and several.method == "ngram-simple"
    assert several.flags[:2] == ["--spec-type", "ngram-simple"]
    assert any("drafts with ngram-simple, ngram-mod: written for ngram-simple" in n for n in several.notes)
    unnamed = measured_config(_servers("vllm", "0.32.0"), _falling())
    assert unnamed is not None and unnamed.method is None
    assert any("does not name its drafter" in note and "Drafter on /decide" in note for note in unnamed.notes)


def test_a_drafter_the_engine_does_not_take_is_the_entrys_error() -> None:
    config = measured_config(_servers("vllm"), _falling(), "ngram-simple")
    assert config is not None and "vLLM method must be one of" in config.error
    assert measured_config(_servers("vllm")[:1], _falling()) is None  # no speculative server: nothing to write


@pytest.mark.parametrize(("engine", "said"), [("vllm", "run vLLM without"), ("llamacpp", "without speculation")])
def test_where_speculation_paid_at_no_batch_no_config_is_written_and_the_note_says_so(engine: str, said: str) -> None:
    losing = analyze_batches(
        [[cell for batch in BATCHES for cell in (_cell(0, batch), _cell(4, batch, slower=5.0))]], draft_model=False
    )
    assert set(measured_schedule(losing)[0]) == {0}
    config = measured_config(_servers(engine, kind="ngram-simple"), losing, "ngram" if engine == "vllm" else None)
    assert config is not None and config.config is None and config.flags == []
    assert any(said in note for note in config.notes), config.notes
