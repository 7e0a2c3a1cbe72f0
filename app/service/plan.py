"""One plan per request: decided once, rendered by the API, the pages and the command line.

A plan runs the chain once, in order:

    acceptance (a measured profile, or the i.i.d. p) -> the user's setup (devices for the batch that must
    fit) -> the schedule on it (``capacity.decide``, the only decision) -> the engine's config and its
    readback -> the Prometheus rules and the Grafana dashboard, priced at the k that config runs.

Everything downstream reads the plan: ``/api/v1/engine-config``, ``/api/v1/rules``, ``/api/v1/dashboard``,
the ``/decide`` view and ``specdec-lab config / rules / dashboard``.  None of them decides again, so that the
config, the alerts and every readout agree at every batch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

import numpy as np

from app.model import engines, limits, rules
from app.model.arithmetic import trees
from app.model.arithmetic.acceptance import AcceptanceProfile
from app.model.cost import capacity
from app.model.cost.presets import DRAFT_HEADS
from app.model.cost.regimes import best_k_by_batch
from app.model.engines.base import describe_batches
from app.model.live import dashboard, engine_config
from app.service.inputs import link, query_text
from app.service.regimes import BuiltSetup, accuracy_out, decision_schedule, devices_for_batch, devices_note
from app.service.schemas.engines import EngineConfigOut
from app.service.schemas.regimes import AccuracyOut, ScheduleOut
from app.service.schemas.rules import RulesOut, rules_out

WATCH_FIELDS = (
    "label",
    "window",
    "hold",
    "match",
    "canary",
    "control",
)  # with p_low: what only the rules and the dashboard take


@dataclass(frozen=True)
class PlanRequest:
    """Everything one decision depends on: the engine and its drafter, the acceptance, the schedule's range,
    and the watch's window.  ``/engine-config``, ``/rules`` and ``/dashboard`` take the same parameters."""

    engine: str
    p: float
    profile: tuple[float, ...] = ()
    k_max: int = limits.ROOFLINE_DEFAULT_K_MAX
    batch_max: int = limits.MAX_BATCH
    batch: int = 1  # the operating batch of engines that take one k (SGLang without tiers, llama.cpp)
    fit_batch: int = 1  # with devices chosen automatically: the fewest that hold this many sequences
    data_parallel: int = 1  # data-parallel ranks (vLLM drops its per-batch schedule above 1)
    method: str | None = None
    draft_path: str | None = None
    version: str | None = None
    tree_acceptance: tuple[float, ...] | None = None
    tree_budget: int = 0
    # the watch: below p_low the acceptance alert fires (p - rules.DEFAULT_P_MARGIN when None)
    p_low: float | None = None
    label: str = rules.DEFAULT_LABEL
    window: str = rules.DEFAULT_WINDOW
    hold: str = rules.DEFAULT_HOLD
    match: str = ""
    canary: str = ""  # with control: the canary's speedup over control per class, and its roll-back alert
    control: str = ""

    def rules_request(self) -> rules.RulesRequest:
        """The rules' request: this request's fields of the same names (every field of RulesRequest)."""
        return rules.RulesRequest(**{item.name: getattr(self, item.name) for item in fields(rules.RulesRequest)})

    def schedule_pairs(self) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = [("p", repr(self.p)), ("k_max", str(self.k_max))]
        if self.profile:
            pairs.append(("profile", ",".join(f"{share:.6g}" for share in self.profile)))
        if self.batch_max != limits.MAX_BATCH:
            pairs.append(("batch_max", str(self.batch_max)))
        return pairs

    def query(self, watch: bool = False) -> str:
        """This request as the API's query parameters: engine-config's, with ``watch`` also the rules' window
        (defaults left out; the setup's are added by the caller)."""
        return query_text(self.query_pairs(watch))

    def query_pairs(self, watch: bool = False) -> list[tuple[str, str]]:
        """The parameters of query, in order, as names and values (not yet encoded)."""
        pairs: list[tuple[str, str]] = [("engine", self.engine), *self.schedule_pairs()]
        defaults = PlanRequest(engine=self.engine, p=self.p)
        names = ("batch", "fit_batch", "data_parallel", "tree_budget") + (WATCH_FIELDS if watch else ())
        for name in names:
            value = getattr(self, name)
            if value != getattr(defaults, name):
                pairs.append((name, str(value)))
        if self.tree_acceptance and self.tree_budget:
            pairs.append(("tree_acceptance", ",".join(f"{value:g}" for value in self.tree_acceptance)))
        for name, value in (
            ("p_low", None if self.p_low is None or not watch else repr(self.p_low)),
            ("method", self.method),
            ("draft_path", self.draft_path),
            ("engine_version", self.version),
        ):
            if value:
                pairs.append((name, value))
        return pairs


@dataclass(frozen=True)
class IidComparison:
    """Where the i.i.d. model at the same p would run another k than the measured profile does."""

    batches: tuple[int, ...] = ()
    k_at_one: int | None = None  # the i.i.d. model's k at batch 1, where it differs there


