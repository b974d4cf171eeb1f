"""The file formats of the registry as pydantic models: a spec (``experiments/<paper>/<id>.yaml``)
and the PU data set catalogue (``pubench/data/pu_datasets.yaml``).

The models fix the structure and the types (unknown keys are errors, nothing is coerced);
``pubench.registry.loader`` adds the checks across fields (rows a claim names exist, a tier
that changes something lists its deviations, ...). Param blocks (``params``, ``rows``,
``cols``, ``cells``) are free mappings here: each task validates its own (docs/tasks.md).
``pubench schema`` prints the JSON Schema of :class:`SpecFile` (``experiments/spec.schema.json``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from pubench.registry.spec import CLAIM_KINDS, MAX_SEEDS, PAPERS, TIERS
from pubench.utils.validation import STRICT

Params = dict[str, Any]
#: a format spec of printed numbers: an optional sign, width up to 2 digits, precision up to 2
#: (a spec like ".100000000f" would print 100 MB per number)
_NUMBER_FORMAT = re.compile(r"^[+\- ]?\d{0,2}[,_]?(\.\d{1,2})?[eEfFgG%]?$")


def _number_format(v: str) -> str:
    if not _NUMBER_FORMAT.match(v):
        raise ValueError(f"{v!r} is not a format spec of numbers (e.g. '.2f', '.3g', '.1%')")
    format(-1.5, v)  # a ValueError names what Python rejects
    return v


class _Model(BaseModel):
    model_config = STRICT


class MetricModel(_Model):
    label: str
    higher_is_better: bool
    format: str = Field(".2f", description="Python format spec of the printed numbers")

    _format = field_validator("format")(classmethod(lambda cls, v: _number_format(v)))


class ReportedCellModel(_Model):
    missing_hints: ClassVar[dict[str, str]] = {
        "mean": "missing (write null with a note when the paper prints no number)"}

    row: str
    col: str
    metric: str | None = Field(None, description="required when the spec has several metrics")
    mean: float | None = Field(description="as printed; null when the paper prints no number (then a note says why)")
    std: float | None = Field(None, ge=0)
    note: str | None = None
    mark: str | None = Field(None, description="a mark printed next to the number, e.g. a dagger")


class ReportedEntryModel(_Model):
    """A number of ``reported.table`` in full (a cell of ``cells`` without its row, column and metric)."""

    missing_hints: ClassVar[dict[str, str]] = ReportedCellModel.missing_hints

    mean: float | None = Field(description="as printed; null when the paper prints no number (then a note says why)")
    std: float | None = None
    note: str | None = None
    mark: str | None = Field(None, description="a mark printed next to the number, e.g. a dagger")


#: an entry of ``reported.table``: "MEAN", "MEAN ± STD", either followed by the printed mark ("88.41 ± 0.41 ✓"),
#: a number, or the full form
ReportedEntry = str | float | ReportedEntryModel


class SignificanceModel(_Model):
    mark: str = Field(description="the mark the paper prints after a cell, e.g. ✓")
    better: str = Field(description="the row whose superiority the mark asserts (the paper's method)")
    test: Literal["paired_t"] = Field(description="paired t-test over the seeds (trials) of the two cells")
    level: float = Field(description="confidence level, e.g. 0.95", gt=0.5, lt=1.0)
    text: str = Field(description="what the paper says the mark means (quoted)")


class SharedTextModel(_Model):
    """A decision or note several specs use word for word, written once in ``experiments/_shared.yaml``."""

    shared: str = Field(description="a name in experiments/_shared.yaml (the loader puts its sentence here)")


class ReportedModel(_Model):
    missing_at_parent: ClassVar[dict[str, str]] = dict.fromkeys(
        ("seeds", "pm"), "must state 'seeds' (the paper's seed count) and 'pm' (what ± means), null if the paper "
                         "does not say")

    seeds: int | None = Field(description="the paper's number of runs per cell; null if unstated")
    pm: str | SharedTextModel | None = Field(
        description="what ± means; null if the paper prints no ± or does not say; {shared: NAME}: a text of "
                    "experiments/_shared.yaml")
    notes: list[str | SharedTextModel] = Field([], description="notes about the whole table; {shared: NAME}: a "
                                                               "text of experiments/_shared.yaml")
    cells: list[ReportedCellModel] = []
    table: dict[str, dict[str, ReportedEntry | list[ReportedEntry | None] | None]] = Field(
        {}, description="the printed numbers in the table's shape: row -> column -> 'MEAN ± STD MARK' (or a number, "
                        "or {mean, std, note, mark}); with several metrics a list, one entry per metric in the order "
                        "of `metrics`; null: no cell. Read as `cells` in table order, before them")
    unreported: str | None = Field(
        None, description="the note of every cell not listed in `cells`: those cells are reported as null with it "
                          "(e.g. 'lost in the text conversion of the paper')")
    significance: SignificanceModel | None = Field(
        None, description="the paper's significance marks: a cell carries `mark` when row `better` is significantly "
                          "better than it in the same column and metric; the report marks reproduced cells the same way")


_DATE = r"^\d{4}-\d{2}-\d{2}$"


class ClaimWasModel(_Model):
    """A claim as it was before a revision (the same keys as a claim)."""

    kind: str
    rows: list[str]
    cols: list[str] | None = None
    metric: str | None = None
    curve: str | None = None
    text: str


class _RevisionFacts(_Model):
    """What a ``revised`` entry records: the loader renders its sentence from these facts
    (:mod:`pubench.registry.revisions`); ``why`` adds what they do not say."""

    date: str = Field(pattern=_DATE, description="when it changed (or was added)")
    commit: str | None = Field(None, pattern=r"^[0-9a-f]{7,40}$", description="the commit that made the change")
    issue: int | None = Field(None, ge=1, description="the issue the change belongs to")
    after: list[Literal["paper", "reduced", "smoke"]] | None = Field(
        None, description="the tiers whose records existed when it changed")
    version: int | None = Field(None, ge=1, description="the spec version of those records (where an earlier one)")
    first_records: str | None = Field(None, pattern=_DATE, description="the date of the first of those records")
    why: str | None = Field(None, min_length=1, description="why it changed, where the facts do not say (a "
                                                            "regime block's may be in the notes file)")


class ClaimRevisionModel(_RevisionFacts):
    was: ClaimWasModel | None = Field(description="the claim as it was (null: the claim did not exist then)")
    counted: Literal["first", "revised"] = Field(
        "first", description="which form the reports count: the claim as first registered (default), or as "
                             "revised where the revision came with a version bump before any record of that "
                             "version (give `version`, the earlier one)")


class ClaimModel(_Model):
    kind: str
    rows: list[str]
    cols: list[str] | None = Field(None, description="default: every col")
    metric: str | None = Field(None, description="required when the spec has several metrics (not for curve claims)")
    curve: str | None = Field(None, description="kind curve_rises: the title of one of the spec's `curves`")
    text: str
    revised: list[ClaimRevisionModel] = Field(
        [], description="changes made after the spec had records (claims are fixed before the runs they judge): "
                        "date, the claim as it was, why; reports print the original with its outcome beside it")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        if v not in CLAIM_KINDS:
            raise ValueError(f"unknown claim kind {v!r} (one of {', '.join(CLAIM_KINDS)})")
        return v


class RegimeBlockModel(_Model):
    """A block of the table whose methods only mean something once its reference row works: the
    report checks it per column and tier (``pubench.report.regime``) and a claim whose compared
    cells lie in a column where the block is not in regime reads "not in regime"."""

    block: str = Field(description="the block's name, as the report prints it")
    group: str | None = Field(None, description="a row group: the block's rows are its rows (or give `rows`)")
    rows: list[str] | None = Field(None, description="the block's rows (instead of `group`)")
    cols: list[str] | None = Field(
        None, description="the columns checked; default: every (non-derived) column in which the reference rows (and "
                          "the baseline) run")
    check: Literal["trained", "two_classes"] = Field(description="trained: the reference row beats `baseline` by at least `margin` (one-sided t-test "
                                   "over seeds, p < 0.05); two_classes: at most `max_share` of the reference rows' "
                                   "seeds are near-one-class (test recall or specificity under 5%)")
    reference: str | list[str] = Field(description="the row (trained: exactly one) whose working the block needs, "
                                                    "e.g. the plain method every other row modifies")
    baseline: str | None = Field(None, description="trained: a row the spec runs that has not learned, e.g. an "
                                                   "untrained encoder of the same architecture")
    margin: float | None = Field(None, ge=0, description="trained: the gain over the baseline the reference needs, "
                                                         "in the metric's units")
    metric: str | None = Field(None, description="trained: required when the spec has several metrics")
    max_share: float | None = Field(None, ge=0, le=1, description="two_classes: the largest share of near-one-class "
                                                                  "seeds among the reference rows' (default 0)")
    why: dict[str, str] = Field({}, description="tier -> a written reason shown beside the verdict (e.g. what a "
                                                "config that reaches the regime would cost)")
    auc_margin: float | None = Field(None, ge=0, description="two_classes: how far above chance (50) the reference "
                                                             "rows' test AUC must be, in points (default 5)")
    revised: list["BlockRevisionModel"] = Field(
        [], description="changes made after the spec had records (regime rules are fixed before the runs they "
                        "judge): date, the block as it was (null: it did not exist), why")


class BlockRevisionModel(_RevisionFacts):
    was: dict[str, Any] | None = Field(description="the block as it was, its keys as a block's (null: the block did "
                                                   "not exist then)")


RegimeBlockModel.model_rebuild()


class DerivedColModel(_Model):
    mean_of: list[str]


class CurveModel(_Model):
    """A figure panel drawn from lists each job records in its ``info`` (a training curve, a
    density): one panel per column, one line per row, the seeds' mean ± std at each x."""

    title: str = Field(description="the panel's title, unique; a curve_rises claim names it")
    y: str = Field(description="dotted path into a record's info of a list of numbers (null entries skipped)")
    x: str = Field("epoch", description="'epoch' (1, 2, ... one per entry of y) or a dotted info path of a list "
                                        "as long as y")
    xlabel: str | None = Field(None, description="default: 'epoch', or the last part of x")
    ylabel: str
    format: str = Field(".2f", description="Python format spec of the curve's values in reports")

    _format = field_validator("format")(classmethod(lambda cls, v: _number_format(v)))
    cols: list[str] | None = Field(None, description="the columns drawn, one panel each (default: every column)")


