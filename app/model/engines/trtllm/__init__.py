"""TensorRT-LLM: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2025-10``: ``draft_len_schedule`` as added by PR #8194: a key is the batch from which its draft length
  holds; the schedule must hold batch 1 with ``max_draft_len``; static trees as ``eagle_choices``;
  reports as iteration statistics JSON only.
- ``2026-03``: PR #10860: on the one-model path (Draft_Target, Eagle3, MTP, PARD, DFlash, SA) a key is the
  *inclusive upper* batch of its range and batches above the last key get 0; the smallest key's value must be
  ``max_draft_len``; ``max_concurrency`` and ``draft_len_schedule`` are mutually exclusive.  NGram keeps the
  old "from this batch on" lookup (the Drafter path).  Prometheus counters ``trtllm_spec_decode_*``
  (PR #12545) and per token position (PR #12636).
- ``2026-09``: PR #18210 removed ``eagle_choices`` (no static tree); PR #18721 the two-model path.

Every config class is a StrictBaseModel: unknown keys are refused.

The package holds one module per concept: ``versions`` (and their capabilities), ``methods`` (the
drafters), ``config_writer`` and ``config_reader`` (its config as the engine reads it), ``reports`` (report
readers), ``counters`` (the series rules and the watch are built from); this module exposes what
:class:`app.model.engines.base.EngineAdapter` asks for.
"""

from __future__ import annotations

from app.model.engines.trtllm.config_reader import read_config
from app.model.engines.trtllm.config_writer import write_config
from app.model.engines.trtllm.counters import HOW_TO_APPLY, RULES_METRICS
from app.model.engines.trtllm.methods import DECODING_TYPES, METHOD_ALIAS, METHODS, PLACEHOLDER_MODEL, choose_method
from app.model.engines.trtllm.reports import REPORTS
from app.model.engines.trtllm.versions import ALIASES, NAME, TITLE, VERSIONS

__all__ = [
    "ALIASES",
    "DECODING_TYPES",
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
    "read_config",
    "write_config",
]
