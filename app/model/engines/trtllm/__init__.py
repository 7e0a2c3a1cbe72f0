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

from app.model.engines.base import EngineAdapter
from app.model.engines.trtllm import config, reports, versions

ADAPTER = EngineAdapter.of(versions, config, reports)
