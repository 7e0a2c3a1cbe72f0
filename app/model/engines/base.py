"""What every engine adapter is made of: versions with their sources, a config request, an export, and the
errors of reading a config back.

An adapter is a package of this package (``vllm``, ``sglang``, ``trtllm``, ``llamacpp``) whose ``ADAPTER`` is an
:class:`EngineAdapter` record naming:

- ``NAME`` and ``TITLE``;
- ``VERSIONS``: the formats it knows, oldest first, each an :class:`EngineVersion` citing the source file
  and the change that set it; the newest is the default;
- ``write_config(request, version) -> Exported``: the product's schedule in the engine's own keys;
- ``read_config(exported, version, batch_limit) -> list[int]``: the k the engine would run at batch
  1..batch_limit, read the way that engine's code reads its config, raising :class:`ConfigRuleError`
  for any rule of the engine the config breaks;
- ``REPORTS``: the report formats it reads (see :mod:`app.model.live.engine_metrics`);
- ``STEP_TIMES``: its files of step times (see :mod:`app.model.engines.step_times`);
- ``RULES_METRICS``: per version, the Prometheus series rules are built from (:class:`RulesMetrics`);
- ``DECODE_TIME``: the series of time spent decoding and the tokens it produced (:class:`DecodeTime`), what a
  canary is compared with its control by, or what the engine lacks;
- ``TREE``: how its config holds a static tree (:class:`TreeFormat`), or None;
- ``LIVE``: how ``measure`` drives a live server of it and reads its counters
  (:class:`LiveFormat`; engines/live.py reads the scrapes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # annotations only: the registry's names load without numpy (the command line's start-up)
    from app.model.arithmetic.trees import TreeShape
    from app.model.cost.regimes import ScheduleStep
    from app.model.counters.counts import SpecCounts
    from app.model.engines.reports import PrometheusNames, ReportFormat
    from app.model.engines.step_times import StepTimeFormat

T = TypeVar("T")

# A capability every engine names the same way (beside its own, which say how): the conformance suite's gates
# and docs/engines.md read it.
SCHEDULE_PER_BATCH = "a draft length per batch"  # the config can hold another k for another batch size


@dataclass(frozen=True)
class Source:
    """A file of an engine's repository, at the commit it was read."""

    repository: str
    path: str
    commit: str
    defines: str

    def cite(self) -> str:
        if all(ch in "0123456789abcdef" for ch in self.commit) and len(self.commit) >= 7:
            return f"{self.repository}: {self.path} @ {self.commit[:12]} ({self.defines})"
        if self.commit[:1] == "b" and self.commit[1:].isdigit():  # a release tag: llama.cpp's builds are bNNNNN
            return f"{self.repository}: {self.path} @ {self.commit} ({self.defines})"
        return f"{self.repository}: {self.path} as of {self.commit} ({self.defines})"


@dataclass(frozen=True)
class Watched:
    """An open change of an engine that would change a format the adapter reads or writes, and where it stands:
    followed (a versioned capability) once merged, recorded until then with what was read to tell."""

    pr: int
    change: str
    merged: bool
    checked: str  # the stored sources read, and what they say


@dataclass(frozen=True)
class EngineVersion:
    """One format of an engine: from which release or change on it holds, and where it is defined."""

    name: str  # what a user passes as engine_version
    released: str  # YYYY-MM
    change: str  # the change that set this format
    sources: tuple[Source, ...]
    summary: str = ""
    # what this version can do, set once here and read by the writer and the reader (never a month compared)
    capabilities: frozenset[str] = frozenset()

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    def cite(self) -> list[str]:
        return [source.cite() for source in self.sources]


class UnknownVersionError(ValueError):
    def __init__(self, engine: str, version: str, known: Sequence[str]) -> None:
        self.engine, self.version, self.known = engine, version, tuple(known)
        super().__init__(f"{engine} has no known version {version!r}; known: {', '.join(known)}")


