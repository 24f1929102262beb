"""The HTML dashboard: self-contained, every section present, and checked in headless Chromium
(no console errors, charts rendered, the findings table present)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from harness.cli import main as kvh
from reports.browser import find_browser, visit
from reports.correctness_grid import ERA_TABLE_HEADING, ERA_TABLE_SUT, NO_BACKEND
from reports.dashboard import render_coverage_page, render_dashboard
from reports.finding_groups import fold_numbers
from reports.gate import GateSettings
from reports.records import records_frame
from reports.report_data import MATRIX_FILE, Report, build_report
from reports.store import append, load, run_meta
from tests.conftest import FIXTURES, REPO
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
  verdict: document.querySelector('.verdict').textContent,
  width: document.documentElement.scrollWidth, window: window.innerWidth})"""
# One planted fault (k/v scales ignored) that many checks of the mha kind find; the mutant offers
# no FP4 pool, so its mha_fp4 checks are skipped before any candidate is built.
MUTANT = REPO / "mutants" / "zoo" / "mha_scale_ignored.py"


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


@pytest.fixture(scope="module")
def one_cause(tmp_path_factory) -> tuple[Path, Report]:
    """A real `kvh run` of MUTANT on mha and mha_fp4 (bf16), and its report."""
    results = tmp_path_factory.mktemp("one-cause") / "results"
    run = ["run", "--sut", str(MUTANT), "--pool", "mha,mha_fp4", "--dtype", "bf16"]
    assert kvh([*run, "--out", str(results)]) == 1
    assert kvh(["report", str(results)]) == 1
    report = build_report(load(results), results, results / "report", GateSettings())
    return results / "report" / "dashboard.html", report


def body_rows(html: str, table_id: str) -> list[str]:
    """The HTML of each body row of the table `table_id` (the page nests no tables)."""
    table = html.split(f'<table id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return [row for row in table.split("<tbody>", 1)[1].split("</tr>") if "<t" in row]


def cells(row: str) -> list[str]:
    """The text of a row's cells, tags stripped."""
    found = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.DOTALL)
    return [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in found]


def grid(html: str) -> tuple[list[str], dict[str, dict[str, list[str]]]]:
    """The correctness grids, one per family of pool kinds, joined: their pool columns, and
    {section heading: {row label: cells}} (blank where a row is not in a family's grid)."""
    pools: list[str] = []
    sections: dict[str, dict[str, list[str]]] = {}
    for table_id in re.findall(r'<table id="(correctness-[\w-]+)"', html):
        head = html.split(f'<table id="{table_id}"', 1)[1].split("</thead>", 1)[0]
        columns = cells(head)[1:]
        heading, seen = "", {}
        for row in body_rows(html, table_id):
            label, *rest = cells(row)
            if 'class="subject"' in row:
                heading = label
            else:
                seen[(heading, label)] = rest
        for heading, label in seen:
            sections.setdefault(heading, {}).setdefault(label, [""] * len(pools))
        for heading, rows in sections.items():
            for label in rows:
                rows[label] += seen.get((heading, label), [""] * len(columns))
        pools += columns
    return pools, sections


def test_findings_of_one_cause_are_one_group_with_its_count_and_one_repro(one_cause):
    page, report = one_cause
    html, details = page.read_text(), set(report.findings["detail"])
    # Many findings whose headlines differ only in numbers (slot, byte, token): one signature.
    assert len(report.findings) > 10 and len(details) > 1
    assert len({fold_numbers(d) for d in details}) == 1
    [group] = body_rows(html, "finding-groups")
    count, oracle, pool, message, where, repro = cells(group)
    assert (count, oracle, pool) == (str(len(report.findings)), "bytes", "mha")
    assert message == fold_numbers(details.pop()).removeprefix("[bytes] ")
    # Nothing numeric is left standing; digits inside a name (the "bf16" of a value) stay.
    assert "#" in message and fold_numbers(message) == message and "bf16" in message
    assert "backend: " in where and "plain" in where
    [link] = re.findall(r'href="([^"]+)"', group)
    assert (page.parent / unescape(link)).is_file() and repro == link.rsplit("/", 1)[-1]
    # Every finding is listed behind the group, each with its own repro.
    every = body_rows(html, "findings")
    assert html.index("<details>") < html.index('<table id="findings">')
    assert len(every) == len(report.findings) and all(cells(r)[0] == "1" for r in every)
    assert all(len(re.findall(r'href="', r)) == 1 for r in every)


