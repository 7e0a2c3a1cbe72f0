"""The inputs of one plan (app.service.plan), declared once for the API, the /decide page and the command line.

``PLAN`` is what the decision depends on (engine, drafter, version, acceptance as p, a draft acceptance rate or
a mean acceptance length at k, a measured profile, the schedule's batches, a tree); ``WATCH`` adds the watch's
window for the rules and the dashboard.  ``request`` turns their values into a ``PlanRequest``, and what cannot
be combined into an InputError naming the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.model import engines, limits, rules
from app.model.arithmetic import closed_form, trees
from app.model.arithmetic.acceptance import Acceptance, AcceptanceProfile
from app.model.engines.base import UnknownVersionError
from app.model.limits import InputError
from app.service.inputs import Input, checked, number_list, same_named
from app.service.plan import PlanRequest

MAX_LABEL = 100
MAX_TEXT = 1_000
DRAFT_PATH_PATTERN = r"^[A-Za-z0-9_.~/+\-]+$"
PROFILE_PATTERN = r"^\s*([0-9.]+\s*(,\s*[0-9.]+\s*)*)?$"
DURATION_PATTERN = r"^\s*(\d+(ms|s|m|h|d|w|y))+\s*$"
LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
DEFAULT_P = limits.ROOFLINE_DEFAULT_P

PROFILE_RULE = "- `profile`: each share from 0 to 1, not increasing along the positions.\n"
# The rules between p, a draft acceptance rate and a mean acceptance length at k (every prediction takes them).
ACCEPTANCE_RULES = (
    "- `p`, `rate`, `mean_length`: give at most one of them;\n"
    "- `k` is required with rate or mean_length;\n"
    "- `mean_length` is at most k + 1;\n"
)
# Rules between the plan's inputs, listed in the description of each operation that takes them.
PLAN_RULES = (
    ACCEPTANCE_RULES
    + "- `tree_acceptance` is required with tree_budget > 0; its values do not increase and sum to at most 1;\n"
    "- `tree_budget` fits the engine's tree format;\n"
    "- `engine_version` is one the engine knows (the list depends on the engine);\n"
    "- `method` is one of the engine's own drafters (the list depends on the engine);\n"
    "- `draft_path` is one the engine can load;\n" + PROFILE_RULE
)


def engine_names() -> tuple[str, ...]:
    """The engines as the registry holds them now (one registered later included)."""
    return tuple(engines.ENGINES)


def engine_title(name: str) -> str:
    return str(engines.adapter(name).TITLE)


def engine_versions(name: str) -> tuple[str, ...]:
    """One engine's versions, oldest first, then the aliases it also takes (release or build names)."""
    return (*(v.name for v in engines.versions(name)), *engines.adapter(name).ALIASES)


def known_versions() -> tuple[str, ...]:
    """Every version and alias of every engine as the registry holds them now, each once."""
    return tuple(dict.fromkeys(version for name in engines.ENGINES for version in engine_versions(name)))


def _versions_text() -> str:
    return "; ".join(f"{name}: {', '.join(engine_versions(name))}" for name in engines.ENGINES)


def _methods_text() -> str:
    return "; ".join(f"{name}: {', '.join(engines.adapter(name).METHODS)}" for name in engines.ENGINES)


