"""SGLang: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2026-03``: launch flags ``--speculative-algorithm``, ``--speculative-num-steps``,
  ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``; one draft length for every batch;
  gauges ``sglang:spec_accept_length`` and ``sglang:spec_accept_rate`` (rate = length / draft tokens).
  ``/generate``'s ``meta_info`` carries each request's counts under older names: ``spec_accept_token_num``,
  ``spec_draft_token_num``, ``spec_accept_histogram`` (sglang 0.5.10 and before), ``spec_accepted_drafts``,
  ``spec_proposed_drafts``, ``spec_accept_histogram`` (0.5.11); 0.5.12 writes PR #24081's beside 0.5.11's.
- ``2026-05``: the adaptive schedule per batch-size tier, ``--speculative-adaptive`` with
  ``--speculative-adaptive-config FILE`` (PR #24055: digit keys are the lowest batch of a tier, each with
  ``candidate_steps``, 0 = no drafting); the rate counts drafts only, (length - 1) / (draft tokens - 1)
  (PR #23530); the counter ``sglang:spec_verify_calls_total`` (PR #25689) and the gauges
  ``sglang:spec_num_steps`` and ``sglang:spec_num_draft_tokens`` (PR #25940).  ``/generate``'s ``meta_info``
  carries each request's counts under PR #24081's names (``spec_num_correct_drafts`` ...).
- ``2026-08``: PR #33518: the OpenAI endpoints return the same counts as ``sglext.spec_tokens_details``, but only
  to a request that sends ``"return_spec_tokens_details": true`` (one object, or a list per choice for n > 1).

The adaptive schedule runs only for EAGLE, EAGLE3 and NEXTN with topk 1; for a separate draft model
(STANDALONE) SGLang falls back to one draft length, so that is what is written for it.
"""

from __future__ import annotations

from app.model.engines.base import EngineAdapter
from app.model.engines.sglang import config, reports, versions

ADAPTER = EngineAdapter.of(versions, config, reports)
