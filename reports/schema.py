"""The results store's schema, as data: metadata columns every file carries, and one versioned
column set per record kind. This is the only list of columns: row builders import it and are
validated against it. docs/reports.md documents the same tables for readers."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

STORE_FORMAT = "kvh-results"
STORE_VERSION = 1

# Columns stamped on every row by `reports.store.append`, from the run metadata.
META_COLUMNS = (
    "kind",
    "kind_version",
    "run_id",
    "time",
    "git_commit",
    "host",
    "device",
    "device_name",
    "torch_version",
    "triton_version",
    "host_class",
    "sut_version",
    "profile",
    "seed",
    "writer",
)
# Added by `reports.store.load`: the file a row was read from.
READ_COLUMNS = ("source",)

# One benchmark "cell": the unit the regression gate and the charts compare. The detail
# columns join a cell's key when a record has them (an extend and a decode write differ).
CELL_COLUMNS = ("backend", "pool", "dtype", "sut", "engine", "era", "tokens", "device")
CELL_DETAIL_COLUMNS = ("mode", "cache")
# The machine a timing was taken on (metadata columns): the gate compares a cell's latest run
# only with baseline runs of the same values, so a sharded nightly job that lands on another
# GPU, another host CPU or another torch/triton build is never judged against this one. Rows
# written before a column existed read it as "".
MACHINE_COLUMNS = ("device_name", "torch_version", "triton_version", "host_class")

# `kvh run --out` before the store existed wrote these columns, without kvh metadata.
LEGACY_CHECK_COLUMNS = (
    "schema_version",
    "run_id",
    "time",
    "git_commit",
    "host",
    "device",
    "sut",
    "backend",
    "mode",
    "pool",
    "era",
    "engine",
    "dtype",
    "scenario",
    "tokens",
    "outcome",
    "findings",
    "divergence",
    "divergence_pr",
    "write_ns",
    "bytes_moved",
    "seed",
)


class SchemaError(ValueError):
    """A row that does not fit its record kind: an undeclared column, or a required one missing."""


@dataclass(frozen=True)
class RecordKind:
    name: str
    version: int
    required: tuple[str, ...]
    optional: tuple[str, ...]
    description: str

    # Computed once per kind: every row of a run is validated against them.
    @functools.cached_property
    def columns(self) -> tuple[str, ...]:
        return self.required + tuple(c for c in self.optional if c not in self.required)

    @functools.cached_property
    def allowed(self) -> frozenset[str]:
        """Every column a row of this kind may carry: its own, and the store's."""
        return frozenset(self.columns) | frozenset(META_COLUMNS) | frozenset(READ_COLUMNS)