class LayerModel(_Model):
    """Param overrides: ``params`` for every cell, then ``rows[row]``, ``cols[col]`` and
    ``cells['row|col']`` (globs allowed). Any mapping inside may name a preset
    (``{preset: NAME, ...overrides}``); a ``data`` mapping may name a PU data set of the
    catalogue (``{pu_dataset: NAME, n_labeled: N, ...overrides}``)."""

    params: Params | None = None
    rows: dict[str, Params] | None = None
    cols: dict[str, Params] | None = None
    cells: dict[str, Params] | None = None


class SeedsFromModel(_Model):
    """Cells that are the same experiment as another spec's share its seeds (issue 36: a cell shared
    by two tables shows one set of numbers)."""

    spec: str = Field(description="the spec whose data seeds this one takes: every cell whose params.data equals "
                                  "one of that spec's gets the same split")
    rows: dict[str, str] = Field({}, description="row of this spec -> row of that spec")
    cols: dict[str, str] = Field({}, description="column of this spec -> column of that spec: a cell whose row and "
                                                 "column are both mapped is that spec's cell and takes its init seed "
                                                 "too; their resolved configs must be equal wherever both run "
                                                 "(tests/jobs/test_seeds_from.py)")


class ExperimentModel(LayerModel):
    task: str = Field(description="a registered task (pubench/tasks/)")
    exclude: list[str] = Field([], description="'row|col' globs of cells the paper does not have")
    init_seed_from: list[Literal["row", "col", "row_group"]] = Field(
        ["row", "col"], description="cell axes the init seed depends on (row_group: the row's group in "
                                    "row_groups, so that the rows of a group share it)")
    seeds_from: SeedsFromModel | None = Field(None, description="share another spec's seeds (its splits; named "
                                                                "cells its init seeds)")


