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

The config reader below follows vLLM's own reading of each key; each rule names the file it comes from.
"""

from __future__ import annotations

from app.model.engines.vllm.config import METHODS as METHODS
from app.model.engines.vllm.config import PLACEHOLDER_MODEL as PLACEHOLDER_MODEL
from app.model.engines.vllm.config import TREE as TREE
from app.model.engines.vllm.config import choose_method as choose_method
from app.model.engines.vllm.config import method_name as method_name
from app.model.engines.vllm.config import read_config as read_config
from app.model.engines.vllm.config import write_config as write_config
from app.model.engines.vllm.reports import DECODE_TIME as DECODE_TIME
from app.model.engines.vllm.reports import HOW_TO_APPLY as HOW_TO_APPLY
from app.model.engines.vllm.reports import LIVE as LIVE
from app.model.engines.vllm.reports import PROMETHEUS as PROMETHEUS
from app.model.engines.vllm.reports import REPORTS as REPORTS
from app.model.engines.vllm.reports import RULES_METRICS as RULES_METRICS
from app.model.engines.vllm.reports import STEP_TIMES as STEP_TIMES
from app.model.engines.vllm.reports import read_scrape as read_scrape
from app.model.engines.vllm.reports import scrape_since as scrape_since
from app.model.engines.vllm.versions import ALIASES as ALIASES
from app.model.engines.vllm.versions import NAME as NAME
from app.model.engines.vllm.versions import TITLE as TITLE
from app.model.engines.vllm.versions import VERSIONS as VERSIONS
from app.model.engines.vllm.versions import WATCHED as WATCHED
