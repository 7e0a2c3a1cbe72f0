"""TensorRT-LLM: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2025-10``: ``draft_len_schedule`` as added by PR #8194: a key is the batch from which its draft length
  holds; the schedule must hold batch 1 with ``max_draft_len``.  Only a Drafter runs it (NGram, Draft_Target,
  and the two-model Eagle3 / MTP-Eagle): the one-model path (Eagle3 and MTP by default, PARD, ...) validates
  the schedule and runs ``max_draft_len`` at every batch, so the writer gives it one ``max_draft_len``.  Static
  trees as ``eagle_choices``; reports as iteration statistics JSON only.
- ``2026-03``: PR #10860: the one-model path runs the schedule; there (Draft_Target, Eagle3, MTP, PARD,
  DFlash, SA) a key is the *inclusive upper* batch of its range and batches above the last key get 0; the
  smallest key's value must be
  ``max_draft_len``; ``max_concurrency`` and ``draft_len_schedule`` are mutually exclusive.  NGram keeps the
  old "from this batch on" lookup (the Drafter path), and so does the two-model path (``eagle3_one_model`` or
  ``mtp_eagle_one_model`` false: a ModelDrafter with the config's schedule).  Prometheus counters
  ``trtllm_spec_decode_*`` (PR #12545) and per token position (PR #12636).
- ``2026-09``: PR #18210 removed ``eagle_choices`` (no static tree); PR #18721 the two-model path
  (``eagle3_one_model`` / ``mtp_eagle_one_model`` false are ignored and set back to true).

Every config class is a StrictBaseModel: unknown keys are refused.
"""

from __future__ import annotations

from app.model.engines.trtllm.config import DECODING_TYPES as DECODING_TYPES
from app.model.engines.trtllm.config import METHOD_ALIAS as METHOD_ALIAS
from app.model.engines.trtllm.config import METHODS as METHODS
from app.model.engines.trtllm.config import PLACEHOLDER_MODEL as PLACEHOLDER_MODEL
from app.model.engines.trtllm.config import TREE as TREE
from app.model.engines.trtllm.config import choose_method as choose_method
from app.model.engines.trtllm.config import read_config as read_config
from app.model.engines.trtllm.config import write_config as write_config
from app.model.engines.trtllm.reports import DECODE_TIME as DECODE_TIME
from app.model.engines.trtllm.reports import HOW_TO_APPLY as HOW_TO_APPLY
from app.model.engines.trtllm.reports import LIVE as LIVE
from app.model.engines.trtllm.reports import PROMETHEUS as PROMETHEUS
from app.model.engines.trtllm.reports import REPORTS as REPORTS
from app.model.engines.trtllm.reports import RULES_METRICS as RULES_METRICS
from app.model.engines.trtllm.reports import STEP_TIMES as STEP_TIMES
from app.model.engines.trtllm.versions import ALIASES as ALIASES
from app.model.engines.trtllm.versions import NAME as NAME
from app.model.engines.trtllm.versions import TITLE as TITLE
from app.model.engines.trtllm.versions import VERSIONS as VERSIONS
from app.model.engines.trtllm.versions import WATCHED as WATCHED
