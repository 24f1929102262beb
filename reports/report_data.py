"""What `kvh report` decides, gathered once: the latest checks and their findings, the
regression table, the benchmark rows to chart, the capability matrix, and the verdict.
The HTML dashboard and the Markdown summary only render this."""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from reports.gate import (
    GateSettings,
    cell_rows,
    latest_checks,
    latest_rows,
    regression_table,
    timing_rows,
)
from reports.outcome import Outcome
from reports.real_code_history import real_code_drops
from reports.store import Store

# Written by `kvh matrix --out RESULTS_DIR/capabilities.json`; rendered when present.
MATRIX_FILE = "capabilities.json"


@dataclass
class Report:
    results_dir: Path
    settings: GateSettings
    checks: pd.DataFrame  # newest row of every check cell
    findings: pd.DataFrame  # those rows with outcome "finding", with a repro link
    gate: pd.DataFrame  # reports.gate.regression_table
    bench: pd.DataFrame  # bench rows of each cell's latest run
    matrix: Optional[Any]  # the capability matrix JSON, or None
    warnings: list[str] = field(default_factory=list)
    suts: pd.DataFrame = field(default_factory=pd.DataFrame)  # newest `sut` row of every SUT
    # reports.real_code_history.real_code_drops: backends a SUT's newest run lost as release code
    real_code_drops: pd.DataFrame = field(default_factory=pd.DataFrame)
    # Each pool kind's family, base kinds first, in the order tables show them
    # (harness/report/families.py, which reports/ may not import: the kvh report verb passes it).
    pool_families: dict[str, str] = field(default_factory=dict)
    # Every `mutation` row of the store: each campaign's mutants (reports/mutation_score.py)
    mutation: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def regressions(self) -> pd.DataFrame:
        return self.gate[self.gate["status"] == "regression"] if not self.gate.empty else self.gate

    def count(self, status: str) -> int:
        return int((self.gate["status"] == status).sum()) if not self.gate.empty else 0

    @property
    def bench_errors(self) -> int:
        """Timed cells of the latest bench runs that have no figure: the SUT raised or its worker
        failed (a cell that cannot be timed is a gap in the dashboard, never a silent one)."""
        if self.bench.empty or "outcome" not in self.bench:
            return 0
        return int((self.bench["outcome"] == Outcome.ERROR).sum())

    def bench_suts(self) -> pd.DataFrame:
        """Each foreign SUT a bench timed: its version, the eras timed, and what the timed calls
        ran (the release's backend classes, or the call-site model), from its newest rows."""
        columns = ["sut", "version", "eras", "timed_code"]
        if self.bench.empty:
            return pd.DataFrame(columns=columns)
        foreign = self.bench[~self.bench["sut"].astype(str).str.startswith("builtin")]
        rows = []
        for sut, cells in foreign.groupby("sut", sort=True):
            codes = cells.get("timed_code", pd.Series(dtype=str)).dropna().astype(str)
            rows.append(
                {
                    "sut": sut,
                    "version": ", ".join(sorted(set(cells["sut_version"].astype(str)))),
                    "eras": ", ".join(sorted(set(cells["era"].astype(str)))),
                    "timed_code": ", ".join(sorted({c.rsplit(".", 1)[-1] for c in codes if c})),
                }
            )
        return pd.DataFrame(rows, columns=columns)

    @property
    def failed(self) -> bool:
        return len(self.findings) > 0 or len(self.regressions) > 0 or len(self.real_code_drops) > 0

    def verdict(self) -> str:
        checks = len(self.checks)
        passed = int((self.checks["outcome"] == Outcome.PASS).sum()) if checks else 0
        head = "FAIL" if self.failed else "PASS"
        return (
            f"{head}: {len(self.findings)} correctness findings in {checks} checks ({passed} "
            f"passed); {self.count('regression')} throughput regressions, "
            f"{self.count('improvement')} improvements, {self.count('noisy')} noisy, "
            f"{self.count('unchanged')} unchanged, {self.count('new')} new cells"
            + (f", {self.bench_errors} bench cells with errors" if self.bench_errors else "")
            + (
                f"; {len(self.real_code_drops)} SUT(s) lost release code"
                if len(self.real_code_drops)
                else ""
            )
        )


def _repro_link(row: pd.Series, results_dir: Path, out_dir: Path) -> str:
    """The repro file of a finding, relative to the report folder ("" when none is found)."""
    recorded = row.get("repro")
    if isinstance(recorded, str) and recorded:
        path = results_dir / recorded
    else:
        prefix = "-".join(
            str(row.get(c, "")) for c in ("pool", "dtype", "backend", "era", "engine", "scenario")
        )
        prefix = prefix.replace("/", "_").replace(":", "_") + "-"
        matches = sorted(results_dir.rglob(f"repros/{glob.escape(prefix)}*.json"))
        if not matches:
            return ""
        path = matches[0]
    return os.path.relpath(path, out_dir)


def _findings(checks: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    """Failed checks, and bench cells whose verification before timing found a difference."""
    parts = [checks[checks["outcome"] == Outcome.FINDING]] if not checks.empty else []
    if "outcome" in bench:
        parts.append(bench[bench["outcome"] == Outcome.FINDING].assign(detail=lambda f: f["error"]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _matrix(results_dir: Path, warnings: list[str]) -> Optional[Any]:
    path = results_dir / MATRIX_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        warnings.append(f"skipped {path}: {error}")
        return None


def build_report(store: Store, results_dir: Path, out_dir: Path, settings: GateSettings) -> Report:
    warnings = list(store.warnings)
    checks = latest_checks(store.of("check"))
    bench = latest_rows(cell_rows([store.of("bench")]), ["cell"])
    findings = _findings(checks, bench)
    if not findings.empty:
        findings["repro_link"] = [
            _repro_link(row, results_dir, out_dir) for _, row in findings.iterrows()
        ]
    gate = regression_table(
        timing_rows([store.of("bench"), store.of("pytest-benchmark")]), settings
    )
    return Report(
        results_dir=results_dir,
        settings=settings,
        checks=checks,
        findings=findings,
        gate=gate,
        bench=bench,
        matrix=_matrix(results_dir, warnings),
        warnings=warnings,
        suts=latest_rows(store.of("sut"), ["sut"]),
        real_code_drops=real_code_drops(store.of("sut")),
        mutation=store.of("mutation"),
    )