class ConfigRuleError(ValueError):
    """A config that the engine would refuse, naming the rule and where the engine applies it."""

    def __init__(self, rule: str, where: str) -> None:
        self.rule, self.where = rule, where
        super().__init__(f"{rule} ({where})")


@dataclass(frozen=True)
class ConfigRequest:
    """What to write: the schedule over batch 1..batch_limit and the user's choices."""

    best_k: tuple[int, ...]  # per batch 1..batch_limit
    steps: tuple[ScheduleStep, ...]
    batch_limit: int
    batch: int = 1  # the operating batch, for engines that take one k
    tree: TreeShape | None = None
    method: str | None = None  # vLLM method, SGLang algorithm or TensorRT-LLM decoding type
    draft_path: str | None = None
    data_parallel: int = 1  # data-parallel ranks (vLLM drops its per-batch schedule above 1)
    # the schedule is priced for a draft that proposes all k tokens in one pass (RooflineSetup.parallel_draft): an
    # engine that drafts so only when asked (EngineAdapter.PARALLEL_METHODS) is asked
    parallel_draft: bool = False
    # what batch_limit is, as the config's note says it: a prediction's memory bound, or the largest batch measured
    limit_reason: str = "the largest batch whose weights and KV caches fit"


@dataclass(frozen=True)
class Exported:
    """A config as the engine takes it, and what it means."""

    config: dict[str, Any] | None
    flags: list[str]
    text: str
    notes: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # extra files the flags name (SGLang's adaptive config)
    runs: tuple[int, ...] = ()  # the k the engine runs at batch 1..batch_limit, read back
    differs_at: tuple[int, ...] = ()  # batches where that is not the product's schedule
    placeholders: tuple[str, ...] = ()  # values the user must fill in before the engine accepts the config


@dataclass(frozen=True)
class TreeFormat:
    """How an engine's config holds a static tree: the key, and the value written for the tree's paths (each
    node as the 0-based ranks of the choices from the root, as :func:`tree_paths` gives them)."""

    key: str
    write: Callable[[list[list[int]]], object]


def tree_paths(shape: TreeShape) -> list[list[int]]:
    """Each node as the 0-based ranks of the choices from the root to it, shortest paths first."""
    paths: list[list[int]] = []
    for parent, rank in zip(shape.parents, shape.ranks, strict=True):
        paths.append([*(paths[parent] if parent >= 0 else []), rank - 1])
    return sorted(paths, key=lambda path: (len(path), path))


def quoted(flags: Sequence[str]) -> list[str]:
    """Flags for a shell line: values with JSON or spaces in single quotes."""
    return [f"'{flag}'" if any(ch in flag for ch in '{}[]" ,()') else flag for flag in flags]


def user_batch_k(request: ConfigRequest) -> tuple[int, int]:
    """The user's batch (at most the batch limit) and the schedule's k there: the k an engine that runs one draft
    length at every batch is given."""
    batch = min(request.batch, request.batch_limit)
    return batch, request.best_k[batch - 1]


def off_at_user_batch(request: ConfigRequest, batch: int, advice: str) -> Exported:
    """No config where the engine runs one k at every batch and speculation does not pay at the user's batch:
    ``advice`` says how to run the engine without it (and why one k); the note names the batches where it pays."""
    pays = [index for index, value in enumerate(request.best_k, start=1) if value > 0]
    return Exported(
        None,
        [],
        "",
        [f"speculation does not pay at your batch {batch}: {advice}; it would pay at batches {describe_batches(pays)}"],
        runs=(0,) * request.batch_limit,
        differs_at=tuple(pays),
    )


def runs_of(values: Sequence[T]) -> list[tuple[int, int, T]]:
    """(first batch, last batch, value) for each run of equal values in a per-batch list starting at batch 1."""
    runs: list[tuple[int, int, T]] = []
    for batch, value in enumerate(values, start=1):
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], batch, value)
        else:
            runs.append((batch, batch, value))
    return runs


def differences(product: Sequence[int], engine: Sequence[int]) -> tuple[int, ...]:
    return tuple(batch for batch, (a, b) in enumerate(zip(product, engine, strict=True), start=1) if a != b)


