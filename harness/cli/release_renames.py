"""`kvh mutants --sut sglang[==X] --renames`: the generated rename campaign
(harness/run/release_renames.py) over the private names of the release's write path.

Prints the seed and the names drawn, a line per rename as it is judged, then the rate; writes
`release-renames.json` to --out atomically: the universe's cells and each rename's record (its
name, what rope changed, the cells judged, the verdict and every difference from the release's
plan). Exit 0 when every rename passed with the release's plan row for row, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

import pandas as pd

from harness.exit_codes import (
    EXIT_FINDINGS,
    EXIT_OK,
    StopSignals,
    UsageError,
    interrupted_exit_code,
    signal_of,
)
from harness.run.release_copy import release_folder
from harness.run.release_renames import RenameResult, campaign, sample
from harness.run.release_source import Slice
from mutants.release_renames import WRITE_PATH, private_names
from pools.kinds.composite import SWA_UNIFIED
from pools.kinds.layout import MHA_HND, UNIFIED_MHA, UNIFIED_MLA
from pools.kinds.spec import names
from pools.kinds.token_major import MHA, MLA, SWA_MHA, SWA_MLA
from reports.atomic import write_json_atomic
from reports.markdown import markdown_table

# The universe a campaign's trails are read over, unless --pool, --dtype or --backend narrow it.
DEFAULT_UNIVERSE = Slice(
    names(MHA, SWA_MHA, MLA, SWA_MLA, UNIFIED_MHA, UNIFIED_MLA, SWA_UNIFIED, MHA_HND),
    ("bf16", "fp8_e4m3"),
    ("plain", "plain_mla", "fa3", "triton", "flashinfer", "torch_native"),
)


def universe_of(arguments: argparse.Namespace) -> Slice:
    """The campaign's universe: DEFAULT_UNIVERSE, less what --pool, --dtype or --backend leave."""

    def listed(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(v for v in value.split(",") if v) if value else default

    return Slice(
        listed(arguments.pool, DEFAULT_UNIVERSE.pools),
        listed(arguments.dtype, DEFAULT_UNIVERSE.dtypes),
        listed(arguments.backend, DEFAULT_UNIVERSE.backends),
    )


def _say(result: RenameResult, done: int, total: int) -> None:
    cells = result.cells or {}
    print(
        f"kvh: [{done}/{total}] {result.name} ({','.join(result.kinds)}): {result.verdict}"
        f"{'' if result.ok else ' (not met)'}, {result.files_changed} files, "
        f"{len(result.touched)} functions touched, {result.checks} checks on "
        f"{len(cells.get('pools', ()))} pools x {len(cells.get('backends', ()))} backends, "
        f"{result.plan_differences} unlike the release's, renamed by "
        f"{result.renamed_by.split(' ')[0]} in {result.rename_seconds:.0f}s, "
        f"judge {result.judge_seconds:.0f}s" + (f" ({result.detail})" if not result.ok else ""),
        file=sys.stderr,
        flush=True,
    )


def _write(
    arguments: argparse.Namespace, every: int, results: list[RenameResult], seconds: float,
    universe: Slice, release_checks: Optional[int], stopped: str = "",
) -> None:  # fmt: skip
    write_json_atomic(
        arguments.out / "release-renames.json",
        {
            "release": arguments.sut,
            "seed": arguments.seed,
            "private_names": every,
            "judged": len(results),
            "passed": sum(r.ok for r in results),
            "seconds": round(seconds, 1),
            "stopped": stopped,  # SIGINT or SIGTERM: the records are those judged until then
            "universe": vars(universe),
            "release_checks": release_checks,
            "records": [r.to_dict() for r in results],
        },
    )


def main(arguments: argparse.Namespace) -> int:
    from harness.cli import main as kvh  # what each warm judge calls (harness/run/forked_judges.py)

    spec = arguments.sut
    try:
        package = release_folder(spec) / "sglang"
    except ValueError as error:
        raise UsageError(str(error)) from None
    names = every = private_names(package)
    if arguments.only:
        known = {p.name: p for p in every}
        unknown = [n for n in arguments.only if n not in known]
        if unknown:
            raise UsageError(f"not private names of {spec}'s write path: {', '.join(unknown)}")
        names = [known[n] for n in arguments.only]
    drawn = sample(names, arguments.sample, arguments.seed)
    print(
        f"kvh: {len(every)} private names in {spec}'s write path ({', '.join(WRITE_PATH)}); "
        f"judging {len(drawn)} (--seed {arguments.seed})"
        + ("" if len(drawn) == len(every) else f": {', '.join(p.name for p in drawn)}"),
        file=sys.stderr,
        flush=True,
    )
    start = time.monotonic()
    universe = universe_of(arguments)
    judged: list[RenameResult] = []

    def progress(result: RenameResult, done: int, total: int) -> None:
        judged.append(result)
        _say(result, done, total)

    try:
        with StopSignals():
            reference, results = campaign(
                spec, drawn, universe, arguments.out / "work", arguments.jobs, progress=progress,
                say=lambda line: print(f"kvh: {line}", file=sys.stderr, flush=True),
                cold=arguments.cold, entry=kvh,
            )  # fmt: skip
    except RuntimeError as error:
        raise UsageError(str(error)) from None
    except KeyboardInterrupt as interrupt:  # what was judged is kept, said so, and not a pass
        stopped = signal_of(interrupt)
        _write(arguments, len(every), judged, time.monotonic() - start, universe, None, stopped)
        print(
            f"kvh: {stopped}: stopped after {len(judged)} of {len(drawn)} renames; those are in "
            f"{arguments.out / 'release-renames.json'}",
            file=sys.stderr,
        )
        return interrupted_exit_code(interrupt)
    passed = sum(r.ok for r in results)
    seconds = time.monotonic() - start
    _write(arguments, len(every), results, seconds, universe, reference.checks)
    columns = ("name", "verdict", "ok", "files_changed", "checks", "plan_differences")
    frame = pd.DataFrame([{c: getattr(r, c) for c in columns} for r in results])
    print(markdown_table(frame, empty="(no renames)"))
    print(
        f"renames passed {passed}/{len(results)} of {len(every)} private names "
        f"(seed {arguments.seed}) in {seconds / 60:.1f} min"
    )
    return EXIT_OK if passed == len(results) else EXIT_FINDINGS