@dataclass
class Plan:
    """The decision for one request and everything rendered from it."""

    request: PlanRequest
    built: BuiltSetup
    acceptance: AcceptanceProfile
    decision: capacity.Decision
    export: engine_config.EngineExport
    tree: trees.TreeShape | None
    iid: IidComparison = field(default_factory=IidComparison)
    method_note: str = ""  # where the drafter was taken from the setup's head, or could not be

    @property
    def version(self) -> engines.EngineVersion:
        return self.export.version

    @cached_property
    def schedule(self) -> ScheduleOut:
        return decision_schedule(self.decision, self.built)

    @cached_property
    def accuracy(self) -> AccuracyOut:
        """Where the plan's numbers come from (the defaults, a step fit's measured terms, or terms given) and how
        far off to expect them: the config, the rules and the dashboard say it as the schedule does."""
        return accuracy_out(self.built.setup, self.built.measured)

    @cached_property
    def rules(self) -> rules.RulesFile:
        """The rules file priced at the k this plan's config runs; a RulesError naming the parameter otherwise."""
        return rules.build(
            self.request.rules_request(),
            self.built.setup,
            self.decision,
            self.export.exported,
            accuracy=self.accuracy.summary,
        )

    def rules_out(self) -> RulesOut:
        return rules_out(self.rules, self.accuracy)

    @cached_property
    def dashboard(self) -> dict[str, Any]:
        """The Grafana dashboard, with the plan's accuracy beside Grafana's own keys (its description says it too)."""
        return {**dashboard.build(self.rules), "accuracy": self.accuracy.model_dump()}

    def dashboard_text(self) -> str:
        return json.dumps(self.dashboard, indent=2, ensure_ascii=False) + "\n"

    @property
    def acceptance_note(self) -> str:
        """Where the tokens per verification come from: the first of the model's notes."""
        return f"tokens per verification from {self.acceptance.describe()}"

    def model_notes(self) -> list[str]:
        notes = [self.acceptance_note]
        if self.iid.batches:
            where = "batch" if len(self.iid.batches) == 1 else "batches"
            first = (
                f" (at batch 1: k = {self.iid.k_at_one} against {self.decision.best_k[0]} from the profile)"
                if self.iid.k_at_one is not None
                else ""
            )
            notes.append(
                f"the i.i.d. model at p = {self.request.p:.3f} would run another k at {where} "
                f"{describe_batches(self.iid.batches)}{first}"
            )
        return notes

    def config_out(self) -> EngineConfigOut:
        exported, version = self.export.exported, self.export.version
        request, decision = self.request, self.decision
        notes: list[str] = []
        if request.batch > decision.batch_limit and decision.batch_limit:
            notes.append(
                f"batch {request.batch} does not fit; the flags use the largest batch that fits, {decision.batch_limit}"
            )
        tree_out: dict[str, object] | None = None
        if self.tree is not None:
            paths = engine_config.tree_paths(self.tree)
            tree_out = {
                "nodes": len(paths),
                "depth": self.tree.depth,
                "expected_tokens": self.tree.value,
            }
            for module in engines.ADAPTERS.values():  # each engine that takes a static tree, in its own keys
                if module.TREE is not None:
                    tree_out |= {f"{module.NAME}_{module.TREE.key}": module.TREE.write(paths)}
        return EngineConfigOut(
            engine=request.engine,
            engine_version=version.name,
            engine_versions=[known.name for known in engines.versions(request.engine)],
            p=request.p,
            k_max=request.k_max,
            max_batch_that_fits=decision.max_batch_that_fits,
            batch_limit=decision.batch_limit,
            headline=decision.headline,
            speculate=exported.config is not None,
            config=exported.config,
            flags=exported.flags,
            text=exported.text,
            files=exported.files,
            tree=tree_out,
            schedule=self.schedule,
            engine_k_by_batch=list(exported.runs),
            differs_at=list(exported.differs_at),
            placeholders=list(exported.placeholders),
            sources=version.cite(),
            acceptance_model=self.acceptance.describe(),
            iid_differs_at=list(self.iid.batches),
            accuracy=self.accuracy,
            notes=self.model_notes() + ([self.method_note] if self.method_note else []) + notes + exported.notes,
        )

    def links(self, setup: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
        """The API twins of this plan: its schedule, and its config, rules and dashboard, which take one query;
        ``setup`` the setup's parameters that differ from their defaults (names and values), added to each."""
        if self.built.setup.parallel_draft and ("drafting", "parallel") not in setup:
            setup = [*setup, ("drafting", "parallel")]  # as drafting_for priced a drafter that drafts in one pass
        config = [*self.request.query_pairs(), *setup]
        watched = [*self.request.query_pairs(watch=True), *setup]
        schedule = [*self.request.schedule_pairs(), *setup]
        return {
            "schedule": link("/api/v1/regimes/schedule", schedule),
            "schedule_csv": link("/api/v1/regimes/schedule", [*schedule, ("format", "csv")]),
            "config": link("/api/v1/engine-config", config),
            "rules": link("/api/v1/rules", [*watched, ("format", "yaml")]),
            "dashboard": link("/api/v1/dashboard", watched),
        }


def _iid_comparison(plan_p: float, built: BuiltSetup, decision: capacity.Decision, k_max: int) -> IidComparison:
    """The i.i.d. model's best k over the same batches (a comparison for the notes, not a second decision)."""
    if decision.batch_limit < 1:
        return IidComparison()
    batches = np.arange(1, decision.batch_limit + 1, dtype=np.int64)
    iid_k, _ = best_k_by_batch(plan_p, built.setup, batches, k_max)
    differs = tuple(int(batch) for batch, a, b in zip(batches, decision.best_k, iid_k, strict=True) if int(a) != int(b))
    k_at_one = int(iid_k[0]) if differs and differs[0] == 1 else None
    return IidComparison(differs, k_at_one)


def build(request: PlanRequest, built: BuiltSetup) -> Plan:
    """Decide once and write the engine's config.

    Raises engines.UnknownVersionError for an unknown version, engine_config.ConfigRuleError (a ValueError) for
    a drafter or draft path the engine refuses, and ValueError for a profile or tree it cannot use."""
    built = devices_for_batch(built, request.fit_batch)
    method, method_note = head_method(request, built)
    built, drafting_note = drafting_for(request.engine, method, built)
    method_note = "; ".join(note for note in (method_note, drafting_note) if note)
    acceptance = AcceptanceProfile.of(request.p, request.profile)
    decision = capacity.decide(
        acceptance if request.profile else request.p, built.setup, request.k_max, request.batch_max, devices_note(built)
    )
    iid = _iid_comparison(request.p, built, decision, request.k_max) if request.profile else IidComparison()
    tree = None
    if request.tree_acceptance and request.tree_budget > 0:
        tree = trees.best_first_tree(request.tree_acceptance, request.tree_budget)
    export = engine_config.export(
        request.engine,
        decision.best_k,
        decision.steps,
        decision.batch_limit,
        batch=request.batch,
        tree=tree,
        method=method,
        draft_path=request.draft_path,
        version=request.version,
        data_parallel=request.data_parallel,
        parallel_draft=built.setup.parallel_draft,
    )
    return Plan(request, built, acceptance, decision, export, tree, iid, method_note)


def drafting_for(engine: str, method: str | None, built: BuiltSetup) -> tuple[BuiltSetup, str]:
    """The setup priced the way the engine's drafter drafts: a drafter that proposes all k tokens in one pass
    (EngineAdapter.ONE_PASS_METHODS) makes it a parallel draft, with a note; otherwise the setup's drafting stands,
    and a parallel one the drafter cannot run is said (by the written config, where the engine has a flag for it)."""
    adapter = engines.adapter(engine)
    chosen = adapter.choose_method(method)
    if built.setup.parallel_draft:
        if chosen in adapter.ONE_PASS_METHODS or adapter.PARALLEL_METHODS:  # the written config says the rest
            return built, ""
        block = adapter.ONE_PASS_METHODS
        return built, (
            f"the setup is priced as a parallel draft (all k tokens in one pass), which {adapter.TITLE}'s config "
            f"here has no setting for: its {chosen or 'default drafter'} drafts so only where its draft checkpoint "
            "does; "
            + (f"its block drafters ({', '.join(block)}) always do; " if block else "")
            + "otherwise price drafting=chain"
        )
    if chosen not in adapter.ONE_PASS_METHODS:
        return built, ""
    setup = replace(built.setup, parallel_draft=True)
    description = built.description.model_copy(update={"parallel_draft": True})
    note = f"drafter {chosen} proposes all k tokens in one pass: priced as a parallel draft (drafting=parallel)"
    return replace(built, setup=setup, description=description), note


def head_method(request: PlanRequest, built: BuiltSetup) -> tuple[str | None, str]:
    """The drafter the config runs: the one given, else the engine's own for the head the setup is priced with
    (EngineAdapter.HEAD_METHODS), else the engine's default (a separate draft model); with a note where a head
    chose it or the engine's written config has none for it."""
    head = built.description.draft.key
    if request.method is not None or head not in DRAFT_HEADS:
        return request.method, ""
    adapter = engines.adapter(request.engine)
    method = adapter.HEAD_METHODS.get(head)
    if method is None:
        return None, (
            f"the setup is priced with the {DRAFT_HEADS[head].label}, which {adapter.TITLE}'s config here cannot run: "
            "it is written for a separate draft model; price that draft model (draft=) for a schedule it runs"
        )
    note = f"drafter {method}: {adapter.TITLE}'s own for the {DRAFT_HEADS[head].label} the setup is priced with"
    if head == "mtp" and request.draft_path:
        note += (
            f"; it drafts with the target's own MTP layers, so the draft path given ({request.draft_path}) must be "
            "the target's own checkpoint"
        )
    return method, note