ENGINE = Input(
    "engine", "Engine", str, None, "The serving engine", choices=engine_names, titles=engine_title, required=True
)
P = Input("p", "Acceptance p", float, None, f"Acceptance p (default {DEFAULT_P:g})", 0.0, 1.0)
RATE = Input("rate", "Draft acceptance rate", float, None, "Or: draft acceptance rate measured at k", 0.0, 1.0)
MEAN_LENGTH = Input(
    "mean_length",
    "Mean acceptance length",
    float,
    None,
    "Or: mean acceptance length at k",
    1.0,
    limits.K_MAX_LIMIT + 1,
)
K = Input(
    "k",
    "Draft length k it was measured at",
    int,
    None,
    "Draft length of the measurement (read from the data if omitted)",
    1,
    limits.K_MAX_LIMIT,
)
K_MAX = Input(
    "k_max",
    "Largest k searched",
    int,
    limits.ROOFLINE_DEFAULT_K_MAX,
    "Largest draft length searched",
    1,
    limits.K_MAX_LIMIT,
)
BATCH_MAX = Input(
    "batch_max", "Largest batch decided", int, limits.MAX_BATCH, "Largest batch decided", 1, limits.MAX_BATCH
)
BATCH = Input(
    "batch",
    "Operating batch",
    int,
    1,
    "Operating batch for engines that take one k (SGLang, llama.cpp)",
    1,
    limits.MAX_BATCH,
)
TREE_ACCEPTANCE = Input(
    "tree_acceptance",
    "Positional acceptance of the tree",
    str,
    "",
    "Positional acceptance P1 >= P2 >= ... for a tree, comma-separated",
    max_length=MAX_TEXT,
)
TREE_BUDGET = Input(
    "tree_budget", "Tree nodes", int, 0, "Tree nodes, 0 for a chain (from the schedule)", 0, trees.MAX_TREE_BUDGET
)
METHOD = Input(
    "method",
    "Drafter",
    str,
    None,
    f"The drafter in the engine's own words (any case). {_methods_text()}. Without it: the engine's own drafter "
    "for the head the setup is priced with (draft=eagle, eagle3 or mtp), else a separate draft model",
    max_length=MAX_LABEL,
)
DRAFT_PATH = Input(
    "draft_path",
    "Draft model (path or name)",
    str,
    None,
    "The draft model's file path or hub name (letters, digits and - _ . / ~ +), written as is",
    max_length=MAX_TEXT,
    pattern=DRAFT_PATH_PATTERN,
)
DATA_PARALLEL = Input(
    "data_parallel",
    "Data-parallel ranks",
    int,
    1,
    "Data-parallel ranks the engine runs (vLLM's --data-parallel-size): above 1 vLLM drops its per-batch schedule "
    "and runs one k at every batch, the schedule's k at the operating batch",
    1,
    limits.MAX_DEVICES,
)
FIT_BATCH = Input(
    "fit_batch",
    "Sequences the devices hold",
    int,
    1,
    "With devices=0: choose the fewest devices that hold both models and this many sequences",
    1,
    limits.MAX_BATCH,
)
ENGINE_VERSION = Input(
    "engine_version",
    "Engine version",
    str,
    None,
    f"The engine version or an alias of it (the newest when left out). Known: {_versions_text()}",
    known=known_versions,
    max_length=MAX_LABEL,
)
PROFILE = Input(
    "profile",
    "Measured acceptance profile",
    str,
    "",
    "A measured acceptance profile: the share of drafts accepted at least to position 1, 2, ... (each 0 to 1, "
    "not increasing), comma-separated, as calibrate's calibration.positions[].rate or measure's profile; tokens "
    "per verification then come from it, the i.i.d. p only beyond it",
    max_length=MAX_TEXT,
    pattern=PROFILE_PATTERN,
)


def _older_method(engine: str) -> Input:
    """An engine's older name of method=, checked against that engine's own drafters."""
    adapter = engines.adapter(engine)
    return Input(
        adapter.METHOD_ALIAS,
        f"{adapter.TITLE} drafter",
        str,
        None,
        f"{adapter.TITLE}'s drafter, the older name of method= for engine={engine}; without it as method= says",
        choices=lambda: tuple(engines.adapter(engine).METHODS),
    )


# the older spellings of method= that some engines name (METHOD_ALIAS), as the registry held them at start
OLDER_METHODS = tuple(_older_method(name) for name in engines.ENGINES if engines.adapter(name).METHOD_ALIAS)

