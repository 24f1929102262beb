"""The HTML dashboard: self-contained, every section present, and checked in headless Chromium
(no console errors, charts rendered, the findings table present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main as kvh
from reports.browser import find_browser, visit
from reports.dashboard import render_dashboard
from reports.gate import GateSettings
from reports.records import records_frame
from reports.report import MATRIX_FILE, build_report
from reports.store import append, load, run_meta
from tests.conftest import FIXTURES
from tests.helpers.results import planted_results

MATRIX = [
    {"backend": "plain", "pool": "mha", "device": "cpu", "status": "supported", "reason": ""},
    {
        "backend": "plain",
        "pool": "mha",
        "device": "cuda",
        "status": "skipped",
        "reason": "no CUDA device (torch.cuda.is_available() is False)",
    },
]
# What the browser test reads from the rendered page.
PROBE = """({
  charts: [...document.querySelectorAll('svg.chart')].map(s => ({
    marks: s.querySelectorAll('polyline, circle, line').length,
    width: s.getBoundingClientRect().width, height: s.getBoundingClientRect().height})),
  findings: [...document.querySelectorAll('#findings tbody tr')].map(r => r.cells.length),
  repros: [...document.querySelectorAll('#findings a')].map(a => a.getAttribute('href')),
  sparks: document.querySelectorAll('#regressions svg.spark polyline').length,
  verdict: document.querySelector('.verdict').textContent})"""


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory) -> Path:
    """A nightly folder: bench history with a planted slowdown, a run with findings, a matrix."""
    results = planted_results(tmp_path_factory.mktemp("dashboard") / "results")
    assert (
        kvh(
            [
                "run",
                "--sut",
                str(FIXTURES / "scale_ignored.py"),
                "--pool",
                "mha",
                "--dtype",
                "bf16",
                "--backend",
                "plain",
                "--out",
                str(results),
            ]
        )
        == 1
    )
    (results / MATRIX_FILE).write_text(json.dumps({"cells": MATRIX}))
    assert kvh(["report", str(results)]) == 1
    return results / "report" / "dashboard.html"


def test_dashboard_is_self_contained_and_has_every_section(dashboard):
    html = dashboard.read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    for section in (
        "Correctness",
        "Scenario feature coverage",
        "Coverage and capability matrix",
        "Throughput",
        "API overhead",
        "Regression gate and history",
    ):
        assert f">{section}</h2>" in html
    assert 'id="findings"' in html and 'id="matrix"' in html and 'id="regressions"' in html
    assert "no CUDA device" in html and html.count('class="regression"') == 1


def test_dashboard_says_not_recorded_without_data(tmp_path):
    report = build_report(load(tmp_path), tmp_path, tmp_path / "report", GateSettings())
    html = render_dashboard(report)
    assert "Capability matrix not recorded" in html and "No benchmark records" in html
    assert "no findings" in html and html.count("PASS") >= 1
    assert "No coverage recorded for this run" in html
    stored = render_dashboard(report, load(tmp_path).of("coverage"))
    assert "No coverage recorded for this run" in stored and 'id="feature-coverage"' not in stored


def test_dashboard_shows_the_coverage_table_of_kvh_run(dashboard):
    html = dashboard.read_text()
    table = html[html.index('<table id="feature-coverage">') :]
    table = table[: table.index("</table>")]
    assert "<th>slot 1</th>" in table and "<th>scale tensor</th>" in table
    assert table.count("<tr>") == 2  # the header and the one cell: mha bf16 plain extend
    assert 'class="covered"' in table and 'class="uncovered"' in table


def coverage_row(feature: str, scenarios: int, unreachable: str = "") -> dict:
    return {
        "unreachable": unreachable,
        "pool": "mha",
        "dtype": "bf16",
        "backend": "plain",
        "mode": "extend",
        "feature": feature,
        "scenarios": scenarios,
        "checked": 3,
        "max_slot": 2**17,
        "max_slot_bucket": ">=2^17",
    }


def test_dashboard_coverage_comes_from_the_newest_run_and_marks_uncovered_features(tmp_path):
    # The older run reached padding; the newer one, written first, did not.
    runs = {
        day: {**run_meta("cpu", seed=0), "time": f"2026-01-0{day}T00:00:00+00:00"} for day in "21"
    }
    for day, meta in runs.items():
        rows = [coverage_row("slot 1", 1), coverage_row("padding", 3 if day == "1" else 0)]
        rows.append(coverage_row("cross-attention", 0, unreachable="never in this kind"))
        append(tmp_path, records_frame("coverage", rows), "coverage", meta)
    newest = runs["2"]["run_id"]
    store = load(tmp_path)
    report = build_report(store, tmp_path, tmp_path / "report", GateSettings())
    html = render_dashboard(report, store.of("coverage"))
    table = html[html.index('<table id="feature-coverage">') :]
    row = table.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert f"Run {newest}" in html and "Not exercised in any cell that can: padding." in html
    assert row.endswith(
        '<td class="covered">1</td><td class="uncovered" title="not exercised">&mdash;</td>'
        '<td title="never in this kind">n/a</td>'
    )
    assert "<td>&gt;=2^17</td>" in row


def test_dashboard_in_headless_chromium(dashboard, tmp_path):
    if find_browser() is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium)")
    # Control: the same probe must see errors on a page that has them, or its silence means nothing.
    broken = tmp_path / "broken.html"
    broken.write_text("<body><script>console.error('planted'); missing();</script></body>")
    assert len(visit(broken).errors) == 2

    page = visit(dashboard, PROBE)
    assert page.errors == []
    assert page.screenshot.startswith(b"\x89PNG") and len(page.screenshot) > 10_000
    (tmp_path / "dashboard.png").write_bytes(page.screenshot)
    charts = page.value["charts"]
    # GB/s and roofline charts for one (pool, dtype, device), and the API overhead chart.
    assert len(charts) == 3 and all(
        c["marks"] >= 8 and c["width"] > 0 and c["height"] > 0 for c in charts
    )
    findings = build_report(
        load(dashboard.parent.parent), dashboard.parent.parent, dashboard.parent, GateSettings()
    ).findings
    assert len(findings) >= 2 and page.value["findings"] == [10] * len(findings)
    assert len(page.value["repros"]) == len(findings)
    assert all((dashboard.parent / link).exists() for link in page.value["repros"])
    assert page.value["sparks"] == 8 and page.value["verdict"].startswith("FAIL")