class MoreSeedsModel(_Model):
    """Cells that run more seeds than their tier, decided before those seeds ran (a pre-registered
    experiment: its date and reason are part of the record)."""

    cells: str = Field(description="'row|col' glob of the cells")
    seeds: int = Field(ge=2, le=MAX_SEEDS, description="seeds those cells run (more than the tier's)")
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="when this was decided, before the seeds ran")
    why: str = Field(min_length=1, description="what the seeds are for: the claim or regime check they decide")
    seen_before: str | None = Field(
        None, min_length=1, description="what the added seeds that had already run showed when this was decided "
                                        "(their outcomes, near-one-class seeds; or that none had run): required where "
                                        "the cells are another spec's (experiment.seeds_from), whose seeds the entry "
                                        "takes as they are, and where some of its seeds ran before a commit held the "
                                        "entry (tests/registry/test_claims_fixed.py)")


class TierModel(LayerModel):
    seeds: int = Field(ge=1, le=MAX_SEEDS, description="default --seeds of this tier")
    more_seeds: list[MoreSeedsModel] = Field(
        [], description="cells that run more seeds than the tier's, each decided (dated, with why) before they ran; "
                        "`run` without --seeds runs them")
    deviations: list[str] = Field(
        [], description="what the tier changes that no config shows (a data copy's provenance, a method's recipe), "
                        "each a whole sentence; the config's changes are generated (pubench expand --diff)")
    why: dict[str, str] = Field(
        {}, description="key path (train.optimizer.lr; globs allowed) or 'row|col' pattern -> why the tier changes "
                        "it, printed with the first generated change line it concerns (usually in the notes file)")
    tier_wide: list[str] = Field(
        [], description="rows (or row groups) that run at the tier-wide params alone, at a tier whose overrides name "
                        "rows (docs/specs.md, 'Every row at its tier's budget')")
    unavailable: dict[str, str] = Field(
        {}, description="'row|col' glob -> why the tier does not run those cells: a sentence, or a reason key "
                        "(not_designed: no config designed for this tier yet; 'offline: NAME': NAME is not available "
                        "offline here, paper tier only)")
    one_class_why: dict[str, str] = Field(
        {}, description="'row|col' glob -> why those cells' near-one-class seeds (test recall or specificity under "
                        "5%) are what the method does at this tier, with the measurement that shows it (a method "
                        "that collapses where its block's reference rows work is a result, written here)")
    cell_why: dict[str, str] = Field(
        {}, description="'row|col' glob -> a measured reason for what those cells show at this tier (e.g. why a "
                        "method is at chance there), printed beside the claims their pairs decide on the reports and "
                        "the verdict pages, with the cells' figures measured at render time")
    inherits: dict[str, str] = Field(
        {}, description="row -> another row whose overrides at this tier it takes (its `rows` entry and the `cells` "
                        "patterns matched as that row): at a tier that names rows in its overrides, a row none of "
                        "them names must inherit one (docs/specs.md, 'Every row at its tier's budget')")


