"""SGLang: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2026-03``: launch flags ``--speculative-algorithm``, ``--speculative-num-steps``,
  ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``; one draft length for every batch;
  gauges ``sglang:spec_accept_length`` and ``sglang:spec_accept_rate`` (rate = length / draft tokens).
- ``2026-05``: the adaptive schedule per batch-size tier, ``--speculative-adaptive`` with
  ``--speculative-adaptive-config FILE`` (PR #24055: digit keys are the lowest batch of a tier, each with
  ``candidate_steps``, 0 = no drafting); the rate counts drafts only, (length - 1) / (draft tokens - 1)
  (PR #23530); the counter ``sglang:spec_verify_calls_total`` (PR #25689) and the gauges
  ``sglang:spec_num_steps`` and ``sglang:spec_num_draft_tokens`` (PR #25940).

The adaptive schedule runs only for EAGLE, EAGLE3 and NEXTN with topk 1; for a separate draft model
(STANDALONE) SGLang falls back to one draft length, so that is what is written for it.

The package holds one module per concept: ``versions`` (and their capabilities), ``methods`` (the
drafters), ``config_writer`` and ``config_reader`` (its config as the engine reads it), ``reports`` (report
readers), ``counters`` (the series rules and the watch are built from); this module exposes what
:class:`app.model.engines.base.EngineAdapter` asks for.
"""

from __future__ import annotations

from app.model.engines.sglang.config_reader import graph_batches, read_config
from app.model.engines.sglang.config_writer import shell_line, write_config
from app.model.engines.sglang.counters import HOW_TO_APPLY, RULES_METRICS
from app.model.engines.sglang.methods import ALGORITHMS, METHOD_ALIAS, METHODS, PLACEHOLDER_MODEL, choose_method
from app.model.engines.sglang.reports import REPORTS, k_from_rate
from app.model.engines.sglang.versions import ALIASES, NAME, TITLE, VERSIONS

__all__ = [
    "ALGORITHMS",
    "ALIASES",
    "HOW_TO_APPLY",
    "METHODS",
    "METHOD_ALIAS",
    "NAME",
    "PLACEHOLDER_MODEL",
    "REPORTS",
    "RULES_METRICS",
    "TITLE",
    "VERSIONS",
    "choose_method",
    "graph_batches",
    "k_from_rate",
    "read_config",
    "shell_line",
    "write_config",
]
