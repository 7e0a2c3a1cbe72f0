"""The product's schedule written in llama.cpp's own configuration."""

from __future__ import annotations

from typing import Any

from app.model.engines import base
from app.model.engines.llamacpp.methods import PLACEHOLDER_MODEL, spec_type
from app.model.engines.llamacpp.versions import SPEC_FLAGS

DEFAULT_P_MIN = 0.0  # common_params_speculative_draft.p_min in common/common.h (b11312)


OLD_DEFAULT_P_MIN = 0.75


TREE = None  # llama.cpp drafts chains only


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    best = list(request.best_k)
    limit = request.batch_limit
    if not best or limit < 1:
        return base.Exported(None, [], "", ["nothing fits: llama-server cannot run this setup"])
    batch, k = base.user_batch_k(request)
    if k == 0:
        return base.Exported(
            None, [], "", [f"k = 0 at batch {batch}: run llama-server without speculation"], runs=tuple([0] * limit)
        )
    kind = spec_type(request.method, request.draft_path)
    notes = [f"llama.cpp takes one draft length: the schedule's k = {k} at batch {batch} (--parallel {batch})"]
    placeholders: tuple[str, ...] = ()
    draft = request.draft_path
    if kind == "draft-simple" and not draft:
        draft, placeholders = PLACEHOLDER_MODEL, (PLACEHOLDER_MODEL,)
        notes.append("fill in -md: the draft model's GGUF file (or choose ngram-simple, which needs none)")
    config: dict[str, Any]
    if version.can(SPEC_FLAGS):
        if kind == "draft-simple":
            assert draft is not None
            flags = ["--spec-type", kind, "-md", draft, "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0"]
            config = {"--spec-type": kind, "-md": draft, "--spec-draft-n-max": k, "--spec-draft-n-min": 0}
            notes.append(
                f"--spec-draft-p-min is left at its default {DEFAULT_P_MIN:g} (common/common.h): drafts are not cut "
                "short by the draft's confidence, as the i.i.d. model assumes"
            )
        elif kind == "ngram-simple":
            flags = ["--spec-type", kind, "--spec-ngram-simple-size-m", str(k)]
            config = {"--spec-type": kind, "--spec-ngram-simple-size-m": k}
            notes.append("ngram-simple drafts up to --spec-ngram-simple-size-m tokens found earlier in the context")
        else:
            flags = ["--spec-type", kind, "--spec-ngram-mod-n-max", str(k), "--spec-ngram-mod-n-min", "1"]
            config = {"--spec-type": kind, "--spec-ngram-mod-n-max": k, "--spec-ngram-mod-n-min": 1}
    else:
        if kind != "draft-simple":
            raise ValueError(f"llama.cpp {version.name} has no --spec-type: only a draft model (draft-simple)")
        assert draft is not None
        flags = ["-md", draft, "--draft-max", str(k), "--draft-min", "0"]
        config = {"-md": draft, "--draft-max": k, "--draft-min": 0}
        notes.append(f"--draft-p-min is left at {OLD_DEFAULT_P_MIN:g}, this version's default")
    flags += ["--parallel", str(batch)]
    config["--parallel"] = batch
    runs = [k] * limit
    differ = base.differences(best, runs)
    if differ:
        notes.append(
            f"llama-server runs k = {k} also at batches {base.describe_batches(differ)}, where the schedule differs"
        )
    text = "llama-server -m TARGET.gguf " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)
