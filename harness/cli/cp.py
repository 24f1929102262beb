"""`kvh cp`: the context-parallel write under torch.distributed, every rank's pool judged against
the single-process write; `kvh cp --repro FILE` replays a saved CP finding."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

import pandas as pd

from harness.cp.differential import (
    BACKEND_NAME,
    CP_POOLS,
    DEFAULT_SITE,
    RankCheck,
    default_plan,
    load_site,
    run_group,
)
from harness.cp.repro import replay_cp, save_cp_repro
from harness.cp.distributed import PROCESS_GROUP_BACKENDS, GroupOutcome
from harness.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from harness.repro import ReproError
from harness.cli.options import csv_list
from pools.engines import ENGINES
from pools.eras import ERAS
from harness.sut.errors import SutLoadError
from reports.store import append, run_meta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", type=csv_list, default=["2", "4"], help="group sizes (default 2,4)")
    parser.add_argument("--pools", type=csv_list, default=list(CP_POOLS), help=f"of {','.join(CP_POOLS)}")
    parser.add_argument("--eras", type=csv_list, default=list(ERAS), help=f"of {','.join(ERAS)}")
    parser.add_argument("--engine", default="torch", help=f"builtin store engine ({', '.join(ENGINES)})")
    parser.add_argument("--sut", default="builtin", help="builtin, sglang, a module or a .py file")
    parser.add_argument("--site", default=DEFAULT_SITE,
                        help="the CP call site: a module or .py file with write(req, era, mode)")
    parser.add_argument("--device", default="cpu", choices=sorted(PROCESS_GROUP_BACKENDS),
                        help="device type of the ranks: cpu (gloo), cuda (nccl), npu (hccl)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole group")
    parser.add_argument("--out", type=Path, default=Path("kvh-out/cp"), help="repros and results")
    parser.add_argument("--repro", type=Path, help="replay this CP repro file instead of a run")
    parser.set_defaults(handler=main)


def report_group(outcome: GroupOutcome, checks: list[RankCheck]) -> bool:
    """Print the group's rank failures and findings; whether anything failed."""
    failed = [check for check in checks if check.outcome == "findings"]
    print(f"world {outcome.world} ({outcome.backend}): {len(checks)} checks on "
          f"{len(outcome.results)}/{outcome.world} ranks, {len(failed)} with findings, "
          f"{outcome.seconds:.1f}s")
    for failure in outcome.failures:
        print(f"RANK FAILURE world {outcome.world} {failure.line()}")
    for check in failed:
        print(f"FINDING {check.findings[0].candidate} `{check.scenario.name}` "
              f"({check.scenario.geometry.pool}): {check.findings[0].headline()}")
    return bool(failed or outcome.failures)


def replay_main(path: Path, device_type: Optional[str] = None, timeout_s: float = 120.0) -> int:
    """Replay a CP repro; exit 1 while it still reproduces (or a rank fails)."""
    try:
        payload, outcome, checks = replay_cp(path, device_type and device_type.split(":")[0], timeout_s)
    except (ReproError, SutLoadError, ValueError) as error:
        raise UsageError(str(error)) from None
    print(f"replayed {path} on {payload['world']} ranks (recorded ranks {payload['ranks']})")
    for finding in payload["findings"]:
        print(f"recorded: {finding['candidate']}: [{finding['oracle']}] {finding['message']}")
    return EXIT_FINDINGS if report_group(outcome, checks) else EXIT_OK


def by_cell(checks: list[RankCheck]) -> dict[tuple, list[RankCheck]]:
    """Each (scenario, candidate) with its checks on every rank."""
    cells: dict[tuple, list[RankCheck]] = {}
    for check in checks:
        g = check.scenario.geometry
        cells.setdefault((check.scenario.name, g.pool, check.candidate["era"]), []).append(check)
    return cells


def _record(cell: list[RankCheck], world: int) -> dict:
    """One check record per cell: its worst outcome over the ranks, naming the ranks that found."""
    failed = [check for check in cell if check.outcome == "findings"]
    worst = failed or [check for check in cell if check.divergence] or cell
    first = worst[0]
    return {**first.candidate, "backend": f"{BACKEND_NAME}_w{world}", "pool": first.scenario.geometry.pool,
            "dtype": first.scenario.geometry.dtype, "scenario": first.scenario.name,
            "outcome": first.outcome, "findings": sum(len(check.findings) for check in cell),
            "divergence": first.divergence or "",
            "detail": f"ranks {[check.rank for check in failed]}: {first.findings[0].headline()}"
                      if failed else "",
            "tokens": sum(f.tokens for f in first.scenario.forwards)}


def _run(arguments: argparse.Namespace) -> int:
    try:
        worlds = [int(world) for world in arguments.world]
        unknown = sorted(set(arguments.pools) - set(CP_POOLS)) + sorted(set(arguments.eras) - set(ERAS))
        if unknown or min(worlds) < 1 or arguments.engine not in ENGINES:
            raise ValueError(f"unknown pools, eras or engine {unknown or arguments.engine}, or a world < 1")
        load_site(arguments.site)
    except (ValueError, ImportError) as error:
        raise UsageError(str(error)) from None
    plan = default_plan(tuple(arguments.pools), arguments.seed, eras=tuple(arguments.eras),
                        engine=arguments.engine, sut=arguments.sut, site=arguments.site,
                        device_type=arguments.device)
    meta = run_meta(arguments.device, arguments.seed, profile="cp")
    failed = False
    for world in worlds:
        outcome, checks = run_group(plan, world, timeout_s=arguments.timeout)
        failed |= report_group(outcome, checks)
        cells = by_cell(checks)
        for cell in cells.values():
            found = [check for check in cell if check.outcome == "findings"]
            if found:
                print(f"repro: {save_cp_repro(arguments.out / 'repros', plan, found)}")
        if cells:
            # One check cell per group size: a world-2 finding is not hidden by a world-4 pass.
            records = pd.DataFrame([_record(cell, world) for cell in cells.values()])
            append(arguments.out, records, "check", meta)
    return EXIT_FINDINGS if failed else EXIT_OK


def main(arguments: argparse.Namespace) -> int:
    if arguments.repro is not None:
        return replay_main(arguments.repro, arguments.device, arguments.timeout)
    try:
        return _run(arguments)
    except SutLoadError as error:
        raise UsageError(str(error)) from None
