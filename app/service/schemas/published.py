"""The published measurements against the cost model, each source predicted by terms fitted on the others."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PublishedPointOut(BaseModel):
    id: str
    sweep: str
    citation: str
    url: str = Field(description="The source's address.")
    location: str = Field(description="Where in the source.")
    setup_class: str | None = Field(description="Method x engine x accelerator family x context; null if not priced.")
    hardware: str | None
    devices: int | None
    replicas: int | None = Field(
        default=None, description="Engines sharing the batch behind a balancer, each over its share of the devices."
    )
    engine: str | None
    target: str | None
    draft_method: str
    draft: str | None
    k: int | None
    batch: int | None
    context: int | None
    measured: float | None = Field(description="The speedup the source reports.")
    predicted: float | None = Field(
        description="The cost model's speedup with terms fitted on every other source (null where not scored)."
    )
    error: float | None = Field(description="predicted / measured - 1.")
    priced: bool
    sets_acceptance: bool = Field(
        description="True for the point whose speedup sets its sweep's acceptance (the source gives none): it is "
        "priced but tests nothing."
    )
    excluded_because: str | None = Field(description="Why the cost model cannot price it, in words.")
    quote: str | None = Field(default=None, description="The source's own words for the figure, where recorded.")
    notes: str | None = Field(default=None, description="How the figure was read from the source.")


class PublishedClassOut(BaseModel):
    setup_class: str
    points: int
    median_error: float | None = Field(description=f"Stated from {3} points of the class on; null below.")
    worst_error: float | None


class PublishedIntervalOut(BaseModel):
    setup_class: str = Field(description="A class as the batch answers state it: no engine named.")
    points: int = Field(description="Scored published points of the class, every engine's.")
    interval_spread: float = Field(
        description="The predicted speedup's interval for a setup of this class is [S / (1 + spread), S (1 + spread)]."
    )
    interval_from: str = Field(description="this class, or every published point (too few of its own).")


class PublishedCrossoverOut(BaseModel):
    sweep: str
    batches: list[int]
    measured: int | None = Field(
        description="The batch from which the source's speedup stays at or below 1; the sweep's smallest batch where "
        "it paid at none of them."
    )
    measured_after: int | None = Field(
        None,
        description="The sweep's batch before ``measured`` (0 where it never paid): the source puts the crossover "
        "after it and at or before ``measured``, and the prediction is judged against that whole range.",
    )
    predicted: int | None = Field(
        description="The same by terms fitted on every other source; 1 where the predicted speedup is at or below 1 at "
        "every batch."
    )
    range_low: int | None = Field(description="First batch at which the predicted speedup's interval holds 1.")
    range_high: int | None = Field(description="Last such batch; null when it still holds 1 at batch 4096.")
    within_2x: bool | None
    inside_range: bool | None
    predicted_inside_own_range: bool = Field(
        description="Whether the predicted crossover falls inside the sweep's own batches (a sweep that never stops "
        "paying is judged by it: it should not)."
    )


class PublishedGrowthOut(BaseModel):
    sweep: str
    growth: float = Field(
        description="How much the plain step grows from the sweep's smallest batch to its largest, predicted over "
        "measured (1: as measured)."
    )
    same_plain_server: list[str] = Field(
        default_factory=list,
        description="The source's other sweeps over the same plain server (the same baseline at the same batches): "
        "one growth, stated once.",
    )


class PublishedStepTimesOut(BaseModel):
    """The plain step's predicted time against the baseline's own figure, where the source gives its rate, each
    point predicted by the terms fitted without its source."""

    points: int
    sources: int
    median_error: float | None = Field(description="Predicted over measured minus 1, the median; never fitted.")
    median_absolute_error: float | None
    large_batch_from: int = Field(description="The batch from which a point counts as large.")
    large_batch_points: int
    large_batch_median_error: float | None
    growth: list[PublishedGrowthOut] = Field(
        description="Per sweep with a step time at two batches or more (the fit takes this growth from the other "
        "sources; each sweep here is predicted by terms fitted without its own)."
    )


class PublishedExclusionOut(BaseModel):
    reason: str = Field(description="What a source leaves out, or what the cost model has no figure for.")
    points: int = Field(description="Points it keeps from being priced (a point may lack several things).")
    alone: int = Field(description="Points that lack only this: each would be priced with it.")


class PublishedOut(BaseModel):
    """Every published point, measured against predicted (leave-one-source-out), and the points not priced."""

    points_total: int
    points_priced: int
    points_scored: int = Field(description="Priced points that test the model (all but those setting acceptance).")
    sources_total: int
    sources_priced: int
    median_error: float | None = Field(description="Leave-one-source-out, over every scored point.")
    worst_error: float | None
    terms: dict[str, float] = Field(description="The terms fitted on every source: the product's defaults.")
    scoped_terms: dict[str, float] = Field(
        description="Terms the protocol took for one method or context regime (name@scope): empty while none lowers"
        " the mean error and leaves the worst point no worse; answers price by the global terms."
    )
    chosen_terms: list[str] = Field(description="The terms the protocol let in, in the order it did.")
    candidate_terms: list[str] = Field(
        description="Every term the protocol was offered: the global ones, then each for a draft method or a context"
        " regime that two sources or more measured (name@scope)."
    )
    summary: str
    classes: list[PublishedClassOut]
    crossovers: list[PublishedCrossoverOut]
    step_times: PublishedStepTimesOut
    interval_spread: float | None = Field(
        description="The predicted speedup's interval over every published point is [S / (1 + spread), S (1 + spread)]"
        ": the leave-one-source-out error that held interval_coverage of the scored points (split-conformal)."
    )
    intervals: list[PublishedIntervalOut] = Field(
        description="The interval each class's answers state, for the classes with a scored point."
    )
    interval_coverage: float = Field(description="The share of points the interval is made to hold: 0.9.")
    interval_held_out_of_source: int = Field(
        description="Scored points inside the interval the answers state for their class (interval_spread's rule) when "
        "it is made from the other sources' errors alone (of points_scored)."
    )
    points: list[PublishedPointOut]
    exclusions: list[PublishedExclusionOut] = Field(
        default_factory=list, description="What keeps the points that cannot be priced out, most first."
    )
