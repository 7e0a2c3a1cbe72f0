"""vLLM: everything specdec-lab knows of it.

Versions are named by the month of the change that set their format (a release from then on uses it):

- ``2025-10``: the V1 engine's spec-decode counters; ``speculative_config`` with ``num_speculative_tokens``,
  ``method``, ``model`` and ``speculative_token_tree``; no per-batch draft length; unknown keys ignored.
- ``2026-06``: unknown keys refused (``@config`` became a pydantic dataclass with extra="forbid", PR #31541);
  tree attention and ``speculative_token_tree`` removed (PR #42121); the per-batch schedule
  ``num_speculative_tokens_per_batch_size`` (PR #32374), checked when the scheduler starts
  (``validate_and_normalize_dynamic_sd_schedule``) and looked up per step by the number of scheduled requests.
- ``2026-08``: per-request acceptance in the response, ``metrics.speculative_decoding``, with
  ``--per-request-spec-decode-metrics summary|detailed`` (PR #48915, in 0.29).

The config reader (config.py) follows vLLM's own reading of each key; each rule names the file it comes from.
"""

from __future__ import annotations

from app.model.engines.base import EngineAdapter
from app.model.engines.vllm import config, reports, versions

ADAPTER = EngineAdapter.of(versions, config, reports)