PLAN: tuple[Input, ...] = (
    ENGINE,
    P,
    RATE,
    MEAN_LENGTH,
    K,
    K_MAX,
    BATCH_MAX,
    BATCH,
    TREE_ACCEPTANCE,
    TREE_BUDGET,
    METHOD,
    DRAFT_PATH,
    *OLDER_METHODS,
    FIT_BATCH,
    DATA_PARALLEL,
    ENGINE_VERSION,
    PROFILE,
)

P_LOW = Input(
    "p_low",
    "Lower bound of p",
    float,
    None,
    "The calibrated lower bound of p (calibrate's p_low): below it the acceptance alert fires. "
    f"Default: p - {rules.DEFAULT_P_MARGIN:g}",
    0.0,
    1.0,
)
# the label that names a class: the rules', the dashboard's and the rollout's (API and command line)
LABEL = Input(
    "label",
    "Class label",
    str,
    rules.DEFAULT_LABEL,
    "The label whose values are the classes (with instance)",
    max_length=MAX_LABEL,
    pattern=LABEL_PATTERN,
    pattern_rule=True,
)
WATCH: tuple[Input, ...] = (
    P_LOW,
    LABEL,
    Input(
        "window",
        "Rate window",
        str,
        rules.DEFAULT_WINDOW,
        "Rate window of the recording rules (a Prometheus duration, 1s to 7d)",
        max_length=MAX_LABEL,
        pattern=DURATION_PATTERN,
        pattern_rule=True,
    ),
    Input(
        "hold",
        "Hold",
        str,
        rules.DEFAULT_HOLD,
        "How long a condition holds before its alert fires (for:), at most 7d",
        max_length=MAX_LABEL,
        pattern=DURATION_PATTERN,
        pattern_rule=True,
    ),
    Input(
        "match",
        "Label matchers",
        str,
        "",
        'Label matchers added to every series the rules read, such as job="vllm" (empty: all)',
        max_length=rules.MAX_MATCH,
    ),
    Input(
        "canary",
        "Canary matchers",
        str,
        "",
        'Label matchers of the replicas that run speculation, such as role="canary": with control, the rules '
        "record the canary's speedup over control per class and alert when it is slower (empty: none)",
        max_length=rules.MAX_MATCH,
    ),
    Input(
        "control",
        "Control matchers",
        str,
        "",
        'Label matchers of the replicas that do not, such as role="control" (with canary)',
        max_length=rules.MAX_MATCH,
    ),
)
RULES_FORMATS = ("json", "yaml")
RULES_FORMAT = Input("format", "Format", str, RULES_FORMATS[0], "Response format", choices=lambda: RULES_FORMATS)


def profile_shares(text: str) -> tuple[float, ...]:
    """A measured profile from its text: shares from 0 to 1, not increasing, at most K_MAX_LIMIT of them."""
    shares = number_list("profile", text, limits.K_MAX_LIMIT)
    try:
        AcceptanceProfile.of(0.5, shares)
    except ValueError as error:
        raise InputError("profile", f"{error}; got {text[:60]!r}", text) from None
    return shares


def version_name(engine: str, name: str | None) -> str | None:
    """The engine's version of that name (None: the newest), or InputError naming engine_version."""
    if name is None:
        return None
    try:
        return engines.version(engine, name).name
    except UnknownVersionError as error:
        known = ", ".join(error.known)
        raise InputError(
            "engine_version", f"{error.engine} has no version {error.version!r}; known: {known}", name
        ) from None


def acceptance(p: float | None, rate: float | None, length: float | None, k: int | None) -> float:
    """p from exactly one of p, a draft acceptance rate at k or a mean acceptance length at k (DEFAULT_P: none)."""
    given = [name for name, value in (("p", p), ("rate", rate), ("mean_length", length)) if value is not None]
    if not given:
        return DEFAULT_P
    if len(given) != 1:
        raise InputError("p", "give exactly one of p, rate (with k) or mean_length (with k)")
    if p is not None:
        return p
    if k is None:
        raise InputError("k", f"is required with {given[0]}: the draft length the measurement was taken at")
    if k < 1:
        raise InputError("k", f"must be at least 1 with {given[0]}: a measurement drafts at least one token; got {k}")
    if rate is not None:
        return closed_form.acceptance_from_draft_rate(rate, k)
    assert length is not None
    if length > k + 1:
        raise InputError("mean_length", f"must be at most k + 1 = {k + 1}; got {length:g}")
    return closed_form.acceptance_from_mean_length(length, k)