def describe_batches(batches: Sequence[int]) -> str:
    """'3-5, 9' for [3, 4, 5, 9]."""
    runs: list[tuple[int, int]] = []
    for batch in batches:
        if runs and runs[-1][1] == batch - 1:
            runs[-1] = (runs[-1][0], batch)
        else:
            runs.append((batch, batch))
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


@dataclass(frozen=True)
class RulesMetrics:
    """The Prometheus series one engine version exports that Prometheus rules can be built from, by full name.

    Empty names are series the version does not export.  ``k_from`` says how the draft length the engine runs
    shows: ``gauge`` (a gauge of the k running now), ``positions`` (the number of per-position series: the one
    k a server runs at every batch), ``mean-draft-length`` and ``longest-draft`` (lower bounds of the k run,
    since drafts can end early), or empty when it does not show.  ``missing`` is non-empty for a version that
    exports no spec-decode series at all, and says what is missing.
    """

    running: str  # the gauge of running requests: the batch
    scrape_format: str = ""  # the report format (app.model.live.engine_metrics) its /metrics text is read as
    drafts: str = ""  # counter: verifications of a draft
    draft_tokens: str = ""  # counter: drafted tokens
    accepted: str = ""  # counter: accepted draft tokens (bonus excluded)
    per_position: str = ""  # counter per position: drafts whose token at that position was accepted
    drafted_per_position: str = ""  # counter per position: drafts that reached the position
    position_label: str = "position"
    verify_calls: str = ""  # counter: verifications (SGLang)
    generated: str = ""  # counter: generated tokens (SGLang)
    accept_length: str = ""  # gauge: mean accepted length with the bonus token (SGLang)
    running_k: str = ""  # gauge: the draft length running now (SGLang)
    k_from: str = ""
    missing: str = ""
    loses: tuple[str, ...] = ()  # what rules built from these series cannot tell

    @property
    def counts_drafts(self) -> bool:
        """Counters of drafts (or of drafts reaching each position) and of accepted tokens per position."""
        return bool((self.drafts or self.drafted_per_position) and self.per_position)

    @property
    def counts_verifications(self) -> bool:
        """Only counters of verifications and generated tokens, with a gauge of the k running (SGLang's)."""
        return bool(self.verify_calls and self.generated and not self.counts_drafts)


@dataclass(frozen=True)
class DecodeTime:
    """The Prometheus series an engine exports of its decoding time: counters (or a histogram's ``_sum`` and
    ``_count``) whose increases over an interval give the seconds spent decoding and the tokens decoded in them,
    so that seconds / tokens is the per-token decode time of that interval.

    ``first_tokens`` is a counter subtracted from ``tokens``: tokens counted there whose time is not in
    ``seconds`` (each request's first token, timed as time to first token).  ``per_request`` says that the
    seconds are a sum of per-request means (one observation per request), so that the ratio is the mean of the
    requests' per-token times rather than one weighted by their tokens.  ``missing`` says, where the engine
    exports no such series, what it lacks."""

    seconds: str = ""
    tokens: str = ""
    first_tokens: str = ""
    per_request: bool = False
    sources: tuple[Source, ...] = ()
    note: str = ""  # what the ratio measures, in words
    missing: str = ""

    def cite(self) -> list[str]:
        return [source.cite() for source in self.sources]