KINDS: dict[str, RecordKind] = {
    kind.name: kind
    for kind in (
        RecordKind(
            # Version 2: outcome "finding" (version 1 wrote "findings"; read back as "finding").
            "check",
            2,
            required=("backend", "pool", "dtype", "sut", "engine", "era", "scenario", "outcome"),
            optional=(
                "mode",
                "tokens",
                "findings",
                "divergence",
                "divergence_pr",
                "divergence_evidence",
                "write_ns",
                "bytes_moved",
                "detail",
                "repro",
                "label",
                "reproduce",
                "skip_kind",
                "release_functions",
            ),
            description="one row per (scenario, candidate) of `kvh run` and `kvh cp`, and one per "
            "(scenario, era) of the era table (sut `model`); outcome is pass, finding, "
            "known_divergence, both_raised, skipped or unexplored; findings counts them; "
            "divergence names the declared divergences a row reproduced, with their PR "
            "or, where none names the change, their evidence; detail is the first "
            "finding or the skip reason; repro is the repro file's path relative to the "
            "results directory; label names the row's subject as the run's lines do "
            "(reports/check_label.py; an era-table row adds what it was compared with); "
            "reproduce is an exploring run's seed and Hypothesis reproduce blob; skip_kind, on a "
            "skipped row, is skipped (could run, did not), by_design (a declared trim of the "
            "plan) or not_offered (a pool kind or backend the SUT does not offer), the last two "
            "counted apart by the verdict (reports/outcome.py SkipKind); release_functions, on a "
            "release's row, the release functions its writes ran ('file:line qualname', '; ' "
            "between), recorded for a finding or, under kvh run --trail, for every check",
        ),
        RecordKind(
            "bench",
            1,
            required=CELL_COLUMNS + ("samples_ns",),
            optional=CELL_DETAIL_COLUMNS
            + (
                "layers",
                "timer",
                "outcome",
                "error",
                "samples",
                "median_ns",
                "p10_ns",
                "p90_ns",
                "cv",
                "mad_cv",
                "tokens_per_s",
                "bytes_moved",
                "gbps",
                "copy_median_ns",
                "peak_gbps",
                "roofline_fraction",
                "api_baseline_era",
                "api_overhead_ratio",
                "api_overhead_ci_low",
                "api_overhead_ci_high",
                "threads",
                "load_avg_1m",
                "passes",
                "timed_code",
                "call_us",
                "sut_baseline",
                "sut_ratio",
                "sut_ratio_ci_low",
                "sut_ratio_ci_high",
                "sut_ratio_test",
                "sut_ratio_p",
            ),
            description="one row per timed cell and cache state of `kvh bench`; samples_ns is the "
            "list of raw per-write times in nanoseconds; outcome is measured, finding or error, "
            "and error says why a cell has no numbers; timed_code names what the timed call ran "
            "(the release's backend class, or the call-site model); call_us is the median host "
            "time of one write call (one layer); sut_ratio is this SUT's median over the first "
            "SUT's (sut_baseline) on the same cell, with its bootstrap CI and the test "
            "(sut_ratio_test, p-value sut_ratio_p) that decides whether they differ",
        ),
        RecordKind(
            "mutants",
            1,
            required=("mutant", "fault", "outcome"),
            optional=(
                "era",
                "pools",
                "dtypes",
                "backends",
                "models",
                "call_site",
                "oracle",
                "examples_to_kill",
                "examples",
                "seconds",
                "killed_by",
                "detail",
                "repro",
            ),
            description="one row per catalogued mutant of `kvh mutants`; outcome is killed, "
            "survived, survived (budget exhausted) or equivalent; examples_to_kill counts the "
            "scenarios judged up to and including the killing one (docs/mutants.md)",
        ),
        RecordKind(
            "mutation",
            1,
            required=("mutant", "sut", "file", "function", "operator", "status"),
            optional=(
                "occurrence",
                "line",
                "door",
                "diff",
                "cells",
                "profile",
                "checks",
                "findings",
                "plan_differences",
                "seconds",
                "detail",
                "survivor_class",
                "survivor_reason",
                "cannot_run_here",
            ),
            description="one row per generated mutant of a `kvh mutants --sut X --mutate` "
            "campaign: mutant is its id (file, cosmic-ray operator, occurrence), status one of "
            "killed, killed_ci, killed_at_load, survived, unreached, limited, not_applied; door "
            "whether the function is a pool's write door; survivor_class and survivor_reason a "
            "survivor's record in mutants/survivors_*.py, or for an unreached mutant what was "
            "measured or read of its line, when the row was written; cannot_run_here why an "
            "unreached mutant's statement cannot run on this machine (docs/mutants.md)",
        ),  # fmt: skip
        RecordKind(
            "coverage",
            1,
            required=("pool", "dtype", "backend", "mode", "feature", "scenarios", "checked"),
            optional=("max_slot", "max_slot_bucket", "unreachable"),
            description="one row per (cell, feature) of `kvh run`'s coverage table, written next "
            "to its check rows: scenarios counts the checked scenarios of the cell that exercised "
            "the feature (0: uncovered), checked counts the cell's checked scenarios; max_slot is "
            "the highest slot the cell wrote and max_slot_bucket its power of two (>=2^k); "
            "unreachable, when set, says why the pool kind can never exercise the feature",
        ),
        RecordKind(
            "exploration",
            1,
            required=(
                "pool",
                "dtype",
                "backend",
                "mode",
                "examples",
                "regressions",
                "reach",
                "seconds",
            ),
            optional=("failed", "blob"),
            description="one row per cell a `kvh run --profile` explored, written next to its "
            "check rows: examples counts the Hypothesis examples checked before the first "
            "failure, regressions the named regression scenarios and reach the pinned "
            "top-of-pool scenarios; seconds is the exploration's time; failed and blob say "
            "whether it failed and Hypothesis' reproduce blob",
        ),
        RecordKind(
            "sut",
            1,
            required=("sut", "version", "era"),
            optional=(
                "real_code",
                "real_code_missing",
                "write_doors_driven",
                "write_doors",
                "door_lines_run",
                "door_lines_not_reached",
                "door_lines_cpu_unreachable",
            ),
            description="one row per foreign SUT a `kvh run` loaded: its version and the era "
            "its capabilities probe as; real_code lists the backends that ran as its own "
            "release code, real_code_missing those whose release class did not import here "
            "(each `backend: why`, joined by '; '), which ran as their call-site model; "
            "write_doors_driven of write_doors are its pools' write doors that "
            "the run's pool kinds drive (harness/sut/probe/write_doors.py), empty without a "
            "package source to read; door_lines_run, door_lines_not_reached and "
            "door_lines_cpu_unreachable, under kvh run --coverage, count those doors' lines "
            "that ran, that no check reached, and that cannot run on this machine "
            "(harness/report/release_lines.py)",
        ),
        RecordKind(
            "not-run",
            1,
            required=("sut", "reason"),
            optional=(),
            description="one row per SUT a `kvh run` named but could not run (it did not load, "
            "or fits no call convention), with why: the run's verdict is INCOMPLETE",
        ),
        RecordKind(
            "pytest-benchmark",
            1,
            required=("name", "samples_ns"),
            optional=CELL_COLUMNS + CELL_DETAIL_COLUMNS + ("group", "fullname", "rounds"),
            description="one row per benchmark of a pytest-benchmark JSON file (run it with "
            "--benchmark-save-data so raw samples are kept); cell columns come from the "
            "benchmark's params or extra_info when present",
        ),
    )
}


def kind_of(name: str) -> RecordKind:
    if name not in KINDS:
        raise SchemaError(f"unknown record kind {name!r}; choose from {', '.join(KINDS)}")
    return KINDS[name]


def validate_columns(
    kind: str, columns: Iterable[str], stamped: Iterable[str] = META_COLUMNS
) -> RecordKind:
    """The kind, when `columns` fit it: each declared by the kind or metadata, and every required
    one present or among `stamped` (what the store fills in from the run's metadata)."""
    spec, columns = kind_of(kind), [str(column) for column in columns]
    unknown = sorted(column for column in columns if column not in spec.allowed)
    if unknown:
        raise SchemaError(
            f"{kind} records carry columns the schema does not declare: {unknown} "
            f"(declare them in reports/schema.py)"
        )
    missing = [
        column for column in spec.required if column not in columns and column not in stamped
    ]
    if missing:
        raise SchemaError(f"{kind} records lack required columns {missing}")
    return spec


def validate_row(kind: str, row: dict) -> dict:
    """`row`, when it fits `kind` (see validate_columns); SchemaError otherwise."""
    validate_columns(kind, row.keys())
    return row
