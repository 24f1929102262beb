"""`kvh mutants --sut sglang[==X]`: the release-source catalogue (mutants/release_source.py).

Each record's transforms are applied to a copy of the release and the copy is judged as
`sglang@DIR` (harness/run/release_source.py). Prints one row per record and the two rates;
writes `release-mutants.json` to --out atomically. Exit 0 when every record that applied met its
expectation (a refactor PASS with the release's real-code count, a fault a finding), 1 otherwise;
a record whose transform does not apply to this release is reported, not failed.
"""

from __future__ import annotations

import argparse
import re
import sys

import pandas as pd

from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.run.release_source import rates, run_release_mutant
from mutants.release_source import CATALOGUE, release_mutant_named
from mutants.source_edits import ReleaseMutant
from reports.atomic import write_json_atomic
from reports.markdown import markdown_table

_SPEC = re.compile(r"^sglang(==[\w.+-]+)?$")


def _records(names: list[str] | None) -> list[ReleaseMutant]:
    if names is None:
        return list(CATALOGUE)
    try:
        return [release_mutant_named(name) for name in names]
    except ValueError as error:
        raise UsageError(str(error)) from None


def main(arguments: argparse.Namespace) -> int:
    spec = arguments.sut
    if not _SPEC.match(spec):
        raise UsageError(f"--sut {spec}: the release catalogue takes sglang or sglang==X")
    if arguments.out.exists() and not arguments.out.is_dir():
        raise UsageError(f"--out {arguments.out} exists and is not a folder")
    records = _records(arguments.only)
    arguments.out.mkdir(parents=True, exist_ok=True)
    baselines: dict = {}
    results = []
    for index, record in enumerate(records):
        try:
            result = run_release_mutant(record, spec, arguments.out, baselines)
        except ValueError as error:  # the release is not installed
            raise UsageError(str(error)) from None
        results.append(result)
        print(
            f"kvh: [{index + 1}/{len(records)}] {record.name} ({record.kind}): {result.verdict}, "
            f"real code {result.real_code} of the release's {result.real_code_release}, "
            f"{result.plan_differences} checks unlike the release's, {result.seconds:.0f}s"
            + (f" ({result.detail})" if result.detail and not result.ok else ""),
            file=sys.stderr,
        )
    summary = rates(results)
    write_json_atomic(
        arguments.out / "release-mutants.json",
        {"release": spec, "summary": summary, "records": [r.to_dict() for r in results]},
    )
    columns = (
        "name", "kind", "verdict", "ok", "real_code", "real_code_release", "plan_differences",
        "names_file", "names_edit",
    )  # fmt: skip
    frame = pd.DataFrame([{c: getattr(r, c) for c in columns} for r in results])
    print(markdown_table(frame, empty="(no records)"))
    print(
        f"refactors passed {summary['refactors_passed']}, faults caught "
        f"{summary['faults_caught']} (naming the release file {summary['faults_naming_file']}, "
        f"a line of the edited function {summary['faults_naming_edit']})"
        + (f"; not applicable here: {', '.join(summary['not_applicable'])}"
           if summary["not_applicable"] else "")
    )  # fmt: skip
    return EXIT_OK if all(r.ok for r in results if r.applied) else EXIT_FINDINGS