def test_correctness_grid_leaves_cells_without_checks_blank(one_cause):
    page, report = one_cause
    pools, sections = grid(page.read_text())
    checks = report.checks.fillna({"backend": ""})
    suts = {f"SUT {MUTANT}": str(MUTANT), ERA_TABLE_HEADING: ERA_TABLE_SUT}
    blank = 0
    for heading, rows in sections.items():
        for label, texts in rows.items():
            backend = "" if label == NO_BACKEND else label
            for pool, text in zip(pools, texts, strict=True):
                applies = (
                    (checks["sut"] == suts[heading])
                    & (checks["backend"] == backend)
                    & (checks["pool"] == pool)
                ).any()
                assert (text != "") == applies, (heading, label, pool, text)
                assert not text.startswith("0/0")
                blank += text == ""
    assert blank > 0


def test_correctness_grid_labels_every_row_for_what_it_is(one_cause):
    page, report = one_cause
    html = page.read_text()
    pools, sections = grid(html)
    assert "(none)" not in html
    assert list(sections) == [f"SUT {MUTANT}", ERA_TABLE_HEADING]
    checks = report.checks.fillna({"backend": ""})
    # The mutant offers no FP4 pool, so its mha_fp4 checks are skipped before any candidate is
    # built; each skip row still names its cell, so they sit in their backends' rows.
    assert (checks["backend"] != "").all() and NO_BACKEND not in sections[f"SUT {MUTANT}"]
    unbuilt = checks[(checks["sut"] == str(MUTANT)) & (checks["pool"] == "mha_fp4")]
    assert len(unbuilt) and set(unbuilt["outcome"]) == {"skipped"}
    for backend, rows in unbuilt.groupby("backend"):
        texts = dict(zip(pools, sections[f"SUT {MUTANT}"][backend]))
        assert texts["mha_fp4"] == f"{len(rows)} skipped", backend
    assert 'title="the SUT offers no MHATokenToKVPoolFP4' in html
    # The era table: the harness's own call-site models, every row a backend.
    models = checks[checks["sut"] == ERA_TABLE_SUT]
    assert (
        set(sections[ERA_TABLE_HEADING]) == set(models["backend"]) and "" not in models["backend"]
    )


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
    # Published from CI: no path of the machine that made it (links are relative).
    assert str(dashboard.parent.parent) not in html


def test_dashboard_says_not_recorded_without_data(tmp_path):
    report = build_report(load(tmp_path), tmp_path, tmp_path / "report", GateSettings())
    html = render_dashboard(report)
    assert "Capability matrix not recorded" in html and "No benchmark records" in html
    assert "no findings" in html and html.count("PASS") >= 1
    assert "No coverage recorded for this run" in html
    stored = render_dashboard(report, load(tmp_path).of("coverage"))
    assert "No coverage recorded for this run" in stored and 'id="feature-coverage"' not in stored


def test_dashboard_names_unreadable_files_relative_to_the_results_folder(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "torn.parquet").write_bytes(b"not parquet")
    store = load(tmp_path)
    html = render_dashboard(build_report(store, tmp_path, tmp_path / "report", GateSettings()))
    assert "runs/torn.parquet" in html and str(tmp_path) not in html