def measured_acceptance(
    p: float | None, rate: float | None, length: float | None, k: int | None, profile: str = ""
) -> Acceptance:
    """The acceptance a prediction is priced with: p from exactly one of p, a rate or a mean length at k
    (acceptance), and with a measured profile its tokens per verification (beyond its last position, the
    conditional acceptance measured there: :mod:`app.model.arithmetic.acceptance`)."""
    value = acceptance(p, rate, length, k)
    shares = profile_shares(profile)
    return AcceptanceProfile.of(value, shares) if shares else value


def tree_acceptance(text: str, name: str = "tree_acceptance") -> tuple[float, ...]:
    """A tree's positional acceptance from its text (input ``name``): at least one probability, at most one per
    position of the widest tree."""
    values = number_list(name, text, trees.MAX_WIDTH)
    if not values:
        raise InputError(name, "needs at least one probability, e.g. 0.6,0.2,0.1", text)
    try:
        return trees.positional_acceptance(values)
    except ValueError as error:
        raise InputError(name, str(error), text) from None


def tree_widths(text: str) -> list[int]:
    """The fixed widths to compare, in the order given, each once."""
    chosen: list[int] = []
    for value in number_list("widths", text, limits.MAX_TREE_WIDTHS):
        if not value.is_integer() or not 2 <= value <= trees.MAX_WIDTH:
            message = f"each width must be an integer from 2 to {trees.MAX_WIDTH}; got {value:g}"
            raise InputError("widths", message, text)
        if int(value) not in chosen:
            chosen.append(int(value))
    return chosen


def request(given: Mapping[str, Any], profile: tuple[float, ...] | None = None) -> PlanRequest:
    """The plan's request from the values of PLAN and WATCH (each at its default when not given); ``profile``,
    when given, replaces the profile input's text (a profile already read, from an engine's report)."""
    values = checked((*PLAN, *WATCH), given)
    engine = values["engine"]
    older = {item.name: values[item.name] for item in OLDER_METHODS}
    chosen_method = values["method"] or older.get(engines.adapter(engine).METHOD_ALIAS)
    chosen_version = version_name(engine, values["engine_version"])
    shares = profile_shares(values["profile"]) if profile is None else profile
    try:
        engines.adapter(engine).choose_method(chosen_method)
    except ValueError as error:
        raise InputError("method", str(error), values["method"]) from None
    tree_text = values["tree_acceptance"]
    tree = tree_acceptance(tree_text) if tree_text.strip() else None
    p = acceptance(values["p"], values["rate"], values["mean_length"], values["k"])
    if values["tree_budget"] > 0 and not tree_text.strip():
        raise InputError("tree_acceptance", "is required with tree_budget > 0")
    return PlanRequest(
        **same_named(PlanRequest, values)
        | {
            "engine": engine,
            "p": p,
            "profile": shares,
            "method": chosen_method,
            "version": chosen_version,
            "tree_acceptance": tree if values["tree_budget"] > 0 else None,
            "window": values["window"].strip(),
            "hold": values["hold"].strip(),
        }
    )


def watch_request(given: Mapping[str, Any], profile: tuple[float, ...] | None = None) -> PlanRequest:
    """The plan's request with the watch's window; the rules' own checks (version with series, durations, label,
    matchers, p_low) answer before anything is decided."""
    made = request(given, profile)
    rules.check(made.rules_request())  # a RulesError is an InputError naming the input
    return made