class TiersModel(_Model):
    missing_at_parent: ClassVar[dict[str, str]] = dict.fromkeys(
        TIERS, "missing tier {name!r} (every spec has paper, reduced and smoke)")
    extra_hint: ClassVar[str] = "unknown tier (one of paper, reduced, smoke)"

    paper: TierModel
    reduced: TierModel
    smoke: TierModel


class SpecFile(_Model):
    """One paper table or figure: the numbers it prints and a runnable config per cell and tier."""

    id: str = Field(description="table<N>-<paper> or fig<N>-<paper> (a letter suffix allowed), = the file name")
    paper: str
    kind: Literal["table", "figure"]
    title: str
    caption: str
    version: int = Field(description="bump when anything that moves the numbers changes")
    source: str
    metrics: dict[str, MetricModel] = Field(min_length=1)
    rows: list[str] = Field(min_length=1)
    cols: list[str] = Field(min_length=1)
    row_groups: dict[str, list[str]] = {}
    col_groups: dict[str, list[str]] = {}
    methods_in: Literal["rows", "cols"] = Field("rows", description="the axis holding the compared methods")
    reported: ReportedModel
    decisions: list[str | SharedTextModel] = Field(
        [], description="choices the paper leaves open, made here, in words; {shared: NAME} for one written once in "
                        "experiments/_shared.yaml")
    claims: list[ClaimModel] = []
    derived_cols: dict[str, DerivedColModel] = {}
    curves: list[CurveModel] = Field([], description="figures only: panels drawn from lists in each record's info "
                                                     "(training curves, densities), besides the metric panels")
    regime: list[RegimeBlockModel] = Field(
        [], description="blocks whose reference rows must work before the block's claims mean something; checked per "
                        "column and tier, never from the claims under test")
    experiment: ExperimentModel
    tiers: TiersModel

    @field_validator("paper")
    @classmethod
    def _known_paper(cls, v: str) -> str:
        if v not in PAPERS:
            raise ValueError(f"unknown paper {v!r} (one of {', '.join(PAPERS)})")
        return v