@dataclass(frozen=True)
class EngineAdapter:
    """Everything the product knows of one engine, named once: each engine package's ``ADAPTER`` is one of these,
    built from its three modules (``versions``, ``config``, ``reports``)."""

    NAME: str
    TITLE: str
    VERSIONS: tuple[EngineVersion, ...]  # oldest first; the newest is the default
    ALIASES: Mapping[str, str]  # release or build names -> version names
    METHODS: tuple[str, ...]  # the drafters in the engine's own words
    REPORTS: tuple[ReportFormat, ...]
    STEP_TIMES: tuple[StepTimeFormat, ...]  # its own files of step times (may be empty)
    RULES_METRICS: Mapping[str, RulesMetrics]  # per version name
    HOW_TO_APPLY: str  # what the off-schedule alert tells an operator to do
    DECODE_TIME: DecodeTime  # its series of decoding time, for the canary check
    TREE: TreeFormat | None  # how its config holds a static tree; None when it takes none
    LIVE: LiveFormat  # how measure drives a live server and reads its counters
    write_config: Callable[[ConfigRequest, EngineVersion], Exported]
    read_config: Callable[[Exported, EngineVersion, int], list[int]]  # the k at batch 1..batch_limit
    choose_method: Callable[[str | None], str | None]
    PLACEHOLDER_MODEL: str = ""  # what a written config holds where the user names the draft
    PROMETHEUS: PrometheusNames | None = None  # its series' names, for the rules' tests and docs
    WATCHED: tuple[Watched, ...] = ()  # open changes that would change a format, followed until merged
    METHOD_ALIAS: str = ""  # an older query parameter for method=, kept as an alias; empty when none
    # the drafter, in the engine's own words, that runs a head the setup prices (eagle, eagle3, mtp: the product's
    # DRAFT_HEADS) where no method is given; a head absent here is one this engine's written config cannot run
    HEAD_METHODS: Mapping[str, str] = field(default_factory=dict)
    # drafters that propose all k tokens in one pass whatever the config says (block drafters), and those that do
    # so where the written config asks (ConfigRequest.parallel_draft); a drafter in neither proposes one per pass
    ONE_PASS_METHODS: tuple[str, ...] = ()
    PARALLEL_METHODS: tuple[str, ...] = ()

    @classmethod
    def of(cls, *modules: ModuleType) -> EngineAdapter:
        """The record of an engine package's modules (``versions``, ``config``, ``reports``): each field is the
        module attribute of its name, the first module that has it giving it; a field with a default may be
        absent, any other absent one is an AttributeError naming it."""
        found: dict[str, Any] = {}
        for item in fields(cls):
            holder = next((module for module in modules if hasattr(module, item.name)), None)
            if holder is not None:
                found[item.name] = getattr(holder, item.name)
            elif item.default is MISSING:
                raise AttributeError(f"no module of {', '.join(m.__name__ for m in modules)} names {item.name}")
        return cls(**found)


def openai_completion(prompt: str, n_predict: int, model: str | None, cache_prompt: bool) -> dict[str, object]:
    """An OpenAI /v1/completions request that decodes every token at temperature 0, streamed with its usage."""
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": n_predict,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "seed": 0,
    }


@dataclass(frozen=True)
class LiveFormat:
    """How ``measure`` drives a live server of one engine and reads its speculation between requests."""

    engine: str  # the package's NAME
    title: str
    marker: str  # the prefix of its series there: what tells this engine from the others
    counts: Callable[[str], SpecCounts | None]  # cumulative, from one scrape; None: the server does not speculate
    k_of: Callable[[str, SpecCounts | None], int | None]  # the configured k where the scrape (or its counts) say it
    sources: tuple[Source, ...]
    metrics_path: str = "/metrics"  # where its Prometheus text is served
    native: bool = False  # llama-server's /completion with its own timings; otherwise OpenAI /v1/completions, streamed
    # the request of one completion that decodes n tokens whatever it says: (prompt, n, served model, cache prompt)
    body: Callable[[str, int, str | None, bool], dict[str, object]] = openai_completion
    completion_path: str = "/v1/completions"
    # accepted counts every generated token a verification did not draft, each request's first token included:
    # the window's requests are taken off (SGLang's accepted = generation tokens - verifications)
    first_tokens_in_accepted: bool = False
    drafter_named: bool = True  # whether the scrape names the drafter (vLLM's does not)
    version_path: str | None = "/version"  # answers {"version": ...}
    batches_itself: bool = True  # its scheduler batches what arrives; llama-server needs a slot per request
    setup_hint: str = ""  # what to start the server with for its counters

    def cite(self) -> list[str]:
        return [source.cite() for source in self.sources]
