"""`kvh mutants`: the harness's own teeth-check. Every catalogued mutant (mutants/catalog.py) runs
through the differential suite until a finding kills it; any survivor fails the run.

Prints one row per mutant (killed or not, by which oracle, after how many examples, in how many
seconds, its minimal repro file), then the kill rate, the median examples-to-kill and the slowest
kill. Writes `mutants.json` and a `mutants` record file to --out, and with --junit JUnit XML
(one test case per mutant, a survivor a failure), each atomically.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Optional

import pandas as pd

from harness.cli.arguments import check_writable, positive_float, positive_int, seed_int
from harness.cli.junit import write_junit
from harness.cli.release_mutants import main as release_main
from harness.cli.release_mutation import main as mutation_main
from harness.cli.release_renames import main as renames_main
from harness.cli.release_renames import universe_of
from harness.exit_codes import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.run.mutation import MutantResult, run_mutant
from harness.sut.load.loader import SutLoadError
from mutants.catalog import CATALOG, Mutant, mutant_named
from reports.atomic import write_json_atomic
from reports.markdown import markdown_table
from reports.outcome import MutantOutcome
from reports.records import records_frame
from reports.schema import validate_row
from reports.store import append, run_meta
from scenarios.profiles import PROFILE_ENV, PROFILES, profile_named

KIND = "mutants"
DEFAULT_PROFILE = "ci"
# Seconds of Hypothesis generation a mutant gets per profile (shrinking a failure always completes).
BUDGET_S = {"dev": 10.0, "ci": 30.0, "nightly": 300.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile", help=f"{', '.join(PROFILES)} (default ${PROFILE_ENV}, else {DEFAULT_PROFILE})"
    )
    parser.add_argument(
        "--only",
        type=lambda v: [p for p in v.split(",") if p],
        help="comma list of mutant names (default: the whole catalog)",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        help="seconds of Hypothesis generation per mutant "
        f"(default per profile: {', '.join(f'{k} {v:g}' for k, v in BUDGET_S.items())})",
    )
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument(
        "--sut",
        help="sglang or sglang==X: run the release-source catalogue (mutants/release_source.py) "
        "on copies of that release instead (--only names its records; --profile, --budget, "
        "--seed and --junit do not apply)",
    )
    parser.add_argument(
        "--renames",
        action="store_true",
        help="with --sut: the generated rename campaign instead of the catalogue: each private "
        "name of the release's write path renamed at every use by rope, each copy judged on a "
        "sentinel slice and the cells its release trail reaches (--only names private names, "
        "--seed draws the --sample)",
    )
    parser.add_argument(
        "--mutate",
        action="store_true",
        help="with --sut: the mutation campaign instead of the catalogue: cosmic-ray's mutants "
        "of every release function the run's trail reaches, each judged on the cells that reach "
        "it, a survivor again at --profile ci (--function narrows, --seed draws the --sample)",
    )
    parser.add_argument(
        "--function",
        type=lambda v: [p for p in v.split(",") if p],
        help="with --mutate: only the reached functions whose trail name holds one of these "
        "(comma list, e.g. 'MHATokenToKVPool.set_kv_buffer')",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --mutate: go on with the campaign under --out that the same arguments began, "
        "judging only the mutants it had not decided",
    )
    parser.add_argument(
        "--carry",
        type=Path,
        metavar="CAMPAIGN_JSON",
        help="with --mutate: take the decisions that another campaign of the same release over "
        "the same universe stored (its release-mutation.json) for the mutants both drew, or of one "
        "over a part of the universe the kills and the survivors recorded as equivalent, out of "
        "reach or outside the write path, instead of judging them again (a door campaign's, into "
        "the whole scope's)",
    )
    parser.add_argument(
        "--sample",
        type=positive_int,
        help="with --renames or --mutate: judge this many names or mutants, drawn with --seed "
        "(default: all)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=2,
        help="with --renames or --mutate: copies judged at once",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="with --renames or --mutate: judge each copy with a cold `kvh run` instead of a "
        "fork of a warm process (harness/run/forked_judges.py); slower, for when the warm "
        "control differs",
    )
    parser.add_argument(
        "--judge-unreached",
        action="store_true",
        help="with --mutate: judge every mutant at both stages, without first measuring (with "
        "coverage.py) which statements the unmodified release runs; by default a mutant whose "
        "statement no check ran at a stage is not judged there (harness/run/mutant_reach.py)",
    )
    universe = (("--pool", "pool kinds"), ("--dtype", "dtypes"), ("--backend", "backends"))
    for option, what in universe:
        parser.add_argument(
            option,
            help=f"with --renames or --mutate: the {what} of the universe whose trails select "
            "cells",
        )
    parser.add_argument(
        "--junit",
        type=Path,
        help="also write JUnit XML here: one test case per mutant, a survivor a failure",
    )
    parser.add_argument("--out", type=Path, default=Path("kvh-out") / "mutants")
    parser.set_defaults(handler=main)


def _mutants(names: Optional[list[str]]) -> list[Mutant]:
    if names is None:
        return list(CATALOG)
    try:
        return [mutant_named(name) for name in names]
    except ValueError as error:
        raise UsageError(str(error)) from None


def detail_of(result: MutantResult) -> str:
    """What a row says of its mutant: the killing finding, the equivalence argument, or for a
    survivor what it withstood."""
    if result.detail or result.killed:
        return result.detail
    return (
        f"no finding in {result.examples} scenarios judged in {result.seconds:.1f}s: "
        "a gap in the scenarios or the oracles"
    )


def row_of(result: MutantResult) -> dict:
    m = result.mutant
    return validate_row(
        KIND,
        {
            "mutant": m.name,
            "fault": m.fault,
            "era": m.era,
            "pools": ",".join(m.pools),
            "dtypes": ",".join(m.dtypes),
            "backends": ",".join(m.backends),
            "models": m.models,
            "call_site": ",".join(result.call_site),
            "outcome": result.outcome.value,
            "oracle": result.oracle,
            "examples_to_kill": result.examples if result.killed else None,
            "examples": result.examples,
            "seconds": round(result.seconds, 3),
            "killed_by": result.killed_by,
            "detail": detail_of(result),
            "repro": result.repro,
        },
    )


def summary_of(results: list[MutantResult]) -> dict:
    judged = [r for r in results if r.outcome != MutantOutcome.EQUIVALENT]
    killed = [r for r in judged if r.killed]
    slowest = max(killed, key=lambda r: r.seconds, default=None)
    return {
        "mutants": len(results),
        "equivalent": len(results) - len(judged),
        "killed": len(killed),
        "survived": [r.mutant.name for r in judged if not r.killed],
        "kill_rate": len(killed) / len(judged) if judged else 1.0,
        "median_examples_to_kill": statistics.median(r.examples for r in killed)
        if killed
        else None,
        "slowest_kill": slowest
        and {"mutant": slowest.mutant.name, "seconds": round(slowest.seconds, 3)},
        "seconds": round(sum(r.seconds for r in results), 3),
    }


def _table(rows: list[dict]) -> str:
    columns = ("mutant", "fault", "era", "pools", "outcome", "oracle", "examples")
    shown = [
        {
            **{c: row[c] for c in columns},
            "seconds": f"{row['seconds']:.1f}",
            "repro": Path(row["repro"]).name if row["repro"] else "",
        }
        for row in rows
    ]
    return markdown_table(pd.DataFrame(shown), empty="(no mutants)")


def main(arguments: argparse.Namespace) -> int:
    if (arguments.renames or arguments.mutate) and arguments.sut is None:
        raise UsageError("--renames and --mutate take --sut sglang or sglang==X: the release")
    if arguments.renames and arguments.mutate:
        raise UsageError("--renames and --mutate are two campaigns: choose one")
    if arguments.sut is not None and arguments.mutate:
        return mutation_main(arguments, universe_of(arguments))
    if arguments.sut is not None:
        return renames_main(arguments) if arguments.renames else release_main(arguments)
    name = arguments.profile or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
    try:
        profile = profile_named(name)
    except ValueError as error:
        raise UsageError(f"{error} (from --profile or ${PROFILE_ENV})") from None
    if arguments.budget is not None and arguments.budget <= 0:
        raise UsageError("--budget must be > 0")
    if arguments.out.exists() and not arguments.out.is_dir():
        raise UsageError(f"--out {arguments.out} exists and is not a folder")
    if arguments.junit is not None:
        check_writable(arguments.junit.parent, "--junit")
    budget = arguments.budget or BUDGET_S.get(profile.name, BUDGET_S[DEFAULT_PROFILE])
    results = []
    for index, mutant in enumerate(_mutants(arguments.only)):
        try:
            result = run_mutant(mutant, profile, arguments.seed, arguments.out, budget)
        except (SutLoadError, ValueError) as error:
            raise UsageError(f"mutant {mutant.name}: {error}") from None
        results.append(result)
        print(
            f"kvh: [{index + 1}] {mutant.name}: {result.outcome.value}"
            + (f" by {result.oracle} after {result.examples} examples" if result.killed else "")
            + f", {result.seconds:.1f}s",
            file=sys.stderr,
        )
    rows = [row_of(result) for result in results]
    summary = summary_of(results)
    write_json_atomic(
        arguments.out / "mutants.json",
        {
            "profile": profile.name,
            "seed": arguments.seed,
            "budget_s": budget,
            "summary": summary,
            "mutants": rows,
        },
    )
    frame = records_frame(KIND, rows)
    append(arguments.out, frame, KIND, run_meta("cpu", arguments.seed, profile.name))
    if arguments.junit is not None:
        write_junit(arguments.junit, frame, "mutants", ("mutant",))
    print(_table(rows))
    median = summary["median_examples_to_kill"]
    slowest = summary["slowest_kill"]
    print(
        f"kill rate {summary['killed']}/{len(results) - summary['equivalent']} "
        f"({summary['kill_rate']:.0%}), {summary['equivalent']} equivalent; "
        f"median examples to kill {median if median is not None else '-'}; slowest kill "
        + (f"{slowest['mutant']} ({slowest['seconds']:.1f}s)" if slowest else "-")
    )
    if summary["survived"]:
        print(
            f"SURVIVED: {', '.join(summary['survived'])}: a defect in the scenarios or the oracles"
        )
        return EXIT_FINDINGS
    return EXIT_OK