def test_dashboard_shows_the_coverage_table_of_kvh_run(dashboard):
    html = (dashboard.parent / "coverage.html").read_text()
    assert '<a href="coverage.html">' in dashboard.read_text()
    table = html[html.index('<table id="feature-coverage">') :]
    table = table[: table.index("</table>")]
    assert '<th class="feature">slot 1</th>' in table
    assert '<th class="feature">scale tensor</th>' in table
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
    assert f"Run {newest}" in html and "Not exercised in any cell that can: padding." in html
    # The dashboard counts per feature the cells that can reach it and those that did.
    by_feature = html[html.index('<table id="coverage-by-feature">') :]
    assert '<tr class="uncovered"><td>padding</td><td>1</td><td>0</td><td>0</td></tr>' in by_feature
    assert "<tr><td>slot 1</td><td>1</td><td>1</td><td>1</td></tr>" in by_feature
    assert 'id="feature-coverage"' not in html  # every cell's row is on coverage.html
    page = render_coverage_page(store.of("coverage"))
    table = page[page.index('<table id="feature-coverage">') :]
    row = table.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert row.endswith(
        '<td class="covered">1</td><td class="uncovered" title="not exercised">&mdash;</td>'
        "<td>n/a<sup>1</sup></td>"
    )
    assert '<ol class="na-reasons"><li>never in this kind</li></ol>' in table
    assert "<td>&gt;=2^17</td>" in row


def test_dashboard_in_headless_chromium(dashboard, one_cause, tmp_path):
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
    assert len(findings) >= 2 and page.value["findings"] == [11] * len(findings)
    assert len(page.value["repros"]) == len(findings)
    assert all((dashboard.parent / link).exists() for link in page.value["repros"])
    assert page.value["sparks"] == 8 and page.value["verdict"].startswith("FAIL")
    assert page.value["width"] <= page.value["window"] == 1280  # nothing runs off the page
    one_cause_page = visit(one_cause[0], "document.documentElement.scrollWidth")
    assert one_cause_page.errors == [] and one_cause_page.value <= 1280


def bench_row(sut: str, outcome: str, **fields) -> dict:
    cell = dict(backend="triton", pool="mha", dtype="bf16", engine="-", era="bundled", tokens=1)
    return {
        **cell,
        "device": "cpu",
        "mode": "decode",
        "sut": sut,
        "sut_version": sut.split("==")[-1],
        "outcome": outcome,
        "samples_ns": [],
        **fields,
    }


def test_a_release_bench_is_under_systems_under_test_and_its_errors_in_the_verdict(tmp_path):
    rows = [
        bench_row(
            "sglang==0.5.14",
            "measured",
            timed_code="sglang.srt.layers.attention.triton_backend.TritonAttnBackend",
        ),
        bench_row("sglang==0.5.13", "error", error="raised while timing: AssertionError"),
    ]
    meta = {k: v for k, v in run_meta("cpu", seed=0).items() if k != "sut_version"}  # as kvh bench
    append(tmp_path, records_frame("bench", rows), "bench", meta)
    report = build_report(load(tmp_path), tmp_path, tmp_path / "report", GateSettings())
    assert report.bench_errors == 1
    assert report.verdict().endswith(", 1 bench cells with errors")
    html = render_dashboard(report)
    suts = html[html.index('id="bench-suts"') :]
    assert "no foreign SUT" not in html
    assert (
        "<td>sglang==0.5.14</td><td>0.5.14</td><td>bundled</td><td>TritonAttnBackend</td>" in suts
    )
    assert "<td>sglang==0.5.13</td>" in suts  # a SUT whose every cell errored still ran


FIRST_SCREEN = """(() => {
  const top = (selector) => {
    const element = document.querySelector(selector);
    return element ? element.getBoundingClientRect().bottom : null;
  };
  return {verdict: top(".verdict"), groups: top("#finding-groups"), suts: top("#suts"),
          glance: top("#glance"), window: window.innerHeight};
})()"""


def test_the_first_screen_holds_the_verdict_the_finding_groups_and_throughput(dashboard):
    if find_browser() is None:
        pytest.skip("no Chromium installed (.ci/run installs Debian's chromium)")
    page = visit(dashboard, FIRST_SCREEN, height=900, full_page=False)
    assert page.errors == [] and page.value["window"] == 900
    # Each one's bottom edge, as laid out at 1280 x 900: within the window, so in sight unscrolled.
    for part in ("verdict", "groups", "suts", "glance"):
        assert page.value[part] is not None and 0 < page.value[part] <= 900, (part, page.value)