# ------------------------------------------------------------------ a spec's notes file
class NotesTierModel(_Model):
    why: dict[str, str] = Field({}, description="as a tier's why: key path or 'row|col' pattern -> why the tier "
                                                "changes it (the spec sets none of the same)")
    one_class_why: dict[str, str] = Field({}, description="as a tier's one_class_why (the spec sets none of the same)")
    cell_why: dict[str, str] = Field({}, description="as a tier's cell_why (the spec sets none of the same)")


class NotesTiersModel(_Model):
    extra_hint: ClassVar[str] = "unknown tier (one of paper, reduced, smoke)"

    paper: NotesTierModel | None = None
    reduced: NotesTierModel | None = None
    smoke: NotesTierModel | None = None


class NotesRegimeModel(_Model):
    why: dict[str, str] = Field({}, description="as a regime block's why: tier -> the written reason")
    revised: dict[str, str] = Field({}, description="the date of one of the block's `revised` entries (which gives "
                                                    "no why itself) -> what its facts do not say")


class NotesReportedModel(_Model):
    notes: list[str | SharedTextModel] = Field([], description="as reported.notes")


class NotesFile(_Model):
    """``<id>.notes.yaml`` beside a spec: its decisions and the prose of its reasons, merged into
    the spec by the loader (:mod:`pubench.registry.notes`)."""

    decisions: list[str | SharedTextModel] = Field([], description="as a spec's decisions (the spec then has none)")
    reported: NotesReportedModel | None = None
    tiers: NotesTiersModel | None = None
    regime: dict[str, NotesRegimeModel] = Field({}, description="regime block name -> its prose")


# ------------------------------------------------------------------ the PU data set catalogue
class PuSplitModel(_Model):
    scheme: Literal["single_training_set", "case_control"]
    n_labeled: int | None = Field(None, description="n_P where the defining paper prints one value")
    n_unlabeled: int | None = None
    unlabeled_split: str | None = None
    unlabeled_prior: float | None = None


class PuDatasetModel(_Model):
    """One PU data set as a paper defines it. A spec's ``data: {pu_dataset: NAME}`` becomes
    ``{dataset, input_size, labels: {positive, negative}, prior, split: {kind: pu, ...},
    train_split, test_split, n_test, validation, test_sampling}``, each key only where the
    entry has it."""

    source: str
    decision: str
    aliases: list[str] = []
    dataset: str
    input_size: list[int] | None = None
    positive: list[int | str]
    negative: list[int | str] | None = Field(None, description="omitted: every other class of the data set")
    prior: float | Literal["exact"] | None = Field(
        None, description="the class prior as printed (written to data.prior); exact: the paper uses 001 A.1.1's pi* "
                          "of the realized split, which specs ask for with `prior: exact`; omitted: set by the spec")
    split: PuSplitModel
    train_split: str | None = None
    test_split: str | None = None
    n_test: int | None = None
    validation: Params | None = None
    test_sampling: str | None = None


class CatalogueModel(_Model):
    """The PU data sets (the class counts ``prior: exact`` needs are the data sets' own:
    :attr:`pubench.data.base.Dataset.class_counts`)."""

    datasets: dict[str, PuDatasetModel]


def spec_json_schema(notes: bool = False) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec file, or of a spec's notes file, for editors
    (``pubench schema [--notes]``)."""
    model, title = ((NotesFile, "pubench spec notes (experiments/<paper>/<id>.notes.yaml)") if notes else
                    (SpecFile, "pubench spec (experiments/<paper>/<id>.yaml)"))
    schema = model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
            **{k: v for k, v in schema.items() if k != "title"}}
