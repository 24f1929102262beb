"""The results store's schema, as data: metadata columns every file carries, and one versioned
column set per record kind. docs/reports.md documents the same tables for readers."""
from __future__ import annotations

from dataclasses import dataclass

from reports.records import RECORD_COLUMNS

STORE_FORMAT = "kvh-results"
STORE_VERSION = 1

# Columns stamped on every row by `reports.store.append`, from the run metadata.
META_COLUMNS = (
    "kind", "kind_version", "run_id", "time", "git_commit", "host", "device", "device_name",
    "torch_version", "triton_version", "sut_version", "profile", "seed", "writer",
)

# One benchmark "cell": the unit the regression gate and the charts compare. The detail
# columns join a cell's key when a record has them (an extend and a decode write differ).
CELL_COLUMNS = ("backend", "pool", "dtype", "sut", "engine", "era", "tokens", "device")
CELL_DETAIL_COLUMNS = ("mode", "cache")


@dataclass(frozen=True)
class RecordKind:
    name: str
    version: int
    required: tuple[str, ...]
    optional: tuple[str, ...]
    description: str

    @property
    def columns(self) -> tuple[str, ...]:
        return self.required + tuple(c for c in self.optional if c not in self.required)


KINDS: dict[str, RecordKind] = {kind.name: kind for kind in (
    RecordKind(
        "check", 1,
        required=("backend", "pool", "dtype", "sut", "engine", "era", "scenario", "outcome"),
        optional=tuple(c for c in RECORD_COLUMNS if c not in ("schema_version",)) + ("detail", "repro"),
        description="one row per (scenario, candidate) of `kvh run`; outcome is pass, findings, "
                    "known_divergence or skipped; detail is the first finding or the skip reason; "
                    "repro is the repro file's path relative to the results directory"),
    RecordKind(
        "bench", 1,
        required=CELL_COLUMNS + ("samples_ns",),
        optional=CELL_DETAIL_COLUMNS + (
            "layers", "timer", "outcome", "error", "median_ns", "p10_ns", "p90_ns", "cv", "mad_cv",
            "tokens_per_s", "bytes_moved", "gbps", "copy_median_ns", "peak_gbps", "roofline_fraction",
            "api_baseline_era", "api_overhead_ratio", "api_overhead_ci_low", "api_overhead_ci_high",
            "threads", "load_avg_1m", "passes"),
        description="one row per timed cell of `kvh bench`; samples_ns is the list of raw "
                    "per-write times in nanoseconds; outcome is measured, finding or error, and "
                    "error says why a cell has no numbers"),
    RecordKind(
        "mutants", 1,
        required=("mutant", "fault", "outcome"),
        optional=("era", "pools", "dtypes", "backends", "models", "call_site", "oracle",
                  "examples_to_kill", "examples", "seconds", "killed_by", "detail", "repro"),
        description="one row per catalogued mutant of `kvh mutants`; outcome is killed, survived, "
                    "survived (budget exhausted) or equivalent; examples_to_kill counts the "
                    "scenarios judged up to and including the killing one (docs/mutants.md)"),
    RecordKind(
        "pytest-benchmark", 1,
        required=("name", "samples_ns"),
        optional=CELL_COLUMNS + CELL_DETAIL_COLUMNS + ("group", "fullname", "rounds"),
        description="one row per benchmark of a pytest-benchmark JSON file (run it with "
                    "--benchmark-save-data so raw samples are kept); cell columns come from the "
                    "benchmark's params or extra_info when present"),
)}


def kind_of(name: str) -> RecordKind:
    if name not in KINDS:
        raise ValueError(f"unknown record kind {name!r}; choose from {', '.join(KINDS)}")
    return KINDS[name]
