"""llama.cpp's versions: the sources each was read from and the capabilities it has, set once here."""

from __future__ import annotations

from app.model.engines import base

NAME = "llamacpp"


TITLE = "llama.cpp"


REPOSITORY = "ggml-org/llama.cpp"


B11312 = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


ARG_CPP_2025 = base.Source(
    REPOSITORY, "common/arg.cpp", "145b6280d6aa1890e22457143dad0badb3fd6820", "--draft-max, --draft-min, --draft-p-min"
)


ARG_CPP = base.Source(
    REPOSITORY, "common/arg.cpp", B11312, "--spec-type, --spec-draft-n-max/-n-min/-p-min, removed flags"
)


COMMON_H = base.Source(REPOSITORY, "common/common.h", B11312, "common_params_speculative defaults: n_max 3, p_min 0.0")


SPECULATIVE_CPP = base.Source(
    REPOSITORY, "common/speculative.cpp", B11312, "spec types; statistics line (cumulative since start)"
)


SERVER_CONTEXT = base.Source(
    REPOSITORY, "tools/server/server-context.cpp", B11312, "draft acceptance line with mean len; spec counters"
)


SERVER_TASK = base.Source(REPOSITORY, "tools/server/server-task.cpp", B11312, "/metrics: llamacpp:spec_decode_*")


# Capabilities, set once per version below.
SPEC_FLAGS = "--spec-type and --spec-draft-* flags"  # PR #22397: the spec params refactor (the older flags removed)


VERSIONS = (
    base.EngineVersion(
        "2026-03",
        "2026-03",
        "before PR #22397: --draft-max/--draft-min/--draft-p-min (p_min 0.75); a draft model alone speculates",
        (ARG_CPP_2025,),
        "the older flags",
    ),
    base.EngineVersion(
        "2026-10",
        "2026-10",
        "PR #22397 spec params refactor (--spec-type, --spec-draft-n-max); build b11312 (llama-cpp-python 0.3.36)",
        (ARG_CPP, COMMON_H, SPECULATIVE_CPP, SERVER_CONTEXT, SERVER_TASK),
        "--spec-type draft-simple and --spec-draft-* flags; /metrics spec counters per position",
        capabilities=frozenset({SPEC_FLAGS}),
    ),
)


ALIASES = {"b11312": "2026-10"}
